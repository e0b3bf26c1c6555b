"""The consumer's fallback send-back (CONSUMER_SEND_MSG_BACK refused: the message is re-sent to %RETRY%<group>
through the producer's send path, `send_api.send_to_queue`), and `committed(mq)`: the group's stored offset,
the same on the push and the pull consumer, with the push consumer's in-memory offset as `consumed_offset`."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from rocketmq_emulator.client import FIRST_OFFSET, Admin, ConsumeResult, Producer, PullConsumer, PushConsumer
from rocketmq_emulator.client import consume_service
from rocketmq_emulator.client.api import BrokerAPI
from rocketmq_emulator.client.errors import BrokerUnreachableError, ClientStateError
from rocketmq_emulator.client.offset_store import LocalFileOffsetStore
from rocketmq_emulator.client.send_api import SEND_STATUS_BY_CODE, SendResult, SendStatus
from rocketmq_emulator.protocol import ResponseCode
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.testing.emulator_thread import DELAY_1S, EmulatorThread
from rocketmq_emulator.testing.waits import wait_for


@pytest.fixture
def emu(tmp_path: Path):
    e = EmulatorThread(tmp_path / "store", message_delay_level=DELAY_1S).start()
    try:
        yield e
    finally:
        e.close()


def test_one_mapping_of_the_stored_answers():
    assert set(SEND_STATUS_BY_CODE.values()) == set(SendStatus)
    assert SEND_STATUS_BY_CODE[ResponseCode.SUCCESS] is SendStatus.SEND_OK


async def test_refused_send_back_is_a_producer_send_to_the_retry_topic(emu, monkeypatch):
    async def refuse(self, addr, group, **kw):
        raise BrokerUnreachableError(addr, "refused by the test")
    monkeypatch.setattr(BrokerAPI, "send_back", refuse)
    sends: list[tuple[dict, SendResult]] = []
    shared = consume_service.send_to_queue

    async def spy(instance, addr, mq, group, body, properties, uniq, timeout, **kw):
        result = await shared(instance, addr, mq, group, body, properties, uniq, timeout, **kw)
        sends.append(({"topic": mq.topic, "group": group, **kw}, result))
        return result
    monkeypatch.setattr(consume_service, "send_to_queue", spy)

    ns = emu.namesrv_addr
    async with Producer("fb_producer", namesrv=ns) as p:
        again = (await p.send("FbTopic", "again", tags="TagF", keys="k1", properties={"n": "1"})).msg_id
        dead = (await p.send("FbTopic", "dead", tags="TagF")).msg_id
    attempts: dict[str, list] = collections.defaultdict(list)

    def handle(msg):
        attempts[msg.msg_id].append(msg)
        return ConsumeResult.SUCCESS if msg.text == "again" and len(attempts[msg.msg_id]) > 1 \
            else ConsumeResult.RECONSUME_LATER

    consumer = PushConsumer("fb_group", namesrv=ns, consume_from=FIRST_OFFSET, max_reconsume_times=2)
    consumer.subscribe("FbTopic")
    consumer.on_message(handle)
    async with consumer:
        assert await wait_for(lambda: len(attempts[again]) >= 2 and len(attempts[dead]) >= 2, 30), attempts
        async with PullConsumer("fb_dlq_reader", namesrv=ns) as reader:
            async def dlq():
                try:
                    (mq,) = await reader.fetch_message_queues("%DLQ%fb_group")
                except Exception:  # noqa: BLE001 - not created yet
                    return []
                return (await reader.pull(mq, 0, 32)).messages
            assert await wait_for(lambda: _nonempty(dlq()), 20)
            in_dlq = await dlq()
    first, second = attempts[again][:2]
    assert (first.reconsume_times, second.reconsume_times) == (0, 1)
    assert second.message_queue.topic == "%RETRY%fb_group" and second.topic == "FbTopic"
    assert second.msg_id == again and second.text == "again" and second.tags == "TagF" and second.keys == "k1"
    assert second.properties["n"] == "1" and second.properties["RETRY_TOPIC"] == "FbTopic"
    assert second.properties["ORIGIN_MESSAGE_ID"] == again
    # the fallback sent each failure as the inner producer, with the reconsume times and the max in the header
    kw, result = sends[0]
    assert kw == {"topic": "%RETRY%fb_group", "group": "CLIENT_INNER_PRODUCER", "flag": 0, "reconsume_times": 1,
                  "max_reconsume_times": 2}
    assert result.status is SendStatus.SEND_OK and result.topic == "%RETRY%fb_group"
    # a send to the retry topic with reconsume times >= the max goes to the DLQ (Java's broker rule)
    assert [m.reconsume_times for m in attempts[dead]] == [0, 1]
    assert [m.text for m in in_dlq] == ["dead"] and in_dlq[0].msg_id == dead and in_dlq[0].reconsume_times == 2


async def _nonempty(coro) -> bool:
    return bool(await coro)


async def test_committed_is_the_stored_offset_on_both_consumers(emu):
    ns = emu.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic("CommitTopic", 1, 1)
    async with Producer("c_producer", namesrv=ns) as p:
        await p.send_batch("CommitTopic", [f"m{i}" for i in range(10)])
    consumer = PushConsumer("c_group", namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe("CommitTopic")
    mq = MessageQueue("CommitTopic", "broker-a", 0)
    assert consumer.consumed_offset(mq) == -1
    with pytest.raises(ClientStateError, match="not started"):
        await consumer.committed(mq)
    async with consumer, PullConsumer("c_group", namesrv=ns) as puller:
        got = []
        async for msg in consumer:
            got.append(msg)
            if len(got) == 10:
                break
        mq = got[0].message_queue
        consumer.ack(*got[:6])
        assert consumer.consumed_offset(mq) == 6
        await consumer.persist_consumer_offsets()
        assert await wait_for(lambda: _is(consumer.committed(mq), 6), 10)
        assert await puller.committed(mq) == 6
        await puller.commit(mq, 4)
        assert await consumer.committed(mq) == await puller.committed(mq) == 4
        assert consumer.consumed_offset(mq) == 6  # memory is left alone by the read


async def _is(aw, value: int) -> bool:
    return await aw == value


async def test_local_store_stored_offset_leaves_memory_alone(tmp_path):
    store = LocalFileOffsetStore(tmp_path, "10.0.0.5@DEFAULT", "g")
    mq = MessageQueue("T", "broker-a", 0)
    assert await store.stored_offset(mq) == -1
    store.update_offset(mq, 9, False)
    await store.persist(mq)
    store.update_offset(mq, 12, False)
    assert await store.stored_offset(mq) == 9 and store.offset_table[mq] == 12
