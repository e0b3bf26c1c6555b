"""Broker configuration: defaults, a RocketMQ-style `broker.conf`, environment variables and flags.

Precedence, lowest first: built-in defaults, `--config FILE`, `ROCKETMQ_EMULATOR_<FLAG>` environment
variables, command-line flags. Unknown `broker.conf` keys are reported (logged), never fatal.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketmq_emulator.protocol.topics import DEFAULT_MESSAGE_DELAY_LEVEL, topic_problem

log = logging.getLogger("rocketmq_emulator.config")


#: the VIP port is the broker port minus this (RocketMQ's fastListenPort)
VIP_PORT_OFFSET = 2
#: `serve --brokers N`: broker i (from 0) listens on the broker port + i times this (and advertises likewise)
BROKER_PORT_STEP = 10


@dataclass
class BrokerConfig:
    # network
    host: str = "127.0.0.1"
    namesrv_port: int = 9876
    broker_port: int = 10911
    vip_channel_enabled: bool = True  # also listen on broker_port - 2, as the real broker does
    advertised_host: str | None = None  # brokerIP1: the address put in route data (see resolve_advertised_host)
    advertised_port: int | None = None
    # identity
    broker_name: str = "broker-a"
    #: brokers in this process (`serve --brokers N`): broker-a, broker-b, ... every 10 ports (README "Several
    #: brokers in one process")
    brokers: int = 1
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
    #: brokerPermission (PermName bits, 6 = read and write): without read or write, every route of this broker
    #: carries it as the topics' perm, and pulls are refused without read (README "... configuration at run time")
    broker_permission: int = 6
    default_topic_queue_nums: int = 8  # TBW102's queue count (reference §9.16); producers cap it to 4
    long_polling_enable: bool = True
    short_polling_time_ms: int = 1000
    notify_consumer_ids_changed_enable: bool = True
    channel_expired_timeout_s: float = 120.0
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    #: consumerOffset.json (the batched tier) is written this often when offsets changed (seed 003: 100 ms)
    flush_consumer_offset_interval_ms: int = 100
    #: "write-behind": an offset write (commit, reset, removal) is answered at once and is durable within the
    #: event-loop iteration; "write-through": answered only once it is in the durable tier (broker/write_through.py,
    #: README "Offset durability")
    offset_durability: str = "write-behind"
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
    #: the wire trace (README "Wire trace"): a file, or "-" for standard error; None: off
    wire_trace: str | None = None
    wire_trace_format: str = "text"
    wire_trace_codes: frozenset[int] | None = None
    wire_trace_group: str | None = None
    wire_trace_topic: str | None = None
    log_level: str = "INFO"
    #: created (or given this queue count) at start: `--topic orders:8`, ROCKETMQ_EMULATOR_TOPICS="orders:8,b:4"
    topics: list[tuple[str, int]] = field(default_factory=list)
    #: subscription groups created at start: `--group g1`, ROCKETMQ_EMULATOR_GROUPS="g1,g2"
    groups: list[str] = field(default_factory=list)
    unknown_keys: list[str] = field(default_factory=list)

    @property
    def broker_addr(self) -> str:
        """The address clients are told to use (route data, offset msgIds)."""
        return f"{self.advertised_host or self.host}:{self.advertised_port or self.broker_port}"

    @property
    def namesrv_addr(self) -> str:
        return f"{self.host}:{self.namesrv_port}"


WILDCARD_HOSTS = ("0.0.0.0", "::", "")
OFFSET_DURABILITY = ("write-behind", "write-through")


def primary_address() -> str:
    """This machine's primary IPv4 address (RocketMQ's `brokerIP1` default): the source address of its default
    route (no packet is sent), else the address of its host name, else 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only the routing table is consulted
            ip = s.getsockname()[0]
            if ip and ip != "0.0.0.0":
                return ip
    except OSError:
        pass
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def resolve_advertised_host(config: BrokerConfig) -> None:
    """Fill in the address a broker listening on all interfaces puts in route data, as RocketMQ does.

    * `advertised_host` given: used as is (an IP or a name clients can resolve).
    * listening on 0.0.0.0 / :: with only `advertised_port` given: 127.0.0.1 — the port is published on this host
      (`docker run -p 20911:10911 -e ROCKETMQ_EMULATOR_ADVERTISED_PORT=20911`), so local clients reach it.
    * listening on 0.0.0.0 / :: otherwise: the machine's primary address (in a container: the container's
      address, which other containers of the same network reach, e.g. in docker compose).
    * else the listening address.
    """
    if config.advertised_host:
        return
    if config.host in WILDCARD_HOSTS:
        config.advertised_host = "127.0.0.1" if config.advertised_port else primary_address()


def ip_of(host: str) -> str:
    """`host` if it is an IP address, else what it resolves to (127.0.0.1 if it does not): the store host of
    stored messages must be an IP even when the advertised host is a name."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        return socket.gethostbyname(host)
    except OSError:
        log.warning("advertised host %r does not resolve here; message ids carry 127.0.0.1", host)
        return "127.0.0.1"


def parse_topic_list(text: str) -> list[tuple[str, int]]:
    """`orders:8,payments` -> [("orders", 8), ("payments", 8)] (8 queues unless given, as the broker's default)."""
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, count = item.partition(":")
        name = name.strip()
        problem = topic_problem(name)
        if problem is not None:
            raise ValueError(f"topic {item!r}: {problem} Use NAME or NAME:QUEUES")
        queues = 8
        if sep:
            try:
                queues = int(count)
            except ValueError:
                raise ValueError(f"topic {item!r}: the queue count {count!r} is not a number") from None
            if not 1 <= queues <= 1024:
                raise ValueError(f"topic {item!r}: the queue count must be 1-1024")
        out.append((name, queues))
    return out


def parse_group_list(text: str) -> list[str]:
    """`g1,g2` -> ["g1", "g2"]; names follow the topic naming rule, as RocketMQ's groups do."""
    out = []
    for g in (g.strip() for g in text.split(",")):
        if not g:
            continue
        if topic_problem(g) is not None:
            raise ValueError(f"group {g!r} contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
        out.append(g)
    return out


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
    "brokerPermission": "broker_permission",
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
    "offsetDurability": "offset_durability",
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
        if attr == "offset_durability" and config.offset_durability not in OFFSET_DURABILITY:
            raise ValueError(f"invalid value {value!r} for {key}: use write-behind or write-through")
    return config

