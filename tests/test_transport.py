"""The one transport of broker and client (protocol/transport.py), over real loopback sockets: a
RemotingServer with a dispatch table, and a RemotingConnection dialling it."""

from __future__ import annotations

import asyncio

import pytest

from rocketmq_emulator.protocol import BrokerError, ProtocolError, RemotingCommand, ResponseCode
from rocketmq_emulator.protocol.transport import DispatchTable, PeriodicTasks, RemotingConnection, RemotingServer


def server_table() -> DispatchTable:
    table = DispatchTable("test")

    async def slow(req, conn):
        await asyncio.sleep(int(req.ext_fields["ms"]) / 1000)
        return RemotingCommand.response_to(req, remark=req.ext_fields["ms"])

    def refuse(req, conn):
        raise BrokerError(ResponseCode.NO_PERMISSION, "not you")

    def bad_header(req, conn):
        raise ProtocolError("missing required header field `topic`")

    def bug(req, conn):
        raise RuntimeError("boom")

    table.register(1, slow)
    table.register(2, refuse)
    table.register(3, bad_header)
    table.register(4, bug)
    table.register(5, lambda req, conn: None)  # answered later, or never
    return table


async def connect(port: int, table: DispatchTable | None = None) -> RemotingConnection:
    loop = asyncio.get_running_loop()
    _, conn = await loop.create_connection(lambda: RemotingConnection(table, name="test client",
                                                                      addr=f"127.0.0.1:{port}"), "127.0.0.1", port)
    return conn


async def test_answers_matched_by_opaque_in_any_order_and_errors_become_codes():
    async with RemotingServer("test", server_table(), "127.0.0.1", 0) as server:
        conn = await connect(server.port)
        try:
            slow = asyncio.ensure_future(conn.invoke(RemotingCommand.request(1, {"ms": "200"}), 5))
            fast = await conn.invoke(RemotingCommand.request(1, {"ms": "1"}), 5)
            assert fast.remark == "1" and not slow.done()
            assert (await slow).remark == "200"
            answers = [await conn.invoke(RemotingCommand.request(code), 5) for code in (2, 3, 4, 77)]
            assert [(a.code, a.remark) for a in answers] == [
                (ResponseCode.NO_PERMISSION, "not you"),
                (ResponseCode.SYSTEM_ERROR, "missing required header field `topic`"),
                (ResponseCode.SYSTEM_ERROR, "RuntimeError: boom"),
                (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 77 not supported")]
            assert all(a.is_response for a in answers) and conn.pending == {}
        finally:
            conn.close()


async def test_timeout_oneway_and_pending_failed_on_close():
    async with RemotingServer("test", server_table(), "127.0.0.1", 0) as server:
        conn = await connect(server.port)
        with pytest.raises(TimeoutError, match="no answer within 0.1 s"):
            await conn.invoke(RemotingCommand.request(5), 0.1)
        assert conn.pending == {}  # the timed-out caller removed its own entry
        assert conn.invoke_oneway(RemotingCommand.request(1, {"ms": "1"}))  # marked oneway: never answered
        waiting = asyncio.ensure_future(conn.invoke(RemotingCommand.request(5), 5))
        await asyncio.sleep(0.05)
        for c in list(server.connections):
            c.close()
        with pytest.raises(ConnectionError, match="connection"):
            await waiting
        assert not conn.invoke_oneway(RemotingCommand.request(1, {"ms": "1"}))  # closed: reported, not raised


async def test_server_initiated_requests_reach_the_other_sides_table():
    client_table = DispatchTable("client")
    client_table.register(40, lambda req, conn: RemotingCommand.response_to(req, remark="seen"))
    async with RemotingServer("test", DispatchTable("empty"), "127.0.0.1", 0) as server:
        conn = await connect(server.port, client_table)
        try:
            await asyncio.sleep(0.05)
            [accepted] = server.connections
            answer = await accepted.invoke(RemotingCommand.request(40), 5)
            assert answer.remark == "seen" and answer.opaque
        finally:
            conn.close()


async def test_periodic_tasks_survive_a_failing_round_and_stop():
    failures: list[str] = []
    rounds = 0

    def tick():
        nonlocal rounds
        rounds += 1
        if rounds == 2:
            raise ValueError("one bad round")
    timers = PeriodicTasks(lambda name, exc: failures.append(f"{name}: {exc}"))
    timers.every(0.01, tick)
    while rounds < 4:
        await asyncio.sleep(0.01)
    await timers.stop()
    stopped_at = rounds
    await asyncio.sleep(0.05)
    assert rounds == stopped_at and failures == ["tick: one bad round"]


async def test_run_handler_gets_consecutive_requests_of_one_read_together():
    """Requests of a code with a run handler that arrive in one read go to it together, in order, split by any
    other request between them; each gets its own answer: a response, an error code, or a pre-encoded frame."""
    from rocketmq_emulator.protocol.frame import encode_command_bytes

    calls: list[list[str]] = []
    table = DispatchTable("test")

    def run(reqs, conn):
        calls.append([r.ext_fields["n"] for r in reqs])
        answers = []
        for r in reqs:
            n = r.ext_fields["n"]
            if n == "boom":
                answers.append(BrokerError(ResponseCode.NO_PERMISSION, "not this one"))
            elif n.startswith("raw"):
                answers.append(encode_command_bytes(RemotingCommand(0, flag=1, opaque=r.opaque, remark=n)))
            else:
                answers.append(RemotingCommand.response_to(r, remark=n))
        return answers

    table.register(7, lambda req, conn: RemotingCommand.response_to(req, remark="alone"))
    table.register_run(7, run)
    table.register(8, lambda req, conn: RemotingCommand.response_to(req, remark="other"))
    async with RemotingServer("test", table, "127.0.0.1", 0) as server:
        conn = await connect(server.port)
        try:
            reqs = [RemotingCommand.request(7, {"n": n}) for n in ("a", "raw-b", "boom")]
            reqs.append(RemotingCommand.request(8))
            reqs += [RemotingCommand.request(7, {"n": n}) for n in ("c", "raw-oneway")]
            reqs[-1].flag |= 2  # oneway: never answered, even by a pre-encoded frame
            futures = {}
            loop = asyncio.get_running_loop()
            for r in reqs:  # the oneway one too: an answer to it would complete its future
                futures[r.opaque] = conn.pending[r.opaque] = loop.create_future()
            conn.transport.write(b"".join(encode_command_bytes(r) for r in reqs))  # one write: one read
            answers = [await asyncio.wait_for(futures[r.opaque], 5) for r in reqs[:-1]]
            assert [(a.code, a.remark) for a in answers] == [
                (ResponseCode.SUCCESS, "a"), (ResponseCode.SUCCESS, "raw-b"),
                (ResponseCode.NO_PERMISSION, "not this one"), (ResponseCode.SUCCESS, "other"),
                (ResponseCode.SUCCESS, "c")]
            assert calls == [["a", "raw-b", "boom"], ["c", "raw-oneway"]]
            assert (await conn.invoke(RemotingCommand.request(8), 5)).remark == "other"  # a round trip later
            assert not futures[reqs[-1].opaque].done(), "the oneway request got an answer"
        finally:
            conn.close()


async def test_a_paused_server_holds_requests_of_old_and_new_connections_and_answers_them_when_resumed():
    async with RemotingServer("test", server_table(), "127.0.0.1", 0) as server:
        old = await connect(server.port)
        server.pause()
        new = await connect(server.port)  # accepted while paused: paused too
        try:
            asked = [asyncio.ensure_future(c.invoke(RemotingCommand.request(1, {"ms": "1"}), 5)) for c in (old, new)]
            done, _ = await asyncio.wait(asked, timeout=0.5)
            assert not done  # nothing answered meanwhile; the connections stay open
            assert not old.closed and not new.closed
            server.pause(False)
            answers = await asyncio.gather(*asked)
            assert [a.remark for a in answers] == ["1", "1"]
        finally:
            old.close()
            new.close()
