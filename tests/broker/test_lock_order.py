"""LOCK_BATCH_MQ's answer lists the granted queues in the order 4.9.8's HashSet iterates them (broker/state/lock_manager.py);
the expected orders are what the real 4.9.8 broker answered in the parity scenario lock_batch."""

from rocketmq_emulator.broker.state.lock_manager import java_hash_set_order
from rocketmq_emulator.protocol.bodies import MessageQueue


def q(*ids: int) -> list[MessageQueue]:
    return [MessageQueue("PT_LK", "broker-a", i) for i in ids]


def test_granted_queues_are_listed_in_the_java_hash_set_order():
    assert java_hash_set_order(q(0, 1), 2) == q(1, 0)
    assert java_hash_set_order(q(0, 1, 3), 3) == q(1, 3, 0)
    assert java_hash_set_order(q(0, 3), 4) == q(3, 0)
    assert java_hash_set_order(q(2, 1), 4) == q(1, 2)
    assert java_hash_set_order([], 0) == []
