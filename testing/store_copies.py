"""What two stores are compared on when one is a copy of the other (a slave of its master): the commitlog's
segment files, byte for byte, and every consume queue's units (tests/store/test_replication.py,
tests/broker/test_ha.py)."""

from __future__ import annotations

import os
from pathlib import Path

from rocketmq_emulator.store import MessageStore


def commitlog_files(store: MessageStore) -> dict[str, bytes]:
    """Each commitlog segment's name -> its bytes."""
    d = store.config.commit_log_dir
    return {name: Path(d, name).read_bytes() for name in sorted(os.listdir(d)) if name.isdigit()}


def units(store: MessageStore) -> dict[tuple[str, int], list[tuple[int, int, int] | None]]:
    """(topic, queue id) -> its consume queue's units (physical offset, size, tags code), from its min offset on."""
    out = {}
    for topic, qids in store.topics_and_queues().items():
        for qid in qids:
            cq = store.find_consume_queue(topic, qid)
            assert cq is not None
            out[(topic, qid)] = [cq.get_unit(i) for i in range(cq.min_offset_in_queue, cq.max_offset_in_queue)]
    return out
