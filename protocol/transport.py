"""The asyncio side of the remoting protocol, shared by the broker, the name server and the client (RocketMQ's
own "remoting" module holds its codec and its Netty transport together; this is the transport). The only
module of `protocol/` that imports asyncio: the codec modules stay sans-IO.

* `DispatchTable` (`dispatch.py`): request code -> handler, for whichever side receives requests. A handler gets
  `(request, connection)` and returns a response, None (nothing to send now, e.g. a held pull) or an
  awaitable of either; it may raise `BrokerError` (its code and remark are the answer) or `ProtocolError` (a
  bad header: SYSTEM_ERROR naming the field). An unknown code gets REQUEST_CODE_NOT_SUPPORTED. A code may
  also have a run handler (`register_run`): consecutive requests of one read that share it are handed over
  together, `(requests, connection)` -> one answer per request, in order: a response, an exception (answered
  as a handler's would be), None, or the bytes of a complete response frame (already carrying the opaque,
  JSON); the broker's sends use it to store a read's messages with one write. With the native lane a table may
  also have a read lane (`DispatchTable.lane`): one C call per read takes the plain sends whole before any
  command is made, and the lane's `handle` stores and answers each run of them; every other frame goes the way
  above, in order.
* `RemotingConnection`: one TCP connection (a "channel"), either role. Feeds the sans-IO `FrameDecoder`;
  matches responses to requests by opaque; stamps each answer with its request's opaque, the response flag
  and the request's serialization; never answers a request marked oneway; writes every answer produced while
  handling one read with one `writelines`; `invoke` (one timer per request: a timed-out or cancelled caller
  removes only its own entry, a late answer is dropped), `invoke_oneway`, `drain`; pending requests fail when
  the connection is lost. With `max_in_flight`, it stops reading while that many requests are being handled
  (held pulls included) or while its own writes are paused: the broker's backpressure.
* `RemotingServer`: listens on one port with one dispatch table and owns its connections.
* `PeriodicTasks`: `every(seconds, fn)` loops with `stop()`, for both sides' timers.

Errors a caller sees are made by an `ErrorFactory`, so that the client raises its own errors (which say what
to do) and the broker plain ConnectionError/TimeoutError.
"""

from __future__ import annotations

import asyncio
import errno
import inspect
import logging
import socket
import time
from typing import Any, Awaitable, Callable, Iterable, Protocol, cast

from .codes import ResponseCode, request_code_name
from .command import ONEWAY_FLAG, RESPONSE_FLAG, RemotingCommand
from .dispatch import DispatchTable as DispatchTable, Handler as Handler, RunHandler as RunHandler  # public here too
from .errors import BrokerError, ProtocolError
from .frame import FrameDecoder, encode_command

log = logging.getLogger("rocketmq_emulator.remoting")


#: the broker's backpressure: a connection stops being read with this many requests in flight, resumes below
MAX_IN_FLIGHT = 1024
RESUME_IN_FLIGHT = 512


class TraceHook(Protocol):
    """The wire trace's hook (the broker's `broker/trace.py`): told of every command read and written."""

    def inbound(self, conn: RemotingConnection, cmd: RemotingCommand) -> None: ...

    def outbound(self, conn: RemotingConnection, cmd: RemotingCommand) -> None: ...

    def outbound_frame(self, conn: RemotingConnection, frame: bytes) -> None: ...


class ErrorFactory(Protocol):
    def closed(self, addr: str, detail: str) -> Exception: ...

    def timeout(self, addr: str, what: str, timeout: float) -> Exception: ...


class PlainErrors:
    """ConnectionError and TimeoutError (the broker's requests to its clients)."""

    def closed(self, addr: str, detail: str) -> Exception:
        return ConnectionError(f"connection to {addr}: {detail}")

    def timeout(self, addr: str, what: str, timeout: float) -> Exception:
        return TimeoutError(f"{what} to {addr}: no answer within {timeout:g} s")


class RemotingConnection(asyncio.Protocol):
    """One connection. `addr` is the peer's address as this side knows it (the target for a client, the
    remote end for a server)."""

    def __init__(self, table: DispatchTable | None, *, name: str, addr: str = "?",
                 errors: ErrorFactory | None = None, max_in_flight: int | None = None,
                 on_made: Callable[[RemotingConnection], None] | None = None,
                 on_lost: Callable[[RemotingConnection], None] | None = None) -> None:
        self.table = table
        self.name = name
        self.addr = self.peer = addr
        self.errors = errors or PlainErrors()
        self.max_in_flight = max_in_flight
        self.on_made = on_made
        self.on_lost = on_lost
        self.decoder = FrameDecoder()
        self.transport: asyncio.Transport | None = None
        self.remote_ip = ""
        self.remote_port = 0
        self.local_addr = ""
        self.created_at = time.time()
        self.last_activity = time.monotonic()
        self.closed = False
        self.pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self.attributes: dict[str, Any] = {}  # per-channel state owned by handlers (client id, language, ...)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._in_flight = 0
        self._reading_paused = False
        self._frozen = False  # `freeze`: reads nothing, whatever the backpressure says (a paused broker)
        self._held: list[bytes] = []  # what arrived while frozen
        self._writing_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._out: list[bytes] | None = None  # answers produced while handling one read, written at once
        self.tracer: TraceHook | None = None  # the wire trace (`broker/trace.py`), when on
        self.java_remarks = False  # answer errors with 4.9.8's Java exception texts where known (`--compat 4.9`)

    # -- asyncio.Protocol ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream connection's: always a Transport
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
        local = transport.get_extra_info("sockname")
        if local:
            self.local_addr = f"{local[0]}:{local[1]}"
        if self.addr == "?":  # accepted: known by the peer's address
            self.addr = self.peer
        if self.on_made is not None:
            self.on_made(self)

    def data_received(self, data: bytes) -> None:
        if self._frozen:  # a paused broker: kept, read when it goes on (the transport may read once more)
            self._held.append(data)
            return
        self.last_activity = time.monotonic()
        decoder = self.decoder
        decoder.feed(data)
        out: list[bytes] = []
        self._out = out
        pending = self.pending
        runs = self.table.runs if self.table is not None else None
        run: list[RemotingCommand] = []
        run_handler: RunHandler | None = None
        tracer = self.tracer
        table = self.table
        decoder.typed = (table.typed or None) if table is not None and runs and tracer is None else None
        lane = table.lane if table is not None and decoder.typed is not None else None
        items: Iterable[RemotingCommand | list[Any]] = decoder if lane is None else \
            decoder.with_lane(lane.read, lane.context(self))
        try:
            for cmd in items:
                if not isinstance(cmd, RemotingCommand):  # requests the read lane took whole (DispatchTable.lane)
                    if run and run_handler is not None:
                        self._run_received(run_handler, run)
                        run = []
                    lane.handle(cmd, self)  # type: ignore[union-attr]  # (only a lane yields them)
                    continue
                if tracer is not None:
                    tracer.inbound(self, cmd)
                if cmd.flag & RESPONSE_FLAG:
                    fut = pending.pop(cmd.opaque, None)
                    if fut is not None and not fut.done():
                        fut.set_result(cmd)
                    continue
                handler = runs.get(cmd.code) if runs else None
                if run and handler is not run_handler and run_handler is not None:  # the run so far ends here
                    self._run_received(run_handler, run)
                    run = []
                if handler is not None:
                    run_handler = handler
                    run.append(cmd)
                else:
                    self._request_received(cmd)
        except ProtocolError as exc:
            log.warning("%s %s: malformed frame, closing the connection: %s", self.name, self.addr, exc)
            malformed = True
        else:
            malformed = False
        if run and run_handler is not None:
            self._run_received(run_handler, run)
        self._flush_out(out)  # the answers to the frames before a malformed one still go out
        if malformed:
            self.close()

    def _flush_out(self, out: list[bytes]) -> None:
        self._out = None
        if out and self.transport is not None and not self.closed and not self.transport.is_closing():
            self.transport.writelines(out)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        pending, self.pending = self.pending, {}
        error = self.errors.closed(self.addr, f"connection lost ({exc})" if exc else "connection closed")
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(error)
        self._wake_drainers()
        if self.on_lost is not None:
            self.on_lost(self)

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._wake_drainers()
        self._update_reading()

    def _wake_drainers(self) -> None:
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()

    # -- requests from the peer ---------------------------------------------------------------------
    def request_received(self, request: RemotingCommand) -> None:
        """Answer one request by the table (a read lane's request it made from a frame it took)."""
        self._request_received(request)

    def _request_received(self, request: RemotingCommand) -> None:
        handler = self.table.get(request.code) if self.table is not None else None
        if handler is None:
            log.info("%s %s: request code %d (%s) not supported", self.name, self.addr, request.code,
                     request_code_name(request.code))
            self.reply(request, RemotingCommand.not_supported(request))
            return
        try:
            result = handler(request, self)
        except Exception as exc:  # noqa: BLE001 - every failure becomes an answer
            self.reply(request, self.error_response(request, exc))
            return
        if result.__class__ is RemotingCommand:  # the common case, before the slower awaitable check
            self.reply(request, result)
        elif result.__class__ is bytes:  # an answer already encoded (a found pull's, when no trace is on)
            if not request.flag & ONEWAY_FLAG:
                self.send_frame(result)
        elif inspect.isawaitable(result):
            self._in_flight += 1
            self._update_reading()
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(lambda t: self._task_done(t, request))
        elif result is not None:
            self.reply(request, result)  # type: ignore[arg-type]  # `__class__ is bytes` does not narrow

    def _run_received(self, handler: RunHandler, requests: list[RemotingCommand]) -> None:
        try:
            answers = handler(requests, self)
        except Exception as exc:  # noqa: BLE001 - every failure becomes an answer
            answers = [exc] * len(requests)
        for request, answer in zip(requests, answers):
            if answer.__class__ is bytes:
                if not request.flag & ONEWAY_FLAG:
                    self.send_frame(answer)
            elif isinstance(answer, BaseException):
                self.reply(request, self.error_response(request, answer))
            elif answer is not None:
                self.reply(request, answer)  # type: ignore[arg-type]  # `__class__ is bytes` does not narrow

    def _task_done(self, task: asyncio.Task[Any], request: RemotingCommand) -> None:
        self._tasks.discard(task)
        self._in_flight -= 1
        self._update_reading()
        if task.cancelled():
            return
        exc = task.exception()
        response = self.error_response(request, exc) if exc is not None else task.result()
        if response is not None:
            self.reply(request, response)

    def error_response(self, request: RemotingCommand, exc: BaseException) -> RemotingCommand:
        if isinstance(exc, BrokerError):
            remark = exc.java if self.java_remarks and exc.java is not None else exc.remark
            return RemotingCommand.response_to(request, exc.code, remark)
        if isinstance(exc, ProtocolError):
            log.info("%s %s: bad %s request: %s", self.name, self.addr, request_code_name(request.code), exc)
            remark = exc.java if self.java_remarks and exc.java is not None else str(exc)
            return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, remark)
        log.error("%s %s: %s request failed", self.name, self.addr, request_code_name(request.code), exc_info=exc)
        return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")

    def reply(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """Answer unless the request is marked oneway (C++, Go and ali-ons never mark it: they get answers)."""
        if request.flag & ONEWAY_FLAG:
            return
        response.opaque = request.opaque
        response.flag |= RESPONSE_FLAG
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
        if self.max_in_flight is None or transport is None or self.closed:
            return
        should_pause = self._writing_paused or self._in_flight >= self.max_in_flight
        if should_pause and not self._reading_paused:
            self._reading_paused = True
            transport.pause_reading()
        elif self._reading_paused and not self._writing_paused and \
                self._in_flight <= min(RESUME_IN_FLIGHT, self.max_in_flight // 2):
            self._reading_paused = False
            if not self._frozen:
                transport.resume_reading()

    def freeze(self, frozen: bool = True) -> None:
        """Stop reading requests (the connection stays open, nothing is answered), or go on: a paused broker."""
        self._frozen = frozen
        transport = self.transport
        if transport is None or self.closed:
            return
        if frozen:
            transport.pause_reading()
            return
        if self._held:
            held, self._held = b"".join(self._held), []
            self.data_received(held)
        if not self._reading_paused and not self._frozen:
            transport.resume_reading()

    # -- writing and requests to the peer -----------------------------------------------------------
    def send(self, cmd: RemotingCommand) -> bool:
        """Write one command; False if the connection is gone or the command cannot be encoded."""
        transport = self.transport
        if transport is None or self.closed or transport.is_closing():
            return False
        try:
            segments = encode_command(cmd)
        except ProtocolError as exc:
            log.error("%s %s: cannot encode a %d command: %s", self.name, self.addr, cmd.code, exc)
            return False
        out = self._out
        if out is not None:
            out.extend(segments)
        else:
            transport.writelines(segments)
        if self.tracer is not None:
            self.tracer.outbound(self, cmd)
        return True

    def send_frame(self, frame: bytes) -> bool:
        """Write one already encoded frame (a pre-encoded answer); False if the connection is gone."""
        transport = self.transport
        if transport is None or self.closed or transport.is_closing():
            return False
        out = self._out
        if out is not None:
            out.append(frame)
        else:
            transport.write(frame)
        if self.tracer is not None:
            self.tracer.outbound_frame(self, frame)
        return True

    async def drain(self) -> None:
        if self._writing_paused and not self.closed:
            waiter = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(waiter)
            await waiter

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send `cmd` and wait for the answer with its opaque, at most `timeout` seconds."""
        if self._writing_paused:
            await self.drain()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[RemotingCommand] = loop.create_future()
        opaque = cmd.opaque
        self.pending[opaque] = fut
        timer = loop.call_later(timeout, self._expire, fut, cmd, timeout)
        try:
            if not self.send(cmd):
                raise self.errors.closed(self.addr, "connection closed")
            return await fut
        finally:
            timer.cancel()
            if self.pending.get(opaque) is fut:
                del self.pending[opaque]

    def _expire(self, fut: asyncio.Future[RemotingCommand], cmd: RemotingCommand, timeout: float) -> None:
        if not fut.done():
            fut.set_exception(self.errors.timeout(self.addr, request_code_name(cmd.code), timeout))

    def invoke_oneway(self, cmd: RemotingCommand) -> bool:
        """Send `cmd` marked oneway (no answer expected); False if the connection is gone."""
        cmd.flag |= ONEWAY_FLAG
        return self.send(cmd)

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.close()


class PortUnavailable(OSError):
    """A server cannot listen on its port. `role`: which server ("namesrv", "broker", "grpc", "grpc-tls",
    "dashboard"), for the command line to name its flag; the message names the server and the address."""

    def __init__(self, role: str, server: str, host: str, port: int, cause: OSError) -> None:
        if cause.errno == errno.EADDRINUSE:
            reason = "the port is in use (by another program, or another server of this one)"
        elif cause.errno == errno.EACCES:
            reason = "permission denied (ports below 1024 need privileges)"
        elif cause.errno == errno.EADDRNOTAVAIL:
            reason = "the address is not one of this host's"
        else:
            reason = cause.strerror or str(cause)
        super().__init__(cause.errno, f"{server} cannot listen on {host}:{port}: {reason}")
        self.role = role

    def __str__(self) -> str:
        return str(self.strerror)


class RemotingServer:
    """Listens on one port with one dispatch table; tracks its connections (with the broker's backpressure)."""

    def __init__(self, name: str, table: DispatchTable, host: str, port: int,
                 max_in_flight: int | None = MAX_IN_FLIGHT, tracer: TraceHook | None = None,
                 java_remarks: bool = False) -> None:
        self.name = name
        self.java_remarks = java_remarks
        self.tracer = tracer
        self.table = table
        self.host = host
        self.port = port
        self.max_in_flight = max_in_flight
        self.connections: set[RemotingConnection] = set()
        self.paused = False  # `pause`: every connection, new ones too, reads nothing
        self._server: asyncio.base_events.Server | None = None
        self.on_connection_lost: list[Callable[[RemotingConnection], None]] = []

    def _protocol(self) -> RemotingConnection:
        conn = RemotingConnection(self.table, name=self.name, max_in_flight=self.max_in_flight,
                                  on_made=self._connection_made, on_lost=self._connection_lost)
        conn.tracer = self.tracer
        conn.java_remarks = self.java_remarks
        return conn

    async def start(self, serving: bool = True) -> None:
        """Bind (the real port is known afterwards, also for port 0) and, unless told not to, accept."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._protocol, self.host, self.port, reuse_address=True,
                                                backlog=1024, start_serving=serving)
        self.port = self._server.sockets[0].getsockname()[1]

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

    def pause(self, paused: bool = True) -> None:
        """Answer nothing (connections stay open and are accepted, requests are not read), or go on."""
        self.paused = paused
        for conn in self.connections:
            conn.freeze(paused)

    def _connection_made(self, conn: RemotingConnection) -> None:
        self.connections.add(conn)
        if self.paused:  # (what it reads meanwhile is held: uvloop may start reading after connection_made)
            conn.freeze()
        log.debug("%s: connection from %s", self.name, conn.peer)

    def _connection_lost(self, conn: RemotingConnection) -> None:
        self.connections.discard(conn)
        log.debug("%s: connection from %s closed", self.name, conn.peer)
        for callback in self.on_connection_lost:
            try:
                callback(conn)
            except Exception:  # noqa: BLE001
                log.exception("%s: connection-lost callback failed", self.name)


class PeriodicTasks:
    """Timers of a long-lived object: `every(seconds, fn)` runs `fn` (plain or async) every `seconds` until
    `stop()`. A failing round is reported to `on_error(fn_name, exc)` (default: logged with its traceback)
    and the loop goes on."""

    def __init__(self, on_error: Callable[[str, BaseException], None] | None = None) -> None:
        self.on_error = on_error or (lambda name, exc: log.error("periodic task %s failed", name, exc_info=exc))
        self.tasks: list[asyncio.Task[None]] = []

    def every(self, seconds: float | Callable[[], float], fn: Callable[[], object | Awaitable[object]]) -> None:
        """`seconds` may be a function, asked before each wait (a period that can change at run time)."""
        name = getattr(fn, "__name__", repr(fn))

        async def loop() -> None:
            while True:
                await asyncio.sleep(seconds() if callable(seconds) else seconds)
                try:
                    result = fn()
                    if inspect.isawaitable(result):
                        await result
                except Exception as exc:  # noqa: BLE001 - a periodic task survives one failed round
                    self.on_error(name, exc)
        self.tasks.append(asyncio.get_running_loop().create_task(loop()))

    async def stop(self) -> None:
        tasks, self.tasks = self.tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
