"""The client's transport: one TCP connection per address, requests matched to responses by opaque,
oneway requests, timeouts, server-initiated requests handed to a handler, reconnection with backoff.

`RemotingConnection` is an `asyncio.Protocol` over the sans-IO `FrameDecoder`. A request's future lives in
`pending` only while its caller waits: a cancelled or timed-out caller removes its own entry and nothing
else, and a late response for it is dropped. `RemotingClient` owns the connections of one client instance.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Awaitable, Callable

from rocketmq_emulator.protocol import FrameDecoder, ProtocolError, RemotingCommand, encode_command
from rocketmq_emulator.protocol.codes import request_code_name

from .errors import BrokerUnreachableError, RequestTimeoutError

log = logging.getLogger("rocketmq_emulator.client.remoting")

#: handles a request the server sent; returns the response to write (None: nothing to answer)
RequestHandler = Callable[["RemotingConnection", RemotingCommand], Awaitable["RemotingCommand | None"]]


def _describe(cmd: RemotingCommand) -> str:
    return request_code_name(cmd.code)


class RemotingConnection(asyncio.Protocol):
    def __init__(self, addr: str, handler: RequestHandler | None, on_lost: Callable[[RemotingConnection], None]) -> None:
        self.addr = addr
        self.handler = handler
        self.on_lost = on_lost
        self.decoder = FrameDecoder()
        self.transport: asyncio.Transport | None = None
        self.pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self.closed = False
        self.local_addr = ""
        self._paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._tasks: set[asyncio.Task[None]] = set()

    # -- asyncio.Protocol ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        local = transport.get_extra_info("sockname")
        if local:
            self.local_addr = f"{local[0]}:{local[1]}"

    def data_received(self, data: bytes) -> None:
        decoder = self.decoder
        decoder.feed(data)
        pending = self.pending
        try:
            for cmd in decoder:
                if cmd.flag & 1:
                    fut = pending.pop(cmd.opaque, None)
                    if fut is not None and not fut.done():
                        fut.set_result(cmd)
                else:
                    self._request_received(cmd)
        except ProtocolError as exc:
            log.warning("%s sent a malformed frame, closing the connection: %s", self.addr, exc)
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        error = BrokerUnreachableError(self.addr, f"connection lost ({exc})" if exc else "connection closed")
        pending, self.pending = self.pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(error)
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()
        self.on_lost(self)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()

    # -- server-initiated requests ------------------------------------------------------------------
    def _request_received(self, cmd: RemotingCommand) -> None:
        if self.handler is None:
            return
        task = asyncio.get_running_loop().create_task(self._handle(cmd))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, cmd: RemotingCommand) -> None:
        try:
            response = await self.handler(self, cmd)  # type: ignore[misc]
        except Exception:  # noqa: BLE001 - a handler bug must not kill the connection
            log.exception("handling %s from %s failed", _describe(cmd), self.addr)
            return
        if response is not None and not cmd.flag & 2:
            response.opaque = cmd.opaque
            response.flag |= 1
            response.serialize_type = cmd.serialize_type
            self.write(response)

    # -- requests -----------------------------------------------------------------------------------
    def write(self, cmd: RemotingCommand) -> None:
        transport = self.transport
        if transport is None or self.closed or transport.is_closing():
            raise BrokerUnreachableError(self.addr, "connection closed")
        transport.writelines(encode_command(cmd))

    async def drain(self) -> None:
        if self._paused and not self.closed:
            waiter = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(waiter)
            await waiter

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send `cmd` and wait for the response with its opaque, at most `timeout` seconds."""
        if self._paused:
            await self.drain()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[RemotingCommand] = loop.create_future()
        opaque = cmd.opaque
        self.pending[opaque] = fut
        timer = loop.call_later(timeout, _expire, fut, self.addr, cmd, timeout)
        try:
            self.write(cmd)
            return await fut
        finally:
            timer.cancel()
            if self.pending.get(opaque) is fut:
                del self.pending[opaque]

    def invoke_oneway(self, cmd: RemotingCommand) -> None:
        cmd.flag |= 2
        self.write(cmd)

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.close()


def _expire(fut: asyncio.Future[RemotingCommand], addr: str, cmd: RemotingCommand, timeout: float) -> None:
    if not fut.done():
        fut.set_exception(RequestTimeoutError(addr, _describe(cmd), timeout))


class _AddressState:
    __slots__ = ("conn", "connecting", "failures", "next_attempt", "last_error")

    def __init__(self) -> None:
        self.conn: RemotingConnection | None = None
        self.connecting: asyncio.Future[RemotingConnection] | None = None
        self.failures = 0
        self.next_attempt = 0.0
        self.last_error = ""


class RemotingClient:
    """The connections of one client instance: one per address, made on first use, remade after a loss.

    After a failed connection attempt the next one to the same address waits: 0.1 s, then doubling up to
    `backoff_max`. Requests made during the wait fail at once with `BrokerUnreachableError` (so a producer
    moves to another broker instead of stalling)."""

    def __init__(self, handler: RequestHandler | None = None, *, connect_timeout: float = 3.0,
                 backoff_max: float = 5.0) -> None:
        self.handler = handler
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
                loop.create_connection(lambda: RemotingConnection(addr, self.handler, self._lost), host, int(port)),
                self.connect_timeout)
        except asyncio.TimeoutError:
            raise BrokerUnreachableError(addr, f"connection attempt timed out after {self.connect_timeout:g} s") \
                from None
        except (OSError, ValueError) as exc:
            raise BrokerUnreachableError(addr, f"cannot connect ({exc.strerror or exc})"
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
        conn.invoke_oneway(cmd)

    def close(self) -> None:
        self.closed = True
        for state in self._states.values():
            if state.conn is not None:
                state.conn.close()
        self._states.clear()

    def addresses(self) -> list[str]:
        return [a for a, s in self._states.items() if s.conn is not None and not s.conn.closed]
