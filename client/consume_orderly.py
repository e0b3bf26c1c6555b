"""Orderly consumption (Java `ConsumeMessageOrderlyService`): one task per queue consumes its messages in
offset order, one batch at a time, only while this client holds the queue's lock on the broker (clustering).

RECONSUME_LATER puts the batch back and pauses the queue for `suspend_current_queue_time`; the messages are
consumed again, in order, with `reconsume_times` counted locally. A message that reached
`max_reconsume_times` (unlimited by default for orderly consumers) is sent to the dead-letter queue instead.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

from rocketmq_emulator.protocol.bodies import MessageQueue

from .consume_service import ConsumeResult, Handler, call_handler, commit_orderly, send_message_back
from .consumer_context import ConsumerContext
from .message import ReceivedMessage
from .process_queue import ProcessQueue

log = logging.getLogger("rocketmq_emulator.client.consume")


class OrderlyConsumeService:
    """`lock(mq)` takes the broker's lock of a queue again (clustering) and says whether it was granted."""

    def __init__(self, ctx: ConsumerContext, handler: Handler, *, batch: bool,
                 lock: Callable[[MessageQueue], Awaitable[bool]]) -> None:
        self.ctx = ctx
        self.handler = handler
        self.batch = batch
        self.lock = lock
        self.batch_size = ctx.settings.consume_batch_size if batch else 1
        self.semaphore = asyncio.Semaphore(ctx.settings.consume_concurrency)
        self.tasks: dict[ProcessQueue, asyncio.Task[None]] = {}
        self.stopping = False
        self.stats = ctx.stats

    def start(self) -> None:
        pass

    def submit(self, pq: ProcessQueue, msgs: list[ReceivedMessage]) -> None:
        if pq not in self.tasks and not self.stopping:
            self.tasks[pq] = asyncio.get_running_loop().create_task(self._run(pq))

    async def _run(self, pq: ProcessQueue) -> None:
        ctx = self.ctx
        clustering = ctx.clustering
        try:
            while not pq.dropped and not self.stopping:
                if clustering and (not pq.locked or pq.lock_expired):
                    if not await self.lock(pq.mq):
                        await asyncio.sleep(ctx.settings.suspend_current_queue_time)
                        continue
                msgs = pq.take(self.batch_size)
                if not msgs:
                    return
                try:
                    ok = await self._consume(pq, msgs)
                except Exception:  # noqa: BLE001 - keep the queue going: consume the batch again
                    log.exception("%s: consuming %s failed", ctx.group, pq.mq)
                    pq.rollback()
                    ok = False
                if not ok:
                    await asyncio.sleep(ctx.settings.suspend_current_queue_time)
        finally:
            if self.tasks.get(pq) is asyncio.current_task():
                del self.tasks[pq]

    async def _consume(self, pq: ProcessQueue, msgs: list[ReceivedMessage]) -> bool:
        """Consume one batch; False when the queue should pause before the next attempt."""
        ctx = self.ctx
        async with self.semaphore:
            pq.begin(len(msgs))
            try:
                t0 = time.perf_counter()
                status, exc = await call_handler(self.handler, msgs if self.batch else msgs[0])
                rt = time.perf_counter() - t0
            finally:
                pq.end(len(msgs))
        if exc is not None:
            log.warning("%s: orderly handler failed on %s offset %d: %r", ctx.group, pq.mq,
                        msgs[0].queue_offset, exc)
        if status is ConsumeResult.SUCCESS:
            self.stats.consumed(pq.mq.topic, rt, len(msgs))
            commit_orderly(ctx, pq)
            return True
        self.stats.consumed(pq.mq.topic, rt, 0, len(msgs))
        max_times = ctx.max_reconsume_times()
        suspend = False
        for m in msgs:
            if m.reconsume_times >= max_times:
                m.reconsume_times = max_times  # the broker sees reconsumeTimes >= max: dead-letter queue
                if not await send_message_back(ctx, m, delay_level=-1):
                    suspend = True
                    m.reconsume_times += 1
            else:
                suspend = True
                m.reconsume_times += 1
        if suspend:
            pq.rollback()
            return False
        commit_orderly(ctx, pq)
        return True

    async def stop(self, timeout: float) -> None:
        self.stopping = True
        tasks = list(self.tasks.values())
        if tasks:
            done, pending = await asyncio.wait(tasks, timeout=timeout)
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def consume_directly(self, msg: ReceivedMessage) -> tuple[ConsumeResult, BaseException | None]:
        return await call_handler(self.handler, [msg] if self.batch else msg)
