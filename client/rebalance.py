"""Rebalance (Java `RebalanceImpl` + `RebalancePushImpl` + `RebalanceService`, reference §10.3, §10.4): which
queues this push consumer owns, their `ProcessQueue`s, and the queue locks of orderly consumers; also the two
ways an owned queue is moved to another offset (a broker's reset, an illegal offset corrected).

A revoked queue stops getting messages at once; its running handlers get up to `drain_timeout` to finish, then
its offset is committed and forgotten (Java's `removeUnnecessaryMessageQueue`), so the next owner starts
where this one stopped. A new queue starts where `compute_pull_from_where` says.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from typing import Any, Iterable

from rocketmq_emulator.protocol.bodies import MessageQueue

from . import route as routing
from .consumer_context import ConsumerContext
from .errors import ClientError
from .process_queue import ProcessQueue
from .pull_from_where import compute_pull_from_where
from .pull_service import PullMessageService

log = logging.getLogger("rocketmq_emulator.client.rebalance")

PULL_MAX_IDLE_TIME = 120.0


class RebalanceImpl:
    """The owned queues of one consumer. `run()` rebalances every `rebalance_interval` s, and at once after
    `request()` (a new consumer in the group, a subscription change, a reset); `lock_loop()` renews the queue
    locks of an orderly clustering consumer. `listener` (optional) gets `on_queues_revoked(set)` /
    `on_queues_assigned(set)`, plain or async."""

    def __init__(self, ctx: ConsumerContext, pulls: PullMessageService, listener: Any = None) -> None:
        self.ctx = ctx
        self.pulls = pulls
        self.listener = listener
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        self.retry_soon = False  # something could not be done this round: try again shortly
        self.lock_table = asyncio.Lock()  # one rebalance (or reset) at a time
        self._requested = asyncio.Event()
        self._retiring: set[asyncio.Task[None]] = set()
        #: revoked queues whose offset is not committed yet (the periodic commit must keep their entries)
        self.retiring_queues: set[MessageQueue] = set()
        #: queues dropped only to be taken again (reset, corrected offset): no listener call when re-added
        self.readding: set[MessageQueue] = set()

    @property
    def needs_locks(self) -> bool:
        return self.ctx.needs_locks

    # -- the loops ----------------------------------------------------------------------------------
    def request(self) -> None:
        """Rebalance now (Java `rebalanceImmediately`)."""
        self._requested.set()

    async def run(self) -> None:
        retry_delay = 0.5
        interval = self.ctx.settings.rebalance_interval
        self._requested.set()
        while True:
            try:  # asyncio.timeout, not wait_for: 3.11's wait_for loses a cancel that arrives as the event is set,
                # and this loop would then run on and stop() would wait for it forever
                async with asyncio.timeout(retry_delay if self.retry_soon else interval):
                    await self._requested.wait()
            except TimeoutError:
                pass
            self._requested.clear()
            retry_delay = min(retry_delay * 2, interval) if self.retry_soon else 0.5
            try:
                await self.do_rebalance()
            except ClientError as exc:
                log.debug("%s: rebalance failed: %s", self.ctx.group, exc)
            except Exception:  # noqa: BLE001 - keep rebalancing
                log.exception("%s: rebalance failed", self.ctx.group)

    async def lock_loop(self) -> None:
        interval = self.ctx.settings.lock_interval
        while True:
            await asyncio.sleep(min(1.0, interval))
            await self.lock_all()
            await asyncio.sleep(max(0.0, interval - 1.0))

    # -- one round ----------------------------------------------------------------------------------
    async def do_rebalance(self) -> None:
        ctx = self.ctx
        async with self.lock_table:
            self.retry_soon = False
            assigned: set[MessageQueue] = set()
            revoked: set[MessageQueue] = set()
            topics = set(ctx.subscriptions)
            for topic in sorted(topics):
                try:
                    added, removed = await self._rebalance_topic(topic)
                except ClientError as exc:
                    log.debug("%s: rebalance of %s skipped: %s", ctx.group, topic, exc)
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
        ctx = self.ctx
        instance = ctx.instance
        route = await instance.topic_route(topic)
        mqs = routing.subscribe_queues(topic, route)
        if not ctx.clustering:
            return set(mqs)
        masters = [a for bd in route.broker_datas if (a := bd.broker_addrs.get(routing.MASTER_ID))]
        addrs = masters or [a for bd in route.broker_datas for a in bd.broker_addrs.values()]
        if not mqs or not addrs:
            return None
        cids = sorted(await instance.api.consumer_id_list(random.choice(addrs), ctx.group))
        if not cids:
            return None
        return set(ctx.allocate_strategy.allocate(ctx.group, ctx.client_id, mqs, cids))

    async def _rebalance_topic(self, topic: str) -> tuple[set[MessageQueue], set[MessageQueue]]:
        ctx = self.ctx
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
            if mq not in mine or (now - pq.last_pull_time > PULL_MAX_IDLE_TIME and not ctx.flow.paused):
                removed.add(mq)
                self._revoke(mq)
        new = sorted(mq for mq in mine if mq not in table)
        starts: dict[MessageQueue, int] = {}
        for mq in new:
            if self.needs_locks and not await self.lock(mq):
                self.retry_soon = True
                continue
            ctx.offset_store.remove_offset(mq)
            offset = await compute_pull_from_where(ctx, mq)
            if offset < 0:
                log.debug("%s: no start offset for %s this round", ctx.group, mq)
                self.retry_soon = True
                if self.needs_locks:
                    await self.unlock(mq, oneway=True)
                continue
            starts[mq] = offset
        if starts or removed:
            await self.message_queue_changed(topic)
        for mq, offset in starts.items():
            pq = ProcessQueue(mq)
            pq.next_offset = offset
            if self.needs_locks:
                pq.locked = True
                pq.last_lock_time = time.monotonic()
            ctx.offset_store.update_offset(mq, offset, False)
            table[mq] = pq
            self.pulls.start_pulling(pq)
            log.debug("%s: now owns %s from offset %d", ctx.group, mq, offset)
        assigned = set(starts) - self.readding
        self.readding -= set(starts)
        return assigned, removed

    async def message_queue_changed(self, topic: str) -> None:
        """The owned queues of `topic` changed: new subVersion, and a heartbeat before pulling (§10.3)."""
        sub = self.ctx.subscriptions.get(topic)
        if sub is not None:
            sub.sub_version = max(time.time_ns() // 1_000_000, sub.sub_version + 1)
        await self.ctx.instance.send_heartbeat_to_all_brokers()

    def _revoke(self, mq: MessageQueue) -> None:
        pq = self.process_queue_table.pop(mq, None)
        if pq is None:
            return
        pq.drop()
        self.pulls.stop_pulling(pq)
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
        ctx = self.ctx
        if drain:
            await pq.wait_idle(ctx.settings.drain_timeout)
        if self.process_queue_table.get(mq) is not None:
            pq.retired = True  # owned again meanwhile: the new ProcessQueue owns the offset entry
            return
        store = ctx.offset_store
        try:
            await store.persist(mq)
        except ClientError as exc:
            log.debug("%s: committing the offset of revoked %s failed: %s", ctx.group, mq, exc)
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
        self.pulls.stop_pulling(pq)
        await self.retire(mq, pq, drain=False)

    # -- moving owned queues to other offsets -------------------------------------------------------
    async def reset_offset(self, topic: str, table: dict[MessageQueue, int]) -> None:
        """The broker's RESET_CONSUMER_CLIENT_OFFSET (Java `MQClientInstance.resetOffset`): pause, drop the owned
        queues of `topic` named in `table`, wait for their running handlers (instead of Java's fixed 10 s sleep),
        store, persist and forget the new offsets, resume and rebalance at once, which takes the queues again
        from the new offsets."""
        ctx = self.ctx
        log.info("%s: resetting the offsets of %s: %s", ctx.group, topic,
                 {f"{m.broker_name}:{m.queue_id}": o for m, o in sorted(table.items()) if m.topic == topic})
        ctx.flow.suspend(True)
        try:
            async with self.lock_table:
                await self._reset_owned(topic, table)
        finally:
            ctx.flow.suspend(False)
        self.request()

    async def _reset_owned(self, topic: str, table: dict[MessageQueue, int]) -> None:
        ctx = self.ctx
        pqs = {mq: pq for mq, pq in self.process_queue_table.items() if mq.topic == topic and mq in table}
        for pq in pqs.values():
            pq.drop()
            pq.retired = True  # late completions must not move the offset again
            pq.clear()
            self.pulls.stop_pulling(pq)
        for pq in pqs.values():
            await pq.wait_idle(ctx.settings.await_termination_timeout)
        store = ctx.offset_store
        for mq, pq in pqs.items():
            store.update_offset(mq, table[mq], False)
            try:
                await store.persist(mq)
            except ClientError as exc:
                log.warning("%s: persisting the reset offset of %s failed: %s", ctx.group, mq, exc)
            store.remove_offset(mq)
            if self.needs_locks:
                await self.unlock(mq, oneway=True)
            if self.process_queue_table.get(mq) is pq:
                del self.process_queue_table[mq]
                self.readding.add(mq)

    async def correct_offset(self, pq: ProcessQueue, next_offset: int) -> None:
        """OFFSET_ILLEGAL (§10.5, seed 000): once the queue's handlers are done, store the broker's offset
        durably, forget the queue, and rebalance at once so it is taken again from that offset (Java waits 10 s
        and then up to 20 s for the next rebalance)."""
        ctx = self.ctx
        await pq.wait_idle(ctx.settings.drain_timeout)
        mq = pq.mq
        table = self.process_queue_table
        if table.get(mq) is not pq:
            return
        del table[mq]
        self.readding.add(mq)
        pq.retired = True
        self.pulls.stop_pulling(pq)
        store = ctx.offset_store
        store.update_offset(mq, next_offset, False)
        try:
            await store.persist(mq)
        except ClientError as exc:
            log.debug("%s: persisting the corrected offset of %s failed: %s", ctx.group, mq, exc)
        if mq not in table:
            store.remove_offset(mq)
        self.request()

    # -- queue locks (orderly, clustering) ----------------------------------------------------------
    async def lock(self, mq: MessageQueue) -> bool:
        ctx = self.ctx
        try:
            addr = await ctx.instance.find_master(mq.broker_name, mq.topic)
            granted = await ctx.instance.api.lock_batch_mq(addr, ctx.group, {mq})
        except ClientError as exc:
            log.debug("%s: locking %s failed: %s", ctx.group, mq, exc)
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
        ctx = self.ctx
        for broker, mqs in by_broker.items():
            try:
                addr = await ctx.instance.find_master(broker)
                granted = await ctx.instance.api.lock_batch_mq(addr, ctx.group, mqs)
            except ClientError as exc:
                log.debug("%s: locking queues on %s failed: %s", ctx.group, broker, exc)
                continue
            now = time.monotonic()
            for mq in mqs:
                pq = self.process_queue_table.get(mq)
                if pq is not None:
                    pq.locked = mq in granted
                    if pq.locked:
                        pq.last_lock_time = now

    async def unlock(self, mq: MessageQueue, oneway: bool = False) -> None:
        ctx = self.ctx
        try:
            addr = await ctx.instance.find_master(mq.broker_name, mq.topic)
            await ctx.instance.api.unlock_batch_mq(addr, ctx.group, {mq}, oneway=oneway)
        except ClientError as exc:
            log.debug("%s: unlocking %s failed: %s", ctx.group, mq, exc)

    async def unlock_all(self, mqs: Iterable[MessageQueue]) -> None:
        by_broker: dict[str, set[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, set()).add(mq)
        ctx = self.ctx
        for broker, group_mqs in by_broker.items():
            try:
                addr = await ctx.instance.find_master(broker)
                await ctx.instance.api.unlock_batch_mq(addr, ctx.group, group_mqs)
            except ClientError as exc:
                log.debug("%s: unlocking queues on %s failed: %s", ctx.group, broker, exc)

    # -- listener -----------------------------------------------------------------------------------
    async def _notify(self, method: str, queues: set[MessageQueue]) -> None:
        listener: Any = self.listener
        fn = getattr(listener, method, None) if listener is not None else None
        if fn is None:
            return
        try:
            result = fn(set(queues))
            if inspect.isawaitable(result):
                await result
        except Exception:  # noqa: BLE001 - a listener bug must not stop the rebalance
            log.exception("%s: rebalance listener %s failed", self.ctx.group, method)
