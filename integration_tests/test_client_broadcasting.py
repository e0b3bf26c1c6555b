"""Broadcasting consumers: every member gets every message, offsets live in offsets.json (Java's format and
place), a restart resumes from the file, a file whose every offset is illegal recovers (seed 000), and a
RESET_CONSUMER_CLIENT_OFFSET sent by the broker is applied and persisted (§10.7)."""

from __future__ import annotations

from pathlib import Path

from rocketmq_emulator.client import BROADCASTING, Admin, Producer, PushConsumer
from rocketmq_emulator.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.protocol.admin_bodies import OffsetSerializeWrapper, ResetOffsetBody
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.headers import ResetOffsetRequestHeader
from rocketmq_emulator.testing.emulator_thread import held_pulls
from rocketmq_emulator.testing.waits import wait_for

TOPIC = "BcTopic"
GROUP = "bc_group"


def broadcaster(ns: str, name: str, store_dir: Path, received: list) -> PushConsumer:
    c = PushConsumer(GROUP, namesrv=ns, message_model=BROADCASTING, instance_name=name,
                     offset_store_dir=str(store_dir))
    c.subscribe(TOPIC)
    c.on_message(lambda m: received.append(m.text))
    return c


async def produce(ns: str, prefix: str, count: int) -> None:
    async with Producer("bc_producer", namesrv=ns) as p:
        for i in range(count):
            await p.send(TOPIC, f"{prefix}{i}", tags="T")


async def test_each_member_gets_everything_and_resumes_from_its_offsets_file(emulator, tmp_path):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic(TOPIC, 4, 4)
    got = {"a": [], "b": []}
    consumers = {n: broadcaster(ns, n, tmp_path, got[n]) for n in got}
    for c in consumers.values():
        await c.start()
    try:
        # a new broadcasting consumer starts at the end of each queue: wait until both wait for new messages
        assert await wait_for(lambda: held_pulls(emulator, TOPIC) >= 8, 20)
        await produce(ns, "first-", 40)
        for n in got:
            assert await wait_for(lambda n=n: len(got[n]) >= 40, 20), got[n]
    finally:
        for c in consumers.values():
            await c.stop()
    for n in got:
        assert sorted(got[n]) == sorted(f"first-{i}" for i in range(40))
        path = tmp_path / ".rocketmq_offsets" / consumers[n].client_id / GROUP / "offsets.json"
        assert consumers[n].client_id.endswith(f"@{n}") and path.is_file()
        assert path.read_text().startswith('{\n\t"offsetTable":{{')
        table = OffsetSerializeWrapper.decode(path.read_bytes()).offset_table
        status = await _status(ns)
        assert table == {mq: t.max_offset for mq, t in status.items()}

    await produce(ns, "second-", 20)  # while both are down
    got = {"a": [], "b": []}
    consumers = {n: broadcaster(ns, n, tmp_path, got[n]) for n in got}
    for c in consumers.values():
        await c.start()
    try:
        for n in got:
            assert await wait_for(lambda n=n: len(got[n]) >= 20, 20), got[n]
    finally:
        for c in consumers.values():
            await c.stop()
    for n in got:
        assert sorted(got[n]) == sorted(f"second-{i}" for i in range(20)), got[n]


async def _status(ns: str):
    async with Admin(ns) as admin:
        return await admin.topic_status(TOPIC)


async def test_every_offset_illegal_recovers(emulator, tmp_path):
    """Seed 000: offsets.json holds an offset beyond the end for every queue; the consumer must correct them
    (memory first, then file) and consume new messages instead of looping on OFFSET_ILLEGAL."""
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic(TOPIC, 2, 2)
    await produce(ns, "old-", 10)
    received: list[str] = []
    c = broadcaster(ns, "x", tmp_path, received)
    path = tmp_path / ".rocketmq_offsets" / c.client_id / GROUP / "offsets.json"
    path.parent.mkdir(parents=True)
    bad = {MessageQueue(TOPIC, "broker-a", q): 999_999_999 for q in range(2)}
    path.write_bytes(OffsetSerializeWrapper(offset_table=bad).encode())
    async with c:
        assert await wait_for(lambda: held_pulls(emulator, TOPIC) >= 2, 20)
        await produce(ns, "new-", 6)
        assert await wait_for(lambda: len(received) >= 6, 20), received
        status = await _status(ns)
        assert await wait_for(lambda: OffsetSerializeWrapper.decode(path.read_bytes()).offset_table.keys() == bad.keys()
                              and all(v <= status[mq].max_offset for mq, v in
                                      OffsetSerializeWrapper.decode(path.read_bytes()).offset_table.items()), 10)
    assert sorted(received) == sorted(f"new-{i}" for i in range(6))


def send_reset(emu, group: str, topic: str, table: dict[MessageQueue, int]) -> int:
    """What the broker does for INVOKE_BROKER_TO_RESET_OFFSET (§9.11 step 3-4): RESET_CONSUMER_CLIENT_OFFSET,
    oneway, to every channel of the group. Returns the number of channels."""
    def run() -> int:
        gi = emu.broker.consumer_manager.get(group)
        header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=-1, is_force=False).to_ext()
        for conn in gi.channels:
            conn.invoke_oneway(RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header,
                                                       ResetOffsetBody(offset_table=table).encode()))
        return len(gi.channels)
    return emu.call(run)


async def test_reset_offset_request_rewinds_a_broadcasting_consumer(emulator, tmp_path):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic(TOPIC, 2, 2)
    received: list[str] = []
    c = broadcaster(ns, "r", tmp_path, received)
    async with c:
        assert await wait_for(lambda: held_pulls(emulator, TOPIC) >= 2, 20)
        await produce(ns, "m-", 10)
        assert await wait_for(lambda: len(received) >= 10, 20)
        table = {MessageQueue(TOPIC, "broker-a", q): 0 for q in range(2)}
        assert send_reset(emulator, GROUP, TOPIC, table) == 1
        assert await wait_for(lambda: len(received) >= 20, 20), received
    assert sorted(received) == sorted([f"m-{i}" for i in range(10)] * 2)
    assert sum(OffsetSerializeWrapper.decode(c.offset_store.path.read_bytes()).offset_table.values()) == 10
