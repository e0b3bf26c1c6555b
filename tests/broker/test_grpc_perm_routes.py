"""A broker's and a topic's write permission seen the same way by both fronts of a running emulator: the name
server's route (GET_ROUTEINFO_BY_TOPIC, what the broker registers) and the gRPC endpoint's QueryRoute,
QueryAssignment and SendMessage. A read-only broker (brokerPermission=4, at start or by UPDATE_BROKER_CONFIG) or
topic (updateTopic -p 4) has READ queues on both, and a 5.x send to it is refused FORBIDDEN as the 5.3.3 proxy
refuses a route without a writable queue, with nothing stored; a write-only broker has no queue to assign."""

from __future__ import annotations

import grpc
import pytest

from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.client import Admin
from rocketmq_emulator.protocol import RequestCode
from rocketmq_emulator.protocol.grpc_v2 import method_callable, v2

C = v2.Code
P = v2.Permission
MD = (("x-mq-client-id", "perm-test-client"),)
NO_WRITABLE_QUEUE = "org.apache.rocketmq.proxy.common.ProxyException: no writable queue"


@pytest.fixture
def start(tmp_path):
    def make(**settings):  # noqa: ANN003, ANN202
        cfg = emulator_config(namesrv_port=0, listen_port=0, grpc_server_port=0, topics="T:2", groups="G",
                              store_path_root_dir=str(tmp_path / "store"), **settings)
        return Emulator(cfg)
    return make


rpc = method_callable


async def query_route(channel, topic):  # noqa: ANN001, ANN201
    r = v2.QueryRouteRequest()
    r.topic.name = topic
    return await rpc(channel, "QueryRoute")(r, metadata=MD)


async def query_assignment(channel, topic, group="G"):  # noqa: ANN001, ANN201
    r = v2.QueryAssignmentRequest()
    r.topic.name, r.group.name = topic, group
    return await rpc(channel, "QueryAssignment")(r, metadata=MD)


async def send(channel, topic, message_id="01PERM"):  # noqa: ANN001, ANN201
    m = v2.Message(body=b"hello")
    m.topic.name = topic
    m.system_properties.message_id = message_id
    m.system_properties.message_type = v2.MessageType.NORMAL
    return await rpc(channel, "SendMessage")(v2.SendMessageRequest(messages=[m]), metadata=MD)


def stored(emu, topic):  # noqa: ANN001, ANN201
    tc = emu.broker.topic_config_manager.get(topic)
    return sum(max(0, emu.broker.store.get_max_offset_in_queue(topic, q)) for q in range(tc.write_queue_nums))


async def name_server_perms(admin, topic):  # noqa: ANN001, ANN201
    return sorted({qd.perm for qd in (await admin.topic_route(topic)).queue_datas})


async def set_broker_permission(admin, emu, value):  # noqa: ANN001, ANN201
    await admin.instance.api.call(emu.broker.broker_addr, RequestCode.UPDATE_BROKER_CONFIG,
                                  body=f"brokerPermission={value}".encode(), operation="updateBrokerConfig")


async def test_a_read_only_broker_from_the_start_has_read_queues_and_refuses_a_5x_send(start):
    async with start(broker_permission=4) as emu, Admin(namesrv=emu.namesrv_addr) as admin, \
            grpc.aio.insecure_channel(f"127.0.0.1:{emu.grpc.port}") as channel:
        assert await name_server_perms(admin, "T") == [4]
        route = await query_route(channel, "T")
        assert route.status.code == C.OK and {q.permission for q in route.message_queues} == {P.READ}
        assignment = await query_assignment(channel, "T")
        assert assignment.status.code == C.OK
        assert [a.message_queue.permission for a in assignment.assignments] == [P.READ]
        refused = await send(channel, "T")
        assert (refused.status.code, refused.status.message) == (C.FORBIDDEN, NO_WRITABLE_QUEUE)
        assert not refused.entries and stored(emu, "T") == 0


async def test_the_broker_permission_changed_at_run_time_changes_both_fronts_routes_and_the_send(start):
    async with start() as emu, Admin(namesrv=emu.namesrv_addr) as admin, \
            grpc.aio.insecure_channel(f"127.0.0.1:{emu.grpc.port}") as channel:
        assert (await send(channel, "T", "01RW")).status.code == C.OK
        assert {q.permission for q in (await query_route(channel, "T")).message_queues} == {P.READ_WRITE}

        await set_broker_permission(admin, emu, 4)  # read only
        assert await name_server_perms(admin, "T") == [4]
        assert {q.permission for q in (await query_route(channel, "T")).message_queues} == {P.READ}
        refused = await send(channel, "T", "01RO")
        assert (refused.status.code, refused.status.message) == (C.FORBIDDEN, NO_WRITABLE_QUEUE)
        assert stored(emu, "T") == 1

        await set_broker_permission(admin, emu, 2)  # write only: sends go, nothing to assign
        assert await name_server_perms(admin, "T") == [2]
        assert {q.permission for q in (await query_route(channel, "T")).message_queues} == {P.WRITE}
        none = await query_assignment(channel, "T")
        assert (none.status.code, none.status.message) == (C.FORBIDDEN, "no readable queue")
        assert (await send(channel, "T", "01WO")).status.code == C.OK

        await set_broker_permission(admin, emu, 6)
        assert await name_server_perms(admin, "T") == [6]
        assert {q.permission for q in (await query_route(channel, "T")).message_queues} == {P.READ_WRITE}
        assert (await send(channel, "T", "01RW2")).status.code == C.OK
        assert stored(emu, "T") == 3


async def test_a_read_only_topic_is_read_on_both_fronts_and_refuses_a_5x_send(start):
    async with start() as emu, Admin(namesrv=emu.namesrv_addr) as admin, \
            grpc.aio.insecure_channel(f"127.0.0.1:{emu.grpc.port}") as channel:
        await admin.update_topic("RO", 2, 2, perm=4)  # mqadmin updateTopic -t RO -r 2 -w 2 -p 4
        assert await name_server_perms(admin, "RO") == [4]
        route = await query_route(channel, "RO")
        assert route.status.code == C.OK and [q.permission for q in route.message_queues] == [P.READ, P.READ]
        refused = await send(channel, "RO")
        assert (refused.status.code, refused.status.message) == (C.FORBIDDEN, NO_WRITABLE_QUEUE)
        assert stored(emu, "RO") == 0
        assert (await query_assignment(channel, "RO")).status.code == C.OK  # readable: consumers still get it
        await admin.update_topic("RO", 2, 2, perm=6)
        assert (await send(channel, "RO")).status.code == C.OK and stored(emu, "RO") == 1


@pytest.mark.parametrize("compat, registered", [(None, [0]), ("4.9", [4])])
async def test_a_write_only_topic_on_a_read_only_broker_is_registered_as_each_version_does(start, compat, registered):
    """5.x registers the topic's perm AND the broker's (2 & 4: neither readable nor writable); 4.9.8 registers the
    broker's permission in its place (4: readable)."""
    settings = {"broker_permission": 4, **({"compat": compat} if compat else {})}
    async with start(**settings) as emu, Admin(namesrv=emu.namesrv_addr) as admin:
        await admin.update_topic("WO", 1, 1, perm=2)
        assert await name_server_perms(admin, "WO") == registered
