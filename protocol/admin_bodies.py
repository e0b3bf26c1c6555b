"""Typed JSON bodies of admin requests and config files: stats, reset offset, topic/group configs, offset files
(reference §6.3, §8.8, §9.11, §9.12, §10.6).

Maps keyed by `MessageQueue` are written with object-form keys (`{{"brokerName":..}:42}`, §6.1 rule 4); the
file wrappers (`ConsumerOffsetSerializeWrapper`, `OffsetSerializeWrapper`) encode pretty by default, in the
layout a Java process writes to disk (§6.1 rule 5).
"""

from __future__ import annotations

import time
from enum import IntEnum

import msgspec

from . import fastjson
from .bodies import Body, MessageQueue, utf8

__all__ = [
    "ResetOffsetBody", "GetConsumerStatusBody", "OffsetWrapper", "ConsumeStats", "TopicOffset",
    "TopicStatsTable", "TopicFilterType", "TopicConfig", "DataVersion", "TopicConfigSerializeWrapper",
    "SubscriptionGroupConfig", "SubscriptionGroupWrapper", "ConsumerOffsetSerializeWrapper", "GroupRetryPolicy",
    "ExponentialRetryPolicy", "CustomizedRetryPolicy",
    "OffsetSerializeWrapper",
]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# --------------------------------------------------------------------------------------------------
# Reset offset, consumer status
# --------------------------------------------------------------------------------------------------
class ResetOffsetBody(Body):
    """Queue -> new offset. `encode()` is the Java object-key form, `encode_for_c()` the C++ list form
    (`ResetOffsetBodyForC`); `decode` accepts both, and Go's gson-style `[[{mq}, n], ...]` pairs."""

    offset_table: dict[MessageQueue, int] = msgspec.field(default_factory=dict)

    def encode_for_c(self) -> bytes:
        """`{"offsetTable":[{"brokerName":..,"offset":..,"queueId":..,"topic":..}]}`: standard JSON."""
        entries = [{"brokerName": mq.broker_name, "offset": offset, "queueId": mq.queue_id, "topic": mq.topic}
                   for mq, offset in self.offset_table.items()]
        return utf8(fastjson.dumps({"offsetTable": entries}))


class GetConsumerStatusBody(Body):
    """221 answer from a client (`message_queue_table`) / 223 answer to admin (`consumer_table` by clientId)."""

    message_queue_table: dict[MessageQueue, int] = msgspec.field(default_factory=dict)
    consumer_table: dict[str, dict[MessageQueue, int]] = msgspec.field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# Stats
# --------------------------------------------------------------------------------------------------
class OffsetWrapper(Body):
    """Per-queue progress of a group; `pull_offset` (5.x) is written only when set."""

    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0
    pull_offset: int | None = None


class ConsumeStats(Body):
    consume_tps: float = 0.0
    offset_table: dict[MessageQueue, OffsetWrapper] = msgspec.field(default_factory=dict)

    def total_diff(self) -> int:
        """Sum over queues of broker offset minus consumer offset (Java `computeTotalDiff`)."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())


class TopicOffset(Body):
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0


class TopicStatsTable(Body):
    offset_table: dict[MessageQueue, TopicOffset] = msgspec.field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# Topic and subscription-group configs
# --------------------------------------------------------------------------------------------------
class TopicFilterType(IntEnum):
    SINGLE_TAG = 0
    MULTI_TAG = 1


class TopicConfig(Body):
    """One topic of topics.json / GET_ALL_TOPIC_CONFIG, with the Java defaults."""

    topic_name: str = ""
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: TopicFilterType = TopicFilterType.SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False
    #: 5.x topic attributes (`message.type`: NORMAL, FIFO, DELAY, TRANSACTION); None (not written) when none set
    attributes: dict[str, str] | None = None

    def java_string(self) -> str:
        """As Java's TopicConfig.toString() writes it (4.9.8 puts it in some refusals' remarks)."""
        perm = ("R" if self.perm & 4 else "-") + ("W" if self.perm & 2 else "-") + ("X" if self.perm & 1 else "-")
        return (f"TopicConfig [topicName={self.topic_name}, readQueueNums={self.read_queue_nums}, "
                f"writeQueueNums={self.write_queue_nums}, perm={perm}, topicFilterType={self.topic_filter_type.name}, "
                f"topicSysFlag={self.topic_sys_flag}, order={'true' if self.order else 'false'}]")


class DataVersion(Body):
    """Change stamp of a config table; the name server skips registrations whose version it already has."""

    timestamp: int = msgspec.field(default_factory=_now_ms)
    counter: int = 0

    def next_version(self, timestamp_ms: int | None = None) -> DataVersion:
        """The version after one more change: counter + 1, timestamp now (or `timestamp_ms`)."""
        return DataVersion(timestamp=_now_ms() if timestamp_ms is None else timestamp_ms, counter=self.counter + 1)


class _ConfigFile(Body):
    def encode(self, pretty: bool = False) -> bytes:
        """Compact for the wire, `pretty=True` for the file layout (§6.1 rule 5)."""
        return utf8(fastjson.dumps(self, pretty=pretty))


class TopicConfigSerializeWrapper(_ConfigFile):
    """GET_ALL_TOPIC_CONFIG body, part of RegisterBrokerBody, and topics.json (`encode(pretty=True)`)."""

    topic_config_table: dict[str, TopicConfig] = msgspec.field(default_factory=dict)
    data_version: DataVersion = msgspec.field(default_factory=DataVersion)


class RegisterBrokerBody(Body):
    """REGISTER_BROKER body (uncompressed form): the broker's topic configs and their data version."""

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = msgspec.field(
        default_factory=TopicConfigSerializeWrapper)
    filter_server_list: list[str] = msgspec.field(default_factory=list)


#: 5.x's CustomizedRetryPolicy default (its `next`, in ms): the 18 delay levels, 1 s to 2 h
DEFAULT_CUSTOMIZED_NEXT = (1000, 5000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
                           480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000)


class ExponentialRetryPolicy(Body):
    """5.x: the delay of retry n is initial * multiplier^n, at most max (ms)."""

    initial: int = 5000
    max: int = 7_200_000
    multiplier: int = 2


class CustomizedRetryPolicy(Body):
    """5.x: the delays of the retries (ms); the last repeats."""

    next: list[int] = msgspec.field(default_factory=lambda: list(DEFAULT_CUSTOMIZED_NEXT))


class GroupRetryPolicy(Body):
    """5.x's groupRetryPolicy of a subscription group: what its 5.x consumers back off by (their settings)."""

    type: str = "CUSTOMIZED"  # or EXPONENTIAL
    exponential_retry_policy: ExponentialRetryPolicy | None = None
    customized_retry_policy: CustomizedRetryPolicy | None = None


class SubscriptionGroupConfig(Body):
    """One group of subscriptionGroup.json (200 body), with the Java defaults."""

    group_name: str = ""
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    #: 5.x: a FIFO group (5.x clients consume its queues in order); None (not written, as 4.9.8 has no such
    #: field) unless an update set it
    consume_message_orderly: bool | None = None
    #: 5.x: the group's retry policy (None: not written; the 5.x default, the customized delay levels)
    group_retry_policy: GroupRetryPolicy | None = None


class SubscriptionGroupWrapper(_ConfigFile):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG body and subscriptionGroup.json."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = msgspec.field(default_factory=dict)
    data_version: DataVersion = msgspec.field(default_factory=DataVersion)


# --------------------------------------------------------------------------------------------------
# Offset files
# --------------------------------------------------------------------------------------------------
class _PrettyFile(Body):
    def encode(self, pretty: bool = True) -> bytes:
        """The file layout by default (§6.1 rule 5); `pretty=False` for compact text."""
        return utf8(fastjson.dumps(self, pretty=pretty))


class ConsumerOffsetSerializeWrapper(_PrettyFile):
    """The broker's consumerOffset.json: `"topic@group"` -> queue id (bare numeric key) -> offset.
    `data_version` is the 5.x addition, written only when set."""

    offset_table: dict[str, dict[int, int]] = msgspec.field(default_factory=dict)
    data_version: DataVersion | None = None


class OffsetSerializeWrapper(_PrettyFile):
    """A broadcasting client's offsets.json: MessageQueue (object key) -> offset."""

    offset_table: dict[MessageQueue, int] = msgspec.field(default_factory=dict)
