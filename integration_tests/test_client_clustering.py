"""Producer -> PushConsumer in clustering mode: the 10,000-message round trip with three consumers joining
and leaving, offsets committed, duplicates only at queue hand-over."""

from __future__ import annotations

import asyncio
import collections

from rocketmq_emulator.client import FIRST_OFFSET, Admin, Message, Producer, PushConsumer
from rocketmq_emulator.testing.waits import wait_for

TOPIC = "BigTopic"
GROUP = "big_group"
TOTAL = 10_000
QUEUES = 8
BATCH = 100


async def test_10000_messages_three_consumers_join_and_leave(emulator):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic(TOPIC, QUEUES, QUEUES)

    deliveries: collections.Counter[bytes] = collections.Counter()
    by_consumer: dict[str, collections.Counter[bytes]] = {}

    def make(name: str) -> PushConsumer:
        c = PushConsumer(GROUP, namesrv=ns, consume_from=FIRST_OFFSET)
        c.subscribe(TOPIC, "*")
        seen = by_consumer.setdefault(name, collections.Counter())

        @c.on_message
        def handle(msg) -> None:
            deliveries[msg.body] += 1
            seen[msg.body] += 1
        return c

    async def produce(producer: Producer, start: int, count: int) -> None:
        for first in range(start, start + count, BATCH):
            await producer.send_batch(TOPIC, [Message(TOPIC, f"m-{i}", tags="T", keys=f"k{i}")
                                              for i in range(first, first + BATCH)])

    membership_changes = 0
    c1 = await make("c1").start()
    try:
        async with Producer("big_producer", namesrv=ns) as producer:
            await produce(producer, 0, 2500)
            c2 = await make("c2").start()
            membership_changes += 1
            await produce(producer, 2500, 2500)
            c3 = await make("c3").start()
            membership_changes += 1
            await produce(producer, 5000, 2500)
            assert await wait_for(lambda: len(deliveries) >= 6000, 30), len(deliveries)
            await c1.stop()  # leaves while the others consume
            membership_changes += 1
            await produce(producer, 7500, 2500)
        assert await wait_for(lambda: len(deliveries) == TOTAL, 60), f"{len(deliveries)} of {TOTAL} consumed"
        # every queue's committed offset reaches its max offset (c2 and c3 commit on the way and at stop)
        await c2.stop()
        await c3.stop()
    finally:
        await c1.stop()
    assert set(deliveries) == {f"m-{i}".encode() for i in range(TOTAL)}
    duplicates = sum(n - 1 for n in deliveries.values())
    # at-least-once window: a queue changing owner may be re-read from the last committed offset, at most one
    # pull batch (32) per queue per membership change
    assert duplicates <= membership_changes * QUEUES * 32, duplicates
    assert all(sum(c.values()) > 0 for c in by_consumer.values()), {k: sum(v.values()) for k, v in by_consumer.items()}
    async with Admin(ns) as admin:
        stats = await admin.consumer_progress(GROUP, TOPIC)
    assert {mq.queue_id for mq in stats.offset_table} == set(range(QUEUES))
    assert stats.total_diff() == 0, {mq.queue_id: (w.broker_offset, w.consumer_offset)
                                     for mq, w in stats.offset_table.items()}
    assert sum(w.broker_offset for w in stats.offset_table.values()) == TOTAL
    print(f"duplicates: {duplicates}; per consumer: { {k: sum(v.values()) for k, v in by_consumer.items()} }")


async def test_round_trip_keeps_tags_keys_properties_and_filters_by_tag(emulator):
    ns = emulator.namesrv_addr
    async with Producer("rt_producer", namesrv=ns) as producer:
        sent = {}
        for i in range(20):
            tag = "TagA" if i % 2 == 0 else "TagB"
            r = await producer.send("RoundTrip", f"body-{i}", tags=tag, keys=[f"key-{i}", "common"],
                                    properties={"orderId": str(i), "source": "test"})
            sent[r.msg_id] = (i, tag, r)
        big = await producer.send("RoundTrip", b"x" * 10_000, tags="TagA")  # compressed on the wire
    got: dict[str, object] = {}
    consumer = PushConsumer("rt_group", namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe("RoundTrip", "TagA")
    consumer.on_message(lambda m: got.__setitem__(m.msg_id, m))
    async with consumer:
        assert await wait_for(lambda: len(got) >= 11, 20), len(got)
        await asyncio.sleep(0.2)  # nothing else arrives: TagB is filtered out
    assert set(got) == {mid for mid, (i, tag, _) in sent.items() if tag == "TagA"} | {big.msg_id}
    for mid, m in got.items():
        if mid == big.msg_id:
            assert m.body == b"x" * 10_000
            continue
        i, tag, r = sent[mid]
        assert m.body == f"body-{i}".encode() and m.tags == "TagA" and m.keys == f"key-{i} common"
        assert m.properties["orderId"] == str(i) and m.properties["source"] == "test"
        assert (m.queue_id, m.queue_offset) == (r.queue_id, r.queue_offset) and m.topic == "RoundTrip"
        assert m.offset_msg_id == r.offset_msg_id


async def test_iteration_with_ack_resumes_after_unacked(emulator):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic("IterTopic", 1, 1)
    async with Producer("it_producer", namesrv=ns) as producer:
        await producer.send_batch("IterTopic", [f"m{i}" for i in range(10)])
    consumer = PushConsumer("it_group", namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe("IterTopic")
    async with consumer:
        got = []
        async for msg in consumer:
            got.append(msg)
            if len(got) == 10:
                break
        consumer.ack(*got[:6])  # messages 6..9 are not acknowledged
        assert [m.text for m in got] == [f"m{i}" for i in range(10)]
        mq = got[0].message_queue
        assert consumer.consumed_offset(mq) == 6  # in memory: the next commit sends it
    consumer = PushConsumer("it_group", namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe("IterTopic")
    async with consumer:
        batch = await consumer.getmany(timeout=10, max_records=100)
        msgs = [m for ms in batch.values() for m in ms]
        while len(msgs) < 4:
            more = await consumer.getmany(timeout=10, max_records=100)
            assert more, msgs
            msgs += [m for ms in more.values() for m in ms]
        assert [m.text for m in msgs] == ["m6", "m7", "m8", "m9"]
        consumer.ack(*msgs)


async def test_subscribe_after_start_pause_and_resume(emulator):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic("LateTopic", 2, 2)
    async with PushConsumer("late_group", namesrv=ns, consume_from=FIRST_OFFSET) as consumer:
        consumer.subscribe("LateTopic")
        async with Producer("late_producer", namesrv=ns) as producer:
            await producer.send("LateTopic", "first")
            msg = await consumer.getone(timeout=20)
            assert msg is not None and msg.text == "first"
            consumer.ack(msg)
            assert await wait_for(lambda: len(consumer.assignment()) == 3, 10)  # 2 queues + the retry queue
            consumer.pause()
            await producer.send("LateTopic", "second")
            assert await consumer.getone(timeout=0.5) is None  # paused: nothing new is pulled
            consumer.resume()
            msg = await consumer.getone(timeout=20)
            assert msg is not None and msg.text == "second"
            consumer.ack(msg)
