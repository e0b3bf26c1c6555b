"""pytest plugin: a RocketMQ broker for a test session, clients that clean up after themselves, and faults on
demand. Installing `rocketmq-emulator` registers it (entry point `pytest11`); README "pytest plugin".

Fixtures:

* `rocketmq_broker` (session): the emulator in a subprocess on free loopback ports with a temporary store (a
  crash is a real crash; `emulator_process.py`). `namesrv_addr`, `broker_addr`, `store_dir`, `admin()` (an
  `async with` Admin), `create_topic()`, and the faults: `expire_now(topic)` (retention: every stored message expires),
  `restart(clean=True)` (SIGTERM; `clean=False` is SIGKILL, then recovery), `drop_connections()`, `pause()` /
  `resume()` (SIGSTOP / SIGCONT: connections stay open, nothing is answered).
* `rocketmq_producer`, `rocketmq_consumer`: async factories of started clients, stopped after the test.
* `rocketmq_topic`: a fresh topic (4 queues) per test.

With `--rocketmq-grpc` the emulator also serves RocketMQ 5.x clients: `rocketmq_broker.grpc_endpoint` is the
"127.0.0.1:PORT" to give a 5.x client's ClientConfiguration (None without the option).

With `--rocketmq-brokers N` the emulator runs N brokers (broker-a, broker-b, ...) and topics are created on all
of them; `rocketmq_broker.stop_broker(name)` / `start_broker(name)` take one away and bring it back. With
`--rocketmq-slaves 1` each has a slave (`broker-a/1`, replicating broker-a); `kill_broker(name)` (a crash) and
`pause_broker(name)` / `pause_broker(name, False)` (it answers nothing) take a master or a slave for failover
tests (README "Master and slave").

Options: `--rocketmq-namesrv ADDR` runs the same tests against a broker started elsewhere (a real RocketMQ or
the container; the faults that need the process, or would reach beyond the session's topics and clients, are
skipped with the reason), `--rocketmq-keep-store` keeps the store of a session with failures (its path is
printed). The emulator traces its traffic (`serve --trace`) and a failed test's report gets a "rocketmq wire
trace" section (`pytest_trace.py`); `--rocketmq-no-trace` turns that off. Unless the project sets
pytest-asyncio's `asyncio_default_fixture_loop_scope`, the plugin sets it to `function`.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

import pytest

from rocketmq_emulator.client.producer import Producer
from rocketmq_emulator.client.push_consumer import PushConsumer
from rocketmq_emulator.protocol.extras import install_hint
from rocketmq_emulator.protocol.trace import trace_time

from .emulator_process import RocketMQBroker, external_broker, launch_emulator
from .pytest_trace import trace_section


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocketmq", "RocketMQ emulator")
    group.addoption("--rocketmq-namesrv", default=None, metavar="HOST:PORT",
                    help="use the broker behind this name server instead of starting an emulator")
    group.addoption("--rocketmq-keep-store", action="store_true", default=False,
                    help="keep the emulator's store when a test failed (its path is printed at the end)")
    group.addoption("--rocketmq-brokers", type=int, default=1, metavar="N",
                    help="brokers in the emulator (broker-a, broker-b, ...; default 1): for cluster tests with "
                         "rocketmq_broker.stop_broker()/start_broker()")
    group.addoption("--rocketmq-slaves", type=int, default=0, metavar="N",
                    help="slaves of each broker (broker-a/1, ...; default 0): for failover tests with "
                         "rocketmq_broker.kill_broker()/pause_broker()")
    group.addoption("--rocketmq-grpc", action="store_true", default=False,
                    help="also serve RocketMQ 5.x clients: rocketmq_broker.grpc_endpoint is the gRPC endpoint "
                         "(needs the [grpc] extra)")
    group.addoption("--rocketmq-compat", default=None, choices=["5", "4.9"],
                    help="answer as Apache RocketMQ 4.9.8 (4.9) or 5.x (5, the default) where they differ "
                         "(serve --compat)")
    group.addoption("--rocketmq-entities", default=None, metavar="FILE",
                    help="declare the emulator's topics, groups and KV settings in FILE (serve --entities; YAML or "
                         "JSON); also the rocketmq_entities ini setting, relative to the rootdir")
    parser.addini("rocketmq_entities", "the emulator's entities file (serve --entities), relative to the rootdir")
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


@pytest.fixture(scope="session")
def rocketmq_broker(request: pytest.FixtureRequest) -> Any:
    external = request.config.getoption("rocketmq_namesrv")
    if external:
        yield external_broker(external)
        return
    root = Path(tempfile.mkdtemp(prefix="rocketmq-emulator-pytest-"))
    log_path = root / "emulator.log"
    trace = None if request.config.getoption("rocketmq_no_trace") else root / "trace.log"
    compat = request.config.getoption("rocketmq_compat")
    entities = request.config.getoption("rocketmq_entities")
    if not entities and request.config.getini("rocketmq_entities"):
        entities = str(request.config.rootpath / str(request.config.getini("rocketmq_entities")))
    broker = launch_emulator(root, *(("--trace", str(trace)) if trace is not None else ()),
                             *(("--compat", compat) if compat else ()),
                             *(("--entities", str(Path(entities).resolve())) if entities else ()),
                             brokers=request.config.getoption("rocketmq_brokers"),
                             slaves=request.config.getoption("rocketmq_slaves"),
                             grpc=request.config.getoption("rocketmq_grpc"))
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
    @pytest.fixture(name="rocketmq_producer")
    def _producer_needs_pytest_asyncio() -> None:
        pytest.fail(f"rocketmq_producer needs pytest-asyncio: {install_hint('pytest')}")

    @pytest.fixture(name="rocketmq_consumer")
    def _consumer_needs_pytest_asyncio() -> None:
        pytest.fail(f"rocketmq_consumer needs pytest-asyncio: {install_hint('pytest')}")
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
