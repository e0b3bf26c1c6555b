"""One rule for what a system topic (and a system group) is, whoever asks, on a running emulator: the remoting
UPDATE_AND_CREATE_TOPIC refuses it ("conflict with system topic"), the dashboard's JSON API lists it as
`system` (hidden from the plain topic list, not created nor deleted there), and the gRPC endpoint refuses a 5.x
client's QueryRoute and SendMessage of it (ILLEGAL_TOPIC "cannot access system topic", as a 5.3.3 proxy in the
broker's JVM, where the broker added its cluster, broker and reply topic names to TopicValidator's set). A
user's topic merely named like one (upper-case RMQ_SYS_..., ..._REPLY_TOPIC of no cluster here) is a topic."""

from __future__ import annotations

import aiohttp
import grpc
import pytest

from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.client import Admin
from rocketmq_emulator.client.errors import BrokerResponseError
from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.grpc_v2 import method_callable, v2
from rocketmq_emulator.protocol.headers import SendMessageRequestHeader
from rocketmq_emulator.protocol.topics import NOT_ALLOWED_SEND_TOPICS

C = v2.Code
MD = (("x-mq-client-id", "system-topic-test"),)
SYSTEM = ["TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC",
          "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRACE_TOPIC", "rmq_sys_wheel_timer", "rmq_sys_anything",
          "DefaultCluster", "broker-a", "DefaultCluster_REPLY_TOPIC"]
USER = ["RMQ_SYS_MINE", "ORDERS_REPLY_TOPIC", "Plain"]


def test_the_rule_itself():
    from rocketmq_emulator.protocol.topics import is_system_topic

    names = ("C1", "b1", "C1_REPLY_TOPIC")
    assert all(is_system_topic(t) for t in ("TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "rmq_sys_x"))
    assert all(is_system_topic(t, names) for t in names) and not any(is_system_topic(t) for t in names)
    assert not any(is_system_topic(t, names) for t in USER + ["C2_REPLY_TOPIC", "rmq_SYS_x"])
    assert all(is_system_topic(t) for t in NOT_ALLOWED_SEND_TOPICS)


@pytest.fixture
async def fronts(tmp_path):
    cfg = emulator_config(namesrv_port=0, listen_port=0, grpc_server_port=0, dashboard_port=0, topics="T:1",
                          groups="G", store_path_root_dir=str(tmp_path / "store"))
    async with Emulator(cfg) as emu, Admin(namesrv=emu.namesrv_addr) as admin, \
            grpc.aio.insecure_channel(f"127.0.0.1:{emu.grpc.port}") as channel, \
            aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http:
        yield emu, admin, channel, http


rpc = method_callable


async def grpc_answers(channel, topic):  # noqa: ANN001, ANN201
    """(QueryRoute's status, SendMessage's status) of `topic`."""
    route = v2.QueryRouteRequest()
    route.topic.name = topic
    m = v2.Message(body=b"x")
    m.topic.name = topic
    m.system_properties.message_id = "01SYS"
    m.system_properties.message_type = v2.MessageType.NORMAL
    answers = (await rpc(channel, "QueryRoute")(route, metadata=MD),
               await rpc(channel, "SendMessage")(v2.SendMessageRequest(messages=[m]), metadata=MD))
    return [(a.status.code, a.status.message) for a in answers]


async def test_remoting_dashboard_and_grpc_agree_on_every_system_topic(fronts):
    emu, admin, channel, http = fronts
    seen = {}
    for topic in SYSTEM + USER:  # each front's answer: refused as a system topic or not
        try:
            await admin.create_topic(topic, 1, 1)
            remoting = "created"
        except BrokerResponseError as exc:
            assert exc.code == ResponseCode.SYSTEM_ERROR
            remoting = "system" if f"The topic[{topic}] is conflict with system topic." in str(exc) else str(exc)
        answers = await grpc_answers(channel, topic)
        grpc_ = "system" if answers == [(C.ILLEGAL_TOPIC, "cannot access system topic")] * 2 else \
            "ok" if [code for code, _ in answers] == [C.OK, C.OK] else str(answers)
        async with http.post("/api/topics", json={"topic": topic, "queues": 1}) as r:
            dashboard = "system" if r.status == 400 and "conflict with system topic" in (await r.json())["error"] \
                else "created" if r.status == 200 else str(r.status)
        seen[topic] = (remoting, grpc_, dashboard)
    assert seen == {**{t: ("system", "system", "system") for t in SYSTEM},
                    **{t: ("created", "ok", "created") for t in USER}}
    async with http.get("/api/topics?system=true") as r:
        kinds = {t["topic"]: t["kind"] for t in await r.json()}
    assert {t: kinds[t] for t in SYSTEM if t in kinds} == {t: "system" for t in SYSTEM if t in kinds}
    assert {"TBW102", "DefaultCluster", "broker-a", "DefaultCluster_REPLY_TOPIC"} <= set(kinds)
    assert {t: kinds[t] for t in USER + ["T"]} == {t: "normal" for t in USER + ["T"]}
    async with http.get("/api/topics") as r:
        assert sorted(t["topic"] for t in await r.json()) == sorted(USER + ["T"])
    async with http.get("/api/overview") as r:
        assert [b["topics"] for b in (await r.json())["brokers"]] == [len(USER) + 1]
    async with http.post("/api/topics/SCHEDULE_TOPIC_XXXX/delete", json={}) as r:
        assert r.status == 400
    assert emu.broker.topic_config_manager.get("SCHEDULE_TOPIC_XXXX") is not None


async def test_every_topic_a_remoting_send_may_not_write_is_a_system_topic_to_grpc(fronts):
    emu, admin, channel, _ = fronts
    for topic in sorted(NOT_ALLOWED_SEND_TOPICS):
        header = SendMessageRequestHeader(producer_group="PG", topic=topic, queue_id=0, born_timestamp=0)
        sent = await admin.instance.api.call(emu.broker.broker_addr, RequestCode.SEND_MESSAGE, header.to_ext(), b"x",
                                             operation="send", ok=range(-1000, 1000))
        assert (sent.code, sent.remark) == (ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is "
                                                                        "forbidden."), topic
        assert [code for code, _ in await grpc_answers(channel, topic)] == [C.ILLEGAL_TOPIC] * 2, topic


async def test_system_groups_one_prefix_for_grpc_the_dashboard_and_auto_creation(fronts):
    emu, _, channel, http = fronts
    assignment = v2.QueryAssignmentRequest()
    assignment.topic.name, assignment.group.name = "T", "CID_RMQ_SYS_MINE"
    answer = await rpc(channel, "QueryAssignment")(assignment, metadata=MD)
    assert (answer.status.code, answer.status.message) == (C.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")
    emu.broker.subscription_group_manager.auto_create = False
    assert emu.broker.subscription_group_manager.find("CID_RMQ_SYS_MINE") is not None  # made whatever the setting
    assert emu.broker.subscription_group_manager.find("MINE") is None
    async with http.get("/api/groups") as r:
        assert [g["group"] for g in await r.json()] == ["G"]
