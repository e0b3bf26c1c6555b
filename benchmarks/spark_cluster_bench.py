"""Seeding with Spark into one broker process against two broker processes on this machine (README "Spark").

    .venv/bin/python benchmarks/spark_cluster_bench.py --processes [--messages 10000000] [--rounds 1]
        [--master local[2]] [--brokers 2]

One Spark session (its start-up is not timed) seeds `--messages` x 100 B (`seed_topic`: generation in Spark SQL,
the `rocketmq` data source, 8 queues per broker) into (a) `serve` (one broker, one process) and (b) `serve
--brokers N --processes` (one OS process per broker, one name server), each on a fresh store, alternating (a)
and (b) for `--rounds` rounds, after an untimed warm-up run (`--warmup` messages). Without `--processes`, (b) is
`serve --brokers N` in one process (all brokers on one core). Prints per round the write phase's msg/s, the
messages per broker, how many tasks wrote to more than one broker, and the brokers' CPU seconds; then the median
(and the spread) of each case and the ratio (b) / (a) of the medians, and of each round. Timings are figures,
never asserted.

Spark's JVM, its Python workers (the writers) and the broker processes share this machine's cores: on 2 cores the
writers alone can keep about two cores busy, so (b) shows what a second broker process buys when the cores are
already taken; with more cores (a bigger `local[K]`) the same command measures the scaling.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocketmq_emulator.spark_tools import seed_topic, session  # noqa: E402
from rocketmq_emulator.testing.command_line import COMMAND  # noqa: E402
from rocketmq_emulator.testing.emulator_process import launch_emulator  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def serve_has_processes() -> bool:
    """Whether this checkout's `serve` takes --processes (one OS process per broker)."""
    out = subprocess.run([*COMMAND, "serve", "-h"], capture_output=True, text=True, timeout=60).stdout
    return "--processes" in out


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of `pid` and its living descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS
        todo.extend(children.get(p, []))
    return total


def one_run(spark, root: Path, brokers: int, processes: bool, messages: int, label: str) -> dict:
    serve_args = ("--processes",) if processes else ()
    broker = launch_emulator(root, *serve_args, brokers=brokers)
    try:
        cpu0 = tree_cpu(broker.pid)
        report = seed_topic(spark, "ClusterBench", namesrv=broker.namesrv_addr, messages=messages, queues=8,
                            body_size=100, seed=1)
        cpu = tree_cpu(broker.pid) - cpu0
    finally:
        broker.stop()
    several = sum(len(t["brokers"]) > 1 for t in report.tasks)
    per_broker = ", ".join(f"{b} {n:,}" for b, n in sorted(report.brokers.items()))
    print(f"  {label}: {report.seconds:.1f} s = {report.msg_per_s:,.0f} msg/s ({report.mb_per_s:.1f} MB/s); "
          f"{per_broker}; {len(report.tasks)} tasks, {several} wrote to several brokers; broker CPU {cpu:.1f} s "
          f"({cpu / report.seconds:.2f} cores)", flush=True)
    if report.messages != messages:  # the data landed (a correctness check, not a timing)
        raise SystemExit(f"{label}: {report.messages:,} of {messages:,} messages written")
    return {"rate": report.msg_per_s, "seconds": report.seconds, "cpu": cpu}


def summary(rates: list[float]) -> str:
    med = statistics.median(rates)
    spread = f" (rounds {min(rates):,.0f}–{max(rates):,.0f})" if len(rates) > 1 else ""
    return f"{med:,.0f} msg/s{spread}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--messages", type=int, default=10_000_000, help="100-byte messages per run (default 10M)")
    ap.add_argument("--brokers", type=int, default=2, help="brokers of case (b) (default 2)")
    ap.add_argument("--processes", action="store_true",
                    help="case (b) is `serve --brokers N --processes` (one process per broker); without it, "
                         "`serve --brokers N` in one process")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of (a) then (b) (default 1)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--warmup", type=int, default=500_000, help="messages of an untimed first run (default 500k)")
    args = ap.parse_args()
    if args.processes and not serve_has_processes():
        print("spark_cluster_bench: this checkout's `rocketmq-emulator serve` has no --processes flag (one OS "
              "process per broker) yet; run without --processes to compare with N brokers in one process",
              file=sys.stderr)
        return 2
    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", "benchmarks/spark_cluster_bench.py", *sys.argv[1:]])
    b_label = f"(b) serve --brokers {args.brokers}" + (" --processes" if args.processes else " (one process)")
    print(f"{command}\n{args.messages:,} x 100 B, {args.master}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f} at the start", flush=True)
    spark = session(args.master, "spark_cluster_bench", progress_bar=False)
    runs: dict[str, list[dict]] = {"a": [], "b": []}
    try:
        with tempfile.TemporaryDirectory(dir=".") as tmp:
            if args.warmup:  # the session's first job pays for its Python workers' start and the JIT: untimed
                one_run(spark, Path(tmp) / "warmup", 1, False, args.warmup, "warm-up (not counted)")
            for r in range(args.rounds):
                runs["a"].append(one_run(spark, Path(tmp) / f"a{r}", 1, False, args.messages,
                                         f"round {r + 1} (a) serve (one broker)"))
                runs["b"].append(one_run(spark, Path(tmp) / f"b{r}", args.brokers, args.processes, args.messages,
                                         f"round {r + 1} {b_label}"))
    finally:
        spark.stop()
    a = statistics.median(x["rate"] for x in runs["a"])
    b = statistics.median(x["rate"] for x in runs["b"])
    paired = [y["rate"] / x["rate"] for x, y in zip(runs["a"], runs["b"])]
    per_round = f" (per round: {', '.join(f'{r:.2f}' for r in paired)})" if len(paired) > 1 else ""
    print(f"(a) one broker process: {summary([x['rate'] for x in runs['a']])}; {b_label}: "
          f"{summary([x['rate'] for x in runs['b']])}; (b) / (a) = {b / a:.2f}{per_round}; load average "
          f"{os.getloadavg()[0]:.2f} at the end", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
