"""QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET and the queue offset requests (broker/handlers/consumer_manage.py)
without sockets; what a new group is told follows README "What a new group reads first"."""

from __future__ import annotations

import time

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.headers import (QueryConsumerOffsetRequestHeader, QueueRequestHeader,
                                                SearchOffsetRequestHeader, UpdateConsumerOffsetRequestHeader)
from rocketmq_emulator.protocol.emulator_requests import EmulatorRequestCode, ExpireFilesNowRequestHeader
from rocketmq_emulator.testing.broker_harness import BrokerHarness

R = ResponseCode


def query(group="G", topic="Orders", queue_id=0, **kw):
    return QueryConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id, **kw)


async def test_a_committed_offset_is_what_the_group_is_told(harness):
    await harness.send("Orders", b"a")
    r = await harness.ask(RequestCode.UPDATE_CONSUMER_OFFSET, UpdateConsumerOffsetRequestHeader(
        consumer_group="G", topic="Orders", queue_id=0, commit_offset=1))
    assert r.code == R.SUCCESS
    r = await harness.ask(RequestCode.QUERY_CONSUMER_OFFSET, query())
    assert (r.code, r.ext("offset")) == (R.SUCCESS, "1")
    other_queue = await harness.ask(RequestCode.QUERY_CONSUMER_OFFSET, query(queue_id=1))
    assert other_queue.ext("offset") == "0"  # its first message never written: still "young"


async def test_a_new_group_reads_a_young_queue_from_zero(harness):
    await harness.send("Orders", b"a")
    r = await harness.ask(RequestCode.QUERY_CONSUMER_OFFSET, query())
    assert (r.code, r.ext("offset")) == (R.SUCCESS, "0")


async def test_a_new_group_is_not_found_once_the_first_message_expired(harness):
    await harness.send("Orders", b"a")
    expired = await harness.ask(EmulatorRequestCode.EXPIRE_FILES_NOW, ExpireFilesNowRequestHeader(topic="Orders"))
    assert expired.code == R.SUCCESS
    r = await harness.ask(RequestCode.QUERY_CONSUMER_OFFSET, query())
    assert r.code == R.QUERY_NOT_FOUND
    assert r.remark == "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"


async def test_a_5x_client_asking_for_no_zero_is_not_found(harness):
    await harness.send("Orders", b"a")
    r = await harness.ask(RequestCode.QUERY_CONSUMER_OFFSET, query(set_zero_if_not_found=False))
    assert r.code == R.QUERY_NOT_FOUND


async def test_strict_new_group_offset_is_always_not_found(tmp_path):
    async with BrokerHarness(tmp_path, newGroupOffset="strict") as broker:
        await broker.send("Orders", b"a")
        r = await broker.ask(RequestCode.QUERY_CONSUMER_OFFSET, query())
        assert r.code == R.QUERY_NOT_FOUND
        await broker.ask(RequestCode.UPDATE_CONSUMER_OFFSET, UpdateConsumerOffsetRequestHeader(
            consumer_group="G", topic="Orders", queue_id=0, commit_offset=1))
        assert (await broker.ask(RequestCode.QUERY_CONSUMER_OFFSET, query())).ext("offset") == "1"


async def test_queue_bounds_search_by_time_and_earliest_store_time(harness):
    before = int(time.time() * 1000)
    for body in (b"a", b"b", b"c"):
        await harness.send("Orders", body)
    queue = QueueRequestHeader(topic="Orders", queue_id=0)
    assert (await harness.ask(RequestCode.GET_MAX_OFFSET, queue)).ext("offset") == "3"
    assert (await harness.ask(RequestCode.GET_MIN_OFFSET, queue)).ext("offset") == "0"
    earliest = int((await harness.ask(RequestCode.GET_EARLIEST_MSG_STORETIME, queue)).ext("timestamp"))
    assert before <= earliest <= int(time.time() * 1000)
    first = await harness.ask(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                              SearchOffsetRequestHeader(topic="Orders", queue_id=0, timestamp=before - 60_000))
    assert first.ext("offset") == "0"
    future = await harness.ask(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, SearchOffsetRequestHeader(
        topic="Orders", queue_id=0, timestamp=int(time.time() * 1000) + 60_000))
    assert future.ext("offset") == "2"  # 4.9.x's search: past the last message, the last message
