"""Store throughput: append (100 B and 1 KiB bodies, single puts and batches of 32, async flush) and read.

For each append case the same run measures the raw ceiling: a Python loop copying the same record bytes into an
mmap (one slice assignment per put call), and prints the store's ratio to it.

    .venv/bin/python benchmarks/store_bench.py            # 1,000,000 messages per append case
    .venv/bin/python benchmarks/store_bench.py --quick    # 100,000
"""

from __future__ import annotations

import argparse
import mmap
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocketmq_emulator.store import MessageExtBrokerInner, MessageStore, MessageStoreConfig  # noqa: E402
from rocketmq_emulator.protocol.message import encode_properties, tag_hash_code  # noqa: E402

POOL = 4096
TOPIC = "BenchTopic"


def make_pool(body_size: int, queue_id: int) -> list[MessageExtBrokerInner]:
    body = os.urandom(body_size)
    pool = []
    for i in range(POOL):
        uniq = uuid.uuid4().hex.upper()
        props = {"TAGS": "TagA", "UNIQ_KEY": uniq, "CLUSTER": "DefaultCluster"}
        pool.append(MessageExtBrokerInner(TOPIC, queue_id, body, properties_raw=encode_properties(props).encode(),
                                          tags_code=tag_hash_code("TagA"), born_host=b"\x7f\0\0\x01",
                                          born_port=50000, born_timestamp=1_700_000_000_000 + i, keys=[uniq]))
    return pool


class Progress:
    def __init__(self, label: str, total: int, enabled: bool) -> None:
        self.label, self.total, self.enabled = label, total, enabled
        self.last = time.perf_counter()

    def __call__(self, done: int) -> None:
        now = time.perf_counter()
        if self.enabled and now - self.last >= 2.0:
            self.last = now
            print(f"  .. {self.label}: {done:,}/{self.total:,}", file=sys.stderr, flush=True)


def bench_append(store: MessageStore, pool, count: int, batch: int, progress: Progress) -> tuple[float, int]:
    put, puts = store.put_message, store.put_messages
    flush_if_due = store.flush_if_due
    written = 0
    n = 0
    start = time.perf_counter()
    if batch == 1:
        while n < count:
            for m in pool:
                r = put(m)
                written += r.wrote_bytes
            n += len(pool)
            flush_if_due()
            progress(n)
    else:
        batches = [pool[i:i + batch] for i in range(0, len(pool), batch)]
        while n < count:
            for b in batches:
                r = puts(b)
                written += r.wrote_bytes
            n += len(pool)
            flush_if_due()
            progress(n)
    store.flush()
    return time.perf_counter() - start, written, n


def bench_ceiling(root: str, record: bytes, count: int, batch: int) -> float:
    """The raw ceiling: a Python loop doing one slice assignment of the same record bytes per put call into a
    fresh, preallocated, file-backed mmap big enough for all of them (fresh pages, like the commitlog's)."""
    page = mmap.ALLOCATIONGRANULARITY
    size = min(len(record) * count + page, 4 << 30)
    size += -size % page
    path = os.path.join(root, "ceiling.bin")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.posix_fallocate(fd, 0, size)
    mm = mmap.mmap(fd, size)
    os.close(fd)
    chunk = record * batch
    n = len(chunk)
    calls = count // batch
    start = time.perf_counter()
    pos = 0
    for _ in range(calls):
        if pos + n > size:
            pos = 0
        mm[pos:pos + n] = chunk
        pos += n
    mm.flush()
    elapsed = time.perf_counter() - start
    mm.close()
    os.unlink(path)
    return elapsed


def bench_read(store: MessageStore, queue_id: int, progress: Progress) -> tuple[float, int]:
    get = store.get_message
    offset = 0
    n = 0
    start = time.perf_counter()
    max_offset = store.get_max_offset_in_queue(TOPIC, queue_id)
    while offset < max_offset:
        r = get("BenchGroup", TOPIC, queue_id, offset, 32)
        n += len(r.messages)
        offset = r.next_begin_offset
        progress(n)
    return time.perf_counter() - start, n


def run_appends(root: str, count: int, index: bool, show: bool, rows: list, read_rows: list) -> None:
    cfg = MessageStoreConfig(store_path_root_dir=root, message_index_enable=index)
    suffix = "" if index else ", no index"
    with MessageStore(cfg) as store:
        for qid, (body, batch) in enumerate([(100, 1), (100, 32), (1024, 1), (1024, 32)]):
            pool = make_pool(body, qid)
            label = f"append {body} B x{batch}{suffix}"
            elapsed, written, n = bench_append(store, pool, count, batch, Progress(label, count, show))
            record = store.select_one_message_by_offset(store.commitlog_max_offset - written // n)
            record = record or b"\0" * (written // n)
            ceiling = bench_ceiling(root, record, n, batch)
            rate = n / elapsed
            ceil_rate = n / ceiling
            rows.append((label, rate, written / elapsed / 1e6, ceil_rate, rate / ceil_rate))
        if not read_rows:  # reads once, on the first store
            for qid, body in ((0, 100), (2, 1024)):
                elapsed, n = bench_read(store, qid, Progress(f"read {body} B", count, show))
                read_rows.append((f"read {body} B (pull 32)", n / elapsed, None, None, None))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100,000 messages per case instead of 1,000,000")
    ap.add_argument("--count", type=int, help="messages per append case")
    ap.add_argument("--dir", help="parent directory for the stores (default: a temporary directory, removed)")
    ap.add_argument("--index", choices=("both", "on", "off"), default="both",
                    help="key index (messageIndexEnable): measure with it, without it, or both (default)")
    args = ap.parse_args()
    count = args.count or (100_000 if args.quick else 1_000_000)
    parent = tempfile.mkdtemp(prefix="store-bench-", dir=args.dir)
    show = count >= 200_000
    cfg = MessageStoreConfig(store_path_root_dir=parent)
    print(f"store bench: {count:,} messages per case, async flush, commitlog segments "
          f"{cfg.mapped_file_size_commit_log >> 20} MiB (preallocated), bodies random, properties TAGS + UNIQ_KEY "
          f"+ CLUSTER (UNIQ_KEY indexed when the key index is on), Python {sys.version.split()[0]}")
    rows: list = []
    read_rows: list = []
    try:
        for index in {"both": (True, False), "on": (True,), "off": (False,)}[args.index]:
            run_appends(os.path.join(parent, "index" if index else "noindex"), count, index, show, rows,
                        read_rows)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    print(f"{'case':<36}{'msg/s':>12}{'MB/s':>10}{'ceiling msg/s':>16}{'ratio':>8}")
    for label, rate, mbs, ceil_rate, ratio in rows + read_rows:
        print(f"{label:<36}{rate:>12,.0f}{(f'{mbs:,.1f}' if mbs else '-'):>10}"
              f"{(f'{ceil_rate:,.0f}' if ceil_rate else '-'):>16}{(f'{ratio:.2f}' if ratio else '-'):>8}")
    print("MB/s counts record bytes (header + body + topic + properties). ceiling: one mmap slice assignment of "
          "the same bytes per put call, same kind of file; ratio = store / ceiling.")


if __name__ == "__main__":
    main()
