"""The pull loops of the owned queues (Java `PullMessageService` + `DefaultMQPushConsumerImpl.pullMessage`,
reference §10.5): flow control, long-polled PULL_MESSAGE, and what each result means for the queue.

Flow control waits for the cache to shrink (the consume side signals it) rather than polling: more than
`pull_threshold_for_queue` messages or `pull_threshold_size_for_queue` bytes cached, or (concurrent consumers)
an offset span over `consume_concurrently_max_span`, holds the next pull back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from rocketmq_emulator.protocol import ResponseCode

from .consumer_context import ConsumerContext
from .errors import BrokerResponseError, BrokerUnreachableError, ClientError, NoRouteError
from .message import ReceivedMessage
from .process_queue import ProcessQueue
from .pull_api import PullAPI, PullStatus
from .pull_from_where import compute_pull_from_where

log = logging.getLogger("rocketmq_emulator.client.pull")

#: messages pulled for a queue go to the consume service
Dispatch = Callable[[ProcessQueue, list[ReceivedMessage]], None]
#: the broker said the queue's offset is illegal and named the offset to go on from
OffsetIllegal = Callable[[ProcessQueue, int], None]


class PullMessageService:
    """One pull task per owned queue: `start_pulling` / `stop_pulling`, all of them ended by `stop()`."""

    def __init__(self, ctx: ConsumerContext, api: PullAPI, dispatch: Dispatch, offset_illegal: OffsetIllegal) -> None:
        self.ctx = ctx
        self.api = api
        self.dispatch = dispatch
        self.offset_illegal = offset_illegal
        self.tasks: dict[ProcessQueue, asyncio.Task[None]] = {}

    def start_pulling(self, pq: ProcessQueue) -> None:
        task = asyncio.get_running_loop().create_task(self.pull_loop(pq))
        self.tasks[pq] = task
        task.add_done_callback(lambda t: self._done(pq, t))

    def is_pulling(self, pq: ProcessQueue) -> bool:
        return pq in self.tasks

    def _done(self, pq: ProcessQueue, task: asyncio.Task[None]) -> None:
        if self.tasks.get(pq) is task:
            del self.tasks[pq]
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: pull loop of %s failed", self.ctx.group, pq.mq, exc_info=task.exception())

    def stop_pulling(self, pq: ProcessQueue) -> None:
        task = self.tasks.pop(pq, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def stop(self) -> None:
        tasks = list(self.tasks.values())
        self.tasks.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def pull_loop(self, pq: ProcessQueue) -> None:
        ctx = self.ctx
        s = ctx.settings
        mq = pq.mq
        store = ctx.offset_store
        clustering = ctx.clustering
        orderly = ctx.orderly
        api = self.api
        flow = ctx.flow
        while not pq.dropped:
            if flow.is_paused(mq):
                await flow.wait_resumed(1.0)
                continue
            if pq.msg_count > s.pull_threshold_for_queue or pq.msg_size > s.pull_threshold_size_for_queue or \
                    (not orderly and pq.max_span() > s.consume_concurrently_max_span):
                await pq.wait_changed(1.0)
                continue
            if orderly and clustering:
                if not pq.locked:
                    await asyncio.sleep(1.0)
                    continue
                if not pq.previously_locked:  # first pull after locking: re-read the offset from the broker
                    offset = await compute_pull_from_where(ctx, mq)
                    if offset < 0:
                        await asyncio.sleep(s.pull_delay_on_error)
                        continue
                    pq.next_offset = offset
                    pq.previously_locked = True
            sub = ctx.subscriptions.get(mq.topic)
            if sub is None:
                await asyncio.sleep(s.pull_delay_on_error)
                continue
            commit = store.offset_table.get(mq, 0) if clustering else 0
            pq.last_pull_time = began = time.monotonic()
            try:
                result = await api.pull(mq, sub, pq.next_offset, s.pull_batch_size, commit_offset=max(0, commit),
                                        suspend_timeout=s.broker_suspend_max_time,
                                        timeout=s.consumer_timeout_when_suspend,
                                        post_subscription=s.post_subscription_when_pull)
            except BrokerResponseError as exc:
                if pq.dropped:
                    return
                if exc.code in (ResponseCode.SUBSCRIPTION_NOT_EXIST, ResponseCode.SUBSCRIPTION_NOT_LATEST):
                    ctx.heartbeat_soon()
                log.debug("%s: pull from %s failed: %s", ctx.group, mq, exc)
                await asyncio.sleep(s.pull_delay_on_flow_control if exc.code == ResponseCode.FLOW_CONTROL
                                    else s.pull_delay_on_error)
                continue
            except ClientError as exc:
                if pq.dropped:
                    return
                log.debug("%s: pull from %s failed: %s", ctx.group, mq, exc)
                if isinstance(exc, (BrokerUnreachableError, NoRouteError)):
                    ctx.instance.refresh_route_soon(mq.topic)
                await asyncio.sleep(s.pull_delay_on_error)
                continue
            if pq.dropped:
                return
            status = result.status
            pq.next_offset = result.next_begin_offset
            if status is PullStatus.FOUND:
                msgs = result.messages
                ctx.stats.pulled(mq.topic, time.monotonic() - began, len(msgs))
                if msgs:
                    pq.put(msgs)
                    self.dispatch(pq, msgs)
            elif status is PullStatus.OFFSET_ILLEGAL:
                log.info("%s: offset of %s is illegal, moving to %d", ctx.group, mq, result.next_begin_offset)
                pq.drop()
                self.offset_illegal(pq, result.next_begin_offset)
                return
            elif pq.msg_count == 0:  # NO_NEW_MSG / NO_MATCHED_MSG: nothing cached, the offset may move on
                store.update_offset(mq, result.next_begin_offset, True)
