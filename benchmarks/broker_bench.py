"""Broker throughput, latency, start-up and memory, against a raw ceiling (figures, not a test).

    .venv/bin/python -m benchmarks.broker_bench [--seconds 3] [--rss-messages 1000000]

The broker runs in its own process (`python -m rocketmq_emulator.broker serve --ephemeral`); this process is the load
generator: pipelined requests built with `protocol/`, a fixed window in flight per connection. The raw ceiling
is a minimal uvloop server (in its own process too) that only splits frames by their length word and acks
each one; the same generator drives it, and every broker figure is printed with its ratio to the ceiling.

Where the time goes (the profile to take before changing the send path):
`.venv/bin/python -m benchmarks.profile_send [--batch]` (in-process, cProfile, no network).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import uvloop

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, encode_command_bytes
from rocketmq_emulator.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeader
from rocketmq_emulator.protocol.message import BatchItem, encode_batch, encode_properties

ROOT = Path(__file__).resolve().parents[1]
_LEN = struct.Struct(">i")

CEILING_SERVER = r'''
import asyncio, struct, sys, uvloop
ACK = bytes.fromhex(sys.argv[2])
class P(asyncio.Protocol):
    def connection_made(self, t): self.t = t; self.buf = b""
    def data_received(self, d):
        buf = self.buf + d if self.buf else d
        pos, n, acks = 0, len(buf), 0
        while n - pos >= 4:
            total = struct.unpack_from(">i", buf, pos)[0]
            if n - pos < 4 + total: break
            pos += 4 + total; acks += 1
        self.buf = buf[pos:]
        if acks: self.t.write(ACK * acks)
async def main():
    srv = await asyncio.get_running_loop().create_server(P, "127.0.0.1", int(sys.argv[1]))
    print("ready", flush=True)
    await srv.serve_forever()
uvloop.run(main())
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Generator(asyncio.Protocol):
    """Keeps `window` requests in flight; a response (any) releases the next request. Responses are counted by
    their code (`"code":0` at the start of the JSON header means success)."""

    def __init__(self, frames: list[bytes], window: int, total: int, record_latency: bool = False) -> None:
        self.frames = frames
        self.window = window
        self.total = total
        self.sent = 0
        self.ok = 0
        self.failed = 0
        self.buf = b""
        self.done = asyncio.get_event_loop().create_future()
        self.record_latency = record_latency
        self.send_times: list[float] = []
        self.latencies: list[float] = []
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def fire(self, n: int) -> None:
        frames = self.frames
        out = []
        now = time.perf_counter()
        for _ in range(min(n, self.total - self.sent)):
            out.append(frames[self.sent % len(frames)])
            self.sent += 1
            if self.record_latency:
                self.send_times.append(now)
        if out:
            self.transport.writelines(out)  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        pos, n, got = 0, len(buf), 0
        now = time.perf_counter()
        while n - pos >= 8:
            total = _LEN.unpack_from(buf, pos)[0]
            if n - pos < 4 + total:
                break
            if buf.startswith(b'{"code":0,', pos + 8):
                self.ok += 1
            else:
                self.failed += 1
            if self.record_latency:
                self.latencies.append(now - self.send_times[self.ok + self.failed - 1])
            pos += 4 + total
            got += 1
        self.buf = buf[pos:]
        if self.ok + self.failed >= self.total:
            if not self.done.done():
                self.done.set_result(None)
        elif got and not self.record_latency:
            self.fire(got)


async def drive(port: int, frames: list[bytes], total: int, window: int = 64) -> tuple[float, int, int]:
    loop = asyncio.get_running_loop()
    _, gen = await loop.create_connection(lambda: Generator(frames, window, total), "127.0.0.1", port)
    start = time.perf_counter()
    gen.fire(window)
    await gen.done
    elapsed = time.perf_counter() - start
    gen.transport.close()  # type: ignore[union-attr]
    return elapsed, gen.ok, gen.failed


async def drive_fixed_rate(port: int, frames: list[bytes], rate: int, seconds: float) -> list[float]:
    loop = asyncio.get_running_loop()
    total = int(rate * seconds)
    _, gen = await loop.create_connection(lambda: Generator(frames, 0, total, record_latency=True),
                                          "127.0.0.1", port)
    start = time.perf_counter()
    while gen.sent < total:
        due = int((time.perf_counter() - start) * rate) + 1
        if due > gen.sent:
            gen.fire(due - gen.sent)
        await asyncio.sleep(0.0005)
    await asyncio.wait_for(gen.done, 30)
    gen.transport.close()  # type: ignore[union-attr]
    return sorted(gen.latencies)


def send_frames(topic: str, body_size: int, n: int = 64, batch: int = 0) -> list[bytes]:
    frames = []
    for i in range(n):
        h = SendMessageRequestHeader(producer_group="bench", topic=topic, queue_id=i % 4, born_timestamp=int(
            time.time() * 1000), properties=encode_properties({"TAGS": "TagA", "UNIQ_KEY": f"{i:032X}"}),
            batch=batch > 0)
        if batch:
            body = encode_batch([BatchItem(b"x" * body_size, {"TAGS": "TagA", "UNIQ_KEY": f"{i:016X}{j:016X}"})
                                 for j in range(batch)])
            code = RequestCode.SEND_BATCH_MESSAGE
        else:
            body, code = b"x" * body_size, RequestCode.SEND_MESSAGE_V2
        frames.append(encode_command_bytes(RemotingCommand.request(code, h.to_v2().to_ext(), body, opaque=i)))
    return frames


def pull_frames(topic: str, per_queue: int, queues: int = 4) -> list[bytes]:
    frames = []
    for q in range(queues):
        for k in range(per_queue // 32):
            h = PullMessageRequestHeader(consumer_group="bench", topic=topic, queue_id=q, queue_offset=k * 32,
                                         max_msg_nums=32, sys_flag=0x4, subscription="*")
            frames.append(encode_command_bytes(RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext(),
                                                                       opaque=len(frames))))
    return frames


def rss_kib(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS", "RssAnon", "RssFile")):
            key, value = line.split(":")
            out[key] = int(value.split()[0])
    return out


def wait_port(port: int, deadline: float) -> bool:
    while time.perf_counter() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.05):
                return True
        except OSError:
            time.sleep(0.002)
    return False


def start_broker(ns_port: int, port: int) -> tuple[subprocess.Popen, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rocketmq_emulator.broker", "serve", "--ephemeral", "--namesrv-port", str(ns_port),
                             "--broker-port", str(port), "--log-level", "WARNING"], cwd=ROOT)
    if not wait_port(port, t0 + 20):
        proc.kill()
        raise SystemExit("broker did not start")
    return proc, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="approximate duration of each throughput run")
    ap.add_argument("--rss-messages", type=int, default=1_000_000, help="messages stored before the RSS reading")
    args = ap.parse_args(argv)
    uvloop.install()
    rows: list[tuple[str, str, str]] = []

    def say(label: str, value: str, ratio: str = "") -> None:
        rows.append((label, value, ratio))
        print(f"  {label:<44} {value:>18} {ratio}", flush=True)

    # -- raw ceiling ----------------------------------------------------------------------------------
    ack = encode_command_bytes(RemotingCommand(0, flag=1, ext_fields={"msgId": "0" * 32, "queueId": "0",
                                                                     "queueOffset": "0"}))
    ceil_port = free_port()
    ceiling = subprocess.Popen([sys.executable, "-c", CEILING_SERVER, str(ceil_port), ack.hex()], stdout=subprocess.PIPE,
                               text=True)
    ceiling.stdout.readline()
    print("raw ceiling (frame split + ack), 64 in flight:", flush=True)
    ceil = {}
    for size in (100, 1024):
        frames = send_frames("BenchCeil", size)
        n = int(40_000 * args.seconds)
        elapsed, ok, _ = asyncio.run(drive(ceil_port, frames, n))
        ceil[size] = ok / elapsed
        say(f"ceiling, send-sized frames of {size} B", f"{ceil[size]:,.0f} req/s")
    ceiling.terminate()

    # -- broker ---------------------------------------------------------------------------------------
    ns_port, port = free_port(), free_port()
    broker, startup = start_broker(ns_port, port)
    print("broker:", flush=True)
    say("start-up (process start to first accepted connection)", f"{startup * 1000:,.0f} ms")
    time.sleep(0.5)
    say("idle RSS", f"{rss_kib(broker.pid)['VmRSS'] / 1024:,.1f} MB")
    try:
        for size in (100, 1024):
            frames = send_frames(f"Bench{size}", size)
            asyncio.run(drive(port, frames, 2000))  # warm-up: creates the topic
            n = int(15_000 * args.seconds)
            elapsed, ok, failed = asyncio.run(drive(port, frames, n))
            rate = ok / elapsed
            say(f"SEND_MESSAGE_V2 {size} B, 64 in flight", f"{rate:,.0f} msg/s", f"({rate / ceil[size]:.0%} of ceiling)"
                + (f" {failed} failed" if failed else ""))
        frames = send_frames("BenchBatch", 100, batch=32)
        n = int(1500 * args.seconds)
        elapsed, ok, failed = asyncio.run(drive(port, frames, n, window=16))
        say("SEND_BATCH_MESSAGE 32 x 100 B, 16 in flight", f"{ok * 32 / elapsed:,.0f} msg/s",
            f"({ok / elapsed / ceil[100]:.0%} of ceiling in requests)" + (f" {failed} failed" if failed else ""))
        # pull: fill 4 queues, then pull them back 32 at a time
        per_queue = 64_000
        fill = send_frames("BenchPull", 100, n=64, batch=32)
        asyncio.run(drive(port, fill, per_queue * 4 // 32, window=16))
        frames = pull_frames("BenchPull", per_queue)
        elapsed, ok, failed = asyncio.run(drive(port, frames, len(frames)))
        say("PULL 32 x 100 B, 64 in flight", f"{ok * 32 / elapsed:,.0f} msg/s",
            f"({ok / elapsed / ceil[100]:.0%} of ceiling in requests)" + (f" {failed} failed" if failed else ""))
        latency_frames = send_frames("BenchLatency", 100)
        asyncio.run(drive(port, latency_frames, 4000))  # warm-up: the topic and its queue files exist
        lat = asyncio.run(drive_fixed_rate(port, latency_frames, 10_000, min(args.seconds, 3)))
        say("send latency at 10k msg/s offered: p50", f"{lat[len(lat) // 2] * 1000:.2f} ms")
        say("send latency at 10k msg/s offered: p99", f"{lat[int(len(lat) * 0.99)] * 1000:.2f} ms")
        stored = 64_000 * 4 + 2000 + n * 32 + int(15_000 * args.seconds) * 2
        remaining = max(0, args.rss_messages - stored)
        if remaining:
            print(f"  filling to {args.rss_messages:,} messages ...", flush=True)
            asyncio.run(drive(port, send_frames("BenchRss", 100, batch=32), remaining // 32, window=16))
        mem = rss_kib(broker.pid)
        say(f"RSS after {args.rss_messages:,} messages", f"{mem['VmRSS'] / 1024:,.1f} MB",
            f"(anon {mem.get('RssAnon', 0) / 1024:,.1f} MB, file-backed mmap {mem.get('RssFile', 0) / 1024:,.1f} MB)")
        t0 = time.perf_counter()
        broker.terminate()
        broker.wait(10)
        say("shutdown on SIGTERM", f"{(time.perf_counter() - t0) * 1000:,.0f} ms")
    finally:
        if broker.poll() is None:
            broker.kill()


if __name__ == "__main__":
    main()
