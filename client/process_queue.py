"""`ProcessQueue` (Java `ProcessQueue`): the messages pulled from one queue and not yet consumed, in offset
order, with the counters flow control looks at (reference §10.5).

The next offset to commit is the smallest offset still cached, or the highest offset seen + 1 when the
cache is empty: a message is never skipped, whatever order the handlers finish in. An orderly consumer takes
messages out (`take`) and commits them all at once (`commit`) or puts them back (`rollback`).
"""

from __future__ import annotations

import asyncio
import time

from rocketmq_emulator.protocol.bodies import MessageQueue

from .message import ReceivedMessage

#: a queue lock granted by the broker counts as held for this long on the client (Java 30 s)
LOCK_VALIDITY = 30.0


class ProcessQueue:
    def __init__(self, mq: MessageQueue) -> None:
        self.mq = mq
        self.msgs: dict[int, ReceivedMessage] = {}  # offset -> message, kept in offset order
        self.consuming: dict[int, ReceivedMessage] = {}  # orderly: taken, not yet committed
        self.msg_count = 0
        self.msg_size = 0
        self.max_offset = -1  # highest queue offset ever cached
        self.dropped = False
        self.retired = False  # offset committed and forgotten: late completions no longer move it
        self.locked = False
        self.last_lock_time = 0.0
        self.last_pull_time = time.monotonic()
        self.last_consume_time = time.monotonic()
        self.try_unlock_times = 0
        self.in_flight = 0  # messages in a handler, or handed out by the iterator and not yet acked
        self.previously_locked = False
        self.next_offset = -1
        self._changed = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    # -- caching ------------------------------------------------------------------------------------
    def put(self, msgs: list[ReceivedMessage]) -> None:
        table = self.msgs
        size = 0
        added = 0
        for m in msgs:
            off = m.queue_offset
            if off not in table:
                table[off] = m
                added += 1
                size += len(m.body)
                if off > self.max_offset:
                    self.max_offset = off
            m._pq = self
        self.msg_count += added
        self.msg_size += size

    def remove(self, msgs: list[ReceivedMessage]) -> int:
        """Drop consumed messages; the offset to commit next (-1 if nothing was cached)."""
        table = self.msgs
        if not table:
            return -1
        for m in msgs:
            if table.pop(m.queue_offset, None) is not None:
                self.msg_count -= 1
                self.msg_size -= len(m.body)
        self.last_consume_time = time.monotonic()
        self._changed.set()
        return next(iter(table)) if table else self.max_offset + 1

    def max_span(self) -> int:
        table = self.msgs
        if not table:
            return 0
        return self.max_offset - next(iter(table))

    def first_offset(self) -> int:
        return next(iter(self.msgs)) if self.msgs else -1

    # -- orderly ------------------------------------------------------------------------------------
    def take(self, n: int) -> list[ReceivedMessage]:
        out: list[ReceivedMessage] = []
        table = self.msgs
        while table and len(out) < n:
            off = next(iter(table))
            m = table.pop(off)
            self.consuming[off] = m
            out.append(m)
        return out

    def commit(self) -> int:
        """Orderly: the taken messages are consumed; the offset to commit next."""
        if not self.consuming:
            return -1
        offset = max(self.consuming) + 1
        for m in self.consuming.values():
            self.msg_count -= 1
            self.msg_size -= len(m.body)
        self.consuming.clear()
        self.last_consume_time = time.monotonic()
        self._changed.set()
        return offset

    def rollback(self, msgs: list[ReceivedMessage] | None = None) -> None:
        """Orderly: put taken messages back to be consumed again, in offset order."""
        back = list(self.consuming.values()) if msgs is None else msgs
        for m in back:
            self.consuming.pop(m.queue_offset, None)
        merged = {m.queue_offset: m for m in back}
        merged.update(self.msgs)
        self.msgs = dict(sorted(merged.items()))

    # -- state --------------------------------------------------------------------------------------
    def drop(self) -> None:
        self.dropped = True
        self._changed.set()

    def clear(self) -> None:
        self.msgs.clear()
        self.consuming.clear()
        self.msg_count = 0
        self.msg_size = 0
        self._changed.set()

    @property
    def lock_expired(self) -> bool:
        return time.monotonic() - self.last_lock_time > LOCK_VALIDITY

    def begin(self, n: int = 1) -> None:
        self.in_flight += n
        self._idle.clear()

    def end(self, n: int = 1) -> None:
        self.in_flight -= n
        if self.in_flight <= 0:
            self.in_flight = 0
            self._idle.set()

    async def wait_idle(self, timeout: float) -> bool:
        if self.in_flight <= 0:
            return True
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    async def wait_changed(self, timeout: float) -> None:
        """Wait until messages leave the cache (or the queue is dropped), at most `timeout`."""
        self._changed.clear()
        try:
            await asyncio.wait_for(self._changed.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    def info(self, commit_offset: int) -> dict[str, object]:
        """ProcessQueueInfo for GET_CONSUMER_RUNNING_INFO."""
        now_ms = int(time.time() * 1000)
        mono = time.monotonic()

        def to_ms(t: float) -> int:
            return now_ms - int((mono - t) * 1000) if t else 0

        return {"commitOffset": commit_offset, "cachedMsgMinOffset": self.first_offset() if self.msgs else 0,
                "cachedMsgMaxOffset": self.max_offset if self.msgs else 0, "cachedMsgCount": self.msg_count,
                "cachedMsgSizeInMiB": self.msg_size // (1024 * 1024), "transactionMsgMinOffset": 0,
                "transactionMsgMaxOffset": 0, "transactionMsgCount": 0, "locked": self.locked,
                "tryUnlockTimes": self.try_unlock_times, "lastLockTimestamp": to_ms(self.last_lock_time),
                "droped": self.dropped, "lastPullTimestamp": to_ms(self.last_pull_time),
                "lastConsumeTimestamp": to_ms(self.last_consume_time)}
