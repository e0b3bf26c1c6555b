"""Topic and subscription-group administration (broker/handlers/admin_broker.py) without sockets: what mqadmin's
updateTopic, deleteTopic, topicStatus, updateSubGroup and deleteSubGroup get."""

from __future__ import annotations

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import (ConsumeStats, SubscriptionGroupConfig, SubscriptionGroupWrapper,
                                                     TopicConfigSerializeWrapper, TopicStatsTable)
from rocketmq_emulator.protocol.bodies import GroupList, MessageQueue
from rocketmq_emulator.protocol.headers import (CreateTopicRequestHeader, DeleteSubscriptionGroupRequestHeader,
                                                GetConsumeStatsRequestHeader, QueueRequestHeader, TopicRequestHeader,
                                                UpdateConsumerOffsetRequestHeader)

R = ResponseCode


def create(topic, queues=8, perm=6, **kw):
    return CreateTopicRequestHeader(topic=topic, read_queue_nums=queues, write_queue_nums=queues, perm=perm, **kw)


async def topic_table(broker):
    return TopicConfigSerializeWrapper.decode((await broker.ask(RequestCode.GET_ALL_TOPIC_CONFIG)).body) \
        .topic_config_table


async def test_a_created_topic_has_its_queues_and_takes_messages_in_each(harness):
    assert (await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, create("Orders", 8, order=True))).code == R.SUCCESS
    tc = (await topic_table(harness))["Orders"]
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm, tc.order) == (8, 8, 6, True)
    assert (await harness.send("Orders", b"x", queue_id=7)).code == R.SUCCESS
    updated = await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, create("Orders", 2))
    assert updated.code == R.SUCCESS and (await topic_table(harness))["Orders"].write_queue_nums == 2


async def test_bad_topic_requests_are_refused_with_a_reason(harness):
    system = await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, create("SCHEDULE_TOPIC_XXXX"))
    assert (system.code, system.remark) == (R.SYSTEM_ERROR,
                                            "The topic[SCHEDULE_TOPIC_XXXX] is conflict with system topic.")
    no_queues = await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, create("Orders", 0))
    assert (no_queues.code, no_queues.remark) == (R.SYSTEM_ERROR, "readQueueNums and writeQueueNums must be positive")
    bad_filter = await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, create("Orders", topic_filter_type="SQL"))
    assert bad_filter.code == R.SYSTEM_ERROR and bad_filter.remark == "invalid topicFilterType 'SQL'"
    bad_name = await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, create("a b"))
    assert bad_name.code != R.SUCCESS and bad_name.remark
    assert "Orders" not in await topic_table(harness) and "a b" not in await topic_table(harness)


async def test_a_deleted_topic_loses_its_messages_and_offsets(harness):
    await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, create("Orders", 1))
    await harness.send("Orders", b"x")
    await harness.ask(RequestCode.UPDATE_CONSUMER_OFFSET, UpdateConsumerOffsetRequestHeader(
        consumer_group="G", topic="Orders", queue_id=0, commit_offset=1))
    assert (await harness.ask(RequestCode.DELETE_TOPIC_IN_BROKER, TopicRequestHeader(topic="Orders"))).code == R.SUCCESS
    assert "Orders" not in await topic_table(harness)
    r = await harness.ask(RequestCode.GET_MAX_OFFSET, QueueRequestHeader(topic="Orders", queue_id=0))
    assert r.ext("offset") == "0"
    stats = await harness.ask(RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(consumer_group="G"))
    assert ConsumeStats.decode(stats.body).offset_table == {}


async def test_topic_stats_give_each_queue_its_bounds_and_last_store_time(harness):
    await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, create("Orders", 2))
    for body in (b"a", b"b", b"c"):
        await harness.send("Orders", body, queue_id=1)
    r = await harness.ask(RequestCode.GET_TOPIC_STATS_INFO, TopicRequestHeader(topic="Orders"))
    table = TopicStatsTable.decode(r.body).offset_table
    q0, q1 = table[MessageQueue("Orders", "broker-a", 0)], table[MessageQueue("Orders", "broker-a", 1)]
    assert (q0.min_offset, q0.max_offset, q0.last_update_timestamp) == (0, 0, 0)
    assert (q1.min_offset, q1.max_offset) == (0, 3) and q1.last_update_timestamp > 0
    missing = await harness.ask(RequestCode.GET_TOPIC_STATS_INFO, TopicRequestHeader(topic="Nowhere"))
    assert (missing.code, missing.remark) == (R.TOPIC_NOT_EXIST, "topic[Nowhere] not exist")


async def test_subscription_groups_are_created_listed_and_deleted_with_their_offsets(harness):
    cfg = SubscriptionGroupConfig(group_name="G", retry_max_times=3, consume_broadcast_enable=False)
    assert (await harness.ask(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=cfg.encode())).code == R.SUCCESS
    groups = SubscriptionGroupWrapper.decode((await harness.ask(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body)
    assert groups.subscription_group_table["G"].retry_max_times == 3
    await harness.send("Orders", b"x")
    await harness.ask(RequestCode.UPDATE_CONSUMER_OFFSET, UpdateConsumerOffsetRequestHeader(
        consumer_group="G", topic="Orders", queue_id=0, commit_offset=1))
    by_who = await harness.ask(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, TopicRequestHeader(topic="Orders"))
    assert GroupList.decode(by_who.body).group_list == ["G"]
    deleted = await harness.ask(RequestCode.DELETE_SUBSCRIPTIONGROUP, DeleteSubscriptionGroupRequestHeader(
        group_name="G", remove_offset=True))
    assert deleted.code == R.SUCCESS
    groups = SubscriptionGroupWrapper.decode((await harness.ask(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body)
    assert "G" not in groups.subscription_group_table
    by_who = await harness.ask(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, TopicRequestHeader(topic="Orders"))
    assert GroupList.decode(by_who.body).group_list == []


async def test_a_group_config_without_a_name_is_refused(harness):
    r = await harness.ask(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=SubscriptionGroupConfig().encode())
    assert (r.code, r.remark) == (R.SYSTEM_ERROR, "groupName is required")
