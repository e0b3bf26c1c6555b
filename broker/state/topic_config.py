"""Topic configs (reference §9.16, §11.2): system topics, auto-creation on send, retry/DLQ topics,
validation, and `config/topics.json`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from rocketmq_emulator.protocol import BrokerError, PermName, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import (DataVersion, TopicConfig, TopicConfigSerializeWrapper,
                                                     TopicFilterType)
from rocketmq_emulator.protocol.topics import (AUTO_CREATE_TOPIC_KEY, OFFSET_MOVED_EVENT, SCHEDULE_TOPIC,
                                               broker_system_topics, is_system_topic, reply_topic, retry_topic,
                                               topic_problem)

from .config_file import load_config_file, write_config_file

log = logging.getLogger("rocketmq_emulator.topics")

#: plain ints: topic configs are written to JSON (an IntFlag would print as its names)
PERM_INHERIT, PERM_WRITE, PERM_READ = int(PermName.INHERIT), int(PermName.WRITE), int(PermName.READ)


#: 5.x topic attributes (TopicAttributes.ALL) and the values each takes (None: any)
TOPIC_ATTRIBUTES: dict[str, frozenset[str] | None] = {
    "message.type": frozenset({"UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"}),
    "queue.type": frozenset({"BatchCQ", "SimpleCQ"}), "cleanup.policy": frozenset({"DELETE", "COMPACTION"}),
    "reserve.time": None}
MESSAGE_TYPE = "message.type"


def topic_message_type(tc: TopicConfig | None) -> str:
    """5.x's TopicConfig.getTopicMessageType: the `message.type` attribute; NORMAL when the topic has none (a
    topic made the 4.x way); UNSPECIFIED for no topic (the proxy's LocalMetadataService)."""
    if tc is None:
        return "UNSPECIFIED"
    return (tc.attributes or {}).get(MESSAGE_TYPE, "NORMAL")


def alter_attributes(current: dict[str, str] | None, modification: str | None) -> dict[str, str] | None:
    """UPDATE_AND_CREATE_TOPIC's `attributes` header (5.x AttributeParser: "+key=value,-key") applied to the topic's
    attributes. 5.x refuses a MIXED message type unless enableMixedMessageType (not an emulator setting)."""
    if not modification:
        return current
    out = dict(current or {})
    for item in (i.strip() for i in modification.split(",")):
        if not item:
            continue
        sign, key, value = item[0], item[1:].partition("=")[0], item[1:].partition("=")[2]
        if sign not in "+-" or key not in TOPIC_ATTRIBUTES:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"unsupported key: {item.lstrip('+-').partition('=')[0]}")
        if sign == "-":
            out.pop(key, None)
            continue
        allowed = TOPIC_ATTRIBUTES[key]
        if allowed is not None and value not in allowed:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"value is not in set: {sorted(allowed)}")
        if key == MESSAGE_TYPE and value == "MIXED":
            raise BrokerError(ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
        out[key] = value
    return out or None


def validate_topic(topic: str) -> None:
    """§9.1 step 4: blank, bad characters or too long -> SYSTEM_ERROR naming the problem."""
    problem = topic_problem(topic)
    if problem is not None:
        raise BrokerError(ResponseCode.SYSTEM_ERROR, problem)


#: a batch of more topics (or groups) than this is logged as one line, not one line each
MANY_LOGGED_ONE_BY_ONE = 20


class TopicConfigManager:
    def __init__(self, config_dir: Path, *, broker_name: str, cluster_name: str, auto_create_topic_enable: bool,
                 default_topic_queue_nums: int) -> None:
        self.path = config_dir / "topics.json"
        self.broker_name = broker_name
        self.cluster_name = cluster_name
        #: the topics this broker adds to the system set (protocol.topics.broker_system_topics)
        self.system_topic_names = broker_system_topics(cluster_name, broker_name)
        self.auto_create_topic_enable = auto_create_topic_enable
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion(counter=0)
        self.on_change: list[Callable[[], None]] = []  # e.g. re-register with the name server
        self._create_system_topics(default_topic_queue_nums)

    def _put(self, name: str, read: int, write: int, perm: int = PERM_READ | PERM_WRITE) -> None:
        self.table[name] = TopicConfig(topic_name=name, read_queue_nums=read, write_queue_nums=write, perm=perm)

    def _create_system_topics(self, default_queue_nums: int) -> None:
        self._put("SELF_TEST_TOPIC", 1, 1)
        if self.auto_create_topic_enable:
            self._put(AUTO_CREATE_TOPIC_KEY, default_queue_nums, default_queue_nums,
                      PERM_INHERIT | PERM_READ | PERM_WRITE)
        self._put("BenchmarkTest", 1024, 1024)
        self._put(self.cluster_name, 16, 16, PERM_READ | PERM_WRITE | PERM_INHERIT)
        self._put(self.broker_name, 1, 1, PERM_READ | PERM_WRITE | PERM_INHERIT)
        self._put(OFFSET_MOVED_EVENT, 1, 1)
        self._put(SCHEDULE_TOPIC, 18, 18)
        self._put(reply_topic(self.cluster_name), 1, 1)

    # -- persistence ----------------------------------------------------------------------------------
    def load(self) -> None:
        wrapper = load_config_file(self.path, TopicConfigSerializeWrapper.decode)
        if wrapper is None:
            return
        for name, tc in wrapper.topic_config_table.items():
            if name == AUTO_CREATE_TOPIC_KEY and not self.auto_create_topic_enable:
                continue
            self.table[name] = tc
        self.data_version = wrapper.data_version

    def persist(self) -> None:
        write_config_file(self.path, TopicConfigSerializeWrapper(topic_config_table=dict(self.table),
                                                                 data_version=self.data_version).encode(pretty=True))

    def _changed(self) -> None:
        self.data_version = self.data_version.next_version()
        self.persist()
        for callback in self.on_change:
            callback()

    # -- queries and changes --------------------------------------------------------------------------
    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def wrapper(self) -> TopicConfigSerializeWrapper:
        return TopicConfigSerializeWrapper(topic_config_table=dict(self.table), data_version=self.data_version)

    def update(self, tc: TopicConfig) -> None:
        self.update_many([tc])

    def update_many(self, tcs: list[TopicConfig]) -> None:
        """Create or change topics with one version step and one write of topics.json (an entities file's
        thousand topics: one write, not a thousand). Each is logged while few; a long list as one line."""
        if not tcs:
            return
        for tc in tcs:
            self.table[tc.topic_name] = tc
        if len(tcs) <= MANY_LOGGED_ONE_BY_ONE:
            for tc in tcs:
                log.info("topic %s: %d read / %d write queues, perm %d", tc.topic_name, tc.read_queue_nums,
                         tc.write_queue_nums, tc.perm)
        else:
            log.info("%d topics created or changed (%s ... %s)", len(tcs), tcs[0].topic_name, tcs[-1].topic_name)
        self._changed()

    def delete(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        self._changed()
        return True

    def create_in_send(self, topic: str, default_topic: str, queue_nums: int, sys_flag: int = 0) -> TopicConfig | None:
        """Auto-creation on send from the template topic (normally TBW102) when it has the INHERIT bit."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        template = self.table.get(default_topic)
        if template is None or not template.perm & PERM_INHERIT:
            return None
        if default_topic == AUTO_CREATE_TOPIC_KEY and not self.auto_create_topic_enable:
            return None  # autoCreateTopicEnable turned off at run time: TBW102 no longer lends its queues
        n = max(0, min(queue_nums, template.write_queue_nums))
        if n <= 0:
            return None
        tc = TopicConfig(topic_name=topic, read_queue_nums=n, write_queue_nums=n, perm=template.perm & ~PERM_INHERIT,
                         topic_filter_type=template.topic_filter_type, topic_sys_flag=sys_flag)
        log.info("topic %s auto-created from %s with %d queues", topic, default_topic, n)
        self.table[topic] = tc
        self._changed()
        return tc

    def create_without_template(self, topic: str, queue_nums: int, perm: int = PERM_READ | PERM_WRITE) -> TopicConfig:
        """Retry and DLQ topics (created on demand)."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        tc = TopicConfig(topic_name=topic, read_queue_nums=queue_nums, write_queue_nums=queue_nums, perm=perm,
                         topic_filter_type=TopicFilterType.SINGLE_TAG)
        self.table[topic] = tc
        self._changed()
        return tc

    def ensure_group_retry_topic(self, group: str, retry_queue_nums: int) -> None:
        """A consumer group's %RETRY% topic, made when the group's heartbeat arrives: by a 4.x client's HEART_BEAT,
        or for a 5.x client by its gRPC Heartbeat (the proxy's heartbeat to the broker); with no queues too when
        the group has retryQueueNums 0, as 4.9.8 and 5.x make it. Its route makes the group known to admin tools
        (consumerProgress finds a group's brokers, and lists groups, by it)."""
        retry = retry_topic(group)
        if self.get(retry) is None:
            self.create_without_template(retry, max(0, retry_queue_nums))

    def is_system_topic(self, topic: str) -> bool:
        """TopicValidator.isSystemTopic on this broker (protocol.topics.is_system_topic with its own names): what
        UPDATE_AND_CREATE_TOPIC / DELETE_TOPIC_IN_BROKER refuse, the dashboard counts as system and a 5.x
        client may not access."""
        return is_system_topic(topic, self.system_topic_names)
