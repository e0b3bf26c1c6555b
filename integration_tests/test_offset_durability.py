"""kill -9 of the broker under a real commit load (the client's RemoteBrokerOffsetStore, acknowledged
UPDATE_CONSUMER_OFFSETs), then recovery from the two offset tiers. benchmarks/offset_bench.py --crash runs the
same scenario 20 times per mode and prints the figures."""

from __future__ import annotations

import pytest

from integration_tests.offset_crash import crash_run

RUNS = 3


@pytest.mark.parametrize("seed", range(RUNS))
async def test_write_through_loses_no_acknowledged_commit(tmp_path, seed):
    result = await crash_run(tmp_path, "write-through", seed=seed)
    assert result.acked > 100, "the load did not run"
    assert result.regressions == {} and result.invented == []


@pytest.mark.parametrize("seed", range(RUNS))
async def test_write_behind_keeps_everything_acknowledged_one_interval_before_the_kill(tmp_path, seed):
    result = await crash_run(tmp_path, "write-behind", seed=seed)
    assert result.acked > 100, "the load did not run"
    assert result.beyond_bound == [] and result.invented == []
