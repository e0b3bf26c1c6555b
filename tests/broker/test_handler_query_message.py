"""VIEW_MESSAGE_BY_ID and QUERY_MESSAGE (broker/handlers/query_message.py) without sockets: what mqadmin
queryMsgById and queryMsgByKey get."""

from __future__ import annotations

import time

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.headers import QueryMessageRequestHeader, ViewMessageRequestHeader
from rocketmq_emulator.protocol.message import MessageExt, decode_message_id, decode_messages

R = ResponseCode


async def test_a_message_is_found_by_its_id(harness):
    await harness.send("Orders", b"first")
    msg_id = (await harness.send("Orders", b"second", tags="T", keys="k2")).ext("msgId")
    r = await harness.ask(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=decode_message_id(msg_id)[2]))
    assert r.code == R.SUCCESS
    msg = MessageExt.decode(r.body)
    assert (msg.topic, msg.body, msg.tags, msg.keys, msg.msg_id) == ("Orders", b"second", "T", "k2", msg_id)


async def test_an_id_whose_offset_holds_no_message_is_refused(harness):
    await harness.send("Orders", b"first")
    r = await harness.ask(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=987654))
    assert (r.code, r.remark) == (R.SYSTEM_ERROR, "can not find message by the offset, 987654")


async def test_messages_are_found_by_key_within_the_time_range(harness):
    await harness.send("Orders", b"a", keys="order-1")
    await harness.send("Orders", b"b", keys="order-2")
    await harness.send("Orders", b"c", keys="order-1 other")  # KEYS holds several, space-separated
    now = int(time.time() * 1000)
    r = await harness.ask(RequestCode.QUERY_MESSAGE, QueryMessageRequestHeader(
        topic="Orders", key="order-1", max_num=32, begin_timestamp=now - 60_000, end_timestamp=now + 60_000))
    assert r.code == R.SUCCESS
    assert sorted(m.body for m in decode_messages(r.body)) == [b"a", b"c"]
    assert int(r.ext("indexLastUpdateTimestamp")) > 0


async def test_an_unknown_key_or_a_time_range_before_it_is_not_found(harness):
    await harness.send("Orders", b"a", keys="order-1")
    now = int(time.time() * 1000)
    unknown = await harness.ask(RequestCode.QUERY_MESSAGE, QueryMessageRequestHeader(
        topic="Orders", key="nope", max_num=32, begin_timestamp=0, end_timestamp=now + 60_000))
    assert (unknown.code, unknown.remark) == (R.QUERY_NOT_FOUND, "can not find message, maybe time range not correct")
    earlier = await harness.ask(RequestCode.QUERY_MESSAGE, QueryMessageRequestHeader(
        topic="Orders", key="order-1", max_num=32, begin_timestamp=0, end_timestamp=now - 60_000))
    assert earlier.code == R.QUERY_NOT_FOUND
