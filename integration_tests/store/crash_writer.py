"""Crash-test writer: opens the store (SYNC_FLUSH, tiny segments) and appends random messages until it is killed.

    python crash_writer.py <store dir> <seed> <ack file>

After every append (single, batch, or a run of singles over several queues) that returned PUT_OK it appends one line per record to the ack file:
``phy size queueOffset topic queueId sha1(expected record) key``, where the expected record is encoded by the
protocol codec from the message and the returned offsets/timestamp (not read back from the store). The line is
written after the put returned, so every acknowledged record must survive the kill. ``# ready`` marks the end of
start-up (recovery).
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "store"))  # the store tests' helpers
from store_testlib import digest, expected_record, make_msg, small_config  # noqa: E402

from rocketmq_emulator.store import FlushDiskType, MessageStore, PutMessageStatus  # noqa: E402

TOPICS = ("CrashA", "CrashB", "%RETRY%crash")
TAGS = (None, "TagA", "TagB", "TagC")


def crash_config(root):
    return small_config(root, mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 32,
                        max_hash_slot_num=64, max_index_num=512, flush_disk_type=FlushDiskType.SYNC_FLUSH,
                        flush_interval_consume_queue=30, preallocate_mapped_file=True)


def random_message(rnd: random.Random, topic: str, queue_id: int, key: str):
    return make_msg(topic, queue_id, rnd.randbytes(rnd.randint(0, 900)), tags=rnd.choice(TAGS), keys=key,
                    uniq=f"U{key}", flag=rnd.randint(0, 3))


def main() -> None:
    root, seed, ack_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rnd = random.Random(seed)
    fd = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    store = MessageStore(crash_config(root)).start()
    cfg = store.config
    os.write(fd, f"# ready {store.recovery.mode} {store.recovery.scanned_records}\n".encode())
    seq = 0
    while True:
        kind = rnd.random()
        if kind < 0.2:  # a run of single sends read together: mixed topics and queues
            msgs = [random_message(rnd, rnd.choice(TOPICS[:2]), rnd.randint(0, 2), f"s{seed}-{seq + i}")
                    for i in range(rnd.randint(2, 6))]
        else:  # a batch (one queue) or a single message
            topic, queue_id = rnd.choice(TOPICS), rnd.randint(0, 2)
            msgs = [random_message(rnd, topic, queue_id, f"s{seed}-{seq + i}")
                    for i in range(rnd.randint(2, 6) if kind < 0.5 else 1)]
        seq += len(msgs)
        if kind < 0.2:
            r = store.put_message_run(msgs)
            puts = [(msgs, r, r.phy_offsets, r.queue_offsets)]
            if r.status is PutMessageStatus.RUN_CROSSES_SEGMENT:  # (the send core then puts them one by one)
                puts = [([m], x, [x.wrote_offset], [x.logics_offset])
                        for m, x in ((m, store.put_message(m)) for m in msgs)]
        else:
            r = store.put_messages(msgs) if len(msgs) > 1 else store.put_message(msgs[0])
            puts = [(msgs, r, r.phy_offsets or [r.wrote_offset],
                     list(range(r.logics_offset, r.logics_offset + len(msgs))))]
        lines = []
        for put_msgs, r, offsets, queue_offsets in puts:
            if r.status is not PutMessageStatus.PUT_OK:
                os.write(fd, f"# put failed {r.status.name}\n".encode())
                os._exit(3)
            for m, phy, qo in zip(put_msgs, offsets, queue_offsets):
                rec = expected_record(m, queue_offset=qo, phy=phy, store_ts=r.store_timestamp, config=cfg)
                lines.append(f"{phy} {len(rec)} {qo} {m.topic} {m.queue_id} {digest(rec)} {m.keys[0]}\n")
        os.write(fd, "".join(lines).encode())
        store.flush_if_due()


if __name__ == "__main__":
    main()
