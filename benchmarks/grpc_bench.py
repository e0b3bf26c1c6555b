"""The gRPC endpoint (RocketMQ 5.x clients) against the remoting path, in the same run on the same broker, and
what the endpoint costs a broker's start-up and idle memory.

    .venv/bin/python -m benchmarks.grpc_bench              # 5,000 messages per case, 3 start-ups per mode
    .venv/bin/python -m benchmarks.grpc_bench --quick      # 1,000 messages, 1 start-up

* start-up: `serve` launched to its ready line, and its RSS after 2 s idle, with the gRPC port off and on;
* send: 100 B messages with 64 in flight: the official 5.x Python client (rocketmq-python-client 5.1.2,
  `send_async`) through gRPC, and this project's asyncio client through remoting;
* receive + ack: the 5.x SimpleConsumer (receive 32, ack each; 5.1.2's ack_async returns nothing to wait on) through gRPC (POP), and this project's push
  consumer (pull, commit) through remoting, from the first message to the last.

Both clients are Python; the 5.x one runs in its own process and environment (testing/py5_env.py). The figures
are the clients' as much as the broker's: the ratio says what a 5.x application gets next to a 4.x one here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BODY = b"x" * 100
READY = "rocketmq-emulator ready"

PY5_SCRIPT = r"""
import json, sys, threading, time
from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer
endpoint, topic, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
config = ClientConfiguration(endpoint, Credentials(), request_timeout=30)

def message(i):
    m = Message()
    m.topic, m.body, m.tag, m.keys = topic, b"x" * 100, "TagBench", f"k{i}"
    return m

if mode == "send":
    p = Producer(config, (topic,))
    p.startup()
    p.send(message(-1))
    window = threading.Semaphore(64)
    done = threading.Event()
    left = [n]
    lock = threading.Lock()
    def sent(_):
        window.release()
        with lock:
            left[0] -= 1
            if left[0] == 0:
                done.set()
    t0 = time.perf_counter()
    for i in range(n):
        window.acquire()
        p.send_async(message(i)).add_done_callback(sent)
    done.wait()
    elapsed = time.perf_counter() - t0
    p.shutdown()
else:
    c = SimpleConsumer(config, "bench-g5", {topic: FilterExpression("*")}, await_duration=5)
    c.startup()
    got = 0
    t0 = None
    while got < n:
        msgs = c.receive(32, 30)
        if msgs and t0 is None:
            t0 = time.perf_counter()
        for m in msgs:
            c.ack(m)  # one at a time: 5.1.2's ack_async returns no future to wait on
        got += len(msgs)
    elapsed = time.perf_counter() - t0
    c.shutdown()
print(json.dumps({"n": n, "seconds": elapsed}))
"""


def launch(root: Path, grpc: bool) -> tuple[subprocess.Popen[bytes], float, dict[str, str]]:
    from rocketmq_emulator.testing.command_line import COMMAND
    from rocketmq_emulator.testing.ports import free_broker_port, free_port
    ns, broker = free_port(), free_broker_port()
    grpc_port = free_port({ns, broker, broker - 2})
    log = root / f"serve-{time.monotonic_ns()}.log"
    command = [*COMMAND, "serve", "--store-dir", str(root / "store"), "--host", "127.0.0.1", "--namesrv-port",
               str(ns), "--broker-port", str(broker), "--topic", "B:4", "--topic", "R:4",
               *(("--grpc-port", str(grpc_port)) if grpc else ())]
    t0 = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    while READY not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.perf_counter() - t0 > 30:
            raise RuntimeError(log.read_text())
        time.sleep(0.005)
    return proc, time.perf_counter() - t0, {"namesrv": f"127.0.0.1:{ns}", "grpc": f"127.0.0.1:{grpc_port}"}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    import os
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(30)


def startup(rounds: int) -> dict[str, tuple[float, float]]:
    out = {}
    for grpc in (False, True):
        times, rss = [], []
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as tmp:
                proc, took, _ = launch(Path(tmp), grpc)
                time.sleep(2.0)
                rss.append(rss_mb(proc.pid))
                stop(proc)
                times.append(took)
        out["on" if grpc else "off"] = (statistics.median(times), statistics.median(rss))
    return out


def py5(endpoint: str, topic: str, n: int, mode: str) -> float:
    from rocketmq_emulator.testing.py5_env import py5_python
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run([str(py5_python()), "-c", PY5_SCRIPT, endpoint, topic, str(n), mode],
                              capture_output=True, text=True, timeout=600, env={"HOME": home, "PATH": "/usr/bin:/bin"})
    if done.returncode != 0:
        raise RuntimeError(done.stdout + done.stderr)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return float(result["n"]) / result["seconds"]


async def remoting_send(namesrv: str, topic: str, n: int) -> float:
    from rocketmq_emulator.client import Producer
    async with Producer("bench-remoting", namesrv=namesrv) as p:
        await p.send(topic, BODY, tags="TagBench", keys="k-1")
        window = asyncio.Semaphore(64)

        async def one(i: int) -> None:
            async with window:
                await p.send(topic, BODY, tags="TagBench", keys=f"k{i}")
        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return n / (time.perf_counter() - t0)


async def remoting_consume(namesrv: str, topic: str, n: int) -> float:
    """This project's push consumer, first message to last (client_bench's consume case)."""
    from benchmarks.client_bench import py_consume
    first_to_last, _ = await py_consume(namesrv, topic, n)
    return (n - 1) / first_to_last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 1000 if args.quick else 5000
    started = startup(1 if args.quick else 3)
    for mode, (took, rss) in started.items():
        print(f"start-up, gRPC {mode:3}: launch to ready {took * 1000:.0f} ms, idle RSS {rss:.1f} MB")
    print(f"gRPC on / off: start-up {started['on'][0] / started['off'][0]:.2f}x, idle RSS "
          f"+{started['on'][1] - started['off'][1]:.1f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        proc, _, addr = launch(Path(tmp), True)
        cpu: dict[str, float] = {}

        def measured(name: str, fn):  # noqa: ANN001, ANN202 - the rate, and the broker's CPU per message
            before = cpu_s(proc.pid)
            rate = fn()
            cpu[name] = (cpu_s(proc.pid) - before) / n * 1e6
            return rate
        try:
            grpc_send = measured("grpc send", lambda: py5(addr["grpc"], "B", n, "send"))
            remote_send = measured("remoting send", lambda: asyncio.run(remoting_send(addr["namesrv"], "R", n)))
            grpc_recv = measured("grpc receive", lambda: py5(addr["grpc"], "B", n, "receive"))
            remote_recv = measured("remoting receive", lambda: asyncio.run(remoting_consume(addr["namesrv"], "R", n)))
        finally:
            stop(proc)
    print(f"send, 100 B, 64 in flight: gRPC (5.x client) {grpc_send:,.0f} msg/s, remoting (asyncio client) "
          f"{remote_send:,.0f} msg/s = {grpc_send / remote_send:.2f}x; broker CPU per message "
          f"{cpu['grpc send']:.0f} / {cpu['remoting send']:.0f} us")
    print(f"receive + ack: gRPC POP (5.x SimpleConsumer, 32 per receive) {grpc_recv:,.0f} msg/s, remoting pull "
          f"(push consumer) {remote_recv:,.0f} msg/s = {grpc_recv / remote_recv:.2f}x; broker CPU per message "
          f"{cpu['grpc receive']:.0f} / {cpu['remoting receive']:.0f} us")


if __name__ == "__main__":
    main()
