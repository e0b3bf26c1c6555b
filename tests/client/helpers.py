"""Helpers shared by the client's integration tests (bounded waits, never timed assertions)."""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable

DELAY_1S = " ".join(["1s"] * 18)


async def wait_for(predicate: Callable[[], bool | Awaitable[bool]], timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate` until it is true or `timeout` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value or time.monotonic() >= deadline:
            return bool(value)
        await asyncio.sleep(interval)


def held_pulls(emu, topic: str) -> int:
    """Pulls the broker holds for `topic` (long polling): a consumer waiting there is ready for new messages."""
    return emu.call(lambda: sum(len(v) for k, v in emu.broker.pull_hold_service.table.items() if k[0] == topic))
