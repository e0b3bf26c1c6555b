"""Offsets between brokers in consumerOffset.json's format (seed 004): `admin exportOffsets` / `importOffsets`,
a file written by a real broker imported, and a consumer moved to another broker keeping its position."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketmq_emulator.client import FIRST_OFFSET, Admin, Producer, PushConsumer
from rocketmq_emulator.protocol.admin_bodies import ConsumerOffsetSerializeWrapper
from rocketmq_emulator.testing.command_line import run_cli as run
from rocketmq_emulator.testing.emulator_thread import held_pulls
from rocketmq_emulator.testing.waits import wait_for

TOPIC = "Moved"
#: consumerOffset.json as a 4.9.x broker writes it
UPSTREAM_FILE = (Path(__file__).resolve().parents[1] / "tests" / "golden" / "consumerOffset.json").read_bytes()


async def fill(ns: str, n: int) -> None:
    async with Admin(ns) as admin:
        await admin.create_topic(TOPIC, 2, 2)
    async with Producer("fill_pg", namesrv=ns) as producer:
        for i in range(n):
            await producer.send(TOPIC, f"m{i}", queue=i % 2)


async def consume(ns: str, group: str, until: int, got: list[str]) -> None:
    consumer = PushConsumer(group, namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe(TOPIC)
    consumer.on_message(lambda m: got.append(m.text))
    async with consumer:
        assert await wait_for(lambda: len(set(got)) >= until, 30), got


def test_a_consumer_moved_to_another_broker_keeps_its_position(emulator_factory, tmp_path):
    a, b = emulator_factory(), emulator_factory()
    asyncio.run(fill(a.namesrv_addr, 10))
    asyncio.run(fill(b.namesrv_addr, 10))  # the same messages at the same queue offsets
    first: list[str] = []
    asyncio.run(consume(a.namesrv_addr, "mover", 10, first))  # consumed everything on A, committed at stop

    exported = tmp_path / "offsets.json"
    proc = run("admin", "exportOffsets", "-n", a.namesrv_addr, "-g", "mover", "-f", str(exported))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"3 queue offset(s) of group mover written to {exported}"
    wrapper = ConsumerOffsetSerializeWrapper.decode(exported.read_bytes())
    assert wrapper.offset_table == {f"{TOPIC}@mover": {0: 5, 1: 5}, "%RETRY%mover@mover": {0: 0}}
    proc = run("admin", "importOffsets", "-n", b.namesrv_addr, "-f", str(exported))
    assert proc.returncode == 0 and proc.stdout.strip() == f"3 queue offset(s) imported from {exported}"

    async def on_b() -> list[str]:
        async with Producer("fill_pg", namesrv=b.namesrv_addr) as producer:
            await producer.send(TOPIC, "new-on-b", queue=0)
        later: list[str] = []
        await consume(b.namesrv_addr, "mover", 1, later)
        return later
    assert asyncio.run(on_b()) == ["new-on-b"]  # the ten it consumed on A are not read again


def test_a_real_brokers_file_imports(emulator, tmp_path):
    path = tmp_path / "consumerOffset.json"
    path.write_bytes(UPSTREAM_FILE)
    proc = run("admin", "importOffsets", "-n", emulator.namesrv_addr, "-f", str(path), "-g", "cg1", "--json")
    assert proc.returncode == 0, proc.stderr
    offsets = emulator.broker.consumer_offset_manager
    assert offsets.query_offsets_of_group("cg1", "TopicTest") == {0: 250, 1: 250, 2: 249, 3: 251}
    assert offsets.query_offsets_of_group("cg1", "%RETRY%cg1") == {0: 0}
    proc = run("admin", "exportOffsets", "-n", emulator.namesrv_addr, "-g", "cg1")
    assert proc.stdout.encode().strip() == UPSTREAM_FILE.replace(b'\t\t"TopicTest@cg1":{0:250,1:250,2:249,3:251\n'
                                                                 b'\t\t},\n\t\t"%RETRY%cg1@cg1":{0:0\n\t\t}',
                                                                 b'\t\t"%RETRY%cg1@cg1":{0:0\n\t\t},\n'
                                                                 b'\t\t"TopicTest@cg1":{0:250,1:250,2:249,3:251\n'
                                                                 b'\t\t}')  # sorted by key


def test_a_broken_file_is_one_line(emulator, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    proc = run("admin", "importOffsets", "-n", emulator.namesrv_addr, "-f", str(path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error: {path} is not a consumerOffset.json")


def test_a_broadcasting_consumer_moved_from_the_cpp_client_keeps_its_position(emulator, cpp_home):
    from integration_tests.cppclient import start_driver
    from rocketmq_emulator.client import BROADCASTING
    ns = emulator.namesrv_addr
    asyncio.run(fill(ns, 0))
    cpp = start_driver(["push", "--namesrv", ns, "--topic", TOPIC, "--group", "bc_moved", "--model", "broadcasting",
                        "--expect", "6", "--duration", "40"], timeout=60, home=cpp_home)

    async def send_six() -> None:
        assert await wait_for(lambda: held_pulls(emulator, TOPIC) >= 2, 30), cpp.describe()
        async with Producer("fill_pg", namesrv=ns) as producer:
            for i in range(6):
                await producer.send(TOPIC, f"m{i}", queue=i % 2)
    asyncio.run(send_six())
    cpp.wait()  # consumed the six, then persisted its offsets.Json at shutdown
    assert not cpp.timed_out and cpp.returncode == 0 and len(cpp.of("received")) == 6, cpp.describe()
    files = list((cpp_home / ".rocketmq_offsets").rglob("offsets.Json"))
    assert [f.relative_to(cpp_home).parts[1:3] for f in files] == [("127.0.0.1@DEFAULT", "bc_moved")]

    async def ours() -> list[str]:
        async with Producer("fill_pg", namesrv=ns) as producer:
            await producer.send(TOPIC, "after-cpp-1", queue=0)
            await producer.send(TOPIC, "after-cpp-2", queue=1)
        got: list[str] = []
        consumer = PushConsumer("bc_moved", namesrv=ns, message_model=BROADCASTING, consume_from=FIRST_OFFSET,
                                offset_store_dir=str(cpp_home))
        consumer.subscribe(TOPIC)
        consumer.on_message(lambda m: got.append(m.text))
        async with consumer:
            assert consumer.client_id == "127.0.0.1@DEFAULT"
            assert await wait_for(lambda: len(got) >= 2, 30)
            await asyncio.sleep(0.5)
        return sorted(got)
    assert asyncio.run(ours()) == ["after-cpp-1", "after-cpp-2"]  # not the six the C++ client consumed
