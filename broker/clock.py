"""`BrokerClock`: the brokers' idea of now, real time plus what a test advanced it by (README "Testing
time-based behaviour"). Every broker-side timer reads it: delay levels and delivery times, POP invisible times,
transaction check-backs, broadcasting clients' expiry, retention and held pulls. Stored timestamps are never
rewritten: they stay real times, so resets by time and queries keep working."""

from __future__ import annotations

import bisect
import time


class BrokerClock:
    def __init__(self) -> None:
        #: how far tests advanced the clock, in ms (never negative: time only moves forward)
        self.offset_ms = 0
        #: (real time of an advance, ms; the offset from then on), in order: what the clock read at a past real
        #: time (a message stored before an advance waited the advance too; one stored after did not)
        self._history: list[tuple[int, int]] = []

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms

    def monotonic(self) -> float:
        return time.monotonic() + self.offset_ms / 1000

    def at(self, real_ms: int) -> int:
        """What the clock read at real time `real_ms` (a stored timestamp): real time plus the advances before."""
        i = bisect.bisect_right(self._history, (real_ms, 2**63))
        return real_ms + (self._history[i - 1][1] if i else 0)

    def real_at(self, clock_ms: int) -> int:
        """The latest real time the clock read `clock_ms` at or before (the inverse of `at`): a file last written
        before that real time is older, by the clock, than `clock_ms`."""
        starts: list[tuple[int | None, int]] = [(None, 0), *self._history]
        for i in range(len(starts) - 1, -1, -1):
            start, offset = starts[i]
            if start is None or start + offset <= clock_ms:
                end = starts[i + 1][0] if i + 1 < len(starts) else None
                real = clock_ms - offset
                return real if end is None or real < end else end
        return clock_ms

    def advances(self) -> list[tuple[int, int]]:
        """Each advance: (real epoch ms it took effect, the clock's total offset from then on, ms), in order."""
        return list(self._history)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"time only moves forward: cannot advance by {seconds} s")
        self.offset_ms += int(round(seconds * 1000))
        # stored times have millisecond resolution: what was stored in this millisecond was stored before the
        # advance, so the advance counts from the next one, and nothing is stored in this one any more
        this_ms = time.time_ns() // 1_000_000
        self._history.append((this_ms + 1, self.offset_ms))
        while time.time_ns() // 1_000_000 == this_ms:
            time.sleep(0.0002)
