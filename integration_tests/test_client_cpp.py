"""Cross-client: messages sent by the stock C++ client (rocketmq==0.4.4) are consumed by this client, and the
reverse, with identical bodies, tags, keys, properties and message ids."""

from __future__ import annotations

import asyncio

from rocketmq_emulator.client import FIRST_OFFSET, Admin, Producer, PushConsumer
from integration_tests.cppclient import run_driver, start_driver
from rocketmq_emulator.testing.emulator_thread import held_pulls
from rocketmq_emulator.testing.waits import wait_for

TOPIC = "CrossTopic"
COUNT = 30


async def test_cpp_producer_to_python_consumer(emulator, cpp_home):
    ns = emulator.namesrv_addr
    handle = await asyncio.to_thread(
        run_driver, ["produce", "--namesrv", ns, "--topic", TOPIC, "--group", "cpp_pg", "--count", str(COUNT),
                     "--tags", "Tag{i}", "--keys", "key{i} k", "--property", "color=c{i}", "--body-prefix", "cpp-"],
        timeout=60, home=cpp_home)
    sent = handle.of("sent")
    assert len(sent) == COUNT and all(e["status"] == "OK" for e in sent), handle.describe()

    got = {}
    consumer = PushConsumer("py_from_cpp", namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe(TOPIC)
    consumer.on_message(lambda m: got.__setitem__(m.msg_id, m))
    async with consumer:
        assert await wait_for(lambda: len(got) >= COUNT, 30), len(got)
    assert set(got) == {e["msg_id"] for e in sent}
    for e in sent:
        m = got[e["msg_id"]]
        i = e["i"]
        assert m.text == f"cpp-{i}" and m.tags == f"Tag{i}" and m.keys == f"key{i} k"
        assert m.properties["color"] == f"c{i}" and m.properties["UNIQ_KEY"] == e["msg_id"]
        assert m.queue_offset == e["offset"] and m.topic == TOPIC


async def test_python_producer_to_cpp_consumer(emulator, cpp_home):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic(TOPIC, 4, 4)
    consumer = start_driver(["push", "--namesrv", ns, "--topic", TOPIC, "--group", "cpp_from_py", "--expect",
                             str(COUNT), "--duration", "60", "--show-property", "color"], timeout=90, home=cpp_home)
    try:
        # the C++ consumer starts from the last offset: let it take its queues before sending
        assert await wait_for(lambda: held_pulls(emulator, TOPIC) >= 4, 40), consumer.describe()
        sent = {}
        async with Producer("py_pg", namesrv=ns) as producer:
            for i in range(COUNT):
                body = f"py-{i}" if i % 10 else "z" * 5000 + str(i)  # every 10th one is compressed
                r = await producer.send(TOPIC, body, tags=f"Tag{i}", keys=[f"key{i}", "k"],
                                        properties={"color": f"c{i}"})
                sent[r.msg_id] = (i, body, r)
        done = await asyncio.to_thread(consumer.wait_for, "done", 60)
        assert done is not None and done["expected_reached"], consumer.describe()
    finally:
        await asyncio.to_thread(consumer.stop)
    received = consumer.of("received")
    assert {e["msg_id"] for e in received} == set(sent)
    for e in received:
        i, body, r = sent[e["msg_id"]]
        assert e["body"] == body and e["tags"] == f"Tag{i}" and e["keys"] == f"key{i} k"
        assert e["properties"]["color"] == f"c{i}" and e["properties"]["UNIQ_KEY"] == e["msg_id"]
        assert (e["queue_id"], e["queue_offset"]) == (r.queue_id, r.queue_offset) and e["topic"] == TOPIC
