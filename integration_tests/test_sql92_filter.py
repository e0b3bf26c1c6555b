"""SQL92 property filters through the broker (enablePropertyFilter): the project's push, iterator and lite pull
consumers and the official Java 4.9.8 push consumer (MessageSelector.bySql)."""

from __future__ import annotations

import asyncio
import time

import pytest

from rocketmq_emulator.client import FIRST_OFFSET, BrokerResponseError, Producer, PullConsumer, PushConsumer
from rocketmq_emulator.protocol import ResponseCode
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.testing.emulator_thread import EmulatorThread

TOPIC = "Orders"
#: (body, tag, properties) of the 12 messages every test sends
MESSAGES = [(f"order-{i}", "big" if i >= 6 else "small", {"amount": str(i * 10), "region": ("eu", "us", "apac")[i % 3]})
            for i in range(12)]
EXPRESSIONS = {  # expression -> the bodies it selects
    "amount >= 60": [f"order-{i}" for i in range(6, 12)],
    "amount BETWEEN 20 AND 50 AND region IN ('eu', 'us')": ["order-3", "order-4"],
    "TAGS = 'small' AND NOT (region = 'eu')": ["order-1", "order-2", "order-4", "order-5"],
    "region = 'mars'": [],
    "missing IS NULL AND amount < 10": ["order-0"],
}


@pytest.fixture
def emu(tmp_path):
    e = EmulatorThread(tmp_path / "store", enablePropertyFilter=True, topics=[(TOPIC, 2)]).start()
    yield e
    e.close()


async def send_all(ns: str) -> None:
    async with Producer("sql-producer", namesrv=ns) as producer:
        for body, tag, props in MESSAGES:
            await producer.send(TOPIC, body, tags=tag, properties=props)


async def consume(ns: str, group: str, expression: str, expected: int, settle: float = 1.5) -> list[str]:
    got: list[str] = []
    consumer = PushConsumer(group, namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe(TOPIC, expression, "SQL92")
    consumer.on_message(lambda msg: got.append(msg.text))
    async with consumer:
        deadline = time.monotonic() + 15
        while len(got) < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(settle)  # nothing more arrives (an expression that matches nothing: only this wait)
    return sorted(got)


def test_push_consumers_with_several_expressions(emu):
    async def main():
        await send_all(emu.namesrv_addr)
        return {e: await consume(emu.namesrv_addr, f"g{i}", e, len(want))
                for i, (e, want) in enumerate(EXPRESSIONS.items())}
    got = asyncio.run(main())
    assert got == {e: sorted(want) for e, want in EXPRESSIONS.items()}


def test_a_held_pull_is_answered_when_a_matching_message_arrives(emu):
    async def main():
        got: list[str] = []
        consumer = PushConsumer("late", namesrv=emu.namesrv_addr, consume_from=FIRST_OFFSET)
        consumer.subscribe(TOPIC, "amount > 1000", "SQL92")
        consumer.on_message(lambda msg: got.append(msg.text))
        async with consumer, Producer("p", namesrv=emu.namesrv_addr) as producer:
            await send_all(emu.namesrv_addr)  # nothing matches: the consumer's pulls end up held
            await asyncio.sleep(1.0)
            began = time.monotonic()
            await producer.send(TOPIC, "huge", properties={"amount": "5000"})
            while not got and time.monotonic() - began < 10:
                await asyncio.sleep(0.01)
            return got, time.monotonic() - began
    got, waited = asyncio.run(main())
    assert got == ["huge"]
    assert waited < 5  # long polling woke it, no 15-s poll cycle


def start_error(ns: str, group: str, expression: str) -> BrokerResponseError:
    """The error a push consumer subscribing with `expression` (SQL92) fails to start with."""
    async def main() -> BrokerResponseError:
        consumer = PushConsumer(group, namesrv=ns)
        consumer.subscribe(TOPIC, expression, "SQL92")
        consumer.on_message(lambda msg: None)
        with pytest.raises(BrokerResponseError) as info:
            await consumer.start()
        return info.value
    return asyncio.run(main())


def test_an_invalid_expression_fails_start_with_the_parsers_message(emu):
    error = start_error(emu.namesrv_addr, "typo", "amount >> 3")
    assert error.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED  # as 4.9.8's CHECK_CLIENT_CONFIG answers
    assert "invalid SQL92 expression 'amount >> 3': unexpected '>' at column 9" in error.remark


def test_lite_pull_with_sql92_and_its_errors(emu):
    async def main():
        await send_all(emu.namesrv_addr)
        async with PullConsumer("lite", namesrv=emu.namesrv_addr) as consumer:
            bodies = []
            for queue_id in (0, 1):
                mq = MessageQueue(TOPIC, emu.broker.config.broker_name, queue_id)
                result = await consumer.pull(mq, 0, 32, expression="amount >= 100", expression_type="SQL92")
                bodies += [m.text for m in result.messages]
            # an expression of the pull's own that does not compile filters nothing (4.9.8 and 5.x pull on
            # without filter data); CHECK_CLIENT_CONFIG is where a client learns it is wrong
            unfiltered = await consumer.pull(mq, 0, 32, expression="amount >=", expression_type="SQL92")
            return sorted(bodies), unfiltered, mq
    bodies, unfiltered, mq = asyncio.run(main())
    assert bodies == ["order-10", "order-11"]
    assert unfiltered.messages and all(m.queue_id == mq.queue_id for m in unfiltered.messages)


def test_refused_when_the_broker_does_not_enable_property_filters(tmp_path):
    emu = EmulatorThread(tmp_path / "store", topics=[(TOPIC, 2)]).start()
    try:
        error = start_error(emu.namesrv_addr, "sql", "amount > 1")
        assert error.code == ResponseCode.SYSTEM_ERROR
        assert error.remark == "The broker does not support consumer to filter message by SQL92"
    finally:
        emu.close()


def test_java_push_consumers_with_message_selector_by_sql(emu, java_clients, tmp_path):
    asyncio.run(send_all(emu.namesrv_addr))
    cases = {"amount BETWEEN 20 AND 50 AND region IN ('eu', 'us')": ["order-3", "order-4"],
             "TAGS = 'big' AND amount > 90": ["order-10", "order-11"],
             "region = 'mars'": []}
    handles = {e: java_clients.start("SqlConsume", emu.namesrv_addr, TOPIC, f"CID_sql_{i}", e, 12, len(want) or -1,
                                     timeout=60, home=tmp_path / f"c{i}")
               for i, (e, want) in enumerate(cases.items())}
    bad = java_clients.start("SqlConsume", emu.namesrv_addr, TOPIC, "CID_sql_bad", "amount >> 3", 5,
                             timeout=60, home=tmp_path / "bad")
    for expression, want in cases.items():
        handle = handles[expression]
        if not want:  # matches nothing: give it the same time the others needed, then stop it
            assert handle.wait_for("consumer_started", 30), handle.describe()
            time.sleep(4)
            handle.kill()
        events = handle.wait()
        got = sorted(e["body"] for e in events if e.get("event") == "received")
        assert got == sorted(want), (expression, handle.describe())
        for e in events:
            if e.get("event") == "received":
                assert e["properties"]["amount"] and e["properties"]["region"]
    events = bad.wait()
    errors = [e for e in events if e.get("event") == "start_error"]
    assert errors and "unexpected '>' at column 9" in errors[0]["error"], bad.describe()
