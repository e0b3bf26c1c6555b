"""The emulator's configuration: read once, frozen, named after RocketMQ's keys.

* `EmulatorConfig`: the process (listening host, name-server port, log level, wire trace, topics and groups
  created at start) and a tuple of `BrokerConfig`, one per broker (broker-a, broker-b, ...).
* `BrokerConfig`: one broker's settings, each field the snake_case of its Java key (`listenPort` ->
  `listen_port`, `brokerIP1` -> `broker_ip1`), holding its store's settings in `store` (a `MessageStoreConfig`:
  store settings live only there, e.g. `config.store.flush_disk_type`).
* Enumerated settings are enums (`FlushDiskType`, `NewGroupOffset`, `OffsetDurability`, `LogLevel`,
  `TraceFormat`); readers compare members, never text.

Every source of settings (serve's flags, `ROCKETMQ_EMULATOR_*` variables, a `broker.conf`, updateBrokerConfig
at run time, Python code) goes through the one parser, broker/settings.py, which builds these objects; nothing
writes into them afterwards. What is only known at run time lives on the running objects: the bound ports on
`BrokerController.listen_port` / `.broker_addr` and `NameServer.port`, the temporary store of `--ephemeral` on
the `Emulator`; a change at run time builds a new frozen config (`dataclasses.replace`, through the same parser)
that the controller swaps in one place (`BrokerController.config`).
"""

from __future__ import annotations

import enum
import ipaddress
import logging
import socket
from dataclasses import dataclass, field

from rocketmq_emulator.protocol.topics import name_problem
from rocketmq_emulator.store.config import MessageStoreConfig

log = logging.getLogger("rocketmq_emulator.config")


#: the VIP port is the broker port minus this (RocketMQ's fastListenPort)
VIP_PORT_OFFSET = 2
#: `serve --brokers N`: broker i (from 0) listens on the broker port + i times this (and advertises likewise)
BROKER_PORT_STEP = 10
#: the store directory when none is given (RocketMQ's is ~/store)
DEFAULT_STORE_DIR = "./rocketmq-data"
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


class NewGroupOffset(enum.Enum):
    """`newGroupOffset`: what QUERY_CONSUMER_OFFSET answers for a group with no stored offset (README "Consumer
    offsets"): LEGACY (4.9.x: 0 while the queue's first message is still stored) or STRICT (always
    QUERY_NOT_FOUND: the client's consumeFromWhere decides)."""
    LEGACY = "legacy"
    STRICT = "strict"


class OffsetDurability(enum.Enum):
    """`offsetDurability` (README "Offset durability"): WRITE_BEHIND answers an offset write at once (durable
    within the event-loop iteration), WRITE_THROUGH only once it is in the durable tier."""
    WRITE_BEHIND = "write-behind"
    WRITE_THROUGH = "write-through"


class Compat(enum.Enum):
    """`compat`: whose answers the broker gives where 4.9.8 and 5.x differ (README "Parity with Apache
    RocketMQ"). V5 (default) keeps 5.x's behaviour; V4_9 sets each setting of `settings.COMPAT_4_9` that was
    not given explicitly to 4.9.8's value, and the few answers with no setting of their own follow 4.9.8."""
    V5 = "5"
    V4_9 = "4.9"


class ServeRole(enum.Enum):
    """`role` (serve --role): what this process runs. ALL: a name server and its brokers (the default); NAMESRV:
    only a name server; BROKER: only brokers, registered over TCP with the name servers of `namesrv_addr` (the
    emulator's or a real one), as a 4.9.8 broker registers (README "A cluster of processes")."""
    ALL = "all"
    NAMESRV = "namesrv"
    BROKER = "broker"


class LogLevel(enum.Enum):
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"


class TraceFormat(enum.Enum):
    """The wire trace's format (README "Wire trace")."""
    TEXT = "text"
    JSON = "json"


def _default_store() -> MessageStoreConfig:
    return MessageStoreConfig(store_path_root_dir=DEFAULT_STORE_DIR)


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """One broker's settings (Java's BrokerConfig keys, snake_case), with its store's in `store`."""

    broker_name: str = "broker-a"
    broker_cluster_name: str = "DefaultCluster"
    #: 0: the master of its broker name; 1 (or more): a slave, which replicates the master's commitlog
    #: (store.broker_role SLAVE) and serves reads only (README "Master and slave")
    broker_id: int = 0
    #: a master suggests its slave to a consumer that lags by more than the memory share (4.9.8's
    #: slaveReadEnable; whichBrokerWhenConsumeSlowly of the group); off: pulls are always sent to the master
    slave_read_enable: bool = False
    #: ms between registrations with the name servers (4.9.8: 30000, clamped to 10-60 s; here at least 100 ms, so
    #: that tests see a slave learn its restarted master sooner)
    register_name_server_period: int = 30000
    #: ms between a slave's copies of its master's topics, groups and offsets (4.9.8: 10000, fixed; the emulator's
    #: own setting, so that tests see a topic created on the master reach its slave sooner)
    slave_synchronize_period: int = 10000
    #: the configured port (0: a free one, known once bound: `BrokerController.listen_port`)
    listen_port: int = 10911
    #: the address put in route data and message ids (settings.resolve_broker_ip1 fills the default)
    broker_ip1: str = "127.0.0.1"
    #: the port put in route data when it differs from the listening one (a published container port)
    advertised_port: int | None = None
    #: also listen on listen_port - 2, as the real broker does
    vip_channel_enabled: bool = True
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    #: PermName bits (6 = read and write): without read or write, every route of this broker carries it as the
    #: topics' perm, and pulls are refused without read (README "... configuration at run time")
    broker_permission: int = 6
    default_topic_queue_nums: int = 8  # TBW102's queue count; producers cap it to 4
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    notify_consumer_ids_changed_enable: bool = True
    #: ms; consumerOffset.json (the batched tier) is written this often when offsets changed
    flush_consumer_offset_interval: int = 100
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    #: whose answers where 4.9.8 and 5.x differ (settings.COMPAT_4_9 lists the settings it flips)
    compat: Compat = Compat.V5
    new_group_offset: NewGroupOffset = NewGroupOffset.LEGACY
    offset_durability: OffsetDurability = OffsetDurability.WRITE_BEHIND
    #: resets are also kept by the broker and applied at the group's next pull of each queue (5.x)
    use_server_side_reset_offset: bool = True
    #: the broker tracks broadcasting clients' offsets; a client with none resumes from the group's (5.x)
    enable_broadcast_offset_store: bool = True
    broadcast_offset_expire_second: float = 120.0
    #: a client silent this long is dropped (RocketMQ's channel expiry)
    channel_expired_timeout_second: float = 120.0
    #: a request-reply reply is also stored in <cluster>_REPLY_TOPIC (besides being pushed to the requester)
    store_reply_message_enable: bool = True
    #: SQL92 property filters (MessageSelector.bySql) are served; off (4.9's default) they are refused
    enable_property_filter: bool = False
    #: transactions (4.9.8's keys): a half message with no decision this long (ms) is checked back with its
    #: producer, every transaction_check_interval ms, at most transaction_check_max times; then it is discarded to
    #: TRANS_CHECK_MAX_TIME_TOPIC. reject_transaction_message refuses half messages.
    transaction_time_out: int = 6000
    transaction_check_max: int = 15
    transaction_check_interval: int = 60000
    reject_transaction_message: bool = False
    #: POP consumption (5.x): percent of pops that read the group's pop retry topic first
    pop_from_retry_probability: int = 20
    #: the shortest invisible time a gRPC receive may ask for, ms (the 5.x proxy's minInvisibleTimeMillsForRecv)
    min_invisible_time_mills_for_recv: int = 10000
    #: the 5.x proxy's enableTopicMessageTypeCheck: a gRPC send whose message type is not its topic's (the topic
    #: attribute `message.type`, NORMAL when unset) is refused with MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    enable_topic_message_type_check: bool = True
    #: 4.9.8's ACL (README "ACL"): every request is checked against the accounts of the plain ACL file, which is
    #: `acl_plain_file` or, when unset, `<storePathRootDir>/config/plain_acl.yml` (broker/core/acl/)
    acl_enable: bool = False
    acl_plain_file: str | None = None
    store: MessageStoreConfig = field(default_factory=_default_store)


@dataclass(frozen=True, slots=True)
class EmulatorConfig:
    """The process: its name server and its brokers (`brokers[0]` first, as `serve --brokers N` numbers them)."""

    host: str = "127.0.0.1"
    namesrv_port: int = 9876
    #: what this process runs: a name server and brokers (default), only a name server, or only brokers
    role: ServeRole = ServeRole.ALL
    #: with role BROKER: the name servers its brokers register with (4.9.8's namesrvAddr, `a:9876;b:9876`)
    namesrv_addr: tuple[str, ...] = ()
    #: `serve --brokers N --processes`: each broker in a process of its own, under this process's name server
    processes: bool = False
    #: with `processes`: this many slaves of each broker (brokerId 1.., brokerRole SLAVE), each in its process
    slaves: int = 0
    #: the gRPC endpoint of 5.x clients (broker/grpc/); None: off
    grpc_server_port: int | None = None
    #: also a TLS port (self-signed certificate), e.g. for the 5.x Java client's default
    grpc_tls_port: int | None = None
    #: the dashboard (broker/dashboard/); None: off. read-only: its actions are refused and hidden
    dashboard_port: int | None = None
    dashboard_read_only: bool = False
    #: names the dashboard answers besides IP addresses, localhost and --host (the Host check: `name` or `name:port`)
    dashboard_allowed_hosts: tuple[str, ...] = ()
    #: seconds between the dashboard's samples of rates and lag for its charts (broker/dashboard/series.py)
    dashboard_sample_seconds: float = 5.0
    #: the store in a temporary directory (made and removed by the Emulator)
    ephemeral: bool = False
    log_level: LogLevel = LogLevel.INFO
    #: topics, groups and KV settings declared in a file (protocol/entities.py), applied at every start; None: none
    entities_file: str | None = None
    #: written (JSON: addresses and ports) once every server accepts, removed at a clean stop; None: none
    ready_file: str | None = None
    #: the wire trace (README "Wire trace"): a file, or "-" for standard error; None: off
    wire_trace: str | None = None
    wire_trace_format: TraceFormat = TraceFormat.TEXT
    wire_trace_codes: frozenset[int] | None = None
    wire_trace_group: str | None = None
    wire_trace_topic: str | None = None
    #: created (or given this queue count) at start: `--topic orders:8`, ROCKETMQ_EMULATOR_TOPICS="orders:8,b:4"
    topics: tuple[tuple[str, int], ...] = ()
    #: subscription groups created at start: `--group g1`, ROCKETMQ_EMULATOR_GROUPS="g1,g2"
    groups: tuple[str, ...] = ()
    #: who may send destructive and emulator-only requests (broker/core/admin_guard.py): networks, None: everyone
    admin_allowed_addresses: tuple[str, ...] | None = None
    brokers: tuple[BrokerConfig, ...] = (BrokerConfig(),)
    #: broker.conf keys that were not understood (logged once at start)
    unknown_keys: tuple[str, ...] = ()

    @property
    def broker(self) -> BrokerConfig:
        """The first broker's (`serve`'s flags and broker.conf give it; the others are derived from it)."""
        return self.brokers[0]


def primary_address() -> str:
    """This machine's primary IPv4 address (RocketMQ's `brokerIP1` default): the source address of its default
    route (no packet is sent), else the address of its host name, else 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only the routing table is consulted
            ip: str = s.getsockname()[0]
            if ip and ip != "0.0.0.0":
                return ip
    except OSError:
        pass
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def resolve_broker_ip1(host: str, broker_ip1: str | None, advertised_port: int | None) -> str:
    """The address a broker puts in route data, as RocketMQ chooses `brokerIP1`:

    * `brokerIP1` given: used as is (an IP or a name clients can resolve).
    * listening on 0.0.0.0 / :: with only an advertised port: 127.0.0.1 — the port is published on this host
      (`docker run -p 20911:10911 -e ROCKETMQ_EMULATOR_ADVERTISED_PORT=20911`), so local clients reach it.
    * listening on 0.0.0.0 / :: otherwise: the machine's primary address (in a container: the container's
      address, which other containers of the same network reach, e.g. in docker compose).
    * else the listening address.
    """
    if broker_ip1:
        return broker_ip1
    if host in WILDCARD_HOSTS:
        return "127.0.0.1" if advertised_port else primary_address()
    return host


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
        problem = name_problem("topic", name)
        if problem is not None:
            raise ValueError(f"{problem} (use NAME or NAME:QUEUES)")
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
        problem = name_problem("group", g)
        if problem is not None:
            raise ValueError(problem)
        out.append(g)
    return out


_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")


def parse_host_list(text: str) -> list[str]:
    """`a.example,B.example:8080,[::1]` -> host names in lower case, each `name` or `name:port` (an IPv6 address
    in brackets): the dashboard's allowed hosts (broker/dashboard/hosts.py)."""
    out = []
    for entry in (e.strip().lower() for e in text.split(",")):
        if not entry:
            continue
        name, _, port = entry.rpartition(":") if entry.count(":") == 1 or "]:" in entry else (entry, "", "")
        try:
            ok = ipaddress.IPv6Address(name[1:-1]) is not None if name[:1] == "[" and name[-1:] == "]" else (
                bool(name) and set(name) <= _HOST_CHARS and name[0] not in ".-")
        except ValueError:
            ok = False
        if not ok or port and not (port.isascii() and port.isdigit() and 0 < int(port) <= 65535):
            raise ValueError(f"{entry!r} is not a host name or name:port (no scheme or path; IPv6 in brackets)")
        out.append(entry)
    return out


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
