"""Which client was handed which messages, and when: the broker's own record of deliveries for a message's story
on the dashboard (broker/dashboard/story.py). Kept only while the dashboard runs (the Emulator makes one per broker
then), in memory, the last `KEEP` deliveries of the broker: a pull as the range of queue offsets it read, a pop as
the offsets it handed out. About 150 bytes each: at most 7.5 MB."""

from __future__ import annotations

import time
from collections import deque
from typing import NamedTuple

#: deliveries kept (the oldest dropped first)
KEEP = 50_000


class Delivery(NamedTuple):
    time_ms: int
    group: str
    topic: str
    queue_id: int
    first: int  # the first queue offset delivered (a pull: the offset it read from)
    end: int  # after the last one (a pull: its next begin offset; the tag filter may have skipped some between)
    client: str  # the client id, else its address
    kind: str  # pull, pop, ack (a popped message acked)
    attempt: int = 0  # a pop: the delivery attempt (reconsume times + 1)


class DeliveryLog:
    def __init__(self, keep: int = KEEP) -> None:
        self.deliveries: deque[Delivery] = deque(maxlen=keep)

    def add(self, group: str, topic: str, queue_id: int, first: int, end: int, client: str, kind: str,
            attempt: int = 0) -> None:
        self.deliveries.append(Delivery(time.time_ns() // 1_000_000, group, topic, queue_id, first, end, client,
                                        kind, attempt))

    def of(self, topic: str, queue_id: int, offset: int) -> list[Delivery]:
        """The deliveries that handed out (or, a pull, read past) this queue offset, and its acks, oldest first."""
        return [d for d in self.deliveries
                if d.topic == topic and d.queue_id == queue_id and d.first <= offset < d.end]
