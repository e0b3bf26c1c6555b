"""The broker statistics (broker/state/stats.py) on a driven clock: the minute/hour/day windows of a stats item, the
per-second store rates, the put latency percentiles and the morning totals, as 4.9.8 computes them."""

from __future__ import annotations

from time import perf_counter_ns

import pytest

from rocketmq_emulator.broker.state.stats import (BROKER_GET_NUMS, BROKER_PUT_NUMS, DAY, GROUP_GET_LATENCY, GROUP_GET_NUMS,
                                            GROUP_GET_SIZE, HOUR, MINUTE, QUEUE_GET_NUMS, QUEUE_PUT_NUMS,
                                            SNDBCK_PUT_NUMS, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, BrokerStatsManager)


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms

    def advance(self, seconds: float) -> None:
        self.ms += int(seconds * 1000)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def stats(clock: Clock) -> BrokerStatsManager:
    totals = {"put": 0, "bytes": 0}
    manager = BrokerStatsManager("DefaultCluster", lambda: (totals["put"], totals["bytes"]), clock=clock)
    manager.totals = totals  # type: ignore[attr-defined]  # the store's counters, driven by the test
    return manager


def now() -> int:
    return perf_counter_ns()


def test_minute_window_sums_the_last_60_seconds_then_forgets(stats, clock):
    for _ in range(10):
        stats.put("Orders", 10, 1500, 10, now())  # 10 requests of one message, 150 B each
    clock.advance(10)
    stats.sample(MINUTE)  # the item's first sample also records a zero 10 s earlier
    nums = stats.get_item(TOPIC_PUT_NUMS, "Orders").snapshot(MINUTE)
    assert (nums.sum, nums.tps, nums.avgpt, nums.times) == (100, 10.0, 1.0, 100)
    size = stats.get_item(TOPIC_PUT_SIZE, "Orders").snapshot(MINUTE)
    assert (size.sum, size.tps, size.avgpt) == (15000, 1500.0, 150.0)
    for _ in range(5):  # no more traffic: the window spans 60 s and still holds it
        clock.advance(10)
        stats.sample(MINUTE)
    held = stats.get_item(TOPIC_PUT_NUMS, "Orders").snapshot(MINUTE)
    assert held.sum == 100 and held.tps == pytest.approx(100 / 60)
    clock.advance(10)
    stats.sample(MINUTE)  # the snapshot before the traffic leaves the window
    assert stats.get_item(TOPIC_PUT_NUMS, "Orders").snapshot(MINUTE).sum == 0


def test_nothing_shows_before_the_first_sampling(stats):
    stats.put("Orders", 5, 500, 5, now())
    assert stats.get_item(TOPIC_PUT_NUMS, "Orders").snapshot(MINUTE).sum == 0
    assert stats.get_item(TOPIC_PUT_NUMS, "Nobody") is None and stats.get_item("NO_SUCH_STATS", "Orders") is None


def test_hour_and_day_windows(stats, clock):
    stats.put("Orders", 600, 60000, 1, now())  # one batch of 600
    clock.advance(600)
    stats.sample(HOUR)
    hour = stats.get_item(TOPIC_PUT_NUMS, "Orders").snapshot(HOUR)
    assert (hour.sum, hour.tps, hour.avgpt) == (600, 1.0, 600.0)
    assert stats.get_item(TOPIC_PUT_NUMS, "Orders").snapshot(DAY).sum == 0
    clock.advance(3000)
    stats.sample(DAY)
    assert stats.get_item(TOPIC_PUT_NUMS, "Orders").snapshot(DAY).tps == pytest.approx(600 / 3600)
    for _ in range(6):  # an hour window keeps 7 snapshots, ten minutes apart
        clock.advance(600)
        stats.sample(HOUR)
    assert stats.get_item(TOPIC_PUT_NUMS, "Orders").snapshot(HOUR).sum == 0
    for _ in range(23):  # a day window keeps 25, an hour apart
        clock.advance(3600)
        stats.sample(DAY)
    assert stats.get_item(TOPIC_PUT_NUMS, "Orders").snapshot(DAY).sum == 600
    clock.advance(3600)
    stats.sample(DAY)
    assert stats.get_item(TOPIC_PUT_NUMS, "Orders").snapshot(DAY).sum == 0


def test_group_gets_give_the_consume_tps(stats, clock):
    assert stats.group_get_tps("billing", "Orders") == 0.0
    for _ in range(20):
        stats.got("billing", "Orders", 3, 32, 32 * 200, 0)
    stats.missed(2)
    clock.advance(10)
    stats.sample(MINUTE)
    assert stats.group_get_tps("billing", "Orders") == 64.0
    assert stats.group_get_tps("billing", "Other") == 0.0
    assert stats.get_item(GROUP_GET_NUMS, "Orders@billing").snapshot(MINUTE).avgpt == 32.0
    assert stats.get_item(GROUP_GET_SIZE, "Orders@billing").snapshot(MINUTE).sum == 20 * 32 * 200
    assert stats.get_item(GROUP_GET_LATENCY, "3@Orders@billing").snapshot(MINUTE).times == 20
    assert stats.get_item(BROKER_GET_NUMS, "DefaultCluster").snapshot(MINUTE).sum == 640
    assert (stats.get_found_times, stats.get_miss_times, stats.get_transferred, stats.get_max_ms) == (20, 1, 640, 2)


def test_broker_wide_items_appear_with_the_first_put(stats, clock):
    assert stats.get_item(BROKER_PUT_NUMS, "DefaultCluster") is None
    stats.put("A", 3, 300, 3, now())
    stats.put("B", 2, 200, 1, now())
    clock.advance(10)
    stats.sample(MINUTE)
    assert stats.get_item(BROKER_PUT_NUMS, "DefaultCluster").snapshot(MINUTE).sum == 5


def test_send_back_and_schedule_items(stats, clock):
    stats.sent_back("billing", "Orders")
    stats.parked("SCHEDULE_TOPIC_XXXX", 2, 250)
    stats.schedule_delivered("SCHEDULE_CONSUMER", "SCHEDULE_TOPIC_XXXX", 2, "%RETRY%billing", 240)
    clock.advance(10)
    stats.sample(MINUTE)
    assert stats.get_item(SNDBCK_PUT_NUMS, "Orders@billing").snapshot(MINUTE).sum == 1
    assert stats.get_item(TOPIC_PUT_NUMS, "SCHEDULE_TOPIC_XXXX").snapshot(MINUTE).sum == 1
    assert stats.get_item(QUEUE_PUT_NUMS, "SCHEDULE_TOPIC_XXXX@2").snapshot(MINUTE).sum == 1
    assert stats.get_item(QUEUE_GET_NUMS, "SCHEDULE_TOPIC_XXXX@2@SCHEDULE_CONSUMER").snapshot(MINUTE).sum == 1
    assert stats.group_get_tps("SCHEDULE_CONSUMER", "SCHEDULE_TOPIC_XXXX") == 0.1
    assert stats.get_item(TOPIC_PUT_NUMS, "%RETRY%billing").snapshot(MINUTE).sum == 1
    # the parked send-back is not a broker put (4.9.8 counts only the topic and queue); the delivery is
    assert stats.get_item(BROKER_PUT_NUMS, "DefaultCluster").snapshot(MINUTE).sum == 1


def test_store_rates_over_10_60_and_600_seconds(stats, clock):
    for second in range(601):
        stats.totals["put"] = second * 50
        stats.get_transferred = second * 20
        stats.sample_store()
        if second == 10:
            assert stats.store_tps("put", 10) == 50.0 and stats.store_tps("put", 60) is None
        clock.advance(1)
    assert [stats.store_tps("put", s) for s in (10, 60, 600)] == [50.0, 50.0, 50.0]
    assert stats.store_tps("transferred", 600) == 20.0 and stats.store_tps("miss", 10) == 0.0
    clock.advance(1)  # a sample 2 s after the last, with no new puts: 601 kept, second 0's dropped
    stats.sample_store()
    assert stats.store_tps("put", 600) == pytest.approx((600 * 50 - 50) / 601)


def test_put_latency_of_the_previous_minute(stats, clock):
    assert stats.latency_distribution() is None and stats.latency_percentile(0.99) == 0.0
    for _ in range(98):  # (begun "in a second": under 1 ms however long the machine takes to get there)
        stats.put("Orders", 1, 100, 1, now() + 1_000_000_000)
    stats.put("Orders", 1, 100, 1, now() - 5_000_000)  # a 5 ms put
    stats.put("Orders", 1, 100, 1, now() - 120_000_000)  # a 120 ms put
    clock.advance(60)
    stats.sample_store()  # a minute has passed: this minute's figures become the shown ones
    assert stats.latency_distribution() == ("[<=0ms]:98 [0~10ms]:1 [10~50ms]:0 [50~100ms]:0 [100~200ms]:1 "
                                            "[200~500ms]:0 [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 "
                                            "[5~10s]:0 [10s~]:0 ")
    assert stats.put_max_ms == 120
    assert stats.latency_percentile(0.5) == pytest.approx(50 / 98)  # inside the first bucket, 0-1 ms
    assert stats.latency_percentile(0.99) == 5.0  # the 99th put is the 5 ms one: the top of its bucket
    clock.advance(60)
    stats.sample_store()  # an idle minute
    assert stats.latency_percentile(0.99) == 0.0 and stats.latency_distribution().startswith("[<=0ms]:0 ")


def test_morning_totals(stats):
    stats.totals["put"] = 700
    stats.get_transferred = 500
    stats.record_morning()  # first midnight
    stats.totals["put"] = 1000
    stats.get_transferred = 900
    stats.record_morning()  # second midnight
    assert (stats.put_total_yesterday_morning, stats.put_total_today_morning) == (700, 1000)
    assert (stats.get_total_yesterday_morning, stats.get_total_today_morning) == (500, 900)
