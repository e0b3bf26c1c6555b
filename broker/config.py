"""Broker configuration: defaults, a RocketMQ-style `broker.conf`, environment variables and flags.

Precedence, lowest first: built-in defaults, `--config FILE`, `ROCKETMQ_EMULATOR_<FLAG>` environment
variables, command-line flags. Unknown `broker.conf` keys are reported (logged), never fatal.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketmq_emulator.protocol.topics import DEFAULT_MESSAGE_DELAY_LEVEL

log = logging.getLogger("rocketmq_emulator.config")


@dataclass
class BrokerConfig:
    # network
    host: str = "127.0.0.1"
    namesrv_port: int = 9876
    broker_port: int = 10911
    vip_channel_enabled: bool = True  # also listen on broker_port - 2, as the real broker does
    advertised_host: str | None = None  # brokerIP1: the address put in route data
    advertised_port: int | None = None
    # identity
    broker_name: str = "broker-a"
    cluster_name: str = "DefaultCluster"
    # store
    store_dir: str = "./rocketmq-data"
    ephemeral: bool = False
    mapped_file_size_commitlog: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue_units: int = 300_000
    flush_disk_type: str = "ASYNC_FLUSH"
    flush_interval_commitlog_ms: int = 500
    file_reserved_time_hours: float = 72
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    max_message_size: int = 4 * 1024 * 1024
    # behaviour
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    default_topic_queue_nums: int = 8  # TBW102's queue count (reference §9.16); producers cap it to 4
    long_polling_enable: bool = True
    short_polling_time_ms: int = 1000
    notify_consumer_ids_changed_enable: bool = True
    channel_expired_timeout_s: float = 120.0
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    flush_consumer_offset_interval_ms: int = 5000
    # consumer offsets (README "Consumer offsets")
    #: what QUERY_CONSUMER_OFFSET answers for a group with no stored offset: "legacy" (4.9.x: 0 while the
    #: queue's first message is still stored) or "strict" (always QUERY_NOT_FOUND: the client's setting decides)
    new_group_offset: str = "legacy"
    #: resets are also kept by the broker and applied at the group's next pull of each queue (5.x)
    use_server_side_reset_offset: bool = True
    #: the broker tracks broadcasting clients' offsets; a client with none resumes from the group's (5.x)
    enable_broadcast_offset_store: bool = True
    broadcast_offset_expire_s: float = 120.0
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    log_level: str = "INFO"
    unknown_keys: list[str] = field(default_factory=list)

    @property
    def broker_addr(self) -> str:
        """The address clients are told to use (route data, offset msgIds)."""
        return f"{self.advertised_host or self.host}:{self.advertised_port or self.broker_port}"

    @property
    def namesrv_addr(self) -> str:
        return f"{self.host}:{self.namesrv_port}"


#: `broker.conf` key -> BrokerConfig attribute
CONF_KEYS: dict[str, str] = {
    "brokerName": "broker_name",
    "brokerClusterName": "cluster_name",
    "listenPort": "broker_port",
    "brokerIP1": "advertised_host",
    "storePathRootDir": "store_dir",
    "storePathCommitLog": "",  # accepted, the commitlog always lives under storePathRootDir
    "fileReservedTime": "file_reserved_time_hours",
    "deleteWhen": "delete_when",
    "flushDiskType": "flush_disk_type",
    "flushIntervalCommitLog": "flush_interval_commitlog_ms",
    "autoCreateTopicEnable": "auto_create_topic_enable",
    "autoCreateSubscriptionGroup": "auto_create_subscription_group",
    "defaultTopicQueueNums": "default_topic_queue_nums",
    "mappedFileSizeCommitLog": "mapped_file_size_commitlog",
    "mapedFileSizeCommitLog": "mapped_file_size_commitlog",
    "mappedFileSizeConsumeQueue": "mapped_file_size_consume_queue_units",  # bytes in RocketMQ, see below
    "mapedFileSizeConsumeQueue": "mapped_file_size_consume_queue_units",
    "diskMaxUsedSpaceRatio": "disk_max_used_space_ratio",
    "maxMessageSize": "max_message_size",
    "longPollingEnable": "long_polling_enable",
    "shortPollingTimeMills": "short_polling_time_ms",
    "notifyConsumerIdsChangedEnable": "notify_consumer_ids_changed_enable",
    "messageDelayLevel": "message_delay_level",
    "flushConsumerOffsetInterval": "flush_consumer_offset_interval_ms",
    "regionId": "region_id",
    "traceOn": "trace_on",
    "vipChannelEnabled": "vip_channel_enabled",
    "newGroupOffset": "new_group_offset",
    "useServerSideResetOffset": "use_server_side_reset_offset",
    "enableBroadcastOffsetStore": "enable_broadcast_offset_store",
    "broadcastOffsetExpireSecond": "broadcast_offset_expire_s",
    # accepted and ignored: this process is always the one master of its broker and embeds its name server
    "namesrvAddr": "", "brokerId": "", "brokerRole": "", "brokerIP2": "", "haListenPort": "",
    "enablePropertyFilter": "", "traceTopicEnable": "", "aclEnable": "",
}


def _coerce(current: Any, text: str, name: str) -> Any:
    text = text.strip()
    if isinstance(current, bool):
        return text.lower() == "true"
    if isinstance(current, int):
        return int(text)
    if isinstance(current, float):
        return float(text)
    if current is None and name == "advertised_port":
        return int(text)
    return text


def parse_properties(text: str) -> dict[str, str]:
    """Java `.properties` text: `key=value` or `key: value`, `#`/`!` comments, blank lines."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        for sep in ("=", ":"):
            if sep in line:
                key, value = line.split(sep, 1)
                break
        else:
            key, value = line, ""
        out[key.strip()] = value.strip()
    return out


def apply_broker_conf(config: BrokerConfig, path: str | Path) -> BrokerConfig:
    props = parse_properties(Path(path).read_text())
    for key, value in props.items():
        attr = CONF_KEYS.get(key)
        if attr is None:
            config.unknown_keys.append(key)
            log.warning("%s: unknown key %r ignored", path, key)
            continue
        if not attr:
            continue
        if key in ("mappedFileSizeConsumeQueue", "mapedFileSizeConsumeQueue"):
            setattr(config, attr, max(1, int(value) // 20))  # RocketMQ gives bytes; 20 bytes a unit
            continue
        try:
            setattr(config, attr, _coerce(getattr(config, attr), value, attr))
        except ValueError:
            raise ValueError(f"invalid value {value!r} for {key}") from None
        if attr == "new_group_offset" and config.new_group_offset not in ("legacy", "strict"):
            raise ValueError(f"invalid value {value!r} for {key}: use legacy or strict")
    return config


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(BrokerConfig) if f.name != "unknown_keys"]
