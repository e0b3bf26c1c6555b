"""Delivery at a time (5.x timer messages: TIMER_DELIVER_MS, what a 5.x producer's delivery timestamp becomes):
such a message waits in `rmq_sys_wheel_timer` (its real topic and queue in REAL_TOPIC / REAL_QID, its delivery
time as the consume queue's tags code) and is put into its real topic when due, with TIMER_DELIVER_MS kept so
that consumers see when it was meant for.

Upstream keeps a time wheel in files of its own; here the parked messages' (due, queue offset) live in a heap,
rebuilt at start by reading the timer queue from the first message not delivered yet (its offset is kept as
the system group CID_RMQ_SYS_TIMER's consumer offset). A message delivered but not yet counted in that offset
when the broker is killed is delivered again after the restart (at least once, as upstream).
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol.message import (PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC,
                                                PROPERTY_TIMER_DELIVER_MS, MessageExt)
from rocketmq_emulator.protocol.topics import TIMER_GROUP, TIMER_TOPIC
from rocketmq_emulator.store.results import STORED

from .schedule import unparked

if TYPE_CHECKING:
    from .broker_state import BrokerState

log = logging.getLogger("rocketmq_emulator.timer")

#: the latest delivery time accepted, from now (upstream's timerMaxDelaySec default: 3 days)
MAX_DELAY_MS = 3 * 24 * 3600 * 1000


class TimerMessageService:
    def __init__(self, broker: BrokerState) -> None:
        self.broker = broker
        self._heap: list[tuple[int, int]] = []  # (due ms, queue offset in the timer queue)
        self._delivered: set[int] = set()
        self._progress = 0
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def park(self, topic: str, queue_id: int, props: dict[str, str], deliver_ms: int) -> tuple[str, int, int]:
        """Rewrite a message for the timer queue: (topic, queue id, tags code = delivery time)."""
        props[PROPERTY_REAL_TOPIC] = topic
        props[PROPERTY_REAL_QUEUE_ID] = str(queue_id)
        tcm = self.broker.topic_config_manager
        if tcm.get(TIMER_TOPIC) is None:
            tcm.create_without_template(TIMER_TOPIC, 1)
        return TIMER_TOPIC, 0, deliver_ms

    def message_parked(self, queue_offset: int, deliver_ms: int) -> None:
        heapq.heappush(self._heap, (deliver_ms, queue_offset))
        self._wakeup.set()

    def load(self) -> None:
        """The parked messages not delivered yet, from the timer queue."""
        store = self.broker.store
        self._progress = offset = max(0, self.broker.consumer_offset_manager.query_offset(TIMER_GROUP, TIMER_TOPIC, 0),
                                      store.get_min_offset_in_queue(TIMER_TOPIC, 0))
        end = store.get_max_offset_in_queue(TIMER_TOPIC, 0)
        while offset < end:
            got = store.get_message(TIMER_GROUP, TIMER_TOPIC, 0, offset, 32)
            if got is None or not got.messages:
                break
            for record, queue_offset in zip(got.messages, got.queue_offsets):
                due = MessageExt.decode(record).properties.get(PROPERTY_TIMER_DELIVER_MS, "0")
                heapq.heappush(self._heap, (int(due) if due.isdigit() else 0, queue_offset))
            offset = got.next_begin_offset
        if self._heap:
            log.info("timer: %d messages wait for their delivery time", len(self._heap))

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    @property
    def waiting(self) -> int:
        return len(self._heap)

    async def _run(self) -> None:
        while True:
            try:
                wait_s = self.deliver_due()
            except Exception:  # noqa: BLE001 - keep the timer alive
                log.exception("timer: delivery failed")
                wait_s = 1.0
            self._wakeup.clear()
            try:
                async with asyncio.timeout(wait_s):
                    await self._wakeup.wait()
            except TimeoutError:
                pass

    def next_due(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def wake(self) -> None:
        self._wakeup.set()

    def deliver_due(self, now_ms: int | None = None) -> float:
        """Put every due message into its real topic; seconds until the next is due."""
        heap = self._heap
        while heap:
            now = self.broker.clock.now_ms() if now_ms is None else now_ms
            due, offset = heap[0]
            if due > now:
                return min(60.0, (due - now) / 1000)
            if not self._deliver(offset):
                return 1.0
            heapq.heappop(heap)
            self._delivered.add(offset)
            moved = False
            while self._progress in self._delivered:
                self._delivered.discard(self._progress)
                self._progress += 1
                moved = True
            if moved:
                self.broker.consumer_offset_manager.commit_offset("timer", TIMER_GROUP, TIMER_TOPIC, 0,
                                                                  self._progress)
        return 60.0

    def _deliver(self, offset: int) -> bool:
        got = self.broker.store.get_message(TIMER_GROUP, TIMER_TOPIC, 0, offset, 1)
        if got is None or not got.messages or got.queue_offsets[0] != offset:
            return True  # gone (expired files): nothing to deliver
        inner = unparked(MessageExt.decode(got.messages[0]))  # TIMER_DELIVER_MS kept: consumers see it
        if inner is None:
            return True
        result = self.broker.send_core.put_message(inner)
        if result.status not in STORED:
            log.warning("timer: delivery of a message to %s failed: %s", inner.topic, result.status.name)
            return False
        return True
