"""The broker's broadcast offset store resumes broadcasting members (issue 21): a member with a stable client
id restarted without its local offsets file (the official Java 4.9.8 client), a clean stop of the broker, a
member back after its entry expired, and a broadcasting group's offsets moved to another broker."""

from __future__ import annotations

import asyncio
import shutil

from rocketmq_emulator.broker.state.broadcast_offset import BroadcastOffsetManager
from rocketmq_emulator.client import BROADCASTING, FIRST_OFFSET, Admin, Producer, PushConsumer
from rocketmq_emulator.protocol.admin_bodies import ConsumerOffsetSerializeWrapper
from rocketmq_emulator.testing.command_line import run_cli as run
from rocketmq_emulator.testing.emulator_thread import held_pulls
from rocketmq_emulator.testing.waits import wait_for, wait_until


async def create_topic(ns: str, topic: str, queues: int) -> None:
    async with Admin(ns) as admin:
        await admin.create_topic(topic, queues, queues)


async def send(ns: str, topic: str, per_queue: dict[int, list[str]]) -> None:
    async with Producer("bc_offsets_pg", namesrv=ns) as p:
        for queue, bodies in per_queue.items():
            for body in bodies:
                await p.send(topic, body, queue=queue)


def member(ns: str, group: str, topic: str, store_dir, got: list, name: str = "m", **kw) -> PushConsumer:
    c = PushConsumer(group, namesrv=ns, message_model=BROADCASTING, instance_name=name,
                     offset_store_dir=str(store_dir), **kw)
    c.subscribe(topic)
    c.on_message(lambda m: got.append(m.text))
    return c


async def group_offsets(ns: str, group: str, topic: str) -> list[int]:
    async with Admin(ns) as admin:
        stats = await admin.consumer_progress(group)
    return [w.consumer_offset for mq, w in sorted(stats.offset_table.items(), key=lambda kv: kv[0].queue_id)
            if mq.topic == topic]


# ----------------------------------------------------------------------------------------------------------
# a member with a stable client id (Java's ip@DEFAULT) restarted within the expiry, without its offsets file
# ----------------------------------------------------------------------------------------------------------
def test_a_java_member_restarted_without_its_offsets_file_gets_what_it_missed(emulator, java_clients, tmp_path):
    ns, topic, group = emulator.namesrv_addr, "BcJava", "bc_java"
    asyncio.run(create_topic(ns, topic, 2))
    home = tmp_path / "member"
    seen = {0: [f"seen-0-{i}" for i in range(4)], 1: [f"seen-1-{i}" for i in range(3)]}
    first = java_clients.start("PushConsume", ns, "BROADCASTING", group, 1000, 90, topic, "last", timeout=120,
                               home=home)
    try:
        started = first.wait_for("consumer_started", 60)
        assert started and started["clientId"].endswith("@DEFAULT"), first.describe()
        assert wait_until(lambda: held_pulls(emulator, topic) >= 2, 60), first.describe()
        asyncio.run(send(ns, topic, seen))
        assert wait_until(lambda: len(first.of("consumed")) >= 7 and held_pulls(emulator, topic) >= 2, 60), \
            first.describe()
        offsets_dir = home / ".rocketmq_offsets"  # the client writes its offsets file 10 s after its start
        assert wait_until(lambda: any(offsets_dir.rglob("offsets.json")), 30), first.describe()
    finally:
        first.stop()
    assert asyncio.run(group_offsets(ns, group, topic)) == [4, 3]  # where it was: it had pulled 4 and 3
    shutil.rmtree(offsets_dir)  # restarted without its local offsets file, within the entry's expiry
    missed = {0: ["missed-0-0"], 1: ["missed-1-0"]}
    asyncio.run(send(ns, topic, missed))  # its first pulls now ask for 5 and 4, the end of each queue

    again = java_clients.run("PushConsume", ns, "BROADCASTING", group, 2, 75, topic, "last", timeout=100, home=home)
    assert again.of("consumer_started")[0]["clientId"] == started["clientId"]
    assert sorted(e["body"] for e in again.of("consumed")) == ["missed-0-0", "missed-1-0"], again.describe()
    assert again.returncode == 0, again.describe()


# ----------------------------------------------------------------------------------------------------------
# a clean stop of the broker records the latest broadcast offsets
# ----------------------------------------------------------------------------------------------------------
async def test_a_clean_stop_keeps_the_latest_broadcast_offsets(emulator, tmp_path, monkeypatch):
    # no periodic scan during the test (5 s upstream): what the restarted broker knows is what the stop recorded
    monkeypatch.setattr(BroadcastOffsetManager, "scan_interval_s", 3600.0)
    emulator.restart()
    ns, topic, group = emulator.namesrv_addr, "BcStop", "bc_stop"
    await create_topic(ns, topic, 4)
    got: list[str] = []
    c = member(ns, group, topic, tmp_path, got)
    async with c:
        assert await wait_for(lambda: held_pulls(emulator, topic) >= 4, 20)
        await send(ns, topic, {0: ["a-0"]})
        assert await wait_for(lambda: len(got) == 1 and held_pulls(emulator, topic) >= 4, 20)
        emulator.call(emulator.broker.broadcast_offsets.scan)  # a scan records the group's offsets then
        assert emulator.broker.consumer_offset_manager.query_offsets_of_group(f"{group}@broadcast", topic) == \
            {0: 1, 1: 0, 2: 0, 3: 0}
        await send(ns, topic, {q: [f"b-{q}-{i}" for i in range(2)] for q in range(4)})
        assert await wait_for(lambda: len(got) == 9 and held_pulls(emulator, topic) >= 4, 20), got
        assert await group_offsets(ns, group, topic) == [3, 2, 2, 2]

        await asyncio.to_thread(emulator.restart)  # stop (clean) and start on the same ports and store
        assert emulator.call(lambda: emulator.broker.consumer_offset_manager.query_offsets_of_group(
            f"{group}@broadcast", topic)) == {0: 3, 1: 2, 2: 2, 3: 2}
        assert await wait_for(lambda: held_pulls(emulator, topic) >= 4, 30)  # the member pulls again
        await send(ns, topic, {q: [f"c-{q}"] for q in range(4)})
        assert await wait_for(lambda: len(got) >= 13, 20), got
        await asyncio.sleep(1.0)
    assert sorted(got) == sorted(["a-0"] + [f"b-{q}-{i}" for q in range(4) for i in range(2)]
                                 + [f"c-{q}" for q in range(4)])  # nothing twice


# ----------------------------------------------------------------------------------------------------------
# a member back after its entry expired resumes at its own position on every queue
# ----------------------------------------------------------------------------------------------------------
async def test_a_member_back_after_its_entry_expired_resumes_every_queue_at_its_own_position(
        emulator_factory, tmp_path):
    emu = emulator_factory(broadcast_offset_expire_second=1.0)
    ns, topic, group = emu.namesrv_addr, "BcExpire", "bc_expire"
    await create_topic(ns, topic, 4)
    slow_got: list[str] = []
    slow = member(ns, group, topic, tmp_path / "slow", slow_got, name="slow")
    async with slow:
        got: list[str] = []
        fast = member(ns, group, topic, tmp_path / "fast", got, name="fast")
        async with fast:
            assert await wait_for(lambda: held_pulls(emu, topic) >= 8, 20)
            slow.pause()  # still connected, it holds the group's offset at 0
            await send(ns, topic, {q: [f"seen-{q}"] for q in range(4)})
            assert await wait_for(lambda: len(got) == 4 and held_pulls(emu, topic) >= 4, 20), got
        shutil.rmtree(tmp_path / "fast")  # it comes back without its offsets file ...

        def expired() -> bool:
            return any(g == group and cid == fast.client_id for _, g, cid in emu.broker.broadcast_offsets.archive)
        assert await wait_for(lambda: emu.call(expired), 20)  # ... after its entry expired
        assert await group_offsets(ns, group, topic) == [0, 0, 0, 0]  # the slow member's
        await send(ns, topic, {q: [f"missed-{q}"] for q in range(4)})

        again: list[str] = []
        back = member(ns, group, topic, tmp_path / "fast", again, name="fast")
        async with back:
            assert await wait_for(lambda: len(again) >= 4, 20), again
            await asyncio.sleep(1.0)
        assert back.client_id == fast.client_id
        assert sorted(again) == [f"missed-{q}" for q in range(4)]  # from its own 1 on every queue, not the group's 0


# ----------------------------------------------------------------------------------------------------------
# exportOffsets / importOffsets carry a broadcasting group's offsets
# ----------------------------------------------------------------------------------------------------------
def test_a_broadcasting_groups_offsets_move_to_another_broker(emulator_factory, tmp_path):
    a, b = emulator_factory(), emulator_factory()
    topic, group = "BcMoved", "bc_moved"

    async def fill(ns: str) -> None:
        await create_topic(ns, topic, 2)
        await send(ns, topic, {0: ["m0", "m1", "m2"], 1: ["m3", "m4"]})

    async def consume_on_a() -> None:
        got: list[str] = []
        async with member(a.namesrv_addr, group, topic, tmp_path / "on-a", got, name="x", consume_from=FIRST_OFFSET):
            assert await wait_for(lambda: len(got) == 5, 20), got
    asyncio.run(fill(a.namesrv_addr))
    asyncio.run(fill(b.namesrv_addr))  # the same messages at the same queue offsets
    asyncio.run(consume_on_a())
    a.call(a.broker.broadcast_offsets.scan)

    exported = tmp_path / "offsets.json"
    proc = run("admin", "exportOffsets", "-n", a.namesrv_addr, "-g", group, "-f", str(exported))
    assert proc.returncode == 0, proc.stderr
    assert ConsumerOffsetSerializeWrapper.decode(exported.read_bytes()).offset_table == {
        f"{topic}@{group}@broadcast": {0: 3, 1: 2}}
    proc = run("admin", "importOffsets", "-n", b.namesrv_addr, "-f", str(exported))
    assert proc.returncode == 0 and proc.stdout.strip() == f"2 queue offset(s) imported from {exported}", proc.stderr
    assert b.call(lambda: b.broker.consumer_offset_manager.query_offsets_of_group(f"{group}@broadcast", topic)) \
        == {0: 3, 1: 2}

    async def on_b() -> list[str]:
        await send(b.namesrv_addr, topic, {0: ["new-on-b"]})
        got: list[str] = []
        async with member(b.namesrv_addr, group, topic, tmp_path / "on-b", got, name="x"):
            assert await wait_for(lambda: len(got) >= 1, 20), got
            await asyncio.sleep(1.0)
        return got
    assert asyncio.run(on_b()) == ["new-on-b"]  # a member with no offsets file starts from the imported offsets
