"""A minimal asyncio remoting client built only on `protocol/`, for tests and the load generator, and the raw
requests the broker tests send with it."""

from __future__ import annotations

import asyncio
import socket
import time

from rocketmq_emulator.protocol import FrameDecoder, RemotingCommand, RequestCode, encode_command
from rocketmq_emulator.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeader
from rocketmq_emulator.protocol.message import encode_properties


def send_request(topic: str, body: bytes = b"hello", **props: str) -> RemotingCommand:
    """A SEND_MESSAGE_V2 of one message (tag TagA, `props` as properties) to queue 0 of `topic`."""
    h = SendMessageRequestHeader(producer_group="PG", topic=topic, queue_id=0, born_timestamp=int(time.time() * 1000),
                                 properties=encode_properties({"TAGS": "TagA", **props}))
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_v2().to_ext(), body)


def pull_request(topic: str, offset: int, suspend_ms: int = 15000, group: str = "G") -> RemotingCommand:
    """A PULL_MESSAGE of queue 0 of `topic` from `offset` (long polling `suspend_ms`, subscription `*`)."""
    h = PullMessageRequestHeader(consumer_group=group, topic=topic, queue_id=0, queue_offset=offset, max_msg_nums=32,
                                 sys_flag=0x2 | 0x4, suspend_timeout_millis=suspend_ms, subscription="*")
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext())


class RawClient(asyncio.Protocol):
    def __init__(self) -> None:
        self.decoder = FrameDecoder()
        self.transport: asyncio.Transport | None = None
        self.pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self.server_requests: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        self.closed = asyncio.get_event_loop().create_future()

    @classmethod
    async def connect(cls, host: str, port: int) -> RawClient:
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_connection(cls, host, port)
        return proto

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.decoder.feed(data)
        for cmd in self.decoder:
            if cmd.is_response:
                fut = self.pending.pop(cmd.opaque, None)
                if fut is not None and not fut.done():
                    fut.set_result(cmd)
            else:
                self.server_requests.put_nowait(cmd)

    def connection_lost(self, exc: Exception | None) -> None:
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("connection closed"))
        if not self.closed.done():
            self.closed.set_result(None)

    def send(self, cmd: RemotingCommand) -> asyncio.Future[RemotingCommand]:
        fut = asyncio.get_running_loop().create_future()
        self.pending[cmd.opaque] = fut
        assert self.transport is not None
        self.transport.writelines(encode_command(cmd))
        return fut

    async def request(self, cmd: RemotingCommand, timeout: float = 5.0) -> RemotingCommand:
        return await asyncio.wait_for(self.send(cmd), timeout)

    def write_raw(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    async def __aenter__(self) -> RawClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
