"""`rocketmq-emulator` command line: `serve` starts the name server and broker; `trace` prints a wire trace.

This is the one console entry point. The client's commands (`admin`, `produce`, `consume`, `health`) and
`seed` live in the layers above the broker (client/, spark_tools/), which the broker's code never imports:
`main` runs their command line in this process by module name, and each command imports only what it uses.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from rocketmq_emulator.protocol.cli_util import (EXIT_USAGE, MAX_PORT, OneLineParser, boolean, choice, int_range,
                                                 port, report_error)

if TYPE_CHECKING:
    from .config import BrokerConfig

ENV_PREFIX = "ROCKETMQ_EMULATOR_"

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

def _codes_type(text: str) -> frozenset[int]:
    from rocketmq_emulator.protocol.trace import parse_codes
    try:
        return parse_codes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# flag -> (BrokerConfig attribute, type, help)
SERVE_FLAGS: dict[str, tuple[str, Callable[[str], Any], str]] = {
    "host": ("host", str, "address to listen on (default 127.0.0.1; 0.0.0.0 in a container)"),
    "namesrv-port": ("namesrv_port", port, "name server port (default 9876; 0 picks a free port)"),
    "broker-port": ("broker_port", port, "broker port (default 10911; the VIP port is this minus 2; 0 picks "
                                         "a free port)"),
    "store-dir": ("store_dir", str, "store directory (default ./rocketmq-data)"),
    "advertised-host": ("advertised_host", str, "broker host put in route data (Docker/NAT); default: --host, "
                                                "or with --host 0.0.0.0 this machine's primary address "
                                                "(127.0.0.1 when only --advertised-port is given)"),
    "advertised-port": ("advertised_port", port, "broker port put in route data (a published port that differs "
                                                "from --broker-port); default: --broker-port"),
    "broker-name": ("broker_name", str, "broker name (default broker-a)"),
    "brokers": ("brokers", int_range(1, 26),
                "brokers in this process, 1-26 (default 1): broker-a, broker-b, ... on --broker-port, +10, +20, "
                "..., each with its own store directory, all behind the one name server"),
    "cluster-name": ("cluster_name", str, "cluster name (default DefaultCluster)"),
    "log-level": ("log_level", choice(*LOG_LEVELS), "DEBUG, INFO (default), WARNING or ERROR"),
    "new-group-offset": ("new_group_offset", choice("legacy", "strict"),
                         "what a group with no stored offset is told: legacy (4.9.x, default: 0 while the queue's "
                         "first message is stored) or strict (not found: the client's consumeFromWhere decides)"),
    "server-side-reset": ("use_server_side_reset_offset", boolean,
                          "true (default): the broker also applies a reset at the group's next pull (5.x); "
                          "false: only online consumers apply it (4.9.x)"),
    "offset-durability": ("offset_durability", choice("write-behind", "write-through"),
                          "write-behind (default): commits and resets are answered at once and durable within "
                          "milliseconds; write-through: every offset write (commit, reset, removal) is answered "
                          "once it is durable"),
    "broadcast-offset-store": ("enable_broadcast_offset_store", boolean,
                               "true (default): the broker tracks broadcasting clients' offsets; a client with "
                               "none resumes from the group's"),
    "trace-format": ("wire_trace_format", choice("text", "json"),
                     "text (default) or json (one object per line, for `rocketmq-emulator trace`)"),
    "trace-codes": ("wire_trace_codes", _codes_type, "trace only these requests (and their answers): names or "
                                                     "numbers, comma-separated, e.g. PULL_MESSAGE,SEND_MESSAGE_V2"),
    "trace-group": ("wire_trace_group", str, "trace only requests naming this consumer or producer group"),
    "trace-topic": ("wire_trace_topic", str, "trace only requests naming this topic"),
}


def package_version() -> str:
    """The installed version. Read from the dist-info folder on sys.path when there is one: importing
    importlib.metadata alone costs `serve` ~30 ms of start-up."""
    for entry in sys.path:
        try:
            names = [e.name for e in os.scandir(entry or ".") if e.name.startswith("rocketmq_emulator-")
                     and e.name.endswith(".dist-info")]
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(entry or ".", name, "METADATA"), encoding="utf-8") as f:
                    for line in f:
                        if line.startswith("Version:"):
                            return line.partition(":")[2].strip()
                        if not line.strip():
                            break
            except OSError:
                pass
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("rocketmq-emulator")
    except PackageNotFoundError:
        return "0+unknown"


def _list_type(name: str) -> Callable[[str], list[Any]]:
    """An argparse type from broker/config.py's list parser `name` (imported when a value is given)."""
    def convert(text: str) -> list[Any]:
        from . import config
        try:
            return getattr(config, name)(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = name
    return convert


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="rocketmq-emulator",
                                     description="A RocketMQ 4.x broker and name server in one Python process.")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("admin", help="mqadmin-style administration (run `rocketmq-emulator admin -h`)")
    sub.add_parser("produce", help="send messages from the command line (`rocketmq-emulator produce -h`)")
    sub.add_parser("consume", help="print messages of a topic (`rocketmq-emulator consume -h`)")
    sub.add_parser("seed", help="write generated messages (or a file's rows) to a topic with Spark "
                                "(`rocketmq-emulator seed -h`; needs the spark extra)")
    sub.add_parser("health", help="is the name server up and does every broker answer? exit 0 or 1 "
                                  "(`rocketmq-emulator health -h`)")
    trace = sub.add_parser("trace", help="print a saved wire trace (serve --trace FILE), filtered",
                           description="Print a wire trace written by `serve --trace FILE`: a JSON trace "
                                       "(--trace-format json) as text lines (or JSON with --json), a text trace as "
                                       "it is; the filters choose requests and their answers.")
    trace.add_argument("file", help="the trace file, or - for standard input")
    trace.add_argument("--codes", type=_codes_type, default=None, help="request codes, e.g. PULL_MESSAGE,310")
    trace.add_argument("--group", default=None, help="requests naming this consumer or producer group")
    trace.add_argument("--topic", default=None, help="requests naming this topic")
    trace.add_argument("--json", action="store_true", help="print JSON records (from a JSON trace)")
    serve = sub.add_parser("serve", help="start the name server and broker",
                           description="Every flag can also be set with ROCKETMQ_EMULATOR_<FLAG> "
                                       "(e.g. ROCKETMQ_EMULATOR_BROKER_PORT=20911); flags win over the "
                                       "environment, which wins over --config.")
    for flag, (_, typ, help_text) in SERVE_FLAGS.items():
        serve.add_argument(f"--{flag}", type=typ, default=None, help=help_text)
    serve.add_argument("--topic", action="append", type=_list_type("parse_topic_list"), default=None,
                       metavar="NAME[:QUEUES]", help="create this topic at start (8 queues unless given); "
                       "repeatable, or comma-separated (env ROCKETMQ_EMULATOR_TOPICS=orders:8,payments:4)")
    serve.add_argument("--group", action="append", type=_list_type("parse_group_list"), default=None,
                       metavar="NAME", help="create this consumer group at start; repeatable, or comma-separated "
                       "(env ROCKETMQ_EMULATOR_GROUPS=g1,g2)")
    serve.add_argument("--trace", nargs="?", const="-", default=None, metavar="FILE",
                       help="log every request and response, decoded, to FILE (appended) or, without FILE, to "
                            "standard error (env ROCKETMQ_EMULATOR_TRACE=FILE or -); see --trace-*")
    serve.add_argument("--ephemeral", action="store_true", default=None,
                       help="keep the store in a temporary directory removed at exit")
    serve.add_argument("--config", default=None, metavar="FILE",
                       help="a RocketMQ broker.conf (brokerName, listenPort, brokerIP1, storePathRootDir, "
                            "fileReservedTime, deleteWhen, flushDiskType, autoCreateTopicEnable, ...)")
    return parser


class _VersionAction(argparse.Action):
    """`--version`, reading the installed version only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        parser.exit(message=f"rocketmq-emulator {package_version()}\n")


class ConfigError(Exception):
    """A setting that cannot be used (bad environment value, unreadable --config file, a port out of range)."""


def check_ports(config: BrokerConfig) -> None:
    """Every port the settings give or imply is a real one (the system would otherwise wrap it modulo 65536):
    the name server's, each broker's (+10 per extra broker), its VIP port (-2) and advertised port."""
    from .config import BROKER_PORT_STEP, VIP_PORT_OFFSET
    last = config.brokers - 1
    checks = [("name server port (--namesrv-port)", config.namesrv_port, 0),
              ("broker port (--broker-port)", config.broker_port, 0)]
    for what, value, low in checks:
        if not low <= value <= MAX_PORT:
            raise ConfigError(f"{what} {value} is out of range (0 to {MAX_PORT}; 0 picks a free port)")
    if config.broker_port and last:
        top = config.broker_port + BROKER_PORT_STEP * last
        if top > MAX_PORT:
            raise ConfigError(f"--broker-port {config.broker_port} with --brokers {config.brokers}: the last broker "
                              f"would listen on {top}, past {MAX_PORT} (use a broker port of at most "
                              f"{MAX_PORT - BROKER_PORT_STEP * last}, or 0)")
    if config.broker_port and config.vip_channel_enabled and config.broker_port - VIP_PORT_OFFSET < 1:
        raise ConfigError(f"--broker-port {config.broker_port}: its VIP port would be "
                          f"{config.broker_port - VIP_PORT_OFFSET} (the broker port minus {VIP_PORT_OFFSET}); "
                          f"use {VIP_PORT_OFFSET + 1} to {MAX_PORT}, or 0 for a free port")
    advertised = config.advertised_port
    if advertised is not None:
        top = advertised + BROKER_PORT_STEP * last
        if advertised < 1 or top > MAX_PORT:
            more = f" with --brokers {config.brokers} (the last broker would advertise {top})" if last else ""
            raise ConfigError(f"--advertised-port {advertised}{more}: use 1 to "
                              f"{MAX_PORT - BROKER_PORT_STEP * last}")


def config_from_args(args: argparse.Namespace, environ: dict[str, str] | None = None) -> BrokerConfig:
    from .config import BrokerConfig, apply_broker_conf, parse_group_list, parse_topic_list
    environ = os.environ if environ is None else environ
    config = BrokerConfig()
    conf_file = args.config or environ.get(ENV_PREFIX + "CONFIG")
    if conf_file:
        try:
            apply_broker_conf(config, conf_file)
        except OSError as exc:
            raise ConfigError(f"cannot read the broker.conf {conf_file!r}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ConfigError(f"{conf_file}: {exc}") from None
    for flag, (attr, typ, _) in SERVE_FLAGS.items():
        value = getattr(args, flag.replace("-", "_"))
        if value is None:
            env = environ.get(ENV_PREFIX + flag.replace("-", "_").upper())
            if env is not None and env != "":
                try:
                    value = typ(env)
                except (ValueError, argparse.ArgumentTypeError) as exc:
                    raise ConfigError(f"{ENV_PREFIX}{flag.replace('-', '_').upper()}={env!r}: {exc}") from None
        if value is not None:
            setattr(config, attr, value)
    for attr, parse in (("topics", parse_topic_list), ("groups", parse_group_list)):
        given = getattr(args, attr[:-1])
        if given is not None:
            setattr(config, attr, [item for chunk in given for item in chunk])
            continue
        env = environ.get(ENV_PREFIX + attr.upper())
        if env:
            try:
                setattr(config, attr, parse(env))
            except ValueError as exc:
                raise ConfigError(f"{ENV_PREFIX}{attr.upper()}={env!r}: {exc}") from None
    trace = args.trace if args.trace is not None else environ.get(ENV_PREFIX + "TRACE") or None
    if trace is not None:
        config.wire_trace = trace
    ephemeral = args.ephemeral
    if ephemeral is None:
        ephemeral = environ.get(ENV_PREFIX + "EPHEMERAL", "").lower() in ("1", "true", "yes")
    config.ephemeral = bool(ephemeral)
    check_ports(config)
    return config


#: commands whose command line lives in a layer above the broker: command -> module with `main(argv)`
COMMAND_MODULES = {**dict.fromkeys(("admin", "produce", "consume", "health"), "rocketmq_emulator.client.cli"),
                   "seed": "rocketmq_emulator.spark_tools.cli"}


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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMAND_MODULES:
        return importlib.import_module(COMMAND_MODULES[argv[0]]).main(argv)
    process_started()
    OneLineParser.argv = argv
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        try:
            config = config_from_args(args)
        except ConfigError as exc:
            report_error(str(exc), "CONFIG", as_json=False)
            return EXIT_USAGE
        import logging
        logging.basicConfig(level=config.log_level.upper(), stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        logging.getLogger("rocketmq_emulator").info("rocketmq-emulator %s", package_version())
        if config.unknown_keys:
            logging.getLogger("rocketmq_emulator").warning("ignored unknown broker.conf keys: %s",
                                                           ", ".join(config.unknown_keys))
        import uvloop

        from .emulator import serve
        try:
            uvloop.run(serve(config, started=process_started()))
        except KeyboardInterrupt:
            return 0
        except Exception as exc:  # noqa: BLE001 - a clear line instead of a traceback for start-up failures
            logging.getLogger("rocketmq_emulator").error("cannot start: %s", exc)
            return 1
        return 0
    if args.command == "trace":
        return print_trace(args)
    return 2


def print_trace(args: argparse.Namespace) -> int:
    import json

    from rocketmq_emulator.protocol.trace import TraceFilter, format_text, read_trace
    trace_filter = TraceFilter(args.codes, args.group, args.topic)
    try:
        stream = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8", errors="replace")
    except OSError as exc:
        report_error(f"cannot read the trace {args.file!r}: {exc.strerror or exc}", "TRACE", as_json=False)
        return 1
    try:
        with stream:
            for rec in read_trace(stream, trace_filter):
                if isinstance(rec, str):
                    print(rec)
                else:
                    print(json.dumps(rec, ensure_ascii=False) if args.json else format_text(rec))
    except BrokenPipeError:  # `| head`
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
