"""PullConsumer (lite): queues of a topic, seek by timestamp, pull from min to max, commit."""

from __future__ import annotations

import asyncio
import time

from rocketmq_emulator.client import Admin, Producer, PullConsumer, PullStatus


async def test_seek_by_timestamp_then_pull_min_to_max(emulator):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic("PullTopic", 2, 2)
    async with Producer("pull_producer", namesrv=ns) as p:
        queues = await p.fetch_queues("PullTopic")
        for mq in queues:
            await p.send_batch("PullTopic", [f"early-{mq.queue_id}-{i}" for i in range(5)], queue=mq)
        await asyncio.sleep(0.3)
        boundary = int(time.time() * 1000)
        await asyncio.sleep(0.01)
        for mq in queues:
            await p.send_batch("PullTopic", [f"late-{mq.queue_id}-{i}" for i in range(5)], queue=mq)

    async with PullConsumer("pull_group", namesrv=ns) as consumer:
        mqs = await consumer.fetch_message_queues("PullTopic")
        assert [mq.queue_id for mq in mqs] == [0, 1]
        for mq in mqs:
            assert await consumer.seek_to_timestamp(mq, boundary) == 5
            result = await consumer.pull(mq, max_nums=32)
            assert result.status is PullStatus.FOUND
            assert [m.text for m in result.messages] == [f"late-{mq.queue_id}-{i}" for i in range(5)]
            assert consumer.position(mq) == result.next_begin_offset == 10
            assert (await consumer.pull(mq)).status is PullStatus.NO_NEW_MSG

            low, high = await consumer.min_offset(mq), await consumer.max_offset(mq)
            assert (low, high) == (0, 10)
            bodies, offset = [], low
            while offset < high:
                result = await consumer.pull(mq, offset, max_nums=3)
                assert result.status is PullStatus.FOUND and 0 < len(result.messages) <= 3
                assert [m.queue_offset for m in result.messages] == list(range(offset, offset + len(result.messages)))
                bodies += [m.text for m in result.messages]
                offset = result.next_begin_offset
            assert bodies == [f"early-{mq.queue_id}-{i}" for i in range(5)] + [f"late-{mq.queue_id}-{i}" for i in range(5)]
            assert (await consumer.pull(mq, 999)).status is PullStatus.OFFSET_ILLEGAL

            assert await consumer.committed(mq) == 0  # young queue: the broker answers 0 for a new group
            await consumer.commit(mq, 7)
            assert await consumer.committed(mq) == 7
            assert await consumer.earliest_msg_store_time(mq) > 0
        mq = mqs[0]
        await consumer.seek_to_committed(mq)
        result = await consumer.pull(mq, expression="TagNone")
        assert result.status in (PullStatus.NO_MATCHED_MSG, PullStatus.NO_NEW_MSG) and not result.messages
