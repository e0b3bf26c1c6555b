"""Queue locks for orderly consumers (reference §9.17 LOCK_BATCH_MQ / UNLOCK_BATCH_MQ)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterable

from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.message import java_hash_set_order as hash_order
from rocketmq_emulator.protocol.message import java_string_hash

LOCK_MAX_LIVE_TIME_S = 60.0


def _java_hash(mq: MessageQueue) -> int:
    """MessageQueue.hashCode() of the Java client and broker (32-bit int arithmetic)."""
    h = 1
    for part in (java_string_hash(mq.broker_name), mq.queue_id, java_string_hash(mq.topic)):
        h = (31 * h + part) & 0xFFFFFFFF
    return h


def java_hash_set_order(mqs: Iterable[MessageQueue], initial_capacity: int = 16) -> list[MessageQueue]:
    """The queues in the order a Java `new HashSet<>(initial_capacity)` filled with them iterates (and fastjson
    writes them). 4.9.8 answers LOCK_BATCH_MQ with such a set (RebalanceLockManager.tryLockBatch's
    `new HashSet<>(mqs.size())`)."""
    return hash_order(mqs, initial_capacity=initial_capacity, hash_code=_java_hash)


@dataclass
class LockEntry:
    client_id: str
    last_update: float


class RebalanceLockManager:
    def __init__(self, max_live_time_s: float = LOCK_MAX_LIVE_TIME_S) -> None:
        self.max_live_time_s = max_live_time_s
        self.table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def try_lock_batch(self, group: str, mqs: set[MessageQueue], client_id: str,
                       now: float | None = None) -> set[MessageQueue]:
        """Grant a queue if it is free, already held by `client_id` (refreshed), or its holder expired."""
        now = time.monotonic() if now is None else now
        locks = self.table.setdefault(group, {})
        granted = set()
        for mq in mqs:
            entry = locks.get(mq)
            if entry is None or entry.client_id == client_id or now - entry.last_update > self.max_live_time_s:
                locks[mq] = LockEntry(client_id, now)
                granted.add(mq)
        return granted

    def unlock_batch(self, group: str, mqs: set[MessageQueue], client_id: str) -> None:
        locks = self.table.get(group)
        if not locks:
            return
        for mq in mqs:
            entry = locks.get(mq)
            if entry is not None and entry.client_id == client_id:
                del locks[mq]

    def holder(self, group: str, mq: MessageQueue, now: float | None = None) -> str | None:
        now = time.monotonic() if now is None else now
        entry = self.table.get(group, {}).get(mq)
        if entry is None or now - entry.last_update > self.max_live_time_s:
            return None
        return entry.client_id
