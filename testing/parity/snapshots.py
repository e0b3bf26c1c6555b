"""Snapshot files (the real broker's answers, normalised) and replay against the emulator.

Where things are: the corpus `tests/parity/corpus/*.toml`, the snapshots `tests/parity/snapshots/<name>.json`,
the deliberate differences of the default mode `tests/parity/deliberate.toml`.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from .compare import Difference, diff_records
from .corpus import Scenario
from .normalise import normalise_run
from .remoting import Run, Target, run_scenario

ROOT = Path(__file__).resolve().parents[2]
PARITY_DIR = ROOT / "tests" / "parity"
CORPUS_DIR = PARITY_DIR / "corpus"
SNAPSHOT_DIR = PARITY_DIR / "snapshots"
DELIBERATE_FILE = PARITY_DIR / "deliberate.toml"
#: differences not fixed yet, each with what is missing (`switch`: "both" modes, or only "4.9" / "default")
OPEN_FILE = PARITY_DIR / "open.toml"

#: the broker.conf `shared/realbroker`'s launcher writes (besides ports and paths): the emulator replays with the
#: same settings, so that names, roles and retention answer alike
REAL_BROKER_SETTINGS = {
    "brokerClusterName": "DefaultCluster", "brokerName": "broker-a", "brokerId": "0", "deleteWhen": "04",
    "fileReservedTime": "48", "brokerRole": "ASYNC_MASTER", "flushDiskType": "ASYNC_FLUSH",
    "brokerIP1": "127.0.0.1", "autoCreateTopicEnable": "true",
}


def snapshot_path(name: str) -> Path:
    return SNAPSHOT_DIR / f"{name}.json"


def write_snapshot(scenario: Scenario, records: list[dict[str, Any]], recorded_with: str, runs: int) -> Path:
    path = snapshot_path(scenario.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"scenario": scenario.name, "recorded_with": recorded_with, "recordings_compared": runs,
            "settings": scenario.settings, "records": records}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n")
    return path


def read_snapshot(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(snapshot_path(name).read_text())
    return data


def emulator_settings(scenario: Scenario, compat: str | None) -> dict[str, str]:
    from rocketmq_emulator.broker.settings import IGNORED_KEYS

    settings = {k: v for k, v in {**REAL_BROKER_SETTINGS, **scenario.settings}.items() if k not in IGNORED_KEYS}
    if compat is not None:
        settings["compat"] = compat
    return settings


def run_on_emulator(scenario: Scenario, compat: str | None = None) -> Run:
    """The scenario against a fresh emulator (in this process, its own loop thread and temporary store)."""
    from rocketmq_emulator.testing.emulator_thread import EmulatorThread

    with tempfile.TemporaryDirectory(prefix="parity-emu-") as store:
        emu = EmulatorThread(Path(store), **emulator_settings(scenario, compat))
        try:
            emu.start()
            return asyncio.run(run_scenario(scenario, Target(emu.namesrv_addr, f"127.0.0.1:{emu.broker_port}")))
        finally:
            emu.close()


def replay(scenario: Scenario, compat: str | None = None) -> list[Difference]:
    snapshot = read_snapshot(scenario.name)
    run = run_on_emulator(scenario, compat)
    return diff_records(scenario.name, snapshot["records"], normalise_run(run))
