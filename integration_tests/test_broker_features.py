"""Broker features over raw TCP: client bookkeeping and NOTIFY, expiry, backpressure, send-back and DLQ,
message lookups, topic administration, queue locks, configuration, and two brokers in one process."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.cli.main import build_parser
from rocketmq_emulator.cli.serve import config_from_args
from rocketmq_emulator.store.config import FlushDiskType
from rocketmq_emulator.client import Admin
from rocketmq_emulator.broker.emulator import Emulator, second_broker
from rocketmq_emulator.protocol.transport import MAX_IN_FLIGHT
from integration_tests.cppclient import run_driver
from integration_tests.rawclient import RawClient, pull_request, send_request
from rocketmq_emulator.testing.emulator_thread import EmulatorThread
from rocketmq_emulator.testing.ports import free_broker_port, free_port
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode, encode_command, encode_command_bytes
from rocketmq_emulator.protocol.admin_bodies import TopicConfigSerializeWrapper, TopicStatsTable
from rocketmq_emulator.protocol.bodies import (ConsumerConnection, ConsumerData, GetConsumerListByGroupResponseBody,
                                               HeartbeatData, LockBatchRequestBody, LockBatchResponseBody, MessageQueue,
                                               SubscriptionData, TopicRouteData)
from rocketmq_emulator.protocol.message import decode_messages, decode_message_id


def heartbeat(client_id: str, group: str, topic: str = "HB") -> RemotingCommand:
    data = HeartbeatData(client_id=client_id, consumer_data_set=[ConsumerData(
        group_name=group, subscription_data_set=[SubscriptionData(topic=topic, sub_string="*", sub_version=1)])])
    return RemotingCommand.request(RequestCode.HEART_BEAT, body=data.encode())


def test_heartbeat_registers_and_notifies_group_members(emulator):
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as a, \
                await RawClient.connect("127.0.0.1", emulator.broker_port) as b:
            assert (await a.request(heartbeat("client-a", "NG"))).code == ResponseCode.SUCCESS
            first = await asyncio.wait_for(a.server_requests.get(), 5)  # the joiner is told too
            await b.request(heartbeat("client-b", "NG"))
            to_a = await asyncio.wait_for(a.server_requests.get(), 5)
            to_b = await asyncio.wait_for(b.server_requests.get(), 5)
            ids = await a.request(RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                                          {"consumerGroup": "NG"}))
            conns = await a.request(RemotingCommand.request(RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                                            {"consumerGroup": "NG"}))
            await b.request(RemotingCommand.request(RequestCode.UNREGISTER_CLIENT,
                                                    {"clientID": "client-b", "consumerGroup": "NG"}))
            after_leave = await asyncio.wait_for(a.server_requests.get(), 5)
            unknown = await a.request(RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                                              {"consumerGroup": "Nobody"}))
            return first, to_a, to_b, ids, conns, after_leave, unknown
    first, to_a, to_b, ids, conns, after_leave, unknown = asyncio.run(scenario())
    for notify in (first, to_a, to_b, after_leave):
        assert notify.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED and notify.ext_fields == {"consumerGroup": "NG"}
        assert notify.is_oneway
    assert sorted(GetConsumerListByGroupResponseBody.decode(ids.body).consumer_id_list) == ["client-a", "client-b"]
    cc = ConsumerConnection.decode(conns.body)
    assert sorted(c.client_id for c in cc.connection_set) == ["client-a", "client-b"]
    assert set(cc.subscription_table) == {"HB"}
    assert unknown.code == ResponseCode.SYSTEM_ERROR and "no consumer for this group" in unknown.remark
    # the heartbeat created the group's retry topic
    assert emulator.call(lambda: emulator.broker.topic_config_manager.get("%RETRY%NG") is not None)


def test_silent_channel_expires(emulator_factory):
    emu = emulator_factory(channel_expired_timeout_second=0.5)

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emu.broker_port) as c:
            await c.request(heartbeat("quiet", "EG"))
            await asyncio.wait_for(c.closed, 10)  # the broker closes a channel silent for longer than the expiry
    asyncio.run(scenario())
    assert emu.call(lambda: emu.broker.consumer_manager.get("EG")) is None


def test_backpressure_pauses_reading_then_resumes(emulator):
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            await c.request(send_request("BP"))
            held = [c.send(pull_request("BP", 1)) for _ in range(MAX_IN_FLIGHT + 10)]
            await asyncio.sleep(0.5)
            paused = emulator.call(lambda: [conn._reading_paused for conn in emulator.broker.server.connections])
            late = c.send(send_request("BP", b"wakes everyone"))  # read only once the held pulls drain
            answers = await asyncio.wait_for(asyncio.gather(*held), 30)
            return paused, await asyncio.wait_for(late, 10), answers
    paused, late, answers = asyncio.run(scenario())
    assert paused == [True]
    assert late.code == ResponseCode.SUCCESS
    assert {a.code for a in answers} <= {ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND}


def test_send_back_retries_then_dead_letters(emulator_factory):
    emu = emulator_factory(message_delay_level=" ".join(["1s"] * 18))

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emu.broker_port) as c:
            sent = await c.request(send_request("SB", b"payload", KEYS="k1"))
            offset = decode_message_id(sent.ext_fields["msgId"])[2]
            back = await c.request(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
                "offset": str(offset), "group": "SBG", "delayLevel": "0", "originMsgId": sent.ext_fields["msgId"]}))
            dlq = await c.request(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
                "offset": str(offset), "group": "SBG", "delayLevel": "-1"}))
            missing = await c.request(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
                "offset": "99999999", "group": "SBG", "delayLevel": "0"}))
            return back, dlq, missing
    back, dlq, missing = asyncio.run(scenario())
    assert back.code == dlq.code == ResponseCode.SUCCESS
    assert missing.code == ResponseCode.SYSTEM_ERROR and "look message by offset failed" in missing.remark

    def queue(topic: str, q: int = 0):
        res = emu.broker.store.get_message("t", topic, q, 0, 32, None)
        return [] if res is None else decode_messages(res.body())
    dead = emu.call(lambda: queue("%DLQ%SBG"))
    assert [m.body for m in dead] == [b"payload"] and dead[0].reconsume_times == 1
    deadline = time.monotonic() + 10  # the retry is parked for delay level 3 (1 s here), then delivered
    while not emu.call(lambda: queue("%RETRY%SBG")) and time.monotonic() < deadline:
        time.sleep(0.1)
    (retried,) = emu.call(lambda: queue("%RETRY%SBG"))
    assert retried.body == b"payload" and retried.reconsume_times == 1
    assert retried.properties["RETRY_TOPIC"] == "SB"
    # the parked message's properties are kept, as 4.9.8 delivers it (parity corpus send_stored_messages)
    assert (retried.properties["DELAY"], retried.properties["REAL_TOPIC"]) == ("3", "%RETRY%SBG")
    assert retried.store_timestamp - dead[0].store_timestamp >= 900


def test_reconsume_times_over_max_go_to_dlq_on_send(emulator):
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            req = send_request("%RETRY%MG", b"tired")
            req.ext_fields["j"] = "16"  # reconsumeTimes = retryMaxTimes
            return await c.request(req)
    resp = asyncio.run(scenario())
    assert resp.code == ResponseCode.SUCCESS
    assert emulator.call(lambda: emulator.broker.store.get_max_offset_in_queue("%DLQ%MG", 0)) == 1


def test_view_and_query_message(emulator):
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            sent = await c.request(send_request("QM", b"findme", KEYS="order-1 order-2"))
            offset = decode_message_id(sent.ext_fields["msgId"])[2]
            view = await c.request(RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(offset)}))
            by_key = await c.request(RemotingCommand.request(RequestCode.QUERY_MESSAGE, {
                "topic": "QM", "key": "order-2", "maxNum": "32", "beginTimestamp": "0",
                "endTimestamp": str(2 ** 62)}))
            none = await c.request(RemotingCommand.request(RequestCode.QUERY_MESSAGE, {
                "topic": "QM", "key": "nope", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": "0"}))
            bad = await c.request(RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": "12345678"}))
            return view, by_key, none, bad
    view, by_key, none, bad = asyncio.run(scenario())
    assert [m.body for m in decode_messages(view.body)] == [b"findme"]
    assert [m.keys for m in decode_messages(by_key.body)] == ["order-1 order-2"]
    assert none.code == ResponseCode.QUERY_NOT_FOUND
    assert bad.code == ResponseCode.SYSTEM_ERROR


def test_topic_administration(emulator):
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c, \
                await RawClient.connect("127.0.0.1", emulator.namesrv_port) as ns:
            create = {"topic": "Admin", "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "2",
                      "perm": "6", "topicFilterType": "SINGLE_TAG", "order": "false"}
            created = await c.request(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create))
            system = await c.request(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC,
                                                             {**create, "topic": "TBW102"}))
            route = await ns.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Admin"}))
            await c.request(send_request("Admin"))
            stats = await c.request(RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "Admin"}))
            all_topics = await c.request(RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG))
            deleted = await c.request(RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "Admin"}))
            # as on 4.9.8, the name server keeps the route until it is told (mqadmin deleteTopic sends both)
            kept = await ns.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Admin"}))
            await ns.request(RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "Admin"}))
            gone = await ns.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Admin"}))
            stats_gone = await c.request(RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "Admin"}))
            return created, system, route, stats, all_topics, deleted, kept, gone, stats_gone
    created, system, route, stats, all_topics, deleted, kept, gone, stats_gone = asyncio.run(scenario())
    assert created.code == ResponseCode.SUCCESS and system.code == ResponseCode.SYSTEM_ERROR
    assert TopicRouteData.decode(route.body).queue_datas[0].read_queue_nums == 2
    table = TopicStatsTable.decode(stats.body).offset_table
    assert {mq.queue_id: (o.min_offset, o.max_offset) for mq, o in table.items()} == {0: (0, 1), 1: (0, 0)}
    assert table[MessageQueue("Admin", "broker-a", 0)].last_update_timestamp > 0
    assert "Admin" in TopicConfigSerializeWrapper.decode(all_topics.body).topic_config_table
    assert deleted.code == ResponseCode.SUCCESS and kept.code == ResponseCode.SUCCESS
    assert gone.code == ResponseCode.TOPIC_NOT_EXIST and stats_gone.code == ResponseCode.TOPIC_NOT_EXIST


def test_queue_locks(emulator):
    mqs = {MessageQueue("L", "broker-a", 0), MessageQueue("L", "broker-a", 1)}

    def lock(client: str, code: int = RequestCode.LOCK_BATCH_MQ) -> RemotingCommand:
        return RemotingCommand.request(code, body=LockBatchRequestBody(consumer_group="LG", client_id=client,
                                                                       mq_set=mqs).encode())

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            a = await c.request(lock("a"))
            b = await c.request(lock("b"))
            await c.request(lock("a", RequestCode.UNLOCK_BATCH_MQ))
            b2 = await c.request(lock("b"))
            return a, b, b2
    a, b, b2 = asyncio.run(scenario())
    assert LockBatchResponseBody.decode(a.body).lock_ok_mq_set == mqs
    assert LockBatchResponseBody.decode(b.body).lock_ok_mq_set == set()
    assert LockBatchResponseBody.decode(b2.body).lock_ok_mq_set == mqs


def test_config_precedence_broker_conf_env_flags(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-x\nbrokerClusterName=C1\nlistenPort=30911\nbrokerIP1=10.1.2.3\n"
                    "fileReservedTime=1\ndeleteWhen=01;02\nflushDiskType=SYNC_FLUSH\nautoCreateTopicEnable=false\n"
                    "defaultTopicQueueNums=2\nsomethingNew=1\n# comment\n")
    args = build_parser().parse_args(["serve", "--config", str(conf), "--broker-name", "from-flag"])
    cfg = config_from_args(args, {"ROCKETMQ_EMULATOR_CLUSTER_NAME": "from-env", "ROCKETMQ_EMULATOR_BROKER_NAME": "env"})
    b = cfg.broker
    assert b.broker_name == "from-flag"  # flag beats env beats file
    assert b.broker_cluster_name == "from-env"
    assert (b.listen_port, b.broker_ip1, b.store.file_reserved_time, b.store.delete_when) == \
        (30911, "10.1.2.3", 1, "01;02")
    assert b.store.flush_disk_type is FlushDiskType.SYNC_FLUSH and b.auto_create_topic_enable is False
    assert b.default_topic_queue_nums == 2 and cfg.unknown_keys == ("somethingNew",)


def test_topics_groups_and_advertised_defaults_from_flags_and_environment(tmp_path):
    from rocketmq_emulator.broker.config import primary_address
    args = build_parser().parse_args(["serve", "--topic", "orders:3,pay", "--topic", "audit:1", "--group", "g1"])
    cfg = config_from_args(args, {"ROCKETMQ_EMULATOR_TOPICS": "ignored:2", "ROCKETMQ_EMULATOR_GROUPS": "g2,g3"})
    assert cfg.topics == (("orders", 3), ("pay", 8), ("audit", 1))  # flags win over the environment
    assert cfg.groups == ("g1",)
    cfg = config_from_args(build_parser().parse_args(["serve"]),
                           {"ROCKETMQ_EMULATOR_TOPICS": "a:2, b", "ROCKETMQ_EMULATOR_GROUPS": "g2,g3",
                            "ROCKETMQ_EMULATOR_HOST": "0.0.0.0"})
    assert (cfg.topics, cfg.groups) == ((("a", 2), ("b", 8)), ("g2", "g3"))
    assert cfg.broker.broker_ip1 == primary_address() != "0.0.0.0"
    cfg = config_from_args(build_parser().parse_args(["serve", "--host", "0.0.0.0", "--advertised-port", "20911"]),
                           {})
    assert (cfg.broker.broker_ip1, cfg.broker.advertised_port) == ("127.0.0.1", 20911)  # published on this host


def test_configured_topics_and_groups_exist_at_start(emulator_factory):
    emu = emulator_factory(topics=[("orders", 3), ("TBW102", 8)], groups=["billing"])

    async def scenario():
        async with Admin(emu.namesrv_addr) as admin:
            return await admin.topic_status("orders")
    assert len(asyncio.run(scenario())) == 3
    assert "billing" in emu.broker.subscription_group_manager.table


def test_advertised_address_in_routes_and_message_ids(emulator_factory):
    emu = emulator_factory(broker_ip1="203.0.113.9", advertised_port=20911)

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emu.namesrv_port) as ns, \
                await RawClient.connect("127.0.0.1", emu.broker_port) as c:
            sent = await c.request(send_request("Adv"))
            route = await ns.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Adv"}))
            return sent, route
    sent, route = asyncio.run(scenario())
    assert TopicRouteData.decode(route.body).broker_datas[0].broker_addrs == {0: "203.0.113.9:20911"}
    assert decode_message_id(sent.ext_fields["msgId"])[:2] == ("203.0.113.9", 20911)


def test_two_brokers_behind_one_name_server(tmp_path):
    cfg = emulator_config(namesrv_port=free_port(), listen_port=free_broker_port(),
                          store_path_root_dir=str(tmp_path / "a"), mapped_file_size_commit_log=1 << 24)
    other = replace(second_broker(cfg.broker), listen_port=free_broker_port())

    async def scenario():
        async with Emulator(cfg, [other]) as emu:
            for port in (cfg.broker.listen_port, other.listen_port):
                async with await RawClient.connect("127.0.0.1", port) as c:
                    assert (await c.request(send_request("Both"))).code == ResponseCode.SUCCESS
            async with await RawClient.connect("127.0.0.1", emu.namesrv.port) as ns:
                return await ns.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Both"}))
    route = TopicRouteData.decode(asyncio.run(scenario()).body)
    assert sorted(q.broker_name for q in route.queue_datas) == ["broker-a", "broker-b"]
    assert sorted(b.broker_addrs[0] for b in route.broker_datas) == sorted(
        [f"127.0.0.1:{cfg.broker.listen_port}", f"127.0.0.1:{other.listen_port}"])


def test_cpp_batch_send_stores_each_message(emulator, cpp_home):
    events = run_driver(["produce", "--namesrv", emulator.namesrv_addr, "--topic", "CppBatch", "--count", "10",
                         "--batch", "5", "--tags", "T{i}", "--keys", "k{i}"], timeout=60, home=cpp_home).events
    assert [e["status"] for e in events if e["event"] == "sent"] == ["OK", "OK"]

    def read():
        out = []
        for q in range(4):
            res = emulator.broker.store.get_message("t", "CppBatch", q, 0, 32, None)
            if res is not None and res.messages:
                out += decode_messages(res.body())
        return out
    msgs = emulator.call(read)
    assert sorted((m.tags, m.keys) for m in msgs) == sorted((f"T{i}", f"k{i}") for i in range(10))
    assert all(m.properties["CLUSTER"] == "DefaultCluster" for m in msgs)


def test_delay_level_on_send_delivers_later(emulator_factory):
    emu = emulator_factory(message_delay_level="1s 2s 3s")

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emu.broker_port) as c:
            sent_at = time.time()
            resp = await c.request(send_request("Delayed", b"later", DELAY="1"))
            assert resp.code == ResponseCode.SUCCESS
            assert emu.call(lambda: emu.broker.store.get_max_offset_in_queue("Delayed", 0)) == 0
            pulled = await c.request(pull_request("Delayed", 0, suspend_ms=5000), timeout=10)
            return sent_at, time.time(), pulled
    sent_at, got_at, pulled = asyncio.run(scenario())
    (msg,) = decode_messages(pulled.body)
    assert msg.body == b"later" and msg.topic == "Delayed"
    # as 4.9.8 delivers a due message: the parked properties kept (parity corpus send_stored_messages)
    assert (msg.properties["DELAY"], msg.properties["REAL_TOPIC"], msg.properties["REAL_QID"]) == ("1", "Delayed", "0")
    assert 0.9 <= got_at - sent_at < 4


def test_pull_filters_by_tag(emulator):
    def pull(tags: str | None, offset: int = 0, group: str = "TF") -> RemotingCommand:
        req = pull_request("Tagged", offset, suspend_ms=0, group=group)
        if tags is None:  # use the subscription registered by heartbeat instead of the one in the request
            req.ext_fields["sysFlag"] = "0"
            req.ext_fields.pop("subscription")
        else:
            req.ext_fields["subscription"] = tags
        return req

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            for tag in ("TagA", "TagB", "TagA", "TagC"):
                await c.request(send_request("Tagged", tag.encode(), TAGS=tag))
            a_or_c = await c.request(pull("TagA || TagC"))
            everything = await c.request(pull("*"))
            none = await c.request(pull("TagZ"))
            data = HeartbeatData(client_id="hb", consumer_data_set=[ConsumerData(group_name="TF2", subscription_data_set=[
                SubscriptionData(topic="Tagged", sub_string="TagB", tags_set=["TagB"], code_set=[2598920],  # hash("TagB")
                                 sub_version=1)])])  # a client sends the tags' hash codes: the broker filters by them
            await c.request(RemotingCommand.request(RequestCode.HEART_BEAT, body=data.encode()))
            registered = await c.request(pull(None, group="TF2"))
            unregistered = await c.request(pull(None, group="NoHeartbeat"))
            return a_or_c, everything, none, registered, unregistered
    a_or_c, everything, none, registered, unregistered = asyncio.run(scenario())
    assert [m.body for m in decode_messages(a_or_c.body)] == [b"TagA", b"TagA", b"TagC"]
    assert a_or_c.ext_fields["nextBeginOffset"] == "4"
    assert len(decode_messages(everything.body)) == 4
    assert none.code == ResponseCode.PULL_RETRY_IMMEDIATELY and none.remark == "NO_MATCHED_MESSAGE"
    assert none.ext_fields["nextBeginOffset"] == "4"
    assert [m.body for m in decode_messages(registered.body)] == [b"TagB"]
    assert unregistered.code == ResponseCode.SUBSCRIPTION_NOT_EXIST


def test_broker_initiated_request_gets_the_clients_response(emulator):
    """The broker side of RESET/GET_CONSUMER_STATUS: a request to a client, answered by opaque."""
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            await c.request(heartbeat("answering", "IG"))
            await asyncio.wait_for(c.server_requests.get(), 5)  # the NOTIFY of its own join
            conn = emulator.call(lambda: next(iter(emulator.broker.server.connections)))
            request = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
                                              {"topic": "T", "group": "IG"})
            pending = asyncio.run_coroutine_threadsafe(conn.invoke(request, timeout=5), emulator.loop)
            got = await asyncio.wait_for(c.server_requests.get(), 5)
            c.transport.writelines(encode_command(RemotingCommand.response_to(got, body=b'{"messageQueueTable":{}}')))
            return got, await asyncio.wrap_future(pending)
    got, answer = asyncio.run(scenario())
    assert got.code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT and not got.is_oneway
    assert answer.code == ResponseCode.SUCCESS and answer.body == b'{"messageQueueTable":{}}'


def test_broker_runtime_info(emulator):
    from rocketmq_emulator.protocol.bodies import KVTable

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            await c.request(send_request("RT"))
            return await c.request(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO))
    table = KVTable.decode(asyncio.run(scenario()).body).table
    assert int(table["commitLogMaxOffset"]) > int(table["commitLogMinOffset"]) == 0
    assert table["brokerVersion"] == "409"


def test_full_disk_answers_service_not_available_and_keeps_acked_data(tiny_fs):
    emu = EmulatorThread(tiny_fs / "store", mapped_file_size_commit_log=64 * 1024 * 1024).start()
    ballast = tiny_fs / "ballast"
    ballast.write_bytes(b"\1" * (8 * 1024 * 1024))
    try:
        async def scenario():
            acked, refused = [], None
            async with await RawClient.connect("127.0.0.1", emu.broker_port) as c:
                for i in range(400_000):
                    resp = await c.request(send_request("Full", b"x" * 200 + str(i).encode()))
                    if resp.code == ResponseCode.SUCCESS:
                        acked.append(int(resp.ext_fields["queueOffset"]))
                    else:
                        refused = resp
                        break
                ballast.unlink()
                for _ in range(50):  # the store looks at the disk again at most once a second
                    after = await c.request(send_request("Full", b"after"))
                    if after.code == ResponseCode.SUCCESS:
                        break
                    await asyncio.sleep(0.1)
                first = await c.request(pull_request("Full", 0, suspend_ms=0))
            return acked, refused, after, first
        acked, refused, after, first = asyncio.run(scenario())
    finally:
        emu.close()
    assert refused is not None and refused.code == ResponseCode.SERVICE_NOT_AVAILABLE, refused
    assert len(acked) > 10_000
    assert after.code == ResponseCode.SUCCESS
    assert first.code == ResponseCode.SUCCESS and decode_messages(first.body)[0].body == b"x" * 200 + b"0"


def test_a_client_that_stops_reading_pauses_its_connection_only(emulator):
    """Honour the transport's pause/resume writing: a peer that does not read gets its connection paused
    (the broker stops reading from it) instead of the broker buffering without bound; others are unaffected."""
    import socket
    import struct
    big = b"y" * (512 * 1024)

    async def fill():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            for _ in range(16):
                assert (await c.request(send_request("Slow", big))).code == ResponseCode.SUCCESS
    asyncio.run(fill())

    stalled = socket.create_connection(("127.0.0.1", emulator.broker_port))
    for i in range(64):  # 64 pulls of up to 8 MiB each, never read
        req = pull_request("Slow", 0, suspend_ms=0)
        req.opaque = i
        stalled.sendall(encode_command_bytes(req))
    deadline = time.monotonic() + 10

    def states():
        return [(c._writing_paused, c._reading_paused) for c in emulator.broker.server.connections]
    while (True, True) not in emulator.call(states) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (True, True) in emulator.call(states)

    async def other_client():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            return await c.request(send_request("Slow", b"still served"), timeout=5)
    assert asyncio.run(other_client()).code == ResponseCode.SUCCESS

    # reading everything resumes the stalled connection; every pull gets its full answer
    stalled.settimeout(10)
    buf = bytearray()
    answers = 0
    while answers < 64:
        buf += stalled.recv(1 << 20)
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from(">i", buf)[0]:
            del buf[:4 + struct.unpack_from(">i", buf)[0]]
            answers += 1
    stalled.close()
    assert answers == 64


def test_consumer_offsets_reach_the_file_while_running(emulator_factory):
    emu = emulator_factory(flush_consumer_offset_interval=100)

    async def commit():
        async with await RawClient.connect("127.0.0.1", emu.broker_port) as c:
            resp = await c.request(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
                "consumerGroup": "Periodic", "topic": "PT", "queueId": "3", "commitOffset": "42"}))
            assert resp.code == ResponseCode.SUCCESS
    asyncio.run(commit())
    path = emu.store_dir / "config" / "consumerOffset.json"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not (path.exists() and "PT@Periodic" in path.read_text()):
        time.sleep(0.05)
    text = path.read_text()
    assert '"PT@Periodic":{3:42' in text.replace("\n", "").replace("\t", "")
