"""RocketMQ's topic and group naming rules, in one place for the broker, the store and the client (Java's
`MixAll` and `TopicValidator`, plus the `messageDelayLevel` parser of its store config). Permission bits and
sys flags are `PermName`, `MessageSysFlag` and `PullSysFlag` in `codes`."""

from __future__ import annotations

import re
from typing import Collection, Mapping

#: the template topic a broker creates unknown topics from on the first send (MixAll.AUTO_CREATE_TOPIC_KEY_TOPIC)
AUTO_CREATE_TOPIC_KEY = "TBW102"
#: queues a producer asks for when a topic is created from the template
DEFAULT_TOPIC_QUEUE_NUMS = 4
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
#: where delayed messages (and retries) wait, queue = delay level - 1 (TopicValidator.RMQ_SYS_SCHEDULE_TOPIC)
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
#: the group the schedule service reads SCHEDULE_TOPIC_XXXX as (MixAll.SCHEDULE_CONSUMER_GROUP)
SCHEDULE_CONSUMER_GROUP = "SCHEDULE_CONSUMER"
#: where a master records each PULL_OFFSET_MOVED correction
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
#: transactions: half (prepared) messages, the op records of their decisions, half messages checked too often,
#: and the system group whose offsets are the check service's progress through the first two
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
#: where 4.x clients with message trace on (enableMsgTrace) write their trace records
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
#: RocketMQ's own consumer groups (MixAll.CID_RMQ_SYS_PREFIX): made on first use whatever
#: autoCreateSubscriptionGroup says, refused to 5.x clients, left out of the dashboard's groups
SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_"
TRANS_CONSUMER_GROUP = SYSTEM_GROUP_PREFIX + "TRANS"
#: system topics by name (TopicValidator.SYSTEM_TOPIC_PREFIX)
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
#: 5.x timer messages wait here for their delivery time (broker/core/timer.py); its progress is this group's offset
TIMER_TOPIC = SYSTEM_TOPIC_PREFIX + "wheel_timer"
TIMER_GROUP = SYSTEM_GROUP_PREFIX + "TIMER"
#: topics producers may never write (TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET)
NOT_ALLOWED_SEND_TOPICS = frozenset({SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
                                     TRANS_CHECK_MAX_TIME_TOPIC, "SELF_TEST_TOPIC", OFFSET_MOVED_EVENT})
SYSTEM_TOPICS = frozenset({AUTO_CREATE_TOPIC_KEY, SCHEDULE_TOPIC, TIMER_TOPIC, "BenchmarkTest", TRANS_HALF_TOPIC,
                           TRACE_TOPIC, TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC,
                           "SELF_TEST_TOPIC", OFFSET_MOVED_EVENT})
#: where request-reply replies of a cluster go: `<cluster>_REPLY_TOPIC` (MixAll.REPLY_TOPIC_POSTFIX)
REPLY_TOPIC_SUFFIX = "_REPLY_TOPIC"
TOPIC_MAX_LENGTH = 127
_VALID_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
_DELAY_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


#: a broadcasting group's offsets in consumerOffset.json: `topic@group@broadcast` (5.x), beside `topic@group`
BROADCAST_OFFSET_SUFFIX = "@broadcast"


def parse_offset_key(key: str) -> tuple[str, str, bool] | None:
    """A consumerOffset.json key -> (topic, group, broadcasting); None when it is neither form."""
    topic, _, group = key.partition("@")
    broadcasting = group.endswith(BROADCAST_OFFSET_SUFFIX)
    if broadcasting:
        group = group[:-len(BROADCAST_OFFSET_SUFFIX)]
    if not topic or not group or "@" in group:
        return None
    return topic, group, broadcasting


def reply_topic(cluster_name: str) -> str:
    return cluster_name + REPLY_TOPIC_SUFFIX


def broker_system_topics(cluster_name: str, broker_name: str) -> tuple[str, str, str]:
    """The topics a broker adds to the system set when it starts (TopicConfigManager's
    TopicValidator.addSystemTopic calls): its cluster's and its own name, and its cluster's reply topic."""
    return cluster_name, broker_name, reply_topic(cluster_name)


def is_system_topic(topic: str, added: Collection[str] = ()) -> bool:
    """TopicValidator.isSystemTopic, the one rule of every front: the system set, the `rmq_sys_` prefix, and
    `added`, the topics the brokers of this process added to the set (`broker_system_topics`). A user's topic
    named `RMQ_SYS_...` (upper case) or `..._REPLY_TOPIC` of no cluster here is no system topic."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX) or topic in added


#: the groups every broker has from its start (4.9.8's SubscriptionGroupManager.init); CID_RMQ_SYS_TRACE is made on
#: first use
TOOL_GROUPS = ("TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
               "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_ONSAPI_PULL")


def is_system_group(group: str) -> bool:
    return group.startswith(SYSTEM_GROUP_PREFIX)


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def origin_topic(topic: str, props: Mapping[str, str]) -> str:
    """The topic a message was sent to: RETRY_TOPIC for a message in a retry topic, else its own."""
    return props.get("RETRY_TOPIC", topic) if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else topic


def pop_retry_topic(group: str, topic: str) -> str:
    """Where a POP consumer group's un-acked messages of `topic` go back to (5.x KeyBuilder, V1 naming)."""
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}_{topic}"


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_valid_name(name: str) -> bool:
    """Topic and group names: `[%|a-zA-Z0-9_-]+`."""
    return bool(name) and _VALID_NAME.match(name) is not None


#: what a topic or group name may hold, in words for people (the Java broker's answers name its pattern instead)
NAME_CHARACTERS = "letters, digits and the characters % | _ -"


def name_problem(kind: str, name: str) -> str | None:
    """Why a topic or group name (`kind`) given on a command line or in a file is refused, in plain words (no
    pattern), or None when it is fine."""
    if not name or not name.strip():
        return f"a {kind} name cannot be blank"
    if not _VALID_NAME.match(name):
        return f"{kind} {name!r} is invalid: use {NAME_CHARACTERS}"
    if len(name) > TOPIC_MAX_LENGTH:
        return f"{kind} {name[:20]!r}... is longer than {TOPIC_MAX_LENGTH} characters"
    return None


def topic_problem(topic: str) -> str | None:
    """Why a topic name is refused (in the Java broker's words), or None when it is fine."""
    if not topic or not topic.strip():
        return "The specified topic is blank."
    if not _VALID_NAME.match(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def parse_delay_levels(spec: str) -> list[int]:
    """`messageDelayLevel` (`1s 5s 10s 30s 1m ...`) -> delays in ms, level 1 first. ValueError names a bad
    entry."""
    out = []
    for token in spec.split():
        m = re.fullmatch(r"(\d+)([smhd])", token)
        if not m:
            raise ValueError(f"bad messageDelayLevel entry {token!r}: use a number and s, m, h or d")
        out.append(int(m.group(1)) * _DELAY_UNITS_MS[m.group(2)])
    return out
