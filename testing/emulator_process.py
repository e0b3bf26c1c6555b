"""The emulator in a subprocess: `launch_emulator(root)` runs `rocketmq-emulator serve` on free loopback ports
with its store and log under `root`, and returns a `RocketMQBroker`: its addresses, an Admin client, and the
faults a test needs (restart, kill, pause, expire, drop connections, stop one broker of several). A crash is a
real crash. The pytest plugin's `rocketmq_broker` fixture is one; scripts and benchmarks use it too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable, Coroutine, TypeVar

import pytest

from rocketmq_emulator.client.admin import Admin
from rocketmq_emulator.client.errors import BrokerResponseError
from rocketmq_emulator.protocol import ResponseCode

from .command_line import COMMAND
from .ports import free_broker_port, free_port

T = TypeVar("T")
#: what `serve` prints once it accepts connections
READY = "rocketmq-emulator ready:"


def _in_thread(fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run an async client call on a private event loop in a worker thread: usable from sync and async tests."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(fn())).result()


class RocketMQBroker:
    """An emulator `launch_emulator` started, or a broker elsewhere (`external_broker`): see the module docstring."""

    def __init__(self, namesrv_addr: str, broker_addr: str, store_dir: Path | None = None,
                 process: subprocess.Popen[bytes] | None = None, command: list[str] | None = None,
                 log_path: Path | None = None) -> None:
        self.namesrv_addr = namesrv_addr
        self.broker_addr = broker_addr
        self.store_dir = store_dir
        self.log_path = log_path
        #: "127.0.0.1:PORT" of the 5.x clients' gRPC endpoint, when started with one
        self.grpc_endpoint: str | None = None
        #: "http://127.0.0.1:PORT/" of the dashboard, when started with one
        self.dashboard_url: str | None = None
        #: slaves of each broker (`--rocketmq-slaves`)
        self.slaves = 0
        self._process = process
        self._command = command or []
        self._paused = False

    @property
    def external(self) -> bool:
        return self._process is None

    # -- clients ------------------------------------------------------------------------------------
    def admin(self) -> Admin:
        """`async with rocketmq_broker.admin() as admin: ...`"""
        return Admin(self.namesrv_addr, instance_name=f"pytest-admin-{uuid.uuid4().hex[:12]}")

    def create_topic(self, topic: str, queues: int = 4) -> str:
        """On every master; with slaves (`--rocketmq-slaves`), returns once they have it too."""
        self._with_admin(lambda admin: admin.create_topic(topic, queues, queues))
        if self.slaves:
            self._with_admin(lambda admin: _slaves_have(admin, topic))
        return topic

    # -- faults -------------------------------------------------------------------------------------
    def expire_now(self, topic: str | None = None) -> dict[str, int]:
        """Every message stored so far expires (seed 001): each queue's min offset moves to its max. Retention
        works on the whole commit log, so every topic's messages expire, `topic` or not: refused (skipped) on
        a broker this plugin did not start."""
        self._refuse_shared("expire_now", "expire every message of every topic on it")
        return self._emulator_only(lambda admin: admin.expire_now(topic), "expire_now")

    def drop_connections(self) -> int:
        """Close every client connection of the broker; clients must reconnect. Returns how many were closed."""
        self._refuse_shared("drop_connections", "close the connections of every client of it")
        return sum(self._emulator_only(lambda admin: admin.drop_connections(), "drop_connections").values())

    def advance(self, seconds: float) -> dict[str, int]:
        """Fast-forward the broker clock: everything due within `seconds` happens now (delayed messages and
        retries, POP invisible times, transaction check-backs, retention). Emulator only."""
        self._refuse_shared("advance", "move the clock of a broker others may share")
        return self._emulator_only(lambda admin: admin.advance_time(seconds), "advance")

    def stop_broker(self, broker_name: str, route_delay: float = 0.0) -> None:
        """Take one broker away (`--rocketmq-brokers N`): a clean stop; the name server drops its routes at once
        or `route_delay` seconds later. Clients rebalance onto the other brokers."""
        self._refuse_shared("stop_broker", "stop a broker every client of it uses")
        self._emulator_only(lambda admin: admin.stop_broker(broker_name, route_delay), "stop_broker")

    def start_broker(self, broker_name: str) -> None:
        """Bring a broker taken away with `stop_broker` back (same store and ports)."""
        self._refuse_shared("start_broker", "start a broker of it")
        self._emulator_only(lambda admin: admin.start_broker(broker_name), "start_broker")

    def kill_broker(self, broker_name: str) -> None:
        """As a crash: `broker-a` (a master) or `broker-a/1` (a slave, `--rocketmq-slaves`) goes without a clean
        stop; its routes go at once. `start_broker` brings it back."""
        self._refuse_shared("kill_broker", "kill a broker every client of it uses")
        self._emulator_only(lambda admin: admin.kill_broker(broker_name), "kill_broker")

    def pause_broker(self, broker_name: str, paused: bool = True) -> None:
        """One broker answers nothing (its connections stay open) until `pause_broker(name, False)`."""
        self._refuse_shared("pause_broker", "pause a broker every client of it uses")
        self._emulator_only(lambda admin: admin.pause_broker(broker_name, paused), "pause_broker")

    def _refuse_shared(self, what: str, effect: str) -> None:
        """The faults that reach beyond this session's topics and clients run only on the plugin's own emulator:
        the broker behind --rocketmq-namesrv may be a shared one, whose other users' data must stay."""
        if self.external:
            pytest.skip(f"{what}() would {effect}, not only what this test session made; it runs only on the "
                        f"emulator this plugin starts, not on the broker behind --rocketmq-namesrv "
                        f"{self.namesrv_addr}, which others may share")

    def _with_admin(self, call: Callable[[Admin], Awaitable[T]]) -> T:
        """`call(admin)` with a fresh Admin, run to the end on a worker thread's loop."""
        async def run() -> T:
            async with self.admin() as admin:
                return await call(admin)
        return _in_thread(run)

    def _emulator_only(self, call: Callable[[Admin], Awaitable[T]], what: str) -> T:
        try:
            return self._with_admin(call)
        except BrokerResponseError as exc:
            if exc.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                pytest.skip(f"{what}() needs rocketmq-emulator; the broker behind {self.namesrv_addr} is another")
            raise

    def _own_process(self, what: str) -> subprocess.Popen[bytes]:
        if self._process is None:
            pytest.skip(f"{what}() needs the broker this plugin starts; --rocketmq-namesrv points at another one")
        return self._process

    def pause(self) -> None:
        """Stall the broker and its name server (SIGSTOP): connections stay open, nothing is answered."""
        os.kill(self._own_process("pause").pid, signal.SIGSTOP)
        self._paused = True

    def resume(self) -> None:
        os.kill(self._own_process("resume").pid, signal.SIGCONT)
        self._paused = False

    @property
    def pid(self) -> int:
        return self._own_process("pid").pid

    def kill(self) -> None:
        """kill -9: the broker dies at once, nothing flushed; `start()` brings it back through crash recovery."""
        proc = self._own_process("kill")
        proc.kill()
        proc.wait()
        self._paused = False

    def start(self) -> float:
        """Start the stopped (or killed) broker again on the same ports and store; returns the seconds until it
        was ready."""
        proc = self._own_process("start")
        if proc.poll() is None:
            raise RuntimeError("the broker is running: stop() or kill() it first")
        if self.log_path is None:
            raise RuntimeError("no log file to watch for the ready line")  # the process was given one: unreachable
        t0 = time.monotonic()
        self._process = _spawn(self._command, self.log_path)
        return time.monotonic() - t0

    def restart(self, clean: bool = True) -> None:
        """Stop the broker (SIGTERM and wait; `clean=False`: SIGKILL, so the store recovers from a crash) and
        start it again on the same ports and store. Messages acknowledged before are kept either way."""
        self._own_process("restart")
        if clean:
            self.stop()
        else:
            self.kill()
        self.start()

    def stop(self) -> None:
        proc = self._process
        if proc is None or proc.poll() is not None:
            return
        if self._paused:
            self.resume()
        terminate(proc)


def terminate(proc: subprocess.Popen[Any], grace: float = 30.0) -> None:
    """SIGTERM and wait for the clean stop; SIGKILL if it takes over `grace` seconds."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _spawn(command: list[str], log_path: Path, timeout: float = 30.0) -> subprocess.Popen[bytes]:
    """Start the emulator, its log appended to `log_path`; return once it printed its ready line."""
    seen = log_path.read_text(errors="replace").count(READY) if log_path.exists() else 0
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        if text.count(READY) > seen:
            return proc
        if proc.poll() is not None:
            raise RuntimeError(f"rocketmq-emulator exited with status {proc.returncode}:\n{text[-3000:]}")
        time.sleep(0.02)
    proc.kill()
    raise RuntimeError(f"rocketmq-emulator not ready after {timeout} s:\n{log_path.read_text()[-3000:]}")


async def _slaves_have(admin: Admin, topic: str, timeout: float = 10.0) -> None:
    """Wait until every slave lists `topic` (they copy their masters' topics every 200 ms here)."""
    from rocketmq_emulator.protocol import RequestCode
    from rocketmq_emulator.protocol.admin_bodies import TopicConfigSerializeWrapper
    info = await admin.cluster_info()
    slaves = [a for bd in info.broker_addr_table.values() for bid, a in bd.broker_addrs.items() if bid != 0]
    deadline = asyncio.get_running_loop().time() + timeout
    for addr in slaves:
        while True:
            response = await admin.instance.api.call(addr, RequestCode.GET_ALL_TOPIC_CONFIG, operation="topics")
            if topic in TopicConfigSerializeWrapper.decode(response.body).topic_config_table:
                break
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"the slave {addr} has no topic {topic} after {timeout:g} s")
            await asyncio.sleep(0.05)


def _slave_conf(root: Path) -> Path:
    conf = root / "slaves.conf"
    conf.write_text("slaveSynchronizePeriod=200\nregisterNameServerPeriod=1000\n")
    return conf


def launch_emulator(root: Path, *serve_args: str, brokers: int = 1, grpc: bool = False,
                    dashboard: bool = False, slaves: int = 0) -> RocketMQBroker:
    """`rocketmq-emulator serve` in a subprocess on free loopback ports, its store in `root/store` and its log
    in `root/emulator.log` (also for scripts: the offset crash benchmark uses it). `grpc`: also the 5.x
    clients' endpoint (`grpc_endpoint`); `dashboard`: also the dashboard (`dashboard_url`)."""
    root.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):
        ns_port, broker_port = free_port(), free_broker_port(brokers, slaves)
        grpc_port = free_port({ns_port, broker_port, broker_port - 2}) if grpc else None
        dashboard_port = free_port({ns_port, broker_port, broker_port - 2, grpc_port or 0}) if dashboard else None
        command = [*COMMAND, "serve", "--host", "127.0.0.1",
                   "--namesrv-port", str(ns_port), "--broker-port", str(broker_port),
                   "--store-dir", str(root / "store"), "--brokers", str(brokers),
                   # slaves: the masters answer a send once their slave has it (SYNC_MASTER), so that a test that
                   # kills a master finds every acknowledged message on its slave; the slaves copy their masters'
                   # topics every 200 ms (create_topic waits for them)
                   *(("--slaves", str(slaves), "--broker-role", "SYNC_MASTER", "--config",
                      str(_slave_conf(root))) if slaves else ()), *serve_args,
                   *(("--grpc-port", str(grpc_port)) if grpc_port is not None else ()),
                   *(("--dashboard-port", str(dashboard_port)) if dashboard_port is not None else ())]
        log_path = root / "emulator.log"
        try:
            process = _spawn(command, log_path)
        except RuntimeError as e:
            # a port found free was taken before the emulator bound it (another test process, or a client's
            # outgoing connection, got it from the same ephemeral range): choose again
            if "the port is in use" not in str(e) or attempt == 2:  # PortUnavailable's words
                raise
            continue
        broker = RocketMQBroker(f"127.0.0.1:{ns_port}", f"127.0.0.1:{broker_port}", root / "store",
                                process, command, log_path)
        broker.grpc_endpoint = f"127.0.0.1:{grpc_port}" if grpc_port is not None else None
        broker.dashboard_url = f"http://127.0.0.1:{dashboard_port}/" if dashboard_port is not None else None
        broker.slaves = slaves
        return broker
    raise AssertionError("unreachable")


def external_broker(namesrv: str) -> RocketMQBroker:
    """A RocketMQBroker for a broker started elsewhere (no process: the faults that need one are skipped)."""
    async def first_master() -> str:
        async with Admin(namesrv, instance_name=f"pytest-admin-{uuid.uuid4().hex[:12]}") as admin:
            brokers = [b for b in await admin.cluster_list() if b.broker_id == 0]
        if not brokers:
            raise RuntimeError(f"the name server {namesrv} lists no master broker")
        return brokers[0].addr
    return RocketMQBroker(namesrv, _in_thread(first_master))
