"""The read model (broker/core/read_model.py) is what the fronts read, so on a running emulator the dashboard's JSON API,
the gRPC endpoint's QueryRoute and the name server's route (what the broker registers) say the same of the same
broker state: each topic's permission on a read-write broker, with a read-only topic, on a read-only broker; the
topic lists, user or system by the one rule; and a POP group's un-acked messages, as the dashboard shows them,
are the read model's."""

from __future__ import annotations

import aiohttp
import grpc
import pytest

from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.broker.core.read_model import BrokerFront, ReadModel
from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.client import Admin
from rocketmq_emulator.protocol.grpc_v2 import method_callable, v2

C = v2.Code
P = v2.Permission
MD = (("x-mq-client-id", "read-model-test"),)
#: the per-queue permission gRPC gives a route's perm (read and write queue counts equal)
GRPC_PERM = {6: P.READ_WRITE, 4: P.READ, 2: P.WRITE, 0: P.NONE}


@pytest.fixture
def start(tmp_path):
    def make(**settings):  # noqa: ANN003, ANN202
        cfg = emulator_config(namesrv_port=0, listen_port=0, grpc_server_port=0, dashboard_port=0, topics="T:2,RO:2",
                              groups="G", store_path_root_dir=str(tmp_path / "store"), **settings)
        return Emulator(cfg)
    return make


rpc = method_callable


async def get(http, path):  # noqa: ANN001, ANN201
    async with http.get(path) as r:
        assert r.status == 200, await r.text()
        return await r.json()


async def grpc_perms(channel, topic):  # noqa: ANN001, ANN201
    r = v2.QueryRouteRequest()
    r.topic.name = topic
    answer = await rpc(channel, "QueryRoute")(r, metadata=MD)
    return answer.status.code, {q.permission for q in answer.message_queues}


async def fronts_agree(emu, admin, channel, http, topics):  # noqa: ANN001, ANN201
    """Each topic's perm: the read model's route, the name server's, the dashboard's routePerm, gRPC's queues."""
    model = emu.read_model()
    listed = {t["topic"]: t for t in await get(http, "/api/topics")}
    seen = {}
    for topic in topics:
        perm = model.route(topic).perm
        name_server = {qd.perm for qd in (await admin.topic_route(topic)).queue_datas}
        detail = await get(http, f"/api/topics/{topic}")
        code, queues = await grpc_perms(channel, topic)
        assert name_server == {perm}, topic
        assert listed[topic]["routePerm"] == detail["routePerm"] == perm, topic
        assert code == C.OK and queues == {GRPC_PERM[perm]}, topic
        seen[topic] = perm
    return seen


async def test_every_front_gives_the_registered_perm_of_a_read_write_broker_and_a_read_only_topic(start):
    async with start() as emu, Admin(namesrv=emu.namesrv_addr) as admin, \
            grpc.aio.insecure_channel(f"127.0.0.1:{emu.grpc.port}") as channel, \
            aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http:
        await admin.create_topic("RO", 2, 2, perm=4, broker_addr=emu.broker.broker_addr)
        assert await fronts_agree(emu, admin, channel, http, ["T", "RO"]) == {"T": 6, "RO": 4}
        listed = {t["topic"]: t for t in await get(http, "/api/topics")}
        assert listed["RO"]["perm"] == 4 and listed["T"]["perm"] == 6


async def test_every_front_gives_the_registered_perm_of_a_read_only_broker(start):
    async with start(broker_permission=4) as emu, Admin(namesrv=emu.namesrv_addr) as admin, \
            grpc.aio.insecure_channel(f"127.0.0.1:{emu.grpc.port}") as channel, \
            aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http:
        assert await fronts_agree(emu, admin, channel, http, ["T", "RO"]) == {"T": 4, "RO": 4}
        overview = await get(http, "/api/overview")
        assert overview["brokers"][0]["permission"] == 4
        listed = {t["topic"]: t for t in await get(http, "/api/topics")}
        assert listed["T"]["perm"] == 6  # the topic's own perm is kept; its route is the broker's


async def test_the_topic_lists_are_the_read_models_and_system_topics_are_refused_by_grpc(start):
    async with start() as emu, Admin(namesrv=emu.namesrv_addr) as admin, \
            grpc.aio.insecure_channel(f"127.0.0.1:{emu.grpc.port}") as channel, \
            aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http:
        model = emu.read_model()
        users = [t["topic"] for t in await get(http, "/api/topics")]
        every = {t["topic"]: t["kind"] for t in await get(http, "/api/topics?system=true")}
        assert users == [tc.topic_name for tc in model.topics()] == ["RO", "T"]
        assert sorted(every) == [tc.topic_name for tc in model.topics(system=True)]
        assert every == {t: model.topic_kind(t) for t in every}
        system = sorted(t for t, kind in every.items() if kind == "system")
        assert {"TBW102", "SCHEDULE_TOPIC_XXXX", "DefaultCluster", "broker-a"} <= set(system)
        assert set(every) <= set(await admin.topic_list())  # the name server has what the broker registers
        for topic in system:
            code, _ = await grpc_perms(channel, topic)
            assert code == C.ILLEGAL_TOPIC, topic
        for topic in users:
            assert (await grpc_perms(channel, topic))[0] == C.OK


async def send(channel, topic, n):  # noqa: ANN001, ANN201
    for i in range(n):
        m = v2.Message(body=f"m{i}".encode())
        m.topic.name = topic
        m.system_properties.message_id = f"01READMODEL{i:04d}"
        m.system_properties.message_type = v2.MessageType.NORMAL
        answer = await rpc(channel, "SendMessage")(v2.SendMessageRequest(messages=[m]), metadata=MD)
        assert answer.status.code == C.OK, answer


async def receive(channel, topic, group, batch):  # noqa: ANN001, ANN201
    r = v2.ReceiveMessageRequest(batch_size=batch)
    r.group.name = group
    r.message_queue.topic.name = topic
    r.message_queue.broker.name = "broker-a"
    r.filter_expression.type = v2.FilterType.TAG
    r.filter_expression.expression = "*"
    r.invisible_duration.seconds = 60
    r.long_polling_timeout.seconds = 1
    return [a.message async for a in rpc(channel, "ReceiveMessage")(r, metadata=MD, timeout=10)
            if a.HasField("message")]


async def test_a_pop_groups_unacked_messages_on_the_dashboard_are_the_read_models(start):
    async with start() as emu, grpc.aio.insecure_channel(f"127.0.0.1:{emu.grpc.port}") as channel, \
            aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http:
        await send(channel, "T", 6)
        got = []
        for _ in range(5):
            got += await receive(channel, "T", "G", 4)
            if len(got) >= 6:
                break
        assert len(got) == 6
        ack = v2.AckMessageRequest()
        ack.group.name, ack.topic.name = "G", "T"
        for m in got[:2]:
            ack.entries.add(message_id=m.system_properties.message_id,
                            receipt_handle=m.system_properties.receipt_handle)
        assert (await rpc(channel, "AckMessage")(ack, metadata=MD)).status.code == C.OK
        model = emu.read_model()
        unacked = model.unacked("G")
        assert len(unacked) == 4 == model.inflight("G")
        detail = await get(http, "/api/groups/G")
        assert [(u["topic"], u["queueId"], u["offset"], u["invisibleUntil"]) for u in detail["unacked"]] == \
            [(u.topic, u.queue_id, u.offset, u.invisible_until) for u in unacked]
        assert detail["popInflight"] == 4 and detail["state"] == "pop"
        listed = {g["group"]: g for g in await get(http, "/api/groups")}
        assert listed["G"]["inflight"] == 4 and sorted(listed) == model.user_groups()
        progress = model.progress("G")
        assert {(mq.queue_id, w.consumer_offset) for mq, w in progress.offset_table.items()} == \
            {(q["queueId"], q["consumerOffset"]) for q in detail["queues"] if q["topic"] == "T"}


async def test_the_fronts_are_handed_read_models_of_the_running_brokers(tmp_path):
    cfg = emulator_config(namesrv_port=0, listen_port=0, topics="T:1", store_path_root_dir=str(tmp_path / "s"))
    async with Emulator(cfg) as emu:
        fronts = emu.fronts()
        assert [f.name for f in fronts] == ["broker-a"] and isinstance(fronts[0], BrokerFront)
        assert isinstance(fronts[0].read, ReadModel) and fronts[0].read is emu.read_model("broker-a")
        assert fronts[0].write is emu.broker
        await emu.stop_broker("broker-a")
        assert emu.fronts() == []
        await emu.start_broker("broker-a")
        assert [f.write for f in emu.fronts()] == [emu.broker]  # the new controller, with a read model over it
        assert emu.read_model().route("T").perm == 6
