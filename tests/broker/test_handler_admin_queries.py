"""Admin queries answered as 4.9.8's AdminBrokerProcessor does (broker/handlers/admin_queries.py, admin_broker.py,
broker_config.py), where its behaviour is not what one would guess: each was seen on a real 4.9.8 broker (parity
corpus admin_*)."""

from __future__ import annotations

import json

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import TopicList

R = ResponseCode


async def test_correction_offsets_drop_the_filter_groups_offsets(harness):
    com = harness.broker.consumer_offset_manager
    for group, queue, offset in (("A", 0, 2), ("A", 1, 1), ("B", 0, 1), ("B", 1, 0)):
        com.commit_offset("test", group, "T", queue, offset)
    r = await harness.ask(RequestCode.QUERY_CORRECTION_OFFSET, {"topic": "T", "compareGroup": "A", "filterGroups": "B"})
    assert r.code == R.SUCCESS and r.body == b'{"correctionOffsets":{0:2,1:1}}'
    assert com.query_offset("B", "T", 0) == -1  # as on 4.9.8 (and 5.x): the filter group's offsets are gone


async def test_a_clone_without_a_topic_clones_nothing(harness):
    harness.broker.consumer_offset_manager.commit_offset("test", "A", "TBW102", 0, 3)
    r = await harness.ask(RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "A", "destGroup": "C", "offline": "true"})
    assert r.code == R.SUCCESS and harness.broker.consumer_offset_manager.query_offset("C", "TBW102", 0) == -1


async def test_query_cq_finds_a_queue_once_its_offsets_were_asked_for(harness):
    header = {"topic": "Nope", "queueId": "0", "index": "0", "count": "1"}
    before = await harness.ask(RequestCode.QUERY_CONSUME_QUEUE, header)
    assert (before.code, before.remark) == (R.SYSTEM_ERROR, "0@Nope is not exist!")
    await harness.ask(RequestCode.GET_MIN_OFFSET, {"topic": "Nope", "queueId": "0"})
    after = await harness.ask(RequestCode.QUERY_CONSUME_QUEUE, header)
    assert (after.code, after.remark, after.body) == (R.SUCCESS, "Index 0 of 0@Nope is not exist!", b"")


async def test_system_topics_are_4_9_8s_set_in_its_hash_set_order(harness):
    r = await harness.ask(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
    assert TopicList.decode(r.body).topic_list == [  # as the real broker answered (admin_runtime)
        "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRACE_TOPIC", "DefaultCluster_REPLY_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC", "BenchmarkTest", "TRANS_CHECK_MAX_TIME_TOPIC", "OFFSET_MOVED_EVENT", "TBW102",
        "broker-a", "SELF_TEST_TOPIC", "DefaultCluster"]
    deleted = await harness.ask(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "DefaultCluster_REPLY_TOPIC"})
    assert (deleted.code, deleted.remark) == (R.SYSTEM_ERROR,
                                              "The topic[DefaultCluster_REPLY_TOPIC] is conflict with system topic.")


async def test_delay_offsets_and_consume_time_span(harness):
    r = await harness.ask(RequestCode.GET_ALL_DELAY_OFFSET)
    assert r.code == R.SUCCESS and json.loads(r.body) == {"offsetTable": {}}
    unknown = await harness.ask(RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "Nope", "group": "G"})
    assert (unknown.code, unknown.remark) == (R.TOPIC_NOT_EXIST, "topic[Nope] not exist")


async def test_compat_4_9_reports_4_9_8s_keys_only(tmp_path):
    from rocketmq_emulator.protocol.bodies import KVTable
    from rocketmq_emulator.testing.broker_harness import BrokerHarness

    async with BrokerHarness(tmp_path / "store", compat="4.9") as broker:
        info = KVTable.decode((await broker.ask(RequestCode.GET_BROKER_RUNTIME_INFO)).body).table
        assert info["brokerVersionDesc"] == "V4_9_8" and "clockOffsetMillis" not in info
        text = (await broker.ask(RequestCode.GET_BROKER_CONFIG)).body.decode()
        keys = {line.split("=", 1)[0] for line in text.splitlines()}
        assert {"storePathCommitLog", "rocketmqHome", "brokerName"} <= keys
        assert not keys & {"compat", "newGroupOffset", "useServerSideResetOffset"}
        bad = await broker.ask(RequestCode.UPDATE_BROKER_CONFIG, body=b"maxMessageSize=2048\nsendMessageThreadPoolNums=x\n")
        assert bad.code == R.SUCCESS  # 4.9.8 drops the value it cannot parse and applies the rest
        after = (await broker.ask(RequestCode.GET_BROKER_CONFIG)).body.decode()
        assert "maxMessageSize=2048" in after.splitlines() and "sendMessageThreadPoolNums=x" not in after
