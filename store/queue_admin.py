"""Consume-queue administration (mqadmin queryCq, cleanExpiredCQ, cleanUnusedTopic), as 4.9.8's store does it:

* `read_units`: up to `count` units from logical offset `index`, within the segment holding `index`;
* `clean_expired_consume_queues`: drop every queue (files included) whose last unit points below the
  commitlog's minimum offset, i.e. all its messages are gone (the delay topic is kept);
* `clean_unused_topics`: drop the queues of every topic the broker no longer has a config for (the delay
  and transaction topics are kept).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol.topics import SCHEDULE_TOPIC

from .consume_queue import CQ_STORE_UNIT_SIZE, CQ_UNIT, ConsumeQueue

if TYPE_CHECKING:
    from .message_store import MessageStore

log = logging.getLogger("rocketmq_emulator.store")

_KEPT_BY_UNUSED_CLEAN = frozenset({SCHEDULE_TOPIC, "RMQ_SYS_TRANS_OP_HALF_TOPIC"})


def read_units(cq: ConsumeQueue, index: int, count: int) -> list[tuple[int, int, int]] | None:
    """(commitlog offset, size, tags code) of the units from `index`; None when there is no unit there."""
    found = cq.index_buffer(index)
    if found is None:
        return None
    mf, pos, end = found
    end = min(end, pos + max(0, count) * CQ_STORE_UNIT_SIZE)
    return [CQ_UNIT.unpack_from(mf.mm, p) for p in range(pos, end - CQ_STORE_UNIT_SIZE + 1, CQ_STORE_UNIT_SIZE)]


def last_physical_end(cq: ConsumeQueue) -> int:
    """Where the queue's last message ends in the commitlog; -1 for a queue with no unit."""
    files = cq.queue.files
    if not files or files[-1].wrote_position < CQ_STORE_UNIT_SIZE:
        return -1
    last = files[-1]
    phy, size, _ = CQ_UNIT.unpack_from(last.mm, last.wrote_position - CQ_STORE_UNIT_SIZE)
    return int(phy + size)


def clean_expired_consume_queues(store: MessageStore) -> int:
    """Destroy the queues none of whose messages are left in the commitlog; returns how many."""
    min_phy = store.commitlog.min_offset
    gone = []
    with store._lock:
        for key, cq in list(store._cqs.items()):
            if key[0] == SCHEDULE_TOPIC:
                continue
            end = last_physical_end(cq)
            if 0 <= end < min_phy:
                store._cqs.pop(key).destroy()
                gone.append(key)
    for topic in {t for t, _ in gone}:
        try:
            os.rmdir(os.path.join(store.config.consume_queue_dir, topic))  # only if none of its queues is left
        except OSError:
            pass
    for topic, queue_id in gone:
        log.info("consume queue %s:%d destroyed: its messages are no longer in the commitlog (min offset %d)",
                 topic, queue_id, min_phy)
    return len(gone)


def clean_unused_topics(store: MessageStore, topics_in_use: set[str]) -> int:
    """Destroy the consume queues of topics not in `topics_in_use`; returns how many queues."""
    unused = {t for t, _ in store._cqs if t not in topics_in_use and t not in _KEPT_BY_UNUSED_CLEAN}
    count = store.delete_topics(unused)
    for topic in sorted(unused):
        log.info("consume queues of topic %s destroyed: the broker has no config for it", topic)
    return count
