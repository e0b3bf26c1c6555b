"""The dashboard's charts: what a broker did over the last hour, sampled every `SAMPLE_S` seconds while the
dashboard runs, in memory only.

Per topic: messages put and pulled per second. Per group: messages pulled per second, and its lag as the group page's
table counts it (behind: stored minus committed; ready: stored, not yet pulled; in flight: pulled and not
committed, or popped and not acked), summed over its queues. The broker's own totals (put and got per second)
for the overview. Events to mark on the charts: offset resets and PULL_OFFSET_MOVED corrections (the offset
history), consumers joining and leaving (the consumer manager), and clock advances (admin advanceTime).

Bounded: `KEEP` samples (an hour at 5 s), each value a 4-byte float in one fixed array per series; at most
`MAX_TOPICS` topics (2 series each) and `MAX_GROUPS` groups (4 series each) are kept, the first seen first; a topic
or group past the bound is answered `"tracked": false`. The most it takes is (2 + 2 × 1,000 + 4 × 1,000) series ×
720 × 4 B = 17.3 MB; idle topics and groups (nothing put, pulled or behind yet) take nothing.
"""

from __future__ import annotations

import math
import time
from array import array
from typing import TYPE_CHECKING, Any

from . import views  # (a group's offsets counted as its page's table counts them)

if TYPE_CHECKING:
    from ..core.read_model import ReadModel

#: seconds between samples (the default of dashboardSampleSeconds)
SAMPLE_S = 5.0
#: samples kept per series: an hour at 5 s
KEEP = 720
#: series kept at most (topics; groups, 4 series each)
MAX_TOPICS = 1000
MAX_GROUPS = 1000
TOPIC_SERIES = ("put", "get")
GROUP_SERIES = ("get", "diff", "ready", "inflight")
#: offset history kinds marked on a group's chart
_MARKED = {"reset": "reset", "moved": "moved (illegal offset corrected)"}


def _ring() -> array[float]:
    return array("f", [math.nan]) * KEEP


class BrokerSeries:
    """One broker's samples; `sample` appends one, the readers return the kept window, oldest first."""

    def __init__(self, sample_s: float = SAMPLE_S) -> None:
        self.sample_s = sample_s  # (what the charts say; the dashboard server samples at that pace)
        self.taken = 0  # samples so far; the next goes to index taken % KEEP
        self.times = array("d", [math.nan]) * KEEP  # epoch ms of each sample
        self.broker: dict[str, array[float]] = {"put": _ring(), "get": _ring()}
        self.topics: dict[str, dict[str, array[float]]] = {}
        self.groups: dict[str, dict[str, array[float]]] = {}
        self._last: tuple[float, int, int, dict[str, int], dict[str, int], dict[str, int]] | None = None

    # -- sampling ---------------------------------------------------------------------------------------
    def sample(self, b: ReadModel, now_ms: float | None = None) -> None:
        """Take one sample of `b` (rates since the previous sample; the first sample has none)."""
        now = time.time() * 1000 if now_ms is None else now_ms
        at = self.taken % KEEP
        self.times[at] = now
        figures = b.store_figures()
        puts, (topic_gets, gets) = b.put_counts(), b.get_counts()
        last = self._last
        seconds = (now - last[0]) / 1000 if last is not None else 0.0

        def rate(new: int, old: int | None) -> float:
            return max(0.0, (new - old) / seconds) if seconds > 0 and old is not None else math.nan

        self.broker["put"][at] = rate(figures.put, last[1] if last else None)
        self.broker["get"][at] = rate(figures.got, last[2] if last else None)
        for topic in set(puts) | set(topic_gets):  # a topic's first series when it is first put to or pulled
            if topic not in self.topics and len(self.topics) < MAX_TOPICS:
                self.topics[topic] = {name: _ring() for name in TOPIC_SERIES}
        for topic, rings in self.topics.items():  # (a topic that put nothing since: 0; deleted: stays at 0)
            rings["put"][at] = rate(puts.get(topic, 0), last[3].get(topic, 0) if last else None)
            rings["get"][at] = rate(topic_gets.get(topic, 0), last[5].get(topic, 0) if last else None)
        groups = set(self.groups)
        for group in b.user_groups():
            if group not in groups and len(self.groups) < MAX_GROUPS:
                groups.add(group)
        for group in sorted(groups):
            rows = views.progress_rows(b, group, b.progress(group), b.is_broadcasting(group))
            values = {"get": rate(gets.get(group, 0), last[4].get(group, 0) if last else None),
                      "diff": float(sum(r["diff"] for r in rows)), "ready": float(sum(r["ready"] for r in rows)),
                      "inflight": float(sum(r["inflight"] for r in rows) + b.inflight(group))}
            series = self.groups.get(group)
            if series is None:
                if not any(v for v in values.values() if not math.isnan(v)):
                    continue  # idle so far: no series yet
                series = self.groups[group] = {name: _ring() for name in GROUP_SERIES}
            for name, value in values.items():
                series[name][at] = value
        self._last = (now, figures.put, figures.got, puts, gets, topic_gets)
        self.taken += 1

    # -- reading ----------------------------------------------------------------------------------------
    def _order(self) -> list[int]:
        n = min(self.taken, KEEP)
        first = self.taken - n
        return [(first + i) % KEEP for i in range(n)]

    @staticmethod
    def _values(ring: array[float], order: list[int]) -> list[float | None]:
        return [None if math.isnan(v := ring[i]) else round(v, 2) for i in order]

    def window(self) -> list[int]:
        return [int(self.times[i]) for i in self._order()]

    def overview(self, b: ReadModel) -> dict[str, Any]:
        return self._answer(b, self.broker, ("put", "get"), True, None)

    def topic(self, b: ReadModel, topic: str) -> dict[str, Any]:
        rings = self.topics.get(topic)
        return self._answer(b, rings, TOPIC_SERIES, rings is not None or len(self.topics) < MAX_TOPICS, None)

    def group(self, b: ReadModel, group: str) -> dict[str, Any]:
        rings = self.groups.get(group)
        return self._answer(b, rings, GROUP_SERIES, rings is not None or len(self.groups) < MAX_GROUPS, group)

    def _answer(self, b: ReadModel, rings: dict[str, array[float]] | None, names: tuple[str, ...], tracked: bool,
                group: str | None) -> dict[str, Any]:
        """The JSON of one chart: a series not started yet reads 0 (nothing happened), one not kept null."""
        order = self._order()
        series = {name: (self._values(rings[name], order) if rings is not None else
                         [0.0 if tracked else None] * len(order)) for name in names}
        return {"sampleSeconds": self.sample_s, "keepSeconds": KEEP * self.sample_s, "t": self.window(),
                "tracked": tracked, "series": series, "events": self.events(b, group)}

    def events(self, b: ReadModel, group: str | None) -> list[dict[str, Any]]:
        """What to mark within the kept window: a group's resets and corrections and its clients joining and
        leaving (every group's clients on the overview and topic charts), and the clock's advances."""
        times = self.window()
        since = times[0] if times else time.time() * 1000
        out: list[dict[str, Any]] = []
        if group is not None:
            for e in b.offset_history(group):
                if e.kind in _MARKED and e.time_ms >= since:
                    out.append({"t": e.time_ms, "kind": e.kind, "text": f"{_MARKED[e.kind]}: {e.topic} queue "
                                f"{e.queue_id} to {e.offset} (by {e.by})"})
        for c in b.client_events():
            if c.time_ms >= since and (group is None or c.group == group):
                out.append({"t": c.time_ms, "kind": c.kind, "text": f"{c.client_id} {c.kind} {c.group}"})
        previous = 0
        for real_ms, offset_ms in b.clock_advances():
            if real_ms >= since:
                out.append({"t": real_ms, "kind": "advance",
                            "text": f"clock advanced {(offset_ms - previous) / 1000:g} s"})
            previous = offset_ms
        return sorted(out, key=lambda e: e["t"])
