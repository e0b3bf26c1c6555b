"""Start-up with a big store, and memory: fill a broker (in its own process) with N × 100 B messages through
the client's batch producer (500 per batch, 4 in flight), read its anonymous and file-backed RSS, kill -9 it
right after the last acknowledged send, time the restart (launch to the ready line: recovery of the unflushed
tail), then stop it cleanly and time a clean restart. Also times plain launches with an empty store, and stops:
SIGTERM to the process's exit as its parent sees it (wait), for an empty broker and one that holds the fill.
(A process whose parent is gone is reaped by PID 1; in this sandbox that adds about 1.4 s to any process, an
orphaned `sleep` too, which a shell loop polling `kill -0` counts as the broker's.)

    .venv/bin/python -m benchmarks.restart_bench [--messages 10000000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from rocketmq_emulator.client import Admin, Producer
from rocketmq_emulator.testing.emulator_process import RocketMQBroker, launch_emulator


def rss(pid: int) -> str:
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("RssAnon", "RssFile")):
                name, value = line.split(":", 1)
                fields[name] = int(value.split()[0]) // 1024
    return f"anonymous {fields.get('RssAnon', 0)} MB, file-backed {fields.get('RssFile', 0)} MB"


async def fill(namesrv: str, messages: int) -> float:
    async with Admin(namesrv) as admin:
        await admin.create_topic("RestartBench", 8, 8)
    bodies = [f"{i}:".encode().ljust(100, b"x") for i in range(500)]
    window = asyncio.Semaphore(4)
    async with Producer("restart_bench", namesrv=namesrv) as producer:
        async def one() -> None:
            try:
                await producer.send_batch_columns("RestartBench", bodies)
            finally:
                window.release()
        t0 = time.perf_counter()
        tasks = []
        for i in range(messages // 500):
            await window.acquire()
            tasks.append(asyncio.ensure_future(one()))
            if i % 2000 == 0:
                print(f"\r  filling: {i * 500:,}/{messages:,}", end="", file=sys.stderr, flush=True)
        await asyncio.gather(*tasks)
        print("\r", end="", file=sys.stderr)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--messages", type=int, default=10_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        runs = [restart_empty(Path(tmp) / f"empty{i}") for i in range(5)]
        print(f"launch to ready, empty store: {' '.join(f'{t * 1000:.0f}' for t, _ in runs)} ms; SIGTERM to exit: "
              f"{' '.join(f'{t * 1000:.0f}' for _, t in runs)} ms", flush=True)
        broker = launch_emulator(Path(tmp) / "big")
        try:
            idle = rss(broker.pid)
            seconds = asyncio.run(fill(broker.namesrv_addr, args.messages))
            print(f"filled {args.messages:,} × 100 B in {seconds:.1f} s ({args.messages / seconds:,.0f} msg/s); RSS idle "
                  f"{idle}; after the fill {rss(broker.pid)}", flush=True)
            broker.kill()
            crashed = broker.start()
            line = [x for x in broker.log_path.read_text().splitlines() if "recovered after" in x][-1]  # type: ignore[union-attr]
            print(f"launch to ready after kill -9: {crashed * 1000:.0f} ms ({line.split(': ', 2)[-1]})", flush=True)
            time.sleep(5)  # a while: the periodic tasks (flushes, scans, statistics) have all run
            print(f"SIGTERM to exit, holding {args.messages:,} messages: {timed_stop(broker) * 1000:.0f} ms", flush=True)
            print(f"launch to ready after a clean stop: {broker.start() * 1000:.0f} ms", flush=True)
        finally:
            broker.stop()


def restart_empty(root: Path) -> tuple[float, float]:
    """(launch to ready, SIGTERM to exit) of a broker with an empty store."""
    t0 = time.perf_counter()
    broker = launch_emulator(root)
    elapsed = time.perf_counter() - t0
    return elapsed, timed_stop(broker)


def timed_stop(broker: RocketMQBroker) -> float:
    """Seconds from SIGTERM to the process's exit, as its parent (this process) sees it."""
    t0 = time.perf_counter()
    broker.stop()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
