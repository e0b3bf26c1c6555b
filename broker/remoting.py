"""Connections and listeners: the asyncio side of the remoting protocol for the broker and name server.

`RemotingConnection` feeds the sans-IO `FrameDecoder`, dispatches requests through a `DispatchTable`, and
writes every response with the request's opaque (and in the request's serialization). It also sends
broker-initiated requests (NOTIFY_CONSUMER_IDS_CHANGED, RESET_CONSUMER_CLIENT_OFFSET, ...) and matches
their responses by opaque. `RemotingServer` listens on one port and owns its connections.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
import time
from typing import Any, Awaitable, Callable, Iterable

from rocketmq_emulator.protocol import BrokerError, FrameDecoder, ProtocolError, RemotingCommand, ResponseCode, encode_command
from rocketmq_emulator.protocol.codes import request_code_name

log = logging.getLogger("rocketmq_emulator.remoting")

Handler = Callable[[RemotingCommand, "RemotingConnection"], "RemotingCommand | None | Awaitable[RemotingCommand | None]"]

#: a connection stops reading when this many of its requests are being handled (held pulls included)
MAX_IN_FLIGHT = 1024
RESUME_IN_FLIGHT = 512


class DispatchTable:
    """One table from request code to handler. A handler returns a response, None (nothing to send, e.g.
    a held pull that answers later), or an awaitable of either; it may raise `BrokerError` (its code and
    remark become the response) or `ProtocolError` (a bad header: SYSTEM_ERROR naming the field)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._handlers: dict[int, Handler] = {}

    def register(self, codes: int | Iterable[int], handler: Handler) -> None:
        for code in ([codes] if isinstance(codes, int) else codes):
            self._handlers[int(code)] = handler

    def get(self, code: int) -> Handler | None:
        return self._handlers.get(code)

    def without(self, *codes: int, name: str) -> DispatchTable:
        table = DispatchTable(name)
        table._handlers = {c: h for c, h in self._handlers.items() if c not in codes}
        return table

    def codes(self) -> set[int]:
        return set(self._handlers)


class RemotingConnection(asyncio.Protocol):
    """One TCP connection (a "channel" in RocketMQ's words)."""

    def __init__(self, server: RemotingServer) -> None:
        self.server = server
        self.table = server.table
        self.decoder = FrameDecoder()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.remote_ip = ""
        self.remote_port = 0
        self.created_at = time.time()
        self.last_activity = time.monotonic()
        self.closed = False
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._in_flight = 0
        self._reading_paused = False
        self._writing_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self.attributes: dict[str, Any] = {}  # per-channel state owned by handlers (client id, language, ...)
        self._out: list[bytes] | None = None  # responses produced while handling one read, written at once

    # -- asyncio.Protocol ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        peer = transport.get_extra_info("peername")
        if peer:
            self.remote_ip, self.remote_port = peer[0], peer[1]
            if self.remote_ip.startswith("::ffff:"):
                self.remote_ip = self.remote_ip[7:]
            self.peer = f"{self.remote_ip}:{self.remote_port}"
        self.server._connection_made(self)

    def data_received(self, data: bytes) -> None:
        self.last_activity = time.monotonic()
        decoder = self.decoder
        decoder.feed(data)
        self._out = out = []
        try:
            for cmd in decoder:
                if cmd.flag & 1:
                    self._response_received(cmd)
                else:
                    self._request_received(cmd)
        except ProtocolError as exc:
            log.warning("%s %s: malformed frame, closing the connection: %s", self.server.name, self.peer, exc)
            self._flush_out(out)
            self.close()
            return
        self._flush_out(out)

    def _flush_out(self, out: list[bytes]) -> None:
        """One write for every response produced while handling one read (one syscall, not one each)."""
        self._out = None
        if out and self.transport is not None and not self.closed and not self.transport.is_closing():
            self.transport.writelines(out)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError(f"connection to {self.peer} closed"))
        self._pending.clear()
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()
        self.server._connection_lost(self)

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()
        self._update_reading()

    # -- requests from the peer ---------------------------------------------------------------------
    def _request_received(self, request: RemotingCommand) -> None:
        handler = self.table.get(request.code)
        if handler is None:
            log.info("%s %s: request code %d (%s) not supported", self.server.name, self.peer, request.code,
                     request_code_name(request.code))
            self._reply(request, RemotingCommand.response_to(
                request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"))
            return
        try:
            result = handler(request, self)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a response
            self._reply(request, self._error_response(request, exc))
            return
        if inspect.isawaitable(result):
            self._in_flight += 1
            self._update_reading()
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(lambda t, r=request: self._task_done(t, r))
        elif result is not None:
            self._reply(request, result)

    def _task_done(self, task: asyncio.Task[Any], request: RemotingCommand) -> None:
        self._tasks.discard(task)
        self._in_flight -= 1
        self._update_reading()
        if task.cancelled():
            return
        exc = task.exception()
        response = self._error_response(request, exc) if exc is not None else task.result()
        if response is not None:
            self._reply(request, response)

    def _error_response(self, request: RemotingCommand, exc: BaseException) -> RemotingCommand:
        if isinstance(exc, BrokerError):
            return RemotingCommand.response_to(request, exc.code, exc.remark)
        if isinstance(exc, ProtocolError):
            log.info("%s %s: bad %s request: %s", self.server.name, self.peer, request_code_name(request.code), exc)
            return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, str(exc))
        log.error("%s %s: %s request failed", self.server.name, self.peer, request_code_name(request.code),
                  exc_info=exc)
        return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")

    def _reply(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """Answer unless the request is marked oneway (C++, Go and ali-ons never mark it: they get answers)."""
        if request.flag & 2:
            return
        response.opaque = request.opaque
        response.flag |= 1
        response.serialize_type = request.serialize_type
        self.send(response)

    def hold(self) -> None:
        """Count a request answered later outside a task (a held pull) for backpressure."""
        self._in_flight += 1
        self._update_reading()

    def release(self) -> None:
        self._in_flight -= 1
        self._update_reading()

    def _update_reading(self) -> None:
        transport = self.transport
        if transport is None or self.closed:
            return
        should_pause = self._writing_paused or self._in_flight >= MAX_IN_FLIGHT
        if should_pause and not self._reading_paused:
            self._reading_paused = True
            transport.pause_reading()
        elif self._reading_paused and not self._writing_paused and self._in_flight <= RESUME_IN_FLIGHT:
            self._reading_paused = False
            transport.resume_reading()

    # -- writing and broker-initiated requests ------------------------------------------------------
    def send(self, cmd: RemotingCommand) -> bool:
        """Write one command; False if the connection is gone or the command cannot be encoded."""
        transport = self.transport
        if transport is None or self.closed or transport.is_closing():
            return False
        try:
            segments = encode_command(cmd)
        except ProtocolError as exc:
            log.error("%s %s: cannot encode a %d command: %s", self.server.name, self.peer, cmd.code, exc)
            return False
        out = self._out
        if out is not None:
            out.extend(segments)
        else:
            transport.writelines(segments)
        return True

    async def drain(self) -> None:
        if self._writing_paused and not self.closed:
            waiter = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(waiter)
            await waiter

    async def invoke(self, request: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
        """Send a request to the peer and wait for its response (matched by opaque)."""
        fut: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self._pending[request.opaque] = fut
        try:
            if not self.send(request):
                raise ConnectionError(f"connection to {self.peer} is closed")
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._pending.pop(request.opaque, None)

    def invoke_oneway(self, request: RemotingCommand) -> bool:
        request.flag |= 2
        return self.send(request)

    def _response_received(self, response: RemotingCommand) -> None:
        fut = self._pending.pop(response.opaque, None)
        if fut is None:
            log.debug("%s %s: response with unknown opaque %d ignored", self.server.name, self.peer,
                      response.opaque)
        elif not fut.done():
            fut.set_result(response)

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.close()


class RemotingServer:
    """Listens on one port with one dispatch table; tracks its connections."""

    def __init__(self, name: str, table: DispatchTable, host: str, port: int) -> None:
        self.name = name
        self.table = table
        self.host = host
        self.port = port
        self.connections: set[RemotingConnection] = set()
        self._server: asyncio.base_events.Server | None = None
        self.on_connection_lost: list[Callable[[RemotingConnection], None]] = []

    async def start(self, serving: bool = True) -> None:
        """Bind (the real port is known afterwards, also for port 0) and, unless told not to, accept."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: RemotingConnection(self), self.host, self.port,
                                                reuse_address=True, backlog=1024, start_serving=serving)
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]

    async def start_serving(self) -> None:
        if self._server is not None:
            await self._server.start_serving()

    def stop_accepting(self) -> None:
        if self._server is not None:
            self._server.close()

    async def stop(self) -> None:
        self.stop_accepting()
        for conn in list(self.connections):
            conn.close()
        if self._server is not None:
            try:
                await asyncio.wait_for(self._server.wait_closed(), 0.5)
            except asyncio.TimeoutError:
                pass
            self._server = None

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _connection_made(self, conn: RemotingConnection) -> None:
        self.connections.add(conn)
        log.debug("%s: connection from %s", self.name, conn.peer)

    def _connection_lost(self, conn: RemotingConnection) -> None:
        self.connections.discard(conn)
        log.debug("%s: connection from %s closed", self.name, conn.peer)
        for callback in self.on_connection_lost:
            try:
                callback(conn)
            except Exception:  # noqa: BLE001
                log.exception("%s: connection-lost callback failed", self.name)
