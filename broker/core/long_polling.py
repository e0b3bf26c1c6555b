"""Held PULL requests (reference §9.6): a pull that finds nothing new waits until a message arrives in its
queue or until its hold time (the client's `suspendTimeoutMillis`) runs out, then the pull is run again and
answered on the same connection with the same opaque.

Unlike the Java broker's 5 s sweep, every held request has its own timer, so a timeout is answered on time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from rocketmq_emulator.protocol import RemotingCommand
from rocketmq_emulator.protocol.transport import RemotingConnection


log = logging.getLogger("rocketmq_emulator.long_polling")

#: re-runs a held pull without suspension or offset commit; returns its response
Rerun = Callable[[RemotingCommand, RemotingConnection], RemotingCommand]


class PullRequest:
    __slots__ = ("request", "conn", "group", "offset", "codes", "deadline", "timer", "key", "done")

    def __init__(self, request: RemotingCommand, conn: RemotingConnection, offset: int, codes: frozenset[int] | None,
                 deadline: float, group: str = "") -> None:
        self.request = request
        self.conn = conn
        self.group = group
        self.offset = offset
        self.codes = codes  # tag hash codes to match, None = everything
        self.deadline = deadline
        self.timer: asyncio.TimerHandle | None = None
        self.key: tuple[str, int] = ("", 0)
        self.done = False


class PullRequestHoldService:
    def __init__(self, rerun: Rerun) -> None:
        self.rerun = rerun
        self.table: dict[tuple[str, int], list[PullRequest]] = {}

    def suspend(self, topic: str, queue_id: int, pr: PullRequest) -> None:
        pr.key = (topic, queue_id)
        self.table.setdefault(pr.key, []).append(pr)
        pr.conn.hold()
        delay = max(0.0, pr.deadline - time.monotonic())
        pr.timer = asyncio.get_running_loop().call_later(delay, self._expire, pr)

    def notify_message_arriving(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None) -> None:
        """A message was dispatched to (topic, queue_id); wake every held pull it can satisfy."""
        held = self.table.get((topic, queue_id))
        if not held:
            return
        keep = []
        for pr in held:
            if pr.offset < max_offset and (pr.codes is None or tags_code is None or tags_code in pr.codes):
                self._answer(pr)
            else:
                keep.append(pr)
        if keep:
            self.table[(topic, queue_id)] = keep
        else:
            del self.table[(topic, queue_id)]

    def _expire(self, pr: PullRequest) -> None:
        held = self.table.get(pr.key)
        if held is not None and pr in held:
            held.remove(pr)
            if not held:
                del self.table[pr.key]
        self._answer(pr)

    def _answer(self, pr: PullRequest) -> None:
        if pr.done:
            return
        pr.done = True
        if pr.timer is not None:
            pr.timer.cancel()
        pr.conn.release()
        if pr.conn.closed:
            return
        try:
            response = self.rerun(pr.request, pr.conn)
        except Exception as exc:  # noqa: BLE001 - the client still gets an answer
            response = pr.conn.error_response(pr.request, exc)
        pr.conn.reply(pr.request, response)

    def wake_group(self, group: str, topic: str) -> int:
        """Answer now every held pull of `group` on `topic` (a reset was stored: their next pull applies it)."""
        woken = 0
        for key in [k for k in self.table if k[0] == topic]:
            held = self.table[key]
            keep = [pr for pr in held if pr.group != group]
            for pr in held:
                if pr.group == group:
                    self._answer(pr)
                    woken += 1
            if keep:
                self.table[key] = keep
            else:
                del self.table[key]
        return woken

    def channel_closed(self, conn: RemotingConnection) -> None:
        """Forget the held pulls of a closed connection: nobody waits for their answers."""
        for key, held in list(self.table.items()):
            keep = [pr for pr in held if pr.conn is not conn]
            if len(keep) == len(held):
                continue
            for pr in held:
                if pr.conn is conn and not pr.done:
                    pr.done = True
                    if pr.timer is not None:
                        pr.timer.cancel()
                    pr.conn.release()
            if keep:
                self.table[key] = keep
            else:
                del self.table[key]

    def expire_until(self, deadline: float) -> int:
        """Answer the held pulls whose suspend time ends by `deadline` (time.monotonic() scale; the clock was
        advanced); how many."""
        due = [pr for held in self.table.values() for pr in held if pr.deadline <= deadline and not pr.done]
        for pr in due:
            self._expire(pr)
        return len(due)

    def wake_all(self) -> None:
        """Answer every held pull now (shutdown)."""
        for held in list(self.table.values()):
            for pr in held:
                self._answer(pr)
        self.table.clear()

    def held_count(self) -> int:
        return sum(len(v) for v in self.table.values())
