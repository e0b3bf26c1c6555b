"""Consumption of pulled messages (Java `ConsumeMessageConcurrentlyService` and the send-back path,
reference §10.5): a fixed pool of workers runs the handler on batches of messages with at most
`consume_concurrency` handlers in flight; after each one the offset moves to the smallest offset still cached.

RECONSUME_LATER (or a handler exception) in clustering mode sends the message back to the broker
(CONSUMER_SEND_MSG_BACK: it is redelivered through `%RETRY%<group>` after a delay, and goes to `%DLQ%<group>`
after `max_reconsume_times`); if the broker cannot be reached, the client re-sends it to the retry topic
itself, and if that fails too it consumes it again locally after `local_retry_delay`. In broadcasting mode a
failed message is dropped (as in Java), with a warning.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import time
from typing import Any, Awaitable, Callable, Protocol, runtime_checkable

from rocketmq_emulator.protocol.message import (PROPERTY_DELAY_TIME_LEVEL, PROPERTY_MAX_RECONSUME_TIMES,
                                                PROPERTY_ORIGIN_MESSAGE_ID, PROPERTY_RECONSUME_TIME,
                                                PROPERTY_RETRY_TOPIC, encode_properties)
from rocketmq_emulator.protocol.topics import retry_topic

from .consumer_context import ConsumerContext
from .errors import ClientError
from .instance import CLIENT_INNER_PRODUCER
from .message import ReceivedMessage
from .process_queue import ProcessQueue
from .send_api import send_to_queue

log = logging.getLogger("rocketmq_emulator.client.consume")


class ConsumeResult(enum.Enum):
    """What a handler returns. `None` and `True` count as SUCCESS, `False` as RECONSUME_LATER; an exception
    is RECONSUME_LATER too."""

    SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


Handler = Callable[[Any], "ConsumeResult | bool | None | Awaitable[ConsumeResult | bool | None]"]


async def call_handler(handler: Handler, arg: Any) -> tuple[ConsumeResult, BaseException | None]:
    try:
        result = handler(arg)
        if inspect.isawaitable(result):
            result = await result
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failing handler means "consume later", as in Java
        return ConsumeResult.RECONSUME_LATER, exc
    if result is None or result is True or result is ConsumeResult.SUCCESS:
        return ConsumeResult.SUCCESS, None
    if result is False or result is ConsumeResult.RECONSUME_LATER:
        return ConsumeResult.RECONSUME_LATER, None
    return ConsumeResult.RECONSUME_LATER, TypeError(f"handler returned {result!r}; return a ConsumeResult, a bool "
                                                    f"or None")


def commit(ctx: ConsumerContext, pq: ProcessQueue, msgs: list[ReceivedMessage]) -> None:
    """`msgs` are consumed: the queue's offset moves to the smallest offset still cached (concurrent)."""
    offset = pq.remove(msgs)
    if offset >= 0 and not pq.retired:
        ctx.offset_store.update_offset(pq.mq, offset, True)


def commit_orderly(ctx: ConsumerContext, pq: ProcessQueue) -> None:
    """The batch taken from `pq` is consumed: the offset moves past it (orderly)."""
    offset = pq.commit()
    if offset >= 0 and not pq.retired:
        ctx.offset_store.update_offset(pq.mq, offset, False)


async def send_message_back(ctx: ConsumerContext, msg: ReceivedMessage, delay_level: int = 0) -> bool:
    """CONSUMER_SEND_MSG_BACK to the message's broker; on failure re-send it to the retry topic ourselves.
    True when the broker has the message again (retry or DLQ topic)."""
    instance = ctx.instance
    max_times = ctx.max_reconsume_times()
    try:
        addr = await instance.find_master(msg.broker_name, msg.message_queue.topic)
        await instance.api.send_back(addr, ctx.group, commit_log_offset=msg.commit_log_offset,
                                     origin_msg_id=msg.msg_id, origin_topic=msg.topic, delay_level=delay_level,
                                     max_reconsume_times=max_times)
        return True
    except ClientError as exc:
        log.info("%s: send back of %s failed (%s); re-sending it to the retry topic", ctx.group, msg.msg_id, exc)
    try:
        await resend_to_retry_topic(ctx, msg, max_times)
        return True
    except ClientError as exc:
        log.warning("%s: message %s could not be sent back (%s); it is consumed again locally", ctx.group,
                    msg.msg_id, exc)
        return False


async def resend_to_retry_topic(ctx: ConsumerContext, msg: ReceivedMessage, max_times: int) -> None:
    """Java `sendMessageBack`'s fallback: the message, as the inner producer sends it, to `%RETRY%<group>`
    (the broker moves it to the DLQ when its reconsume times are over the max)."""
    instance = ctx.instance
    retry = retry_topic(ctx.group)
    props = dict(msg.properties)
    props.setdefault(PROPERTY_RETRY_TOPIC, msg.topic)
    props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
    props[PROPERTY_RECONSUME_TIME] = str(msg.reconsume_times + 1)
    props[PROPERTY_MAX_RECONSUME_TIMES] = str(max_times)
    props[PROPERTY_DELAY_TIME_LEVEL] = str(3 + msg.reconsume_times)
    info = await instance.publish_info(retry)
    mq = info.queues[msg.queue_offset % len(info.queues)]
    addr = await instance.find_master(mq.broker_name, retry)
    await send_to_queue(instance, addr, mq, CLIENT_INNER_PRODUCER, msg.body, encode_properties(props), msg.msg_id,
                        instance.config.request_timeout, flag=msg.flag, reconsume_times=msg.reconsume_times + 1,
                        max_reconsume_times=max_times)


@runtime_checkable
class ConsumeService(Protocol):
    """What the push consumer asks of whichever consume service it runs (concurrent handler, orderly handler,
    or async iteration): messages pulled for a queue go in with `submit`; `consume_directly` serves the
    broker's CONSUME_MESSAGE_DIRECTLY. Each records what it consumes in `ctx.stats` (GET_CONSUMER_RUNNING_INFO)."""

    def start(self) -> None: ...

    def submit(self, pq: ProcessQueue, msgs: list[ReceivedMessage]) -> None: ...

    async def stop(self, timeout: float) -> None: ...

    async def consume_directly(self, msg: ReceivedMessage) -> tuple[ConsumeResult, BaseException | None]: ...


class ConcurrentConsumeService:
    """Runs `handler` (one message, or a list when `batch`) in `concurrency` workers."""

    def __init__(self, ctx: ConsumerContext, handler: Handler, *, batch: bool) -> None:
        self.ctx = ctx
        self.handler = handler
        self.batch = batch
        self.batch_size = ctx.settings.consume_batch_size if batch else 1
        self.queue: asyncio.Queue[tuple[ProcessQueue, list[ReceivedMessage]]] = asyncio.Queue()
        self.workers: list[asyncio.Task[None]] = []
        self.running = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._later: set[asyncio.TimerHandle] = set()
        self.stats = ctx.stats

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.workers = [loop.create_task(self._work()) for _ in range(self.ctx.settings.consume_concurrency)]

    def submit(self, pq: ProcessQueue, msgs: list[ReceivedMessage]) -> None:
        size = self.batch_size
        put = self.queue.put_nowait
        if size == 1:
            for m in msgs:
                put((pq, [m]))
        else:
            for i in range(0, len(msgs), size):
                put((pq, msgs[i:i + size]))

    def submit_later(self, pq: ProcessQueue, msgs: list[ReceivedMessage], delay: float) -> None:
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle

        def fire() -> None:
            self._later.discard(handle)
            if not pq.dropped:
                self.submit(pq, msgs)
        handle = loop.call_later(delay, fire)
        self._later.add(handle)

    async def _work(self) -> None:
        get = self.queue.get
        while True:
            pq, msgs = await get()
            if pq.dropped:
                continue  # Java: "the message queue not be able to consume, because it's dropped"
            self.running += 1
            self._idle.clear()
            pq.begin(len(msgs))
            try:
                await self._consume(pq, msgs)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a bug must not shrink the worker pool
                log.exception("%s: consuming %d message(s) of %s failed", self.ctx.group, len(msgs), pq.mq)
            finally:
                pq.end(len(msgs))
                self.running -= 1
                if self.running == 0:
                    self._idle.set()

    async def _consume(self, pq: ProcessQueue, msgs: list[ReceivedMessage]) -> None:
        ctx = self.ctx
        t0 = time.perf_counter()
        status, exc = await call_handler(self.handler, msgs if self.batch else msgs[0])
        rt = time.perf_counter() - t0
        if exc is not None:
            log.warning("%s: handler failed on %d message(s) of %s, consuming them later: %r", ctx.group,
                        len(msgs), pq.mq, exc)
        if status is ConsumeResult.SUCCESS:
            self.stats.consumed(pq.mq.topic, rt, len(msgs))
            commit(ctx, pq, msgs)
            return
        self.stats.consumed(pq.mq.topic, rt, 0, len(msgs))
        if not ctx.clustering:
            for m in msgs:
                log.warning("%s: broadcasting consumer drops message %s after RECONSUME_LATER", ctx.group,
                            m.msg_id)
            commit(ctx, pq, msgs)
            return
        failed: list[ReceivedMessage] = []
        done: list[ReceivedMessage] = []
        for m in msgs:
            (done if await send_message_back(ctx, m) else failed).append(m)
        if done:
            commit(ctx, pq, done)
        if failed:
            for m in failed:
                m.reconsume_times += 1
            self.submit_later(pq, failed, ctx.settings.local_retry_delay)

    async def stop(self, timeout: float) -> None:
        for h in self._later:
            h.cancel()
        self._later.clear()
        while not self.queue.empty():  # cached messages are not started any more
            self.queue.get_nowait()
        if self.running:
            try:
                await asyncio.wait_for(self._idle.wait(), timeout)
            except asyncio.TimeoutError:
                log.warning("%s: %d handler(s) still running after %.1f s; stopping anyway", self.ctx.group,
                            self.running, timeout)
        for w in self.workers:
            w.cancel()
        await asyncio.gather(*self.workers, return_exceptions=True)
        self.workers.clear()

    async def consume_directly(self, msg: ReceivedMessage) -> tuple[ConsumeResult, BaseException | None]:
        return await call_handler(self.handler, [msg] if self.batch else msg)
