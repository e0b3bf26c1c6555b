"""The pull loop of one owned queue (Java `DefaultMQPushConsumerImpl.pullMessage`, reference §10.5): flow
control, long-polled PULL_MESSAGE, and what each result means for the queue.

Flow control waits for the cache to shrink (the consume side signals it) rather than polling: more than
`pull_threshold_for_queue` messages or `pull_threshold_size_for_queue` bytes cached, or (concurrent consumers)
an offset span over `consume_concurrently_max_span`, holds the next pull back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import ResponseCode
from rocketmq_emulator.protocol.bodies import MessageModel

from .errors import BrokerResponseError, BrokerUnreachableError, ClientError, NoRouteError
from .pull_api import PullStatus
from .process_queue import ProcessQueue

if TYPE_CHECKING:
    from .push_consumer import PushConsumer

log = logging.getLogger("rocketmq_emulator.client.pull")


async def pull_loop(consumer: PushConsumer, pq: ProcessQueue) -> None:
    s = consumer.settings
    mq = pq.mq
    store = consumer.offset_store
    clustering = consumer.message_model == MessageModel.CLUSTERING
    orderly = consumer.orderly
    api = consumer.pull_api
    while not pq.dropped:
        if consumer.is_paused(mq):
            await consumer.wait_resumed(1.0)
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
                offset = await consumer.rebalance.compute_pull_from_where(mq)
                if offset < 0:
                    await asyncio.sleep(s.pull_delay_on_error)
                    continue
                pq.next_offset = offset
                pq.previously_locked = True
        sub = consumer.subscriptions.get(mq.topic)
        if sub is None:
            await asyncio.sleep(s.pull_delay_on_error)
            continue
        commit = store.offset_table.get(mq, 0) if clustering else 0
        pq.last_pull_time = time.monotonic()
        try:
            result = await api.pull(mq, sub, pq.next_offset, s.pull_batch_size, commit_offset=max(0, commit),
                                    suspend_timeout=s.broker_suspend_max_time,
                                    timeout=s.consumer_timeout_when_suspend,
                                    post_subscription=s.post_subscription_when_pull)
        except BrokerResponseError as exc:
            if pq.dropped:
                return
            if exc.code in (ResponseCode.SUBSCRIPTION_NOT_EXIST, ResponseCode.SUBSCRIPTION_NOT_LATEST):
                consumer.heartbeat_soon()
            log.debug("%s: pull from %s failed: %s", consumer.group, mq, exc)
            await asyncio.sleep(s.pull_delay_on_flow_control if exc.code == ResponseCode.FLOW_CONTROL
                                else s.pull_delay_on_error)
            continue
        except ClientError as exc:
            if pq.dropped:
                return
            log.debug("%s: pull from %s failed: %s", consumer.group, mq, exc)
            if isinstance(exc, (BrokerUnreachableError, NoRouteError)):
                consumer.instance.refresh_route_soon(mq.topic)
            await asyncio.sleep(s.pull_delay_on_error)
            continue
        if pq.dropped:
            return
        status = result.status
        pq.next_offset = result.next_begin_offset
        if status is PullStatus.FOUND:
            msgs = result.messages
            if msgs:
                pq.put(msgs)
                consumer.dispatch(pq, msgs)
        elif status is PullStatus.OFFSET_ILLEGAL:
            log.info("%s: offset of %s is illegal, moving to %d", consumer.group, mq, result.next_begin_offset)
            pq.drop()
            consumer.offset_illegal(pq, result.next_begin_offset)
            return
        elif pq.msg_count == 0:  # NO_NEW_MSG / NO_MATCHED_MSG: nothing cached, the offset may move on
            store.update_offset(mq, result.next_begin_offset, True)
