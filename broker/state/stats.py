"""The broker's statistics, kept as 4.9.8 keeps them: `BrokerStatsManager` (stats items per topic and
group with minute/hour/day windows, read by VIEW_BROKER_STATS_DATA and the consume TPS of GET_CONSUME_STATS),
`StoreStatsService` (store-wide put/get rates sampled every second, the put latency distribution) and
`BrokerStats` (the "today"/"yesterday morning" message totals of GET_BROKER_RUNTIME_INFO).

A stats item counts `value` (messages, bytes or milliseconds) and `times` (requests). Every 10 s each item
records a snapshot (kept: 7, so the minute window spans the last 60 s), every 10 min another (7 kept: the
hour window), every hour another (25 kept: the day window); a window's sum is last − first snapshot, its TPS
that sum per second between them, its avgpt sum / times. A new item's first snapshot also records a zero 10 s
(10 min, 1 h) earlier, as StatsItem does. So figures appear at the first 10 s sampling after traffic, and the
minute figures fall back to 0 within 60 s of the traffic stopping.

The counters are plain ints: the event loop is the only writer. The send path calls `put` once per stored
request or run of requests (`benchmarks/profile_send`: a few hundred ns per call).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections import deque
from functools import partial
from time import perf_counter_ns
from typing import Callable, NamedTuple

# the stats names (org.apache.rocketmq.common.stats.Stats) this broker keeps
QUEUE_PUT_NUMS = "QUEUE_PUT_NUMS"
QUEUE_PUT_SIZE = "QUEUE_PUT_SIZE"
QUEUE_GET_NUMS = "QUEUE_GET_NUMS"
QUEUE_GET_SIZE = "QUEUE_GET_SIZE"
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
GROUP_GET_LATENCY = "GROUP_GET_LATENCY"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"
STATS_NAMES = (QUEUE_PUT_NUMS, QUEUE_PUT_SIZE, QUEUE_GET_NUMS, QUEUE_GET_SIZE, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE,
               GROUP_GET_NUMS, GROUP_GET_SIZE, GROUP_GET_LATENCY, SNDBCK_PUT_NUMS, BROKER_PUT_NUMS, BROKER_GET_NUMS)

MINUTE, HOUR, DAY = 0, 1, 2
#: per window: sampling interval (s) and snapshots kept (StatsItem.samplingInSeconds/InMinutes/InHour)
WINDOWS = ((10, 7), (600, 7), (3600, 25))
#: StoreStatsService: one sample a second, 601 kept; putTps etc. are given over the last 10, 60 and 600 s
STORE_SAMPLES = 601
STORE_TPS_SPANS = (10, 60, 600)
#: the put latency distribution is rotated every minute; GET_BROKER_RUNTIME_INFO shows the previous minute's
LATENCY_ROTATE_S = 60
_DISTRIBUTION = (("[<=0ms]", 0), ("[0~10ms]", 10), ("[10~50ms]", 50), ("[50~100ms]", 100), ("[100~200ms]", 200),
                 ("[200~500ms]", 500), ("[500ms~1s]", 1000), ("[1~2s]", 2000), ("[2~3s]", 3000), ("[3~4s]", 4000),
                 ("[4~5s]", 5000), ("[5~10s]", 10000), ("[10s~]", None))


def _latency_buckets() -> list[int]:
    """Upper bounds (ms) of the percentile buckets: 1..20 by 1, ..50 by 2, ..100 by 5, ..200 by 10, ..500 by
    50, ..1000 by 100, ..10000 by 1000, then one open bucket."""
    bounds, at = [], 0
    for step, count in ((1, 20), (2, 15), (5, 10), (10, 10), (50, 6), (100, 5), (1000, 9)):
        for _ in range(count):
            at += step
            bounds.append(at)
    return bounds + [2 ** 63 - 1]


LATENCY_BUCKETS = _latency_buckets()


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class StatsSnapshot(NamedTuple):
    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0
    times: int = 0


class StatsItem:
    """One key of one stats name: `value` and `times` with three windows of (ms, times, value) snapshots."""

    __slots__ = ("value", "times", "windows")

    def __init__(self) -> None:
        self.value = 0
        self.times = 0
        # per window: (ms, times, value) snapshots
        self.windows: tuple[deque[tuple[int, int, int]], ...] = tuple(deque(maxlen=keep) for _, keep in WINDOWS)

    def counts(self) -> tuple[int, int]:
        return self.times, self.value

    def sample(self, window: int, now_ms: int) -> None:
        snapshots = self.windows[window]
        if not snapshots:
            snapshots.append((now_ms - WINDOWS[window][0] * 1000, 0, 0))
        times, value = self.counts()
        snapshots.append((now_ms, times, value))

    def snapshot(self, window: int) -> StatsSnapshot:
        snapshots = self.windows[window]
        if not snapshots:
            return StatsSnapshot()
        (t0, times0, value0), (t1, times1, value1) = snapshots[0], snapshots[-1]
        total, times = value1 - value0, times1 - times0
        tps = total * 1000.0 / (t1 - t0) if t1 > t0 else 0.0
        return StatsSnapshot(total, tps, total / times if times > 0 else 0.0, times)


class CountedItem(StatsItem):
    """A NUMS item whose requests also carry a size: the SIZE item of the same key is a `SizeOf` view."""

    __slots__ = ("size",)

    def __init__(self) -> None:
        super().__init__()
        self.size = 0


class SizeOf(StatsItem):
    """TOPIC_PUT_SIZE / GROUP_GET_SIZE of a key: the bytes of the requests its NUMS item counts."""

    __slots__ = ("of",)

    def __init__(self, of: CountedItem) -> None:
        super().__init__()
        self.of = of

    def counts(self) -> tuple[int, int]:
        return self.of.times, self.of.size


class RateSamples:
    """StoreStatsService's CallSnapshot list of one counter: (ms, total) every second, 601 kept."""

    __slots__ = ("samples",)

    def __init__(self) -> None:
        self.samples: deque[tuple[int, int]] = deque(maxlen=STORE_SAMPLES)

    def add(self, now_ms: int, total: int) -> None:
        self.samples.append((now_ms, total))

    def tps(self, seconds: int) -> float | None:
        """Per second over the last `seconds` samples; None until that many have been taken."""
        s = self.samples
        if len(s) <= seconds:
            return None
        (t0, v0), (t1, v1) = s[-(seconds + 1)], s[-1]
        return (v1 - v0) * 1000.0 / (t1 - t0) if t1 > t0 else 0.0


class BrokerStatsManager:
    """Every counter of the broker. `store_totals()` gives the store's (messages put, bytes put) since start."""

    def __init__(self, cluster_name: str, store_totals: Callable[[], tuple[int, int]] = lambda: (0, 0),
                 clock: Callable[[], int] = _now_ms) -> None:
        self.cluster_name = cluster_name
        self.store_totals = store_totals
        self.clock = clock
        self.sets: dict[str, dict[str, StatsItem]] = {name: {} for name in STATS_NAMES}
        self._topic_put: dict[str, CountedItem] = {}  # = sets[TOPIC_PUT_NUMS], typed
        self._group_get: dict[str, CountedItem] = {}  # = sets[GROUP_GET_NUMS], keyed "topic@group"
        # the broker-wide items, listed in their sets at the first put / get (as 4.9.8 creates them)
        self._broker_put = StatsItem()
        self._broker_get = StatsItem()
        # StoreStatsService
        self.boot_ms = int(time.time() * 1000)
        self.put_failed_times = 0
        self.put_max_ms = 0
        self.get_max_ms = 0
        self.get_found_times = 0
        self.get_miss_times = 0
        self.get_transferred = 0  # messages handed to consumers (getMessageTransferedMsgCount)
        self.rates = {name: RateSamples() for name in ("put", "found", "miss", "transferred")}
        self._puts_under_1ms = 0  # this minute's puts, by elapsed ms (< 1 ms counted apart: nearly all)
        self._puts_slow: dict[int, int] = {}
        self.last_minute_latency: tuple[int, dict[int, int]] | None = None  # None until a minute has passed
        self._latency_rotated_ms = clock()
        # BrokerStats: the totals at the last two local midnights
        self.put_total_yesterday_morning = self.put_total_today_morning = 0
        self.get_total_yesterday_morning = self.get_total_today_morning = 0
        self._today = time.localtime().tm_yday

    def _item(self, name: str, key: str) -> StatsItem:
        table = self.sets[name]
        item = table.get(key)
        if item is None:
            item = table[key] = StatsItem()
        return item

    def start(self, every: Callable[[float, Callable[[], object]], None]) -> None:
        """Start the sampling timers with `every(seconds, fn)` (a `PeriodicTasks.every`)."""
        for window, (interval, _) in enumerate(WINDOWS):
            every(interval, partial(self.sample, window))
        every(1.0, self.sample_store)

    # -- counting (hot paths) -----------------------------------------------------------------------
    def put(self, topic: str, nums: int, size: int, times: int, began_ns: int) -> None:
        """`times` send requests stored `nums` messages of `size` bytes in `topic`, the store call having begun
        at perf_counter_ns `began_ns` (TOPIC_PUT_NUMS/SIZE, BROKER_PUT_NUMS, the put latency)."""
        item = self._topic_put.get(topic)
        if item is None:
            item = self._new_counted(TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, topic, self._topic_put)
            self.sets[BROKER_PUT_NUMS][self.cluster_name] = self._broker_put
        item.value += nums
        item.size += size
        item.times += times
        self._broker_put.value += nums
        elapsed = perf_counter_ns() - began_ns
        if elapsed < 1_000_000:
            self._puts_under_1ms += times
        else:
            self._put_slow(elapsed // 1_000_000, times)

    def topic_put_counts(self) -> dict[str, int]:
        """Messages put since start, by topic."""
        return {topic: item.value for topic, item in self._topic_put.items()}

    def get_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Messages pulled since start: (by topic, its groups together; by group, its topics together)."""
        by_topic: dict[str, int] = {}
        by_group: dict[str, int] = {}
        for key, item in self._group_get.items():  # keyed "topic@group"
            topic, _, group = key.partition("@")
            by_topic[topic] = by_topic.get(topic, 0) + item.value
            by_group[group] = by_group.get(group, 0) + item.value
        return by_topic, by_group

    def _new_counted(self, nums_name: str, size_name: str, key: str, table: dict[str, CountedItem]) -> CountedItem:
        item = table[key] = CountedItem()
        self.sets[nums_name][key] = item
        self.sets[size_name][key] = SizeOf(item)
        return item

    def _put_slow(self, ms: int, times: int) -> None:
        self._puts_slow[ms] = self._puts_slow.get(ms, 0) + times
        if ms > self.put_max_ms:
            self.put_max_ms = ms

    def put_failed(self) -> None:
        self.put_failed_times += 1

    def queue_put(self, topic: str, queue_id: int, size: int) -> None:
        """QUEUE_PUT_NUMS/SIZE "topic@queueId": kept for SCHEDULE_TOPIC_XXXX only, as 4.9.8 does."""
        key = f"{topic}@{queue_id}"
        for name, value in ((QUEUE_PUT_NUMS, 1), (QUEUE_PUT_SIZE, size)):
            item = self._item(name, key)
            item.value += value
            item.times += 1

    def got(self, group: str, topic: str, queue_id: int, nums: int, size: int, elapsed_ms: int) -> None:
        """A pull found `nums` messages of `size` bytes (GROUP_GET_NUMS/SIZE "topic@group", BROKER_GET_NUMS,
        GROUP_GET_LATENCY "queueId@topic@group", the store's found/transferred counts)."""
        key = f"{topic}@{group}"
        item = self._group_get.get(key)
        if item is None:
            item = self._new_counted(GROUP_GET_NUMS, GROUP_GET_SIZE, key, self._group_get)
            self.sets[BROKER_GET_NUMS][self.cluster_name] = self._broker_get
        item.value += nums
        item.size += size
        item.times += 1
        self._broker_get.value += nums
        latency = self._item(GROUP_GET_LATENCY, f"{queue_id}@{key}")
        latency.value += elapsed_ms
        latency.times += 1
        self.get_found_times += 1
        self.get_transferred += nums
        if elapsed_ms > self.get_max_ms:
            self.get_max_ms = elapsed_ms

    def missed(self, elapsed_ms: int) -> None:
        """A pull that found nothing (getMissTps)."""
        self.get_miss_times += 1
        if elapsed_ms > self.get_max_ms:
            self.get_max_ms = elapsed_ms

    def sent_back(self, group: str, topic: str) -> None:
        """A consumer sent a message of `topic` back (SNDBCK_PUT_NUMS "topic@group")."""
        item = self._item(SNDBCK_PUT_NUMS, f"{topic}@{group}")
        item.value += 1
        item.times += 1

    def parked(self, topic: str, queue_id: int, size: int) -> None:
        """A sent-back message stored in SCHEDULE_TOPIC_XXXX: its topic and queue puts, not the broker's."""
        item = self._topic_put.get(topic) or self._new_counted(TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, topic, self._topic_put)
        item.value += 1
        item.size += size
        item.times += 1
        self.queue_put(topic, queue_id, size)

    def schedule_delivered(self, group: str, schedule_topic: str, queue_id: int, topic: str, size: int) -> None:
        """The schedule service moved a due message of delay queue `queue_id` to `topic` (4.9.8 counts it as a
        get of `group` from the schedule topic and a put to the real topic)."""
        for name, value in ((QUEUE_GET_NUMS, 1), (QUEUE_GET_SIZE, size)):
            item = self._item(name, f"{schedule_topic}@{queue_id}@{group}")
            item.value += value
            item.times += 1
        key = f"{schedule_topic}@{group}"
        got = self._group_get.get(key) or self._new_counted(GROUP_GET_NUMS, GROUP_GET_SIZE, key, self._group_get)
        got.value += 1
        got.size += size
        got.times += 1
        self.put(topic, 1, size, 1, perf_counter_ns())

    # -- reading -----------------------------------------------------------------------------------
    def get_item(self, name: str, key: str) -> StatsItem | None:
        return self.sets.get(name, {}).get(key)

    def group_get_tps(self, group: str, topic: str) -> float:
        """Messages per second `group` pulled from `topic` over the last minute (tpsGroupGetNums)."""
        item = self._group_get.get(f"{topic}@{group}")
        return item.snapshot(MINUTE).tps if item is not None else 0.0

    def store_tps(self, name: str, seconds: int) -> float | None:
        return self.rates[name].tps(seconds)

    def latency_percentile(self, px: float) -> float:
        """findPutMessageEntireTimePX over the previous minute: ms, interpolated inside the bucket."""
        if self.last_minute_latency is None:
            return 0.0
        under_1ms, slow = self.last_minute_latency
        counts = [0] * len(LATENCY_BUCKETS)
        counts[0] = under_1ms
        for ms, n in slow.items():
            counts[bisect_left(LATENCY_BUCKETS, ms)] += n
        index = int(sum(counts) * px)
        passed = 0
        for i, count in enumerate(counts):
            if index <= passed + count:
                if count == 0:
                    return 0.0 if i == 0 else float(LATENCY_BUCKETS[i - 1])
                low = LATENCY_BUCKETS[i - 1] if i else 0
                return low + (LATENCY_BUCKETS[i] - low) * (index - passed) / count
            passed += count
        return 0.0

    def latency_distribution(self) -> str | None:
        """putMessageDistributeTime of the previous minute ("[<=0ms]:n [0~10ms]:n ... "), None before it."""
        if self.last_minute_latency is None:
            return None
        under_1ms, slow = self.last_minute_latency
        counts = [under_1ms] + [0] * (len(_DISTRIBUTION) - 1)
        for ms, n in slow.items():
            i = next((k for k, (_, below) in enumerate(_DISTRIBUTION) if below is None or ms < below), 0)
            counts[i] += n
        return "".join(f"{label}:{n} " for (label, _), n in zip(_DISTRIBUTION, counts))

    # -- sampling ----------------------------------------------------------------------------------
    def sample(self, window: int) -> None:
        now = self.clock()
        for table in self.sets.values():
            for item in table.values():
                item.sample(window, now)

    def sample_store(self) -> None:
        """Every second: the store rates; every minute the latency distribution; at local midnight the totals."""
        now = self.clock()
        put_total, _ = self.store_totals()
        self.rates["put"].add(now, put_total)
        self.rates["found"].add(now, self.get_found_times)
        self.rates["miss"].add(now, self.get_miss_times)
        self.rates["transferred"].add(now, self.get_transferred)
        if now - self._latency_rotated_ms >= LATENCY_ROTATE_S * 1000:
            self._latency_rotated_ms = now
            self.last_minute_latency = (self._puts_under_1ms, self._puts_slow)
            self._puts_under_1ms, self._puts_slow = 0, {}
        today = time.localtime().tm_yday
        if today != self._today:
            self._today = today
            self.record_morning()

    def record_morning(self) -> None:
        """BrokerStats.record: today's morning totals become yesterday's, the current totals today's."""
        self.put_total_yesterday_morning = self.put_total_today_morning
        self.get_total_yesterday_morning = self.get_total_today_morning
        self.put_total_today_morning = self.store_totals()[0]
        self.get_total_today_morning = self.get_transferred
