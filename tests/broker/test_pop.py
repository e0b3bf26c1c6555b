"""POP consumption through the remoting codes (broker/handlers/pop_message.py on the core broker/core/pop/service.py),
without sockets: pop, ack, change-invisible, revive to the pop retry topic, the DLQ, orderly blocking, long
polling, tag filters, consumerProgress's in-flight figure, and checkpoints surviving a restart."""

from __future__ import annotations

import asyncio
import time

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import ConsumeStats, SubscriptionGroupConfig
from rocketmq_emulator.protocol.message import decode_messages
from rocketmq_emulator.protocol.stats_bodies import ConsumeStatsList
from rocketmq_emulator.protocol.pop_headers import (INIT_MODE_MAX, INIT_MODE_MIN, PROPERTY_POP_CK, AckMessageRequestHeader, BatchAck,
                                                    BatchAckMessageRequestBody, ChangeInvisibleTimeRequestHeader,
                                                    PopMessageRequestHeader)
from rocketmq_emulator.testing.broker_harness import BrokerHarness

R = ResponseCode


def _now() -> int:
    return int(time.time() * 1000)


async def pop(broker, topic="Orders", group="G", invisible=30000, max_nums=32, poll=0, order=False, exp=None,
              queue_id=-1, timeout=2.0):
    r = await broker.ask(RequestCode.POP_MESSAGE, PopMessageRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, max_msg_nums=max_nums, invisible_time=invisible,
        poll_time=poll, born_time=_now(), init_mode=0, exp_type="TAG" if exp else None, exp=exp, order=order),
        timeout=timeout)
    return r, (decode_messages(r.body) if r.code == R.SUCCESS else [])


async def ack(broker, msg, topic="Orders", group="G", handle=None):
    return await broker.ask(RequestCode.ACK_MESSAGE, AckMessageRequestHeader(
        consumer_group=group, topic=topic, queue_id=msg.queue_id, extra_info=handle or msg.properties[PROPERTY_POP_CK],
        offset=msg.queue_offset))


async def change(broker, msg, invisible, topic="Orders", group="G"):
    return await broker.ask(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, ChangeInvisibleTimeRequestHeader(
        consumer_group=group, topic=topic, queue_id=msg.queue_id, extra_info=msg.properties[PROPERTY_POP_CK],
        offset=msg.queue_offset, invisible_time=invisible))


async def send_n(broker, n, topic="Orders", tags=None, queue_id=0):
    for i in range(n):
        r = await broker.send(topic, f"m{i}".encode(), tags=tags, queue_id=queue_id)
        assert r.code == R.SUCCESS


def revive_later(broker, ms=60_000) -> int:
    return broker.broker.pop_service.revive(_now() + ms)


async def test_pop_returns_messages_with_handles_and_an_ack_removes_them_for_good(harness):
    await send_n(harness, 3)
    r, msgs = await pop(harness)
    assert r.code == R.SUCCESS and [m.body for m in msgs] == [b"m0", b"m1", b"m2"]
    assert all(PROPERTY_POP_CK in m.properties for m in msgs)
    assert int(r.ext("invisibleTime")) == 30000
    r2, again = await pop(harness)
    assert r2.code == R.PULL_NOT_FOUND and again == []  # invisible now
    for m in msgs:
        assert (await ack(harness, m)).code == R.SUCCESS
    assert revive_later(harness) == 0  # nothing un-acked
    assert harness.broker.pop_service.inflight() == 0


async def test_an_unacked_message_comes_back_from_the_retry_topic_with_its_attempt_counted(harness):
    await send_n(harness, 2)
    _, msgs = await pop(harness, invisible=1000)
    await ack(harness, msgs[0])
    assert revive_later(harness) == 1
    _, back = await pop(harness)
    assert [m.body for m in back] == [b"m1"]
    assert back[0].reconsume_times == 1  # delivery attempt 2
    assert back[0].topic == "%RETRY%G_Orders" and back[0].properties["RETRY_TOPIC"] == "Orders"
    assert (await ack(harness, back[0])).code == R.SUCCESS  # acked with the real topic's name
    assert revive_later(harness) == 0


async def test_change_invisible_gives_a_new_handle_and_the_old_one_acks_nothing(harness):
    await send_n(harness, 1)
    # 10 s: a loaded machine never lets it run out before the change (1 s did once, on a busy CI run); the
    # revive check below looks 60 s ahead, past it
    _, [msg] = await pop(harness, invisible=10_000)
    r = await change(harness, msg, 120_000)
    assert r.code == R.SUCCESS and int(r.ext("invisibleTime")) == 120_000
    assert (await ack(harness, msg)).code == R.SUCCESS  # superseded handle: OK, does nothing
    assert harness.broker.pop_service.inflight() == 1
    assert revive_later(harness, 60_000) == 0  # still inside its new invisible time
    old = msg.properties[PROPERTY_POP_CK].split(" ")
    new_handle = " ".join(old[:1] + [r.ext("popTime"), r.ext("invisibleTime")] + old[3:])  # as a client rebuilds it
    assert (await ack(harness, msg, handle=new_handle)).code == R.SUCCESS
    assert harness.broker.pop_service.inflight() == 0


async def test_a_change_in_the_same_millisecond_as_the_pop_still_supersedes_the_old_handle(harness):
    """Handles are told apart by their pop time: a change of invisible time in the pop's own millisecond (common
    without sockets, and for a fast client) gets a pop time 1 ms later, so the old handle still names nothing."""
    await send_n(harness, 30)
    for i in range(30):  # one at a time: the change right after its pop, often in the same millisecond
        _, [msg] = await pop(harness, invisible=60_000, max_nums=1)
        r = await change(harness, msg, 120_000)
        assert r.code == R.SUCCESS
        assert int(r.ext("popTime")) > int(msg.properties[PROPERTY_POP_CK].split(" ")[1])
        assert (await ack(harness, msg)).code == R.SUCCESS  # superseded: OK, does nothing
        assert harness.broker.pop_service.inflight() == i + 1


async def test_after_max_attempts_the_message_goes_to_the_dlq(harness):
    harness.broker.subscription_group_manager.update(SubscriptionGroupConfig(group_name="G", retry_max_times=1))
    await send_n(harness, 1)
    _, [first] = await pop(harness, invisible=1000)
    assert revive_later(harness) == 1  # attempt 2 next
    _, [second] = await pop(harness, invisible=1000)
    assert second.reconsume_times == 1
    assert revive_later(harness) == 1  # max attempts 2 reached: to the DLQ
    _, none = await pop(harness)
    assert none == []
    dlq = await harness.pull("reader", "%DLQ%G", 0, 0)
    [dead] = decode_messages(dlq.body)
    assert dead.body == b"m0" and dead.properties["DLQ_ORIGIN_TOPIC"] == "Orders"


async def test_orderly_pop_blocks_the_queue_and_redelivers_in_order(harness):
    await send_n(harness, 3)
    _, msgs = await pop(harness, order=True, invisible=2000, queue_id=0)  # (2 s: still in flight on a busy machine)
    assert [m.body for m in msgs] == [b"m0", b"m1", b"m2"]
    _, blocked = await pop(harness, order=True, queue_id=0)
    assert blocked == []  # in flight: the queue is blocked
    await ack(harness, msgs[0])
    await asyncio.sleep(2.1)  # invisible time over: the un-acked ones again, in order, attempt 2
    _, again = await pop(harness, order=True, invisible=30000, queue_id=0)
    assert [m.body for m in again] == [b"m1", b"m2"] and [m.reconsume_times for m in again] == [1, 1]
    for m in again:
        await ack(harness, m)
    await send_n(harness, 1)
    _, nxt = await pop(harness, order=True, queue_id=0)
    assert [m.body for m in nxt] == [b"m0"] and nxt[0].queue_offset == 3  # the queue moved on


async def test_a_held_pop_is_answered_when_a_message_arrives(harness):
    harness.broker.topic_config_manager.create_without_template("Orders", 4)
    task = asyncio.ensure_future(pop(harness, poll=5000, timeout=6))
    await asyncio.sleep(0.2)
    assert not task.done()
    await send_n(harness, 1, queue_id=2)
    r, msgs = await asyncio.wait_for(task, 2)
    assert [m.body for m in msgs] == [b"m0"]


async def test_a_pop_with_nothing_to_return_waits_its_poll_time(harness):
    await send_n(harness, 1)
    await pop(harness)
    began = time.monotonic()
    r, msgs = await pop(harness, poll=500)
    assert r.code == R.PULL_NOT_FOUND and msgs == [] and time.monotonic() - began >= 0.45


async def test_tag_filters_apply_to_pops(harness):
    await send_n(harness, 2, tags="A")
    await send_n(harness, 2, tags="B")
    _, msgs = await pop(harness, exp="B")
    assert [m.tags for m in msgs] == ["B", "B"]


async def test_batch_ack_acks_the_positions_named(harness):
    await send_n(harness, 3)
    r, msgs = await pop(harness)
    body = BatchAckMessageRequestBody(broker_name="broker-a", acks=[BatchAck(
        consumer_group="G", topic="Orders", start_offset=0, bit_set=[0, 2], pop_time=int(r.ext("popTime")),
        invisible_time=30000, queue_id=0)])
    assert (await harness.ask(RequestCode.BATCH_ACK_MESSAGE, body=body.encode())).code == R.SUCCESS
    assert harness.broker.pop_service.inflight() == 1


async def test_bad_requests_get_clear_codes(harness):
    await send_n(harness, 1)
    r, _ = await pop(harness, topic="Nope")
    assert r.code == R.TOPIC_NOT_EXIST
    r, _ = await pop(harness, max_nums=0)
    assert r.code == R.INVALID_PARAMETER
    r = await harness.ask(RequestCode.ACK_MESSAGE, AckMessageRequestHeader(
        consumer_group="G", topic="Orders", queue_id=0, extra_info="garbage", offset=0))
    assert r.code == R.INVALID_PARAMETER and "receipt handle" in r.remark
    r = await harness.ask(RequestCode.POP_MESSAGE, {"consumerGroup": "G"})
    assert r.code == R.SYSTEM_ERROR  # missing headers: named, not a crash


async def test_consumer_progress_counts_popped_and_unacked_as_in_flight(harness):
    await send_n(harness, 4)
    _, msgs = await pop(harness, max_nums=3)
    await ack(harness, msgs[0])
    r = await harness.ask(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "G", "topic": "Orders"})
    stats = ConsumeStats.decode(r.body)
    [(mq, w)] = [(mq, w) for mq, w in stats.offset_table.items() if mq.queue_id == 0]
    assert (w.broker_offset, w.consumer_offset, w.pull_offset) == (4, 1, 3)  # 2 in flight, 1 ready
    r = await harness.ask(RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false", "timeoutMillis": "1000"})
    [stats] = [entry for group in ConsumeStatsList.decode(r.body).consume_stats_list
               for name, entries in group.items() if name == "G" for entry in entries]
    assert stats.total_diff() == 3  # in flight and ready: not consumed


async def test_unacked_messages_survive_a_restart_and_acked_ones_do_not_come_back(tmp_path):
    root = tmp_path / "store"
    async with BrokerHarness(root) as broker:
        await send_n(broker, 3)
        _, msgs = await pop(broker, invisible=1000)
        await ack(broker, msgs[0])
    async with BrokerHarness(root) as broker:
        assert broker.broker.pop_service.inflight() == 2
        assert revive_later(broker) == 2
        _, back = await pop(broker)
        assert sorted(m.body for m in back) == [b"m1", b"m2"]


async def test_sql92_filters_apply_to_pops(tmp_path):
    async with BrokerHarness(tmp_path / "store", enablePropertyFilter=True) as broker:
        for i in range(4):
            assert (await broker.send("Orders", f"m{i}".encode(), properties={"a": str(i)})).code == R.SUCCESS
        r = await broker.ask(RequestCode.POP_MESSAGE, PopMessageRequestHeader(
            consumer_group="G", topic="Orders", max_msg_nums=32, invisible_time=30000, init_mode=0,
            exp_type="SQL92", exp="a >= 2"))
        assert sorted(m.body for m in decode_messages(r.body)) == [b"m2", b"m3"]
        bad = await broker.ask(RequestCode.POP_MESSAGE, PopMessageRequestHeader(
            consumer_group="G", topic="Orders", invisible_time=30000, exp_type="SQL92", exp="a >"))
        assert bad.code == R.SUBSCRIPTION_PARSE_FAILED


async def test_a_new_pop_group_follows_new_group_offset_as_query_consumer_offset_does(tmp_path):
    """One rule for a group new to a queue: with the default (legacy) rule a young queue is read from its first
    message by POP (initMode MAX) as by QUERY_CONSUMER_OFFSET; with newGroupOffset=strict neither does, and POP's
    initMode decides (MAX: the last message, as upstream's "pop last one"; MIN: the first)."""
    async def pop_new(broker, group, init_mode):
        r = await broker.ask(RequestCode.POP_MESSAGE, PopMessageRequestHeader(
            consumer_group=group, topic="Orders", queue_id=-1, max_msg_nums=32, invisible_time=30000, poll_time=0,
            born_time=_now(), init_mode=init_mode))
        return [m.body for m in decode_messages(r.body)] if r.code == R.SUCCESS else []
    async with BrokerHarness(tmp_path / "legacy") as legacy:
        await send_n(legacy, 3)
        assert await pop_new(legacy, "G", INIT_MODE_MAX) == [b"m0", b"m1", b"m2"]
    async with BrokerHarness(tmp_path / "strict", newGroupOffset="strict") as strict:
        await send_n(strict, 3)
        assert await pop_new(strict, "G", INIT_MODE_MAX) == [b"m2"]
        assert await pop_new(strict, "G2", INIT_MODE_MIN) == [b"m0", b"m1", b"m2"]
