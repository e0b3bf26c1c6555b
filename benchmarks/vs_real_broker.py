"""The real Apache RocketMQ 4.9.8 broker and this emulator side by side, in the same run (figures, not a test).

    .venv/bin/python -m benchmarks.vs_real_broker [--seconds 3] [--rounds 3] [--messages 800000] [--quick]

The real one is the upstream name server + broker of `../shared/realbroker` (built into /tmp/realrmq by its
`build.sh` when `bin/up` is missing), started with `bin/up` in a fresh directory: JVMs with -Xms256m -Xmx256m
and the distribution's TLS mode (permissive; `RMQ_JAVA_OPTS` is passed through and printed). The emulator is
`rocketmq-emulator serve --ephemeral` in its own process, started as `benchmarks.broker_bench` starts it. Both
listen on free 127.0.0.1 ports only. The load generator is broker_bench's (pipelined requests built with
`protocol/`, a fixed window in flight on one connection), the same for both.

Figures (medians of `--rounds`, the two brokers measured in turn, round by round, the order alternating):

1. launch to first registration: from launching the process(es) (`bin/up`, which starts the name server, waits
   for its boot and starts the broker; `serve`, one process) until GET_BROKER_CLUSTER_INFO (106) on the name
   server port lists the broker's address, polled every 10 ms on one connection;
2. RSS (VmRSS of /proc/PID/status, summed over the name server and the broker for the real one, and over the
   emulator's process tree) 2 s after the broker is ready (for the real one: after `up` returns, whose own
   `mqadmin clusterList` check is not counted); then after `--messages` messages of 100 B (batches of 32) are
   stored, before the throughput rounds;
3. SEND_MESSAGE_V2 100 B, 64 in flight on one connection;
4. SEND_BATCH_MESSAGE 32 x 100 B per request, 16 in flight;
5. PULL_MESSAGE 32 per request, 64 in flight, of the messages stored in one topic (4 queues) beforehand;
   with 3-5 also the broker's CPU time per message (user + system of all its processes, from /proc/PID/stat
   around each run), which the machine's other load moves less than the rates;
6. the official Java 4.9.8 client's `DefaultMQProducer`: `/tmp/javarmq/bin/rmq-java Produce` (synchronous
   `send()`, one message at a time, one JSON line printed per send), timed from the line of the send at 10 % of
   the count to its last line, so the JVM start and the client's warm-up are left out.

Before anything is timed but the start-up, each broker gets 2 x 50,000 single sends and 2 x 50,000 messages in
batches (on this machine the JVM's first 50,000 single sends ran at a fifth of its later rate: the JIT); they
count towards `--messages`. Each start-up round starts a fresh pair; the pair of the last round stays up for the
other figures. Every process this starts is stopped at the end, also on Ctrl-C, SIGTERM or an error.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Callable

import uvloop

from rocketmq_emulator.protocol import FrameDecoder, RemotingCommand, RequestCode, encode_command_bytes
from rocketmq_emulator.protocol.headers import CreateTopicRequestHeader, GetMaxOffsetRequestHeader
from rocketmq_emulator.protocol.message import decode_messages
from rocketmq_emulator.testing.parity.real import REAL_49, ensure_built
from rocketmq_emulator.testing.ports import free_broker_port, free_port

from .broker_bench import drive, pull_frames, send_frames, start_broker

JAVA = Path("/tmp/javarmq/bin/rmq-java")
TOPICS = ("BenchSend", "BenchBatch", "BenchPull", "BenchFill", "BenchJava")
POLL = 0.01


# -- requests outside the load generator -------------------------------------------------------------------------
def request(port: int, code: int, ext: dict[str, str] | None = None, timeout: float = 10.0) -> RemotingCommand:
    """One request over a fresh connection; its answer (raises OSError when nothing listens)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(encode_command_bytes(RemotingCommand.request(code, ext, opaque=1)))
        decoder = FrameDecoder()
        while True:
            data = s.recv(1 << 20)
            if not data:
                raise ConnectionError("closed before answering")
            decoder.feed(data)
            for cmd in decoder:
                return cmd


class ClusterPoll:
    """GET_BROKER_CLUSTER_INFO (106) to a name server, again and again on one connection (made again when it
    fails, e.g. before the name server listens): does the answer list `broker_addr`?"""

    def __init__(self, ns_port: int, broker_addr: str) -> None:
        self.ns_port = ns_port
        self.needle = f'"{broker_addr}"'.encode()
        self.sock: socket.socket | None = None
        self.decoder = FrameDecoder()
        self.frame = encode_command_bytes(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, opaque=1))

    def listed(self) -> bool:
        try:
            if self.sock is None:
                self.sock = socket.create_connection(("127.0.0.1", self.ns_port), timeout=5.0)
                self.decoder = FrameDecoder()
            self.sock.sendall(self.frame)
            while True:
                data = self.sock.recv(1 << 20)
                if not data:
                    raise ConnectionError("closed")
                self.decoder.feed(data)
                for cmd in self.decoder:
                    return cmd.code == 0 and self.needle in cmd.body
        except OSError:
            self.close()
            return False

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def create_topics(port: int) -> None:
    for topic in TOPICS:
        h = CreateTopicRequestHeader(topic=topic, read_queue_nums=4, write_queue_nums=4, perm=6)
        answer = request(port, RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext())
        if answer.code != 0:
            raise SystemExit(f"UPDATE_AND_CREATE_TOPIC {topic} on port {port}: {answer.code} {answer.remark}")


def max_offset(port: int, topic: str, queue: int) -> int:
    answer = request(port, RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic=topic, queue_id=queue).to_ext())
    return int((answer.ext_fields or {}).get("offset", -1))


def dispatched(port: int, topic: str, stored: int, limit: float = 60.0) -> list[int]:
    """The max offsets of the 4 queues of `topic` once they add up to the `stored` messages answered SUCCESS (the
    real broker puts a message in its consume queue in a thread of its own, after answering the send)."""
    deadline = time.perf_counter() + limit
    while True:
        offsets = [max_offset(port, topic, q) for q in range(4)]
        if sum(offsets) >= stored:
            return offsets
        if time.perf_counter() > deadline:
            raise SystemExit(f"{topic} on port {port}: {sum(offsets):,} of {stored:,} messages dispatched after "
                             f"{limit:.0f} s")
        time.sleep(0.05)


def pull_size(port: int, topic: str) -> int:
    """Messages one PULL of 32 at offset 0 returns (the figures assume 32)."""
    frame = pull_frames(topic, 32, queues=1)[0]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(frame)
        decoder = FrameDecoder()
        while True:
            decoder.feed(s.recv(1 << 20))
            for cmd in decoder:
                return len(decode_messages(cmd.body)) if cmd.code == 0 else 0


# -- memory ----------------------------------------------------------------------------------------------------
def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def tree(pid: int) -> list[int]:
    """`pid` and its descendants (from /proc/*/stat)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time so far of `pids` (/proc/PID/stat)."""
    total = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


# -- the two brokers -----------------------------------------------------------------------------------------------
class Side:
    label = ""
    ns_port = 0
    port = 0
    startup = 0.0

    def __init__(self, live: list[Side]) -> None:
        raise NotImplementedError

    def rss(self) -> dict[str, float]:
        raise NotImplementedError

    def processes(self) -> list[int]:
        raise NotImplementedError

    def cpu(self) -> float:
        return cpu_seconds(self.processes())

    def stop(self) -> None:
        raise NotImplementedError


class Real(Side):
    label = "real 4.9.8"

    def __init__(self, live: list[Side]) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="vs-real-"))
        self.env: dict[str, str] = {}
        with open(self.dir / "up.out", "wb") as out:
            t0 = time.perf_counter()
            self.up = subprocess.Popen([str(REAL_49.bin("up")), str(self.dir)], stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        live.append(self)  # stopped by the caller's `finally` from here on
        deadline = t0 + 120
        env_file = self.dir / "env"
        poll: ClusterPoll | None = None
        try:
            while True:
                if poll is None:
                    self.read_env(env_file)  # `up` writes NAMESRV and BROKER once it has launched the broker
                    if self.port:
                        poll = ClusterPoll(self.ns_port, f"127.0.0.1:{self.port}")
                if poll is not None and poll.listed():
                    break
                if self.up.poll() is not None or time.perf_counter() > deadline:
                    raise SystemExit(f"the real broker did not register:\n{self.log()}")
                time.sleep(POLL)
            self.startup = time.perf_counter() - t0
        finally:
            if poll is not None:
                poll.close()
        try:
            self.up.wait(120)  # its own `mqadmin clusterList` check, a JVM of its own
        except subprocess.TimeoutExpired:
            raise SystemExit("bin/up did not return") from None
        if self.up.returncode != 0:
            raise SystemExit(f"bin/up failed:\n{self.log()}")
        self.read_env(env_file)

    def log(self) -> str:
        return "".join((self.dir / name).read_text(errors="replace")[-1500:] for name in
                       ("up.out", "namesrv.out", "broker.out") if (self.dir / name).exists())

    def read_env(self, env_file: Path) -> None:
        try:
            lines = env_file.read_text().splitlines()
        except OSError:
            return
        self.env = dict(line.split("=", 1) for line in lines if "=" in line)
        if "NAMESRV" in self.env:
            self.ns_port = int(self.env["NAMESRV"].rsplit(":", 1)[1])
        if "BROKER" in self.env:
            self.port = int(self.env["BROKER"].rsplit(":", 1)[1])

    def pids(self) -> dict[str, int]:
        return {"name server": int(self.env["NAMESRV_PID"]), "broker": int(self.env["BROKER_PID"])}

    def processes(self) -> list[int]:
        return list(self.pids().values())

    def rss(self) -> dict[str, float]:
        parts = {name: rss_mb(pid) for name, pid in self.pids().items()}
        return {"total": sum(parts.values()), **parts}

    def stop(self) -> None:
        if self.up.poll() is None:  # stopped while `up` still runs: its process group is ours
            try:
                os.killpg(self.up.pid, signal.SIGTERM)
                self.up.wait(20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.up.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.up.wait()
        self.read_env(self.dir / "env")
        if "NAMESRV_PID" in self.env:
            subprocess.run([str(REAL_49.bin("down")), str(self.dir)], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for key in ("BROKER_PID", "NAMESRV_PID"):  # down gives up after SIGKILL; make sure, by PID
                pid = int(self.env.get(key, "0") or 0)
                if pid and alive_in(pid, self.dir):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)


def alive_in(pid: int, directory: Path) -> bool:
    """`pid` runs and is one of ours (its command line names our directory: not a reused PID)."""
    try:
        return str(directory).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class Emulator(Side):
    label = "emulator"

    def __init__(self, live: list[Side]) -> None:
        self.ns_port, self.port = free_port(), free_broker_port()
        t0 = time.perf_counter()
        self.proc, _ = start_broker(self.ns_port, self.port)  # broker_bench's launch: `serve --ephemeral`
        live.append(self)
        deadline = t0 + 60
        poll = ClusterPoll(self.ns_port, f"127.0.0.1:{self.port}")
        try:
            while not poll.listed():
                if self.proc.poll() is not None or time.perf_counter() > deadline:
                    raise SystemExit("the emulator did not register")
                time.sleep(POLL)
            self.startup = time.perf_counter() - t0
        finally:
            poll.close()

    def processes(self) -> list[int]:
        return tree(self.proc.pid)

    def rss(self) -> dict[str, float]:
        return {"total": sum(rss_mb(p) for p in self.processes())}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# -- loads -----------------------------------------------------------------------------------------------------------
def send_run(port: int, topic: str, n: int, batch: int = 0, window: int = 64) -> tuple[float, int, int]:
    """msg/s, messages stored, requests failed."""
    frames = send_frames(topic, 100, batch=batch)
    elapsed, ok, failed = asyncio.run(drive(port, frames, n, window=window))
    per = batch or 1
    return ok * per / elapsed, ok * per, failed


def pull_run(port: int, per_queue: int) -> tuple[float, int, int]:
    """msg/s, messages pulled, requests failed."""
    frames = pull_frames("BenchPull", per_queue)
    elapsed, ok, failed = asyncio.run(drive(port, frames, len(frames)))
    return ok * 32 / elapsed, ok * 32, failed


def java_produce(ns_port: int, count: int) -> tuple[float, int]:
    """The official Java client's DefaultMQProducer: msg/s from the send at 10 % of `count` to the last one, and
    the sends not SEND_OK."""
    proc = subprocess.Popen([str(JAVA), "Produce", f"127.0.0.1:{ns_port}", str(count), "BenchJava", "TagA",
                             "PID_vs_real"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    first = count // 10
    t_first = t_last = 0.0
    sent = bad = 0
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            now = time.perf_counter()
            if '"event":"sent"' in line:
                if sent == first:
                    t_first = now
                sent += 1
                t_last = now
                if '"status":"SEND_OK"' not in line:
                    bad += 1
            elif '"event":"send_error"' in line:
                bad += 1
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if sent <= first + 1:
        return 0.0, bad + count - sent
    return (sent - 1 - first) / (t_last - t_first), bad + count - sent


# -- the run -----------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="sizes each throughput run (about this long at "
                                                               "the emulator's usual rates)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every figure; medians printed")
    ap.add_argument("--messages", type=int, default=800_000, help="100 B messages stored before the loaded RSS")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 1 round, 0.3 s runs, 100,000 messages")
    args = ap.parse_args(argv)
    if args.quick:
        args.seconds, args.rounds, args.messages = 0.3, 1, min(args.messages, 100_000)
    uvloop.install()
    single_n = max(2_000, int(25_000 * args.seconds))
    batch_n = max(100, int(4_000 * args.seconds))
    per_queue = max(1_024, int(64_000 * args.seconds / 3)) // 32 * 32
    java_n = max(1_000, int(3_000 * args.seconds))
    warm_n = 5_000 if args.quick else 50_000  # the JVM sends at a fifth of its speed for the first 50k
    if args.messages < per_queue * 4 + 4 * warm_n:
        raise SystemExit(f"--messages must be at least {per_queue * 4 + 4 * warm_n:,} (the pull topic and warm-up)")

    def say(text: str) -> None:
        print(text, flush=True)

    if not REAL_49.bin("up").exists():
        say("building the real broker (../shared/realbroker/build.sh) ...")
    ensure_built(REAL_49)
    opts = os.environ.get("RMQ_JAVA_OPTS", "")
    tls = "TLS mode as set there" if "tls.server.mode" in opts else "the distribution's TLS mode: permissive"
    say(f"real broker: Apache RocketMQ 4.9.8 (/tmp/realrmq), RMQ_JAVA_OPTS={opts!r} ({tls}), heap -Xms256m -Xmx256m; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    say(f"sizes: single sends {single_n:,}, batches {batch_n:,} x 32, pull {per_queue * 4:,}, Java sends {java_n:,} "
        f"per round; {args.rounds} rounds; loaded RSS after {args.messages:,} messages")

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # through the `finally` below, as Ctrl-C does

    signal.signal(signal.SIGTERM, terminated)
    live: list[Side] = []
    figures: dict[str, dict[str, list[float]]] = {"real 4.9.8": {}, "emulator": {}}
    failures: dict[str, int] = {"real 4.9.8": 0, "emulator": 0}

    def add(side: Side, key: str, value: float) -> None:
        figures[side.label].setdefault(key, []).append(value)

    def order(r: int) -> list[type[Side]]:
        return [Real, Emulator] if r % 2 == 0 else [Emulator, Real]

    try:
        # -- 1, 2: start-up and idle RSS, a fresh pair each round ------------------------------------------------
        pair: dict[str, Side] = {}
        for r in range(args.rounds):
            for kind in order(r):
                say(f"round {r + 1}/{args.rounds}: starting the {kind.label} broker ...")
                side = kind(live)
                time.sleep(2.0)
                mem = side.rss()
                add(side, "startup", side.startup * 1000)
                for part, value in mem.items():
                    add(side, f"idle {part}", value)
                extra = "".join(f", {k} {v:,.0f} MB" for k, v in mem.items() if k != "total")
                own = ""
                if isinstance(side, Real):
                    own = (f" (bin/up's own: name server boot {side.env.get('NS_BOOT_MS')} ms, broker boot "
                           f"{side.env.get('BOOT_MS')} ms, mqadmin clusterList {side.env.get('STARTUP_MS')} ms)")
                say(f"  registered {side.startup * 1000:,.0f} ms after launch{own}; idle RSS {mem['total']:,.0f} MB"
                    f"{extra}")
                if r < args.rounds - 1:
                    side.stop()
                    live.remove(side)
                else:
                    pair[side.label] = side
        real, emu = pair["real 4.9.8"], pair["emulator"]

        # -- topics, warm-up, the pull topic, fill to --messages, loaded RSS --------------------------------------
        stored: dict[str, int] = {}
        for side in (real, emu):
            say(f"{side.label}: topics, warm-up, {per_queue * 4:,} messages to pull, filling to {args.messages:,} ...")
            create_topics(side.port)
            n = failed = 0

            def load(topic: str, count: int, batch: int = 0) -> int:
                nonlocal n, failed
                _, done, bad = send_run(side.port, topic, count, batch=batch, window=16 if batch else 64)
                n += done
                failed += bad
                return done

            for _ in range(2):  # the JVM's JIT compilers (and the emulator's first files)
                load("BenchSend", warm_n)
                load("BenchBatch", warm_n // 32, batch=32)
            in_pull = load("BenchPull", per_queue * 4 // 32, batch=32)
            for _ in range(20):  # a batch refused (the real broker's "broker busy") is sent again
                offsets = dispatched(side.port, "BenchPull", in_pull)
                if min(offsets) >= per_queue:
                    break
                in_pull += load("BenchPull", -(-(per_queue - min(offsets)) // 32) * 4, batch=32)
            for _ in range(20):
                if args.messages - n >= 32:
                    load("BenchFill", (args.messages - n) // 32, batch=32)
                elif args.messages > n:
                    load("BenchFill", args.messages - n)
            stored[side.label] = n
            if failed:
                say(f"  {failed:,} requests not answered SUCCESS while filling (sent again)")
            got = pull_size(side.port, "BenchPull")
            if got != 32:
                say(f"  note: a PULL of 32 returned {got} messages")
        time.sleep(2.0)
        for side in (real, emu):
            mem = side.rss()
            for part, value in mem.items():
                add(side, f"loaded {part}", value)
            extra = "".join(f", {k} {v:,.0f} MB" for k, v in mem.items() if k != "total")
            say(f"  {side.label}: RSS after {stored[side.label]:,} messages {mem['total']:,.0f} MB{extra}")

        # -- 3-6: throughput, alternating --------------------------------------------------------------------------
        for r in range(args.rounds):
            for kind in order(r):
                side = pair[kind.label]
                say(f"round {r + 1}/{args.rounds}: {side.label}: sends, batches, pull, Java producer "
                    f"(load average {os.getloadavg()[0]:.1f}) ...")
                runs: tuple[tuple[str, Callable[[], tuple[float, int, int]]], ...] = (
                    ("send", partial(send_run, side.port, "BenchSend", single_n)),
                    ("batch", partial(send_run, side.port, "BenchBatch", batch_n, batch=32, window=16)),
                    ("pull", partial(pull_run, side.port, per_queue)))
                for key, run in runs:
                    cpu = side.cpu()
                    rate, done, failed = run()
                    add(side, key, rate)
                    add(side, f"{key} cpu", (side.cpu() - cpu) / max(done, 1) * 1e6)
                    failures[side.label] += failed
                rate, failed = java_produce(side.ns_port, java_n)
                add(side, "java", rate)
                failures[side.label] += failed
                last = {k: v[-1] for k, v in figures[side.label].items()}
                say(f"  single {last['send']:,.0f}, batch {last['batch']:,.0f}, pull {last['pull']:,.0f}, "
                    f"Java {rate:,.0f} msg/s; broker CPU per message {last['send cpu']:.1f} / {last['batch cpu']:.1f} "
                    f"/ {last['pull cpu']:.1f} us")

        # -- the table -----------------------------------------------------------------------------------------------
        rows = (("startup", "launch to first registration (GET_BROKER_CLUSTER_INFO)", "ms", "lower"),
                ("idle total", "idle RSS (name server + broker)", "MB", "lower"),
                ("idle name server", "  real: name server", "MB", ""),
                ("idle broker", "  real: broker", "MB", ""),
                ("loaded total", f"RSS after {args.messages:,} x 100 B", "MB", "lower"),
                ("loaded name server", "  real: name server", "MB", ""),
                ("loaded broker", "  real: broker", "MB", ""),
                ("send", "SEND_MESSAGE_V2 100 B, 64 in flight", "msg/s", "higher"),
                ("send cpu", "  broker CPU per message (all its processes)", "us", "lower"),
                ("batch", "SEND_BATCH_MESSAGE 32 x 100 B, 16 in flight", "msg/s", "higher"),
                ("batch cpu", "  broker CPU per message", "us", "lower"),
                ("pull", "PULL_MESSAGE 32 per request, 64 in flight", "msg/s", "higher"),
                ("pull cpu", "  broker CPU per message", "us", "lower"),
                ("java", "Java 4.9.8 DefaultMQProducer, sync send()", "msg/s", "higher"))
        say(f"\nmedians of {args.rounds} round(s) (load average now {os.getloadavg()[0]:.1f}; a shared 2-core "
            f"machine: figures are noisy)")
        say(f"  {'figure':<58} {'real 4.9.8':>14} {'emulator':>14} {'emulator/real':>14}")
        for key, label, unit, better in rows:
            mine, theirs = figures["emulator"].get(key), figures["real 4.9.8"].get(key)
            if theirs is None:
                continue
            fmt = ",.1f" if unit == "us" else ",.0f"
            r_val = statistics.median(theirs)
            if mine is None:
                say(f"  {label:<58} {r_val:>11{fmt}} {unit:<2}")
                continue
            e_val = statistics.median(mine)
            ratio = f"{e_val / r_val:.2f}x" if r_val else "-"
            say(f"  {label:<58} {r_val:>11{fmt}} {unit:<5} {e_val:>8{fmt}} {unit:<5} {ratio:>8}  "
                f"({better} is better)")
        for label, n in failures.items():
            if n:
                say(f"  {label}: {n:,} requests or sends not successful during the rounds (not counted as messages)")
        for side in (real, emu):
            mem = side.rss()
            say(f"  {side.label}: RSS at the end {mem['total']:,.0f} MB")
    finally:
        for side in live:
            try:
                side.stop()
            except Exception as exc:  # keep stopping the others
                print(f"stopping {side.label}: {exc}", flush=True)


if __name__ == "__main__":
    main()
