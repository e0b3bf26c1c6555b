"""Run by test_store_disk_full.py: fill a store on a tiny filesystem until the disk is full, then report.

Prints one JSON line: the statuses seen, the offsets acknowledged, and whether the store accepts writes again
after space is freed."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "store"))
from store_testlib import make_msg, small_config  # noqa: E402

from rocketmq_emulator.store import MessageStore  # noqa: E402


def main(root: str, ballast: str) -> None:
    cfg = small_config(root, mapped_file_size_commit_log=64 * 1024 * 1024, preallocate_mapped_file=True,
                       mapped_file_size_consume_queue=20 * 100_000)
    store = MessageStore(cfg).start()
    acked, statuses = [], {}
    for i in range(200_000):
        r = store.put_message(make_msg(body=os.urandom(200), uniq=f"{i:032X}"))
        statuses[r.status.name] = statuses.get(r.status.name, 0) + 1
        if r.status.name != "PUT_OK":
            if statuses[r.status.name] >= 3:
                break
            continue
        acked.append((r.logics_offset, r.wrote_offset))
    readable = all(store.select_one_message_by_offset(phy) is not None for _, phy in acked)
    os.unlink(ballast)  # free space: the store must accept writes again
    after = store.put_message(make_msg(body=b"after")).status.name
    store.stop()
    again = MessageStore(cfg).start()
    max_offset = again.get_max_offset_in_queue("TopicA", 0)
    again.stop()
    print(json.dumps({"statuses": statuses, "acked": len(acked), "readable": readable, "after": after,
                      "max_offset_after_restart": max_offset}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
