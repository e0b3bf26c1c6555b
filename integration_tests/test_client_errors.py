"""Every failure a user can hit raises an exception that says what happened and what to do."""

from __future__ import annotations

import asyncio

import pytest

from rocketmq_emulator.client import (Admin, BrokerResponseError, BrokerUnreachableError, ClientStateError,
                                      ConsumerNotOnlineError, InvalidArgumentError, NoRouteError, Producer,
                                      PushConsumer, RequestTimeoutError)
from rocketmq_emulator.protocol import ResponseCode
from rocketmq_emulator.testing.ports import free_port
from rocketmq_emulator.testing.waits import wait_for


async def test_no_route_when_auto_create_is_off(emulator_factory):
    emu = emulator_factory(auto_create_topic_enable=False)
    async with Producer("err_producer", namesrv=emu.namesrv_addr) as p:
        with pytest.raises(NoRouteError) as info:
            await p.send("NoSuchTopic", b"x")
    assert "NoSuchTopic" in str(info.value) and "updateTopic" in str(info.value)


async def test_broker_answer_carries_code_and_remark(emulator):
    async with Producer("err_producer", namesrv=emulator.namesrv_addr, retry_times=1) as p:
        await p.send("Existing", b"x")
        queue = (await p.fetch_queues("Existing"))[0]
        with pytest.raises(BrokerResponseError) as info:
            await p.send("SCHEDULE_TOPIC_XXXX", b"x", queue=queue.__class__("SCHEDULE_TOPIC_XXXX", "broker-a", 0))
    err = info.value
    assert err.code == ResponseCode.NO_PERMISSION and "forbidden" in err.remark
    assert "NO_PERMISSION (16)" in str(err) and "tried 2 time(s)" in "".join(err.__notes__)
    async with Admin(emulator.namesrv_addr) as admin:
        with pytest.raises(ConsumerNotOnlineError) as info2:
            await admin.consumer_progress("nobody")
    assert info2.value.code == ResponseCode.CONSUMER_NOT_ONLINE


async def test_unreachable_name_server_and_timeout():
    dead = f"127.0.0.1:{free_port()}"
    async with Producer("err_producer", namesrv=dead) as p:
        with pytest.raises(BrokerUnreachableError) as info:
            await p.send("T", b"x")
        assert dead in str(info.value) and "check that the server runs" in str(info.value)
        with pytest.raises(BrokerUnreachableError) as info:  # within the back-off window: fails at once
            await p.send("T", b"x")
        assert "failed connection attempt" in str(info.value) and "next connection attempt" not in str(info.value)

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # accepts, never answers
    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with Admin(f"127.0.0.1:{port}", timeout=0.3) as admin:
            with pytest.raises(RequestTimeoutError) as info3:
                await admin.topic_list()
        assert "0.3 s" in str(info3.value)
    finally:
        server.close()


async def test_misuse_is_explained(emulator):
    p = Producer("err_producer", namesrv=emulator.namesrv_addr)
    with pytest.raises(ClientStateError, match="not started"):
        await p.send("T", b"x")
    async with p:
        with pytest.raises(InvalidArgumentError, match="reserved"):
            await p.send("T", b"x", properties={"TAGS": "x"})
        with pytest.raises(InvalidArgumentError, match="invalid"):
            await p.send("bad topic!", b"x")
        with pytest.raises(InvalidArgumentError, match="empty"):
            await p.send("T", b"")
    orderly = PushConsumer("err_group", namesrv=emulator.namesrv_addr, orderly=True)
    orderly.subscribe("T")
    with pytest.raises(ClientStateError, match="needs a handler"):
        await orderly.start()
    c = PushConsumer("err_group", namesrv=emulator.namesrv_addr)
    c.subscribe("T")
    c.on_message(lambda m: None)
    async with c:
        with pytest.raises(ClientStateError, match="has a handler"):
            await c.getmany(timeout=0.1)
        twin = PushConsumer("err_group", namesrv=emulator.namesrv_addr, instance_name=c.client_id.split("@")[1])
        twin.subscribe("T")
        with pytest.raises(ClientStateError, match="already started"):
            await twin.start()


async def test_clients_reconnect_after_a_broker_restart(emulator):
    ns = emulator.namesrv_addr
    got: list[str] = []
    consumer = PushConsumer("restart_group", namesrv=ns, consume_from="first_offset")
    consumer.subscribe("RestartTopic")
    consumer.on_message(lambda m: got.append(m.text))
    async with Producer("restart_producer", namesrv=ns) as producer, consumer:
        await producer.send("RestartTopic", "before")
        assert await wait_for(lambda: got == ["before"], 20), got
        await asyncio.to_thread(emulator.restart)  # same ports, same store; every connection dropped
        for i in range(5):
            await producer.send("RestartTopic", f"after-{i}")  # reconnects (retrying on failure)
        assert await wait_for(lambda: len(got) >= 6, 30), got
    assert sorted(got) == ["after-0", "after-1", "after-2", "after-3", "after-4", "before"]
