"""`ReadModel`: the one thing the fronts (the dashboard, the gRPC endpoint) read a broker through. Each method
delegates to the manager or function that owns the rule, so a front cannot grow its own copy of it:

* routes: a topic's queues with the permission the broker registers with the name server
  (`runtime_config.registered_perm`, what the controller's registration sends);
* topics, user or system by the one rule (`TopicConfigManager.is_system_topic`, protocol/topics.is_system_topic);
* user groups (RocketMQ's own left out: `protocol.topics.is_system_group`, subscription_group.TOOL_GROUPS);
* a POP group's un-acked messages (the POP service's checkpoints) and a group's progress (consume_stats);
* where a message is: by offset msgId or unique key (the store's lookups);
* connections: the clients of a group, the producers.

Writes do not go through it: a front changes a broker through its write cores (`WriteCores`: the send core, the
consume core's filters, the POP service's pop/ack, transactions, admin operations). `BrokerFront` pairs the two
for one broker; the process (`Emulator.fronts()`) hands the fronts one per running broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol

from rocketmq_emulator.protocol import PermName
from rocketmq_emulator.protocol.bodies import MessageModel
from rocketmq_emulator.protocol.message import MessageExt, decode_message_id, decode_messages
from rocketmq_emulator.protocol.topics import (DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, TOOL_GROUPS,
                                               is_system_group)

from ..state.topic_config import topic_message_type
from .consume_stats import consume_stats
from .runtime_config import registered_perm

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.admin_bodies import ConsumeStats, SubscriptionGroupConfig, TopicConfig
    from rocketmq_emulator.protocol.transport import RemotingServer
    from rocketmq_emulator.store.message_store import MessageStore

    from .broker2client import Broker2Client
    from .broker_context import BrokerContext
    from ..state.client_manager import (ClientChannelInfo, ClientEvent, ConsumerGroupInfo, ConsumerManager,
                                        ProducerManager)
    from ..config import BrokerConfig
    from .consume_core import ConsumeCore
    from ..state.delivery_log import Delivery
    from ..state.offset_history import OffsetEvent
    from .pop.service import PopService
    from .send_core import SendMessageCore
    from ..state.topic_config import TopicConfigManager
    from .transaction import TransactionalMessageService
    from .transaction_check import TransactionalMessageCheckService


@dataclass(frozen=True, slots=True)
class TopicRoute:
    """One broker's part of a topic's route, as it registers it with the name server (QueueData)."""

    broker_name: str
    topic: str
    read_queues: int
    write_queues: int
    perm: int  # the registered perm (runtime_config.registered_perm)
    message_type: str  # the topic's message.type attribute (NORMAL, FIFO, ...)

    @property
    def readable(self) -> bool:
        return bool(self.perm & PermName.READ) and self.read_queues > 0

    @property
    def writable(self) -> bool:
        return bool(self.perm & PermName.WRITE) and self.write_queues > 0


class Unacked(NamedTuple):
    """A message a POP group popped and has not acked: where it is and until when it stays invisible."""

    topic: str
    queue_id: int
    offset: int
    invisible_until: int  # ms since the epoch
    orderly: bool


class StoreFigures(NamedTuple):
    put: int
    got: int
    commitlog_min: int
    commitlog_max: int


class ReadModel:
    """What the fronts read of one broker; built over its state (BrokerController satisfies BrokerContext)."""

    def __init__(self, broker: BrokerContext) -> None:
        self._b = broker

    # -- the broker ---------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._b.config.broker_name

    @property
    def config(self) -> BrokerConfig:
        return self._b.config

    @property
    def addr(self) -> str:
        return self._b.broker_addr

    @property
    def started_at(self) -> float:
        return self._b.started_at

    def store_figures(self) -> StoreFigures:
        """The store's counters (messages put, found by reads) and its commit log's offsets."""
        store = self._b.store
        return StoreFigures(store.put_count, store.get_found, store.commitlog_min_offset, store.commitlog_max_offset)

    def put_counts(self) -> dict[str, int]:
        """Messages put so far, by topic (the statistics' TOPIC_PUT_NUMS, since start)."""
        return self._b.stats.topic_put_counts()

    def get_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Messages pulled so far (GROUP_GET_NUMS, since start): (by topic, by group)."""
        return self._b.stats.get_counts()

    def schedule_offset(self, queue_id: int) -> int:
        """How far the delay service has delivered the schedule topic's queue `queue_id` (delay level - 1; its
        offsets are kept by level): a parked message before it has gone to its real topic."""
        return self._b.schedule_service.offsets.get(queue_id + 1, 0)

    def deliveries(self, topic: str, queue_id: int, offset: int) -> list[Delivery] | None:
        """Who was handed this message and when, oldest first; None when deliveries are not recorded (they are
        while the dashboard runs: broker/state/delivery_log.py)."""
        log = self._b.delivery_log
        return None if log is None else log.of(topic, queue_id, offset)

    def client_events(self) -> list[ClientEvent]:
        """Consumers joining and leaving groups, oldest first (the last 1,000)."""
        return list(self._b.consumer_manager.events)

    def clock_advances(self) -> list[tuple[int, int]]:
        """The clock's advances (admin advanceTime, the dashboard's control): (real epoch ms, total offset ms)."""
        return self._b.clock.advances()

    # -- routes and topics --------------------------------------------------------------------------
    def topic(self, topic: str) -> TopicConfig | None:
        return self._b.topic_config_manager.get(topic)

    def route(self, topic: str) -> TopicRoute | None:
        """The topic's queues with the perm the broker registers (GET_ROUTEINFO_BY_TOPIC's QueueData)."""
        tc = self.topic(topic)
        if tc is None:
            return None
        return TopicRoute(self.name, topic, tc.read_queue_nums, tc.write_queue_nums,
                          registered_perm(self._b.config, tc.perm), topic_message_type(tc))

    def is_system_topic(self, topic: str) -> bool:
        """TopicValidator.isSystemTopic with this broker's names (TopicConfigManager.is_system_topic)."""
        return self._b.topic_config_manager.is_system_topic(topic)

    @property
    def system_topic_names(self) -> frozenset[str]:
        """The names this broker adds to the system set (cluster, broker, <cluster>_REPLY_TOPIC)."""
        return frozenset(self._b.topic_config_manager.system_topic_names)

    def topic_kind(self, topic: str) -> str:
        """retry, dlq, system (the one rule) or normal."""
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return "retry"
        if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
            return "dlq"
        return "system" if self.is_system_topic(topic) else "normal"

    def topics(self, system: bool = False) -> list[TopicConfig]:
        """The topics by name: the users' (normal), or every one with `system`."""
        table = self._b.topic_config_manager.table
        return [tc for name, tc in sorted(table.items()) if system or self.topic_kind(name) == "normal"]

    # -- groups -------------------------------------------------------------------------------------
    def user_groups(self) -> list[str]:
        """The consumer groups of users: RocketMQ's own (tools, CID_RMQ_SYS_*) left out."""
        names = set(self._b.subscription_group_manager.table) | set(self._b.consumer_manager.groups)
        return sorted(g for g in names if not is_system_group(g) and g not in TOOL_GROUPS)

    def group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's subscription config (made when autoCreateSubscriptionGroup is on, as a broker does)."""
        return self._b.subscription_group_manager.find(group)

    def groups_of_topic(self, topic: str) -> list[str]:
        """The user groups with offsets in `topic`."""
        return sorted(g for g in self._b.consumer_offset_manager.groups_of_topic(topic) if not is_system_group(g))

    def has_offsets(self, group: str) -> bool:
        return bool(self._b.consumer_offset_manager.topics_of_group(group))

    def is_broadcasting(self, group: str) -> bool:
        """The group consumes by broadcasting (its clients say so; offline: it has broadcast offsets)."""
        gi = self._b.consumer_manager.get(group)
        return (gi.message_model == MessageModel.BROADCASTING) if gi is not None \
            else self._b.broadcast_offsets.knows_group(group)

    def has_broadcast_offsets(self, group: str) -> bool:
        """Broadcast offsets are kept for the group (a reset computes per client then)."""
        return self._b.broadcast_offsets.knows_group(group)

    # -- progress -----------------------------------------------------------------------------------
    def progress(self, group: str, topic: str | None = None) -> ConsumeStats:
        """GET_CONSUME_STATS's numbers (broker/core/consume_stats.py)."""
        return consume_stats(self._b, group, topic)

    def committed_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The group's stored offset; -1 when it committed none."""
        return self._b.consumer_offset_manager.query_offset(group, topic, queue_id)

    def pulled_offset(self, group: str, topic: str, queue_id: int) -> int:
        return self._b.consumer_offset_manager.query_pull_offset(group, topic, queue_id)

    def offset_history(self, group: str, topic: str | None = None, queue_id: int | None = None
                       ) -> list[OffsetEvent]:
        """The group's offset changes, oldest first."""
        return list(self._b.consumer_offset_manager.history.of(group, topic, queue_id))

    def unacked(self, group: str, topic: str | None = None, queue_id: int | None = None) -> list[Unacked]:
        """A POP group's messages popped and not acked (the POP service's checkpoints), by topic, queue, offset."""
        out = [Unacked(ck.topic, ck.queue_id, o, ck.deadline, ck.order)
               for ck in self._b.pop_service.checkpoints.values()
               if ck.group == group and (topic is None or ck.topic == topic)
               and (queue_id is None or ck.queue_id == queue_id) for o in ck.pending()]
        return sorted(out)

    def inflight(self, group: str) -> int:
        """How many messages the group popped and has not acked."""
        return self._b.pop_service.inflight(group)

    def pops(self, group: str) -> bool:
        """The group consumes by POP (it has checkpoints, acked or not)."""
        return any(ck.group == group for ck in self._b.pop_service.checkpoints.values())

    def retry_delays(self) -> list[int]:
        """The delay of each level, ms (messageDelayLevel)."""
        return list(self._b.schedule_service.delays)

    # -- messages -----------------------------------------------------------------------------------
    def queue_range(self, topic: str, queue_id: int) -> tuple[int, int, int]:
        """(min offset, max offset, store time of the last message; 0 when empty) of one queue."""
        store = self._b.store
        low, high = max(0, store.get_min_offset_in_queue(topic, queue_id)), \
            max(0, store.get_max_offset_in_queue(topic, queue_id))
        last = store.get_message_store_timestamp(topic, queue_id, high - 1) if high > low else 0
        return low, high, max(0, last)

    def read_queue(self, topic: str, queue_id: int, offset: int, count: int, at_time: int | None = None
                   ) -> list[MessageExt]:
        """Up to `count` messages of a queue from `offset` (or from the first stored at or after `at_time`; never
        before the queue's first), read as a tool reads them (no group, not counted as a consumer's)."""
        store = self._b.store
        if at_time is not None:
            offset = max(0, store.get_offset_in_queue_by_time(topic, queue_id, at_time))
        offset = max(offset, store.get_min_offset_in_queue(topic, queue_id))
        got = store.get_message("dashboard", topic, queue_id, offset, count)
        return [MessageExt.decode(r) for r in got.messages] if got is not None else []

    def message_at(self, commit_log_offset: int) -> MessageExt | None:
        return self._b.store.look_message_by_offset(commit_log_offset)

    def messages_by_key(self, topic: str, key: str, max_num: int = 64) -> list[MessageExt]:
        """QUERY_MESSAGE's lookup: the messages of `topic` with `key` among their keys or as unique key."""
        return decode_messages(self._b.store.query_message(topic, key, max_num).body(), strict=False)

    def find_message(self, msg_id: str, topic: str | None = None) -> MessageExt | None:
        """A message by its offset msgId, or by its unique key (UNIQ_KEY) in `topic`."""
        if len(msg_id) in (32, 56):
            try:
                _, _, phy = decode_message_id(msg_id)
            except Exception:  # noqa: BLE001 - not an offset id: maybe a unique key
                phy = None
            if phy is not None:
                msg = self.message_at(phy)
                if msg is not None and (topic is None or msg.topic == topic):
                    return msg
        if topic and self.topic(topic) is not None:
            return next((m for m in self.messages_by_key(topic, msg_id, 8) if m.msg_id == msg_id), None)
        return None

    # -- connections --------------------------------------------------------------------------------
    def consumer_group(self, group: str) -> ConsumerGroupInfo | None:
        """The group's online consumers, subscriptions and message model (heartbeats)."""
        return self._b.consumer_manager.get(group)

    def clients_of(self, group: str) -> list[ClientChannelInfo]:
        gi = self._b.consumer_manager.get(group)
        return list(gi.channels.values()) if gi is not None else []

    def producers(self) -> dict[str, list[ClientChannelInfo]]:
        """Producer group -> its connections."""
        return {g: list(chs.values()) for g, chs in sorted(self._b.producer_manager.groups.items())}


class WriteCores(Protocol):
    """What the fronts change a broker through (BrokerController has them): the send path, the consume core's
    filters, POP's pop/ack/invisibility/DLQ, transactions and their check-backs, resets, topic administration,
    the store's expiry and the listening servers (drop connections)."""

    topic_config_manager: TopicConfigManager  # writes only: update (reads: ReadModel.topic)
    consumer_manager: ConsumerManager  # writes only: the gRPC front registers 5.x clients (reads: ReadModel)
    producer_manager: ProducerManager
    store: MessageStore  # writes only: expire_files_now
    pop_service: PopService
    broker2client: Broker2Client
    transaction_check: TransactionalMessageCheckService
    server: RemotingServer
    vip_server: RemotingServer | None

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def send_core(self) -> SendMessageCore: ...

    @property
    def consume_core(self) -> ConsumeCore: ...

    @property
    def transactions(self) -> TransactionalMessageService: ...

    def delete_topic(self, topic: str) -> None: ...


@dataclass(frozen=True, slots=True)
class BrokerFront:
    """One running broker as a front sees it: what it reads, and the cores it writes through."""

    read: ReadModel
    write: WriteCores

    @property
    def name(self) -> str:
        return self.read.name
