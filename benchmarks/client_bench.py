"""This client's throughput against the emulator, next to the stock C++ client's (rocketmq==0.4.4) for the same
workload on the same broker, in the same run.

    .venv/bin/python benchmarks/client_bench.py                 # 20,000 messages per case
    .venv/bin/python benchmarks/client_bench.py --quick         # 5,000
    .venv/bin/python benchmarks/client_bench.py --loop uvloop   # this client on uvloop instead of asyncio

The emulator runs in its own process (`python -m rocketmq_emulator.cli serve`, store in a temporary directory, in /dev/shm
when there is one), so neither client shares the GIL with it. Cases, each with 100-byte bodies, a tag and a key:

* produce, single: one synchronous send after the other (send_sync / `await send`);
* produce, batch: batches of 16 (send_batch). Not 32: the C++ client of the wheel compresses a batch body of
  4 KiB or more, which no broker can decode (apache/rocketmq-client-cpp#186, fixed after that build), and
  32 such messages make about 5.8 KB;
* consume: a new push-consumer group reads all the messages of the single-produce topic; the rate is measured
  from the first to the last message received (start-up and rebalance excluded, for both clients).

The C++ figures come from this file run as a subprocess (`--cpp ...`), timed inside that process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BODY = b"x" * 100


# --------------------------------------------------------------------------------------------------
# the C++ side (runs in a subprocess)
# --------------------------------------------------------------------------------------------------
def cpp_main(args: argparse.Namespace) -> None:
    from rocketmq.client import Message, Producer, PushConsumer

    if args.cpp in ("produce-single", "produce-batch"):
        producer = Producer("cpp_bench_producer")
        producer.set_namesrv_addr(args.namesrv)
        producer.start()

        def build(i: int) -> Message:
            m = Message(args.topic)
            m.set_tags("TagBench")
            m.set_keys(f"k{i}")
            m.set_body(BODY)
            return m
        producer.send_sync(build(-1))  # warm-up: route, connection
        t0 = time.perf_counter()
        if args.cpp == "produce-single":
            for i in range(args.messages):
                producer.send_sync(build(i))
        else:
            for first in range(0, args.messages, args.batch):
                producer.send_batch([build(i) for i in range(first, min(first + args.batch, args.messages))])
        elapsed = time.perf_counter() - t0
        producer.shutdown()
        print(json.dumps({"count": args.messages, "seconds": elapsed}), flush=True)
        return
    consumer = PushConsumer("cpp_bench_consumer")
    consumer.set_namesrv_addr(args.namesrv)
    lock = threading.Lock()
    state = {"n": 0, "first": 0.0, "last": 0.0}
    done = threading.Event()

    def on_message(msg) -> None:
        now = time.perf_counter()
        with lock:
            state["n"] += 1
            if state["n"] == 1:
                state["first"] = now
            state["last"] = now
            if state["n"] >= args.messages:
                done.set()
    consumer.subscribe(args.topic, on_message)
    t0 = time.perf_counter()
    consumer.start()
    done.wait(300)
    consumer.shutdown()
    print(json.dumps({"count": state["n"], "seconds": state["last"] - state["first"],
                      "total_seconds": state["last"] - t0}), flush=True)


def run_cpp(case: str, namesrv: str, topic: str, args: argparse.Namespace, home: str) -> dict:
    cmd = [sys.executable, __file__, "--cpp", case, "--namesrv", namesrv, "--topic", topic, "--messages",
           str(args.messages), "--batch", str(args.batch)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=home, env={**os.environ, "HOME": home})
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"C++ {case} failed: {out.stdout[-2000:]} {out.stderr[-2000:]}")
    return json.loads(lines[-1])


# --------------------------------------------------------------------------------------------------
# this client
# --------------------------------------------------------------------------------------------------
async def py_produce(namesrv: str, topic: str, n: int, batch: int) -> float:
    from rocketmq_emulator.client import Message, Producer
    async with Producer("py_bench_producer", namesrv=namesrv) as p:
        await p.send(topic, BODY, tags="TagBench", keys="k-1")  # warm-up: route, connection
        t0 = time.perf_counter()
        if batch <= 1:
            for i in range(n):
                await p.send(topic, BODY, tags="TagBench", keys=f"k{i}")
        else:
            for first in range(0, n, batch):
                await p.send_batch(topic, [Message(topic, BODY, tags="TagBench", keys=f"k{i}")
                                           for i in range(first, min(first + batch, n))])
        return time.perf_counter() - t0


async def py_consume(namesrv: str, topic: str, n: int) -> tuple[float, float]:
    from rocketmq_emulator.client import FIRST_OFFSET, PushConsumer
    state = {"n": 0, "first": 0.0, "last": 0.0}
    done = asyncio.Event()
    consumer = PushConsumer("py_bench_consumer", namesrv=namesrv, consume_from=FIRST_OFFSET)
    consumer.subscribe(topic)

    @consumer.on_message
    def handle(msg) -> None:
        now = time.perf_counter()
        state["n"] += 1
        if state["n"] == 1:
            state["first"] = now
        state["last"] = now
        if state["n"] >= n:
            done.set()
    t0 = time.perf_counter()
    async with consumer:
        await asyncio.wait_for(done.wait(), 300)
    return state["last"] - state["first"], state["last"] - t0


# --------------------------------------------------------------------------------------------------
def start_emulator(store_dir: str) -> tuple[subprocess.Popen, str]:
    from rocketmq_emulator.testing.command_line import COMMAND
    from rocketmq_emulator.testing.ports import free_broker_port, free_port
    namesrv_port, broker_port = free_port(), free_broker_port()
    proc = subprocess.Popen([*COMMAND, "serve", "--store-dir", store_dir, "--host", "127.0.0.1",
                             "--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port),
                             "--log-level", "WARNING"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", broker_port), 0.2):
                with socket.create_connection(("127.0.0.1", namesrv_port), 0.2):
                    return proc, f"127.0.0.1:{namesrv_port}"
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"the emulator exited with status {proc.returncode}")
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the emulator did not start within 30 s")


async def create_topics(namesrv: str, topics: list[str]) -> None:
    from rocketmq_emulator.client import Admin
    async with Admin(namesrv) as admin:
        for t in topics:
            await admin.create_topic(t, 4, 4)


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def main() -> None:
    from rocketmq_emulator.testing.emulator_process import terminate
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="5,000 messages per case")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument("--store-dir", help="the emulator's store (default: a temporary directory, in /dev/shm "
                                            "when there is one)")
    parser.add_argument("--cpp", help=argparse.SUPPRESS)
    parser.add_argument("--namesrv", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cpp:
        cpp_main(args)
        return
    if args.quick:
        args.messages = 5_000
    if args.loop == "uvloop":
        import uvloop
        run = uvloop.run
    else:
        run = asyncio.run
    n = args.messages
    # the store goes to RAM when it can: a nearly full disk makes a broker refuse messages (over 90 % used)
    store_dir = args.store_dir or tempfile.mkdtemp(prefix="client-bench-store-",
                                                   dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    proc, namesrv = start_emulator(store_dir)
    home = tempfile.mkdtemp(prefix="client-bench-home-")
    try:
        topics = ["BenchPySingle", "BenchCppSingle", "BenchPyBatch", "BenchCppBatch"]
        run(create_topics(namesrv, topics))
        results = []
        py = rate(n, run(py_produce(namesrv, "BenchPySingle", n, 1)))
        cpp = run_cpp("produce-single", namesrv, "BenchCppSingle", args, home)
        results.append(("produce, single", py, rate(cpp["count"], cpp["seconds"])))
        py = rate(n, run(py_produce(namesrv, "BenchPyBatch", n, args.batch)))
        cpp = run_cpp("produce-batch", namesrv, "BenchCppBatch", args, home)
        results.append((f"produce, batch of {args.batch}", py, rate(cpp["count"], cpp["seconds"])))
        steady, total = run(py_consume(namesrv, "BenchPySingle", n + 1))
        cpp = run_cpp("consume", namesrv, "BenchPySingle", argparse.Namespace(**{**vars(args), "messages": n + 1}),
                      home)
        results.append(("consume", rate(n, steady), rate(n, cpp["seconds"])))
        print(f"rocketmq-emulator client benchmark: {n:,} messages per case, 100 B bodies, this client on "
              f"{args.loop}; emulator in its own process; Python {sys.version.split()[0]}")
        print(f"{'case':<22}{'this client msg/s':>20}{'C++ client msg/s':>20}{'ratio':>10}")
        for name, mine, theirs in results:
            print(f"{name:<22}{mine:>20,.0f}{theirs:>20,.0f}{mine / theirs:>10.2f}")
        print(f"(consume incl. start-up and rebalance: this client {rate(n, total):,.0f} msg/s, "
              f"C++ {rate(n, cpp['total_seconds']):,.0f} msg/s)")
    finally:
        terminate(proc, grace=10)
        shutil.rmtree(home, ignore_errors=True)
        if not args.store_dir:
            shutil.rmtree(store_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
