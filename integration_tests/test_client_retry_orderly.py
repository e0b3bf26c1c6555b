"""RECONSUME_LATER through the retry topic (reconsume times counted, dead-letter queue after the max), and
orderly consumption (same sharding key = send order, also across a failed attempt)."""

from __future__ import annotations

import asyncio
import collections

from rocketmq_emulator.client import FIRST_OFFSET, Admin, ConsumeResult, Producer, PullConsumer, PushConsumer
from rocketmq_emulator.testing.emulator_thread import DELAY_1S
from rocketmq_emulator.testing.waits import wait_for

TOPIC = "RetryTopic"


async def test_reconsume_later_goes_through_retry_topic_then_dlq(emulator_factory):
    emu = emulator_factory(message_delay_level=DELAY_1S)
    ns = emu.namesrv_addr
    async with Producer("retry_producer", namesrv=ns) as p:
        sent = {(await p.send(TOPIC, f"r-{i}", tags="TagR", keys=f"key-{i}", properties={"n": str(i)})).msg_id: i
                for i in range(3)}
        dead = (await p.send(TOPIC, "dead", tags="TagD")).msg_id

    attempts: dict[str, list] = collections.defaultdict(list)

    def handle(msg):
        attempts[msg.msg_id].append(msg)
        if msg.text == "dead" or len(attempts[msg.msg_id]) == 1:
            return ConsumeResult.RECONSUME_LATER
        return ConsumeResult.SUCCESS

    consumer = PushConsumer("retry_group", namesrv=ns, consume_from=FIRST_OFFSET, max_reconsume_times=2)
    consumer.subscribe(TOPIC)
    consumer.on_message(handle)
    async with consumer:
        assert await wait_for(lambda: all(len(attempts[m]) >= 2 for m in sent) and len(attempts[dead]) >= 3, 30), \
            {k: len(v) for k, v in attempts.items()}
        async with PullConsumer("dlq_reader", namesrv=ns) as reader:
            async def dlq_messages():
                try:
                    (mq,) = await reader.fetch_message_queues("%DLQ%retry_group")
                except Exception:  # noqa: BLE001 - not created yet
                    return []
                return (await reader.pull(mq, 0, 32)).messages
            assert await wait_for(lambda: _nonempty(dlq_messages()), 20)
            dlq = await dlq_messages()
        await asyncio.sleep(1.5)  # a message in the DLQ is not delivered again
    for msg_id, i in sent.items():
        first, second = attempts[msg_id][:2]
        assert len(attempts[msg_id]) == 2
        assert (first.reconsume_times, second.reconsume_times) == (0, 1)
        assert second.topic == TOPIC and second.message_queue.topic == "%RETRY%retry_group"
        assert second.msg_id == msg_id and second.text == f"r-{i}" and second.tags == "TagR"
        assert second.keys == f"key-{i}" and second.properties["n"] == str(i)
        assert second.properties["RETRY_TOPIC"] == TOPIC
    assert [m.reconsume_times for m in attempts[dead]] == [0, 1, 2]
    assert [m.text for m in dlq] == ["dead"] and dlq[0].msg_id == dead and dlq[0].reconsume_times == 3


async def _nonempty(coro) -> bool:
    return bool(await coro)


async def test_orderly_same_sharding_key_in_send_order(emulator):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic("OrderTopic", 4, 4)
    seen: dict[str, list[int]] = collections.defaultdict(list)
    failed_once: set[tuple[str, int]] = set()
    who: dict[str, set[str]] = collections.defaultdict(set)

    def make(name: str) -> PushConsumer:
        c = PushConsumer("order_group", namesrv=ns, consume_from=FIRST_OFFSET, orderly=True,
                         suspend_current_queue_time=0.1)
        c.subscribe("OrderTopic")

        @c.on_message
        async def handle(msg):
            key, seq = msg.keys, int(msg.properties["seq"])
            if seq % 7 == 3 and (key, seq) not in failed_once:
                failed_once.add((key, seq))
                return ConsumeResult.RECONSUME_LATER  # suspends the queue; the same message comes back first
            seen[key].append(seq)
            who[key].add(name)
            await asyncio.sleep(0)
        return c

    consumers = [make("c1"), make("c2")]
    for c in consumers:
        await c.start()
    try:
        # settled: both members own queues, 4 + the retry queue in all
        assert await wait_for(lambda: all(c.assignment() for c in consumers) and
                              sum(len(c.assignment()) for c in consumers) == 5, 20)
        async with Producer("order_producer", namesrv=ns) as p:
            for seq in range(30):
                for k in range(6):
                    key = f"order-{k}"
                    await p.send("OrderTopic", f"{key}:{seq}", keys=key, properties={"seq": str(seq)},
                                 sharding_key=key)
        assert await wait_for(lambda: sum(len(v) for v in seen.values()) >= 180, 30), \
            {k: len(v) for k, v in seen.items()}
    finally:
        for c in consumers:
            await c.stop()
    for key, seqs in seen.items():
        assert seqs == list(range(30)), (key, seqs)
        assert len(who[key]) == 1  # one queue per key, owned by one consumer
    assert len(failed_once) == 6 * 4


async def test_iteration_nack_redelivers_through_retry_topic(emulator_factory):
    emu = emulator_factory(message_delay_level=DELAY_1S)
    ns = emu.namesrv_addr
    async with Producer("nack_producer", namesrv=ns) as p:
        sent = (await p.send("NackTopic", "again", tags="N")).msg_id
    consumer = PushConsumer("nack_group", namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe("NackTopic")
    async with consumer:
        first = await consumer.getone(timeout=20)
        assert first is not None and first.msg_id == sent and first.reconsume_times == 0
        consumer.nack(first)
        second = await consumer.getone(timeout=20)
        assert second is not None and second.msg_id == sent and second.reconsume_times == 1
        assert second.topic == "NackTopic" and second.message_queue.topic == "%RETRY%nack_group"
        consumer.ack(second)
    async with Admin(ns) as admin:
        stats = await admin.consumer_progress("nack_group")
    assert stats.total_diff() == 0
