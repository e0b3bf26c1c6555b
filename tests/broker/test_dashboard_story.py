"""A message's story (broker/dashboard/story.py) through the dashboard's JSON API on a running emulator: a POP
group's delivery with its attempt and its ack, the trace records a 4.x client with `enableMsgTrace` writes to the trace topic
(TraceDataEncoder's format), a reset of its queue, a committed transaction's half message; a story is only recorded while the dashboard runs; bad ids are
404s."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.client import Admin, Producer
from rocketmq_emulator.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.protocol.message import decode_messages
from rocketmq_emulator.protocol.pop_headers import PROPERTY_POP_CK, AckMessageRequestHeader, PopMessageRequestHeader
from rocketmq_emulator.protocol.transport import RemotingConnection


@pytest.fixture
async def emu(tmp_path):
    cfg = emulator_config(namesrv_port=0, listen_port=0, dashboard_port=0, topics="Told:1,RMQ_SYS_TRACE_TOPIC:1",
                          groups="PopReaders,Tracers", store_path_root_dir=str(tmp_path / "store"))
    async with Emulator(cfg) as emulator:
        yield emulator


async def story(http: aiohttp.ClientSession, msg_id: str, topic: str, status: int = 200) -> dict:
    async with http.get(f"/api/messages/{msg_id}/story?topic={topic}") as r:
        assert r.status == status, await r.text()
        return await r.json()


async def story_once_stored(http: aiohttp.ClientSession, msg_id: str) -> dict | None:
    """The story of a message of Told that is not stored there yet (a 404 until it is), or None after 3 s."""
    for _ in range(60):
        async with http.get(f"/api/messages/{msg_id}/story?topic=Told") as r:
            if r.status == 200:
                return await r.json()
        await asyncio.sleep(0.05)
    return None


async def test_a_pop_delivery_trace_records_and_a_reset_are_in_the_story(emu: Emulator) -> None:
    async with Producer("story-producer", namesrv=emu.namesrv_addr) as producer, \
            Admin(emu.namesrv_addr) as admin, \
            aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http:
        sent = await producer.send("Told", "hello", tags="TagA", keys="k-1")
        now = int(time.time() * 1000)
        trace = "\x01".join(["Pub", str(now), "DefaultRegion", "story-producer", "Told", sent.msg_id, "TagA", "k-1",
                             "127.0.0.1:10911", "5", "3", "0", sent.offset_msg_id, "true"]) + "\x02"
        await producer.send("RMQ_SYS_TRACE_TOPIC", trace, keys=f"{sent.msg_id} k-1")

        _, conn = await asyncio.get_running_loop().create_connection(
            lambda: RemotingConnection(None, name="t"), "127.0.0.1", emu.brokers[0].server.port)
        try:
            answer = await conn.invoke(RemotingCommand.request(
                RequestCode.POP_MESSAGE, PopMessageRequestHeader(
                    consumer_group="PopReaders", topic="Told", queue_id=-1, max_msg_nums=1, invisible_time=60_000,
                    poll_time=0, born_time=now, init_mode=0).to_ext()), timeout=5)
            assert answer.code == 0, answer.remark
            popped = decode_messages(answer.body)[0]
            acked = await conn.invoke(RemotingCommand.request(RequestCode.ACK_MESSAGE, AckMessageRequestHeader(
                consumer_group="PopReaders", topic="Told", queue_id=popped.queue_id,
                extra_info=popped.properties[PROPERTY_POP_CK], offset=popped.queue_offset).to_ext()), timeout=5)
            assert acked.code == 0, acked.remark
        finally:
            conn.close()
        await admin.reset_offset("Tracers", "Told", 0)

        s = await story(http, sent.msg_id, "Told")
    assert s["recorded"] is True and s["message"]["offsetMsgId"] == sent.offset_msg_id
    whats = [(step["what"], step["group"]) for step in s["steps"]]
    assert whats[:2] == [("sent", None), ("stored", None)]
    popped = [step for step in s["steps"] if step["what"] == "delivered" and step["group"] == "PopReaders"]
    assert len(popped) == 1 and popped[0]["detail"].startswith("pop by 127.0.0.1:"), s["steps"]  # (no client id:
    # the raw connection sent no heartbeat)
    assert popped[0]["detail"].endswith(", attempt 1"), popped
    assert [step["detail"] for step in s["steps"] if step["what"] == "acked"] == [
        "by " + popped[0]["detail"].split(" by ")[1].split(",")[0]]  # the same connection
    assert ("acked", "PopReaders") in whats and whats.index(("acked", "PopReaders")) > whats.index(
        ("delivered", "PopReaders")), whats
    traced = [step for step in s["steps"] if step["what"] == "traced: sent"]
    assert len(traced) == 1 and traced[0]["t"] == now and "offsetMsgId " + sent.offset_msg_id in traced[0]["detail"]
    assert ("offset reset", "Tracers") in whats, whats
    assert [step["t"] for step in s["steps"]] == sorted(step["t"] for step in s["steps"])
    assert {n["group"]: n["where"] for n in s["now"]}["PopReaders"] == "consumed"


async def test_bad_ids_are_404s(emu: Emulator) -> None:
    async with aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http:
        missing = await story(http, "0" * 32, "Told", 404)
        assert "no message" in missing["error"]
        await story(http, "anything", "NoSuchTopic", 404)


async def test_without_the_dashboard_no_delivery_is_recorded(tmp_path) -> None:
    cfg = emulator_config(namesrv_port=0, listen_port=0, topics="Told:1", store_path_root_dir=str(tmp_path / "s"))
    async with Emulator(cfg) as emulator:
        assert all(b.delivery_log is None for b in emulator.brokers)


async def test_a_committed_transactions_story_has_its_half_message(emu: Emulator) -> None:
    from rocketmq_emulator.client import LocalTransactionState, Message, TransactionProducer
    async with TransactionProducer("story-tx", namesrv=emu.namesrv_addr) as producer, \
            aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http:
        sent = await producer.send_message_in_transaction(
            Message("Told", b"paid", keys=["order-9"]), lambda msg, arg: LocalTransactionState.COMMIT_MESSAGE)
        s = await story_once_stored(http, sent.msg_id)  # (the commit, END_TRANSACTION, is sent after the answer)
    assert s is not None, "the committed message never appeared"
    whats = [step["what"] for step in s["steps"]]
    assert whats[:3] == ["sent", "transaction prepared", "transaction committed"], whats
    assert s["steps"][0]["detail"].startswith("producer group story-tx, from "), s["steps"][0]


async def test_a_delayed_messages_story_has_its_first_store_in_the_delay_topic(emu: Emulator) -> None:
    from rocketmq_emulator.client import Message
    async with Producer("story-delay", namesrv=emu.namesrv_addr) as producer, \
            Admin(emu.namesrv_addr) as admin, \
            aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http:
        sent = await producer.send_message(Message("Told", b"later", delay_level=1))  # 1 s
        await admin.advance_time(2)
        s = await story_once_stored(http, sent.msg_id)  # (delivered to Told when due)
    assert s is not None, "the delayed message never reached its topic"
    whats = [step["what"] for step in s["steps"]]
    assert whats[:3] == ["sent", "stored, delayed", "stored"], whats
    assert s["steps"][1]["detail"].startswith("delay level 1: in SCHEDULE_TOPIC_XXXX queue 0"), s["steps"][1]
