"""`rocketmq-emulator serve`: the name server and the broker(s) in this process (README "Running the broker").

Settings, lowest precedence first: built-in defaults, `--config` (a RocketMQ broker.conf), `ROCKETMQ_EMULATOR_<FLAG>`
variables, flags. `config_from_args()` is the one place that turns them into the emulator's configuration (through
the broker's settings), and checks every port they give or imply before anything starts.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .args import EXIT_USAGE, MAX_PORT, report_error
from .version import package_version

if TYPE_CHECKING:
    from rocketmq_emulator.broker.config import EmulatorConfig

ENV_PREFIX = "ROCKETMQ_EMULATOR_"

# flag -> (the setting's key in broker/settings.py, help); ROCKETMQ_EMULATOR_<FLAG> gives it too
SERVE_FLAGS: dict[str, tuple[str, str]] = {
    "host": ("host", "address to listen on (default 127.0.0.1; 0.0.0.0 in a container)"),
    "role": ("role", "all (default): a name server and its brokers in this process; namesrv: only a name server; "
                     "broker: only brokers, registered with --namesrv-addr (the emulator's or a real one)"),
    "namesrv-addr": ("namesrvAddr", "with --role broker: the name servers to register with, HOST:PORT[;HOST:PORT]"),
    "broker-id": ("brokerId", "0 (default): the master of its broker name; 1: a slave that replicates its master "
                              "(same --broker-name) and serves reads"),
    "broker-role": ("brokerRole", "ASYNC_MASTER (default), SYNC_MASTER (a send is answered once the slave has it) "
                                  "or SLAVE (replicates its master from the master's HA port, the broker port + 1; "
                                  "with --broker-id 1 or more)"),
    "slaves": ("slaves", "with --processes: this many slaves of each broker, 0-3 (default 0): brokerId 1.., "
                         "brokerRole SLAVE, on the broker's port + 5 per slave, each in its own process"),
    "slave-read-enable": ("slaveReadEnable", "true: a master tells a consumer that lags far behind to pull from "
                                             "the slave (default false, as 4.9.8)"),
    "namesrv-port": ("namesrvPort", "name server port (default 9876; 0 picks a free port)"),
    "broker-port": ("listenPort", "broker port (default 10911; the VIP port is this minus 2; 0 picks "
                                         "a free port)"),
    "store-dir": ("storePathRootDir", "store directory (default ./rocketmq-data)"),
    "advertised-host": ("brokerIP1", "broker host put in route data (Docker/NAT); default: --host, "
                                                "or with --host 0.0.0.0 this machine's primary address "
                                                "(127.0.0.1 when only --advertised-port is given)"),
    "advertised-port": ("advertisedPort", "broker port put in route data (a published port that differs "
                                                "from --broker-port); default: --broker-port"),
    "broker-name": ("brokerName", "broker name (default broker-a)"),
    "brokers": ("brokers",
                "brokers in this process, 1-26 (default 1): broker-a, broker-b, ... on --broker-port, +10, +20, "
                "..., each with its own store directory, all behind the one name server"),
    "cluster-name": ("brokerClusterName", "cluster name (default DefaultCluster)"),
    "log-level": ("logLevel", "DEBUG, INFO (default), WARNING or ERROR"),
    "new-group-offset": ("newGroupOffset",
                         "what a group with no stored offset is told: legacy (4.9.x, default: 0 while the queue's "
                         "first message is stored) or strict (not found: the client's consumeFromWhere decides)"),
    "compat": ("compat", "5 (default) or 4.9: where Apache RocketMQ 4.9.8 and 5.x answer differently, answer as "
                         "that release does (README \"Parity with Apache RocketMQ\")"),
    "server-side-reset": ("useServerSideResetOffset",
                          "true (default): the broker also applies a reset at the group's next pull (5.x); "
                          "false: only online consumers apply it (4.9.x)"),
    "offset-durability": ("offsetDurability",
                          "write-behind (default): commits and resets are answered at once and durable within "
                          "milliseconds; write-through: every offset write (commit, reset, removal) is answered "
                          "once it is durable"),
    "broadcast-offset-store": ("enableBroadcastOffsetStore",
                               "true (default): the broker tracks broadcasting clients' offsets; a client with "
                               "none resumes from the group's"),
    "enable-property-filter": ("enablePropertyFilter",
                               "true: serve SQL92 property filters (MessageSelector.bySql); false (default, as "
                               "4.9): refuse them"),
    "transaction-timeout": ("transactionTimeOut",
                            "ms a half message waits for its producer's decision before the broker checks back "
                            "(default 6000)"),
    "transaction-check-interval": ("transactionCheckInterval",
                                   "ms between the broker's transaction check-back rounds (default 60000; tests "
                                   "make it short, e.g. 500)"),
    "recovery-cut-invalid": ("recoveryCutInvalidRecords",
                             "after a crash, a bad commitlog record followed by valid ones makes the broker refuse "
                             "to start (default false); true cuts them once, copying the cut bytes aside to "
                             "<store>/recovery-cut-<offset>.bin first"),
    "grpc-port": ("grpcServerPort",
                  "also serve RocketMQ 5.x clients (gRPC) on this port (0 picks a free port); off by default; "
                  "needs the [grpc] extra"),
    "grpc-tls-port": ("grpcTlsPort",
                      "with --grpc-port: also serve it with TLS on this port (a self-signed certificate made at "
                      "the first start, kept in <store>/config/grpc-tls/; the 5.x Java client's default)"),
    "dashboard-port": ("dashboardPort",
                       "serve the dashboard (pages and a JSON API) on this port (0 picks a free port); off by "
                       "default; needs the [dashboard] extra"),
    "admin-allow": ("adminAllowedAddresses",
                    "who may delete, update configs, wipe permissions, stop or start brokers, expire messages or "
                    "advance time: addresses or networks, comma-separated (e.g. 127.0.0.1,::1); default * "
                    "(everyone); others are answered NO_PERMISSION"),
    "dashboard-read-only": ("dashboardReadOnly", "true: the dashboard shows everything and changes nothing"),
    "dashboard-sample-seconds": ("dashboardSampleSeconds",
                                 "seconds between the dashboard's samples of rates and lag for its charts (default "
                                 "5; an hour of samples is kept)"),
    "dashboard-allowed-hosts": ("dashboardAllowedHosts",
                                "host names the dashboard also answers (the Host header), comma-separated, name or "
                                "name:port; IP addresses and localhost always are, other names get 421"),
    "min-invisible-time": ("minInvisibleTimeMillsForRecv",
                           "the shortest invisible time (ms) a 5.x receive may ask for (default 10000, as the 5.x "
                           "proxy; tests make it short)"),
    "topic-message-type-check": ("enableTopicMessageTypeCheck",
                                 "true (default, as the 5.x proxy): a 5.x client's message must be of its topic's "
                                 "type (the topic attribute message.type, NORMAL when unset); false: any type"),
    "acl-enable": ("aclEnable", "true: check every request against the accounts of the plain ACL file as "
                                "RocketMQ 4.9.8 does (signed requests, permissions, admin accounts); false "
                                "(default): no access control (README \"ACL\"); needs the [acl] extra"),
    "acl-plain-file": ("aclPlainFile", "the plain ACL file with --acl-enable true (default "
                                       "<store>/config/plain_acl.yml; created empty when missing)"),
    "entities": ("entitiesFile", "declare topics, consumer groups and name server KV settings in FILE (YAML or JSON; "
                                 "docs/user/entities.md), applied at every start: created, or changed to what the file "
                                 "says"),
    "ready-file": ("readyFile", "once every server accepts, write FILE: JSON with the name server address, each "
                                "broker's address, the gRPC and dashboard addresses and the pid (written whole, "
                                "by rename; removed at a clean stop), for scripts that start serve on port 0"),
    "trace-format": ("wireTraceFormat",
                     "text (default) or json (one object per line, for `rocketmq-emulator trace`)"),
    "trace-codes": ("wireTraceCodes", "trace only these requests (and their answers): names or "
                                                     "numbers, comma-separated, e.g. PULL_MESSAGE,SEND_MESSAGE_V2"),
    "trace-group": ("wireTraceGroup", "trace only requests naming this consumer or producer group"),
    "trace-topic": ("wireTraceTopic", "trace only requests naming this topic"),
}


def _setting_type(key: str) -> Callable[[str], Any]:
    """An argparse type: the settings' parser for `key` (imported when a value is given, so that other commands
    never load the broker)."""
    def convert(text: str) -> Any:
        from rocketmq_emulator.broker.settings import SettingError, parse_value
        try:
            return parse_value(key, text)
        except SettingError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = key
    return convert


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], command: str,
               help_text: str) -> argparse.ArgumentParser:
    """The parser of `serve` in the command line's tree."""
    serve = sub.add_parser(command, help=help_text,
                           description="Every flag can also be set with ROCKETMQ_EMULATOR_<FLAG> "
                                       "(e.g. ROCKETMQ_EMULATOR_BROKER_PORT=20911); flags win over the "
                                       "environment, which wins over --config.")
    for flag, (key, flag_help) in SERVE_FLAGS.items():
        serve.add_argument(f"--{flag}", type=_setting_type(key), default=None, help=flag_help)
    serve.add_argument("--topic", action="append", type=_setting_type("topics"), default=None,
                       metavar="NAME[:QUEUES]", help="create this topic at start (8 queues unless given); "
                       "repeatable, or comma-separated (env ROCKETMQ_EMULATOR_TOPICS=orders:8,payments:4)")
    serve.add_argument("--group", action="append", type=_setting_type("groups"), default=None,
                       metavar="NAME", help="create this consumer group at start; repeatable, or comma-separated "
                       "(env ROCKETMQ_EMULATOR_GROUPS=g1,g2)")
    serve.add_argument("--trace", nargs="?", const="-", default=None, metavar="FILE",
                       help="log every request and response, decoded, to FILE (appended) or, without FILE, to "
                            "standard error (env ROCKETMQ_EMULATOR_TRACE=FILE or -); see --trace-*")
    serve.add_argument("--ephemeral", action="store_true", default=None,
                       help="keep the store in a temporary directory removed at exit")
    serve.add_argument("--processes", action="store_true", default=None,
                       help="with --brokers N: each broker in a process of its own (the machine's cores), all "
                            "registered with this process's name server, started and stopped together")
    serve.add_argument("--config", default=None, metavar="FILE",
                       help="a RocketMQ broker.conf (brokerName, listenPort, brokerIP1, storePathRootDir, "
                            "fileReservedTime, deleteWhen, flushDiskType, autoCreateTopicEnable, ...)")
    return serve


class ConfigError(Exception):
    """A setting that cannot be used (bad environment value, unreadable --config file, a port out of range)."""


def check_ports(config: EmulatorConfig) -> None:
    """Every port the settings give or imply is a real one (the system would otherwise wrap it modulo 65536):
    each broker's (+10 per extra broker), its VIP port (-2) and advertised port."""
    from rocketmq_emulator.broker.config import BROKER_PORT_STEP, VIP_PORT_OFFSET
    broker, count = config.broker, len(config.brokers)
    last = count - 1
    listen = broker.listen_port
    if listen and last:
        top = listen + BROKER_PORT_STEP * last
        if top > MAX_PORT:
            raise ConfigError(f"--broker-port {listen} with --brokers {count}: the last broker would listen on "
                              f"{top}, past {MAX_PORT} (use a broker port of at most "
                              f"{MAX_PORT - BROKER_PORT_STEP * last}, or 0)")
    if listen and broker.vip_channel_enabled and listen - VIP_PORT_OFFSET < 1:
        raise ConfigError(f"--broker-port {listen}: its VIP port would be {listen - VIP_PORT_OFFSET} (the broker "
                          f"port minus {VIP_PORT_OFFSET}); use {VIP_PORT_OFFSET + 1} to {MAX_PORT}, or 0 for a "
                          f"free port")
    _check_distinct_ports(config)
    advertised = broker.advertised_port
    if advertised is not None:
        top = advertised + BROKER_PORT_STEP * last
        if advertised < 1 or top > MAX_PORT:
            more = f" with --brokers {count} (the last broker would advertise {top})" if last else ""
            raise ConfigError(f"--advertised-port {advertised}{more}: use 1 to "
                              f"{MAX_PORT - BROKER_PORT_STEP * last}")


def _check_distinct_ports(config: EmulatorConfig) -> None:
    """No port given for two servers: each listening port (a number, not 0) has one role."""
    from rocketmq_emulator.broker.config import BROKER_PORT_STEP, VIP_PORT_OFFSET
    broker = config.broker
    roles: list[tuple[int | None, str]] = [(config.namesrv_port, f"--namesrv-port {config.namesrv_port} (the name "
                                                                 f"server)")]
    if broker.listen_port:
        for i, b in enumerate(config.brokers):
            port, name = broker.listen_port + BROKER_PORT_STEP * i, b.broker_name
            flag = f"--broker-port {broker.listen_port}" + (f" + {BROKER_PORT_STEP * i}" if i else "")
            roles.append((port, f"{flag} (broker {name})"))
            if broker.vip_channel_enabled:
                roles.append((port - VIP_PORT_OFFSET, f"{port - VIP_PORT_OFFSET} (broker {name}'s VIP port, its port "
                                                      f"minus {VIP_PORT_OFFSET})"))
    roles += [(config.grpc_server_port, f"--grpc-port {config.grpc_server_port}"),
              (config.grpc_tls_port, f"--grpc-tls-port {config.grpc_tls_port}"),
              (config.dashboard_port, f"--dashboard-port {config.dashboard_port}")]
    seen: dict[int, str] = {}
    for given, role in roles:
        if not given:
            continue
        if given in seen:
            raise ConfigError(f"{seen[given]} and {role}: one port cannot serve both; give each its own "
                              f"(0 picks a free one)")
        seen[given] = role


#: what to change when a server's port is not available (PortUnavailable.role -> the flag)
_PORT_FLAGS = {"namesrv": "--namesrv-port", "broker": "--broker-port", "grpc": "--grpc-port",
               "grpc-tls": "--grpc-tls-port", "dashboard": "--dashboard-port"}


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> EmulatorConfig:
    """broker.conf, then the environment, then flags, each a mapping of setting key -> text or value, through
    the settings' one parser."""
    from rocketmq_emulator.broker.settings import (SettingError, UnreadableConf, emulator_config, parse_value,
                                                   read_broker_conf)
    values: dict[str, Any] = {}
    unknown: list[str] = []
    conf_file = args.config or environ.get(ENV_PREFIX + "CONFIG")
    if conf_file:
        try:
            values, unknown = read_broker_conf(conf_file)
        except OSError as exc:
            raise ConfigError(f"cannot read the broker.conf {conf_file!r}: {exc.strerror or exc}") from None
        except (SettingError, UnreadableConf) as exc:
            raise ConfigError(f"{conf_file}: {exc}") from None
    given = [(key, getattr(args, flag.replace("-", "_")), flag.replace("-", "_").upper())
             for flag, (key, _) in SERVE_FLAGS.items()]
    given += [(key, None if chunks is None else [item for chunk in chunks for item in chunk], key.upper())
              for key, chunks in (("topics", args.topic), ("groups", args.group))]
    given.append(("wireTrace", args.trace, "TRACE"))
    for key, value, env_name in given:
        env = environ.get(ENV_PREFIX + env_name)
        if value is None and env:
            try:
                value = parse_value(key, env)
            except SettingError as exc:
                raise ConfigError(f"{ENV_PREFIX}{env_name}={env!r}: {exc}") from None
        if value is not None:
            values[key] = value
    for key, flag in (("ephemeral", args.ephemeral), ("processes", args.processes)):
        env = environ.get(ENV_PREFIX + key.upper())
        if flag:
            values[key] = True
        elif env:  # the one boolean parser: true or false, anything else refused
            try:
                values[key] = parse_value(key, env)
            except SettingError as exc:
                raise ConfigError(f"{ENV_PREFIX}{key.upper()}={env!r}: {exc}") from None
    try:
        config = emulator_config(values, unknown_keys=unknown)
    except SettingError as exc:
        raise ConfigError(str(exc)) from None
    check_ports(config)
    if config.entities_file:
        check_entities(config.entities_file)
    return config


def check_entities(path: str) -> None:
    """The entities file reads and holds no mistake (ConfigError: one line per mistake), before anything starts."""
    from rocketmq_emulator.protocol.entities import EntitiesError, read_entities_file
    try:
        entities = read_entities_file(path)
    except OSError as exc:
        raise ConfigError(f"cannot read the entities file {path!r}: {exc.strerror or exc}") from None
    except EntitiesError as exc:
        raise ConfigError("\n".join(exc.problems)) from None
    if entities.accounts:  # as the broker checks its plain ACL file's accounts (key lengths, permissions)
        from rocketmq_emulator.broker.core.acl.permission import AclException
        from rocketmq_emulator.broker.core.acl.plain_acl import build_account
        problems = []
        for i, account in enumerate(entities.accounts):
            try:
                build_account(account)
            except AclException as exc:
                problems.append(f"{path}: accounts[{i}] {account['accessKey']!r}: {exc.message}")
        if problems:
            raise ConfigError("\n".join(problems))


def process_started() -> float:
    """When this process started, on the `time.perf_counter()` clock (Linux: from /proc, to 10 ms; elsewhere
    the first call, i.e. roughly when the command line was parsed)."""
    global _STARTED
    if _STARTED is None:
        try:
            with open("/proc/self/stat", "rb") as f:
                start_ticks = int(f.read().rpartition(b")")[2].split()[19])
            age = time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
            _STARTED = time.perf_counter() - max(0.0, age)
        except (OSError, ValueError, IndexError, AttributeError):
            _STARTED = time.perf_counter()
    return _STARTED


_STARTED: float | None = None


def run(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        for line in str(exc).splitlines():  # the entities file's mistakes: one line each
            report_error(line, "CONFIG", as_json=False)
        return EXIT_USAGE
    import logging
    logging.basicConfig(level=config.log_level.value, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("rocketmq_emulator").info("rocketmq-emulator %s", package_version())
    if config.unknown_keys:
        logging.getLogger("rocketmq_emulator").warning("ignored unknown broker.conf keys: %s",
                                                       ", ".join(config.unknown_keys))
    import uvloop

    from rocketmq_emulator.broker.emulator import serve
    from rocketmq_emulator.protocol.transport import PortUnavailable
    try:
        if config.processes:
            from .cluster import serve_processes
            uvloop.run(serve_processes(config, started=process_started()))
        else:
            uvloop.run(serve(config, started=process_started()))
    except KeyboardInterrupt:
        return 0
    except PortUnavailable as exc:
        flag = _PORT_FLAGS.get(exc.role)
        logging.getLogger("rocketmq_emulator").error("cannot start: %s%s", exc,
                                                     f"; choose another with {flag} (0 picks a free one)"
                                                     if flag else "")
        return 1
    except socket.gaierror as exc:  # the only name serve resolves to listen on
        logging.getLogger("rocketmq_emulator").error("cannot start: --host %r (ROCKETMQ_EMULATOR_HOST) does not "
                                                     "resolve here: %s", config.host, exc.strerror or exc)
        return 1
    except Exception as exc:  # noqa: BLE001 - a clear line instead of a traceback for start-up failures
        logging.getLogger("rocketmq_emulator").error("cannot start: %s", exc)
        return 1
    return 0
