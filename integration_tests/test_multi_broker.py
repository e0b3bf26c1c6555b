"""Several brokers in one process (`serve --brokers N`): a topic on all of them, the C++ client's producer and
consumers (clustering and broadcasting) and this project's consumers (clustering and broadcasting) spread over
both, a broker taken away and brought back (`admin stopBroker` / `startBroker`) while clients run, and
resetOffsetByTime over both in each mode."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path

import pytest

from integration_tests.cppclient import run_driver, start_driver
from rocketmq_emulator.client import BROADCASTING, FIRST_OFFSET, Admin, ClientConfig, ConsumeResult, Producer, PushConsumer
from rocketmq_emulator.protocol.message import MessageExt
from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.emulator_thread import held_pulls_on_loop
from rocketmq_emulator.testing.ports import free_broker_port, free_port
from rocketmq_emulator.testing.waits import wait_for, wait_until

ROOT = Path(__file__).resolve().parents[1]
#: clients that notice route changes and commit quickly
FAST = dict(poll_name_server_interval=0.5, heartbeat_broker_interval=1.0, persist_consumer_offset_interval=0.2)


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def sent_ok(produced) -> int:
    """How many of the C++ producer's sends were answered SEND_OK."""
    return sum(1 for e in produced.events if e["event"] == "sent" and e["status"] == "OK")


def stored_bodies(emu, broker_index: int, topic: str) -> set[str]:
    def read() -> set[str]:
        broker = emu.emulator.brokers[broker_index]
        out = set()
        for q in range(broker.topic_config_manager.get(topic).read_queue_nums):
            res = broker.store.get_message("t", topic, q, 0, 1000, None)
            out |= {MessageExt.decode(r).body.decode() for r in res.messages}
        return out
    return emu.call(read)


def test_a_topic_on_two_brokers_cpp_producer_and_consumer_use_both(emulator_factory, cpp_home):
    emu = emulator_factory(brokers=2)
    made = cli("admin", "updateTopic", "-n", emu.namesrv_addr, "-t", "MB", "-r", "4", "-w", "4", "--json")
    assert made.returncode == 0, made.stderr
    route = json.loads(cli("admin", "topicRoute", "-n", emu.namesrv_addr, "-t", "MB", "--json").stdout)
    assert sorted(b["brokerName"] for b in route["brokerDatas"]) == ["broker-a", "broker-b"]
    assert {b["brokerAddrs"]["0"] for b in route["brokerDatas"]} == {f"127.0.0.1:{emu.broker_port}",
                                                                     f"127.0.0.1:{emu.broker_port + 10}"}
    produced = run_driver(["produce", "--namesrv", emu.namesrv_addr, "--topic", "MB", "--group", "MBP", "--count",
                           "200", "--body-prefix", "m-"], timeout=120, home=cpp_home)
    assert sent_ok(produced) == 200, produced.describe()
    on_a, on_b = stored_bodies(emu, 0, "MB"), stored_bodies(emu, 1, "MB")
    assert on_a and on_b and on_a | on_b == {f"m-{i}" for i in range(200)} and not on_a & on_b
    events = run_driver(["push", "--namesrv", emu.namesrv_addr, "--topic", "MB", "--group", "MBC", "--expect", "200",
                         "--duration", "60"], timeout=90, home=cpp_home).events
    assert events[-1]["event"] == "done" and events[-1]["expected_reached"], events[-1]
    assert {e["body"] for e in events if e["event"] == "received"} == on_a | on_b
    # offsets were committed on each broker for its own queues
    committed = emu.call(lambda: [sum(b.consumer_offset_manager.query_offset("MBC", "MB", q) for q in range(4))
                                  for b in emu.emulator.brokers])
    assert committed == [len(on_a), len(on_b)]


def test_cpp_broadcasting_consumers_each_get_everything_from_both_brokers(emulator_factory, cpp_home):
    emu = emulator_factory(brokers=2)
    assert cli("admin", "updateTopic", "-n", emu.namesrv_addr, "-t", "MBB", "-r", "2", "-w", "2").returncode == 0
    consumers = [start_driver(["push", "--namesrv", emu.namesrv_addr, "--topic", "MBB", "--group", "MBBG",
                               "--model", "broadcasting", "--instance-name", f"inst{i}", "--duration", "60"],
                              timeout=90, home=cpp_home / f"c{i}") for i in range(2)]
    held = lambda: emu.call(lambda: sum(held_pulls_on_loop(b, "MBB") for b in emu.emulator.brokers))  # noqa: E731
    try:
        assert wait_until(lambda: held() >= 8, 30), "each consumer should hold a pull on every queue of both brokers"
        produced = run_driver(["produce", "--namesrv", emu.namesrv_addr, "--topic", "MBB", "--group", "MBBP",
                               "--count", "100", "--body-prefix", "b-"], timeout=120, home=cpp_home)
        assert sent_ok(produced) == 100, produced.describe()
        on_a, on_b = stored_bodies(emu, 0, "MBB"), stored_bodies(emu, 1, "MBB")
        assert on_a and on_b and on_a | on_b == {f"b-{i}" for i in range(100)}
        for c in consumers:
            assert wait_until(lambda c=c: {e["body"] for e in c.of("received")} == on_a | on_b, 60), c.describe()
    finally:
        for c in consumers:
            c.stop()
            c.wait()


def test_stop_and_start_a_broker_moves_queues_and_loses_nothing_acknowledged(emulator_factory):
    emu = emulator_factory(brokers=2)
    ns = emu.namesrv_addr
    config = ClientConfig(namesrv=ns, **FAST)

    async def scenario() -> None:
        async with Admin(ns) as admin:
            await admin.create_topic("MS", 4, 4)
        received: set[str] = set()
        acked: set[str] = set()
        consumers = []
        for i in range(2):
            c = PushConsumer("MSG", config=config, consume_from=FIRST_OFFSET, instance_name=f"c{i}",
                             rebalance_interval=0.5)
            c.subscribe("MS", "*")

            @c.on_message
            async def handle(msg):
                received.add(msg.text)
                return ConsumeResult.SUCCESS
            consumers.append(c)
        async with Producer("MSP", config=config, send_timeout=2.0) as producer, consumers[0], consumers[1]:
            async def send(n: int) -> None:
                for _ in range(n):
                    body = f"m-{len(acked)}-{time.monotonic_ns()}"
                    try:
                        await producer.send("MS", body)
                    except Exception:  # noqa: BLE001 - not acknowledged: no promise made
                        continue
                    acked.add(body)

            def brokers_assigned() -> set[str]:
                return {mq.broker_name for c in consumers for mq in c.assignment()}

            await send(100)
            assert await wait_for(lambda: brokers_assigned() == {"broker-a", "broker-b"}, 20)
            stopped = await asyncio.to_thread(cli, "admin", "stopBroker", "-n", ns, "-b", "broker-b")
            assert stopped.returncode == 0 and "broker-b stopped" in stopped.stdout, stopped.stderr
            again = await asyncio.to_thread(cli, "admin", "stopBroker", "-n", ns, "-b", "broker-b")
            assert again.returncode != 0 and "broker-b is already stopped" in again.stderr
            unknown = await asyncio.to_thread(cli, "admin", "stopBroker", "-n", ns, "-b", "broker-z")
            assert unknown.returncode != 0 and "no broker named 'broker-z'" in unknown.stderr
            assert await wait_for(lambda: brokers_assigned() == {"broker-a"}, 20)  # queues moved: only broker-a's left
            await send(100)  # all to broker-a now
            started = await asyncio.to_thread(cli, "admin", "startBroker", "-n", ns, "-b", "broker-b")
            assert started.returncode == 0 and "broker-b started" in started.stdout, started.stderr
            assert await wait_for(lambda: brokers_assigned() == {"broker-a", "broker-b"}, 20)
            await send(100)
            assert await wait_for(lambda: acked <= received, 30)
        assert len(acked) >= 250, len(acked)
        assert acked <= received, f"{len(acked - received)} acknowledged messages never consumed"

    asyncio.run(scenario())


def test_route_delay_keeps_the_routes_until_it_passes(emulator_factory):
    emu = emulator_factory(brokers=2)

    async def scenario() -> None:
        async with Admin(emu.namesrv_addr) as admin:
            await admin.create_topic("RD", 2, 2)
            await admin.stop_broker("broker-b", route_delay=1.0)
            kept = await admin.topic_route("RD")
            assert sorted(b.broker_name for b in kept.broker_datas) == ["broker-a", "broker-b"]
            await asyncio.sleep(1.5)
            admin.instance.routes.clear()
            gone = await admin.topic_route("RD")
            assert [b.broker_name for b in gone.broker_datas] == ["broker-a"]
            await admin.start_broker("broker-b")
            back = await admin.topic_route("RD")
            assert sorted(b.broker_name for b in back.broker_datas) == ["broker-a", "broker-b"]
    asyncio.run(scenario())


def test_reset_offset_by_time_resets_the_queues_of_both_brokers(emulator_factory):
    emu = emulator_factory(brokers=2)
    ns = emu.namesrv_addr
    config = ClientConfig(namesrv=ns, **FAST)

    async def scenario() -> tuple[list, list[str]]:
        async with Admin(ns) as admin:
            await admin.create_topic("MR", 2, 2)
        async with Producer("MRP", config=config) as producer:
            for i in range(40):
                await producer.send("MR", f"r-{i}")
        seen: list[str] = []
        consumer = PushConsumer("MRG", config=config, consume_from=FIRST_OFFSET)
        consumer.subscribe("MR", "*")

        @consumer.on_message
        async def handle(msg):
            seen.append(msg.text)
            return ConsumeResult.SUCCESS
        async with consumer:
            assert await wait_for(lambda: len(set(seen)) == 40, 20)
            await asyncio.sleep(0.6)  # committed on both brokers
            async with Admin(ns) as admin:
                before = await admin.consumer_progress("MRG", "MR")
                result = await admin.reset_offset_by_timestamp("MRG", "MR", 0)
            assert await wait_for(lambda: len(seen) >= 80, 20)  # everything again, from both brokers
        return before, result.rows, seen

    before, rows, seen = asyncio.run(scenario())
    # consumer progress covers the queues of both brokers, all consumed
    assert sorted((mq.broker_name, mq.queue_id) for mq in before.offset_table) == [
        ("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)]
    assert before.total_diff() == 0 and sum(w.broker_offset for w in before.offset_table.values()) == 40
    assert sorted((r.queue.broker_name, r.queue.queue_id, r.offset) for r in rows) == [
        ("broker-a", 0, 0), ("broker-a", 1, 0), ("broker-b", 0, 0), ("broker-b", 1, 0)]
    assert sorted(seen[40:]) == sorted(f"r-{i}" for i in range(40))


def test_asyncio_broadcasting_consumers_get_both_brokers_and_a_reset_spans_them(emulator_factory, tmp_path):
    emu = emulator_factory(brokers=2)
    ns = emu.namesrv_addr
    config = ClientConfig(namesrv=ns, **FAST)
    held = lambda: emu.call(lambda: sum(held_pulls_on_loop(b, "MBC") for b in emu.emulator.brokers))  # noqa: E731

    async def scenario() -> tuple[dict[str, list[str]], object]:
        async with Admin(ns) as admin:
            await admin.create_topic("MBC", 2, 2)
        seen: dict[str, list[str]] = {"x": [], "y": []}
        consumers = []
        for name, got in seen.items():
            c = PushConsumer("MBCG", config=config, message_model=BROADCASTING, instance_name=name,
                             offset_store_dir=str(tmp_path), rebalance_interval=0.5)
            c.subscribe("MBC", "*")
            c.on_message(lambda m, got=got: got.append(m.text))
            consumers.append(c)
        async with consumers[0], consumers[1]:
            assert await wait_for(lambda: held() >= 8, 20)  # each member waits on all four queues of both brokers
            async with Producer("MBCP", config=config) as producer:
                brokers = {(await producer.send("MBC", f"b-{i}")).queue.broker_name for i in range(40)}
            assert brokers == {"broker-a", "broker-b"}
            assert await wait_for(lambda: all(len(got) >= 40 for got in seen.values()), 20)
            await asyncio.sleep(0.6)  # positions reported by the pulls
            async with Admin(ns) as admin:
                progress = await admin.consumer_progress("MBCG", "MBC")
                result = await admin.reset_offset_by_timestamp("MBCG", "MBC", 0)
            assert await wait_for(lambda: all(len(got) >= 80 for got in seen.values()), 20)  # again, from both brokers
        return seen, progress, result.rows

    seen, progress, rows = asyncio.run(scenario())
    for got in seen.values():
        assert sorted(got[:40]) == sorted(got[40:]) == sorted(f"b-{i}" for i in range(40))
    assert sorted((mq.broker_name, mq.queue_id) for mq in progress.offset_table) == [
        ("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)]
    assert progress.total_diff() == 0
    assert sorted((r.queue.broker_name, r.queue.queue_id, r.offset) for r in rows) == [
        ("broker-a", 0, 0), ("broker-a", 1, 0), ("broker-b", 0, 0), ("broker-b", 1, 0)]


def test_serve_brokers_from_the_command_line(tmp_path):
    ns, port = free_port(), free_broker_port(3)
    proc = subprocess.Popen([*COMMAND, "serve", "--ephemeral", "--namesrv-port",
                             str(ns), "--broker-port", str(port)], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                            env={**__import__("os").environ, "ROCKETMQ_EMULATOR_BROKERS": "3"})
    try:
        deadline = time.monotonic() + 20
        line = ""
        while "ready" not in line:
            line = proc.stderr.readline()
            assert time.monotonic() < deadline and line, "no ready line"
        assert (f"broker broker-a@127.0.0.1:{port}, broker-b@127.0.0.1:{port + 10}, broker-c@127.0.0.1:{port + 20}"
                in line), line
        listed = cli("admin", "clusterList", "-n", f"127.0.0.1:{ns}", "--json")
        assert sorted(b["brokerName"] for b in json.loads(listed.stdout)) == ["broker-a", "broker-b", "broker-c"]
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode == 0
    bad = subprocess.run([*COMMAND, "serve", "--brokers", "0"], cwd=ROOT,
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "0 is out of range" in bad.stderr


pytestmark = pytest.mark.timeout(300)
