"""What happened to a group's offsets, most recent last, for the dashboard's offset history: every change of a
committed offset (who committed it: the client's address, "pop", "admin", ...), every commit ignored because a
reset was pending or fenced, every reset, and every PULL_OFFSET_MOVED correction. A commit that repeats the
stored offset is not an event. The last `per_group` events of each group are kept, in memory only."""

from __future__ import annotations

import time
from collections import deque
from typing import NamedTuple


class OffsetEvent(NamedTuple):
    time_ms: int
    topic: str
    queue_id: int
    offset: int
    #: commit, ignored (a commit refused: reset pending or fenced), reset, moved (PULL_OFFSET_MOVED), removed
    kind: str
    by: str
    #: the offset before (None: none stored)
    previous: int | None = None


class OffsetHistory:
    def __init__(self, per_group: int = 500) -> None:
        self.per_group = per_group
        self._events: dict[str, deque[OffsetEvent]] = {}

    def add(self, group: str, topic: str, queue_id: int, offset: int, kind: str, by: str,
            previous: int | None = None) -> None:
        events = self._events.get(group)
        if events is None:
            events = self._events[group] = deque(maxlen=self.per_group)
        events.append(OffsetEvent(time.time_ns() // 1_000_000, topic, queue_id, offset, kind, by, previous))

    def of(self, group: str, topic: str | None = None, queue_id: int | None = None) -> list[OffsetEvent]:
        return [e for e in self._events.get(group, ()) if (topic is None or e.topic == topic)
                and (queue_id is None or e.queue_id == queue_id)]

    def forget(self, group: str) -> None:
        self._events.pop(group, None)
