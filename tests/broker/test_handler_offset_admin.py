"""INVOKE_BROKER_TO_RESET_OFFSET and GET_CONSUME_STATS (broker/handlers/offset_admin.py, broker/core/broker2client.py)
without sockets: README "Resetting a group's offsets" and "Consume progress: ready and inflight"."""

from __future__ import annotations

import asyncio
import time

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import ConsumeStats, ResetOffsetBody
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.headers import (GetConsumeStatsRequestHeader, QueryConsumerOffsetRequestHeader,
                                                ResetOffsetRequestHeader, UpdateConsumerOffsetRequestHeader)
from rocketmq_emulator.testing.broker_harness import BrokerHarness

R = ResponseCode


async def commit(broker, offset, group="G", topic="Orders", queue_id=0):
    r = await broker.ask(RequestCode.UPDATE_CONSUMER_OFFSET, UpdateConsumerOffsetRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset))
    assert r.code == R.SUCCESS


async def committed(broker, group="G", topic="Orders", queue_id=0):
    r = await broker.ask(RequestCode.QUERY_CONSUMER_OFFSET, QueryConsumerOffsetRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id))
    return int(r.ext("offset")) if r.code == R.SUCCESS else None


async def test_reset_by_timestamp_moves_the_group_back_and_its_next_pull_there(harness):
    for body in (b"a", b"b"):
        await harness.send("Orders", body)
    await asyncio.sleep(0.1)
    just_before_c = int(time.time() * 1000)  # the nearest message is c (4.9.x's search)
    await asyncio.sleep(0.003)
    for body in (b"c", b"d"):
        await harness.send("Orders", body)
    await commit(harness, 4)
    r = await harness.ask(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetRequestHeader(
        topic="Orders", group="G", timestamp=just_before_c, is_force=True))
    assert r.code == R.SUCCESS
    table = ResetOffsetBody.decode(r.body).offset_table
    assert table[MessageQueue("Orders", "broker-a", 0)] == 2
    # server-side reset (on by default): the group's next pull of the queue, from its old position, is moved
    moved = await harness.pull("G", "Orders", 0, 4)
    assert (moved.code, moved.ext("nextBeginOffset")) == (R.PULL_OFFSET_MOVED, "2")
    assert await committed(harness) == 2


async def test_reset_to_now_moves_to_the_end_and_without_force_never_forward(harness):
    for body in (b"a", b"b", b"c"):
        await harness.send("Orders", body)
    await commit(harness, 1)
    forward = await harness.ask(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetRequestHeader(
        topic="Orders", group="G", timestamp=-1, is_force=False))
    assert ResetOffsetBody.decode(forward.body).offset_table[MessageQueue("Orders", "broker-a", 0)] == 1
    forced = await harness.ask(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetRequestHeader(
        topic="Orders", group="G", timestamp=-1, is_force=True))
    assert ResetOffsetBody.decode(forced.body).offset_table[MessageQueue("Orders", "broker-a", 0)] == 3


async def test_an_online_client_is_told_of_the_reset(harness):
    await harness.send("Orders", b"a")
    await harness.heartbeat("G", "Orders")
    await commit(harness, 1)
    await harness.ask(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetRequestHeader(
        topic="Orders", group="G", timestamp=0, is_force=True))
    [told] = [c for c in harness.client.requests if c.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET]
    assert told.is_oneway and (told.ext("group"), told.ext("topic")) == ("G", "Orders")
    assert ResetOffsetBody.decode(told.body).offset_table[MessageQueue("Orders", "broker-a", 0)] == 0


async def test_reset_of_a_group_the_broker_does_not_know_is_refused(tmp_path):
    async with BrokerHarness(tmp_path, autoCreateSubscriptionGroup=False) as broker:
        await broker.send("Orders", b"a")
        r = await broker.ask(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetRequestHeader(
            topic="Orders", group="Typo", timestamp=0, is_force=True))
        assert r.code == R.SYSTEM_ERROR and r.remark.startswith("THe consumer group <Typo> not exist")
        stats = ConsumeStats.decode((await broker.ask(RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(
            consumer_group="Typo"))).body)
        assert stats.offset_table == {}  # no offset was created for the typo'd name


async def test_reset_of_an_unknown_topic_is_refused(harness):
    r = await harness.ask(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetRequestHeader(
        topic="Nowhere", group="G", timestamp=0, is_force=True))
    assert r.code == R.SYSTEM_ERROR and "no topic in this broker" in r.remark


async def test_consume_stats_show_broker_and_consumer_offsets_and_the_lag(harness):
    for body in (b"a", b"b", b"c", b"d", b"e"):
        await harness.send("Orders", body)
    await commit(harness, 2)
    r = await harness.ask(RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(consumer_group="G",
                                                                                      topic="Orders"))
    stats = ConsumeStats.decode(r.body)
    q0 = stats.offset_table[MessageQueue("Orders", "broker-a", 0)]
    assert (q0.broker_offset, q0.consumer_offset, q0.pull_offset) == (5, 2, 2)
    assert q0.last_timestamp > 0  # the store time of the last message consumed (offset 1)
    assert len(stats.offset_table) == 4 and stats.total_diff() == 3


async def test_consume_stats_of_an_online_group_show_what_is_in_flight(harness):
    for body in (b"a", b"b", b"c", b"d", b"e"):
        await harness.send("Orders", body)
    await harness.heartbeat("G", "Orders")
    await harness.pull("G", "Orders", 0, 0, max_nums=4)  # 4 delivered, none committed yet
    stats = ConsumeStats.decode((await harness.ask(RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(
        consumer_group="G"))).body)
    q0 = stats.offset_table[MessageQueue("Orders", "broker-a", 0)]
    assert (q0.broker_offset, q0.consumer_offset, q0.pull_offset) == (5, 0, 4)
