"""Clients see the same: the official Java 4.9.8, C++ and Go clients run the scenarios of
tests/parity/clients/scenarios.toml (produce, push clustering and broadcasting, lite pull and pull, a reset by time
with a live consumer, retries up to the dead-letter queue, ordered consumption) against a fresh emulator; what they
observe (deliveries per queue in order, redeliveries, committed offsets, DLQ, result lines), normalised, must equal
what they observed against two fresh real Apache RocketMQ 4.9.8 brokers (tests/parity/clients/<name>.json,
recorded by `python -m rocketmq_emulator.testing.parity record-clients`).

With `compat=4.9` nothing may differ; in the default mode only what tests/parity/clients/deliberate.toml lists.
"""

from __future__ import annotations

import tomllib

import pytest

from rocketmq_emulator.testing.parity.clients import (CLIENTS_DIR, Tools, go_binary, load_scenarios, replay,
                                                      snapshot_path)
from rocketmq_emulator.testing.parity.compare import load_deliberate, report, split_deliberate

pytestmark = pytest.mark.timeout(240)

SCENARIOS = load_scenarios()
DELIBERATE = load_deliberate(CLIENTS_DIR / "deliberate.toml")
#: entries seen in some runs only (`intermittent = true`): allowed, not required
INTERMITTENT = {(d["scenario"], d.get("step", "*"), d["path"]) for d in tomllib.loads(
    (CLIENTS_DIR / "deliberate.toml").read_text()).get("difference", []) if d.get("intermittent")}
ids = [s.name for s in SCENARIOS]


@pytest.fixture(scope="module")
def tools(java_clients, tmp_path_factory):
    return Tools(tmp_path_factory.mktemp("parity-clients"), java=java_clients)


def _replay(scenario, tools, compat):
    if not snapshot_path(scenario.name).exists():
        pytest.fail(f"{scenario.name}: no snapshot (record-clients)")
    if go_binary() is None and any(r.client == "go" for r in scenario.runs):
        pytest.skip("the Go client driver is missing: neither integration_tests/go/rmq-go nor ../shared/clients/go/rmq-go")
    return replay(scenario, tools, compat)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids)
def test_clients_see_on_the_emulator_in_4_9_mode_what_they_see_on_the_real_broker(scenario, tools):
    diffs, obs = _replay(scenario, tools, "4.9")
    assert not diffs, (f"the clients saw {len(diffs)} things differently than on Apache RocketMQ 4.9.8:\n"
                       f"{report(diffs)}\n\nwhat they printed: {obs.describe()}")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids)
def test_clients_see_in_the_default_mode_only_deliberate_differences(scenario, tools):
    diffs, obs = _replay(scenario, tools, None)
    allowed = [d for d in DELIBERATE if d.scenario == f"clients/{scenario.name}"]
    unexplained, used = split_deliberate(diffs, allowed)
    assert not unexplained, (f"{len(unexplained)} observations differ from Apache RocketMQ 4.9.8's and are not "
                             f"listed in tests/parity/clients/deliberate.toml:\n{report(unexplained)}\n\n"
                             f"what they printed: {obs.describe()}")
    stale = [d for i, d in enumerate(allowed) if i not in used and (d.scenario, d.step, d.path) not in INTERMITTENT]
    assert not stale, "tests/parity/clients/deliberate.toml lists differences that no longer occur: " + ", ".join(
        f"{d.step}: {d.path}" for d in stale)


def test_every_client_scenario_is_recorded_twice():
    missing = [s.name for s in SCENARIOS if not snapshot_path(s.name).exists()]
    assert not missing, f"client scenarios without a snapshot (record-clients them): {missing}"
    import json
    once = [s.name for s in SCENARIOS if json.loads(snapshot_path(s.name).read_text())["recordings_compared"] < 2]
    assert not once, f"snapshots not checked against a second fresh real broker: {once}"
    clients = {r.client for s in SCENARIOS for r in s.runs}
    assert {"java", "cpp", "go"} <= clients, clients
