"""`ConsumerStatsManager`: the statusTable figures of GET_CONSUMER_RUNNING_INFO (the Java client's formulas:
sums over the last minute per second, means per addition, failures of the last hour)."""

from __future__ import annotations

import pytest

from rocketmq_emulator.client.consumer_stats import ConsumerStatsManager, StatsItem


def test_tps_and_mean_over_the_last_minute():
    item = StatsItem(now=0.0)
    for t in range(0, 120, 5):  # 10 every 5 s for two minutes
        item.add(10, now=float(t))
    # samples every 10 s, each taken before that moment's addition; the window starts at the newest sample at
    # least 60 s old (t=60): the additions at 60, 65, ..., 115
    seconds, value, times = item.window(60.0, now=120.0)
    assert seconds == pytest.approx(60.0) and value == 120 and times == 12
    assert item.tps(60.0, now=120.0) == pytest.approx(2.0)
    assert item.avg(60.0, now=120.0) == pytest.approx(10.0)
    assert item.tps(60.0, now=125.0) == pytest.approx(120 / 65)  # no sample yet at 125: still from t=60


def test_a_young_counter_counts_from_its_start():
    item = StatsItem(now=100.0)
    item.add(4, now=101.0)
    item.add(6, now=102.0)
    assert item.tps(60.0, now=105.0) == pytest.approx(10 / 5)
    assert item.avg(60.0, now=105.0) == pytest.approx(5.0)
    assert StatsItem(now=0.0).tps(60.0, now=0.0) == 0.0


def test_old_samples_are_dropped_but_an_hour_stays():
    item = StatsItem(now=0.0)
    for t in range(0, 3 * 3600, 10):
        item.add(1, now=float(t))
    assert len(item.samples) <= 3600 // 10 + 3
    seconds, value, _ = item.window(3600.0, now=3 * 3600.0)
    assert 3600 <= seconds <= 3610 and value == pytest.approx(seconds / 10, abs=1)


def test_status_by_topic():
    stats = ConsumerStatsManager()
    assert stats.status("T") == {"pullRT": 0.0, "pullTPS": 0.0, "consumeRT": 0.0, "consumeOKTPS": 0.0,
                                 "consumeFailedTPS": 0.0, "consumeFailedMsgs": 0}
    stats.pulled("T", 0.004, 32)
    stats.pulled("T", 0.006, 0)  # a pull that found nothing new still counts for the round trip
    stats.consumed("T", 0.002, 3)
    stats.consumed("T", 0.004, 0, 2)
    stats.consumed("T", None, 1)  # an ack: no handler time
    status = stats.status("T")
    assert status["pullRT"] == pytest.approx(5.0) and status["consumeRT"] == pytest.approx(3.0)
    assert status["pullTPS"] > 0 and status["consumeOKTPS"] > 0 and status["consumeFailedTPS"] > 0
    assert status["consumeFailedMsgs"] == 2
    assert stats.status("Other")["consumeOKTPS"] == 0.0
