"""Start offset of a newly owned queue (§10.4): the stored offset first (the broker is asked, seed 001), then
ConsumeFromWhere; broadcasting reads memory first, then the file (seed 000)."""

from __future__ import annotations

import pytest

from rocketmq_emulator.client.errors import BrokerResponseError, BrokerUnreachableError
from rocketmq_emulator.client.allocate import strategy
from rocketmq_emulator.client.config import ConsumerSettings
from rocketmq_emulator.client.consumer_context import ConsumerContext
from rocketmq_emulator.client.offset_store import LocalFileOffsetStore, RemoteBrokerOffsetStore
from rocketmq_emulator.client.pull_from_where import compute_pull_from_where
from rocketmq_emulator.protocol.bodies import ConsumeFromWhere, MessageModel, MessageQueue

Q = MessageQueue("T", "broker-a", 0)
RQ = MessageQueue("%RETRY%g", "broker-a", 0)


class FakeAPI:
    def __init__(self, stored) -> None:
        self.stored = stored
        self.calls: list[str] = []

    async def query_consumer_offset(self, addr, group, mq):
        self.calls.append("query")
        if isinstance(self.stored, Exception):
            raise self.stored
        return self.stored

    async def max_offset(self, addr, mq):
        self.calls.append("max")
        return 100

    async def search_offset(self, addr, mq, ts):
        self.calls.append(f"search {ts}")
        return 42


class FakeInstance:
    def __init__(self, stored) -> None:
        self.api = FakeAPI(stored)

    async def find_master(self, broker_name, topic=None):
        return "127.0.0.1:10911"

    async def find_admin(self, broker_name, topic=None):  # the master, or its slave while it is away
        return "127.0.0.1:10911"


def context(stored, cfw, model=MessageModel.CLUSTERING, store=None) -> ConsumerContext:
    """The state compute_pull_from_where reads: a broker that answers as `stored` says, and an offset store."""
    instance = FakeInstance(stored)
    return ConsumerContext(group="g", client_id="127.0.0.1@c", instance=instance,  # type: ignore[arg-type]
                           offset_store=store or RemoteBrokerOffsetStore(instance, "g"),  # type: ignore[arg-type]
                           message_model=model, consume_from=cfw, consume_timestamp_ms=1_700_000_000_000,
                           orderly=False, allocate_strategy=strategy("averagely"), settings=ConsumerSettings(),
                           subscriptions={})


NOT_FOUND = BrokerResponseError(22, "Not found")
DOWN = BrokerUnreachableError("127.0.0.1:10911", "refused")
LAST, FIRST, TS = (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                   ConsumeFromWhere.CONSUME_FROM_TIMESTAMP)


@pytest.mark.parametrize("stored, cfw, mq, expected, calls", [
    (0, LAST, Q, 0, ["query"]),  # young queue: the broker says 0, so even LAST_OFFSET starts at 0 (seed 001)
    (7, FIRST, Q, 7, ["query"]),
    (NOT_FOUND, LAST, Q, 100, ["query", "max"]),
    (NOT_FOUND, LAST, RQ, 0, ["query"]),
    (NOT_FOUND, FIRST, Q, 0, ["query"]),
    (NOT_FOUND, TS, Q, 42, ["query", "search 1700000000000"]),
    (NOT_FOUND, TS, RQ, 100, ["query", "max"]),
    (BrokerResponseError(1, "system error"), LAST, Q, 100, ["query", "max"]),  # 4.9.x: any code is "none"
    (DOWN, LAST, Q, -2, ["query"]),  # could not ask: skip the queue this round
])
async def test_clustering(stored, cfw, mq, expected, calls):
    ctx = context(stored, cfw)
    assert await compute_pull_from_where(ctx, mq) == expected
    assert ctx.instance.api.calls == calls  # type: ignore[attr-defined]


async def test_broadcasting_reads_memory_first_then_the_file(tmp_path):
    store = LocalFileOffsetStore(tmp_path, "c", "g")
    ctx = context(None, LAST, MessageModel.BROADCASTING, store)
    assert await compute_pull_from_where(ctx, Q) == 100  # no offset anywhere: LAST = max offset
    store.update_offset(Q, 5, False)
    await store.persist(Q)
    store.update_offset(Q, 9, False)
    assert await compute_pull_from_where(ctx, Q) == 9  # memory wins over the (stale) file
    store.remove_offset(Q)
    assert await compute_pull_from_where(ctx, Q) == 5
    assert ctx.instance.api.calls == ["max"]  # type: ignore[attr-defined]
