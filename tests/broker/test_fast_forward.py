"""Fast-forward (broker/clock.py, BrokerController.run_due_work) without sockets: advancing the broker clock makes
delayed and timed messages due in due order, POP messages revive, held pulls answer, old files expire; nothing
fires early without an advance."""

from __future__ import annotations

import asyncio
import time

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.message import decode_messages
from rocketmq_emulator.protocol.pop_headers import PopMessageRequestHeader
from rocketmq_emulator.testing.broker_harness import BrokerHarness

R = ResponseCode


def advance(harness: BrokerHarness, seconds: float) -> dict[str, int]:
    harness.broker.clock.advance(seconds)
    return harness.broker.run_due_work()


async def bodies(harness: BrokerHarness, topic: str = "Orders") -> list[bytes]:
    r = await harness.pull("reader", topic, 0, 0)
    return [m.body for m in decode_messages(r.body)] if r.code == R.SUCCESS else []


async def test_delayed_and_timed_messages_come_due_in_due_order_and_not_before(harness):
    now_ms = int(time.time() * 1000)
    await harness.send("Orders", b"level-5 (1 min)", properties={"DELAY": "5"})
    await harness.send("Orders", b"level-3 (10 s)", properties={"DELAY": "3"})
    await harness.send("Orders", b"timer +30 s", properties={"TIMER_DELIVER_MS": str(now_ms + 30_000)})
    await harness.send("Orders", b"level-18 (2 h)", properties={"DELAY": "18"})
    assert advance(harness, 5)["delivered"] == 0
    assert await bodies(harness) == []
    assert advance(harness, 115)["delivered"] == 3  # 2 minutes in all
    assert await bodies(harness) == [b"level-3 (10 s)", b"timer +30 s", b"level-5 (1 min)"]
    advance(harness, 7000)
    assert (await bodies(harness))[-1] != b"level-18 (2 h)"  # 7,120 s: not yet
    advance(harness, 80)
    assert (await bodies(harness))[-1] == b"level-18 (2 h)"


async def test_a_pop_message_revives_once_its_invisible_time_has_passed(harness):
    await harness.send("Orders", b"m0")
    header = PopMessageRequestHeader(consumer_group="G", topic="Orders", max_msg_nums=8, invisible_time=60_000,
                                     init_mode=0)
    r = await harness.ask(RequestCode.POP_MESSAGE, header)
    assert [m.body for m in decode_messages(r.body)] == [b"m0"]
    assert advance(harness, 59)["revived"] == 0
    assert advance(harness, 2)["revived"] == 1
    again = await harness.ask(RequestCode.POP_MESSAGE, header)
    [msg] = decode_messages(again.body)
    assert msg.body == b"m0" and msg.reconsume_times == 1


async def test_a_held_pull_is_answered_when_its_suspend_time_is_passed(harness):
    await harness.send("Orders", b"m0")
    task = asyncio.ensure_future(harness.pull("G", "Orders", 0, 1, suspend=True, suspend_ms=15_000, timeout=5))
    await asyncio.sleep(0.1)
    assert not task.done()
    assert advance(harness, 16)["pullsAnswered"] == 1
    r = await asyncio.wait_for(task, 1)
    assert r.code == R.PULL_NOT_FOUND


async def test_retention_expires_the_files_older_than_the_reserved_time(harness):
    await harness.send("Orders", b"old")
    assert advance(harness, 71 * 3600)["filesDeleted"] == 0
    assert await bodies(harness) == [b"old"]
    assert advance(harness, 2 * 3600)["filesDeleted"] == 1  # past fileReservedTime (72 h)
    assert await bodies(harness) == []


async def test_what_is_stored_after_an_advance_waits_its_full_time(harness):
    """The clock reads a stored (real) timestamp with the advances made before it: a message parked or a file
    written after an advance is not older by that advance."""
    advance(harness, 100 * 3600)
    await harness.send("Orders", b"after", properties={"DELAY": "3"})  # 10 s
    assert advance(harness, 5)["delivered"] == 0
    assert advance(harness, 6)["delivered"] == 1
    assert advance(harness, 3600)["filesDeleted"] == 0  # written 1 h ago by the clock, kept 72 h
    assert advance(harness, 72 * 3600)["filesDeleted"] == 1


def test_the_clock_reads_past_real_times_with_the_advances_made_before_them():
    from rocketmq_emulator.broker.clock import BrokerClock
    clock = BrokerClock()
    before = clock.now_ms()
    clock.advance(3600)
    after = clock.now_ms() - 3_600_000  # real
    assert clock.at(before - 1) == before - 1 and clock.at(after + 5) == after + 5 + 3_600_000
    assert clock.real_at(clock.at(after + 5)) == after + 5
    assert clock.real_at(before + 1_000_000) <= after + 5  # inside the jump: everything before it is older


async def test_runtime_info_reports_how_far_the_clock_is_ahead(harness):
    from rocketmq_emulator.protocol.bodies import KVTable
    advance(harness, 90)
    r = await harness.ask(RequestCode.GET_BROKER_RUNTIME_INFO)
    assert KVTable.decode(r.body).table["clockOffsetMillis"] == "90000"
