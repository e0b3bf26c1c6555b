"""Consumer offsets end to end with real clients (README "Consumer offsets"): what a new group reads first,
illegal offsets, reset by time in clustering and broadcasting mode, server-side reset and broadcast offsets,
ready and inflight. The official C++ client (one consumer per process) wherever it supports the scenario,
this project's client for the rest, and a raw-protocol consumer that never answers broker requests."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from integration_tests.cppclient import run_driver, start_driver
from integration_tests.test_cpp_client import held_pulls, produce, wait_until
from rocketmq_emulator.client import BROADCASTING, FIRST_OFFSET, Admin, Producer, PushConsumer
from tests.client.helpers import wait_for

TOPIC = "OffsetTopic"


def admin_call(emu, fn):
    """Run `fn(admin)` against the emulator (from the test's thread)."""
    async def go():
        async with Admin(emu.namesrv_addr) as admin:
            return await fn(admin)
    return emu.run(go(), timeout=60)


def create_topic(emu, topic: str = TOPIC, queues: int = 4) -> None:
    admin_call(emu, lambda a: a.create_topic(topic, queues, queues))


def bodies(handle, prefix: str = "") -> list[str]:
    return sorted(e["body"] for e in handle.of("received") if e["body"].startswith(prefix))


def cpp_push(emu, home: Path, group: str, *, model: str = "clustering", name: str = "c", duration: int = 90,
             topic: str = TOPIC):
    return start_driver(["push", "--namesrv", emu.namesrv_addr, "--topic", topic, "--group", group, "--model", model,
                         "--instance-name", name, "--duration", str(duration)], timeout=duration + 30,
                        home=home / name)


# ----------------------------------------------------------------------------------------------------------
# S1: what a new group reads first
# ----------------------------------------------------------------------------------------------------------
def test_s1_new_group_reads_a_young_topic_from_the_start_and_nothing_old_after_expire_now(emulator, cpp_home):
    create_topic(emulator)
    produce(emulator, cpp_home, 20, topic=TOPIC, prefix="old-")
    # young topic: the broker answers 0 for a group with no offset, so LAST_OFFSET still reads the history
    events = run_driver(["push", "--namesrv", emulator.namesrv_addr, "--topic", TOPIC, "--group", "young",
                         "--expect", "20", "--duration", "40"], timeout=60, home=cpp_home / "young").events
    assert sorted(e["body"] for e in events if e["event"] == "received") == sorted(f"old-{i}" for i in range(20))

    deleted = admin_call(emulator, lambda a: a.expire_now(TOPIC))
    assert list(deleted.values()) == [1]
    status = admin_call(emulator, lambda a: a.topic_status(TOPIC))
    assert all(t.min_offset == t.max_offset == 5 for t in status.values())

    late = cpp_push(emulator, cpp_home, "late")
    try:
        assert wait_until(lambda: held_pulls(emulator, TOPIC) >= 4, 40), late.describe()
        produce(emulator, cpp_home, 8, topic=TOPIC, prefix="new-")
        assert wait_until(lambda: len(bodies(late)) >= 8, 30), late.describe()
        time.sleep(0.5)  # anything old would have come first
    finally:
        late.stop()
    assert bodies(late) == sorted(f"new-{i}" for i in range(8))


def test_s1_strict_new_group_offset_and_set_zero_if_not_found(emulator_factory, cpp_home):
    from integration_tests.rawclient import RawClient
    from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
    from rocketmq_emulator.protocol.headers import QueryConsumerOffsetRequestHeader

    legacy = emulator_factory()
    strict = emulator_factory(new_group_offset="strict")
    for emu in (legacy, strict):
        create_topic(emu)
        produce(emu, cpp_home, 4, topic=TOPIC)

    async def query(emu, **extra):
        c = await RawClient.connect("127.0.0.1", emu.broker_port)
        try:
            h = QueryConsumerOffsetRequestHeader(consumer_group="nobody", topic=TOPIC, queue_id=0, **extra)
            return await c.request(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, h.to_ext()))
        finally:
            c.transport.close()
    answer = legacy.run(query(legacy))
    assert answer.code == ResponseCode.SUCCESS and answer.ext_fields["offset"] == "0"
    assert legacy.run(query(legacy, set_zero_if_not_found=False)).code == ResponseCode.QUERY_NOT_FOUND
    assert strict.run(query(strict)).code == ResponseCode.QUERY_NOT_FOUND

    # so a C++ consumer (CONSUME_FROM_LAST_OFFSET) of a new group starts at the end on the strict broker
    c = cpp_push(strict, cpp_home, "fresh")
    try:
        assert wait_until(lambda: held_pulls(strict, TOPIC) >= 4, 40), c.describe()
        produce(strict, cpp_home, 4, topic=TOPIC, prefix="after-")
        assert wait_until(lambda: len(bodies(c)) >= 4, 30), c.describe()
        time.sleep(0.5)
    finally:
        c.stop()
    assert bodies(c) == sorted(f"after-{i}" for i in range(4))


# ----------------------------------------------------------------------------------------------------------
# S2: illegal offsets
# ----------------------------------------------------------------------------------------------------------
def _pull(topic: str, queue_id: int, offset: int, group: str = "ill") -> "RemotingCommand":
    from rocketmq_emulator.protocol import RemotingCommand, RequestCode
    from rocketmq_emulator.protocol.headers import PullMessageRequestHeader
    h = PullMessageRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id, queue_offset=offset,
                                 max_msg_nums=32, sys_flag=0x4, subscription="*")  # no suspension: answered now
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext())


def test_s2_every_illegal_offset_case_answers_as_4_9(emulator):
    from integration_tests.rawclient import RawClient
    from rocketmq_emulator.protocol import ResponseCode as R
    from rocketmq_emulator.protocol.bodies import OffsetMovedEvent
    from rocketmq_emulator.protocol.message import MessageExt
    create_topic(emulator, "Illegal", 2)

    def events():
        store = emulator.broker.store
        res = store.get_message("t", "OFFSET_MOVED_EVENT", 0, store.get_min_offset_in_queue("OFFSET_MOVED_EVENT", 0),
                                32, None)
        found = [MessageExt.decode(r) for r in res.messages]
        return [(m.tags, *(lambda e: (e.offset_request, e.offset_new))(OffsetMovedEvent.decode(m.body))) for m in found]

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            async def pull(q, offset):
                r = await c.request(_pull("Illegal", q, offset))
                e = r.ext_fields
                return r.code, r.remark, int(e["nextBeginOffset"]), int(e["minOffset"]), int(e["maxOffset"])
            out = {"empty@0": await pull(0, 0), "empty@7": await pull(0, 7)}
            async with Producer("p", namesrv=emulator.namesrv_addr) as producer:
                queue = [mq for mq in await producer.fetch_queues("Illegal") if mq.queue_id == 1][0]
                await producer.send_batch("Illegal", [f"m{i}" for i in range(10)], queue=queue)
            out["found@3"] = await pull(1, 3)
            out["max"] = await pull(1, 10)
            out["beyond"] = await pull(1, 99)
            out["events before expiry"] = await asyncio.to_thread(emulator.call, events)
            await asyncio.to_thread(admin_call, emulator, lambda a: a.expire_now("Illegal"))
            out["after-expire beyond"] = await pull(1, 99)
            out["below"] = await pull(1, 2)
            return out
    out = asyncio.run(scenario())
    assert out["empty@0"] == (R.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE", 0, 0, 0)
    assert out["empty@7"] == (R.PULL_OFFSET_MOVED, "NO_MESSAGE_IN_QUEUE", 0, 0, 0)
    assert out["found@3"] == (R.SUCCESS, "FOUND", 10, 0, 10)
    assert out["max"] == (R.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", 10, 0, 10)
    assert out["beyond"] == (R.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY", 10, 0, 10)  # 4.9.x: to max
    assert out["after-expire beyond"] == (R.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY", 10, 10, 10)
    assert out["below"] == (R.PULL_OFFSET_MOVED, "OFFSET_TOO_SMALL", 10, 10, 10)

    # every PULL_OFFSET_MOVED is recorded in OFFSET_MOVED_EVENT, tagged with the group (expiry took the first two)
    assert out["events before expiry"] == [("ill", 7, 0), ("ill", 99, 10)]
    assert emulator.call(events) == [("ill", 99, 10), ("ill", 2, 10)]


def _commit(emu, group: str, topic: str, offsets: dict[int, int]) -> None:
    async def go(admin):
        route = await admin.topic_route(topic)
        addr = route.broker_datas[0].broker_addrs[0]
        from rocketmq_emulator.protocol.bodies import MessageQueue
        for q, off in offsets.items():
            await admin.instance.api.update_consumer_offset(addr, group, MessageQueue(topic, "broker-a", q), off)
    admin_call(emu, go)


@pytest.mark.parametrize("where", ["past-max", "below-min"])
def test_s2_cpp_consumer_with_an_illegal_committed_offset_recovers_without_repeats(emulator, cpp_home, where):
    create_topic(emulator)
    produce(emulator, cpp_home, 12, topic=TOPIC, prefix="hist-")
    if where == "below-min":
        admin_call(emulator, lambda a: a.expire_now(TOPIC))  # min = max = 3 in every queue
        _commit(emulator, "ill", TOPIC, {q: 1 for q in range(4)})
        expected_history: list[str] = []
    else:  # OFFSET_OVERFLOW_BADLY moves the consumer to the max offset: nothing old, nothing twice
        _commit(emulator, "ill", TOPIC, {q: 999_999_999 for q in range(4)})
        expected_history = []
    c = cpp_push(emulator, cpp_home, "ill")
    try:
        assert wait_until(lambda: len(bodies(c, "hist-")) >= len(expected_history) and
                          held_pulls(emulator, TOPIC) >= 4, 60), c.describe()
        produce(emulator, cpp_home, 8, topic=TOPIC, prefix="live-")
        assert wait_until(lambda: len(bodies(c, "live-")) >= 8, 40), c.describe()
        time.sleep(1.0)  # a storm of repeats would show now
    finally:
        c.stop()
    assert bodies(c, "hist-") == sorted(expected_history)
    assert bodies(c, "live-") == sorted(f"live-{i}" for i in range(8))
    committed = emulator.call(lambda: emulator.broker.consumer_offset_manager.query_offsets_of_group("ill", TOPIC))
    assert sum(committed.values()) == 20  # 5 per queue: everything consumed once, offsets legal again


# ----------------------------------------------------------------------------------------------------------
# S3: a broadcasting consumer whose every queue has an illegal offset (seed: offsets.json edited by hand)
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["past-max", "below-min"])
async def test_s3_broadcasting_consumer_with_every_offset_illegal_recovers(emulator, tmp_path, bad):
    from rocketmq_emulator.protocol.admin_bodies import OffsetSerializeWrapper
    from rocketmq_emulator.protocol.bodies import MessageQueue
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic("BcIllegal", 2, 2)
        async with Producer("p", namesrv=ns) as p:
            await p.send_batch("BcIllegal", [f"old-{i}" for i in range(10)])
        if bad == "below-min":
            await admin.expire_now("BcIllegal")
    offset = 999_999_999 if bad == "past-max" else 1
    received: list[str] = []
    c = PushConsumer("bc_ill", namesrv=ns, message_model=BROADCASTING, instance_name="x",
                     offset_store_dir=str(tmp_path))
    c.subscribe("BcIllegal")
    c.on_message(lambda m: received.append(m.text))
    path = tmp_path / ".rocketmq_offsets" / c.client_id / "bc_ill" / "offsets.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(OffsetSerializeWrapper(offset_table={MessageQueue("BcIllegal", "broker-a", q): offset
                                                          for q in range(2)}).encode())
    async with c:
        assert await wait_for(lambda: len(c.assignment()) == 2 and
                              emulator.call(lambda: sum(len(v) for k, v in
                                                        emulator.broker.pull_hold_service.table.items()
                                                        if k[0] == "BcIllegal")) >= 2, 20)
        async with Producer("p", namesrv=ns) as p:
            await p.send_batch("BcIllegal", [f"new-{i}" for i in range(6)])
        assert await wait_for(lambda: len(received) >= 6, 20), received
        await asyncio.sleep(0.5)  # a loop of corrections and repeats would show now
    assert sorted(received) == [f"new-{i}" for i in range(6)]
    table = OffsetSerializeWrapper.decode(path.read_bytes()).offset_table
    maxes = admin_call(emulator, lambda a: a.topic_status("BcIllegal"))
    assert {mq.queue_id: o for mq, o in table.items()} == {mq.queue_id: t.max_offset for mq, t in maxes.items()}


# ----------------------------------------------------------------------------------------------------------
# S4: reset by timestamp, clustering
# ----------------------------------------------------------------------------------------------------------
def _produce_before_and_after(emu, home: Path, topic: str = TOPIC) -> int:
    """6 messages `A-i`, then the timestamp returned, then 6 messages `B-i`. A 4.9.x broker resets each queue to
    the message stored *closest* to the time, so the time is taken right before B, well after A."""
    produce(emu, home, 6, topic=topic, prefix="A-")
    time.sleep(0.5)
    ts = int(time.time() * 1000)
    produce(emu, home, 6, topic=topic, prefix="B-")
    return ts


def test_s4_reset_by_time_two_cpp_consumers_of_one_group(emulator, cpp_home):
    create_topic(emulator)
    members = [cpp_push(emulator, cpp_home, "rc", name=n) for n in ("a", "b")]
    try:
        gi = lambda: emulator.call(lambda: len(getattr(emulator.broker.consumer_manager.get("rc"), "channels", {})))
        assert wait_until(lambda: gi() == 2 and held_pulls(emulator, TOPIC) >= 4, 40)
        time.sleep(1.0)  # both have rebalanced after the second joined
        ts = _produce_before_and_after(emulator, cpp_home)
        everything = lambda: sorted(b for m in members for b in bodies(m))
        assert wait_until(lambda: len(everything()) >= 12, 30), [m.describe() for m in members]
        result = admin_call(emulator, lambda a: a.reset_offset_by_timestamp("rc", TOPIC, ts))
        assert result.method == "broker" and sum(r.offset for r in result.rows) == 6  # B-0 is at A's end
        assert wait_until(lambda: len(everything()) >= 18, 40), [m.describe() for m in members]
        time.sleep(1.0)
    finally:
        for m in members:
            m.stop()
    assert everything() == sorted([f"A-{i}" for i in range(6)] + [f"B-{i}" for i in range(6)] * 2)
    assert all(bodies(m) for m in members)  # both members took part


async def test_s4_reset_by_time_client_consumers_and_force(emulator):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic(TOPIC, 4, 4)
    got: list[str] = []
    members = []
    for name in ("a", "b"):
        c = PushConsumer("rc_py", namesrv=ns, instance_name=name, consume_from=FIRST_OFFSET)
        c.subscribe(TOPIC)
        c.on_message(lambda m: got.append(m.text))
        members.append(await c.start())
    try:
        assert await wait_for(lambda: sum(q.topic == TOPIC for c in members for q in c.assignment()) == 4, 20)
        ts = await asyncio.to_thread(_produce_before_and_after, emulator, Path("/tmp"))
        assert await wait_for(lambda: len(got) >= 12, 20)
        async with Admin(ns) as admin:
            async def all_committed() -> bool:  # the members commit every 5 s and with each pull
                stats = await admin.consumer_progress("rc_py", TOPIC)
                return sum(w.consumer_offset for w in stats.offset_table.values()) == 12
            assert await wait_for(all_committed, 20)
            # without force an offset only moves back: a reset to the end changes nothing
            ahead = await admin.reset_offset_by_timestamp("rc_py", TOPIC, -1, force=False)
            assert sum(r.offset for r in ahead.rows) == 12
            await admin.reset_offset_by_timestamp("rc_py", TOPIC, ts)
        assert await wait_for(lambda: len(got) >= 18, 20), got
        await asyncio.sleep(0.5)
    finally:
        for c in members:
            await c.stop()
    assert sorted(got) == sorted([f"A-{i}" for i in range(6)] + [f"B-{i}" for i in range(6)] * 2)


async def test_s4_reset_one_queue_to_an_offset(emulator):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic("One", 2, 2)
        async with Producer("p", namesrv=ns) as p:
            queues = await p.fetch_queues("One")
            await p.send_batch("One", [f"q0-{i}" for i in range(5)], queue=queues[0])
            await p.send_batch("One", [f"q1-{i}" for i in range(5)], queue=queues[1])
        got: list[str] = []
        c = PushConsumer("one", namesrv=ns, consume_from=FIRST_OFFSET)
        c.subscribe("One")
        c.on_message(lambda m: got.append(m.text))
        async with c:
            assert await wait_for(lambda: len(got) == 10, 20)
            result = await admin.reset_offset("one", "One", 3, queue_id=1)
            assert [(r.queue.queue_id, r.offset) for r in result.rows] == [(1, 3)]
            assert await wait_for(lambda: len(got) == 12, 20), got
            await asyncio.sleep(0.3)
        assert sorted(got) == sorted([f"q0-{i}" for i in range(5)] + [f"q1-{i}" for i in range(5)] + ["q1-3", "q1-4"])
        with pytest.raises(Exception, match="not in consume queue range"):
            await admin.reset_offset("one", "One", 99)
