"""`rocketmq-emulator seed`: generate messages (or read a Parquet / JSON / CSV file) and write them to a topic
with Spark, in one call. It first checks the name server, the topic's route and its brokers with this project's
client (failing in a second or two, before Spark starts), then shows every second on stderr how many messages
have landed of the total; the last line is the summary (total wall time, Spark's start-up and the write phase).

    rocketmq-emulator seed -t Orders --messages 1000000 --body-size 80-120 --keys 10000 --tags TagA:3,TagB:1 \\
        --queues 8 --time-span 1h --seed 7
    rocketmq-emulator seed -t Orders --from orders.parquet

Exit status: 0 written, 1 the job failed (one line says why), 2 a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time

from rocketmq_emulator.protocol.cli_util import (EXIT_FAILURE, EXIT_USAGE, OneLineParser, int_range, namesrv_list,
                                                  report_error)

DEFAULT_NAMESRV = "127.0.0.1:9876"
_SPAN_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def body_size(text: str) -> tuple[int, int]:
    """`100` or `80-120` (bytes, 1 to 4 MiB)."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: use a size in bytes (100) or a range (80-120)")
    low = int(m.group(1))
    high = int(m.group(2)) if m.group(2) else low
    if not 1 <= low <= high <= 4 * 1024 * 1024:
        raise argparse.ArgumentTypeError(f"{text!r}: sizes from 1 to 4194304 bytes, the low one first")
    return low, high


def time_span(text: str) -> float:
    """Seconds, or with a unit: 90s, 30m, 2h, 7d."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: use seconds or a number with s, m, h or d (e.g. 2h)")
    return float(m.group(1)) * _SPAN_UNITS[m.group(2)]


def keys_spec(text: str) -> int | str:
    """A cardinality (`10000`) or a pattern with `{id}` (`order-{id}`)."""
    if text.isdigit():
        value = int(text)
        if value < 1:
            raise argparse.ArgumentTypeError("a key cardinality must be at least 1")
        return value
    if not text.strip() or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(f"{text!r}: keys are a count (10000) or a pattern without spaces "
                                         f"(order-{{id}})")
    return text


def tags_spec(text: str) -> str:
    for item in (t.strip() for t in text.split(",")):
        if not re.fullmatch(r"[^|:\s]+(:\d+)?", item) or item.endswith(":0"):
            raise argparse.ArgumentTypeError(f"{item!r}: use TAG or TAG:WEIGHT (weight >= 1), comma-separated")
    return text


#: the Spark driver's log4j2 configuration: errors only, and the same level for PySpark's gateway logger, so that
#: Spark prints neither its default-profile notice nor "Setting default log level" while it starts
_QUIET_LOG4J2 = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="rocketmq-emulator seed", description=__doc__.split("\n\n")[0],
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--namesrvAddr", dest="namesrv", type=namesrv_list,
                   default=os.environ.get("NAMESRV_ADDR") or DEFAULT_NAMESRV,
                   help=f"name server host:port (default $NAMESRV_ADDR or {DEFAULT_NAMESRV})")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("--messages", type=int_range(1), help="generate this many messages")
    p.add_argument("--from", dest="source", metavar="PATH",
                   help="write the rows of a .parquet, .json/.jsonl or .csv file instead (a body column, "
                        "optional tags, keys, properties, queueId, bornTimestamp)")
    p.add_argument("--body-size", type=body_size, default=(100, 100), metavar="BYTES|LOW-HIGH",
                   help="body size in bytes, fixed or a range (default 100)")
    p.add_argument("--keys", type=keys_spec, help="a key cardinality (10000) or a pattern with {id} (order-{id})")
    p.add_argument("--tags", type=tags_spec, help="tags with weights: TagA:3,TagB:1 (or TagA,TagB)")
    p.add_argument("--queues", type=int_range(1, 1024), help="create (or resize) the topic with this many queues")
    p.add_argument("--time-span", type=time_span, default=0.0, metavar="SPAN",
                   help="spread bornTimestamp over this span, ending now (seconds, or 30m, 2h, 7d)")
    p.add_argument("--seed", type=int_range(0, 2**31 - 1), default=0, help="generator seed (default 0)")
    p.add_argument("--partitions", type=int_range(1, 10_000), help="Spark partitions (default: by size)")
    p.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "seed":
        argv = argv[1:]
    OneLineParser.argv = argv
    args = build_parser().parse_args(argv)
    if (args.messages is None) == (args.source is None):
        report_error("rocketmq-emulator seed: give either --messages N (generate) or --from PATH (a file)",
                     "USAGE", as_json=args.json)
        return EXIT_USAGE
    if args.source is not None and "://" not in args.source and not os.path.exists(args.source):
        report_error(f"--from {args.source}: no such file or directory", "USAGE", as_json=args.json)
        return EXIT_USAGE
    from .preflight import PreflightError, check_target  # the project's client only: no pyspark, no JVM yet
    try:
        target = check_target(args.namesrv, args.topic, args.queues)
    except PreflightError as exc:
        report_error(str(exc), "PREFLIGHT", as_json=args.json)
        return EXIT_FAILURE
    try:
        from .seed import SeedError, generate, read_file, session, write_topic
    except ImportError as exc:
        report_error(f"seed needs pyspark (and pyarrow): pip install 'rocketmq-emulator[spark]' ({exc})", "SETUP",
                     as_json=args.json)
        return EXIT_FAILURE
    from .progress import Progress
    progress = Progress(args.namesrv, target, args.messages, started, sys.stderr)
    progress.phase = f"starting Spark ({args.master})"
    progress.start()

    def fail(message: str, code: str) -> int:
        progress.stop("failed")
        report_error(message, code, as_json=args.json)
        return EXIT_FAILURE
    try:
        spark_started = time.monotonic()
        try:
            with tempfile.TemporaryDirectory(prefix="rocketmq-seed-") as tmp:  # read once, when the JVM starts
                log_conf = os.path.join(tmp, "log4j2.properties")
                with open(log_conf, "w", encoding="utf-8") as f:
                    f.write(_QUIET_LOG4J2)
                spark = session(args.master, "rocketmq-emulator seed", log_level="OFF", progress_bar=False, **{
                    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log_conf}"})
        except Exception as exc:  # noqa: BLE001 - no JVM, bad master: one line
            return fail(f"cannot start Spark ({args.master}): {_first_line(exc)}", "SPARK")
        spark_seconds = time.monotonic() - spark_started
        try:
            if args.source is None:
                df = generate(spark, args.messages, body_size=args.body_size, keys=args.keys, tags=args.tags,
                              time_span_s=args.time_span, seed=args.seed, partitions=args.partitions)
            else:
                progress.phase = f"counting the rows of {args.source}"
                df = read_file(spark, args.source)
                progress.total = df.count()
            progress.phase = "writing"
            report = write_topic(df, args.topic, args.namesrv)
            progress.stop("done")
        except SeedError as exc:
            return fail(str(exc), "SEED")
        except Exception as exc:  # noqa: BLE001 - a file Spark cannot read, ...: one line
            return fail(f"seeding topic {args.topic!r} failed: {_first_line(exc)}", type(exc).__name__)
        finally:
            spark.stop()
    finally:
        progress.stop("failed")  # a no-op once stopped
    total_seconds = time.monotonic() - started
    if args.json:
        print(json.dumps({"topic": args.topic, "messages": report.messages, "bytes": report.body_bytes,
                          "seconds": round(total_seconds, 3), "sparkStartSeconds": round(spark_seconds, 3),
                          "writeSeconds": round(report.seconds, 3), "msgPerSecond": round(report.msg_per_s),
                          "mbPerSecond": round(report.mb_per_s, 2), "queues": report.queues}))
    else:
        print(f"wrote {report.messages:,} messages ({report.body_bytes / 1e6:,.1f} MB of bodies) to topic "
              f"{args.topic} over {len(report.queues)} queue(s) in {total_seconds:.1f} s (Spark start-up "
              f"{spark_seconds:.1f} s; write phase {report.seconds:.1f} s: {report.msg_per_s:,.0f} msg/s, "
              f"{report.mb_per_s:,.1f} MB/s)")
    return 0
