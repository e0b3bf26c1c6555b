"""Where the `rocketmq` Spark writer's tasks send their rows (spark_tools/placement.py), without Spark: each task's
unplaced rows go to one broker, tasks spread evenly over the brokers and their queues, rows that say where they
go are sent there, and a failed batch moves to the next broker."""

from __future__ import annotations

from collections import Counter

import pytest

from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.spark_tools.placement import (PlacementError, TaskPlacement, brokers_of, interleaved,
                                                     partitions_for)


def queues(topic: str = "T", **per_broker: int) -> list[MessageQueue]:
    return [MessageQueue(topic, b.replace("_", "-"), i) for b, n in per_broker.items() for i in range(n)]


def names(mqs: list[MessageQueue]) -> list[str]:
    return [f"{mq.broker_name[-1]}{mq.queue_id}" for mq in mqs]


def test_slots_interleave_the_brokers_queues():
    assert names(interleaved(queues(broker_b=2, broker_a=3))) == ["a0", "b0", "a1", "b1", "a2"]
    assert names(interleaved(queues(broker_a=2))) == ["a0", "a1"]


def test_each_task_sends_unplaced_rows_to_one_broker_round_robin_over_its_queues():
    qs = queues(broker_a=4, broker_b=4)
    for p in range(10):
        placement = TaskPlacement("T", qs, p)
        sent = [placement.home_queue() for _ in range(8)]
        assert {mq.broker_name for mq in sent} == {"broker-a" if p % 2 == 0 else "broker-b"}, p  # partition mod 2
        assert sorted(mq.queue_id for mq in sent) == [0, 0, 1, 1, 2, 2, 3, 3], p  # every queue, in turn


def test_tasks_spread_evenly_over_brokers_and_queues():
    qs = queues(broker_a=8, broker_b=8, broker_c=8)
    per_broker: Counter[str] = Counter()
    per_queue: Counter[MessageQueue] = Counter()
    for p in range(48):  # a multiple of the brokers: each gets the same number of tasks
        placement = TaskPlacement("T", qs, p)
        per_broker[placement.home] += 1
        for _ in range(5):  # small tasks: fewer batches than queues
            per_queue[placement.home_queue()] += 1
    assert per_broker == {"broker-a": 16, "broker-b": 16, "broker-c": 16}
    assert set(per_queue) == set(qs) and max(per_queue.values()) - min(per_queue.values()) <= 1, per_queue
    # the tasks Spark runs at the same time (consecutive partitions) are on different brokers
    assert [TaskPlacement("T", qs, p).home for p in range(3)] == ["broker-a", "broker-b", "broker-c"]


def test_a_broker_with_more_queues_gets_more_tasks_in_proportion():
    qs = queues(broker_a=8, broker_b=4)
    homes = Counter(TaskPlacement("T", qs, p).home for p in range(120))
    assert homes == {"broker-a": 80, "broker-b": 40}  # even per queue: 10 tasks per queue


def test_one_broker_is_the_old_round_robin_over_its_queues():
    qs = queues(broker_a=4)
    placement = TaskPlacement("T", qs, 6)
    assert names([placement.home_queue() for _ in range(5)]) == ["a2", "a3", "a0", "a1", "a2"]
    assert placement.home_queue(attempt=1).broker_name == "broker-a"  # nowhere else to go


def test_a_retry_moves_to_the_next_broker():
    placement = TaskPlacement("T", queues(broker_a=2, broker_b=2, broker_c=2), 1)
    assert placement.home == "broker-b"
    assert [placement.home_queue(attempt).broker_name for attempt in range(4)] == \
        ["broker-b", "broker-c", "broker-a", "broker-b"]


def test_rows_with_a_broker_name_go_to_that_broker():
    placement = TaskPlacement("T", queues(broker_a=2, broker_b=3), 0)
    assert placement.pinned("broker-b", 2) == MessageQueue("T", "broker-b", 2)
    assert {placement.broker_queue("broker-b").queue_id for _ in range(3)} == {0, 1, 2}
    with pytest.raises(PlacementError, match=r"topic 'T' has no writable queue broker-a:5 \(the writable queue ids "
                                             r"of broker-a: \[0, 1\]\)"):
        placement.pinned("broker-a", 5)
    with pytest.raises(PlacementError, match=r"no writable queue on broker 'broker-z' \(its brokers: broker-a, "
                                             r"broker-b\)"):
        placement.pinned("broker-z", 0)
    with pytest.raises(PlacementError, match="broker-z"):
        placement.broker_queue("broker-z")


def test_no_writable_queue():
    with pytest.raises(PlacementError, match="topic 'T' has no writable queue"):
        TaskPlacement("T", [], 0)


def test_counts_per_broker_of_a_task():
    assert brokers_of({"T/broker-a/0": 3, "T/broker-a/1": 2, "U/broker-b/0": 1}) == {"broker-a": 5, "broker-b": 1}


def test_generated_rows_have_a_multiple_of_brokers_times_cores_partitions():
    assert partitions_for(1000, cores=2) == 2 and partitions_for(1000, cores=2, brokers=2) == 4
    assert partitions_for(1_000_000, cores=2) == 6  # 5 by size: one core idle in the last wave
    assert partitions_for(10_000_000, cores=2) == 50 and partitions_for(10_000_000, cores=2, brokers=2) == 52
    assert partitions_for(10**9, cores=8, brokers=3) == 216  # at most 200 by size, then rounded up
