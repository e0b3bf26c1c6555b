"""The parity tier's commands.

    python -m rocketmq_emulator.testing.parity record [--times 2] [--raw DIR] [SCENARIO ...]
        each scenario against fresh real 4.9.8 brokers (`--times` recordings, each on its own fresh broker); the
        recordings must normalise to the same data, else the fields that differ are printed and nothing is
        written; then tests/parity/snapshots/<scenario>.json
    python -m rocketmq_emulator.testing.parity replay [--compat 4.9] [SCENARIO ...]
        each scenario against a fresh emulator, compared with its snapshot (what the test suite does)
    python -m rocketmq_emulator.testing.parity list
        the corpus: scenarios, families, requests per scenario
    python -m rocketmq_emulator.testing.parity table
        README's parity table (requests by family; how many match 4.9.8, how many differ deliberately)
    python -m rocketmq_emulator.testing.parity record-clients [--times 2] [--raw DIR] [NAME ...]
        the client scenarios (tests/parity/clients/scenarios.toml: Java, C++ and Go clients) against fresh real
        4.9.8 brokers; tests/parity/clients/<name>.json when the recordings agree (clients.py)
    python -m rocketmq_emulator.testing.parity record-grpc [--times 2] [--raw DIR] [SCENARIO ...]
    python -m rocketmq_emulator.testing.parity replay-grpc [SCENARIO ...]
        the same for the gRPC corpus (tests/parity/corpus_grpc, grpc_runner.py) against fresh real 5.3.3 brokers
        with their proxy (snapshots in tests/parity/snapshots_grpc) and the emulator's gRPC endpoint
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from .compare import load_deliberate, report, split_deliberate
from .corpus import Scenario, load_corpus
from .normalise import normalise_run
from .real import REAL_49
from .recording import record_on_fresh_brokers
from .remoting import Target, run_scenario
from .snapshots import CORPUS_DIR, DELIBERATE_FILE, OPEN_FILE, replay, snapshot_path, write_snapshot


def _record(scenarios: list[Scenario], times: int, raw: Path | None) -> int:
    return record_on_fresh_brokers(
        [s for s in scenarios if s.protocol == "remoting"], times, raw, REAL_49,
        lambda scenario, broker: asyncio.run(run_scenario(scenario, Target(broker.namesrv, broker.broker))),
        normalise_run, lambda scenario, records, runs: write_snapshot(scenario, records, REAL_49.name, runs))


def _replay(scenarios: list[Scenario], compat: str | None) -> int:
    """Each scenario against a fresh emulator: "same", or its differences; those deliberate.toml (default mode)
    or open.toml (not fixed yet) list are counted apart, every other one is printed and fails the command."""
    deliberate = load_deliberate(DELIBERATE_FILE) if compat is None else []
    mode = "4.9" if compat == "4.9" else "default"
    pending = [d for d in load_deliberate(OPEN_FILE) if d.mode in ("both", mode)]
    bad = 0
    for scenario in scenarios:
        if not snapshot_path(scenario.name).exists():
            bad += 1
            print(f"{scenario.name}: no snapshot yet (record it)")
            continue
        diffs = replay(scenario, compat)
        unexplained, _ = split_deliberate(diffs, deliberate)
        unexplained, _ = split_deliberate(unexplained, pending)
        status = "same" if not diffs else (f"{len(diffs)} differences, {len(unexplained)} neither deliberate nor "
                                           "listed as open")
        print(f"{scenario.name}: {status}", flush=True)
        if unexplained:
            bad += 1
            print(report(unexplained, 60))
    return 1 if bad else 0


def _grpc(args: argparse.Namespace) -> int:
    """record-grpc / replay-grpc: the gRPC corpus (tests/parity/corpus_grpc, grpc_runner.py)."""
    from .grpc_snapshots import grpc_corpus, record_grpc, replay_grpc
    scenarios = grpc_corpus(args.scenarios or None)
    if args.command == "record-grpc":
        return record_grpc(scenarios, max(1, args.times), args.raw)
    bad = 0
    for g in scenarios:
        diffs = replay_grpc(g)
        print(f"{g.name}: {'same' if not diffs else f'{len(diffs)} differences'}", flush=True)
        if diffs:
            bad += 1
            print(report(diffs, 60))
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rocketmq_emulator.testing.parity", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record the corpus against fresh real brokers")
    rec.add_argument("--times", type=int, default=2, help="recordings per scenario, each on a fresh broker")
    rec.add_argument("--raw", type=Path, help="also keep each recording before normalisation here")
    rec.add_argument("scenarios", nargs="*")
    rep = sub.add_parser("replay", help="replay the corpus against the emulator")
    rep.add_argument("--compat", choices=["4.9", "5"], help="the emulator's compatibility mode (default: its own)")
    rep.add_argument("scenarios", nargs="*")
    sub.add_parser("list", help="the corpus")
    sub.add_parser("table", help="README's parity table: requests by family, matching, deliberate")
    rc = sub.add_parser("record-clients", help="record the client scenarios (tests/parity/clients) twice against "
                        "fresh real 4.9.8 brokers")
    rc.add_argument("--times", type=int, default=2, help="recordings per scenario, each on a fresh broker")
    rc.add_argument("--raw", type=Path, help="also keep each observation before normalisation here")
    rc.add_argument("names", nargs="*")
    rec5 = sub.add_parser("record-grpc", help="record the gRPC corpus against fresh real 5.3.3 brokers")
    rec5.add_argument("--times", type=int, default=2, help="recordings per scenario, each on a fresh broker")
    rec5.add_argument("--raw", type=Path, help="also keep each recording before normalisation here")
    rec5.add_argument("scenarios", nargs="*")
    rep5 = sub.add_parser("replay-grpc", help="replay the gRPC corpus against the emulator's gRPC endpoint")
    rep5.add_argument("scenarios", nargs="*")
    args = parser.parse_args(argv)
    if args.command in ("record-grpc", "replay-grpc"):
        return _grpc(args)
    if args.command == "record-clients":
        from .clients import record as record_clients
        return record_clients(args.names or None, max(1, args.times), args.raw)
    scenarios = load_corpus(CORPUS_DIR, getattr(args, "scenarios", None) or None)
    if args.command == "record":
        return _record(scenarios, max(1, args.times), args.raw)
    if args.command == "replay":
        return _replay(scenarios, args.compat)
    if args.command == "table":
        from .summary import family_table
        print(family_table([s for s in scenarios if s.protocol == "remoting"], load_deliberate(OPEN_FILE),
                           load_deliberate(DELIBERATE_FILE)))
        return 0
    total = 0
    for s in scenarios:
        total += s.request_count()
        print(f"{s.name:32} {s.protocol:9} {s.request_count():4} requests  {', '.join(s.families)}")
    print(f"{len(scenarios)} scenarios, {total} requests")
    from .grpc_snapshots import grpc_corpus
    calls = 0
    grpc_scenarios = grpc_corpus()
    for g in grpc_scenarios:
        calls += g.request_count()
        print(f"{g.name:32} {g.protocol:9} {g.request_count():4} calls     {', '.join(g.families)}")
    print(f"{len(grpc_scenarios)} gRPC scenarios, {calls} calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
