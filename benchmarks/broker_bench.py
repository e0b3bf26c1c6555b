"""Broker throughput, latency, start-up and memory, against a raw ceiling (figures, not a test).

    .venv/bin/python -m benchmarks.broker_bench [--seconds 3] [--rounds N] [--rss-messages 1000000] [--compare REV]
                                                [--trace-cost]

The broker runs in its own process (`python -m rocketmq_emulator.cli serve --ephemeral`); this process is the load
generator: pipelined requests built with `protocol/`, a fixed window in flight per connection. The raw ceiling
is a minimal uvloop server (in its own process too) that only splits frames by their length word and acks
each one; the same generator drives it, and every broker figure is printed with its ratio to the ceiling.
`--compare REV` runs the broker of another git revision too (its tree from `git archive`, imported ahead of
this checkout) in the same run, the two measured round by round in turn (a slow spell of a shared machine hits
both), and prints this checkout's medians as multiples of that one's. `--trace-cost` does the same with this
checkout's broker tracing every request and answer to a file (`serve --trace`): the wire trace's cost when on;
its cost when off is `--compare` with the revision before the trace existed.

Where the time goes (the profile to take before changing the send path):
`.venv/bin/python -m benchmarks.profile_send [--batch]` (in-process, cProfile, no network).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import uvloop

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, encode_command_bytes
from rocketmq_emulator.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeader
from rocketmq_emulator.protocol.message import BatchItem, encode_batch, encode_properties
from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.ports import free_broker_port, free_port
from rocketmq_emulator.testing.waits import wait_until_quiet

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


def pull_frames(topic: str, per_queue: int, queues: int = 4, interleave: bool = False) -> list[bytes]:
    """PULL 32 requests reading each queue from its start: queue by queue, or (`interleave`) round robin over
    the queues, so a window of `queues` holds one request per queue."""
    frames = []
    order = [(q, k) for k in range(per_queue // 32) for q in range(queues)] if interleave else \
        [(q, k) for q in range(queues) for k in range(per_queue // 32)]
    for q, k in order:
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


def checkout(rev: str, into: Path) -> Path:
    """The tree of git revision `rev` (`git archive`), importable as `rocketmq_emulator` from the returned
    directory placed first on PYTHONPATH (ahead of this checkout's editable install), its native lane compiled
    when it has one and a compiler is here."""
    tree = into / "tree"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    if (tree / "setup.py").exists():  # the native lane, built as `pip install` builds it (optional: may fail)
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, capture_output=True)
        if not list((tree / "native").glob("_lane*.so")):  # (this venv's setuptools may be too old for the tree's
            # pyproject: a wheel built in isolation, as `pip install` builds it, then its extension taken)
            wheels = into / "wheel"
            subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(tree)],
                           capture_output=True)
            for wheel in wheels.glob("*.whl"):
                with zipfile.ZipFile(wheel) as z:
                    for name in z.namelist():
                        if name.startswith("rocketmq_emulator/native/_lane") and name.endswith(".so"):
                            (tree / "native" / Path(name).name).write_bytes(z.read(name))
        if not list((tree / "native").glob("_lane*.so")):  # not built: that tree runs its Python path (else its
            # `from . import _lane` would find this checkout's editable extension)
            (into / "python-path").write_text("the native lane could not be built\n")
    pkg = into / "path" / "rocketmq_emulator"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for init in sorted(tree.glob("*/__init__.py")):  # every top-level package folder the revision has
        (pkg / init.parent.name).symlink_to(init.parent)
    return into / "path"


def serve_command(pythonpath: Path | None) -> list[str]:
    """`rocketmq-emulator` of this checkout or of a checked-out revision: revisions before the command line
    had its own layer ran it as `python -m rocketmq_emulator.broker`."""
    if pythonpath is not None and not (pythonpath / "rocketmq_emulator" / "cli").exists():
        return [sys.executable, "-m", "rocketmq_emulator.broker"]
    return list(COMMAND)


def start_broker(ns_port: int, port: int, pythonpath: Path | None = None, extra: tuple[str, ...] = ()
                 ) -> tuple[subprocess.Popen, float]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
        if (pythonpath.parent / "python-path").exists():
            env["ROCKETMQ_EMULATOR_NATIVE"] = "0"
    t0 = time.perf_counter()
    proc = subprocess.Popen([*serve_command(pythonpath), "serve", "--ephemeral",
                             "--namesrv-port", str(ns_port), "--broker-port", str(port), "--log-level", "WARNING",
                             *extra],
                            cwd=ROOT if pythonpath is None else pythonpath, env=env)
    if not wait_port(port, t0 + 20):
        proc.kill()
        raise SystemExit("broker did not start")
    return proc, time.perf_counter() - t0


async def drive_many(port: int, frames: list[bytes], total: int, connections: int) -> tuple[float, int, int]:
    start = time.perf_counter()
    results = await asyncio.gather(*(drive(port, frames, total // connections) for _ in range(connections)))
    elapsed = time.perf_counter() - start
    return elapsed, sum(r[1] for r in results), sum(r[2] for r in results)


class Broker:
    """One broker process under test: this checkout's, or a git revision's (`pythonpath` from `checkout`)."""

    def __init__(self, label: str, pythonpath: Path | None = None, extra: tuple[str, ...] = (),
                 trace_file: Path | None = None) -> None:
        self.label = label
        self.trace_file = trace_file  # with `serve --trace FILE`: the file its renderer writes
        self.ns_port, self.port = free_port(), free_broker_port()
        self.proc, self.startup = start_broker(self.ns_port, self.port, pythonpath, extra)
        self.figures: dict[str, list[float]] = {}
        self.stored = 0

    def warm_up(self) -> None:
        """Create every topic and its queue files, and fill the pull queues."""
        for size in (100, 1024):
            asyncio.run(drive(self.port, send_frames(f"Bench{size}", size), 2000))
        for batch in (32, 256):
            asyncio.run(drive(self.port, send_frames(f"BenchBatch{batch}", 100, batch=batch), 20, window=4))
        asyncio.run(drive(self.port, send_frames("BenchLatency", 100), 4000))
        asyncio.run(drive(self.port, send_frames("BenchPull", 100, n=64, batch=32), PULL_PER_QUEUE * 4 // 32,
                          window=16))
        self.stored = 8000 + 20 * (32 + 256) + 4000 + PULL_PER_QUEUE * 4

    def measure(self, seconds: float) -> None:
        """One round of every throughput and latency figure."""
        port, add = self.port, self.figures.setdefault
        for size in (100, 1024):
            n = int(15_000 * seconds)
            elapsed, ok, _ = asyncio.run(drive(port, send_frames(f"Bench{size}", size), n))
            add(f"send{size}", []).append(ok / elapsed)
            self.stored += n
        n = int(15_000 * seconds)
        elapsed, ok, _ = asyncio.run(drive_many(port, send_frames("Bench100", 100), n, 8))
        add("send100x8", []).append(ok / elapsed)
        self.stored += n
        for batch, window in ((32, 16), (256, 4)):
            n = max(50, int(48_000 * seconds / batch))
            elapsed, ok, _ = asyncio.run(drive(port, send_frames(f"BenchBatch{batch}", 100, batch=batch), n,
                                               window=window))
            add(f"batch{batch}", []).append(ok * batch / elapsed)
            self.stored += n * batch
        frames = pull_frames("BenchPull", PULL_PER_QUEUE)
        elapsed, ok, _ = asyncio.run(drive(port, frames, len(frames)))
        add("pull", []).append(ok * 32 / elapsed)
        frames = pull_frames("BenchPull", PULL_PER_QUEUE // 4, interleave=True)
        elapsed, ok, _ = asyncio.run(drive(port, frames, len(frames), window=4))
        add("pull4", []).append(ok * 32 / elapsed)
        self.wait_for_trace()  # the latency at 10k msg/s is a steady state, not the renderer's backlog of a burst
        lat = asyncio.run(drive_fixed_rate(port, send_frames("BenchLatency", 100), 10_000, min(seconds, 3)))
        add("p50", []).append(lat[len(lat) // 2] * 1000)
        add("p99", []).append(lat[int(len(lat) * 0.99)] * 1000)
        self.stored += len(lat)

    def wait_for_trace(self) -> None:
        """With the trace on: until the renderer has written its backlog (the file stops growing)."""
        if self.trace_file is not None:
            wait_until_quiet(self.trace_file, quiet=0.5, limit=30.0)

    def median(self, key: str) -> float:
        return statistics.median(self.figures[key])

    def stop(self) -> float:
        t0 = time.perf_counter()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return time.perf_counter() - t0


PULL_PER_QUEUE = 64_000
DROPPED = re.compile(r"# trace: (\d+) lines dropped")
FIGURES = (("send100", "SEND_MESSAGE_V2 100 B, 64 in flight", "msg/s"),
           ("send1024", "SEND_MESSAGE_V2 1024 B, 64 in flight", "msg/s"),
           ("send100x8", "SEND_MESSAGE_V2 100 B, 8 connections x 64", "msg/s"),
           ("batch32", "SEND_BATCH_MESSAGE 32 x 100 B, 16 in flight", "msg/s"),
           ("batch256", "SEND_BATCH_MESSAGE 256 x 100 B, 4 in flight", "msg/s"),
           ("pull", "PULL 32 x 100 B, 64 in flight", "msg/s"),
           ("pull4", "PULL 32 x 100 B, 1 in flight per queue, 4 queues", "msg/s"),
           ("p50", "send latency at 10k msg/s offered: p50", "ms"),
           ("p99", "send latency at 10k msg/s offered: p99", "ms"))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="approximate duration of each throughput run")
    ap.add_argument("--rounds", type=int, default=0, help="rounds of every figure, medians printed (default 1, "
                                                          "3 with --compare)")
    ap.add_argument("--rss-messages", type=int, default=1_000_000, help="messages stored before the RSS reading")
    ap.add_argument("--trace-cost", action="store_true",
                    help="also run this checkout's broker with `--trace FILE` (a file in a temporary directory), "
                         "in the same rounds, and print its figures as multiples of the untraced one's")
    ap.add_argument("--compare", metavar="REV", help="also run the broker of git revision REV (e.g. HEAD~1), "
                                                      "alternating with this checkout's round by round, and print "
                                                      "this checkout's figures as multiples of that one's")
    args = ap.parse_args(argv)
    rounds = args.rounds or (3 if args.compare else 1)
    uvloop.install()

    def say(label: str, value: str, ratio: str = "") -> None:
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

    # -- broker(s) ------------------------------------------------------------------------------------
    with tempfile.TemporaryDirectory(prefix="broker-bench-") as tmp:
        brokers = [Broker("this checkout")]
        if args.compare:
            brokers.append(Broker(args.compare, checkout(args.compare, Path(tmp))))
        if args.trace_cost:
            trace = Path(tmp) / "trace.log"
            brokers.append(Broker("this checkout, --trace", extra=("--trace", str(trace)), trace_file=trace))
        try:
            time.sleep(0.5)
            for b in brokers:
                print(f"broker ({b.label}): start-up (process start to first accepted connection) "
                      f"{b.startup * 1000:,.0f} ms, idle RSS {rss_kib(b.proc.pid)['VmRSS'] / 1024:,.1f} MB", flush=True)
                b.warm_up()
            for r in range(rounds):
                for b in brokers:  # alternating: a slow spell of the machine hits both
                    print(f"  round {r + 1}/{rounds}: {b.label} ...", flush=True)
                    b.measure(args.seconds)
                    b.wait_for_trace()  # the renderer's backlog must not slow the next one
            for b in brokers:
                print(f"broker ({b.label}), median of {rounds}:", flush=True)
                for key, label, unit in FIGURES:
                    value = b.median(key)
                    if unit == "ms":
                        say(label, f"{value:.2f} ms")
                    else:
                        per = ceil[100 if key != "send1024" else 1024]
                        requests = value / {"batch32": 32, "batch256": 256, "pull": 32}.get(key, 1)
                        say(label, f"{value:,.0f} msg/s", f"({requests / per:.0%} of ceiling in requests)")
            for other in brokers[1:]:
                traced = other.label.endswith("--trace")
                print(f"{'--trace / untraced' if traced else f'this checkout / {other.label}'} (medians):", flush=True)
                for key, label, unit in FIGURES:
                    mine, theirs = (other, brokers[0]) if traced else (brokers[0], other)
                    say(label + (" (lower is better)" if unit == "ms" else ""),
                        f"{mine.median(key) / theirs.median(key):.2f}x")
            if args.trace_cost:
                trace = brokers[-1].trace_file
                text = trace.read_text(errors="replace") if trace is not None and trace.exists() else ""
                dropped = sum(int(n) for n in DROPPED.findall(text))
                say("trace lines written / dropped", f"{text.count(chr(10)):,} / {dropped:,}")
            for b in brokers[1:]:
                b.stop()
            main_broker = brokers[0]
            remaining = max(0, args.rss_messages - main_broker.stored)
            if remaining:
                print(f"  filling to {args.rss_messages:,} messages ...", flush=True)
                asyncio.run(drive(main_broker.port, send_frames("BenchRss", 100, batch=32), remaining // 32, window=16))
            mem = rss_kib(main_broker.proc.pid)
            say(f"RSS after {max(args.rss_messages, main_broker.stored):,} messages", f"{mem['VmRSS'] / 1024:,.1f} MB",
                f"(anon {mem.get('RssAnon', 0) / 1024:,.1f} MB, file-backed mmap {mem.get('RssFile', 0) / 1024:,.1f} MB)")
            say("shutdown on SIGTERM", f"{main_broker.stop() * 1000:,.0f} ms")
        finally:
            for b in brokers:
                if b.proc.poll() is None:
                    b.proc.kill()


if __name__ == "__main__":
    main()
