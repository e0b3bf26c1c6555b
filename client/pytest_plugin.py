"""pytest plugin: a RocketMQ broker for a test session, clients that clean up after themselves, and faults on
demand. Installing `rocketmq-emulator` registers it (entry point `pytest11`); README "pytest plugin".

Fixtures:

* `rocketmq_broker` (session): the emulator in a subprocess on free loopback ports with a temporary store (a
  crash is a real crash). `namesrv_addr`, `broker_addr`, `store_dir`, `admin()` (an `async with` Admin),
  `create_topic()`, and the faults: `expire_now(topic)` (retention: every stored message expires),
  `restart(clean=True)` (SIGTERM; `clean=False` is SIGKILL, then recovery), `drop_connections()`, `pause()` /
  `resume()` (SIGSTOP / SIGCONT: connections stay open, nothing is answered).
* `rocketmq_producer`, `rocketmq_consumer`: async factories of started clients, stopped after the test.
* `rocketmq_topic`: a fresh topic (4 queues) per test.

With `--rocketmq-brokers N` the emulator runs N brokers (broker-a, broker-b, ...) and topics are created on all
of them; `rocketmq_broker.stop_broker(name)` / `start_broker(name)` take one away and bring it back.

Options: `--rocketmq-namesrv ADDR` runs the same tests against a broker started elsewhere (a real RocketMQ or
the container; the faults that need the process, or would reach beyond the session's topics and clients, are
skipped with the reason), `--rocketmq-keep-store` keeps the store of a session with failures (its path is
printed). The emulator traces its traffic (`serve --trace`) and a failed test's report gets a "rocketmq wire
trace" section (`pytest_trace.py`); `--rocketmq-no-trace` turns that off. Unless the project sets
pytest-asyncio's `asyncio_default_fixture_loop_scope`, the plugin sets it to `function`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

import pytest

from rocketmq_emulator.protocol import ResponseCode
from rocketmq_emulator.protocol.trace import trace_time

from .admin import Admin
from .errors import BrokerResponseError
from .producer import Producer
from .push_consumer import PushConsumer
from .pytest_trace import trace_section, wait_until_quiet  # noqa: F401 - benchmarks import wait_until_quiet

T = TypeVar("T")
READY = "rocketmq-emulator ready:"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocketmq", "RocketMQ emulator")
    group.addoption("--rocketmq-namesrv", default=None, metavar="HOST:PORT",
                    help="use the broker behind this name server instead of starting an emulator")
    group.addoption("--rocketmq-keep-store", action="store_true", default=False,
                    help="keep the emulator's store when a test failed (its path is printed at the end)")
    group.addoption("--rocketmq-brokers", type=int, default=1, metavar="N",
                    help="brokers in the emulator (broker-a, broker-b, ...; default 1): for cluster tests with "
                         "rocketmq_broker.stop_broker()/start_broker()")
    group.addoption("--rocketmq-no-trace", action="store_true", default=False,
                    help="do not trace the emulator's traffic (by default a failed test's report shows the "
                         "requests and answers exchanged during the test)")


_TRACE = pytest.StashKey[Path]()  # the session emulator's trace file
_TRACE_START = pytest.StashKey[int]()  # its size when a test started
_TRACE_SINCE = pytest.StashKey[str]()  # the trace time when a test started
_BROKER = pytest.StashKey["RocketMQBroker"]()  # the session's own emulator (not an external broker)

ASYNCIO_LOOP_SCOPE = "asyncio_default_fixture_loop_scope"  # pytest-asyncio's setting, `function` when unset


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """pytest-asyncio warns (5 lines, before anything else) while its fixture loop scope is unset: unless the
    project sets it, set it to `function`, the value pytest-asyncio announces as its future default."""
    try:
        unset = config.getini(ASYNCIO_LOOP_SCOPE) in (None, "")
    except ValueError:  # pytest-asyncio is not installed
        return
    if unset:
        config._inicache[ASYNCIO_LOOP_SCOPE] = "function"  # what getini() answers from now on


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    trace = item.config.stash.get(_TRACE, None)
    item.stash[_TRACE_START] = trace.stat().st_size if trace is not None and trace.exists() else 0
    item.stash[_TRACE_SINCE] = trace_time(time.time())  # an earlier test's lines written later are older


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report = outcome.get_result()
    trace = item.config.stash.get(_TRACE, None)
    if not report.failed or trace is None or "rocketmq_broker" not in getattr(item, "fixturenames", ()):
        return
    broker = item.config.stash.get(_BROKER, None)
    try:
        text = trace_section(trace, item.stash.get(_TRACE_START, 0), item.stash.get(_TRACE_SINCE, ""),
                             broker.namesrv_addr if broker is not None else None)
    except OSError:
        return
    report.sections.append((f"rocketmq wire trace ({call.when})", text))


def free_port(exclude: frozenset[int] | set[int] = frozenset()) -> int:
    """A free TCP port on 127.0.0.1 (not in `exclude`)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in exclude:
            return port


def free_broker_port(brokers: int = 1) -> int:
    """A port P with P and P-2 (the broker's VIP port) free on 127.0.0.1, and for `brokers` > 1 the ports of
    `serve --brokers N` too (P + 10 i and P + 10 i - 2)."""
    for _ in range(200):
        port = free_port()
        if port < 1026 or port + 10 * brokers > 65535:
            continue
        try:
            with contextlib.ExitStack() as stack:
                for i in range(brokers):
                    for p in (port + 10 * i, port + 10 * i - 2):
                        stack.enter_context(socket.socket()).bind(("127.0.0.1", p))
            return port
        except OSError:
            continue
    raise RuntimeError("no free ports for the broker")


def _in_thread(fn: Callable[[], Awaitable[T]]) -> T:
    """Run an async client call on a private event loop in a worker thread: usable from sync and async tests."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(fn())).result()  # type: ignore[arg-type]


class RocketMQBroker:
    """The broker of the session (see the module docstring)."""

    def __init__(self, namesrv_addr: str, broker_addr: str, store_dir: Path | None = None,
                 process: subprocess.Popen[bytes] | None = None, command: list[str] | None = None,
                 log_path: Path | None = None) -> None:
        self.namesrv_addr = namesrv_addr
        self.broker_addr = broker_addr
        self.store_dir = store_dir
        self.log_path = log_path
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
        self._with_admin(lambda admin: admin.create_topic(topic, queues, queues))
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

    def stop_broker(self, broker_name: str, route_delay: float = 0.0) -> None:
        """Take one broker away (`--rocketmq-brokers N`): a clean stop; the name server drops its routes at once
        or `route_delay` seconds later. Clients rebalance onto the other brokers."""
        self._refuse_shared("stop_broker", "stop a broker every client of it uses")
        self._emulator_only(lambda admin: admin.stop_broker(broker_name, route_delay), "stop_broker")

    def start_broker(self, broker_name: str) -> None:
        """Bring a broker taken away with `stop_broker` back (same store and ports)."""
        self._refuse_shared("start_broker", "start a broker of it")
        self._emulator_only(lambda admin: admin.start_broker(broker_name), "start_broker")

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
        t0 = time.monotonic()
        self._process = _spawn(self._command, self.log_path)  # type: ignore[arg-type]
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
        _terminate(proc)


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM and wait for the clean stop; SIGKILL if it takes over 30 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
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


def launch_emulator(root: Path, *serve_args: str, brokers: int = 1) -> RocketMQBroker:
    """`rocketmq-emulator serve` in a subprocess on free loopback ports, its store in `root/store` and its log
    in `root/emulator.log` (also for scripts: the offset crash benchmark uses it)."""
    root.mkdir(parents=True, exist_ok=True)
    ns_port, broker_port = free_port(), free_broker_port(brokers)
    command = [sys.executable, "-m", "rocketmq_emulator.broker", "serve", "--host", "127.0.0.1",
               "--namesrv-port", str(ns_port), "--broker-port", str(broker_port),
               "--store-dir", str(root / "store"), "--brokers", str(brokers), *serve_args]
    log_path = root / "emulator.log"
    return RocketMQBroker(f"127.0.0.1:{ns_port}", f"127.0.0.1:{broker_port}", root / "store",
                          _spawn(command, log_path), command, log_path)


def _external(namesrv: str) -> RocketMQBroker:
    async def first_master() -> str:
        async with Admin(namesrv, instance_name=f"pytest-admin-{uuid.uuid4().hex[:12]}") as admin:
            brokers = [b for b in await admin.cluster_list() if b.broker_id == 0]
        if not brokers:
            raise RuntimeError(f"the name server {namesrv} lists no master broker")
        return brokers[0].addr
    return RocketMQBroker(namesrv, _in_thread(first_master))


@pytest.fixture(scope="session")
def rocketmq_broker(request: pytest.FixtureRequest) -> Any:
    external = request.config.getoption("rocketmq_namesrv")
    if external:
        yield _external(external)
        return
    root = Path(tempfile.mkdtemp(prefix="rocketmq-emulator-pytest-"))
    log_path = root / "emulator.log"
    trace = None if request.config.getoption("rocketmq_no_trace") else root / "trace.log"
    broker = launch_emulator(root, *(("--trace", str(trace)) if trace is not None else ()),
                             brokers=request.config.getoption("rocketmq_brokers"))
    if trace is not None:
        request.config.stash[_TRACE] = trace
        request.config.stash[_BROKER] = broker
    try:
        yield broker
    finally:
        broker.stop()
        keep = request.config.getoption("rocketmq_keep_store") and request.session.testsfailed
        if keep:
            reporter = request.config.pluginmanager.get_plugin("terminalreporter")
            line = f"rocketmq-emulator: store kept at {root / 'store'} (log: {log_path})"
            if reporter is not None:
                reporter.write_line(line)
            else:
                print(line, file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


def _unique(prefix: str, hint: str = "") -> str:
    hint = re.sub(r"[^a-zA-Z0-9_-]", "_", hint)[:60]
    return f"{prefix}_{hint}_{uuid.uuid4().hex[:8]}" if hint else f"{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def rocketmq_topic(rocketmq_broker: RocketMQBroker, request: pytest.FixtureRequest) -> str:
    """A topic of its own for this test, with 4 queues."""
    return rocketmq_broker.create_topic(_unique("t", request.node.name))


try:
    import pytest_asyncio
except ImportError:  # the async factories need pytest-asyncio: say so when one is used
    @pytest.fixture
    def rocketmq_producer() -> None:
        pytest.fail("rocketmq_producer needs pytest-asyncio: pip install 'rocketmq-emulator[pytest]'")

    @pytest.fixture
    def rocketmq_consumer() -> None:
        pytest.fail("rocketmq_consumer needs pytest-asyncio: pip install 'rocketmq-emulator[pytest]'")
else:
    @pytest_asyncio.fixture
    async def rocketmq_producer(rocketmq_broker: RocketMQBroker) -> AsyncIterator[Callable[..., Awaitable[Producer]]]:
        """`producer = await rocketmq_producer()`: a started Producer (keyword arguments as Producer's)."""
        made: list[Producer] = []

        async def make(group: str | None = None, **kwargs: Any) -> Producer:
            producer = Producer(group or _unique("pytest_pg"), namesrv=rocketmq_broker.namesrv_addr, **kwargs)
            await producer.start()
            made.append(producer)
            return producer
        yield make
        for producer in reversed(made):
            await producer.stop()

    @pytest_asyncio.fixture
    async def rocketmq_consumer(rocketmq_broker: RocketMQBroker
                                ) -> AsyncIterator[Callable[..., Awaitable[PushConsumer]]]:
        """`consumer = await rocketmq_consumer(topic, on_message=fn)`: a started PushConsumer subscribed to
        `topic` (`expression` filters tags; other keyword arguments as PushConsumer's). Without `on_message`,
        consume by iteration (`await consumer.getone(5)`, `consumer.ack(msg)`)."""
        made: list[PushConsumer] = []

        async def make(topic: str, group: str | None = None, *, expression: str = "*",
                       on_message: Callable[[Any], Any] | None = None, **kwargs: Any) -> PushConsumer:
            consumer = PushConsumer(group or _unique("pytest_cg"), namesrv=rocketmq_broker.namesrv_addr, **kwargs)
            consumer.subscribe(topic, expression)
            if on_message is not None:
                consumer.on_message(on_message)
            await consumer.start()
            made.append(consumer)
            return consumer
        yield make
        for consumer in reversed(made):
            await consumer.stop()
