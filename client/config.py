"""Client settings (Java `ClientConfig` plus the consumer defaults of `DefaultMQPushConsumer`), and the
client id rules (reference §6.3 HeartbeatData, §10.1, §10.6)."""

from __future__ import annotations

import os
import re
import socket
import time
from dataclasses import dataclass, field, replace
from typing import Any

from rocketmq_emulator.protocol.topics import NAME_CHARACTERS, name_problem

from .errors import InvalidArgumentError

DEFAULT_NAMESRV = "127.0.0.1:9876"
DEFAULT_INSTANCE_NAME = "DEFAULT"
#: the protocol's `LanguageCode` name this client puts in its headers
LANGUAGE = "PYTHON"

_VALID_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")


@dataclass(frozen=True)
class ClientConfig:
    """Settings shared by producers, consumers and the admin client. Times are in seconds."""

    #: "host:port", several separated by ";"; default $NAMESRV_ADDR, else 127.0.0.1:9876 (as the Java client)
    namesrv: str = field(default_factory=lambda: os.environ.get("NAMESRV_ADDR") or DEFAULT_NAMESRV)
    instance_name: str | None = None  #: None: a unique name per client object (Java's pid#nanoTime)
    client_ip: str | None = None  #: None: the address of this host on the route to the name server
    request_timeout: float = 3.0  #: `mqClientApiTimeout`
    connect_timeout: float = 3.0
    poll_name_server_interval: float = 30.0
    heartbeat_broker_interval: float = 30.0
    persist_consumer_offset_interval: float = 5.0
    reconnect_backoff_max: float = 5.0  #: longest wait between two connection attempts to one address

    @classmethod
    def resolve(cls, config: ClientConfig | None, namesrv: str | None = None,
                instance_name: str | None = None) -> ClientConfig:
        """The config a producer/consumer uses: `config` (or the defaults) with the given overrides."""
        config = config or cls()
        if namesrv is not None:
            config = config.with_(namesrv=namesrv)
        if instance_name is not None:
            config = config.with_(instance_name=instance_name)
        return config

    def with_(self, **changes: Any) -> ClientConfig:
        return replace(self, **changes)

    @property
    def namesrv_addrs(self) -> list[str]:
        addrs = [a.strip() for a in re.split(r"[;,]", self.namesrv) if a.strip()]
        if not addrs:
            raise InvalidArgumentError("no name server address given; pass namesrv='host:9876'")
        for a in addrs:
            host, sep, port = a.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise InvalidArgumentError(f"name server address {a!r} is not host:port")
        return addrs


@dataclass
class ConsumerSettings:
    """Push-consumer tuning, with the Java defaults."""

    pull_batch_size: int = 32
    pull_threshold_for_queue: int = 1000
    pull_threshold_size_for_queue: int = 100 * 1024 * 1024
    consume_concurrently_max_span: int = 2000
    consume_concurrency: int = 20  #: in-flight handlers (Java consumeThreadMin)
    consume_batch_size: int = 1  #: messages per handler call (Java consumeMessageBatchMaxSize)
    max_reconsume_times: int = -1  #: -1: 16 for concurrent, unlimited for orderly consumers
    suspend_current_queue_time: float = 1.0  #: orderly: pause after RECONSUME_LATER
    rebalance_interval: float = 20.0
    broker_suspend_max_time: float = 15.0
    consumer_timeout_when_suspend: float = 30.0
    pull_delay_on_error: float = 1.0
    pull_delay_on_flow_control: float = 0.05
    local_retry_delay: float = 5.0  #: a message whose send-back failed is consumed again after this
    await_termination_timeout: float = 10.0  #: stop(): how long to wait for running handlers
    drain_timeout: float = 3.0  #: a revoked queue waits this long for its running handlers before committing
    lock_interval: float = 20.0
    post_subscription_when_pull: bool = False
    extra: dict[str, str] = field(default_factory=dict)


def validate_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not name or not _VALID_NAME.match(name) or len(name) > 255:
        raise InvalidArgumentError(f"{kind} {name!r} is invalid: use 1 to 255 of {NAME_CHARACTERS}")
    return name


def validate_topic(topic: str) -> str:
    problem = name_problem("topic", topic) if isinstance(topic, str) else f"topic {topic!r} is not text"
    if problem is not None:
        raise InvalidArgumentError(problem)
    return topic


_local_ip_cache: dict[str, str] = {}


def local_ip(towards: str = DEFAULT_NAMESRV) -> str:
    """This host's IPv4 address on the route towards `towards` ("host:port"); no packet is sent."""
    host = towards.rpartition(":")[0] or "127.0.0.1"
    ip = _local_ip_cache.get(host)
    if ip is None:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((host, 9))
                ip = s.getsockname()[0]
        except OSError:
            ip = "127.0.0.1"
        _local_ip_cache[host] = ip
    return ip


def unique_instance_name() -> str:
    """Java 4.9.x's replacement for the DEFAULT instance name: `<pid>#<nanoTime>`."""
    return f"{os.getpid()}#{time.perf_counter_ns()}"


def build_client_id(config: ClientConfig, *, broadcasting: bool = False) -> str:
    """`ip@instanceName`. Without an instance name a broadcasting consumer is `ip@DEFAULT` (its offsets file
    lives under that id, §10.6); any other client gets a name of its own, `ip@pid#nanoTime`."""
    ip = config.client_ip or local_ip(config.namesrv_addrs[0])
    name = config.instance_name
    if name is None:
        name = DEFAULT_INSTANCE_NAME if broadcasting else unique_instance_name()
    return f"{ip}@{name}"
