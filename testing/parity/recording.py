"""Recording against fresh real brokers, for every protocol of the corpus: each scenario `times` times, each time on
a fresh broker (the next one starts while the current recording runs: a real broker takes 5-10 s to start); a
snapshot is written only when every recording normalises to the same data, else the fields that differ are
printed (a normalisation rule is missing, or the scenario depends on timing)."""

from __future__ import annotations

import concurrent.futures
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from .compare import diff_records, report
from .real import Flavour, RealBroker, start


class _Scenario(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def settings(self) -> dict[str, str]: ...


class _Run(Protocol):
    @property
    def records(self) -> list[dict[str, Any]]: ...


def record_on_fresh_brokers(scenarios: Sequence[_Scenario], times: int, raw: Path | None, flavour: Flavour,
                            run: Callable[[Any, RealBroker], _Run], normalise: Callable[[Any], list[dict[str, Any]]],
                            write: Callable[[Any, list[dict[str, Any]], int], Path]) -> int:
    """`run(scenario, broker)` records one run, `normalise(run)` its records, `write(scenario, records, runs)` the
    snapshot. Returns the exit status: 1 when a scenario's recordings disagree."""
    jobs = [(s, i) for s in scenarios for i in range(times)]
    recordings: dict[str, list[list[dict[str, Any]]]] = {}
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        pending = [pool.submit(start, flavour, s.settings) for s, _ in jobs[:1]]
        for n, (scenario, i) in enumerate(jobs):
            broker = pending.pop(0).result()
            if n + 1 < len(jobs):
                pending.append(pool.submit(start, flavour, jobs[n + 1][0].settings))
            t0 = time.monotonic()
            try:
                done = run(scenario, broker)
            finally:
                pool.submit(broker.stop)
            print(f"recorded {scenario.name} #{i + 1}: {len(done.records)} answers in {time.monotonic() - t0:.1f} s",
                  flush=True)
            if raw is not None:
                raw.mkdir(parents=True, exist_ok=True)
                (raw / f"{scenario.name}.{i + 1}.json").write_text(json.dumps(done.records, indent=1, default=str))
            recordings.setdefault(scenario.name, []).append(normalise(done))
    failed = 0
    for scenario in scenarios:
        runs = recordings[scenario.name]
        unstable = [d for other in runs[1:] for d in diff_records(scenario.name, runs[0], other)]
        if unstable:
            failed += 1
            print(f"\n{scenario.name}: two fresh real brokers answered differently after normalisation (add a rule "
                  "with its reason to the normaliser, or make the scenario deterministic):\n" + report(unstable),
                  file=sys.stderr)
            continue
        path = write(scenario, runs[0], len(runs))
        print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    return 1 if failed else 0
