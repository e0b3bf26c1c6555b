"""The push consumer's collaborators run on a `ConsumerContext` alone (no `PushConsumer`): a consume service
commits offsets to the context's store, and the pause switches behave as the consumer's pause/resume and the
reset's suspend need."""

from __future__ import annotations

import asyncio

from rocketmq_emulator.client.allocate import strategy
from rocketmq_emulator.client.config import ConsumerSettings
from rocketmq_emulator.client.consume_iterator import IteratorConsumeService
from rocketmq_emulator.client.consume_orderly import OrderlyConsumeService
from rocketmq_emulator.client.consume_service import ConcurrentConsumeService, ConsumeService
from rocketmq_emulator.client.consumer_context import ConsumerContext, FlowSwitch
from rocketmq_emulator.client.message import ReceivedMessage
from rocketmq_emulator.client.offset_store import LocalFileOffsetStore
from rocketmq_emulator.client.process_queue import ProcessQueue
from rocketmq_emulator.protocol.bodies import ConsumeFromWhere, MessageModel, MessageQueue

MQ = MessageQueue("T", "broker-a", 0)
MQ1 = MessageQueue("T", "broker-a", 1)


def context(tmp_path, *, orderly=False) -> ConsumerContext:
    return ConsumerContext(group="g", client_id="127.0.0.1@c", instance=None,  # type: ignore[arg-type]
                           offset_store=LocalFileOffsetStore(tmp_path, "127.0.0.1@c", "g"),
                           message_model=MessageModel.BROADCASTING,
                           consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, consume_timestamp_ms=0,
                           orderly=orderly, allocate_strategy=strategy("averagely"),
                           settings=ConsumerSettings(consume_concurrency=2), subscriptions={})


def msgs(*offsets: int) -> list[ReceivedMessage]:
    out = []
    for o in offsets:
        m = ReceivedMessage(topic="T", body=f"m{o}".encode(), queue_offset=o)
        m.broker_name, m.message_queue, m._pq = "broker-a", MQ, None
        out.append(m)
    return out


async def consume(service: ConsumeService, batch: list[ReceivedMessage], ctx: ConsumerContext, expect: int) -> None:
    """Submit `batch` of one queue, wait (at most 1 s) until its offset reaches `expect`, stop the service."""
    pq = ProcessQueue(MQ)
    pq.put(batch)
    service.submit(pq, batch)
    for _ in range(100):
        if ctx.committed(MQ) == expect:
            break
        await asyncio.sleep(0.01)
    await service.stop(1.0)


async def test_concurrent_service_commits_to_the_context_store(tmp_path):
    ctx = context(tmp_path)
    seen: list[bytes] = []
    service = ConcurrentConsumeService(ctx, lambda m: seen.append(m.body), batch=False)
    assert isinstance(service, ConsumeService)
    service.start()
    await consume(service, msgs(5, 6, 7), ctx, 8)
    assert sorted(seen) == [b"m5", b"m6", b"m7"]
    assert ctx.committed(MQ) == 8  # past the last consumed message
    await ctx.offset_store.persist(MQ)
    reread = LocalFileOffsetStore(tmp_path, "127.0.0.1@c", "g")
    await reread.load()
    assert reread.offset_table[MQ] == 8


async def test_orderly_service_uses_the_lock_callback_only_in_clustering(tmp_path):
    ctx = context(tmp_path, orderly=True)
    locks: list[MessageQueue] = []

    async def lock(mq: MessageQueue) -> bool:
        locks.append(mq)
        return True
    got: list[int] = []
    service = OrderlyConsumeService(ctx, lambda m: got.append(m.queue_offset), batch=False, lock=lock)
    await consume(service, msgs(0, 1, 2), ctx, 3)
    assert got == [0, 1, 2] and ctx.committed(MQ) == 3
    assert locks == []  # broadcasting: no broker locks


async def test_iterator_service_ack_commits(tmp_path):
    ctx = context(tmp_path)
    service = IteratorConsumeService(ctx)
    pq = ProcessQueue(MQ)
    batch = msgs(3, 4)
    for m in batch:
        m._pq = pq
    pq.put(batch)
    service.submit(pq, batch)
    first = await service.get(1.0)
    second = await service.get(1.0)
    assert first is not None and second is not None
    service.ack(second)
    assert ctx.committed(MQ) == 3  # offset 3 is still unacknowledged: the offset stays on it
    service.ack(first)
    assert ctx.committed(MQ) == 5
    await service.stop(1.0)


async def test_flow_switch_pause_resume_and_suspend():
    flow = FlowSwitch()
    assert not flow.is_paused(MQ)
    flow.pause((MQ,))
    assert flow.is_paused(MQ) and not flow.is_paused(MQ1) and not flow.paused
    flow.resume((MQ,))
    assert not flow.is_paused(MQ)
    flow.pause()
    flow.suspend(True)
    flow.suspend(False)  # a reset ending does not resume what the application paused
    assert flow.paused and flow.is_paused(MQ1)
    waiter = asyncio.ensure_future(flow.wait_resumed(5.0))
    await asyncio.sleep(0.01)
    assert not waiter.done()
    flow.resume()
    await asyncio.wait_for(waiter, 1.0)
    assert not flow.paused
