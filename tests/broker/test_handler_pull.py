"""PULL_MESSAGE (broker/handlers/pull_message.py) without sockets: what a consumer is answered, for each rule of
4.9.x's PullMessageProcessor and this broker's own (README "Illegal offsets", "Clustering and broadcasting")."""

from __future__ import annotations

import asyncio
import time

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import SubscriptionGroupConfig
from rocketmq_emulator.protocol.bodies import MessageModel
from rocketmq_emulator.protocol.headers import (CreateTopicRequestHeader, QueryConsumerOffsetRequestHeader,
                                                QueueRequestHeader)
from rocketmq_emulator.protocol.message import decode_messages
from rocketmq_emulator.protocol.topics import OFFSET_MOVED_EVENT
from rocketmq_emulator.testing.broker_harness import BrokerHarness

R = ResponseCode


def next_offset(response) -> int:
    return int(response.ext("nextBeginOffset"))


async def send_all(broker, topic, *bodies, tags=None):
    for body in bodies:
        assert (await broker.send(topic, body, tags=tags)).code == R.SUCCESS


async def test_found_messages_come_in_order_with_the_queue_bounds(harness):
    await send_all(harness, "Orders", b"a", b"b", b"c")
    r = await harness.pull("G", "Orders", 0, 1)
    assert r.code == R.SUCCESS and r.remark == "FOUND"
    assert [m.body for m in decode_messages(r.body)] == [b"b", b"c"]
    assert [m.queue_offset for m in decode_messages(r.body)] == [1, 2]
    assert (next_offset(r), int(r.ext("minOffset")), int(r.ext("maxOffset"))) == (3, 0, 3)


async def test_max_nums_limits_a_pull(harness):
    await send_all(harness, "Orders", b"a", b"b", b"c")
    r = await harness.pull("G", "Orders", 0, 0, max_nums=2)
    assert [m.body for m in decode_messages(r.body)] == [b"a", b"b"] and next_offset(r) == 2


async def test_a_tag_subscription_gets_only_its_tags(harness):
    await harness.send("Orders", b"a", tags="A")
    await harness.send("Orders", b"b", tags="B")
    await harness.send("Orders", b"c", tags="C")
    r = await harness.pull("G", "Orders", 0, 0, subscription="A || C")
    assert [m.body for m in decode_messages(r.body)] == [b"a", b"c"] and next_offset(r) == 3
    none = await harness.pull("G", "Orders", 0, 0, subscription="Z")
    assert none.code == R.PULL_RETRY_IMMEDIATELY and next_offset(none) == 3  # skipped ahead, nothing to deliver


async def test_the_subscription_of_the_heartbeat_is_used_when_the_pull_has_none(harness):
    await harness.send("Orders", b"a", tags="A")
    await harness.send("Orders", b"b", tags="B")
    missing = await harness.pull("G", "Orders", 0, 0, subscription=None)
    assert missing.code == R.SUBSCRIPTION_NOT_EXIST
    assert missing.remark == "the consumer's group info not exist\nSee http://rocketmq.apache.org/docs/faq/ for further details."
    await harness.heartbeat("G", "Orders", sub_string="B")
    r = await harness.pull("G", "Orders", 0, 0, subscription=None)
    assert [m.body for m in decode_messages(r.body)] == [b"b"]


async def test_nothing_new_without_suspension_is_answered_at_once(harness):
    await send_all(harness, "Orders", b"a")
    r = await harness.pull("G", "Orders", 0, 1)
    assert (r.code, r.remark, next_offset(r)) == (R.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", 1)


async def test_a_held_pull_is_answered_when_a_message_arrives(harness):
    await send_all(harness, "Orders", b"a")
    held = asyncio.ensure_future(harness.pull("G", "Orders", 0, 1, suspend=True, suspend_ms=15000, timeout=10))
    await asyncio.sleep(0.01)
    assert not held.done()
    await harness.send("Orders", b"b", channel=harness.connect())
    r = await asyncio.wait_for(held, 5)
    assert r.code == R.SUCCESS and [m.body for m in decode_messages(r.body)] == [b"b"]


async def test_with_long_polling_off_nothing_new_is_held_only_the_short_polling_time(tmp_path):
    async with BrokerHarness(tmp_path, longPollingEnable=False, shortPollingTimeMills=50) as broker:
        await send_all(broker, "Orders", b"a")
        began = time.monotonic()
        r = await broker.pull("G", "Orders", 0, 1, suspend=True, suspend_ms=15000, timeout=10)
        waited = time.monotonic() - began
    assert (r.code, next_offset(r)) == (R.PULL_NOT_FOUND, 1)
    assert 0.04 <= waited < 5  # held the 50 ms of shortPollingTimeMills, not the 15 s the consumer asked for


async def test_a_queue_id_beyond_the_read_queues_is_illegal(harness):
    await send_all(harness, "Orders", b"a")  # auto-created with 4 queues
    r = await harness.pull("G", "Orders", 9, 0)
    assert r.code == R.SYSTEM_ERROR
    assert r.remark.startswith("queueId[9] is illegal, topic:[Orders] topicConfig.readQueueNums:[4] consumer:[")


async def test_an_offset_past_the_end_is_moved_and_recorded_as_an_offset_moved_event(harness):
    await send_all(harness, "Orders", b"a", b"b")
    r = await harness.pull("G", "Orders", 0, 100)
    assert (r.code, r.remark, next_offset(r)) == (R.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY", 2)
    events = await harness.pull("tools", OFFSET_MOVED_EVENT, 0, 0)
    [event] = decode_messages(events.body)
    assert event.tags == "G" and b'"offsetRequest":100' in event.body and b'"offsetNew":2' in event.body


async def test_an_empty_queue_answers_not_found_at_zero_and_moved_elsewhere(harness):
    await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, CreateTopicRequestHeader(
        topic="Empty", read_queue_nums=1, write_queue_nums=1, perm=6))
    at_zero = await harness.pull("G", "Empty", 0, 0)
    assert (at_zero.code, at_zero.remark) == (R.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE")
    elsewhere = await harness.pull("G", "Empty", 0, 5)
    assert (elsewhere.code, next_offset(elsewhere)) == (R.PULL_OFFSET_MOVED, 0)


async def test_a_broker_without_read_permission_refuses_pulls(tmp_path):
    async with BrokerHarness(tmp_path, brokerPermission=2) as broker:
        await send_all(broker, "Orders", b"a")
        r = await broker.pull("G", "Orders", 0, 0)
    assert r.code == R.NO_PERMISSION and r.remark == "the broker[127.0.0.1] pulling message is forbidden"


async def test_a_topic_without_read_permission_refuses_pulls(harness):
    await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, CreateTopicRequestHeader(
        topic="WriteOnly", read_queue_nums=1, write_queue_nums=1, perm=2))
    r = await harness.pull("G", "WriteOnly", 0, 0)
    assert r.code == R.NO_PERMISSION and r.remark == "the topic[WriteOnly] pulling message is forbidden"


async def test_an_unknown_topic_is_refused(harness):
    r = await harness.pull("G", "Nowhere", 0, 0)
    assert r.code == R.TOPIC_NOT_EXIST and r.remark == ("topic[Nowhere] not exist, apply first please! "
                                                        "\nSee http://rocketmq.apache.org/docs/faq/ for further details.")


async def test_an_unknown_group_is_refused_without_auto_creation(tmp_path):
    async with BrokerHarness(tmp_path, autoCreateSubscriptionGroup=False) as broker:
        await send_all(broker, "Orders", b"a")
        r = await broker.pull("G", "Orders", 0, 0)
        assert r.code == R.SUBSCRIPTION_GROUP_NOT_EXIST and r.remark == "subscription group [G] does not exist"
        await broker.ask(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                         body=SubscriptionGroupConfig(group_name="G").encode())
        assert (await broker.pull("G", "Orders", 0, 0)).code == R.SUCCESS


async def test_a_group_with_consuming_disabled_is_refused(harness):
    await send_all(harness, "Orders", b"a")
    await harness.ask(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                      body=SubscriptionGroupConfig(group_name="G", consume_enable=False).encode())
    r = await harness.pull("G", "Orders", 0, 0)
    assert r.code == R.NO_PERMISSION and r.remark == "subscription group no permission, G"


async def test_a_pull_commits_the_offset_it_carries(harness):
    await send_all(harness, "Orders", b"a", b"b")
    await harness.pull("G", "Orders", 0, 2, commit_offset=2)
    r = await harness.ask(RequestCode.QUERY_CONSUMER_OFFSET,
                          QueryConsumerOffsetRequestHeader(consumer_group="G", topic="Orders", queue_id=0))
    assert (r.code, r.ext("offset")) == (R.SUCCESS, "2")


async def test_a_broadcasting_member_back_on_a_new_connection_resumes_where_it_was(harness):
    """README "Clustering and broadcasting": its first pull of the queue in a new session, at the end of the
    queue, is moved back to its own last position; later pulls of that session are served as asked."""
    first = harness.connect("10.0.0.1@DEFAULT")
    await harness.heartbeat("B", "News", model=MessageModel.BROADCASTING, channel=first)
    await send_all(harness, "News", b"a", b"b")
    assert next_offset(await harness.pull("B", "News", 0, 0, channel=first)) == 2
    await harness.pull("B", "News", 0, 2, channel=first)  # its position: 2
    first.close()
    await send_all(harness, "News", b"c", b"d")

    again = harness.connect("10.0.0.1@DEFAULT")  # the same client id, restarted without its offsets file
    await harness.heartbeat("B", "News", model=MessageModel.BROADCASTING, channel=again)
    end = int((await harness.ask(RequestCode.GET_MAX_OFFSET, QueueRequestHeader(topic="News", queue_id=0))).ext("offset"))
    moved = await harness.pull("B", "News", 0, end, channel=again)
    assert (moved.code, moved.remark, next_offset(moved)) == (R.PULL_OFFSET_MOVED, "OFFSET_RESET", 2)
    r = await harness.pull("B", "News", 0, 2, channel=again)
    assert [m.body for m in decode_messages(r.body)] == [b"c", b"d"]
    assert (await harness.pull("B", "News", 0, 4, channel=again)).code == R.PULL_NOT_FOUND  # not moved again
