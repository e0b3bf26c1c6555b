"""Start offset of a newly owned queue (§10.4): the stored offset first (the broker is asked, seed 001), then
ConsumeFromWhere; broadcasting reads memory first, then the file (seed 000)."""

from __future__ import annotations

import pytest

from rocketmq_emulator.client.errors import BrokerResponseError, BrokerUnreachableError
from rocketmq_emulator.client.offset_store import LocalFileOffsetStore, RemoteBrokerOffsetStore
from rocketmq_emulator.client.rebalance import RebalanceImpl
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


class FakeConsumer:
    def __init__(self, stored, cfw, model=MessageModel.CLUSTERING, store=None) -> None:
        self.instance = FakeInstance(stored)
        self.message_model = model
        self.consume_from = cfw
        self.consume_timestamp_ms = 1_700_000_000_000
        self.group = "g"
        self.orderly = False
        self.offset_store = store or RemoteBrokerOffsetStore(self.instance, "g")  # type: ignore[arg-type]


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
    consumer = FakeConsumer(stored, cfw)
    assert await RebalanceImpl(consumer).compute_pull_from_where(mq) == expected  # type: ignore[arg-type]
    assert consumer.instance.api.calls == calls


async def test_broadcasting_reads_memory_first_then_the_file(tmp_path):
    store = LocalFileOffsetStore(tmp_path, "c", "g")
    consumer = FakeConsumer(None, LAST, MessageModel.BROADCASTING, store)
    rebalance = RebalanceImpl(consumer)  # type: ignore[arg-type]
    assert await rebalance.compute_pull_from_where(Q) == 100  # no offset anywhere: LAST = max offset
    store.update_offset(Q, 5, False)
    await store.persist(Q)
    store.update_offset(Q, 9, False)
    assert await rebalance.compute_pull_from_where(Q) == 9  # memory wins over the (stale) file
    store.remove_offset(Q)
    assert await rebalance.compute_pull_from_where(Q) == 5
    assert consumer.instance.api.calls == ["max"]
