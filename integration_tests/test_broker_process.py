"""The `serve` process as operators meet it: a kill -9 restart says what recovery did, and a broker started
under a 1024 open-file limit keeps serving and flushing with a thousand idle connections."""

from __future__ import annotations

import os
import resource
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.ports import free_broker_port, free_port
from rocketmq_emulator.testing.waits import wait_until

ROOT = Path(__file__).resolve().parents[1]
CLI = COMMAND


class Server:
    """`rocketmq-emulator serve` in a subprocess; its log lines are collected from stderr."""

    def __init__(self, store: Path, soft_nofile: int | None = None) -> None:
        self.store = store
        self.ns_port, self.broker_port = free_port(), free_broker_port()
        self.soft_nofile = soft_nofile
        self.log_path = store.parent / f"serve-{time.monotonic_ns()}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        def limit() -> None:
            if self.soft_nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE,
                                   (self.soft_nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen([*CLI, "serve", "--namesrv-port", str(self.ns_port), "--broker-port",
                                      str(self.broker_port), "--store-dir", str(self.store)], cwd=ROOT,
                                     stderr=self.log, preexec_fn=limit)
        assert wait_until(lambda: "ready:" in self.text(), 30), self.text()
        return self

    def text(self) -> str:
        return self.log_path.read_text()

    @property
    def ns(self) -> str:
        return f"127.0.0.1:{self.ns_port}"

    def kill(self, sig: int = signal.SIGKILL) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)
        self.proc.wait(30)
        self.log.close()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NAMESRV_ADDR": ""})


def test_a_kill_9_restart_logs_one_recovery_line(tmp_path):
    server = Server(tmp_path / "store").start()
    try:
        assert cli("admin", "updateTopic", "-n", server.ns, "-t", "Crash", "-r", "2", "-w", "2").returncode == 0
        assert cli("produce", "-n", server.ns, "-t", "Crash", "-m", "m{i}", "-c", "50").returncode == 0
    finally:
        server.kill()
    assert "recovered after an abnormal stop" not in server.text()

    again = Server(tmp_path / "store").start()
    try:
        lines = [line for line in again.text().splitlines() if "recovered after an abnormal stop" in line]
        assert len(lines) == 1, again.text()
        assert "abort file present" in lines[0] and "kept 50 messages in 2 queues" in lines[0]
        out = cli("consume", "-n", again.ns, "-t", "Crash", "-g", "after", "--from-beginning",
                  "--max-messages", "50")
        assert out.returncode == 0 and len(out.stdout.splitlines()) == 50
    finally:
        again.kill(signal.SIGTERM)
    clean = Server(tmp_path / "store").start()  # a clean stop: nothing to recover, nothing said
    clean.kill(signal.SIGTERM)
    assert "recovered" not in clean.text()


HOLDER = """
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
print(len(held), flush=True)
sys.stdin.read()
"""


def _checkpoint_physic_timestamp(store: Path) -> int:
    return struct.unpack(">q", (store / "checkpoint").read_bytes()[:8])[0]


@pytest.mark.skipif(resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 4096, reason="needs a hard open-file limit "
                    "of at least 4096 to hold 1,000 connections beside a broker")
def test_a_thousand_idle_connections_under_a_1024_soft_limit(tmp_path):
    server = Server(tmp_path / "store", soft_nofile=1024).start()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(server.broker_port), "1000"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "1000"
        # a new client is served: route lookup (name server), then a send and a consume (broker)
        assert cli("admin", "updateTopic", "-n", server.ns, "-t", "Busy", "-r", "1", "-w", "1").returncode == 0
        before = _checkpoint_physic_timestamp(server.store)  # before the send: its flush may come at once
        sent = cli("produce", "-n", server.ns, "-t", "Busy", "-m", "still here")
        assert sent.returncode == 0, sent.stderr
        got = cli("consume", "-n", server.ns, "-t", "Busy", "-g", "busy", "--from-beginning", "--max-messages", "1")
        assert got.returncode == 0 and "still here" in got.stdout
        # the periodic flush goes on: the checkpoint vouches for the new message's store time
        assert wait_until(lambda: _checkpoint_physic_timestamp(server.store) > before, 30)
    finally:
        holder.stdin.close()
        holder.wait(30)
        server.kill(signal.SIGTERM)
    text = server.text()
    assert "Too many open files" not in text and " ERROR " not in text, text


def test_the_descriptor_watch_logs_once_when_the_limit_is_near(tmp_path):
    code = """
import logging, os, resource
from rocketmq_emulator.broker.limits import DescriptorWatch, HEADROOM
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
watch = DescriptorWatch()
fds = []
while len(os.listdir("/proc/self/fd")) < 256 - HEADROOM // 2:
    fds.append(os.open(os.devnull, os.O_RDONLY))
print(watch.check(), watch.check(), flush=True)
for fd in fds:
    os.close(fd)
print(watch.check(), flush=True)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["True", "True", "False"], out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and "out of file descriptors" in errors[0] and "ulimit -n" in errors[0]
    assert "file descriptors available again" in out.stderr
