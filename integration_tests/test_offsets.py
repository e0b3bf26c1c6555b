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

from integration_tests.cppclient import produce, run_driver, start_driver
from rocketmq_emulator.broker.core.broker2client import RESET_SETTLE_S
from rocketmq_emulator.client import BROADCASTING, FIRST_OFFSET, Admin, Producer, PushConsumer
from rocketmq_emulator.protocol import RemotingCommand
from rocketmq_emulator.testing.emulator_thread import held_pulls
from rocketmq_emulator.testing.waits import wait_for, wait_until
from rocketmq_emulator.testing.command_line import run_cli

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
def _pull(topic: str, queue_id: int, offset: int, group: str = "ill") -> RemotingCommand:
    from rocketmq_emulator.protocol import RequestCode
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
    """6 messages `A-i`, then the timestamp returned, then 6 messages `B-i` (round robin over the queues). A 4.9.x
    broker resets each queue to the message stored *closest* to the time, so the time is taken well after A and
    right before B (sent from this process: no client start-up between the time and B)."""
    async def send() -> int:
        async with Producer("ab_producer", namesrv=emu.namesrv_addr) as p:
            for i in range(6):
                await p.send(topic, f"A-{i}")
            await asyncio.sleep(1.0)
            ts = int(time.time() * 1000)
            for i in range(6):
                await p.send(topic, f"B-{i}")
            return ts
    return asyncio.run(send())


SIDES = pytest.mark.parametrize("server_side", [True, False], ids=["server-side-reset", "client-side-reset"])


@SIDES
def test_s4_reset_by_time_two_cpp_consumers_of_one_group(emulator_factory, cpp_home, server_side):
    """Server-side: the broker moves each queue's next pull; client-side (4.9.x): each C++ member applies the
    RESET_CONSUMER_CLIENT_OFFSET it is sent, in the list form it can parse."""
    emulator = emulator_factory(use_server_side_reset_offset=server_side)
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


@SIDES
async def test_s4_reset_by_time_client_consumers_and_force(emulator_factory, server_side):
    emulator = emulator_factory(use_server_side_reset_offset=server_side)
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


# ----------------------------------------------------------------------------------------------------------
# S5: reset by timestamp, broadcasting
# ----------------------------------------------------------------------------------------------------------
def test_s5_reset_by_time_two_cpp_broadcasting_consumers(emulator, cpp_home):
    """With server-side reset (the default). Without it, the stock C++ client does not apply a broadcasting
    reset it is sent (like Java up to 4.9.7, it goes on from its offsets file): the broker's reset is the fix."""
    create_topic(emulator)
    members = [cpp_push(emulator, cpp_home, "bcr", model="broadcasting", name=n) for n in ("a", "b")]
    try:
        assert wait_until(lambda: held_pulls(emulator, TOPIC) >= 8, 40), [m.describe() for m in members]
        ts = _produce_before_and_after(emulator, cpp_home)
        for m in members:
            assert wait_until(lambda m=m: len(bodies(m)) >= 12, 30), m.describe()
        # no "consumer group not exist" for a broadcasting group: every queue takes the time's offset
        result = admin_call(emulator, lambda a: a.reset_offset_by_timestamp("bcr", TOPIC, ts))
        assert result.method == "broker" and sum(r.offset for r in result.rows) == 6
        for m in members:
            assert wait_until(lambda m=m: len(bodies(m)) >= 18, 40), m.describe()
        time.sleep(1.0)
    finally:
        for m in members:
            m.stop()
    for m in members:  # each member, with its own local offsets, consumed B again and nothing else
        assert bodies(m) == sorted([f"A-{i}" for i in range(6)] + [f"B-{i}" for i in range(6)] * 2)


@SIDES
async def test_s5_reset_by_time_client_broadcasting_consumers(emulator_factory, tmp_path, server_side):
    emulator = emulator_factory(use_server_side_reset_offset=server_side)
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic(TOPIC, 4, 4)
    got: dict[str, list[str]] = {"a": [], "b": []}
    members = []
    for name, sink in got.items():
        c = PushConsumer("bcr_py", namesrv=ns, message_model=BROADCASTING, instance_name=name,
                         offset_store_dir=str(tmp_path))
        c.subscribe(TOPIC)
        c.on_message(lambda m, sink=sink: sink.append(m.text))
        members.append(await c.start())
    try:
        assert await wait_for(lambda: emulator.call(lambda: sum(
            len(v) for k, v in emulator.broker.pull_hold_service.table.items() if k[0] == TOPIC)) >= 8, 20)
        ts = await asyncio.to_thread(_produce_before_and_after, emulator, tmp_path)
        assert await wait_for(lambda: all(len(v) >= 12 for v in got.values()), 20)
        async with Admin(ns) as admin:
            await admin.reset_offset_by_timestamp("bcr_py", TOPIC, ts)
        assert await wait_for(lambda: all(len(v) >= 18 for v in got.values()), 20), got
        await asyncio.sleep(0.5)
    finally:
        for c in members:
            await c.stop()
    for v in got.values():
        assert sorted(v) == sorted([f"A-{i}" for i in range(6)] + [f"B-{i}" for i in range(6)] * 2)


# ----------------------------------------------------------------------------------------------------------
# S6: server-side reset (the broker applies it at the group's next pull)
# ----------------------------------------------------------------------------------------------------------
def _raw_pull(topic: str, offset: int, *, commit: int | None = None, suspend_ms: int = 0):
    from rocketmq_emulator.protocol import RemotingCommand, RequestCode
    from rocketmq_emulator.protocol.headers import PullMessageRequestHeader
    flag = 0x4 | (0x1 if commit is not None else 0) | (0x2 if suspend_ms else 0)
    h = PullMessageRequestHeader(consumer_group="raw", topic=topic, queue_id=0, queue_offset=offset, max_msg_nums=32,
                                 sys_flag=flag, commit_offset=commit or 0, suspend_timeout_millis=suspend_ms,
                                 subscription="*")
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext())


def test_s6_a_consumer_that_ignores_broker_requests_is_reset_at_its_next_pull(emulator):
    """A raw consumer registered by heartbeat never answers RESET_CONSUMER_CLIENT_OFFSET; its pulls (with the
    stale commit offset they carry) and a stale UPDATE_CONSUMER_OFFSET must not undo the reset."""
    from integration_tests.rawclient import RawClient
    from rocketmq_emulator.protocol import RequestCode, ResponseCode as R
    from rocketmq_emulator.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData
    from rocketmq_emulator.protocol.headers import UpdateConsumerOffsetRequestHeader
    from rocketmq_emulator.protocol.message import decode_messages
    create_topic(emulator, "Raw", 1)
    committed = lambda: emulator.call(lambda: emulator.broker.consumer_offset_manager.query_offset("raw", "Raw", 0))

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            hb = HeartbeatData(client_id="raw-client", consumer_data_set=[ConsumerData(
                group_name="raw", subscription_data_set=[SubscriptionData(topic="Raw", sub_string="*")])])
            await c.request(RemotingCommand.request(RequestCode.HEART_BEAT, body=hb.encode(), language="GO"))
            async with Producer("p", namesrv=emulator.namesrv_addr) as p:
                await p.send_batch("Raw", [f"m{i}" for i in range(10)])
            first = await c.request(_raw_pull("Raw", 0))
            assert [m.body for m in decode_messages(first.body)] == [b"m%d" % i for i in range(10)]
            caught_up = await c.request(_raw_pull("Raw", 10, commit=10))
            assert caught_up.code == R.PULL_NOT_FOUND and await asyncio.to_thread(committed) == 10

            await asyncio.to_thread(admin_call, emulator, lambda a: a.reset_offset("raw", "Raw", 4))
            assert await asyncio.to_thread(committed) == 4  # recorded at once (a returning group starts there)
            stale = UpdateConsumerOffsetRequestHeader(consumer_group="raw", topic="Raw", queue_id=0, commit_offset=10)
            await c.request(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, stale.to_ext()))
            assert await asyncio.to_thread(committed) == 4  # a commit while the reset is pending is ignored
            # told of the reset, its first pull from the old offset may have been under way: "nothing new"
            waited = await c.request(_raw_pull("Raw", 10, commit=10))
            assert (waited.code, waited.remark) == (R.PULL_NOT_FOUND, "OFFSET_RESET_PENDING")
            await asyncio.sleep(RESET_SETTLE_S)
            moved = await c.request(_raw_pull("Raw", 10, commit=10))  # once settled, it proves it ignores the reset
            assert (moved.code, moved.ext_fields["nextBeginOffset"]) == (R.PULL_OFFSET_MOVED, "4")
            assert await asyncio.to_thread(committed) == 4  # the pulls' stale commit offset was not stored
            again = await c.request(_raw_pull("Raw", 4, commit=10))  # still carrying the stale offset
            assert [m.body for m in decode_messages(again.body)] == [b"m%d" % i for i in range(4, 10)]
            assert await asyncio.to_thread(committed) == 4  # stale: beyond what it has pulled since the reset
            done = await c.request(_raw_pull("Raw", 10, commit=7))
            assert done.code == R.PULL_NOT_FOUND and await asyncio.to_thread(committed) == 7
            return [r async for r in _drain(c)]
    requests = asyncio.run(scenario())
    assert RequestCode.RESET_CONSUMER_CLIENT_OFFSET in [r.code for r in requests]  # sent, never answered


def test_s6_a_java_client_told_of_a_reset_applies_it_itself(emulator):
    """A Java client sent RESET_CONSUMER_CLIENT_OFFSET pauses 10 s, then stores the reset offsets and rebuilds its
    queues. A pull of its old position meanwhile (one its reset woke, or in flight) is answered "nothing new", not
    moved: moving it as well made the client apply the reset twice and re-deliver part of a queue (seen with the
    Java 4.9.8 client). Its pull from the reset offset applies the reset; its stale commits stay ignored."""
    from integration_tests.rawclient import RawClient
    from rocketmq_emulator.protocol import RequestCode, ResponseCode as R
    from rocketmq_emulator.protocol.message import decode_messages
    create_topic(emulator, "Raw", 1)
    committed = lambda: emulator.call(lambda: emulator.broker.consumer_offset_manager.query_offset("raw", "Raw", 0))

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            await _consumed_ten(c, emulator, "Raw", "java-client")
            await asyncio.to_thread(admin_call, emulator, lambda a: a.reset_offset("raw", "Raw", 4))
            old_position = await c.request(_raw_pull("Raw", 10, commit=10))
            assert (old_position.code, old_position.remark) == (R.PULL_NOT_FOUND, "OFFSET_RESET_PENDING")  # not moved
            assert await asyncio.to_thread(committed) == 4  # its stale commit offset was not stored
            applied = await c.request(_raw_pull("Raw", 4))
            assert [m.body for m in decode_messages(applied.body)] == [b"m%d" % i for i in range(4, 10)]
            after = await c.request(_raw_pull("Raw", 10, commit=10))
            return [r async for r in _drain(c)], after
    requests, after = asyncio.run(scenario())
    assert RequestCode.RESET_CONSUMER_CLIENT_OFFSET in [r.code for r in requests]
    assert after.code == R.PULL_NOT_FOUND and committed() == 10


def test_s6_a_client_that_ignores_the_reset_is_moved_once_the_telling_has_settled(emulator):
    """A client told of a reset that keeps pulling from its old offset (ali-ons 3.x reports JAVA and ignores
    RESET_CONSUMER_CLIENT_OFFSET) is not applying it: its first pull from there is answered "nothing new" (it may
    have been under way), and so is any other within RESET_SETTLE_S of the telling (a client applying the reset may
    send one before its reset handler has paused the queue); its next one is moved to the reset offset, and every
    message from there comes again."""
    from integration_tests.rawclient import RawClient
    from rocketmq_emulator.protocol import RequestCode, ResponseCode as R
    from rocketmq_emulator.protocol.message import decode_messages
    create_topic(emulator, "Deaf", 1)

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            await _consumed_ten(c, emulator, "Deaf", "deaf-client")
            await asyncio.to_thread(admin_call, emulator, lambda a: a.reset_offset("raw", "Deaf", 0))
            first = await c.request(_raw_pull("Deaf", 10, commit=10))
            settling = await c.request(_raw_pull("Deaf", 10, commit=10))
            await asyncio.sleep(RESET_SETTLE_S)
            second = await c.request(_raw_pull("Deaf", 10, commit=10))
            again = await c.request(_raw_pull("Deaf", int(second.ext_fields["nextBeginOffset"])))
            return first, settling, second, again, [r async for r in _drain(c)]
    first, settling, second, again, requests = asyncio.run(scenario())
    assert RequestCode.RESET_CONSUMER_CLIENT_OFFSET in [r.code for r in requests]  # it was told
    assert (first.code, first.remark) == (R.PULL_NOT_FOUND, "OFFSET_RESET_PENDING")
    assert (settling.code, settling.remark) == (R.PULL_NOT_FOUND, "OFFSET_RESET_PENDING")
    assert (second.code, second.ext_fields["nextBeginOffset"]) == (R.PULL_OFFSET_MOVED, "0")
    assert [m.body for m in decode_messages(again.body)] == [b"m%d" % i for i in range(10)]


def test_s6_a_told_clients_held_pull_counts_as_its_first_pull_from_the_old_offset(emulator):
    """The pull a reset wakes is the told client's first from its old offset. Its next one from there right away
    (the suspend flag set) is what a client applying the reset sends when its pull thread beats its reset handler
    (Go 2.1.2): it is held until the telling settles and answered "nothing new", never moved (a move would make
    such a client apply the reset twice). A pull from there after that shows it ignores the reset: moved at once."""
    from integration_tests.rawclient import RawClient
    from rocketmq_emulator.protocol import ResponseCode as R
    create_topic(emulator, "HeldTold", 1)

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            await _consumed_ten(c, emulator, "HeldTold", "held-told-client")
            held = c.send(_raw_pull("HeldTold", 10, commit=10, suspend_ms=30_000))
            assert await wait_for(lambda: emulator.call(lambda: emulator.broker.pull_hold_service.held_count()) == 1,
                                  10)
            await asyncio.to_thread(admin_call, emulator, lambda a: a.reset_offset("raw", "HeldTold", 3))
            woken = await asyncio.wait_for(held, 10)
            started = time.monotonic()
            racing = await c.request(_raw_pull("HeldTold", 10, commit=10, suspend_ms=30_000))
            waited = time.monotonic() - started
            return woken, racing, waited, await c.request(_raw_pull("HeldTold", 10, commit=10))
    woken, racing, waited, next_pull = asyncio.run(scenario())
    assert (woken.code, woken.remark) == (R.PULL_NOT_FOUND, "OFFSET_RESET_PENDING")
    assert (racing.code, racing.remark) == (R.PULL_NOT_FOUND, "OFFSET_RESET_PENDING")
    assert RESET_SETTLE_S - 0.5 < waited < RESET_SETTLE_S + 1  # held until the telling settled, not the 30 s
    assert (next_pull.code, next_pull.ext_fields["nextBeginOffset"]) == (R.PULL_OFFSET_MOVED, "3")


async def _consumed_ten(c, emulator, topic: str, client_id: str) -> None:
    """A consumer of group "raw" on connection `c` (heartbeat as a Java client) that pulled the 10 messages just
    sent to `topic` and committed them."""
    from rocketmq_emulator.protocol import RequestCode
    from rocketmq_emulator.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData
    hb = HeartbeatData(client_id=client_id, consumer_data_set=[ConsumerData(
        group_name="raw", subscription_data_set=[SubscriptionData(topic=topic, sub_string="*")])])
    await c.request(RemotingCommand.request(RequestCode.HEART_BEAT, body=hb.encode(), language="JAVA"))
    async with Producer("p", namesrv=emulator.namesrv_addr) as p:
        await p.send_batch(topic, [f"m{i}" for i in range(10)])
    await c.request(_raw_pull(topic, 0))
    await c.request(_raw_pull(topic, 10, commit=10))


async def _drain(c):
    while not c.server_requests.empty():
        yield c.server_requests.get_nowait()


def test_s6_a_held_pull_at_reset_time_is_answered_with_the_reset(emulator):
    """Upstream issue #4206: a pull held (long polling) when the reset is made comes back with the old offset;
    here storing the reset wakes it at once with "nothing new" (it must not undo the reset), and the client's
    next pull once the telling has settled, still from the old offset, is moved to the reset offset."""
    from integration_tests.rawclient import RawClient
    from rocketmq_emulator.protocol import ResponseCode as R
    create_topic(emulator, "Held", 1)

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            async with Producer("p", namesrv=emulator.namesrv_addr) as p:
                await p.send_batch("Held", [f"m{i}" for i in range(6)])
            held = c.send(_raw_pull("Held", 6, commit=6, suspend_ms=30_000))
            assert await wait_for(lambda: emulator.call(lambda: emulator.broker.pull_hold_service.held_count()) == 1,
                                  10)
            started = time.monotonic()
            await asyncio.to_thread(admin_call, emulator, lambda a: a.reset_offset("raw", "Held", 2))
            answer = await asyncio.wait_for(held, 10)
            waited = time.monotonic() - started
            await asyncio.sleep(RESET_SETTLE_S)
            return answer, waited, await c.request(_raw_pull("Held", 6, commit=6))
    answer, waited, next_pull = asyncio.run(scenario())
    assert (answer.code, answer.remark, answer.ext_fields["nextBeginOffset"]) == (
        R.PULL_NOT_FOUND, "OFFSET_RESET_PENDING", "6")
    assert waited < 10  # not the 30 s hold
    assert (next_pull.code, next_pull.ext_fields["nextBeginOffset"]) == (R.PULL_OFFSET_MOVED, "2")
    assert emulator.call(lambda: emulator.broker.consumer_offset_manager.query_offset("raw", "Held", 0)) == 2


def test_s6_a_cpp_group_offline_at_reset_time_starts_from_the_reset(emulator, cpp_home):
    create_topic(emulator)
    produce(emulator, cpp_home, 12, topic=TOPIC, prefix="m-")
    first = run_driver(["push", "--namesrv", emulator.namesrv_addr, "--topic", TOPIC, "--group", "away",
                        "--expect", "12", "--duration", "40"], timeout=60, home=cpp_home / "first").events
    assert len([e for e in first if e["event"] == "received"]) == 12
    result = admin_call(emulator, lambda a: a.reset_offset("away", TOPIC, 1))  # nobody online: recorded
    assert result.method == "broker" and [r.offset for r in result.rows] == [1, 1, 1, 1]
    again = run_driver(["push", "--namesrv", emulator.namesrv_addr, "--topic", TOPIC, "--group", "away",
                        "--expect", "8", "--duration", "40"], timeout=60, home=cpp_home / "again").events
    stored = sorted(e["body"] for e in first if e["event"] == "received" and e["queue_offset"] >= 1)
    assert sorted(e["body"] for e in again if e["event"] == "received") == stored


# ----------------------------------------------------------------------------------------------------------
# S7: server-side broadcast offsets
# ----------------------------------------------------------------------------------------------------------
def test_s7_a_broadcasting_cpp_consumer_restarted_without_its_offsets_file_resumes(emulator, cpp_home):
    import shutil
    create_topic(emulator)
    home = cpp_home / "bc"
    c = cpp_push(emulator, home.parent, "bcs", model="broadcasting", name="bc")
    try:
        assert wait_until(lambda: held_pulls(emulator, TOPIC) >= 4, 40), c.describe()
        produce(emulator, cpp_home, 6, topic=TOPIC, prefix="seen-")
        assert wait_until(lambda: len(bodies(c)) >= 6 and held_pulls(emulator, TOPIC) >= 4, 30), c.describe()
    finally:
        c.stop()
    progress = admin_call(emulator, lambda a: a.consumer_progress("bcs"))  # the broker knows the group's offsets
    assert sum(w.consumer_offset for mq, w in progress.offset_table.items() if mq.topic == TOPIC) == 6
    shutil.rmtree(home / ".rocketmq_offsets")  # the restarted member has no local offsets
    produce(emulator, cpp_home, 4, topic=TOPIC, prefix="missed-")
    again = cpp_push(emulator, home.parent, "bcs", model="broadcasting", name="bc")
    try:
        assert wait_until(lambda: len(bodies(again)) >= 4, 40), again.describe()
        time.sleep(1.0)
    finally:
        again.stop()
    assert bodies(again) == sorted(f"missed-{i}" for i in range(4))  # not from the end: nothing skipped


async def test_s7_broadcast_group_offset_is_the_minimum_of_its_live_clients(emulator, tmp_path):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic("BcMin", 1, 1)
        fast: list[str] = []
        a = PushConsumer("bcmin", namesrv=ns, message_model=BROADCASTING, instance_name="fast",
                         offset_store_dir=str(tmp_path))
        a.subscribe("BcMin")
        a.on_message(lambda m: fast.append(m.text))
        b = PushConsumer("bcmin", namesrv=ns, message_model=BROADCASTING, instance_name="slow",
                         offset_store_dir=str(tmp_path))
        b.subscribe("BcMin")
        b.on_message(lambda m: None)
        async with a, b:
            assert await wait_for(lambda: emulator.call(lambda: emulator.broker.pull_hold_service.held_count()) >= 2,
                                  20)
            b.pause()  # the slow member stops pulling where it is
            async with Producer("p", namesrv=ns) as p:
                await p.send_batch("BcMin", [f"m{i}" for i in range(5)])
            assert await wait_for(lambda: len(fast) == 5, 20)
            stats = await admin.consumer_progress("bcmin")
            [w] = [w for mq, w in stats.offset_table.items() if mq.topic == "BcMin"]
            assert (w.broker_offset, w.consumer_offset) == (5, 0)  # the slow member holds the group back
            assert w.pull_offset == 5  # ... while the fast one has pulled everything
            b.resume()
            async def caught_up() -> bool:
                s = await admin.consumer_progress("bcmin")
                return [w.consumer_offset for mq, w in s.offset_table.items() if mq.topic == "BcMin"] == [5]
            assert await wait_for(caught_up, 20)


# ----------------------------------------------------------------------------------------------------------
# S8: ready and inflight
# ----------------------------------------------------------------------------------------------------------
def _progress_json(emu, group: str) -> list[dict]:
    out = run_cli("admin", "consumerProgress", "-n", emu.namesrv_addr, "-g", group, "--json")
    assert out.returncode == 0, out.stderr
    return [o for o in json.loads(out.stdout)["offsets"] if not o["topic"].startswith("%")]


def _heartbeat(group: str, topic: str):
    from rocketmq_emulator.protocol import RemotingCommand, RequestCode
    from rocketmq_emulator.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData
    hb = HeartbeatData(client_id=f"{group}-client", consumer_data_set=[ConsumerData(
        group_name=group, subscription_data_set=[SubscriptionData(topic=topic, sub_string="*")])])
    return RemotingCommand.request(RequestCode.HEART_BEAT, body=hb.encode())


def test_s8_ready_and_inflight_follow_pulls_commits_and_resets(emulator):
    from integration_tests.rawclient import RawClient
    create_topic(emulator, "Ready", 1)

    def figures():
        [row] = _progress_json(emulator, "raw")
        return row["brokerOffset"], row["consumerOffset"], row["pullOffset"], row["inflight"], row["ready"]

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            await c.request(_heartbeat("raw", "Ready"))  # registers the group (and its retry topic)
            async with Producer("p", namesrv=emulator.namesrv_addr) as p:
                await p.send_batch("Ready", [f"m{i}" for i in range(50)])
            pull = _raw_pull("Ready", 0, commit=0)
            pull.ext_fields["maxMsgNums"] = "10"
            await c.request(pull)
            steps = {"pulled 10": await asyncio.to_thread(figures)}
            await c.request(_raw_pull("Ready", 10, commit=5))  # commits 5, pulls 10..41
            steps["committed 5"] = await asyncio.to_thread(figures)
            await asyncio.to_thread(admin_call, emulator, lambda a: a.reset_offset("raw", "Ready", 0))
            steps["reset back"] = await asyncio.to_thread(figures)
            await asyncio.to_thread(admin_call, emulator, lambda a: a.reset_offset("raw", "Ready", 50))
            steps["reset forward"] = await asyncio.to_thread(figures)
            return steps
    steps = asyncio.run(scenario())
    assert steps == {  # (max, committed, pulled, inflight, ready)
        "pulled 10": (50, 0, 10, 10, 40),
        "committed 5": (50, 5, 42, 37, 8),
        "reset back": (50, 0, 0, 0, 50),
        "reset forward": (50, 50, 50, 0, 0),
    }


async def test_s8_inflight_of_a_busy_client_consumer(emulator):
    ns = emulator.namesrv_addr
    release = asyncio.Event()
    async with Admin(ns) as admin:
        await admin.create_topic("Busy", 1, 1)
        async with Producer("p", namesrv=ns) as p:
            await p.send_batch("Busy", [f"m{i}" for i in range(20)])
        c = PushConsumer("busy", namesrv=ns, consume_from=FIRST_OFFSET, consume_concurrency=1)
        c.subscribe("Busy")

        async def slow(msg):
            await release.wait()
        c.on_message(slow)
        async with c:
            async def all_pulled() -> bool:
                s = await admin.consumer_progress("busy", "Busy")
                return [w.pull_offset for w in s.offset_table.values()] == [20]
            assert await wait_for(all_pulled, 20)
            rows = await asyncio.to_thread(_progress_json, emulator, "busy")
            assert [(r["consumerOffset"], r["pullOffset"], r["inflight"], r["ready"]) for r in rows] == [(0, 20, 20, 0)]
            release.set()

            async def all_done() -> bool:
                s = await admin.consumer_progress("busy", "Busy")
                return [w.consumer_offset for w in s.offset_table.values()] == [20]
            assert await wait_for(all_done, 20)
        rows = await asyncio.to_thread(_progress_json, emulator, "busy")
        assert [(r["consumerOffset"], r["inflight"], r["ready"]) for r in rows] == [(20, 0, 0)]


async def test_get_consumer_status_relays_each_clients_offsets(emulator):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic("Status", 2, 2)
        async with Producer("p", namesrv=ns) as p:
            await p.send_batch("Status", [f"m{i}" for i in range(6)])
        got: list[str] = []
        members = []
        for name in ("a", "b"):
            c = PushConsumer("status", namesrv=ns, instance_name=name, consume_from=FIRST_OFFSET)
            c.subscribe("Status")
            c.on_message(lambda m: got.append(m.text))
            members.append(await c.start())
        try:
            # (a queue may move from the first member to the second: at least once, so count distinct bodies)
            assert await wait_for(lambda: len(set(got)) == 6 and
                                  sum(q.topic == "Status" for c in members for q in c.assignment()) == 2, 20), \
                (got, [c.assignment() for c in members])
            # a queue that moved is re-read by its new owner (at least once): its in-memory offset reaches the
            # end only once it has caught up, so wait for that rather than read the status once
            seen: dict = {}

            async def caught_up() -> bool:
                seen["status"] = status = await admin.get_consumer_status("status", "Status")
                owned = {mq.queue_id: off for table in status.values() for mq, off in table.items()}
                return sum(owned.values()) == 6 and set(owned) == {0, 1}
            assert await wait_for(caught_up, 20), seen
            assert sorted(seen["status"]) == sorted(c.client_id for c in members)
            only_a = await admin.get_consumer_status("status", "Status", members[0].client_id)
            assert list(only_a) == [members[0].client_id]
        finally:
            for c in members:
                await c.stop()
        # 4.9.8 (and 5.3.3) answer the NullPointerException their getConsumeStatus runs into for a group gone
        with pytest.raises(Exception, match="NullPointerException: Cannot invoke"):
            await admin.get_consumer_status("status", "Status")
