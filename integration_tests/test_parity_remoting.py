"""Replay of the parity corpus: every remoting scenario against a fresh emulator, compared with what the real
Apache RocketMQ 4.9.8 broker answered (tests/parity/snapshots, recorded by `python -m
rocketmq_emulator.testing.parity record`). With `compat=4.9` nothing may differ; in the default mode only the
differences tests/parity/deliberate.toml lists, each with its reason (README "Parity with Apache RocketMQ")."""

from __future__ import annotations

import pytest

from rocketmq_emulator.testing.parity.compare import load_deliberate, report, split_deliberate
from rocketmq_emulator.testing.parity.corpus import load_corpus
from rocketmq_emulator.testing.parity.snapshots import (CORPUS_DIR, DELIBERATE_FILE, OPEN_FILE, read_snapshot, replay,
                                                        snapshot_path)

SCENARIOS = [s for s in load_corpus(CORPUS_DIR) if s.protocol == "remoting"]
DELIBERATE = load_deliberate(DELIBERATE_FILE)
#: differences not fixed yet (not deliberate: each says what is missing); listed so that the suite catches any
#: other difference and any entry fixed without being removed
OPEN = load_deliberate(OPEN_FILE)
ids = [s.name for s in SCENARIOS]


def _check(diffs, allowed, files):
    unexplained, used = split_deliberate(diffs, allowed)
    assert not unexplained, (f"{len(unexplained)} answers differ from Apache RocketMQ 4.9.8's and are not listed "
                             f"in {' or '.join(files)}:\n{report(unexplained)}")
    stale = [d for i, d in enumerate(allowed) if i not in used]
    assert not stale, f"{' or '.join(files)} list differences that no longer occur (remove them):\n" + "\n".join(
        f"  {d.scenario} / {d.step}: {d.path}" for d in stale)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids)
def test_compat_4_9_answers_as_the_real_broker(scenario):
    _check(replay(scenario, "4.9"), [d for d in OPEN if d.scenario == scenario.name and d.mode != "default"],
           ["tests/parity/open.toml"])


@pytest.mark.parametrize("scenario", SCENARIOS, ids=ids)
def test_default_mode_differs_only_deliberately(scenario):
    allowed = [d for d in DELIBERATE if d.scenario == scenario.name] + [
        d for d in OPEN if d.scenario == scenario.name and d.mode != "4.9"]
    _check(replay(scenario), allowed, ["tests/parity/deliberate.toml", "tests/parity/open.toml"])


def test_corpus_is_recorded_twice_and_covers_the_families():
    missing = [s.name for s in SCENARIOS if not snapshot_path(s.name).exists()]
    assert not missing, f"scenarios without a snapshot (record them): {missing}"
    once = [s.name for s in SCENARIOS if read_snapshot(s.name)["recordings_compared"] < 2]
    assert not once, f"snapshots not checked against a second fresh real broker: {once}"
    stale = [d for d in DELIBERATE if d.scenario not in ids]
    assert not stale, f"deliberate.toml names scenarios the corpus does not have: {stale}"
    requests = sum(s.request_count() for s in SCENARIOS)
    assert len(SCENARIOS) >= 30 and requests >= 300, (len(SCENARIOS), requests)


def test_readme_shows_the_corpus_as_it_is():
    """README's parity table is `python -m rocketmq_emulator.testing.parity table`'s output for this corpus."""
    from pathlib import Path

    from rocketmq_emulator.testing.parity.summary import family_table
    readme = (Path(__file__).resolve().parents[1] / "docs" / "user" / "parity.md").read_text()
    table = family_table(SCENARIOS, OPEN, DELIBERATE)
    assert table in readme, f"README's parity table is stale; the current one:\n{table}"
    requests = sum(s.request_count() for s in SCENARIOS)
    assert f"{len(SCENARIOS)} remoting scenarios, {requests} requests" in readme
