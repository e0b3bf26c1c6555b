"""The checks every read of a group passes first, whatever request brings it (PULL_MESSAGE, POP_MESSAGE, a 5.x
receive through the POP core): the broker and the topic readable, the group known and allowed to consume, the
queue one of the topic's (or -1, any, for a pop). Raises BrokerError with upstream's codes and remarks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, PermName, ResponseCode

from .remarks import suggest_todo

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.admin_bodies import SubscriptionGroupConfig, TopicConfig

    from .broker_state import BrokerState


_READ = int(PermName.READ)  # a plain int: `int & IntFlag` takes the enum's slow reflected operator

def check_consume(b: BrokerState, group: str, topic: str, queue_id: int, *, verb: str = "pulling",
                  consumer: str = "", any_queue: bool = False) -> tuple[SubscriptionGroupConfig, TopicConfig]:
    """(the group's config, the topic's config) once the read may go on. `verb` names the request in the remarks
    ("pulling", "peeking" as upstream's pop); `any_queue`: queue -1 is allowed (a pop of every queue)."""
    R = ResponseCode
    if not b.config.broker_permission & _READ:  # brokerPermission (updateBrokerConfig)
        raise BrokerError(R.NO_PERMISSION, f"the broker[{b.config.broker_ip1}] {verb} message is forbidden")
    group_cfg = b.subscription_group_manager.find(group)
    if group_cfg is None:
        raise BrokerError(R.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{group}] does not exist")
    if not group_cfg.consume_enable:
        raise BrokerError(R.NO_PERMISSION, f"subscription group no permission, {group}")
    tc = b.topic_config_manager.get(topic)
    if tc is None:
        raise BrokerError(R.TOPIC_NOT_EXIST, suggest_todo(f"topic[{topic}] not exist, apply first please! "))
    if not tc.perm & _READ:
        raise BrokerError(R.NO_PERMISSION, f"the topic[{topic}] {verb} message is forbidden")
    if not (any_queue and queue_id == -1) and not 0 <= queue_id < tc.read_queue_nums:
        raise BrokerError(R.SYSTEM_ERROR, f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                                          f"topicConfig.readQueueNums:[{tc.read_queue_nums}] consumer:[{consumer}]")
    return group_cfg, tc
