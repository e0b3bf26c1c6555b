"""The choice behind the broker's offset journal: SQLite in WAL mode against a hand-written append-only file,
per commit, in batches of 1 (an idle broker: one commit per event-loop iteration) and 100 (a busy one).

    .venv/bin/python -m benchmarks.offset_journal_bench [--commits 200000]

No fsync (the journal's default: it must survive a killed broker, which a write() does); `--fsync` adds one
per batch (flushDiskType=SYNC_FLUSH) on fewer commits. The files go to a temporary directory under the
current one (the disk the store would use).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import struct
import tempfile
import time


def rows(n: int) -> list[tuple[str, int, int, int]]:
    return [(f"Topic{i % 10}@group{i % 7}", i % 8, i, i) for i in range(n)]


def sqlite_rate(path: str, data: list[tuple[str, int, int, int]], batch: int, fsync: bool) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
    db.execute("CREATE TABLE offsets (key TEXT, queue INTEGER, offset INTEGER, seq INTEGER, "
               "PRIMARY KEY (key, queue)) WITHOUT ROWID")
    t0 = time.perf_counter()
    for i in range(0, len(data), batch):
        db.execute("BEGIN")
        db.executemany("INSERT OR REPLACE INTO offsets VALUES (?, ?, ?, ?)", data[i:i + batch])
        db.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    db.close()
    return len(data) / elapsed


def append_rate(path: str, data: list[tuple[str, int, int, int]], batch: int, fsync: bool) -> float:
    record = struct.Struct(">IiqQ")
    ids: dict[str, int] = {}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    t0 = time.perf_counter()
    for i in range(0, len(data), batch):
        buf = bytearray()
        for key, queue, offset, seq in data[i:i + batch]:
            kid = ids.setdefault(key, len(ids))
            buf += record.pack(kid, queue, offset, seq)
        os.write(fd, buf)
        if fsync:
            os.fdatasync(fd)
    elapsed = time.perf_counter() - t0
    os.close(fd)
    return len(data) / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--commits", type=int, default=200_000)
    ap.add_argument("--fsync", action="store_true", help="also fsync every batch (2,000 commits)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        cases = [(1, False), (100, False)] + ([(1, True)] if args.fsync else [])
        for batch, fsync in cases:
            data = rows(2000 if fsync else args.commits)
            s = sqlite_rate(os.path.join(tmp, f"s{batch}{fsync}.db"), data, batch, fsync)
            a = append_rate(os.path.join(tmp, f"a{batch}{fsync}.log"), data, batch, fsync)
            print(f"batch {batch:>3}{' fsync' if fsync else '      '}: sqlite WAL {s:>11,.0f} commits/s "
                  f"({1e6 / s:5.2f} us)  append-only {a:>11,.0f} commits/s ({1e6 / a:5.2f} us)  {a / s:.1f}x",
                  flush=True)


if __name__ == "__main__":
    main()
