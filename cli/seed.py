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
import time

from rocketmq_emulator.client.config import DEFAULT_NAMESRV
from rocketmq_emulator.protocol.topics import name_problem

from .args import EXIT_FAILURE, EXIT_USAGE, float_range, int_range, namesrv_list, report_error

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


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], command: str,
               help_text: str) -> argparse.ArgumentParser:
    """The parser of `seed` in the command line's tree."""
    p = sub.add_parser(command, help=help_text, description=__doc__.split("\n\n")[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--namesrvAddr", dest="namesrv", type=namesrv_list,
                   default=os.environ.get("NAMESRV_ADDR") or DEFAULT_NAMESRV,
                   help=f"name server host:port (default $NAMESRV_ADDR or {DEFAULT_NAMESRV})")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("--messages", type=int_range(1), help="generate this many messages")
    p.add_argument("--from", dest="source", metavar="PATH",
                   help="write the rows of a .parquet, .json/.jsonl or .csv file instead (a body column, "
                        "optional tags, keys, properties, queueId, brokerName, bornTimestamp)")
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
    p.add_argument("--progress-interval", type=float_range(0.1, 3600, what=" seconds"),
                   metavar="SECONDS", help="seconds between two progress lines on stderr (default 1)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def run(args: argparse.Namespace, started: float | None = None) -> int:
    """Check the command line's combinations, then run the job (spark_tools/seed_job.py) and print its summary.
    `started`: when the command started (time.monotonic()), for the progress lines and the summary."""
    started = time.monotonic() if started is None else started
    if (args.messages is None) == (args.source is None):
        report_error("rocketmq-emulator seed: give either --messages N (generate) or --from PATH (a file)",
                     "USAGE", as_json=args.json)
        return EXIT_USAGE
    problem = name_problem("topic", args.topic)
    if problem is not None:
        report_error(problem, "USAGE", as_json=args.json)
        return EXIT_USAGE
    if args.source is not None and "://" not in args.source:
        if not os.path.exists(args.source):
            report_error(f"--from {args.source}: no such file or directory", "USAGE", as_json=args.json)
            return EXIT_USAGE
        from rocketmq_emulator.spark_tools.source_check import SourceProblem, check_source
        try:
            check_source(args.source)  # before Spark starts: its start-up takes most of a minute on small machines
        except SourceProblem as exc:
            report_error(f"--from {exc}", "USAGE", as_json=args.json)
            return EXIT_USAGE
        except OSError as exc:
            report_error(f"--from {args.source}: cannot read it ({exc.strerror or exc})", "USAGE",
                         as_json=args.json)
            return EXIT_USAGE
    from rocketmq_emulator.spark_tools.seed_job import SeedJobError, run_seed_job
    try:
        outcome = run_seed_job(args.namesrv, args.topic, messages=args.messages, source=args.source,
                               queues=args.queues, body_size=args.body_size, keys=args.keys, tags=args.tags,
                               time_span_s=args.time_span, seed=args.seed, partitions=args.partitions,
                               master=args.master, started=started,
                               progress_interval=args.progress_interval)
    except SeedJobError as exc:
        report_error(str(exc), exc.code, as_json=args.json)
        return EXIT_FAILURE
    report, spark_seconds = outcome.report, outcome.spark_seconds
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
