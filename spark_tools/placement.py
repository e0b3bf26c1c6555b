"""Where a task of the `rocketmq` writer sends its rows (no pyspark here, so that tests/test_spark_assign.py checks it
in milliseconds): each task sends the rows that do not say where they go to ONE broker, its home broker, so
that the tasks running at the same time write to different brokers in parallel and no task talks to every
broker.

The home broker of task `p` (Spark's partition id) for a topic is the broker of slot `p mod n` of the topic's
writable queues taken in interleaved order: queue 0 of each broker (brokers by name), then queue 1 of each, and
so on (`a0 b0 a1 b1 ...`; a broker with more queues fills the tail). With the same queue count on every broker
that is broker `p mod B`, so consecutive partitions, which Spark runs at the same time, go to different brokers;
with more queues on one broker, more tasks go to it, in proportion (even per queue overall). Within its home
broker a task sends its batches round robin over that broker's writable queues, starting at its slot's queue
(so small tasks still cover every queue). A write whose partition count is a multiple of the number of brokers
puts the same number of tasks on each broker; the seed command's generated rows have a multiple of brokers x
cores (`partitions_for`).

Rows with placement go where they say, as before: a `queueId` alone is that queue of the first broker (by name)
that has it (the producer's rule); `brokerName` and `queueId` are that broker's queue; a `brokerName` alone is
round robin over that broker's writable queues. A batch to the home broker that fails moves to the next broker
(by name) on each retry, as the producer avoids a broker that failed; pinned batches retry where they said.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

from rocketmq_emulator.protocol.bodies import MessageQueue


class PlacementError(Exception):
    """Rows name a broker or queue the topic has no writable queue for."""


def interleaved(queues: Sequence[MessageQueue]) -> list[MessageQueue]:
    """The writable queues as slots: queue 0 of each broker (by name), then queue 1 of each, ..."""
    by_broker: dict[str, list[MessageQueue]] = {}
    for mq in sorted(queues, key=lambda q: (q.broker_name, q.queue_id)):
        by_broker.setdefault(mq.broker_name, []).append(mq)
    columns = list(by_broker.values())
    longest = max((len(c) for c in columns), default=0)
    return [c[i] for i in range(longest) for c in columns if i < len(c)]


class TaskPlacement:
    """The queues one task (`partition`) sends one topic's batches to, given the topic's writable queues."""

    def __init__(self, topic: str, queues: Sequence[MessageQueue], partition: int) -> None:
        if not queues:
            raise PlacementError(f"topic {topic!r} has no writable queue")
        self.topic = topic
        self.queues = list(queues)
        self.partition = partition
        slots = interleaved(queues)
        self.slot = slots[partition % len(slots)]
        #: every broker's writable queues, by queue id; brokers by name
        self.by_broker: dict[str, list[MessageQueue]] = {}
        for mq in sorted(queues, key=lambda q: (q.broker_name, q.queue_id)):
            self.by_broker.setdefault(mq.broker_name, []).append(mq)
        self.brokers = sorted(self.by_broker)
        self.home = self.slot.broker_name
        self._turns: dict[str, Iterator[int]] = {}

    def _next(self, broker: str) -> MessageQueue:
        own = self.by_broker[broker]
        turn = self._turns.get(broker)
        if turn is None:
            # the home broker from the slot's queue; another from the partition, so tasks spread there too
            start = own.index(self.slot) if broker == self.home else self.partition
            turn = self._turns[broker] = itertools.count(start)
        return own[next(turn) % len(own)]

    def home_queue(self, attempt: int = 0) -> MessageQueue:
        """The queue of a batch without placement: the home broker's next queue; on retry `attempt` (1, 2, ...)
        the next broker's (by name, wrapping round), so that a broker that went away does not fail the task
        while another can take the batch."""
        i = self.brokers.index(self.home)
        return self._next(self.brokers[(i + attempt) % len(self.brokers)])

    def broker_queue(self, broker: str) -> MessageQueue:
        """The next queue of `broker` (rows with a brokerName and no queueId)."""
        if broker not in self.by_broker:
            raise PlacementError(f"topic {self.topic!r} has no writable queue on broker {broker!r} (its brokers: "
                                 f"{', '.join(self.brokers)})")
        return self._next(broker)

    def pinned(self, broker: str, queue_id: int) -> MessageQueue:
        """Queue `queue_id` of `broker` (rows with a brokerName and a queueId)."""
        for mq in self.by_broker.get(broker, ()):
            if mq.queue_id == queue_id:
                return mq
        if broker not in self.by_broker:
            return self.broker_queue(broker)  # raises: no such broker
        have = [mq.queue_id for mq in self.by_broker[broker]]
        raise PlacementError(f"topic {self.topic!r} has no writable queue {broker}:{queue_id} (the writable queue "
                             f"ids of {broker}: {have})")


def brokers_of(counts: dict[str, int]) -> dict[str, int]:
    """Messages per broker from a task's counts per "topic/brokerName/queueId"."""
    out: dict[str, int] = {}
    for key, n in counts.items():
        broker = key.rsplit("/", 2)[-2]
        out[broker] = out.get(broker, 0) + n
    return out


def partitions_for(messages: int, cores: int, brokers: int = 1) -> int:
    """The partition count of generated rows: 200,000 rows each (at most 200 partitions), at least brokers x cores,
    rounded up to a multiple of brokers x cores: each broker gets as many tasks (the same number of rows), and the
    last wave of tasks keeps every core busy (5 partitions on 2 cores leave one idle a third of the time)."""
    unit = max(1, brokers) * max(1, cores)
    return math.ceil(max(unit, min(200, math.ceil(messages / 200_000))) / unit) * unit
