"""ProcessQueue: the offset to commit never skips an unconsumed message; orderly take/commit/rollback."""

from __future__ import annotations

from rocketmq_emulator.client.message import ReceivedMessage
from rocketmq_emulator.client.process_queue import ProcessQueue
from rocketmq_emulator.protocol.bodies import MessageQueue

MQ = MessageQueue("T", "broker-a", 0)


def msgs(*offsets: int) -> list[ReceivedMessage]:
    out = []
    for o in offsets:
        m = ReceivedMessage(topic="T", body=b"x" * 10, queue_offset=o)
        m.broker_name, m.message_queue, m._pq = "broker-a", MQ, None
        out.append(m)
    return out


def test_commit_offset_is_the_smallest_unconsumed():
    pq = ProcessQueue(MQ)
    batch = msgs(10, 11, 12, 13)
    pq.put(batch)
    assert (pq.msg_count, pq.msg_size, pq.max_span()) == (4, 40, 3)
    assert pq.remove([batch[2]]) == 10  # 12 done, 10 still pending
    assert pq.remove([batch[0], batch[1]]) == 13
    assert pq.remove([batch[3]]) == 14  # empty: highest seen + 1
    assert pq.msg_count == 0 and pq.msg_size == 0
    assert pq.remove(msgs(20)) == -1  # nothing cached


def test_put_ignores_duplicates():
    pq = ProcessQueue(MQ)
    pq.put(msgs(1, 2))
    pq.put(msgs(2, 3))
    assert pq.msg_count == 3 and list(pq.msgs) == [1, 2, 3]


def test_orderly_take_commit_rollback():
    pq = ProcessQueue(MQ)
    pq.put(msgs(0, 1, 2, 3))
    taken = pq.take(2)
    assert [m.queue_offset for m in taken] == [0, 1] and pq.msg_count == 4
    pq.rollback()
    assert list(pq.msgs) == [0, 1, 2, 3]
    assert [m.queue_offset for m in pq.take(3)] == [0, 1, 2]
    assert pq.commit() == 3
    assert pq.msg_count == 1 and list(pq.msgs) == [3]
    assert pq.commit() == -1


async def test_in_flight_and_idle():
    pq = ProcessQueue(MQ)
    assert await pq.wait_idle(0.01)
    pq.begin(2)
    assert not await pq.wait_idle(0.01)
    pq.end(2)
    assert await pq.wait_idle(0.01)


def test_the_three_consume_services_share_one_protocol():
    from rocketmq_emulator.client.consume_iterator import IteratorConsumeService
    from rocketmq_emulator.client.consume_orderly import OrderlyConsumeService
    from rocketmq_emulator.client.consume_service import ConcurrentConsumeService, ConsumeService
    for cls in (ConcurrentConsumeService, OrderlyConsumeService, IteratorConsumeService):
        missing = [name for name in ("start", "submit", "stop", "consume_directly") if not callable(getattr(cls, name, None))]
        assert not missing, (cls.__name__, missing)
    assert getattr(ConsumeService, "_is_runtime_protocol", False)
