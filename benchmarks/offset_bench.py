"""Consumer-offset requests and resets through the broker (figures, not a test).

    .venv/bin/python -m benchmarks.offset_bench [--requests 100000] [--messages 400]

The broker runs in its own process (`serve --ephemeral`, as in `broker_bench`); this process drives it:

* QUERY_CONSUMER_OFFSET/s and UPDATE_CONSUMER_OFFSET/s, pipelined (64 in flight, one connection), each
  printed with its ratio to the broker's plain request rate in the same run (GET_MAX_OFFSET: a store lookup
  with no offset logic);
* reset latency: 4 consumers of this project's client share a group on an 8-queue topic and consume
  `--messages` messages; then `resetOffsetByTime` to the start, and the time from the admin call returning to
  the first message consumed again. Run with server-side reset on (the default: the broker moves each
  queue's next pull, and wakes the held ones) and off (only the consumers' RESET_CONSUMER_CLIENT_OFFSET
  handling moves them).
* durability (README "Offset durability"): UPDATE_CONSUMER_OFFSET commits/s sustained in write-behind and
  write-through (64 in flight), the p99 latency of a commit at a fixed 2,000 commits/s against the plain
  request's p99 in the same broker, and `--crash-runs` kill -9 runs per mode under a commit load
  (integration_tests/offset_crash.py): acknowledged commits, commits lost, worst regression of one queue,
  queues that lost anything acknowledged one flush interval (100 ms) before the kill.

    .venv/bin/python -m benchmarks.offset_bench --only durability --crash-runs 20
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import uvloop

from benchmarks.broker_bench import ROOT, drive, drive_fixed_rate, wait_port
from integration_tests.offset_crash import crash_run
from rocketmq_emulator.client import FIRST_OFFSET, Admin, Producer, PushConsumer
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, encode_command_bytes
from rocketmq_emulator.protocol.headers import (QueryConsumerOffsetRequestHeader, QueueRequestHeader,
                                                UpdateConsumerOffsetRequestHeader)
from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.ports import free_broker_port, free_port

TOPIC = "OffsetBench"


def start(server_side_reset: bool, durability: str = "write-behind") -> tuple[subprocess.Popen, int, int]:
    ns_port, port = free_port(), free_broker_port()
    proc = subprocess.Popen([*COMMAND, "serve", "--ephemeral",
                             "--namesrv-port", str(ns_port), "--broker-port", str(port), "--log-level", "WARNING",
                             "--server-side-reset", "true" if server_side_reset else "false",
                             "--offset-durability", durability], cwd=ROOT)
    if not wait_port(port, time.perf_counter() + 20):
        proc.kill()
        raise SystemExit("broker did not start")
    return proc, ns_port, port


def frames(code: int) -> list[bytes]:
    out = []
    for i in range(64):
        q = i % 8
        if code == RequestCode.QUERY_CONSUMER_OFFSET:
            ext = QueryConsumerOffsetRequestHeader(consumer_group=f"g{i % 16}", topic=TOPIC, queue_id=q).to_ext()
        elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
            ext = UpdateConsumerOffsetRequestHeader(consumer_group=f"g{i % 16}", topic=TOPIC, queue_id=q,
                                                    commit_offset=i).to_ext()
        else:
            ext = QueueRequestHeader(topic=TOPIC, queue_id=q).to_ext()
        out.append(encode_command_bytes(RemotingCommand.request(code, ext, opaque=i)))
    return out


async def request_rates(port: int, total: int) -> dict[str, float]:
    rates = {}
    for name, code in (("GET_MAX_OFFSET (plain)", RequestCode.GET_MAX_OFFSET),
                       ("QUERY_CONSUMER_OFFSET", RequestCode.QUERY_CONSUMER_OFFSET),
                       ("UPDATE_CONSUMER_OFFSET", RequestCode.UPDATE_CONSUMER_OFFSET)):
        await drive(port, frames(code), min(total, 5000))  # warm-up
        elapsed, ok, failed = await drive(port, frames(code), total)
        rates[name] = (ok + failed) / elapsed
        print(f"  {name:<26} {rates[name]:>10,.0f} req/s", flush=True)
    return rates


async def reset_latency(ns: str, messages: int) -> float:
    async with Admin(ns) as admin:
        await admin.create_topic(TOPIC, 8, 8)
        async with Producer("bench_p", namesrv=ns) as producer:
            for i in range(0, messages, 50):
                await producer.send_batch(TOPIC, [f"m{j}" for j in range(i, min(i + 50, messages))])
        seen = 0
        again = asyncio.Event()
        resetting = False

        def on_message(msg) -> None:
            nonlocal seen
            seen += 1
            if resetting:
                again.set()
        members = []
        for n in range(4):
            c = PushConsumer("bench_reset", namesrv=ns, instance_name=f"m{n}", consume_from=FIRST_OFFSET)
            c.subscribe(TOPIC)
            c.on_message(on_message)
            members.append(await c.start())
        try:
            deadline = time.monotonic() + 60
            while seen < messages and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)  # every queue is caught up and its pull is held at the broker
            resetting = True
            await admin.reset_offset_by_timestamp("bench_reset", TOPIC, 0)
            t0 = time.perf_counter()
            await asyncio.wait_for(again.wait(), 60)
            return time.perf_counter() - t0
        finally:
            for c in members:
                await c.stop()


def p99(latencies: list[float]) -> float:
    return latencies[int(len(latencies) * 0.99) - 1] if latencies else float("nan")


async def durability(total: int, crash_runs: int) -> None:
    print("offset durability (README \"Offset durability\"):", flush=True)
    for mode in ("write-behind", "write-through"):
        proc, _, port = start(True, mode)
        try:
            update = frames(RequestCode.UPDATE_CONSUMER_OFFSET)
            await drive(port, update, min(total, 5000))  # warm-up
            elapsed, ok, failed = await drive(port, update, total)
            line = f"  {mode:<13} {ok / elapsed:>9,.0f} commits/s (64 in flight, {failed} failed)"
            plain = await drive_fixed_rate(port, frames(RequestCode.GET_MAX_OFFSET), 2000, 3.0)
            commits = await drive_fixed_rate(port, update, 2000, 3.0)
            line += (f"; at 2,000/s p99 {p99(commits) * 1e6:,.0f} us against the plain request's "
                     f"{p99(plain) * 1e6:,.0f} us ({p99(commits) / p99(plain):.2f}x)")
            print(line, flush=True)
        finally:
            proc.terminate()
            proc.wait(10)
    for mode in ("write-behind", "write-through"):
        acked = lost = worst = beyond = 0
        for seed in range(crash_runs):
            with tempfile.TemporaryDirectory() as tmp:
                r = await crash_run(Path(tmp), mode, seed=seed)
            acked, lost, worst = acked + r.acked, lost + r.lost, max(worst, r.worst)
            beyond += len(r.beyond_bound)
            print(f"\r  kill -9 {mode}: run {seed + 1}/{crash_runs}", end="", file=sys.stderr, flush=True)
        print(f"\r  kill -9 {mode:<13}: {crash_runs} runs, {acked:,} acknowledged commits, {lost} lost, worst "
              f"regression {worst} commit(s) of one queue, {beyond} queue(s) lost a commit acknowledged over "
              f"{100} ms before the kill", flush=True)


async def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=100_000, help="requests per rate measurement")
    ap.add_argument("--messages", type=int, default=400, help="messages consumed before the reset")
    ap.add_argument("--crash-runs", type=int, default=20, help="kill -9 runs per durability mode (default 20)")
    ap.add_argument("--only", choices=("requests", "durability"), help="run only one part")
    args = ap.parse_args(argv)
    if args.only != "requests":
        await durability(args.requests, args.crash_runs)
    if args.only == "durability":
        return
    figures: dict[str, float] = {}
    for server_side in (True, False):
        proc, ns_port, port = start(server_side)
        try:
            if server_side:
                print("offset requests, 64 in flight, one connection:", flush=True)
                rates = await request_rates(port, args.requests)
                plain = rates["GET_MAX_OFFSET (plain)"]
                for name in ("QUERY_CONSUMER_OFFSET", "UPDATE_CONSUMER_OFFSET"):
                    print(f"  {name}: {rates[name] / plain:.2f}x the plain request rate")
            latency = await reset_latency(f"127.0.0.1:{ns_port}", args.messages)
            label = "on" if server_side else "off"
            figures[label] = latency
            print(f"reset to the first re-consumed message, 4 consumers, server-side reset {label}: "
                  f"{latency * 1000:.0f} ms", flush=True)
        finally:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    uvloop.run(main())
