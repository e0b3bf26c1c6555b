"""The durable tier of the broker's consumer offsets (seed 003's local store): every commit, reset and removal is
written, in commit order, to `config/consumerOffset.db`, SQLite in WAL mode (standard library), one row per
`topic@group` and queue: the offset (NULL once removed) and the commit's sequence number.

Why SQLite and not a hand-written append-only journal (`benchmarks/offset_journal_bench.py` measures both):
an append-only file is about 9x cheaper per commit (≈0.2 µs against ≈1.8 µs in batches of 100; the same with
an fsync per commit), but both are far below the ≈8 µs a request costs the broker, and the file needs
compaction, torn-tail handling and its own recovery code, all of which SQLite already is: its table holds only
the latest state per queue, a transaction is all-or-nothing, and a WAL checkpoint bounds the file.

`JournalWriter` gathers the commits of one event-loop iteration into one transaction, written at the end of
that iteration; `flushed()` is the future of the batch holding the latest commit, which write-through waits
for before answering. With `synchronous=NORMAL` (the default: a transaction survives a killed broker once it
is committed; no fsync) the transaction runs on the event loop itself: it costs about a microsecond per
commit, and a worker thread would lag tens of milliseconds behind a busy loop (it waits for the GIL). With
`FULL` (`flushDiskType=SYNC_FLUSH`: offsets as durable as messages, fsynced) it runs on one worker thread, in
order. WAL checkpoints (which fsync) never run on the loop: automatic checkpoints are off and
`checkpoint()` runs on the worker thread, on a connection of its own, after each write of consumerOffset.json.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sqlite3
from pathlib import Path
from typing import Callable

from .config_file import open_database

log = logging.getLogger("rocketmq_emulator.offsets")

#: (topic@group, queue id, offset or None when removed, sequence number)
Entry = tuple[str, int, "int | None", int]


class OffsetJournal:
    """Blocking SQLite access; used from one thread at a time (the writer's worker, or start/stop)."""

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self.fsync = fsync
        self._db: sqlite3.Connection | None = None
        self._checkpointer: sqlite3.Connection | None = None

    def open(self) -> None:
        db = open_database(self.path, self.fsync)
        db.execute("PRAGMA wal_autocheckpoint=0")  # checkpoint() does it, off the event loop
        db.execute("CREATE TABLE IF NOT EXISTS offsets (key TEXT NOT NULL, queue INTEGER NOT NULL, offset INTEGER, "
                   "seq INTEGER NOT NULL, PRIMARY KEY (key, queue)) WITHOUT ROWID")
        self._db = db

    def checkpoint(self) -> None:
        """Copy the WAL into the database file (PASSIVE: never blocks writers); worker thread only."""
        if self._checkpointer is None:
            self._checkpointer = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def read_all(self) -> list[Entry]:
        assert self._db is not None
        return [(k, q, o, s) for k, q, o, s in self._db.execute("SELECT key, queue, offset, seq FROM offsets")]

    def write(self, batch: list[Entry]) -> None:
        """One transaction for the batch; later entries of the same queue win (they are in commit order)."""
        assert self._db is not None
        db = self._db
        db.execute("BEGIN")
        try:
            db.executemany("INSERT OR REPLACE INTO offsets (key, queue, offset, seq) VALUES (?, ?, ?, ?)", batch)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def drop_removed(self, up_to_seq: int) -> None:
        """Forget removal markers the batched tier already reflects."""
        assert self._db is not None
        self._db.execute("DELETE FROM offsets WHERE offset IS NULL AND seq <= ?", (up_to_seq,))

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None
        if self._db is not None:
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self._db.close()
                self._db = None


class JournalWriter:
    """Batches entries per event-loop iteration and writes each batch at the end of it: on the loop (NORMAL)
    or, in order, on one worker thread (FULL, which fsyncs)."""

    def __init__(self, journal: OffsetJournal) -> None:
        self.journal = journal
        self._pending: list[Entry] = []
        self._pending_future: asyncio.Future[None] | None = None
        self._last: asyncio.Future[None] | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="offset-journal")
        self.failed: BaseException | None = None

    def record(self, entry: Entry) -> None:
        self._pending.append(entry)
        if self._pending_future is None:
            loop = asyncio.get_running_loop()
            self._pending_future = loop.create_future()
            loop.call_soon(self._submit)

    def _submit(self) -> None:
        if self._pending_future is None:  # drain() wrote this batch already (the scheduled call still runs)
            return
        batch, self._pending = self._pending, []
        fut, self._pending_future = self._pending_future, None
        self._last = fut
        if not self.journal.fsync:
            try:
                self.journal.write(batch)
            except Exception as exc:  # noqa: BLE001 - disk full, I/O error: reported, offsets stay in memory
                self._failed(fut, exc)
            else:
                self.failed = None
                fut.set_result(None)
            return
        work = asyncio.get_running_loop().run_in_executor(self._executor, self.journal.write, batch)

        def done(w: asyncio.Future[None]) -> None:
            exc = w.exception()
            if exc is not None:
                self._failed(fut, exc)
                return
            self.failed = None
            if not fut.done():
                fut.set_result(None)
        work.add_done_callback(done)

    def _failed(self, fut: asyncio.Future[None], exc: BaseException) -> None:
        if self.failed is None:
            log.error("cannot write consumer offsets to %s: %s (they are kept in memory and in consumerOffset.json)",
                      self.journal.path, exc)
        self.failed = exc
        if not fut.done():
            fut.set_exception(exc)
            fut.exception()  # retrieved: write-through callers see it, nobody else must log it again

    def flushed(self) -> asyncio.Future[None]:
        """Completes once every entry recorded so far is in the journal (raises if writing it failed)."""
        fut = self._pending_future or self._last
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            fut.set_result(None)
        return fut

    async def drain(self) -> None:
        """Write what is pending now and wait for every write under way."""
        if self._pending_future is not None:
            self._submit()
        if self._last is not None:
            try:
                await asyncio.shield(self._last)
            except Exception:  # noqa: BLE001 - already logged; the stop goes on
                pass

    def after_write(self, up_to_seq: int) -> None:
        """consumerOffset.json holding everything up to `up_to_seq` is on disk: drop the removal markers it
        reflects (where the journal is written: the loop, or the worker thread after the queued writes), then
        checkpoint the WAL on the worker thread. Failures are only logged: the next round tries again."""
        def run(fn: Callable[..., object], *args: object) -> None:
            try:
                fn(*args)
            except Exception as exc:  # noqa: BLE001
                log.debug("offset journal maintenance failed: %s", exc)
        if self.journal.fsync:
            self._executor.submit(run, self.journal.drop_removed, up_to_seq)
        else:
            run(self.journal.drop_removed, up_to_seq)
        self._executor.submit(run, self.journal.checkpoint)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)
