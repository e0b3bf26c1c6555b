"""The dashboard's JSON API in process (aiohttp client against `Emulator(dashboard_port=0)`): message lookups by
offset id and unique key, body markers, where a message is for a group, the DLQ resend, the offset history of a
reset and of a PULL_OFFSET_MOVED correction, test controls, the wire trace tail, and the 4xx answers."""

from __future__ import annotations

import aiohttp
import pytest

from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.client import Producer, PullConsumer
from rocketmq_emulator.protocol.bodies import MessageQueue


@pytest.fixture
async def dash(tmp_path):
    cfg = emulator_config(namesrv_port=0, listen_port=0, dashboard_port=0, topics="T:2", groups="G",
                          store_path_root_dir=str(tmp_path / "store"), wire_trace=str(tmp_path / "trace.log"))
    async with Emulator(cfg) as emu:
        base = f"http://127.0.0.1:{emu.dashboard.port}"
        async with aiohttp.ClientSession(base) as http:
            yield emu, http


async def get(http, path):  # noqa: ANN001, ANN201
    async with http.get(path) as r:
        return r.status, await r.json()


async def post(http, path, body):  # noqa: ANN001, ANN201
    async with http.post(path, json=body) as r:
        return r.status, await r.json()


async def test_messages_by_offset_id_and_unique_key_with_body_markers(dash):
    emu, http = dash
    status, sent = await post(http, "/api/send", {"topic": "T", "body": '{"a": [1, 2]}', "tag": "A", "keys": "k1",
                                                  "properties": {"region": "eu"}})
    assert status == 200
    status, by_offset_id = await get(http, f"/api/messages/{sent['offsetMsgId']}")
    assert status == 200 and by_offset_id["properties"]["region"] == "eu" and by_offset_id["bodyKind"] == "json"
    status, by_uniq = await get(http, f"/api/messages/{sent['msgId']}?topic=T")
    assert status == 200 and by_uniq["queueOffset"] == sent["queueOffset"]
    assert (await get(http, f"/api/messages/{sent['msgId']}"))[0] == 404  # a unique key needs its topic
    async with Producer("PG", namesrv=emu.namesrv_addr) as p:
        await p.send("T", bytes(range(256)) * 300, keys="bin")
    status, found = await get(http, "/api/topics/T/messages?key=bin")
    assert status == 200 and found[0]["bodyKind"] == "binary" and found[0]["truncated"]
    status, browsed = await get(http, "/api/topics/T/messages?time=2000-01-01T00:00:00")
    assert status == 200 and len(browsed) == 2


async def test_where_a_message_is_for_a_group_and_the_dlq_resend(dash):
    emu, http = dash
    _, sent = await post(http, "/api/send", {"topic": "T", "body": "x", "keys": "w1"})
    status, where = await get(http, f"/api/groups/G/where?msgId={sent['offsetMsgId']}")
    assert status == 200 and where["places"][0]["where"] == "not yet pulled"
    async with PullConsumer("G", namesrv=emu.namesrv_addr) as c:
        mq = MessageQueue("T", "broker-a", sent["queueId"])
        result = await c.pull(mq, 0, max_nums=8)
        await c.commit(mq, result.next_begin_offset)
        msg = result.messages[0]
        await c.instance.api.send_back(emu.broker.broker_addr, "G", commit_log_offset=msg.commit_log_offset,
                                       origin_msg_id=msg.msg_id, origin_topic="T", delay_level=-1,
                                       max_reconsume_times=16)  # straight to the DLQ
    status, where = await get(http, f"/api/groups/G/where?msgId={sent['offsetMsgId']}")
    places = [p["where"] for p in where["places"]]
    assert places[0] == "consumed" and "in the DLQ" in places, where
    dlq = [p for p in where["places"] if p["where"] == "in the DLQ"][0]
    status, resent = await post(http, "/api/resend", {"msgId": dlq["msgId"]})
    assert status == 200 and resent["topic"] == "T"
    status, again = await get(http, "/api/topics/T/messages?key=w1")
    assert len(again) == 2


async def test_the_offset_history_shows_a_reset_and_what_came_after_it(dash):
    emu, http = dash
    for i in range(3):
        await post(http, "/api/send", {"topic": "T", "body": f"m{i}"})
    async with PullConsumer("G", namesrv=emu.namesrv_addr) as c:
        for q in (0, 1):
            mq = MessageQueue("T", "broker-a", q)
            r = await c.pull(mq, 0)
            await c.commit(mq, r.next_begin_offset)
    offsets = emu.broker.consumer_offset_manager
    committed = {q: offsets.query_offset("G", "T", q) for q in (0, 1)}
    moved = [q for q, o in committed.items() if o > 0]  # the sends picked their queues at random
    status, preview = await post(http, "/api/groups/G/reset/preview", {"topic": "T", "mode": "earliest"})
    assert status == 200 and {t["to"] for t in preview["targets"]} == {0}
    assert {q: offsets.query_offset("G", "T", q) for q in (0, 1)} == committed  # a preview changes nothing
    status, _ = await post(http, "/api/groups/G/reset", {"topic": "T", "mode": "earliest"})
    assert status == 200
    status, history = await get(http, "/api/groups/G/history?topic=T")
    kinds = [e["kind"] for e in history]
    assert kinds[:len(moved)] == ["reset"] * len(moved) and "commit" in kinds[len(moved):], history  # newest first
    assert {e["queue_id"] for e in history[:len(moved)]} == set(moved)
    assert (await get(http, "/api/groups/G/history?queue=x"))[0] == 400
    from rocketmq_emulator.client import Admin
    from rocketmq_emulator.protocol.admin_bodies import ConsumerOffsetSerializeWrapper
    q = moved[0]
    async with Admin(emu.namesrv_addr) as admin:  # an import: commits by a connection that is no consumer
        await admin.import_offsets(ConsumerOffsetSerializeWrapper(offset_table={"T@G": {q: 1}}))
    _, history = await get(http, f"/api/groups/G/history?topic=T&queue={q}")
    # the reset above is still pending (no consumer pulled since): the import's commit is ignored, and says so
    assert history[0]["kind"] == "ignored" and history[0]["offset"] == 1 and "admin" in history[0]["by"]


async def test_controls_trace_and_bad_input(dash):
    emu, http = dash
    await post(http, "/api/send", {"topic": "T", "body": "x"})
    status, expired = await post(http, "/api/controls/expire", {})
    assert status == 200 and expired["deletedFiles"] >= 1
    status, dropped = await post(http, "/api/controls/drop-connections", {})
    assert status == 200
    status, trace = await get(http, "/api/trace?codes=GET_ALL_TOPIC_CONFIG")
    assert status == 200 and all("GET_ALL_TOPIC_CONFIG" in line for line in trace["lines"])
    assert (await post(http, "/api/groups/G/reset", {"topic": "T", "mode": "sideways"}))[0] == 400
    assert (await post(http, "/api/topics", {"topic": "x" * 200}))[0] == 400
    assert (await post(http, "/api/send", {"topic": "T", "properties": {"a": 1}}))[0] == 400
    async with http.post("/api/send", data="not json", headers={"Content-Type": "application/json"}) as r:
        assert r.status == 400
    async with http.post("/api/send", data="topic=T") as r:
        assert r.status == 415
    assert (await get(http, "/api/overview"))[1]["brokers"][0]["name"] == "broker-a"
    status, advanced = await post(http, "/api/controls/advance", {"seconds": "3600"})
    assert status == 200 and advanced["offsetMillis"] == 3_600_000 and emu.clock.offset_ms == 3_600_000
    assert (await post(http, "/api/controls/advance", {"seconds": "-1"}))[0] == 400


async def raw_get(port: int, target: str) -> bytes:
    """A GET of this exact target (aiohttp's client would normalise the `..` away)."""
    import asyncio
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    answer = await reader.read()
    writer.close()
    return answer


async def test_what_held_cross_origin_and_form_posts_and_static_traversal_are_refused(dash):
    """The probes of issue #35 that held, kept as tests: an action from another origin (403) or as a form (415)
    changes nothing; a static path that climbs out of static/ serves no file of the package."""
    emu, http = dash
    port = emu.dashboard.port
    async with http.post("/api/topics", json={"topic": "FromAfar"}, headers={"Origin": "http://evil.example"}) as r:
        assert r.status == 403 and "cross-origin" in (await r.json())["error"]
    async with http.post("/api/topics", data="topic=FromAForm",
                         headers={"Content-Type": "application/x-www-form-urlencoded"}) as r:
        assert r.status == 415
    async with http.post("/api/topics", data='{"topic": "AsText"}', headers={"Content-Type": "text/plain"}) as r:
        assert r.status == 415
    assert all(emu.read_model().topic(t) is None for t in ("FromAfar", "FromAForm", "AsText"))
    assert (await raw_get(port, "/static/app.js")).startswith(b"HTTP/1.1 200")
    for target in ("/static/../server.py", "/static/%2e%2e/server.py", "/static/..%2fserver.py",
                   "/static/%2e%2e%2f%2e%2e%2fsettings.py", "/static//etc/passwd", "/static/..\\server.py"):
        answer = await raw_get(port, target)
        status = int(answer.split(b" ", 2)[1])
        assert status in (400, 403, 404) and b"__future__" not in answer and b"root:" not in answer, target
