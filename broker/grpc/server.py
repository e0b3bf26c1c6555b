"""`GrpcEndpoint`: a grpc.aio server on the broker's event loop serving MessagingService (messaging.py), within the
memory bounds of limits.py."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterable

import grpc

from rocketmq_emulator.protocol.transport import PortUnavailable
from rocketmq_emulator.protocol.grpc_v2 import SERVICE, method_names, method_types, v2

from ..core.acl.grpc_auth import guard_method
from ..core.read_model import BrokerFront
from .converter import status
from .limits import SEND_IN_FLIGHT, receive_limit
from .messaging import MessagingService
from .trace import GrpcTrace

C = v2.Code

log = logging.getLogger("rocketmq_emulator.grpc")


def _parser(cls: Any) -> Callable[[bytes], Any]:
    """The request's parser; None for bytes that are not one (answered BAD_REQUEST, not a gRPC error)."""
    def parse(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except Exception:  # noqa: BLE001 - protobuf's DecodeError, or anything malformed input raises
            return None
    return parse


def _refusing_malformed(fn: Callable[..., Any], response: Any, server_streaming: bool) -> Callable[..., Any]:
    malformed = response(status=status(C.BAD_REQUEST, f"malformed request: not a {response.DESCRIPTOR.name[:-8]}"
                                                      "Request"))
    if server_streaming:
        async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
            if request is None:
                yield malformed
                return
            async for item in fn(request, context):
                yield item
        return stream

    async def unary(request: Any, context: Any) -> Any:
        return malformed if request is None else await fn(request, context)
    return unary


class _ClientGone(logging.Filter):
    """grpc.aio logs a write of a stream whose client went away (cancelled, disconnected, or never reading after
    a RESOURCE_EXHAUSTED) as "ExecuteBatchError raised in core by servicer method" with a traceback when it sees
    the failed write before the cancel: one DEBUG line of ours instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text.startswith("ExecuteBatchError raised in core") and f"/{SERVICE}/" in text:
            log.debug("a client went away mid-stream (%s)", text.rpartition(" ")[2])
            return False
        return True


_CLIENT_GONE = _ClientGone()


def _read_when_admitted(fn: Callable[..., Any], response: Any, admitted: asyncio.Semaphore) -> Callable[..., Any]:
    """A unary RPC served as client-streaming (the same on the wire): its request is read only once `admitted`
    lets it in, so requests beyond the semaphore's count wait unread (HTTP/2 flow control holds their bytes back
    in the client)."""
    refusing = _refusing_malformed(fn, response, server_streaming=False)

    async def unary(request_iterator: Any, context: Any) -> Any:
        async with admitted:
            request = await context.read()
            return await refusing(None if request is grpc.aio.EOF else request, context)
    return unary


def _bind(add_port: Callable[[str], int], role: str, what: str, host: str, port: int) -> int:
    """`add_port(addr)` (the server's add_insecure_port / add_secure_port); PortUnavailable when the port cannot be
    had. A port asked for by number is tried with a plain socket first: gRPC's C core would log its own lines and
    advice about a taken port before failing with a RuntimeError that does not say why."""
    if port:
        probe = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        try:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
        except socket.gaierror:  # --host names no address here: the command line says so
            raise
        except OSError as exc:
            raise PortUnavailable(role, what, host, port, exc) from None
        finally:
            probe.close()
    try:
        bound = add_port(f"{host}:{port}")
    except RuntimeError:  # the C core failed to bind (e.g. taken since the probe)
        bound = 0
    if bound == 0:
        raise PortUnavailable(role, what, host, port, OSError(errno.EADDRINUSE, "in use"))
    return bound


class GrpcEndpoint:
    """`host`/`port`: where to listen (port 0: a free one, `port` once started); `advertised_host`: the host put
    in routes when a client sends no endpoints of its own."""

    def __init__(self, brokers: Callable[[], Iterable[BrokerFront]], host: str, port: int,
                 advertised_host: str, tls_port: int | None = None, tls_dir: Path | None = None,
                 tracer: Any = None) -> None:
        self.host = host
        self.port = port
        #: the TLS port (tls.py), when asked for; its certificate is kept in `tls_dir`
        self.tls_port = tls_port
        self.tls_dir = tls_dir
        self.advertised_host = advertised_host
        self.service = MessagingService(brokers, lambda: (self.advertised_host, self.port))
        self._server: Any = None
        self._brokers = brokers
        #: the wire trace (broker/trace.py's Tracer), when on: every call is traced (trace.py)
        self.trace = GrpcTrace(tracer) if tracer is not None else None
        #: gRPC's maximum receive size (limits.receive_limit), set at start
        self.max_receive = 0

    def _handlers(self) -> Any:
        admitted = asyncio.Semaphore(SEND_IN_FLIGHT)
        handlers = {}
        # aclEnable: each request is first checked against the accounts of the first broker with ACL on
        acl = next((a for a in (getattr(f.write, "acl", None) for f in self._brokers()) if a is not None), None)
        for name in method_names():
            fn = getattr(self.service, name, None)
            if fn is None:  # not served: gRPC answers UNIMPLEMENTED
                continue
            request, response, client_streaming, server_streaming = method_types(name)
            if acl is not None:  # a refusal is PERMISSION_DENIED, as on the 5.x proxy (core/acl/grpc_auth.py)
                fn = guard_method(fn, client_streaming, server_streaming, acl.validate_grpc)
            if self.trace is not None:
                fn = self.trace.wrap(name, fn, client_streaming, server_streaming)
            make = {(False, False): grpc.unary_unary_rpc_method_handler,
                    (False, True): grpc.unary_stream_rpc_method_handler,
                    (True, True): grpc.stream_stream_rpc_method_handler,
                    (True, False): grpc.stream_unary_rpc_method_handler}[(client_streaming, server_streaming)]
            if name == "SendMessage":  # the one request with bodies of up to maxMessageSize
                fn, make = _read_when_admitted(fn, response, admitted), grpc.stream_unary_rpc_method_handler
            elif not client_streaming:
                fn = _refusing_malformed(fn, response, server_streaming)
            handlers[name] = make(fn, request_deserializer=_parser(request),
                                  response_serializer=response.SerializeToString)
        return grpc.method_handlers_generic_handler(SERVICE, handlers)

    async def start(self) -> None:
        self.max_receive = receive_limit(f.read.config.store.max_message_size for f in self._brokers())
        # no BDP probing: a stream's receive window stays at HTTP/2's 64 KiB until its request is read (then gRPC
        # opens it to the message's size), so the SendMessage requests waiting for admission stay in their clients
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0), ("grpc.http2.bdp_probe", 0),
                                          ("grpc.max_receive_message_length", self.max_receive)])
        logging.getLogger("grpc._cython.cygrpc").addFilter(_CLIENT_GONE)  # once: addFilter keeps one of each
        server.add_generic_rpc_handlers((self._handlers(),))
        self.port = _bind(lambda addr: server.add_insecure_port(addr), "grpc", "the gRPC endpoint", self.host,
                          self.port)
        if self.tls_port is not None:
            from .tls import certificate
            cert, key = certificate(self.tls_dir or Path("."), [self.advertised_host])
            credentials = grpc.ssl_server_credentials([(key, cert)])
            self.tls_port = _bind(lambda addr: server.add_secure_port(addr, credentials), "grpc-tls",
                                  "the gRPC TLS endpoint", self.host, self.tls_port)
        await server.start()
        self._server = server
        self.service.renewal.start()
        for f in self._brokers():
            f.write.transaction_check.fronts.append(self.service.check_transaction)
        log.info("gRPC endpoint (RocketMQ 5.x clients) on %s:%d%s", self.host, self.port,
                 f", TLS on {self.tls_port}" if self.tls_port is not None else "")

    async def stop(self) -> None:
        await self.service.renewal.stop()
        if self._server is not None:
            for s in self.service.sessions.values():
                if s.outbox is not None:
                    s.outbox.close()
            await self._server.stop(0.5)
            self._server = None

    async def __aenter__(self) -> GrpcEndpoint:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
