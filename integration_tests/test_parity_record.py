"""The recorded answers still hold: a few corpus scenarios are run against a fresh real Apache RocketMQ 4.9.8
name server and broker (../shared/realbroker, built by its build.sh when missing) and, once normalised, must equal
the snapshots the replay tests compare the emulator with (tests/parity/snapshots/). A snapshot that no longer
matches the real broker would make every replay of it test the wrong thing. The full recording is
`python -m rocketmq_emulator.testing.parity record` (docs/user/parity.md); this is its smoke test (mark
`parity-record`: deselect it with `-m "not parity-record"` where the real brokers cannot run)."""

from __future__ import annotations

import asyncio

import pytest

from rocketmq_emulator.testing.parity.compare import diff_records, report
from rocketmq_emulator.testing.parity.corpus import load_corpus
from rocketmq_emulator.testing.parity.normalise import normalise_run
from rocketmq_emulator.testing.parity.real import REAL_49, shared_dir, start
from rocketmq_emulator.testing.parity.remoting import Target, run_scenario
from rocketmq_emulator.testing.parity.snapshots import CORPUS_DIR, read_snapshot

#: quick, deterministic scenarios of three request families (sending, pulling, offsets)
SCENARIOS = ("send_refusals", "pull_offset_edges", "offset_query_update")

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def corpus():
    try:
        shared_dir()
    except FileNotFoundError as e:
        pytest.fail(f"the real brokers are not here: {e}", pytrace=False)
    return {s.name: s for s in load_corpus(CORPUS_DIR)}


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_fresh_real_broker_answers_as_the_snapshot_says(corpus, name):
    scenario = corpus[name]
    broker = start(REAL_49, scenario.settings)
    try:
        run = asyncio.run(run_scenario(scenario, Target(broker.namesrv, broker.broker)))
    finally:
        broker.stop()
    diffs = diff_records(name, read_snapshot(name)["records"], normalise_run(run))
    assert not diffs, f"the real 4.9.8 broker no longer answers as tests/parity/snapshots/{name}.json says:\n" \
                      f"{report(diffs)}"
