"""A consumer's pull and consume counters per topic (Java `ConsumerStatsManager`), and the `ConsumeStatus` of
its GET_CONSUMER_RUNNING_INFO answer, computed as the Java client computes them:

* pullRT: mean milliseconds of the pulls that found messages, over the last minute;
* pullTPS: messages those pulls brought, per second over the last minute;
* consumeRT: mean milliseconds of one handler call (a batch), over the last minute, or the last hour when the
  last minute had none;
* consumeOKTPS / consumeFailedTPS: messages consumed / failed (RECONSUME_LATER, an exception, a nack) per
  second over the last minute;
* consumeFailedMsgs: messages failed in the last hour.

Java samples each counter every 10 s and reads "last minute" as the span from the sample a minute old to the
latest one, so its figures are 0 for the first minute and up to 10 s stale. Here a counter is sampled at most
every 10 s when it changes or is read, and the span ends now (the figures are there from the first message).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

SAMPLE_EVERY_S = 10.0
MINUTE_S = 60.0
HOUR_S = 3600.0


class StatsItem:
    """A sum and a count of additions (Java `StatsItem`: value and times), with samples for the windows."""

    def __init__(self, now: float | None = None) -> None:
        self.value = 0
        self.times = 0
        now = time.monotonic() if now is None else now
        self.samples: deque[tuple[float, int, int]] = deque([(now, 0, 0)])

    def _sample(self, now: float) -> None:
        samples = self.samples
        if now - samples[-1][0] >= SAMPLE_EVERY_S:
            samples.append((now, self.value, self.times))
            while len(samples) > 2 and now - samples[1][0] > HOUR_S:
                samples.popleft()

    def add(self, value: int, times: int = 1, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self._sample(now)  # before the addition: the sample holds the sums as they were until now
        self.value += value
        self.times += times

    def window(self, span_s: float, now: float | None = None) -> tuple[float, int, int]:
        """(seconds, value added, additions) from the newest sample at least `span_s` old (else the oldest
        sample) to now."""
        now = time.monotonic() if now is None else now
        self._sample(now)
        base = self.samples[0]
        for sample in self.samples:
            if now - sample[0] < span_s:
                break
            base = sample
        return now - base[0], self.value - base[1], self.times - base[2]

    def tps(self, span_s: float = MINUTE_S, now: float | None = None) -> float:
        seconds, value, _ = self.window(span_s, now)
        return value / seconds if seconds > 0 else 0.0

    def avg(self, span_s: float = MINUTE_S, now: float | None = None) -> float:
        _, value, times = self.window(span_s, now)
        return value / times if times > 0 else 0.0


class TopicStats:
    def __init__(self) -> None:
        self.pull_rt = StatsItem()
        self.pull_tps = StatsItem()
        self.consume_rt = StatsItem()
        self.consume_ok = StatsItem()
        self.consume_failed = StatsItem()


class ConsumerStatsManager:
    """One consumer's counters, by topic (the topic of the queue the messages came from)."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicStats] = {}

    def _of(self, topic: str) -> TopicStats:
        stats = self.topics.get(topic)
        if stats is None:
            stats = self.topics[topic] = TopicStats()
        return stats

    def pulled(self, topic: str, rt_s: float, found: int) -> None:
        """A pull that found messages: its round trip and how many it brought."""
        s = self._of(topic)
        s.pull_rt.add(int(rt_s * 1000))
        if found:
            s.pull_tps.add(found)

    def consumed(self, topic: str, rt_s: float | None, ok: int, failed: int = 0) -> None:
        """One handler call (or acks/nacks, with no time): messages that succeeded and failed."""
        s = self._of(topic)
        if rt_s is not None:
            s.consume_rt.add(int(rt_s * 1000))
        if ok:
            s.consume_ok.add(ok)
        if failed:
            s.consume_failed.add(failed)

    def status(self, topic: str) -> dict[str, Any]:
        """Java `ConsumeStatus` of the topic."""
        s = self.topics.get(topic)
        if s is None:
            return {"pullRT": 0.0, "pullTPS": 0.0, "consumeRT": 0.0, "consumeOKTPS": 0.0, "consumeFailedTPS": 0.0,
                    "consumeFailedMsgs": 0}
        now = time.monotonic()
        consume_rt = s.consume_rt.avg(MINUTE_S, now)
        if s.consume_rt.window(MINUTE_S, now)[1] == 0:
            consume_rt = s.consume_rt.avg(HOUR_S, now)
        return {"pullRT": s.pull_rt.avg(MINUTE_S, now), "pullTPS": s.pull_tps.tps(MINUTE_S, now),
                "consumeRT": consume_rt, "consumeOKTPS": s.consume_ok.tps(MINUTE_S, now),
                "consumeFailedTPS": s.consume_failed.tps(MINUTE_S, now),
                "consumeFailedMsgs": s.consume_failed.window(HOUR_S, now)[1]}
