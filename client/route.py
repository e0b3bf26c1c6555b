"""Route data turned into what producers and consumers use (reference §11.1, §11.2, §10.8): writable queues
of brokers with a master (publish) and readable queues (subscribe)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rocketmq_emulator.protocol.bodies import MessageQueue, TopicRouteData
from rocketmq_emulator.protocol.codes import PermName
from rocketmq_emulator.protocol.topics import DEFAULT_TOPIC_QUEUE_NUMS

MASTER_ID = 0


@dataclass
class TopicPublishInfo:
    """The queues a producer may send a topic's messages to, in route order."""

    topic: str
    queues: list[MessageQueue]
    route: TopicRouteData
    from_default_topic: bool = False  # built from TBW102: the broker creates the topic on the first send
    fetched_at: float = field(default_factory=time.monotonic)

    @property
    def ok(self) -> bool:
        return bool(self.queues)

    def broker_names(self) -> list[str]:
        return sorted({q.broker_name for q in self.queues})


def publish_info(topic: str, route: TopicRouteData, *, from_default_topic: bool = False) -> TopicPublishInfo:
    """Writable queues of brokers that have a master; from TBW102, at most 4 queues per broker (§11.3)."""
    masters = {bd.broker_name for bd in route.broker_datas if MASTER_ID in bd.broker_addrs}
    queues: list[MessageQueue] = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if not qd.perm & PermName.WRITE or qd.broker_name not in masters:
            continue
        n = qd.write_queue_nums
        if from_default_topic:
            n = min(DEFAULT_TOPIC_QUEUE_NUMS, qd.read_queue_nums, n)
        queues.extend(MessageQueue(topic, qd.broker_name, i) for i in range(n))
    return TopicPublishInfo(topic, queues, route, from_default_topic)


def subscribe_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """Readable queues of every broker in the route, sorted (the input of queue allocation, §10.3)."""
    out = [MessageQueue(topic, qd.broker_name, i) for qd in route.queue_datas if qd.perm & PermName.READ
           for i in range(qd.read_queue_nums)]
    out.sort()
    return out


