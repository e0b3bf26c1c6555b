"""Fast-forward with real clients, the emulator in a subprocess advanced through `admin advanceTime` (the admin
client) or the pytest plugin's `rocketmq_broker.advance`: a 2-hour delay delivered at once, consumers that always
fail reaching the DLQ after 16 retries within seconds (this project's and the C++ client), a 5.x POP message
revived, a transaction check-back; and nothing delivered early without an advance."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from rocketmq_emulator.client import (FIRST_OFFSET, Admin, LocalTransactionState, Message, Producer, PushConsumer,
                                      TransactionProducer)
from rocketmq_emulator.testing.command_line import run_cli
from rocketmq_emulator.testing.emulator_process import launch_emulator

from .cppclient import start_driver
from .py5_client import run_py5

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def broker(tmp_path: Path):
    b = launch_emulator(tmp_path, "--topic", "Orders:1", "--topic", "Retries:1")
    try:
        yield b
    finally:
        b.stop()


async def test_a_two_hour_delay_arrives_right_after_advancing_two_hours_and_not_before(broker):
    ns = broker.namesrv_addr
    got: list[tuple[float, bytes]] = []
    consumer = PushConsumer("delay-reader", namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe("Orders")
    consumer.on_message(lambda msg: got.append((time.monotonic(), msg.body)))
    async with consumer, Producer("delay-producer", namesrv=ns) as p:
        await p.send("Orders", b"in 2 hours", delay_level=18)
        await p.send("Orders", b"in 1 minute", delay_level=5)
        await asyncio.sleep(1.5)
        assert got == []  # nothing early
        done = await asyncio.to_thread(run_cli, "admin", "advanceTime", "-n", ns, "-s", "7200")
        assert done.returncode == 0, done.stderr
        assert "2 delayed message(s) delivered" in done.stdout
        advanced = time.monotonic()
        for _ in range(100):
            if len(got) == 2:
                break
            await asyncio.sleep(0.05)
    assert [body for _, body in got] == [b"in 1 minute", b"in 2 hours"]  # in due order
    assert got[-1][0] - advanced < 1.0


async def advance_until(broker, progress, target: int, limit: int = 40) -> int:  # noqa: ANN001
    """Advance two hours (the longest delay level) at a time, each time waiting for `progress()` to move (the
    client's next delivery), until it reaches `target`; returns the advances made."""
    for n in range(1, limit + 1):
        seen = progress()
        await asyncio.sleep(0.25)  # the client's send-back of the last failure reaches the broker first
        await asyncio.to_thread(broker.advance, 7200)
        for _ in range(400):
            if progress() > seen:
                break
            await asyncio.sleep(0.05)
        if progress() >= target:
            return n
    return limit


async def test_a_consumer_that_always_fails_reaches_the_dlq_after_16_retries_within_seconds(broker):
    ns = broker.namesrv_addr
    attempts: list[int] = []
    consumer = PushConsumer("always-fails", namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe("Retries")

    @consumer.on_message
    def fail(msg) -> bool:  # noqa: ANN001
        attempts.append(msg.reconsume_times)
        return False
    t0 = time.monotonic()
    async with consumer, Producer("retry-producer", namesrv=ns) as p:
        await p.send("Retries", b"poison")
        for _ in range(100):
            if attempts:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        assert attempts == [0]  # the first retry waits 10 s: nothing without an advance
        await advance_until(broker, lambda: len(attempts), 17)
        await asyncio.sleep(0.5)
    assert attempts == list(range(17)), attempts  # the first delivery, then 16 retries, in order
    assert time.monotonic() - t0 < 60
    async with Admin(ns) as admin:
        dlq = await admin.topic_status("%DLQ%always-fails")
    assert sum(t.max_offset for t in dlq.values()) == 1  # then the DLQ


def test_the_cpp_consumer_reaches_the_dlq_too(broker, tmp_path):
    ns = broker.namesrv_addr
    asyncio.run(_send(ns, "Retries", b"poison"))
    asyncio.run(_create(ns, "%RETRY%cpp-fails"))  # its route known from the start (the client looks every 30 s)
    consumer = start_driver(["push", "--namesrv", ns, "--topic", "Retries", "--group", "cpp-fails",
                             "--fail-first", "100", "--duration", "120"], timeout=150, home=tmp_path / "cpp")
    try:
        assert consumer.wait_for("received", timeout=60), consumer.describe()
        time.sleep(1)
        assert len(consumer.of("received")) == 1
        deadline = time.monotonic() + 150
        while len(consumer.of("received")) < 17 and time.monotonic() < deadline:
            seen = len(consumer.of("received"))
            time.sleep(0.25)  # the client's send-back of the last failure reaches the broker first
            broker.advance(7200)
            consumer.wait_for(lambda e, n=seen: len(consumer.of("received")) > n, timeout=40)  # the next retry
        time.sleep(1)
    finally:
        consumer.stop()
    received = consumer.of("received")
    assert len(received) == 17, consumer.describe()
    status = run_cli("admin", "topicStatus", "-n", ns, "-t", "%DLQ%cpp-fails", "--json")
    assert status.returncode == 0, status.stderr
    assert '"maxOffset": 1' in status.stdout


async def _create(ns: str, topic: str) -> None:
    async with Admin(ns) as admin:
        await admin.create_topic(topic, 1, 1)


async def _send(ns: str, topic: str, body: bytes) -> None:
    async with Producer("fast-forward", namesrv=ns) as p:
        await p.send(topic, body)


async def test_a_transaction_check_back_fires_when_time_is_advanced(broker):
    ns = broker.namesrv_addr
    checked: list[float] = []

    def check(msg) -> LocalTransactionState:  # noqa: ANN001
        checked.append(time.monotonic())
        return LocalTransactionState.COMMIT_MESSAGE
    async with TransactionProducer("tx-ff", namesrv=ns, check_local_transaction=check) as p:
        await p.send_message_in_transaction(Message("Orders", b"undecided"), lambda m, a: LocalTransactionState.UNKNOW)
        await asyncio.sleep(2)
        assert checked == []  # the check interval is 60 s
        await asyncio.to_thread(broker.advance, 61)
        advanced = time.monotonic()
        for _ in range(60):
            if checked:
                break
            await asyncio.sleep(0.05)
    assert checked and checked[0] - advanced < 2.0


def test_a_5x_pop_message_revives_after_advancing_past_its_invisible_time(tmp_path):
    b = launch_emulator(tmp_path, "--topic", "T:1", grpc=True)
    try:
        ep = b.grpc_endpoint
        assert ep is not None
        sent = run_py5(["produce", "--endpoint", ep, "--topic", "T", "--count", "1"], home=tmp_path / "p")
        assert sent.of("sent"), sent.describe()
        first = run_py5(["simple", "--endpoint", ep, "--topic", "T", "--group", "FF", "--ack", "none",
                         "--invisible", "3600", "--expect", "1"], home=tmp_path / "c1")
        assert [e["attempt"] for e in first.of("received")] == [1], first.describe()
        none = run_py5(["simple", "--endpoint", ep, "--topic", "T", "--group", "FF", "--duration", "2",
                        "--await", "1"], home=tmp_path / "c2")
        assert not none.of("received")  # invisible for an hour
        done = b.advance(3601)
        assert done["revived"] == 1
        again = run_py5(["simple", "--endpoint", ep, "--topic", "T", "--group", "FF", "--expect", "1",
                         "--await", "5"], home=tmp_path / "c3")
        assert [e["attempt"] for e in again.of("received")] == [2], again.describe()
    finally:
        b.stop()
