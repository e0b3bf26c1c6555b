"""The transport against a scripted loopback server: responses matched by opaque in any order, a cancelled
caller drops only its own request, timeouts, oneway, server-initiated requests, reconnection with backoff."""

from __future__ import annotations

import asyncio

import pytest

from rocketmq_emulator.client.errors import BrokerUnreachableError, RequestTimeoutError
from rocketmq_emulator.client.remoting import RemotingClient
from rocketmq_emulator.protocol import FrameDecoder, RemotingCommand, encode_command_bytes
from rocketmq_emulator.protocol.transport import DispatchTable


class Server:
    """Answers each request with its code as `remark` after `delay_of(code)` seconds; code 99 is never
    answered; records every request; can push requests to the client."""

    def __init__(self) -> None:
        self.requests: list[RemotingCommand] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.responses: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        self.server: asyncio.base_events.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            decoder.feed(data)
            for cmd in decoder:
                if cmd.is_response:
                    self.responses.put_nowait(cmd)
                    continue
                self.requests.append(cmd)
                if cmd.is_oneway or cmd.code == 99:
                    continue
                asyncio.get_running_loop().call_later(
                    cmd.code / 1000, lambda c=cmd: writer.write(encode_command_bytes(
                        RemotingCommand.response_to(c, 0, remark=str(c.code)))))

    async def close(self) -> None:
        for w in self.writers:
            w.close()
        if self.server is not None:
            self.server.close()


@pytest.fixture
async def server():
    s = Server()
    yield s
    await s.close()


async def test_out_of_order_responses_and_cancellation(server):
    addr = await server.start()
    client = RemotingClient()
    try:
        slow = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(200), 5))
        fast = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(10), 5))
        cancelled = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(100), 5))
        assert (await fast).remark == "10" and not slow.done()
        cancelled.cancel()
        assert (await slow).remark == "200"
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        await asyncio.sleep(0.15)  # the cancelled request's answer arrives and is dropped
        conn = client.connection(addr)
        assert conn is not None and conn.pending == {}
        assert len(server.requests) == 3 and len(server.writers) == 1  # one connection per address
    finally:
        client.close()


async def test_timeout_oneway_and_connection_loss(server):
    addr = await server.start()
    client = RemotingClient()
    try:
        with pytest.raises(RequestTimeoutError, match="0.1 s"):
            await client.invoke(addr, RemotingCommand.request(99), 0.1)
        await client.invoke_oneway(addr, RemotingCommand.request(15))
        await client.invoke(addr, RemotingCommand.request(1), 5)
        assert [r.is_oneway for r in server.requests] == [False, True, False]
        waiting = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(99), 5))
        await asyncio.sleep(0.05)
        for w in server.writers:
            w.close()
        with pytest.raises(BrokerUnreachableError, match="connection"):
            await waiting
        assert (await client.invoke(addr, RemotingCommand.request(1), 5)).remark == "1"  # reconnected
        assert len(server.writers) == 2
    finally:
        client.close()


async def test_server_requests_reach_the_handler_and_get_answers(server):
    addr = await server.start()
    seen = []

    async def handler(cmd, conn):
        seen.append(cmd.code)
        return None if cmd.code == 40 else RemotingCommand.response_to(cmd, 0, remark="handled")

    table = DispatchTable("client")
    table.register((40, 307), handler)
    client = RemotingClient(table)
    try:
        await client.invoke(addr, RemotingCommand.request(1), 5)
        writer = server.writers[0]
        writer.write(encode_command_bytes(RemotingCommand.request(40, {"consumerGroup": "g"}, oneway=True)))
        request = RemotingCommand.request(307, {"consumerGroup": "g"})
        writer.write(encode_command_bytes(request))
        response = await asyncio.wait_for(server.responses.get(), 5)
        assert response.opaque == request.opaque and response.is_response and response.remark == "handled"
        assert seen == [40, 307]
    finally:
        client.close()


async def test_connection_refused_then_backoff():
    client = RemotingClient(backoff_max=5)
    s = Server()
    addr = await s.start()
    await s.close()  # nothing listens there any more
    try:
        with pytest.raises(BrokerUnreachableError, match="cannot connect"):
            await client.invoke(addr, RemotingCommand.request(1), 1)
        with pytest.raises(BrokerUnreachableError, match=r"cannot connect .*\(1 failed connection attempt\)"):
            await client.invoke(addr, RemotingCommand.request(1), 1)
        await asyncio.sleep(0.15)
        with pytest.raises(BrokerUnreachableError, match="cannot connect"):  # tried again after the wait
            await client.invoke(addr, RemotingCommand.request(1), 1)
    finally:
        client.close()
