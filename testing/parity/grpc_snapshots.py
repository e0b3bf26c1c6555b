"""gRPC snapshots (tests/parity/snapshots_grpc/<scenario>.json: the real 5.3.3 proxy's answers, normalised),
recording against fresh real brokers (`record-grpc`) and replay against the emulator (`replay-grpc`,
integration_tests/test_parity_grpc.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from .grpc_runner import GrpcRun, GrpcScenario, GrpcTarget, load_grpc_corpus, run_grpc_scenario


def _dirs() -> tuple[Path, Path]:
    from .snapshots import PARITY_DIR
    return PARITY_DIR / "corpus_grpc", PARITY_DIR / "snapshots_grpc"


def grpc_snapshot_path(name: str) -> Path:
    return _dirs()[1] / f"{name}.json"


def write_grpc_snapshot(scenario: GrpcScenario, records: list[dict[str, Any]], recorded_with: str, runs: int) -> Path:
    import json

    path = grpc_snapshot_path(scenario.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"scenario": scenario.name, "recorded_with": recorded_with, "recordings_compared": runs,
            "setup": scenario.setup, "records": records}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def read_grpc_snapshot(name: str) -> dict[str, Any]:
    import json

    data: dict[str, Any] = json.loads(grpc_snapshot_path(name).read_text())
    return data


def grpc_corpus(only: list[str] | None = None) -> list[GrpcScenario]:
    return load_grpc_corpus(_dirs()[0], only)


def run_grpc_on_emulator(scenario: GrpcScenario) -> GrpcRun:
    """The scenario against a fresh emulator in this process, its gRPC endpoint on a free port (the broker.conf
    of shared/realbroker5's launcher, as the remoting replay uses)."""
    import tempfile

    from rocketmq_emulator.testing.emulator_thread import EmulatorThread
    from rocketmq_emulator.testing.ports import free_port

    from .snapshots import REAL_BROKER_SETTINGS

    with tempfile.TemporaryDirectory(prefix="parity-grpc-emu-") as store:
        grpc_port = free_port()
        from rocketmq_emulator.broker.settings import IGNORED_KEYS

        settings = {k: v for k, v in {**REAL_BROKER_SETTINGS, **scenario.settings}.items() if k not in IGNORED_KEYS}
        emu = EmulatorThread(Path(store), **settings, grpcServerPort=str(grpc_port))
        try:
            emu.start()
            target = GrpcTarget(f"127.0.0.1:{grpc_port}", f"127.0.0.1:{emu.broker_port}", emu.namesrv_addr)
            # on the emulator's own loop: grpc.aio serves one event loop per process
            return emu.run(run_grpc_scenario(scenario, target), timeout=600)
        finally:
            emu.close()


def replay_grpc(scenario: GrpcScenario) -> list[Any]:
    from .compare import diff_records
    from .grpc_normalise import normalise_grpc_run

    snapshot = read_grpc_snapshot(scenario.name)
    return diff_records(scenario.name, snapshot["records"], normalise_grpc_run(run_grpc_on_emulator(scenario)))


def record_grpc(scenarios: list[GrpcScenario], times: int = 2, raw: Path | None = None) -> int:
    """Each scenario `times` times, each on a fresh real 5.3.3 broker with its proxy; a snapshot is written only
    when the recordings normalise equal."""
    from .grpc_normalise import normalise_grpc_run
    from .real import REAL_53
    from .recording import record_on_fresh_brokers

    loop = asyncio.new_event_loop()  # one loop for every run: grpc.aio serves one event loop per process
    try:
        return record_on_fresh_brokers(
            scenarios, times, raw, REAL_53,
            lambda scenario, broker: loop.run_until_complete(
                run_grpc_scenario(scenario, GrpcTarget(broker.grpc, broker.broker, broker.namesrv))),
            normalise_grpc_run, lambda scenario, records, runs: write_grpc_snapshot(scenario, records, REAL_53.name,
                                                                                    runs))
    finally:
        loop.close()
