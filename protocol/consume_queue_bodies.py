"""QUERY_CONSUME_QUEUE (321) answer body: the units of one consume queue (mqadmin queryCq)."""

from __future__ import annotations

from .bodies import Body, SubscriptionData


class ConsumeQueueData(Body):
    """One consume-queue unit: where the message is in the commitlog, its size and its tag hash code."""

    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None


class QueryConsumeQueueResponseBody(Body):
    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None
    queue_data: list[ConsumeQueueData] | None = None
    max_queue_index: int = 0
    min_queue_index: int = 0
