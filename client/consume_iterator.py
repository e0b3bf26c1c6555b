"""Consumption by `async for msg in consumer` / `getmany()`: pulled messages wait in one ready queue; the
application acknowledges each one (`ack`), or asks for it again later (`nack`, which sends it back to the
broker like RECONSUME_LATER). An offset only moves past acknowledged messages, so an unacknowledged message
is redelivered after a restart or a rebalance (at least once)."""

from __future__ import annotations

import asyncio
import time
from rocketmq_emulator.protocol.bodies import MessageQueue

from .consume_service import ConsumeResult, commit, send_message_back
from .consumer_context import ConsumerContext
from .errors import ClientStateError
from .message import ReceivedMessage
from .process_queue import ProcessQueue

_STOP = None


class IteratorConsumeService:
    def __init__(self, ctx: ConsumerContext) -> None:
        self.ctx = ctx
        self.ready: asyncio.Queue[ReceivedMessage | None] = asyncio.Queue()
        self.stopped = False
        self._later: set[asyncio.TimerHandle] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.stats = ctx.stats

    def start(self) -> None:
        pass

    def submit(self, pq: ProcessQueue, msgs: list[ReceivedMessage]) -> None:
        put = self.ready.put_nowait
        for m in msgs:
            put(m)

    def _take(self, m: ReceivedMessage | None) -> ReceivedMessage | None:
        """A message to hand out, or None when it belongs to a queue this consumer gave up."""
        pq = m._pq if m is not None else None
        if not isinstance(pq, ProcessQueue) or pq.dropped:
            return None
        pq.begin()
        return m

    async def get(self, timeout: float | None = None) -> ReceivedMessage | None:
        """The next message; None on timeout. Raises StopAsyncIteration once the consumer stopped."""
        while True:
            if self.stopped:
                raise StopAsyncIteration
            if timeout is None:
                m = await self.ready.get()
            else:
                try:
                    m = self.ready.get_nowait()
                except asyncio.QueueEmpty:
                    try:
                        m = await asyncio.wait_for(self.ready.get(), timeout)
                    except asyncio.TimeoutError:
                        return None
            if m is _STOP:
                self.ready.put_nowait(_STOP)  # wake the other waiters too
                raise StopAsyncIteration
            if self._take(m) is not None:
                return m

    async def getmany(self, timeout: float, max_records: int) -> dict[MessageQueue, list[ReceivedMessage]]:
        out: dict[MessageQueue, list[ReceivedMessage]] = {}
        deadline = time.monotonic() + timeout
        n = 0
        while n < max_records:
            try:
                m = self.ready.get_nowait()
            except asyncio.QueueEmpty:
                if n:
                    break
                left = deadline - time.monotonic()
                if left <= 0 or self.stopped:
                    break
                try:
                    m = await asyncio.wait_for(self.ready.get(), left)
                except asyncio.TimeoutError:
                    break
            if m is _STOP:
                self.ready.put_nowait(_STOP)
                break
            if self._take(m) is not None:
                out.setdefault(m.message_queue, []).append(m)
                n += 1
        return out

    def ack(self, msg: ReceivedMessage) -> None:
        pq = msg._pq
        if not isinstance(pq, ProcessQueue):
            return  # acked already, or not a message of this consumer
        msg._pq = None
        pq.end()
        self.stats.consumed(pq.mq.topic, None, 1)
        commit(self.ctx, pq, [msg])

    def nack(self, msg: ReceivedMessage, delay_level: int = 0) -> None:
        pq = msg._pq
        if not isinstance(pq, ProcessQueue):
            return
        if self.stopped:
            raise ClientStateError("the consumer is stopped; a message can no longer be nacked")
        msg._pq = None
        pq.end()
        self.stats.consumed(pq.mq.topic, None, 0, 1)
        if not self.ctx.clustering:
            commit(self.ctx, pq, [msg])  # Java drops failed broadcast messages
            return
        task = asyncio.get_running_loop().create_task(self._send_back(pq, msg, delay_level))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_back(self, pq: ProcessQueue, msg: ReceivedMessage, delay_level: int) -> None:
        if await send_message_back(self.ctx, msg, delay_level):
            commit(self.ctx, pq, [msg])
            return
        msg.reconsume_times += 1
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle

        def again() -> None:
            self._later.discard(handle)
            if not pq.dropped and not self.stopped:
                msg._pq = pq
                self.ready.put_nowait(msg)
        handle = loop.call_later(self.ctx.settings.local_retry_delay, again)
        self._later.add(handle)

    async def stop(self, timeout: float) -> None:
        self.stopped = True
        for h in self._later:
            h.cancel()
        self._later.clear()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)
        self.ready.put_nowait(_STOP)

    async def consume_directly(self, msg: ReceivedMessage) -> tuple[ConsumeResult, BaseException | None]:
        raise ClientStateError("this consumer is consumed by iteration: it has no handler to run a message on")
