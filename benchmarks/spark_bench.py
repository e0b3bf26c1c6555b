"""Seeding with Spark against `client/`'s single-process batch producer, on one emulator (README "Spark").

    .venv/bin/python benchmarks/spark_bench.py [--messages 10000000] [--large 1000000] [--master local[2]]

For each data set (`--messages` × 100 B, then `--large` × 1 KiB): `rocketmq-emulator seed`'s path
(`seed_topic`: generation in Spark SQL, the `rocketmq` data source writing with SEND_BATCH_MESSAGE), then the
client's batch producer in this process sending the same number of bodies of the same size (500 per batch,
4 batches in flight, as the data source does per task). Prints msg/s, MB/s and the ratio Spark / client.
The broker runs in its own process on the same machine: Spark's JVM, its Python workers and the broker share
the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocketmq_emulator.client import Admin, Producer  # noqa: E402
from rocketmq_emulator.spark_tools import seed_topic, session  # noqa: E402
from rocketmq_emulator.testing.emulator_process import launch_emulator  # noqa: E402


async def client_rate(namesrv: str, topic: str, messages: int, size: int) -> float:
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, 8, 8)
    bodies = [f"{i}:".encode().ljust(size, b"x") for i in range(500)]
    window = asyncio.Semaphore(4)
    async with Producer("bench_direct", namesrv=namesrv) as producer:
        async def one(n: int) -> None:
            try:
                await producer.send_batch_columns(topic, bodies[:n])
            finally:
                window.release()
        t0 = time.perf_counter()
        tasks = []
        sent = 0
        while sent < messages:
            n = min(500, messages - sent)
            await window.acquire()
            tasks.append(asyncio.ensure_future(one(n)))
            sent += n
            if sent % 1_000_000 < 500:
                print(f"\r  client: {sent:,}/{messages:,}", end="", file=sys.stderr, flush=True)
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - t0
    print("\r", end="", file=sys.stderr)
    return messages / elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--messages", type=int, default=10_000_000, help="100-byte messages (default 10M)")
    ap.add_argument("--large", type=int, default=1_000_000, help="1 KiB messages (default 1M; 0 skips)")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        broker = launch_emulator(Path(tmp) / "emu")
        try:
            spark = session(args.master, "spark_bench")
            for n, size in ((args.messages, 100), (args.large, 1024)):
                if n <= 0:
                    continue
                report = seed_topic(spark, f"SparkBench{size}", namesrv=broker.namesrv_addr, messages=n,
                                    queues=8, body_size=size, seed=1)
                direct = asyncio.run(client_rate(broker.namesrv_addr, f"DirectBench{size}", n, size))
                print(f"{n:,} x {size} B, {args.master}: Spark {report.seconds:.1f} s = {report.msg_per_s:,.0f} msg/s "
                      f"({report.mb_per_s:.1f} MB/s); client batch producer {direct:,.0f} msg/s "
                      f"({direct * size / 1e6:.1f} MB/s); Spark / client = {report.msg_per_s / direct:.2f}",
                      flush=True)
            spark.stop()
        finally:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
