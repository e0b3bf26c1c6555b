"""The client's connections: one per address, made on first use, remade after a loss, with backoff between
failed attempts. Each is the shared `protocol.transport.RemotingConnection` (opaque matching, timeouts,
oneway, server-initiated requests dispatched through a `DispatchTable`), raising this package's errors.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time

from rocketmq_emulator.protocol import RemotingCommand
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

from .errors import BrokerUnreachableError, RequestTimeoutError

log = logging.getLogger("rocketmq_emulator.client.remoting")


class ClientErrors:
    """What a caller of the client's transport sees: errors that say what happened and what to do."""

    def closed(self, addr: str, detail: str) -> Exception:
        return BrokerUnreachableError(addr, detail)

    def timeout(self, addr: str, what: str, timeout: float) -> Exception:
        return RequestTimeoutError(addr, what, timeout)


_ERRORS = ClientErrors()


class _AddressState:
    __slots__ = ("conn", "connecting", "failures", "next_attempt", "last_error")

    def __init__(self) -> None:
        self.conn: RemotingConnection | None = None
        self.connecting: asyncio.Future[RemotingConnection] | None = None
        self.failures = 0
        self.next_attempt = 0.0
        self.last_error = ""


def _os_reason(exc: OSError) -> str:
    """The system's words for a failed connect ("Connection refused"), not asyncio's text, which repeats the
    address the message already names."""
    return os.strerror(exc.errno) if exc.errno else (exc.strerror or str(exc))


class RemotingClient:
    """The connections of one client instance: one per address, made on first use, remade after a loss.

    After a failed connection attempt the next one to the same address waits: 0.1 s, then doubling up to
    `backoff_max`. Requests made during the wait fail at once with `BrokerUnreachableError` (so a producer
    moves to another broker instead of stalling)."""

    def __init__(self, table: DispatchTable | None = None, *, connect_timeout: float = 3.0,
                 backoff_max: float = 5.0) -> None:
        self.table = table  # the requests servers send this client (NOTIFY_CONSUMER_IDS_CHANGED, ...)
        self.connect_timeout = connect_timeout
        self.backoff_max = backoff_max
        self._states: dict[str, _AddressState] = {}
        self.closed = False

    def connection(self, addr: str) -> RemotingConnection | None:
        state = self._states.get(addr)
        conn = state.conn if state is not None else None
        if conn is None or conn.closed or conn.transport is None or conn.transport.is_closing():
            return None
        return conn

    async def connect(self, addr: str) -> RemotingConnection:
        state = self._states.get(addr)
        if state is None:
            state = self._states[addr] = _AddressState()
        conn = state.conn
        if conn is not None and not conn.closed and conn.transport is not None and not conn.transport.is_closing():
            return conn
        if self.closed:
            raise BrokerUnreachableError(addr, "the client is stopped")
        if state.connecting is not None:
            return await asyncio.shield(state.connecting)
        now = time.monotonic()
        if now < state.next_attempt:  # backing off: fail fast with what the last attempt found
            raise BrokerUnreachableError(addr, f"{state.last_error} ({state.failures} failed connection "
                                               f"attempt{'s' if state.failures > 1 else ''})")
        loop = asyncio.get_running_loop()
        state.connecting = loop.create_future()
        try:
            conn = await self._open(addr)
        except BaseException as exc:
            if isinstance(exc, BrokerUnreachableError):
                state.failures += 1
                state.last_error = str(exc.args[0]).split(";")[0].partition(": ")[2]
                state.next_attempt = time.monotonic() + min(self.backoff_max, 0.1 * 2 ** (state.failures - 1))
                error: BaseException = exc
            else:  # cancelled (or a bug): not the address's fault
                error = BrokerUnreachableError(addr, "connection attempt abandoned")
            if not state.connecting.done():
                state.connecting.set_exception(error)
                state.connecting.exception()  # retrieved: no "never retrieved" warning when nobody waits
            state.connecting = None
            raise
        state.failures = 0
        state.conn = conn
        state.connecting.set_result(conn)
        state.connecting = None
        if self.closed:
            conn.close()
            raise BrokerUnreachableError(addr, "the client is stopped")
        return conn

    async def _open(self, addr: str) -> RemotingConnection:
        host, _, port = addr.rpartition(":")
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(lambda: RemotingConnection(self.table, name="client", addr=addr, errors=_ERRORS,
                                                                  on_lost=self._lost), host, int(port)),
                self.connect_timeout)
        except asyncio.TimeoutError:
            raise BrokerUnreachableError(addr, f"connection attempt timed out after {self.connect_timeout:g} s") \
                from None
        except (OSError, ValueError, OverflowError) as exc:  # OverflowError: a port past 65535 in route data
            raise BrokerUnreachableError(addr, f"cannot connect ({_os_reason(exc)})"
                                         if isinstance(exc, OSError) else f"bad address ({exc})") from None
        log.debug("connected to %s", addr)
        return conn

    def _lost(self, conn: RemotingConnection) -> None:
        state = self._states.get(conn.addr)
        if state is not None and state.conn is conn:
            state.conn = None
        if not self.closed:
            log.debug("connection to %s closed", conn.addr)

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        conn = self.connection(addr) or await self.connect(addr)
        return await conn.invoke(cmd, timeout)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        conn = self.connection(addr) or await self.connect(addr)
        if not conn.invoke_oneway(cmd):
            raise BrokerUnreachableError(addr, "connection closed")

    def close(self) -> None:
        self.closed = True
        for state in self._states.values():
            if state.conn is not None:
                state.conn.close()
        self._states.clear()

    def addresses(self) -> list[str]:
        return [a for a, s in self._states.items() if s.conn is not None and not s.conn.closed]
