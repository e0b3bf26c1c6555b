"""The start offset of a queue a push consumer takes (Java `RebalancePushImpl.computePullFromWhere`, reference
§10.4): the stored offset if there is one, else what `ConsumeFromWhere` says.

Clustering asks the broker (a young queue's stored 0 is honoured, seed 001); broadcasting reads memory first,
then the file (seed 000 fix 3), so a reset or a corrected offset is honoured at once. A retry queue without an
offset starts at 0 (LAST_OFFSET) or at its end (TIMESTAMP), as in Java.
"""

from __future__ import annotations

import logging

from rocketmq_emulator.protocol.bodies import ConsumeFromWhere, MessageQueue
from rocketmq_emulator.protocol.topics import RETRY_GROUP_TOPIC_PREFIX

from .consumer_context import ConsumerContext
from .errors import ClientError
from .offset_store import ReadOffsetType

log = logging.getLogger("rocketmq_emulator.client.rebalance")


async def compute_pull_from_where(ctx: ConsumerContext, mq: MessageQueue) -> int:
    """The offset to pull `mq` from; < 0 means "unknown now, skip this queue this round"."""
    kind = ReadOffsetType.READ_FROM_STORE if ctx.clustering else ReadOffsetType.MEMORY_FIRST_THEN_STORE
    last = await ctx.offset_store.read_offset(mq, kind)
    if last >= 0:
        return last
    if last != -1:
        return -2
    instance = ctx.instance
    cfw = ctx.consume_from
    retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    try:
        if cfw == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if cfw == ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
            addr = await instance.find_master(mq.broker_name, mq.topic)
            if retry:
                return await instance.api.max_offset(addr, mq)
            return await instance.api.search_offset(addr, mq, ctx.consume_timestamp_ms)
        if retry:
            return 0
        addr = await instance.find_master(mq.broker_name, mq.topic)
        return await instance.api.max_offset(addr, mq)
    except ClientError as exc:
        log.debug("%s: start offset of %s unknown: %s", ctx.group, mq, exc)
        return -2
