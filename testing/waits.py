"""Bounded waits: poll a condition until it holds or a time limit passes. Tests assert on the result, never on
how long it took."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Awaitable, Callable


async def wait_for(predicate: Callable[[], bool | Awaitable[bool]], timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate` (plain or async) on the running loop until it is true or `timeout` seconds pass; returns
    its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value or time.monotonic() >= deadline:
            return bool(value)
        await asyncio.sleep(interval)


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate` in this thread (sleeping between calls) until it is true or `timeout` seconds pass;
    returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = bool(predicate())
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def wait_until_quiet(path: Path, quiet: float = 0.05, limit: float = 2.0) -> None:
    """Until `path` has not grown for `quiet` seconds (at most `limit`): a guess that a writer (a broker's trace
    or log) caught up; benchmarks use it. The pytest plugin's report waits for `trace_caught_up()` instead."""
    deadline = time.monotonic() + limit
    size = -1
    while time.monotonic() < deadline:
        now = path.stat().st_size if path.exists() else 0
        if now == size:
            return
        size = now
        time.sleep(quiet)
