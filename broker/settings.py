"""The one parser of the emulator's settings: `SETTINGS`, keyed by RocketMQ's (Java) key names.

Each setting has one name, its Java key (`listenPort`, `flushDiskType`, `mappedFileSizeConsumeQueue` in bytes,
as Java has it); the field it sets is the snake_case of that key (`listen_port`), on the process config, the
broker's config or its store config (broker/config.py). Settings of this emulator's own have keys in the same
style (`namesrvPort`, `newGroupOffset`, `wireTraceFormat`, ...).

Every source becomes a mapping of key -> text or value and goes through `parse_value`: serve's flags and the
`ROCKETMQ_EMULATOR_*` variables (cli/serve.py), a `broker.conf` (`read_broker_conf`), updateBrokerConfig at run
time (broker/core/runtime_config.py, through `updated`), and Python code (`emulator_config(listen_port=0, ...)`,
which also takes the snake_case field names). A bad value raises `SettingError`, one line naming the key; enums
become enum members here and nowhere else.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from rocketmq_emulator.store.config import BrokerRole, FlushDiskType, MessageStoreConfig

from .config import (BROKER_PORT_STEP, DEFAULT_STORE_DIR, BrokerConfig, Compat, EmulatorConfig, LogLevel, NewGroupOffset,
                     OffsetDurability, ServeRole, TraceFormat, parse_properties, resolve_broker_ip1)
from .setting_values import INT as _INT
from .setting_values import INT32 as _INT32
from .setting_values import PORT as _PORT
from .setting_values import Parse
from .setting_values import Problem as _Problem
from .setting_values import boolean as _bool, codes as _codes, consume_queue_size as _consume_queue_size
from .setting_values import delay_levels as _delay_levels, delete_when as _delete_when, double as _double
from .setting_values import addresses as _addresses, double_in as _double_in
from .setting_values import enum_of as _enum, groups as _groups, hosts as _hosts, networks as _networks
from .setting_values import number as _number, optional as _optional, string as _str, topics as _topics


class SettingError(ValueError):
    """A value a setting cannot take: `invalid value for <key>: <why>`."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"invalid value for {key}: {problem}")
        self.key = key
        self.problem = problem


class UnreadableConf(ValueError):
    """A broker.conf that is not a properties text (not UTF-8)."""




@dataclass(frozen=True, slots=True)
class Setting:
    key: str  # the Java key (or this emulator's, in the same style)
    scope: str  # "process", "broker" or "store": which config holds it
    parse: Parse

    @property
    def name(self) -> str:
        """The field it sets: the snake_case of the key (`brokerIP1` -> `broker_ip1`)."""
        return _snake(self.key)


def _snake(key: str) -> str:
    out = "".join("_" + c.lower() if c.isupper() else c for c in key)
    return out.replace("i_p1", "ip1")


#: the process's settings (this emulator's own): key -> parser
_PROCESS: dict[str, Parse] = {
    "host": _str, "namesrvPort": _PORT, "role": _enum(ServeRole), "namesrvAddr": _addresses, "processes": _bool,
    "slaves": _number("int", 0, 3), "grpcServerPort": _optional(_PORT),
    "grpcTlsPort": _optional(_PORT), "dashboardPort": _optional(_PORT), "dashboardReadOnly": _bool,
    "dashboardAllowedHosts": _hosts, "dashboardSampleSeconds": _double_in(0.1, 3600),
    "brokers": _number("int", 1, 26), "ephemeral": _bool,
    "logLevel": _enum(LogLevel), "wireTrace": _optional(_str), "wireTraceFormat": _enum(TraceFormat),
    "wireTraceCodes": _optional(_codes), "wireTraceGroup": _optional(_str), "wireTraceTopic": _optional(_str),
    "topics": _topics, "groups": _groups,
    "adminAllowedAddresses": _networks, "readyFile": _optional(_str), "entitiesFile": _optional(_str)}
#: a broker's (Java's BrokerConfig / NettyServerConfig, then this emulator's own)
_BROKER: dict[str, Parse] = {
    "brokerName": _str, "brokerClusterName": _str, "brokerId": _number("long", 0, 2**63 - 1),
    "slaveReadEnable": _bool, "registerNameServerPeriod": _number("int", 100, _INT32),
    "slaveSynchronizePeriod": _number("int", 100, _INT32), "listenPort": _PORT, "brokerIP1": _optional(_str),
    "advertisedPort": _optional(_PORT), "vipChannelEnabled": _bool, "autoCreateTopicEnable": _bool,
    "autoCreateSubscriptionGroup": _bool, "brokerPermission": _number("int", 0, 7),
    "defaultTopicQueueNums": _number("int", 1, 1024), "longPollingEnable": _bool,
    "shortPollingTimeMills": _number("long", 0, 2**63 - 1), "notifyConsumerIdsChangedEnable": _bool,
    "flushConsumerOffsetInterval": _number("int", 1, _INT32), "regionId": _str, "traceOn": _bool,
    "compat": _enum(Compat), "newGroupOffset": _enum(NewGroupOffset), "offsetDurability": _enum(OffsetDurability),
    "useServerSideResetOffset": _bool, "enableBroadcastOffsetStore": _bool, "broadcastOffsetExpireSecond": _double,
    "channelExpiredTimeoutSecond": _double, "storeReplyMessageEnable": _bool,
    "enablePropertyFilter": _bool, "transactionTimeOut": _number("long", 0, 2**63 - 1),
    "transactionCheckMax": _number("int", 1, _INT32), "transactionCheckInterval": _number("long", 1, 2**63 - 1),
    "rejectTransactionMessage": _bool, "popFromRetryProbability": _number("int", 0, 100),
    "minInvisibleTimeMillsForRecv": _number("long", 0, 2**63 - 1), "enableTopicMessageTypeCheck": _bool,
    "aclEnable": _bool, "aclPlainFile": _optional(_str)}
#: its store's (Java's MessageStoreConfig)
_STORE: dict[str, Parse] = {
    "storePathRootDir": _str, "mappedFileSizeCommitLog": _number("int", 4096, _INT32),
    "mappedFileSizeConsumeQueue": _consume_queue_size, "maxMessageSize": _number("int", 1, _INT32),
    "flushDiskType": _enum(FlushDiskType), "flushIntervalCommitLog": _number("int", 1, _INT32),
    "fileReservedTime": _number("int", 0, _INT32), "deleteWhen": _delete_when,
    "diskMaxUsedSpaceRatio": _number("int", 10, 95), "messageDelayLevel": _delay_levels, "messageIndexEnable": _bool, "totalPhysicalMemorySize": _optional(_INT),
    "recoveryCutInvalidRecords": _bool, "brokerRole": _enum(BrokerRole),
    "haSendHeartbeatInterval": _number("int", 1, _INT32), "haHousekeepingInterval": _number("int", 1, _INT32),
    "haTransferBatchSize": _number("int", 1, _INT32), "haSlaveFallbehindMax": _number("int", 0, _INT32),
    "syncFlushTimeout": _number("long", 1, 2**63 - 1), "slaveTimeout": _number("int", 1, _INT32),
    "haListenPort": _optional(_PORT)}

#: every setting: Java key -> Setting (broker.conf, updateBrokerConfig and code all name settings by these keys)
SETTINGS: dict[str, Setting] = {key: Setting(key, scope, parse) for scope, table in (
    ("process", _PROCESS), ("broker", _BROKER), ("store", _STORE)) for key, parse in table.items()}

#: broker.conf spellings of older releases -> the key
ALIASES = {"mapedFileSizeCommitLog": "mappedFileSizeCommitLog", "mapedFileSizeConsumeQueue": "mappedFileSizeConsumeQueue"}
#: broker.conf keys accepted and ignored: the commitlog is kept under storePathRootDir
IGNORED_KEYS = ("brokerIP2", "traceTopicEnable", "storePathCommitLog")

#: process settings a broker.conf may also give: the 5.x proxy's port (rmq-proxy.json's key), served by this process,
#: and who may send admin requests
BROKER_CONF_PROCESS_KEYS = ("grpcServerPort", "grpcTlsPort", "adminAllowedAddresses", "namesrvAddr")

_BY_FIELD = {s.name: s for s in SETTINGS.values()}


def setting(name: str) -> Setting:
    """The setting of a Java key (or an alias, or its snake_case field name). KeyError if there is none."""
    name = ALIASES.get(name, name)
    found = SETTINGS.get(name) or _BY_FIELD.get(name)
    if found is None:
        raise KeyError(name)
    return found


def parse_value(key: str, value: Any) -> Any:
    """The value of setting `key` from text (any source) or a Python value (code); SettingError if it cannot be."""
    s = setting(key)
    try:
        return s.parse(value)
    except _Problem as exc:
        raise SettingError(s.key, str(exc)) from None


def parse_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """key -> parsed value, keyed by Java key; SettingError on a bad value, ValueError on an unknown key."""
    out = {}
    for key, value in values.items():
        try:
            s = setting(key)
        except KeyError:
            raise ValueError(f"unknown setting {key!r}") from None
        out[s.key] = parse_value(s.key, value)
    return out


#: the settings `compat=4.9` sets to 4.9.8's behaviour when they are not given explicitly; each is a place where
#: the emulator answers as 5.x does by default (README "Parity with Apache RocketMQ" lists them with the reasons)
COMPAT_4_9: dict[str, Any] = {
    "useServerSideResetOffset": False,
    "enableBroadcastOffsetStore": False,
}


def with_compat(values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` plus COMPAT_4_9's settings that they do not give, when they say compat=4.9."""
    out = dict(values)
    if parse_value("compat", out.get("compat", Compat.V5)) is Compat.V4_9:
        for key, value in COMPAT_4_9.items():
            out.setdefault(key, value)
    return out


def emulator_config(values: Mapping[str, Any] | None = None, /, *, unknown_keys: Sequence[str] = (),
                    **more: Any) -> EmulatorConfig:
    """The process's configuration from settings (Java keys or field names; text or values), defaults for the
    rest: `emulator_config(namesrv_port=0, listen_port=0, ephemeral=True)`. `unknown_keys`: broker.conf keys
    not understood, kept to be reported."""
    parsed = parse_values(with_compat({**(values or {}), **more}))
    by_scope: dict[str, dict[str, Any]] = {"process": {}, "broker": {}, "store": {}}
    for key, value in parsed.items():
        s = SETTINGS[key]
        by_scope[s.scope][s.name] = value
    process = by_scope["process"]
    count = process.pop("brokers", 1)
    if process.get("slaves") and broker_role_given(by_scope["store"]) is BrokerRole.SLAVE:
        raise SettingError("slaves", "gives each master its slaves: the brokers themselves are masters (not "
                                     "brokerRole SLAVE)")
    store = MessageStoreConfig(**{"store_path_root_dir": DEFAULT_STORE_DIR, **by_scope["store"]})
    broker = BrokerConfig(**{**by_scope["broker"], "store": store})
    host = process.get("host", EmulatorConfig().host)
    broker = replace(broker, broker_ip1=resolve_broker_ip1(host, by_scope["broker"].get("broker_ip1"),
                                                           broker.advertised_port))
    if process.get("grpc_tls_port") is not None and process.get("grpc_server_port") is None:
        raise SettingError("grpcTlsPort", "needs grpcServerPort too (serve --grpc-port): the TLS port serves the "
                                          "same 5.x endpoint")
    _check_role(process)
    _check_broker_id(broker)
    ephemeral = process.get("ephemeral", False)
    return EmulatorConfig(**process, brokers=derive_brokers(broker, count, nested=ephemeral),
                          unknown_keys=tuple(unknown_keys))


def broker_role_given(store: Mapping[str, Any]) -> BrokerRole:
    role: BrokerRole = store.get("broker_role", BrokerRole.ASYNC_MASTER)
    return role


def broker_key(config: BrokerConfig) -> str:
    """How the test controls name a broker: `broker-a` for a master, `broker-a/1` for its slave of brokerId 1."""
    return config.broker_name if config.broker_id == 0 else f"{config.broker_name}/{config.broker_id}"


def slave_of(master: BrokerConfig, index: int = 1, *, nested: bool = False) -> BrokerConfig:
    """`serve --slaves N`: slave `index` (1..N) of a master: brokerId `index`, brokerRole SLAVE, the master's
    port + 5 × index (its VIP port 2 below, its HA port 1 above: all within the master's 10 ports), its own
    store directory (`<master's>/slave-<index>` when `nested`, else `<master's>-slave-<index>`)."""
    root = master.store.store_path_root_dir.rstrip("/")
    return replace(master, broker_id=index, listen_port=master.listen_port + 5 * index if master.listen_port else 0,
                   advertised_port=master.advertised_port + 5 * index if master.advertised_port else None,
                   store=replace(master.store, broker_role=BrokerRole.SLAVE,
                                 store_path_root_dir=os.path.join(root, f"slave-{index}") if nested
                                 else f"{root}-slave-{index}"))


def _check_broker_id(broker: BrokerConfig) -> None:
    """4.9.8's rule: a SLAVE has brokerId 1 or more; a master is brokerId 0."""
    role = broker.store.broker_role
    if role is BrokerRole.SLAVE and broker.broker_id <= 0:
        raise SettingError("brokerId", "a SLAVE needs brokerId 1 or more (0 is the master's)")
    if role is not BrokerRole.SLAVE and broker.broker_id != 0:
        raise SettingError("brokerId", f"{broker.broker_id} is a slave's id: give brokerRole SLAVE too "
                                       f"(serve --broker-role SLAVE)")


def _check_role(process: Mapping[str, Any]) -> None:
    """The role's settings go together (README "A cluster of processes")."""
    role = process.get("role", ServeRole.ALL)
    if role is ServeRole.BROKER and not process.get("namesrv_addr"):
        raise SettingError("role", "broker needs the name servers to register with (serve --namesrv-addr "
                                   "HOST:PORT[;HOST:PORT])")
    if process.get("processes"):
        if role is not ServeRole.ALL:
            raise SettingError("processes", f"starts the name server and one process per broker itself; not with "
                                            f"role {role.value}")
        for key, flag in (("grpc_server_port", "--grpc-port"), ("dashboard_port", "--dashboard-port")):
            if process.get(key) is not None:
                raise SettingError("processes", f"not with {flag} yet: run the brokers in one process for it, or "
                                                f"start `serve --role broker {flag} ...` processes yourself")
    if role is ServeRole.NAMESRV:
        for key, flag in (("grpc_server_port", "--grpc-port"), ("dashboard_port", "--dashboard-port")):
            if process.get(key) is not None:
                raise SettingError("role", f"namesrv runs no broker: {flag} needs one")


def updated(config: BrokerConfig, values: Mapping[str, Any]) -> BrokerConfig:
    """A new broker config with these settings changed (broker and store ones: the process's are fixed)."""
    broker: dict[str, Any] = {}
    store: dict[str, Any] = {}
    for key, value in parse_values(values).items():
        s = SETTINGS[key]
        if s.scope == "process":
            raise ValueError(f"{key} is a setting of the process, not of a broker")
        (store if s.scope == "store" else broker)[s.name] = value
    return replace(config, **broker, store=replace(config.store, **store))


def current(config: BrokerConfig, key: str) -> Any:
    """The value of a broker or store setting in `config`."""
    s = setting(key)
    return getattr(config.store if s.scope == "store" else config, s.name)


def text_of(value: Any) -> str:
    """A value as a properties file (and 4.9.8's getBrokerConfig) writes it."""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def derive_brokers(first: BrokerConfig, count: int, *, nested: bool = False) -> tuple[BrokerConfig, ...]:
    """`serve --brokers N`: broker i (from 0, the first itself) named broker-b, broker-c, ... (NAME-2, NAME-3,
    ... when the first is not called broker-a), on the first's port + 10 × i (its VIP port 2 below; 10 apart as
    in RocketMQ's own examples, so that no broker's VIP port is another's port), an advertised port moved the
    same way, and its own store directory: `<root>/<name>` when `nested` (inside the temporary one), else
    `<root>-<name>`."""
    out = [first]
    base, root = first.broker_name, first.store.store_path_root_dir.rstrip("/")
    for i in range(1, count):
        name = f"{base[:-1]}{chr(ord('a') + i)}" if base.endswith("-a") else f"{base}-{i + 1}"
        step = BROKER_PORT_STEP * i
        out.append(replace(
            first, broker_name=name, listen_port=first.listen_port + step if first.listen_port else 0,
            advertised_port=first.advertised_port + step if first.advertised_port else None,
            store=replace(first.store, store_path_root_dir=os.path.join(root, name) if nested else f"{root}-{name}")))
    return tuple(out)


def rooted_at(config: EmulatorConfig, root: str) -> tuple[BrokerConfig, ...]:
    """The brokers of `config` with their stores under `root` (the Emulator's temporary directory)."""
    first = config.brokers[0]
    first = replace(first, store=replace(first.store, store_path_root_dir=root))
    return derive_brokers(first, len(config.brokers), nested=True)


def read_broker_conf(path: str | Path) -> tuple[dict[str, str], list[str]]:
    """A RocketMQ broker.conf: (key -> text of the settings it gives, the keys not understood). Raises OSError
    when unreadable, UnreadableConf when not UTF-8 text, SettingError on a bad value."""
    values: dict[str, str] = {}
    unknown: list[str] = []
    raw = Path(path).read_bytes()
    try:
        text_of_file = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableConf(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    for key, text in parse_properties(text_of_file).items():
        if key in IGNORED_KEYS:
            continue
        try:
            s = setting(key)
        except KeyError:
            unknown.append(key)
            continue
        if (s.scope == "process" and key not in BROKER_CONF_PROCESS_KEYS) or s.key != ALIASES.get(key, key):
            # not a broker.conf key, or a field name
            unknown.append(key)
            continue
        parse_value(s.key, text)
        values[s.key] = text
    return values, unknown


def _check() -> None:
    """Every setting's field exists on the config its scope names (run at import: a typo fails at once)."""
    names = {"process": {f.name for f in fields(EmulatorConfig)} | {"brokers"},
             "broker": {f.name for f in fields(BrokerConfig)}, "store": {f.name for f in fields(MessageStoreConfig)}}
    for s in SETTINGS.values():
        assert s.name in names[s.scope], (s.key, s.name)


_check()
