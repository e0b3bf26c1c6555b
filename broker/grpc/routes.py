"""The routes the 5.3.3 proxy answers (RouteActivity: QueryRoute, QueryAssignment) and the broker its send picks
(ProducerProcessor's queue selection), read from the brokers of this process with the permission each one
registers with the name server: `runtime_config.registered_perm`, the one rule of both fronts (the broker's own
permission when it lacks read or write, else the topic's). So a read-only broker (brokerPermission=4) or topic
(updateTopic -p 4) has READ queues here as in GET_ROUTEINFO_BY_TOPIC, and a send to it finds no writable queue
(FORBIDDEN, as the proxy answers a route without one), while a write-only one has no readable queue to assign."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from rocketmq_emulator.protocol import PermName
from rocketmq_emulator.protocol.grpc_v2 import v2

from ..runtime_config import registered_perm
from ..topic_config import topic_message_type
from .answers import ACCEPTED_TYPES, NO_WRITABLE_QUEUE, permission, route_queues
from .validate import Failure

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.admin_bodies import TopicConfig

    from ..broker_context import BrokerContext

C = v2.Code
T = v2.MessageType


def route_perm(b: BrokerContext, tc: TopicConfig) -> int:
    """The perm of the topic's queues in a route: what the broker registers with the name server."""
    return registered_perm(b.config, tc.perm)


def _configs(owners: Sequence[BrokerContext], topic: str) -> list[tuple[BrokerContext, TopicConfig]]:
    return [(b, tc) for b in owners if (tc := b.topic_config_manager.get(topic)) is not None]


def message_queues(owners: Sequence[BrokerContext], topic: Any, endpoints: Any) -> list[Any]:
    """QueryRoute's queues (RouteActivity.genMessageQueueFromQueueData) of every broker holding the topic."""
    out = []
    for b, tc in _configs(owners, topic.name):
        broker = v2.Broker(name=b.config.broker_name, id=0, endpoints=endpoints)
        accepted = ACCEPTED_TYPES.get(topic_message_type(tc), (T.MESSAGE_TYPE_UNSPECIFIED,))
        for qid, perm in enumerate(route_queues(tc.read_queue_nums, tc.write_queue_nums, route_perm(b, tc))):
            mq = v2.MessageQueue(id=qid, permission=perm, broker=broker, accept_message_types=accepted)
            mq.topic.CopyFrom(topic)
            out.append(mq)
    return out


def assignments(owners: Sequence[BrokerContext], topic: Any, group: str, endpoints: Any) -> list[Any]:
    """QueryAssignment's: each broker whose queues are readable, one queue -1 (every queue: the broker pops
    them all), or each queue of a FIFO group. Empty: the proxy's FORBIDDEN "no readable queue"."""
    out = []
    for b, tc in _configs(owners, topic.name):
        perm = route_perm(b, tc)
        if not perm & PermName.READ or tc.read_queue_nums <= 0:
            continue
        cfg = b.subscription_group_manager.find(group)
        fifo = bool(getattr(cfg, "consume_message_orderly", False))
        broker = v2.Broker(name=b.config.broker_name, id=0, endpoints=endpoints)
        for qid in range(tc.read_queue_nums) if fifo else (-1,):
            mq = v2.MessageQueue(id=qid, permission=permission(perm), broker=broker)
            mq.topic.CopyFrom(topic)
            out.append(v2.Assignment(message_queue=mq))
    return out


def writable(owners: Sequence[BrokerContext], topic: str) -> tuple[BrokerContext, TopicConfig]:
    """The first broker whose route has a writable queue of the topic, and its topic config; none: the proxy's
    FORBIDDEN "no writable queue" (its queue selector found nothing to send to)."""
    for b, tc in _configs(owners, topic):
        if route_perm(b, tc) & PermName.WRITE and tc.write_queue_nums > 0:
            return b, tc
    raise Failure(C.FORBIDDEN, NO_WRITABLE_QUEUE)
