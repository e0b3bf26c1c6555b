"""The routes the 5.3.3 proxy answers (RouteActivity: QueryRoute, QueryAssignment) and the broker its send picks
(ProducerProcessor's queue selection), read from the brokers of this process with the permission each one
registers with the name server: `runtime_config.registered_perm`, the one rule of both fronts (the broker's own
permission when it lacks read or write, else the topic's). So a read-only broker (brokerPermission=4) or topic
(updateTopic -p 4) has READ queues here as in GET_ROUTEINFO_BY_TOPIC, and a send to it finds no writable queue
(FORBIDDEN, as the proxy answers a route without one), while a write-only one has no readable queue to assign.
The routes are the read model's (ReadModel.route), the dashboard's and the name server's rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from rocketmq_emulator.protocol.grpc_v2 import v2

from .answers import ACCEPTED_TYPES, NO_WRITABLE_QUEUE, permission, route_queues
from .validate import Failure

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.grpc_v2 import types as pb
    from ..core.read_model import BrokerFront, TopicRoute

C = v2.Code
T = v2.MessageType


def _routes(owners: Sequence[BrokerFront], topic: str) -> list[tuple[BrokerFront, TopicRoute]]:
    """Each broker's part of the topic's route, with the perm it registers (ReadModel.route)."""
    return [(f, r) for f in owners if (r := f.read.route(topic)) is not None]


def message_queues(owners: Sequence[BrokerFront], topic: pb.Resource, endpoints: pb.Endpoints
                   ) -> list[pb.MessageQueue]:
    """QueryRoute's queues (RouteActivity.genMessageQueueFromQueueData) of every broker holding the topic."""
    out = []
    for f, r in _routes(owners, topic.name):
        broker = v2.Broker(name=r.broker_name, id=0, endpoints=endpoints)
        accepted = ACCEPTED_TYPES.get(r.message_type, (T.MESSAGE_TYPE_UNSPECIFIED,))
        for qid, perm in enumerate(route_queues(r.read_queues, r.write_queues, r.perm)):
            mq = v2.MessageQueue(id=qid, permission=perm, broker=broker, accept_message_types=accepted)
            mq.topic.CopyFrom(topic)
            out.append(mq)
    return out


def assignments(owners: Sequence[BrokerFront], topic: pb.Resource, group: str, endpoints: pb.Endpoints
                ) -> list[pb.Assignment]:
    """QueryAssignment's: each broker whose queues are readable, one queue -1 (every queue: the broker pops
    them all), or each queue of a FIFO group. Empty: the proxy's FORBIDDEN "no readable queue"."""
    out = []
    for f, r in _routes(owners, topic.name):
        if not r.readable:
            continue
        cfg = f.read.group_config(group)
        fifo = bool(getattr(cfg, "consume_message_orderly", False))
        broker = v2.Broker(name=r.broker_name, id=0, endpoints=endpoints)
        for qid in range(r.read_queues) if fifo else (-1,):
            mq = v2.MessageQueue(id=qid, permission=permission(r.perm), broker=broker)
            mq.topic.CopyFrom(topic)
            out.append(v2.Assignment(message_queue=mq))
    return out


def writable(owners: Sequence[BrokerFront], topic: str) -> tuple[BrokerFront, TopicRoute]:
    """The first broker whose route has a writable queue of the topic, and its route; none: the proxy's
    FORBIDDEN "no writable queue" (its queue selector found nothing to send to)."""
    for f, r in _routes(owners, topic):
        if r.writable:
            return f, r
    raise Failure(C.FORBIDDEN, NO_WRITABLE_QUEUE)
