"""Request-reply (RocketMQ 4.6+) through the emulator: requesters and repliers of the project's client and of the
official Java 4.9.8 client, in every pairing; a request nobody answers; a reply for a requester that is gone."""

from __future__ import annotations

import asyncio
import logging

import pytest

from rocketmq_emulator.client import (FIRST_OFFSET, BrokerResponseError, Producer, PushConsumer,
                                      ReplyTimeoutError, create_reply_message)
from rocketmq_emulator.protocol import ResponseCode
from rocketmq_emulator.protocol.message import MessageExt
from rocketmq_emulator.testing.emulator_thread import EmulatorThread

REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"


@pytest.fixture
def emu(tmp_path):
    e = EmulatorThread(tmp_path / "store", topics=[("Prices", 4)]).start()
    yield e
    e.close()


def stored_replies(emu: EmulatorThread) -> int:
    return emu.call(lambda: emu.broker.store.get_max_offset_in_queue(REPLY_TOPIC, 0))


async def python_replier(ns: str, group: str = "price-service") -> tuple[Producer, PushConsumer]:
    replier = Producer(f"{group}-replies", namesrv=ns)
    consumer = PushConsumer(group, namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe("Prices", "*")

    @consumer.on_message
    async def answer(msg):
        await replier.send_reply(msg, f"reply-to-{msg.text}")
    await replier.start()
    await consumer.start()
    return replier, consumer


def test_python_requester_and_replier(emu):
    async def main():
        replier, consumer = await python_replier(emu.namesrv_addr)
        try:
            async with Producer("shop", namesrv=emu.namesrv_addr) as requester:
                replies = [await requester.request("Prices", f"req-{i}", timeout=10) for i in range(5)]
                assert len(requester.instance.replies) == 0  # nothing left waiting
        finally:
            await consumer.stop()
            await replier.stop()
        return replies
    replies = asyncio.run(main())
    assert [r.text for r in replies] == [f"reply-to-req-{i}" for i in range(5)]
    assert {r.topic for r in replies} == {REPLY_TOPIC}
    assert all(r.properties["MSG_TYPE"] == "reply" and r.properties["CORRELATION_ID"] for r in replies)
    assert len({r.properties["CORRELATION_ID"] for r in replies}) == 5
    assert stored_replies(emu) == 5  # storeReplyMessageEnable (default true): each reply is also stored


def test_request_without_replier_times_out(emu):
    async def main():
        async with Producer("shop", namesrv=emu.namesrv_addr) as requester:
            loop = asyncio.get_running_loop()
            began = loop.time()
            with pytest.raises(ReplyTimeoutError, match="no reply came within 1 s"):
                await requester.request("Prices", "anyone?", timeout=1)
            waited = loop.time() - began
            assert len(requester.instance.replies) == 0
            with pytest.raises(ValueError, match="positive timeout"):
                await requester.request("Prices", "x", timeout=0)
            return waited
    waited = asyncio.run(main())
    assert 0.9 <= waited < 5


def test_reply_to_a_requester_that_is_gone(emu, caplog):
    """The broker answers SYSTEM_ERROR with upstream's remark, stores the reply anyway, logs once per client."""
    request = MessageExt(topic="Prices", body=b"old request", properties={
        "CLUSTER": "DefaultCluster", "CORRELATION_ID": "c-1", "REPLY_TO_CLIENT": "10.9.9.9@gone", "TTL": "3000"})

    async def main():
        async with Producer("late-replier", namesrv=emu.namesrv_addr) as replier:
            errors = []
            for _ in range(3):
                with pytest.raises(BrokerResponseError) as info:
                    await replier.send_reply(request, b"too late")
                errors.append(info.value)
            return errors
    with caplog.at_level(logging.WARNING, logger="rocketmq_emulator.reply"):
        errors = asyncio.run(main())
    assert all(e.code == ResponseCode.SYSTEM_ERROR for e in errors)
    assert "channel of <10.9.9.9@gone> not found" in str(errors[0])
    assert stored_replies(emu) == 3
    gone = [r for r in caplog.records if "10.9.9.9@gone" in r.getMessage()]
    assert len(gone) == 1, [r.getMessage() for r in gone]


def test_create_reply_message_rules():
    req = MessageExt(topic="T", body=b"q", properties={"CLUSTER": "C1", "CORRELATION_ID": "id", "REPLY_TO_CLIENT": "x",
                                                      "TTL": "500", "KEYS": "k"})
    reply = create_reply_message(req, "a")
    assert reply.topic == "C1_REPLY_TOPIC" and reply.body == b"a"
    assert {k: reply.properties[k] for k in ("CORRELATION_ID", "REPLY_TO_CLIENT", "TTL", "MSG_TYPE")} == {
        "CORRELATION_ID": "id", "REPLY_TO_CLIENT": "x", "TTL": "500", "MSG_TYPE": "reply"}
    assert "KEYS" not in reply.properties
    with pytest.raises(ValueError, match="CLUSTER"):
        create_reply_message(MessageExt(topic="T", body=b""), "a")


def test_consumer_stop_right_after_start_never_hangs(emu):
    """A consumer stopped while its first rebalance is being requested (an exception right after start) stops:
    Python 3.11's wait_for could swallow that cancel and keep the rebalance loop alive forever."""
    async def main():
        for i in range(5):
            consumer = PushConsumer(f"g{i}", namesrv=emu.namesrv_addr, consume_from=FIRST_OFFSET)
            consumer.subscribe("Prices", "*")
            consumer.on_message(lambda m: None)
            async with Producer(f"p{i}", namesrv=emu.namesrv_addr) as p:
                await consumer.start()
                await p.fetch_queues("Prices")
                await asyncio.wait_for(consumer.stop(), 15)
    asyncio.run(main())


# -- the official Java client ------------------------------------------------------------------------------
def test_java_requester_python_replier(emu, java_clients, tmp_path):
    async def main():
        replier, consumer = await python_replier(emu.namesrv_addr)
        try:
            handle = java_clients.start("RequestReply", emu.namesrv_addr, "request", "Prices", 5, 5000,
                                        timeout=90, home=tmp_path / "req")
            events = await asyncio.to_thread(handle.wait)
        finally:
            await consumer.stop()
            await replier.stop()
        return handle, events
    handle, events = asyncio.run(main())
    replies = [e for e in events if e.get("event") == "reply"]
    assert [r["body"] for r in replies] == [f"reply-to-req-{i}" for i in range(5)], handle.describe()
    assert {r["topic"] for r in replies} == {REPLY_TOPIC}


def test_python_requester_java_replier(emu, java_clients, tmp_path):
    replier = java_clients.start("RequestReply", emu.namesrv_addr, "reply", "Prices", "CID_java_replier", 60,
                                 timeout=90, home=tmp_path / "rep")
    try:
        assert replier.wait_for("consumer_started", 30), replier.describe()

        async def main():
            async with Producer("shop", namesrv=emu.namesrv_addr) as requester:
                return [await requester.request("Prices", f"req-{i}", timeout=15) for i in range(3)]
        replies = asyncio.run(main())
        assert [r.text for r in replies] == [f"reply-to-req-{i}" for i in range(3)]
        # the requester may have its reply before the Java replier's send() returns and prints its event
        assert replier.wait_for(lambda e: e.get("event") == "replied" and e["body"] == "req-2", 15)
        replied = replier.of("replied")
        assert [e["status"] for e in replied] == ["SEND_OK"] * 3
    finally:
        replier.kill()


def test_java_requester_java_replier(emu, java_clients, tmp_path):
    replier = java_clients.start("RequestReply", emu.namesrv_addr, "reply", "Prices", "CID_java_replier2", 60,
                                 timeout=90, home=tmp_path / "rep")
    try:
        assert replier.wait_for("consumer_started", 30), replier.describe()
        requester = java_clients.run("RequestReply", emu.namesrv_addr, "request", "Prices", 3, 10000,
                                     timeout=90, home=tmp_path / "req")
        replies = requester.of("reply")
        assert [r["body"] for r in replies] == [f"reply-to-req-{i}" for i in range(3)], requester.describe()
        assert requester.returncode == 0
    finally:
        replier.kill()
