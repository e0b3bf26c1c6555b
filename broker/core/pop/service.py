"""The POP core (5.x PopMessageProcessor, AckMessageProcessor, ChangeInvisibleTimeProcessor, PopReviveService and
ConsumerOrderInfoManager in one place), used by the remoting handlers and by the gRPC endpoint alike.

- A pop reads a group's queues (one, or all of the topic's, the group's pop retry topic first with
  `popFromRetryProbability` percent), moves the group's offset past what it returns (orderly pops excepted), and
  keeps a checkpoint of what it returned; each message gets a receipt handle. With nothing to return it waits up
  to the poll time for a message to arrive in the topic or its retry topic.
- An ack marks a message of a checkpoint done; an ack with a handle that a change of invisible time superseded,
  or of a message already acked or revived, is OK and does nothing (as upstream).
- Change-invisible moves one message into a new checkpoint with a new invisible time and returns its new handle.
- Revive: a message still un-acked when its invisible time is over is put into `%RETRY%<group>_<topic>` with its
  reconsume times + 1, or into `%DLQ%<group>` once it was delivered the group's max times (retryMaxTimes + 1).
- Orderly (FIFO) pops: the queue stays blocked while a pop of it has un-acked messages inside their invisible
  time; the group's offset moves only over acked messages; after the invisible time the same messages are
  delivered again, in order, with their delivery attempt counted up; past the max attempts a message goes to
  the DLQ and the queue moves on.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rocketmq_emulator.protocol import BrokerError, ResponseCode
from rocketmq_emulator.protocol.message import MessageExt
from rocketmq_emulator.protocol.topics import RETRY_GROUP_TOPIC_PREFIX, pop_retry_topic
from rocketmq_emulator.store.results import GetMessageResult

from ..consume_checks import check_consume
from .checkpoint import CheckpointStore, PopCheckpoint, ReceiptHandle
from .moves import MessageMoves

if TYPE_CHECKING:
    from ..broker_state import BrokerState

log = logging.getLogger("rocketmq_emulator.pop")

@dataclass(frozen=True, slots=True)
class PopRequest:
    group: str
    topic: str
    invisible_ms: int
    queue_id: int = -1  # -1: any queue of the topic
    max_msgs: int = 32
    poll_ms: int = 0
    init_mode: int = 1  # ConsumeInitMode.MAX
    #: a tag filter (None: every tag) and/or a compiled SQL92 filter of records
    tag_codes: frozenset[int] | None = None
    record_filter: Callable[[bytes], bool] | None = None
    order: bool = False
    client: str = ""  # who pops (a client id, else its address): the dashboard's message story


@dataclass(slots=True)
class PoppedMessage:
    message: MessageExt
    handle: ReceiptHandle
    #: delivery attempt, 1 for the first delivery
    attempt: int


@dataclass(slots=True)
class PopResult:
    pop_time: int
    invisible_ms: int
    messages: list[PoppedMessage] = field(default_factory=list)
    #: messages left in the queues read, after this pop
    rest_num: int = 0


class PopService:
    def __init__(self, broker: BrokerState, config_dir: Path, *, fsync: bool = False) -> None:
        self.broker = broker
        self.store = CheckpointStore(config_dir / "popCheckpoint.db", fsync=fsync)
        self.moves = MessageMoves(broker)
        self.checkpoints: dict[int, PopCheckpoint] = {}
        #: (group, topic read, queue, offset) -> the live checkpoint holding that message
        self._by_offset: dict[tuple[str, str, int, int], PopCheckpoint] = {}
        #: (group, topic, queue) -> its live orderly checkpoints
        self._orderly: dict[tuple[str, str, int], list[PopCheckpoint]] = {}
        #: (group, topic, queue) -> offset -> deliveries so far (orderly pops)
        self._order_attempts: dict[tuple[str, str, int], dict[int, int]] = {}
        #: topic -> futures of pops waiting for a message
        self.waiting: dict[str, set[asyncio.Future[None]]] = {}
        self._next_id = 0
        self._rotation = 0

    # -- life cycle ---------------------------------------------------------------------------------
    def load(self) -> None:
        for ck in self.store.open():
            self._add(ck)
        self._next_id = max(self.store.max_id(), time.time_ns() // 1000)
        if self.checkpoints:
            log.info("pop: %d checkpoints with %d un-acked messages kept from the last run", len(self.checkpoints),
                     sum(len(ck.pending()) for ck in self.checkpoints.values()))

    def stop(self) -> None:
        for futures in self.waiting.values():
            for fut in futures:
                if not fut.done():
                    fut.set_result(None)
        self.waiting.clear()
        self.store.close()

    # -- pop ----------------------------------------------------------------------------------------
    async def pop(self, req: PopRequest) -> PopResult:
        """Pop up to `req.max_msgs` messages; with none, wait up to `req.poll_ms` for one to arrive."""
        self._check(req)
        deadline = time.monotonic() + max(0, req.poll_ms) / 1000
        while True:
            result = self.pop_once(req)
            left = deadline - time.monotonic()
            if result.messages or left <= 0:
                return result
            fut = asyncio.get_running_loop().create_future()
            topics = (req.topic, pop_retry_topic(req.group, req.topic))
            for t in topics:
                self.waiting.setdefault(t, set()).add(fut)
            try:
                async with asyncio.timeout(left):
                    await fut
            except TimeoutError:
                pass
            finally:
                for t in topics:
                    waiters = self.waiting.get(t)
                    if waiters is not None:
                        waiters.discard(fut)
                        if not waiters:
                            del self.waiting[t]
            if not self.store_open:
                return PopResult(self.broker.clock.now_ms(), req.invisible_ms)

    @property
    def store_open(self) -> bool:
        return self.store.is_open

    def notify(self, topic: str) -> None:
        """A message arrived in `topic`: the pops waiting on it try again."""
        futures = self.waiting.pop(topic, None)
        if futures:
            for fut in futures:
                if not fut.done():
                    fut.set_result(None)

    def _check(self, req: PopRequest) -> None:
        check_consume(self.broker, req.group, req.topic, req.queue_id, verb="peeking", any_queue=True)

    def pop_once(self, req: PopRequest) -> PopResult:
        b = self.broker
        now = self.broker.clock.now_ms()
        result = PopResult(now, req.invisible_ms)
        tc = b.topic_config_manager.get(req.topic)
        if tc is None:
            return result
        if req.queue_id >= 0:
            queues = [(req.topic, req.queue_id)]
        else:
            n = tc.read_queue_nums
            self._rotation += 1
            queues = [(req.topic, (self._rotation + i) % n) for i in range(n)]
        if not req.order:
            retry = pop_retry_topic(req.group, req.topic)
            rtc = b.topic_config_manager.get(retry)
            if rtc is not None:
                retry_queues = [(retry, q) for q in range(rtc.read_queue_nums)]
                if random.randrange(100) < b.config.pop_from_retry_probability:
                    queues = retry_queues + queues
                else:
                    queues = queues + retry_queues
        for topic, queue_id in queues:
            want = req.max_msgs - len(result.messages)
            if want <= 0:
                result.rest_num += self._rest(req.group, topic, queue_id)
                continue
            if req.order:
                self._pop_orderly(req, topic, queue_id, want, now, result)
            else:
                self._pop_queue(req, topic, queue_id, want, now, result)
            result.rest_num += self._rest(req.group, topic, queue_id)
        return result

    def _rest(self, group: str, topic: str, queue_id: int) -> int:
        offset = self.broker.consumer_offset_manager.query_offset(group, topic, queue_id)
        return max(0, self.broker.store.get_max_offset_in_queue(topic, queue_id) - max(offset, 0))

    def _read(self, req: PopRequest, topic: str, queue_id: int, offset: int, want: int
              ) -> tuple[GetMessageResult | None, int]:
        tags = req.tag_codes if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else None
        return self.broker.consume_core.fetch_correcting(req.group, topic, queue_id, offset, want, tags,
                                                         req.record_filter)

    def _pop_queue(self, req: PopRequest, topic: str, queue_id: int, want: int, now: int, out: PopResult) -> None:
        offset = self.broker.consume_core.start_offset(req.group, topic, queue_id, req.init_mode)
        got, offset = self._read(req, topic, queue_id, offset, want)
        if got is None:
            return
        if got.messages:
            ck = PopCheckpoint(self._new_id(), req.group, topic, queue_id, list(got.queue_offsets), now,
                               req.invisible_ms)
            self.store.insert(ck)  # durable before the offset moves and before the answer
            self._add(ck)
            retry = topic != req.topic
            log = self.broker.delivery_log
            for record, queue_offset in zip(got.messages, got.queue_offsets):
                msg = MessageExt.decode(record)
                handle = ReceiptHandle(ck.ck_id, now, req.invisible_ms, retry, self.broker.config.broker_name,
                                       queue_id, queue_offset)
                out.messages.append(PoppedMessage(msg, handle, msg.reconsume_times + 1))
                if log is not None:  # (only while the dashboard runs)
                    log.add(req.group, topic, queue_id, queue_offset, queue_offset + 1, req.client or "a POP consumer",
                            "pop", msg.reconsume_times + 1)
        if got.next_begin_offset > offset:
            self.broker.consumer_offset_manager.commit_offset("pop", req.group, topic, queue_id,
                                                              got.next_begin_offset)

    # -- orderly ------------------------------------------------------------------------------------
    def _pop_orderly(self, req: PopRequest, topic: str, queue_id: int, want: int, now: int, out: PopResult) -> None:
        key = (req.group, topic, queue_id)
        live = self._orderly.get(key, [])
        if any(ck.pending() and ck.deadline > now for ck in live):
            return  # blocked: a pop of this queue is still in flight
        for ck in list(live):  # expired: their messages are delivered again from the group's offset
            self._remove(ck)
        offset = self.broker.consume_core.start_offset(req.group, topic, queue_id, req.init_mode)
        attempts = self._order_attempts.setdefault(key, {})
        max_attempts = self.moves.max_attempts(req.group)
        while True:
            got, offset = self._read(req, topic, queue_id, offset, want)
            if got is None or not got.messages:
                if got is not None and got.next_begin_offset > offset:
                    self.broker.consumer_offset_manager.commit_offset("pop", req.group, topic, queue_id,
                                                                      got.next_begin_offset)
                return
            msgs = []
            for record, queue_offset in zip(got.messages, got.queue_offsets):
                count = attempts.get(queue_offset, 0)
                if count >= max_attempts:  # delivered max times and never acked: to the DLQ, the queue goes on
                    msg = MessageExt.decode(record)
                    if not self.moves.to_dlq(req.group, msg):
                        break
                    attempts.pop(queue_offset, None)
                    continue
                msgs.append((record, queue_offset))
            if not msgs:
                offset = got.next_begin_offset
                self.broker.consumer_offset_manager.commit_offset("pop", req.group, topic, queue_id, offset)
                continue
            break
        ck = PopCheckpoint(self._new_id(), req.group, topic, queue_id, [o for _, o in msgs], now, req.invisible_ms,
                           order=True, end_offset=got.next_begin_offset)
        for _, queue_offset in msgs:
            attempts[queue_offset] = ck.attempts[queue_offset] = attempts.get(queue_offset, 0) + 1
        self.store.insert(ck)
        self._add(ck)
        for record, queue_offset in msgs:
            msg = MessageExt.decode(record)
            handle = ReceiptHandle(ck.ck_id, now, req.invisible_ms, False, self.broker.config.broker_name, queue_id,
                                   queue_offset)
            out.messages.append(PoppedMessage(msg, handle, ck.attempts[queue_offset]))

    def _order_progress(self, key: tuple[str, str, int]) -> None:
        """The group's offset in an orderly queue: its first un-acked message, or past the last pop."""
        live = self._orderly.get(key, [])
        pending = [o for ck in live for o in ck.pending()]
        target = min(pending) if pending else max((ck.end_offset for ck in live), default=-1)
        offsets = self.broker.consumer_offset_manager
        group, topic, queue_id = key
        if target > offsets.query_offset(group, topic, queue_id):
            offsets.commit_offset("pop", group, topic, queue_id, target)
            attempts = self._order_attempts.get(key)
            if attempts:
                for o in [o for o in attempts if o < target]:
                    del attempts[o]

    # -- ack and change-invisible -------------------------------------------------------------------
    def _find(self, group: str, topic: str, handle_text: str) -> tuple[ReceiptHandle, PopCheckpoint | None]:
        """The live checkpoint a handle names: found by its message (group, topic read, queue, offset) and
        matched by pop time, so a handle superseded by a change of invisible time names nothing (a remoting
        client rebuilds the new handle from the old one and the answer's pop time)."""
        handle = ReceiptHandle.parse(handle_text)
        if handle is None:
            raise BrokerError(ResponseCode.INVALID_PARAMETER, f"invalid receipt handle: {handle_text!r}")
        read = pop_retry_topic(group, topic) if handle.retry else topic
        ck = self._by_offset.get((group, read, handle.queue_id, handle.offset))
        if ck is None or ck.pop_time != handle.pop_time:
            return handle, None
        return handle, ck

    def ack(self, group: str, topic: str, handle_text: str, client: str = "") -> bool:
        """Ack one popped message (`client`: who acks, for the dashboard's message story). False: the handle
        names nothing in flight (acked, revived or superseded)."""
        handle, ck = self._find(group, topic, handle_text)
        if ck is None or handle.offset in ck.acked:
            return False
        ck.acked.add(handle.offset)
        log = self.broker.delivery_log
        if log is not None:  # (only while the dashboard runs: a message's story)
            log.add(group, ck.topic, ck.queue_id, handle.offset, handle.offset + 1, client or "a POP consumer", "ack")
        if ck.order:  # before it may go: its end offset counts
            self._order_progress((ck.group, ck.topic, ck.queue_id))
        if ck.pending():
            self.store.acked(ck)
        else:
            self._remove(ck)
        return True

    def change_invisible(self, group: str, topic: str, handle_text: str, invisible_ms: int) -> ReceiptHandle:
        """The message of `handle_text` stays invisible `invisible_ms` from now; its new receipt handle."""
        handle, ck = self._find(group, topic, handle_text)
        if ck is None or handle.offset in ck.acked:
            raise BrokerError(ResponseCode.NO_MESSAGE, "the receipt handle is not in flight (acked, expired and "
                                                       "revived, or superseded)")
        # the new pop time differs from the old one even in the same millisecond (it is what tells the handles
        # apart: an ack with the superseded handle must name nothing); at most 1 ms later than now
        now = max(self.broker.clock.now_ms(), ck.pop_time + 1)
        new = PopCheckpoint(self._new_id(), group, ck.topic, ck.queue_id, [handle.offset], now, invisible_ms,
                            order=ck.order, end_offset=ck.end_offset,
                            attempts={handle.offset: ck.attempts.get(handle.offset, 1)})
        self.store.insert(new)
        self._add(new)
        ck.offsets.remove(handle.offset)  # superseded: an ack with the old handle does nothing
        if ck.pending():
            self.store.insert(ck)
        else:
            self._remove(ck)
        return handle._replace(ck_id=new.ck_id, pop_time=now, invisible_time=invisible_ms)

    def forward_to_dlq(self, group: str, topic: str, handle_text: str) -> bool:
        """ForwardMessageToDeadLetterQueue: the message goes to `%DLQ%<group>` and counts as acked."""
        handle, ck = self._find(group, topic, handle_text)
        if ck is None or handle.offset in ck.acked:
            return False
        msg = self.moves.message_at(ck.topic, ck.queue_id, handle.offset)
        if msg is not None and not self.moves.send_back_to_dlq(group, msg):
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "the message could not be put into the DLQ")
        return self.ack(group, topic, handle_text)

    # -- revive -------------------------------------------------------------------------------------
    def revive(self, now: int | None = None) -> int:
        """Un-acked messages past their invisible time go to the pop retry topic (or the DLQ); how many."""
        now = self.broker.clock.now_ms() if now is None else now
        moved = 0
        for ck in [ck for ck in self.checkpoints.values() if ck.deadline <= now and not ck.order]:
            kept = []
            for offset in ck.pending():
                msg = self.moves.message_at(ck.topic, ck.queue_id, offset)
                if msg is None:  # gone (files expired): nothing to deliver again
                    continue
                if self.moves.retry(ck.group, msg):
                    moved += 1
                else:
                    kept.append(offset)
            if kept:  # a failed put (disk full): tried again later
                ck.invisible_time += 5000
                continue
            self._remove(ck)
        return moved

    # -- progress -----------------------------------------------------------------------------------
    def first_unacked(self, group: str, topic: str, queue_id: int) -> int | None:
        """The smallest offset popped and not acked in a queue (consumerProgress's consumer offset), if any."""
        pending = [o for ck in self.checkpoints.values()
                   if ck.group == group and ck.topic == topic and ck.queue_id == queue_id for o in ck.pending()]
        return min(pending) if pending else None

    def inflight(self, group: str | None = None) -> int:
        return sum(len(ck.pending()) for ck in self.checkpoints.values() if group is None or ck.group == group)

    # -- bookkeeping --------------------------------------------------------------------------------
    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _add(self, ck: PopCheckpoint) -> None:
        self.checkpoints[ck.ck_id] = ck
        for offset in ck.offsets:
            self._by_offset[(ck.group, ck.topic, ck.queue_id, offset)] = ck
        if ck.order:
            self._orderly.setdefault((ck.group, ck.topic, ck.queue_id), []).append(ck)

    def _remove(self, ck: PopCheckpoint) -> None:
        self.checkpoints.pop(ck.ck_id, None)
        for offset in ck.offsets:
            key = (ck.group, ck.topic, ck.queue_id, offset)
            if self._by_offset.get(key) is ck:
                del self._by_offset[key]
        self.store.delete(ck.ck_id)
        if ck.order:
            live = self._orderly.get((ck.group, ck.topic, ck.queue_id))
            if live is not None and ck in live:
                live.remove(ck)
                if not live:
                    del self._orderly[(ck.group, ck.topic, ck.queue_id)]
