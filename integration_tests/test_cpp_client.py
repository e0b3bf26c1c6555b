"""The stock C++ client (rocketmq==0.4.4) against the emulator: produce, push (clustering and broadcasting),
pull, rebalancing between two consumers, retry through the retry topic, and restart."""

from __future__ import annotations

import time

from integration_tests.cppclient import produce, run_driver, start_driver
from rocketmq_emulator.protocol.message import MessageExt
from rocketmq_emulator.testing.emulator_thread import EmulatorThread, held_pulls, held_pulls_on_loop
from rocketmq_emulator.testing.waits import wait_until

TOPIC = "TopicTest"


def stored_messages(emu: EmulatorThread, topic: str = TOPIC) -> dict[tuple[int, int], MessageExt]:
    """Every message of `topic` as the store holds it, keyed by (queue id, queue offset)."""
    def read() -> dict[tuple[int, int], MessageExt]:
        store = emu.broker.store
        out = {}
        for q in range(emu.broker.topic_config_manager.get(topic).read_queue_nums):
            offset = 0
            while offset < store.get_max_offset_in_queue(topic, q):
                res = store.get_message("test", topic, q, offset, 32, None)
                for record in res.messages:
                    msg = MessageExt.decode(record)
                    out[(q, msg.queue_offset)] = msg
                offset = res.next_begin_offset
        return out
    return emu.call(read)


def assert_received_exactly(received: list[dict], stored: dict[tuple[int, int], MessageExt]) -> None:
    by_position = {}
    for e in received:
        key = (e["queue_id"], e["queue_offset"])
        assert key not in by_position, f"message at queue {key[0]} offset {key[1]} delivered twice"
        by_position[key] = e
    assert set(by_position) == set(stored)
    for key, e in by_position.items():
        msg = stored[key]
        assert e["body"] == msg.body.decode()
        assert e["tags"] == msg.tags and e["keys"] == msg.keys and e["topic"] == msg.topic
        assert e["msg_id"] == msg.properties["UNIQ_KEY"]


def test_clustering_round_trip_1000_messages(emulator, cpp_home):
    sent = produce(emulator, cpp_home, 1000, topic=TOPIC)
    stored = stored_messages(emulator)
    assert len(stored) == 1000
    bodies = {m.body.decode() for m in stored.values()}
    assert bodies == {f"m-{i}" for i in range(1000)}
    for msg in stored.values():
        i = int(msg.body.decode()[2:])
        assert msg.tags == f"Tag{i}" and msg.keys == f"key{i} k"
    assert {e["msg_id"] for e in sent} == {m.properties["UNIQ_KEY"] for m in stored.values()}

    events = run_driver(["push", "--namesrv", emulator.namesrv_addr, "--topic", TOPIC, "--group", "CG",
                         "--expect", "1000", "--duration", "60"], timeout=90, home=cpp_home).events
    done = events[-1]
    assert done["event"] == "done" and done["expected_reached"], done
    assert_received_exactly([e for e in events if e["event"] == "received"], stored)
    # offsets were committed: the group's stored offset of each queue is its max offset
    def offsets():
        b = emulator.broker
        return {q: b.consumer_offset_manager.query_offset("CG", TOPIC, q) for q in range(4)}
    assert emulator.call(offsets) == {q: max(o for (qq, o) in stored if qq == q) + 1 for q in range(4)}


def test_broadcasting_two_instances_each_get_everything(emulator, cpp_home):
    produce(emulator, cpp_home, 1, topic=TOPIC, prefix="warmup-")  # creates the topic; broadcast consumers start
    # at the end
    consumers = [start_driver(["push", "--namesrv", emulator.namesrv_addr, "--topic", TOPIC, "--group", "BG",
                               "--model", "broadcasting", "--instance-name", f"inst{i}", "--duration", "60"],
                              timeout=90, home=cpp_home / f"c{i}") for i in range(2)]
    try:
        assert wait_until(lambda: held_pulls(emulator, TOPIC) >= 8, 30), "both consumers should hold a pull per queue"
        produce(emulator, cpp_home, 200, topic=TOPIC, prefix="b-")
        stored = {k: m for k, m in stored_messages(emulator).items() if m.body.startswith(b"b-")}
        for c in consumers:
            assert wait_until(lambda c=c: len({e["body"] for e in c.of("received")
                                                 if e["body"].startswith("b-")}) == 200, 60), c.describe()
    finally:
        for c in consumers:
            c.stop()
    for c in consumers:
        assert_received_exactly([e for e in c.of("received") if e["body"].startswith("b-")], stored)


def test_pull_consumer_sees_store_offsets(emulator, cpp_home):
    produce(emulator, cpp_home, 50, topic=TOPIC)
    stored = stored_messages(emulator)
    events = run_driver(["pull", "--namesrv", emulator.namesrv_addr, "--topic", TOPIC, "--group", "PULLG",
                         "--duration", "30"], timeout=60, home=cpp_home).events
    done = events[-1]
    assert done["event"] == "done", events[-3:]
    pulled = [e for e in events if e["event"] == "pulled"]
    assert_received_exactly(pulled, stored)
    max_offsets = emulator.call(lambda: {str(q): emulator.broker.store.get_max_offset_in_queue(TOPIC, q)
                                         for q in range(4)})
    assert done["offsets"] == max_offsets


def test_two_consumers_split_queues_and_hand_over(emulator, cpp_home):
    produce(emulator, cpp_home, 1, topic=TOPIC, prefix="warmup-")
    notified: list[tuple[str, list[str]]] = []
    emulator.call(lambda: emulator.broker.consumer_manager.on_change.append(
        lambda group, gi: notified.append((group, gi.client_ids()))))
    homes = [cpp_home / "a", cpp_home / "b"]
    for h in homes:
        h.mkdir()
    a, b = (start_driver(["push", "--namesrv", emulator.namesrv_addr, "--topic", TOPIC, "--group", "SPLIT",
                          "--instance-name", name, "--duration", "90"], timeout=120, home=home)
            for name, home in zip(("a", "b"), homes))
    try:
        def two_members_own_all_queues() -> bool:
            gi = emulator.broker.consumer_manager.get("SPLIT")
            return gi is not None and len(gi.channels) == 2 and held_pulls_on_loop(emulator.broker, TOPIC) >= 4
        assert wait_until(lambda: emulator.call(two_members_own_all_queues), 40)
        # after the second member joined, both rebalanced: each queue is held by exactly one consumer
        time.sleep(1.0)
        produce(emulator, cpp_home, 100, topic=TOPIC, prefix="s1-")
        assert wait_until(lambda: len([e for c in (a, b) for e in c.of("received") if e["body"].startswith("s1-")])
                          >= 100, 40)
        qa = {e["queue_id"] for e in a.of("received") if e["body"].startswith("s1-")}
        qb = {e["queue_id"] for e in b.of("received") if e["body"].startswith("s1-")}
        assert qa and qb and not qa & qb, (qa, qb)
        assert qa | qb == {0, 1, 2, 3}
        notified.clear()
        a.stop()
        assert wait_until(lambda: any(g == "SPLIT" and len(ids) == 1 for g, ids in notified), 10), notified
        assert wait_until(lambda: held_pulls(emulator, TOPIC) >= 4, 40)
        produce(emulator, cpp_home, 100, topic=TOPIC, prefix="s2-")
        assert wait_until(lambda: len({e["body"] for e in b.of("received") if e["body"].startswith("s2-")}) == 100,
                          40), b.describe()
    finally:
        a.stop()
        b.stop()
    s1 = [e for c in (a, b) for e in c.of("received") if e["body"].startswith("s1-")]
    assert sorted(e["body"] for e in s1) == sorted(f"s1-{i}" for i in range(100))


def test_reconsume_later_redelivers_through_retry_topic(emulator_factory, cpp_home):
    emu = emulator_factory(message_delay_level="1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s")
    produce(emu, cpp_home, 3, topic=TOPIC, prefix="r-")
    events = run_driver(["push", "--namesrv", emu.namesrv_addr, "--topic", TOPIC, "--group", "RG",
                         "--fail-first", "1", "--expect", "3", "--duration", "60"], timeout=90, home=cpp_home).events
    assert events[-1]["event"] == "done" and events[-1]["expected_reached"], events[-3:]
    received = [e for e in events if e["event"] == "received"]
    for i in range(3):
        attempts = [e for e in received if e["body"] == f"r-{i}"]
        assert [e["reconsume_times"] for e in attempts][:2] == [0, 1], attempts
        assert attempts[0]["failed"] and not attempts[1]["failed"]
        assert attempts[1]["topic"] == TOPIC  # the client restores the topic from RETRY_TOPIC
    retry = stored_messages(emu, "%RETRY%RG")
    assert sorted(m.body for m in retry.values()) == [b"r-0", b"r-1", b"r-2"]
    assert all(m.reconsume_times == 1 and m.properties["RETRY_TOPIC"] == TOPIC for m in retry.values())


def test_consumer_resumes_from_committed_offset_after_broker_restart(emulator, cpp_home):
    produce(emulator, cpp_home, 40, topic=TOPIC, prefix="before-")
    events = run_driver(["push", "--namesrv", emulator.namesrv_addr, "--topic", TOPIC, "--group", "RS",
                         "--expect", "40", "--duration", "60"], timeout=90, home=cpp_home).events
    assert events[-1]["expected_reached"]
    committed = emulator.call(lambda: emulator.broker.consumer_offset_manager.query_offsets_of_group("RS", TOPIC))
    assert sum(committed.values()) == 40
    emulator.restart()
    assert emulator.call(lambda: emulator.broker.consumer_offset_manager.query_offsets_of_group("RS", TOPIC)) \
        == committed
    produce(emulator, cpp_home, 25, topic=TOPIC, prefix="after-")
    events = run_driver(["push", "--namesrv", emulator.namesrv_addr, "--topic", TOPIC, "--group", "RS",
                         "--expect", "25", "--duration", "60"], timeout=90, home=cpp_home).events
    bodies = sorted(e["body"] for e in events if e["event"] == "received")
    assert bodies == sorted(f"after-{i}" for i in range(25)), bodies[:5]
