"""Delayed delivery (reference §8.9): messages with DELAY=L are parked in SCHEDULE_TOPIC_XXXX queue L-1
and re-put to their real topic and queue when due. Retries (CONSUMER_SEND_MSG_BACK) use the same path.
Progress per level is kept in `config/delayOffset.json`.

Each level has its own asyncio task that sleeps exactly until the next message of that level is due, so a
10 s retry arrives 10 s later, not on a coarse timer.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from rocketmq_emulator.protocol import fastjson
from rocketmq_emulator.protocol.bodies import Body
from rocketmq_emulator.protocol.message import (PROPERTY_DELAY_TIME_LEVEL, PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC,
                                                MessageExt)
from rocketmq_emulator.protocol.topics import SCHEDULE_CONSUMER_GROUP, SCHEDULE_TOPIC, parse_delay_levels
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner
from rocketmq_emulator.store.results import STORED, GetMessageStatus

from ..state.config_file import load_config_file, write_config_file

if TYPE_CHECKING:
    from .broker_state import BrokerState

log = logging.getLogger("rocketmq_emulator.schedule")


class DelayOffsetSerializeWrapper(Body):
    offset_table: dict[int, int] = msgspec.field(default_factory=dict)


def unparked(msg: MessageExt, *drop: str, keep: bool = False) -> MessageExtBrokerInner | None:
    """A message parked for later (delay level, delivery time) as it goes into its real topic and queue (REAL_TOPIC
    / REAL_QID), without those and the `drop` properties; None when it names no real topic. `keep`: every property
    stays, REAL_TOPIC, REAL_QID and DELAY included, as 4.9.8's (and 5.x's) ScheduleMessageService stores a delayed
    message that is due (it writes the parked message's properties, then clears DELAY from the map only)."""
    props = dict(msg.properties)
    topic = props.get(PROPERTY_REAL_TOPIC) if keep else props.pop(PROPERTY_REAL_TOPIC, None)
    queue_id = int((props.get(PROPERTY_REAL_QUEUE_ID) if keep else props.pop(PROPERTY_REAL_QUEUE_ID, "0")) or 0)
    for name in drop:
        props.pop(name, None)
    return None if topic is None else MessageExtBrokerInner.rebuilt(msg, topic, queue_id, props)


class ScheduleMessageService:
    def __init__(self, broker: BrokerState, config_dir: Path) -> None:
        self.broker = broker
        self.path = config_dir / "delayOffset.json"
        self.delays = parse_delay_levels(broker.config.store.message_delay_level)
        self.offsets: dict[int, int] = {}
        self._last_taken = b""
        self._wakeups: dict[int, asyncio.Event] = {}
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def max_level(self) -> int:
        return len(self.delays)

    def load(self) -> None:
        wrapper = load_config_file(self.path, DelayOffsetSerializeWrapper.decode)
        if wrapper is not None:
            self.offsets = dict(wrapper.offset_table)

    def take_master_offsets(self, body: bytes) -> None:
        """A slave keeps its master's delay-level offsets (GET_ALL_DELAY_OFFSET's body; broker/slave_sync.py)."""
        self.offsets = dict(DelayOffsetSerializeWrapper.decode(body).offset_table)

    def encode(self) -> bytes:
        return fastjson.dumps(DelayOffsetSerializeWrapper(offset_table=self.offsets), pretty=True).encode()

    def persist(self) -> None:
        write_config_file(self.path, self.encode())

    def take_changed(self) -> bytes | None:
        """The file content if it differs from the last one taken (for a write off the event loop)."""
        data = self.encode()
        if data == self._last_taken:
            return None
        self._last_taken = data
        return data

    def park(self, topic: str, queue_id: int, props: dict[str, str], level: int) -> tuple[str, int, int]:
        """Rewrite a message for the schedule topic: returns (topic, queue id, tagsCode = delivery time)."""
        level = min(level, self.max_level)
        props[PROPERTY_DELAY_TIME_LEVEL] = str(level)
        props[PROPERTY_REAL_TOPIC] = topic
        props[PROPERTY_REAL_QUEUE_ID] = str(queue_id)
        return SCHEDULE_TOPIC, level - 1, self.broker.clock.now_ms() + self.delays[level - 1]

    def message_parked(self, level_queue_id: int) -> None:
        event = self._wakeups.get(level_queue_id + 1)
        if event is not None:
            event.set()

    async def start(self) -> None:
        for level in range(1, self.max_level + 1):
            self._wakeups[level] = asyncio.Event()
            self._tasks.append(asyncio.get_running_loop().create_task(self._run_level(level)))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self.persist()

    async def _run_level(self, level: int) -> None:
        event = self._wakeups[level]
        while True:
            try:
                wait_s = self._deliver_due(level)
            except Exception:  # noqa: BLE001 - keep the level alive, try again shortly
                log.exception("delay level %d: delivery failed", level)
                wait_s = 1.0
            event.clear()
            try:  # asyncio.timeout, not wait_for: 3.11's wait_for loses a cancel that races the event (stop hangs)
                async with asyncio.timeout(wait_s):
                    await event.wait()
            except TimeoutError:
                pass

    def _deliver_due(self, level: int) -> float:
        """Re-put every due message of `level`; return how long to sleep until the next one is due."""
        store = self.broker.store
        queue_id = level - 1
        offset = max(self.offsets.get(level, 0), store.get_min_offset_in_queue(SCHEDULE_TOPIC, queue_id))
        delay = self.delays[level - 1]
        while True:
            result = store.get_message(SCHEDULE_CONSUMER_GROUP, SCHEDULE_TOPIC, queue_id, offset, 32, None)
            if result is None:
                return 1.0
            if result.status is not GetMessageStatus.FOUND:
                if result.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                                     GetMessageStatus.OFFSET_FOUND_NULL):
                    self.offsets[level] = offset = result.next_begin_offset
                    continue
                return 60.0
            for record, queue_offset in zip(result.messages, result.queue_offsets):
                msg = MessageExt.decode(record)
                due = self.broker.clock.at(msg.store_timestamp) + delay
                now = self.broker.clock.now_ms()
                if due > now:
                    self.offsets[level] = queue_offset
                    return (due - now) / 1000
                if not self._redeliver(msg):
                    self.offsets[level] = queue_offset
                    return 1.0
                offset = queue_offset + 1
                self.offsets[level] = offset

    def next_due(self) -> tuple[int, int] | None:
        """(due time in ms, level) of the earliest parked message at the head of a level (fast-forward merges
        the levels and the timer in due order)."""
        store = self.broker.store
        best: tuple[int, int] | None = None
        for level in range(1, self.max_level + 1):
            queue_id = level - 1
            offset = max(self.offsets.get(level, 0), store.get_min_offset_in_queue(SCHEDULE_TOPIC, queue_id))
            result = store.get_message(SCHEDULE_CONSUMER_GROUP, SCHEDULE_TOPIC, queue_id, offset, 1, None)
            if result is None or result.status is not GetMessageStatus.FOUND:
                continue
            due = self.broker.clock.at(MessageExt.decode(result.messages[0]).store_timestamp) + self.delays[level - 1]
            if best is None or due < best[0]:
                best = (due, level)
        return best

    def deliver_next(self, level: int) -> bool:
        """Put the head message of `level` into its topic now (whatever its due time); False when it could not."""
        store = self.broker.store
        queue_id = level - 1
        offset = max(self.offsets.get(level, 0), store.get_min_offset_in_queue(SCHEDULE_TOPIC, queue_id))
        result = store.get_message(SCHEDULE_CONSUMER_GROUP, SCHEDULE_TOPIC, queue_id, offset, 1, None)
        if result is None or result.status is not GetMessageStatus.FOUND:
            return False
        if not self._redeliver(MessageExt.decode(result.messages[0])):
            return False
        self.offsets[level] = result.queue_offsets[0] + 1
        return True

    def wake_all(self) -> None:
        """Every level looks again at what is due (the clock moved)."""
        for event in self._wakeups.values():
            event.set()

    def _redeliver(self, msg: MessageExt) -> bool:
        inner = unparked(msg, keep=True)
        if inner is None:
            log.warning("scheduled message at %d has no REAL_TOPIC; dropped", msg.commit_log_offset)
            return True
        topic = inner.topic
        result = self.broker.send_core.put_message(inner)
        if result.status not in STORED:
            log.warning("redelivery of a delayed message to %s failed: %s", topic, result.status.name)
            return False
        self.broker.stats.schedule_delivered(SCHEDULE_CONSUMER_GROUP, SCHEDULE_TOPIC, msg.queue_id, topic,
                                             result.wrote_bytes)
        return True
