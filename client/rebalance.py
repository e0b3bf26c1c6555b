"""Rebalance (Java `RebalanceImpl` + `RebalancePushImpl`, reference §10.3, §10.4): which queues this push
consumer owns, their `ProcessQueue`s, the start offset of a newly owned queue, and the queue locks of
orderly consumers.

A revoked queue stops getting messages at once; its running handlers get up to `drain_timeout` to finish, then
its offset is committed and forgotten (Java's `removeUnnecessaryMessageQueue`), so the next owner starts
where this one stopped. A broadcasting consumer reads a queue's start offset memory first, then the file
(seed 000 fix 3), so a reset or a corrected offset is honoured at once.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from typing import TYPE_CHECKING, Any, Iterable

from rocketmq_emulator.protocol.bodies import ConsumeFromWhere, MessageModel, MessageQueue
from rocketmq_emulator.protocol.topics import RETRY_GROUP_TOPIC_PREFIX

from . import route as routing
from .errors import ClientError
from .offset_store import ReadOffsetType
from .process_queue import ProcessQueue

if TYPE_CHECKING:
    from .push_consumer import PushConsumer

log = logging.getLogger("rocketmq_emulator.client.rebalance")

PULL_MAX_IDLE_TIME = 120.0
_FROM_LAST = (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
              ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST,
              ConsumeFromWhere.CONSUME_FROM_MIN_OFFSET, ConsumeFromWhere.CONSUME_FROM_MAX_OFFSET)


class RebalanceImpl:
    def __init__(self, consumer: PushConsumer) -> None:
        self.consumer = consumer
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        self.retry_soon = False  # something could not be done this round: try again shortly
        self.lock_table = asyncio.Lock()  # one rebalance (or reset) at a time
        self._retiring: set[asyncio.Task[None]] = set()
        #: revoked queues whose offset is not committed yet (the periodic commit must keep their entries)
        self.retiring_queues: set[MessageQueue] = set()
        #: queues dropped only to be taken again (reset, corrected offset): no listener call when re-added
        self.readding: set[MessageQueue] = set()

    @property
    def clustering(self) -> bool:
        return self.consumer.message_model == MessageModel.CLUSTERING

    @property
    def needs_locks(self) -> bool:
        return self.consumer.orderly and self.clustering

    # -- one round ----------------------------------------------------------------------------------
    async def do_rebalance(self) -> None:
        consumer = self.consumer
        async with self.lock_table:
            self.retry_soon = False
            assigned: set[MessageQueue] = set()
            revoked: set[MessageQueue] = set()
            topics = set(consumer.subscriptions)
            for topic in sorted(topics):
                try:
                    added, removed = await self._rebalance_topic(topic)
                except ClientError as exc:
                    log.debug("%s: rebalance of %s skipped: %s", consumer.group, topic, exc)
                    self.retry_soon = True
                    continue
                assigned |= added
                revoked |= removed
            for mq in [m for m in self.process_queue_table if m.topic not in topics]:
                revoked.add(mq)
                self._revoke(mq)
        if revoked:
            await self._notify("on_queues_revoked", revoked)
        if assigned:
            await self._notify("on_queues_assigned", assigned)

    async def _allocate(self, topic: str) -> set[MessageQueue] | None:
        consumer = self.consumer
        instance = consumer.instance
        route = await instance.topic_route(topic)
        mqs = routing.subscribe_queues(topic, route)
        if not self.clustering:
            return set(mqs)
        masters = [a for bd in route.broker_datas if (a := bd.broker_addrs.get(routing.MASTER_ID))]
        addrs = masters or [a for bd in route.broker_datas for a in bd.broker_addrs.values()]
        if not mqs or not addrs:
            return None
        cids = sorted(await instance.api.consumer_id_list(random.choice(addrs), consumer.group))
        if not cids:
            return None
        return set(consumer.allocate_strategy.allocate(consumer.group, consumer.client_id, mqs, cids))

    async def _rebalance_topic(self, topic: str) -> tuple[set[MessageQueue], set[MessageQueue]]:
        consumer = self.consumer
        mine = await self._allocate(topic)
        if mine is None:
            self.retry_soon = True
            return set(), set()
        table = self.process_queue_table
        now = time.monotonic()
        removed = set()
        for mq, pq in list(table.items()):
            if mq.topic != topic:
                continue
            if mq not in mine or (now - pq.last_pull_time > PULL_MAX_IDLE_TIME and not consumer.paused):
                removed.add(mq)
                self._revoke(mq)
        new = sorted(mq for mq in mine if mq not in table)
        starts: dict[MessageQueue, int] = {}
        for mq in new:
            if self.needs_locks and not await self.lock(mq):
                self.retry_soon = True
                continue
            consumer.offset_store.remove_offset(mq)
            offset = await self.compute_pull_from_where(mq)
            if offset < 0:
                log.debug("%s: no start offset for %s this round", consumer.group, mq)
                self.retry_soon = True
                if self.needs_locks:
                    await self.unlock(mq, oneway=True)
                continue
            starts[mq] = offset
        if starts or removed:
            await consumer.subscription_changed(topic)
        for mq, offset in starts.items():
            pq = ProcessQueue(mq)
            pq.next_offset = offset
            if self.needs_locks:
                pq.locked = True
                pq.last_lock_time = time.monotonic()
            consumer.offset_store.update_offset(mq, offset, False)
            table[mq] = pq
            consumer.start_pulling(pq)
            log.debug("%s: now owns %s from offset %d", consumer.group, mq, offset)
        assigned = set(starts) - self.readding
        self.readding -= set(starts)
        return assigned, removed

    def _revoke(self, mq: MessageQueue) -> None:
        pq = self.process_queue_table.pop(mq, None)
        if pq is None:
            return
        pq.drop()
        self.consumer.stop_pulling(pq)
        self.retiring_queues.add(mq)
        task = asyncio.get_running_loop().create_task(self.retire(mq, pq, drain=True))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def retire(self, mq: MessageQueue, pq: ProcessQueue, *, drain: bool) -> None:
        """Commit and forget a queue this consumer no longer owns (after its handlers finished)."""
        try:
            await self._retire(mq, pq, drain)
        finally:
            self.retiring_queues.discard(mq)

    async def _retire(self, mq: MessageQueue, pq: ProcessQueue, drain: bool) -> None:
        consumer = self.consumer
        if drain:
            await pq.wait_idle(consumer.settings.drain_timeout)
        if self.process_queue_table.get(mq) is not None:
            pq.retired = True  # owned again meanwhile: the new ProcessQueue owns the offset entry
            return
        store = consumer.offset_store
        try:
            await store.persist(mq)
        except ClientError as exc:
            log.debug("%s: committing the offset of revoked %s failed: %s", consumer.group, mq, exc)
        pq.retired = True
        if self.process_queue_table.get(mq) is None:
            store.remove_offset(mq)
        if self.needs_locks:
            await self.unlock(mq, oneway=True)

    async def drain_retiring(self, timeout: float) -> None:
        if self._retiring:
            await asyncio.wait(list(self._retiring), timeout=timeout)

    async def remove_process_queue(self, mq: MessageQueue) -> None:
        """Java `removeProcessQueue`: stop and forget one queue now; the next rebalance takes it again."""
        pq = self.process_queue_table.pop(mq, None)
        if pq is None:
            return
        pq.drop()
        self.consumer.stop_pulling(pq)
        await self.retire(mq, pq, drain=False)

    # -- start offsets ------------------------------------------------------------------------------
    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """§10.4: the stored offset if any; else by ConsumeFromWhere; < 0 means "skip this round"."""
        consumer = self.consumer
        kind = ReadOffsetType.READ_FROM_STORE if self.clustering else ReadOffsetType.MEMORY_FIRST_THEN_STORE
        last = await consumer.offset_store.read_offset(mq, kind)
        if last >= 0:
            return last
        if last != -1:
            return -2
        instance = consumer.instance
        cfw = consumer.consume_from
        retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        try:
            if cfw == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
                return 0
            if cfw == ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
                addr = await instance.find_master(mq.broker_name, mq.topic)
                if retry:
                    return await instance.api.max_offset(addr, mq)
                return await instance.api.search_offset(addr, mq, consumer.consume_timestamp_ms)
            if retry:
                return 0
            addr = await instance.find_master(mq.broker_name, mq.topic)
            return await instance.api.max_offset(addr, mq)
        except ClientError as exc:
            log.debug("%s: start offset of %s unknown: %s", consumer.group, mq, exc)
            return -2

    # -- queue locks (orderly, clustering) ----------------------------------------------------------
    async def lock(self, mq: MessageQueue) -> bool:
        consumer = self.consumer
        try:
            addr = await consumer.instance.find_master(mq.broker_name, mq.topic)
            granted = await consumer.instance.api.lock_batch_mq(addr, consumer.group, {mq})
        except ClientError as exc:
            log.debug("%s: locking %s failed: %s", consumer.group, mq, exc)
            return False
        ok = mq in granted
        pq = self.process_queue_table.get(mq)
        if pq is not None:
            pq.locked = ok
            if ok:
                pq.last_lock_time = time.monotonic()
        return ok

    async def lock_all(self) -> None:
        by_broker: dict[str, set[MessageQueue]] = {}
        for mq in self.process_queue_table:
            by_broker.setdefault(mq.broker_name, set()).add(mq)
        consumer = self.consumer
        for broker, mqs in by_broker.items():
            try:
                addr = await consumer.instance.find_master(broker)
                granted = await consumer.instance.api.lock_batch_mq(addr, consumer.group, mqs)
            except ClientError as exc:
                log.debug("%s: locking queues on %s failed: %s", consumer.group, broker, exc)
                continue
            now = time.monotonic()
            for mq in mqs:
                pq = self.process_queue_table.get(mq)
                if pq is not None:
                    pq.locked = mq in granted
                    if pq.locked:
                        pq.last_lock_time = now

    async def unlock(self, mq: MessageQueue, oneway: bool = False) -> None:
        consumer = self.consumer
        try:
            addr = await consumer.instance.find_master(mq.broker_name, mq.topic)
            await consumer.instance.api.unlock_batch_mq(addr, consumer.group, {mq}, oneway=oneway)
        except ClientError as exc:
            log.debug("%s: unlocking %s failed: %s", consumer.group, mq, exc)

    async def unlock_all(self, mqs: Iterable[MessageQueue]) -> None:
        by_broker: dict[str, set[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, set()).add(mq)
        consumer = self.consumer
        for broker, group_mqs in by_broker.items():
            try:
                addr = await consumer.instance.find_master(broker)
                await consumer.instance.api.unlock_batch_mq(addr, consumer.group, group_mqs)
            except ClientError as exc:
                log.debug("%s: unlocking queues on %s failed: %s", consumer.group, broker, exc)

    # -- listener -----------------------------------------------------------------------------------
    async def _notify(self, method: str, queues: set[MessageQueue]) -> None:
        listener: Any = self.consumer.rebalance_listener
        fn = getattr(listener, method, None) if listener is not None else None
        if fn is None:
            return
        try:
            result = fn(set(queues))
            if inspect.isawaitable(result):
                await result
        except Exception:  # noqa: BLE001 - a listener bug must not stop the rebalance
            log.exception("%s: rebalance listener %s failed", self.consumer.group, method)
