"""Replay of the gRPC parity corpus: every scenario of tests/parity/corpus_grpc against the emulator's gRPC endpoint
(in process, on a free port), compared with what the real Apache RocketMQ 5.3.3 proxy answered
(tests/parity/snapshots_grpc, recorded twice against fresh real brokers by `python -m
rocketmq_emulator.testing.parity record-grpc`). Nothing may differ."""

from __future__ import annotations

import pytest

pytest.importorskip("grpc")

from rocketmq_emulator.testing.parity.compare import report  # noqa: E402
from rocketmq_emulator.testing.parity.grpc_snapshots import (grpc_corpus, grpc_snapshot_path,  # noqa: E402
                                                             read_grpc_snapshot, replay_grpc)

SCENARIOS = grpc_corpus()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_grpc_endpoint_answers_as_the_real_5_3_3_proxy(scenario):
    diffs = replay_grpc(scenario)
    assert not diffs, f"{len(diffs)} answers differ from Apache RocketMQ 5.3.3's proxy:\n{report(diffs)}"


def test_the_grpc_corpus_is_recorded_twice_and_big_enough():
    missing = [s.name for s in SCENARIOS if not grpc_snapshot_path(s.name).exists()]
    assert not missing, f"gRPC scenarios without a snapshot (record-grpc them): {missing}"
    once = [s.name for s in SCENARIOS if read_grpc_snapshot(s.name)["recordings_compared"] < 2]
    assert not once, f"snapshots not checked against a second fresh real proxy: {once}"
    calls = sum(s.request_count() for s in SCENARIOS)
    assert len(SCENARIOS) >= 6 and calls >= 60, (len(SCENARIOS), calls)
