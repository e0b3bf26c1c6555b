"""What the gRPC endpoint holds in memory for its clients, bounded (issue 35):

- the largest request gRPC reads: the brokers' `maxMessageSize` plus `RECEIVE_HEADROOM` for the request's other
  fields (`receive_limit`); a larger one is refused by gRPC with RESOURCE_EXHAUSTED before its body is read (the
  5.3.3 proxy reads up to 130 MiB, its `grpcMaxInboundMessageSize`, and then answers MESSAGE_BODY_TOO_LARGE);
- the SendMessage requests read at once: `SEND_IN_FLIGHT` (server.py reads a SendMessage only once it holds one
  of these, so the others wait unread, their bytes held back by HTTP/2 flow control);
- the commands a Telemetry stream keeps for a client that does not read them (`Outbox`): a client that keeps
  sending settings without reading the replies is closed with RESOURCE_EXHAUSTED (clients.py).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Iterable

#: room for a SendMessage's fields other than the bodies (properties, keys, tag, ids: at most 16 KiB of user
#: properties a message), and for batches of small messages
RECEIVE_HEADROOM = 1024 * 1024
#: SendMessage requests read and handled at once; each is at most `receive_limit` bytes
SEND_IN_FLIGHT = 8
#: the commands, and their bytes, a Telemetry stream keeps waiting for its client to read them
OUTBOX_COMMANDS = 1024
OUTBOX_BYTES = 16 * 1024 * 1024


def receive_limit(max_message_sizes: Iterable[int]) -> int:
    """gRPC's maximum receive size for brokers of these `maxMessageSize`s (read at start: a later
    updateBrokerConfig of maxMessageSize does not move it)."""
    return max([*max_message_sizes, 0]) + RECEIVE_HEADROOM


class Outbox:
    """A Telemetry stream's server-to-client commands (settings replies, transaction check-backs), in order,
    bounded by `max_commands` and `max_bytes` (one command is always taken, whatever its size)."""

    def __init__(self, max_commands: int = OUTBOX_COMMANDS, max_bytes: int = OUTBOX_BYTES) -> None:
        self.max_commands = max_commands
        self.max_bytes = max_bytes
        self.bytes = 0
        self.closed = False
        self._items: deque[tuple[Any, int]] = deque()
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._items)

    def offer(self, command: Any) -> bool:
        """Queue `command`; False (and nothing queued) when closed or full."""
        if self.closed:
            return False
        size = command.ByteSize()
        if self._items and (len(self._items) >= self.max_commands or self.bytes + size > self.max_bytes):
            return False
        self._items.append((command, size))
        self.bytes += size
        self._ready.set()
        return True

    def close(self, drop: bool = False) -> None:
        """No more commands: `get` gives the queued ones (none with `drop`), then None."""
        self.closed = True
        if drop:
            self._items.clear()
            self.bytes = 0
        self._ready.set()

    async def get(self) -> Any | None:
        """The next command; None once closed and empty."""
        while not self._items:
            if self.closed:
                return None
            self._ready.clear()
            await self._ready.wait()
        command, size = self._items.popleft()
        self.bytes -= size
        return command
