"""`rocketmq-emulator` command line: `serve` starts the name server and broker."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any, Callable
from importlib.metadata import PackageNotFoundError, version

from rocketmq_emulator.protocol.cli_util import (EXIT_USAGE, OneLineParser, boolean, choice, int_range, port,
                                                 report_error)
from rocketmq_emulator.protocol.trace import TraceFilter, format_text, parse_codes, read_trace

from .config import BrokerConfig, apply_broker_conf, parse_group_list, parse_topic_list

ENV_PREFIX = "ROCKETMQ_EMULATOR_"

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

def _codes_type(text: str) -> frozenset[int]:
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
    try:
        return version("rocketmq-emulator")
    except PackageNotFoundError:
        return "0+unknown"


def _list_type(parse: Callable[[str], list[Any]]) -> Callable[[str], list[Any]]:
    def convert(text: str) -> list[Any]:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = parse.__name__
    return convert


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="rocketmq-emulator",
                                     description="A RocketMQ 4.x broker and name server in one Python process.")
    parser.add_argument("--version", action="version", version=f"rocketmq-emulator {package_version()}")
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
    serve.add_argument("--topic", action="append", type=_list_type(parse_topic_list), default=None,
                       metavar="NAME[:QUEUES]", help="create this topic at start (8 queues unless given); "
                       "repeatable, or comma-separated (env ROCKETMQ_EMULATOR_TOPICS=orders:8,payments:4)")
    serve.add_argument("--group", action="append", type=_list_type(parse_group_list), default=None,
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


class ConfigError(Exception):
    """A setting that cannot be used (bad environment value, unreadable --config file)."""


def config_from_args(args: argparse.Namespace, environ: dict[str, str] | None = None) -> BrokerConfig:
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
    return config


CLIENT_COMMANDS = ("admin", "produce", "consume", "health")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in CLIENT_COMMANDS:
        # The client's CLI lives in client/, which the broker package must not import: hand over the process.
        os.execv(sys.executable, [sys.executable, "-m", "rocketmq_emulator.client", *argv])
    if argv and argv[0] == "seed":  # spark_tools/ likewise
        os.execv(sys.executable, [sys.executable, "-m", "rocketmq_emulator.spark_tools", *argv])
    OneLineParser.argv = argv
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        try:
            config = config_from_args(args)
        except ConfigError as exc:
            report_error(str(exc), "CONFIG", as_json=False)
            return EXIT_USAGE
        logging.basicConfig(level=config.log_level.upper(), stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        logging.getLogger("rocketmq_emulator").info("rocketmq-emulator %s", package_version())
        if config.unknown_keys:
            logging.getLogger("rocketmq_emulator").warning("ignored unknown broker.conf keys: %s",
                                                           ", ".join(config.unknown_keys))
        import uvloop

        from .emulator import serve
        try:
            uvloop.run(serve(config))
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
