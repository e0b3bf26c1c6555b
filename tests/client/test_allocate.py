"""Queue allocation: every member computes its share from the same sorted inputs; together they own every
queue exactly once."""

from __future__ import annotations

import pytest

from rocketmq_emulator.client.allocate import (AllocateMessageQueueAveragely, AllocateMessageQueueAveragelyByCircle,
                                               strategy)
from rocketmq_emulator.client.errors import InvalidArgumentError
from rocketmq_emulator.protocol.bodies import MessageQueue

MQS = [MessageQueue("T", "broker-a", i) for i in range(8)]


def ids(mqs):
    return [m.queue_id for m in mqs]


def test_averagely_gives_contiguous_blocks_larger_first():
    s = AllocateMessageQueueAveragely()
    cids = ["c0", "c1", "c2"]
    assert [ids(s.allocate("g", c, MQS, cids)) for c in cids] == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_by_circle_deals_round_robin():
    s = AllocateMessageQueueAveragelyByCircle()
    cids = ["c0", "c1", "c2"]
    assert [ids(s.allocate("g", c, MQS, cids)) for c in cids] == [[0, 3, 6], [1, 4, 7], [2, 5]]


@pytest.mark.parametrize("cls", [AllocateMessageQueueAveragely, AllocateMessageQueueAveragelyByCircle])
@pytest.mark.parametrize("n_queues", [1, 3, 4, 8, 17])
@pytest.mark.parametrize("n_consumers", [1, 2, 3, 5, 9])
def test_every_queue_owned_exactly_once(cls, n_queues, n_consumers):
    mqs = MQS[:0] + [MessageQueue("T", "b", i) for i in range(n_queues)]
    cids = [f"c{i}" for i in range(n_consumers)]
    owned = [mq for c in cids for mq in cls().allocate("g", c, mqs, cids)]
    assert sorted(owned) == mqs


def test_a_client_missing_from_the_list_gets_nothing():
    assert AllocateMessageQueueAveragely().allocate("g", "x", MQS, ["a", "b"]) == []
    assert AllocateMessageQueueAveragelyByCircle().allocate("g", "x", MQS, ["a", "b"]) == []


def test_strategy_by_name():
    assert isinstance(strategy("by_circle"), AllocateMessageQueueAveragelyByCircle)
    with pytest.raises(InvalidArgumentError, match="averagely"):
        strategy("nope")
