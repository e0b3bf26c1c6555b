"""`Emulator`: one process holding the name server and its brokers (or one of them: `role`); `serve()` runs it, or
`serve --processes`' supervisor (cli/cluster.py), until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

from rocketmq_emulator import native
from rocketmq_emulator.protocol import BrokerError, RemotingCommand, ResponseCode
from rocketmq_emulator.protocol.emulator_requests import (AdvanceTimeRequestHeader, AdvanceTimeResponseHeader,
                                                          EmulatorRequestCode)
from rocketmq_emulator.protocol.entities import read_entities_file
from rocketmq_emulator.protocol.extras import install_hint
from rocketmq_emulator.protocol.transport import RemotingConnection, RemotingServer

from .clock import BrokerClock
from .config import WILDCARD_HOSTS, BrokerConfig, EmulatorConfig, ServeRole
from .controller import BrokerController
from .core.admin_guard import AdminGuard
from .core.read_model import BrokerFront, ReadModel
from .limits import DescriptorWatch, raise_descriptor_limit
from .namesrv import NameServer
from .broker_controls import control_broker, register_broker_controls
from .outer_api import LocalNamesrv, NamesrvLink, RemoteNamesrvs
from .settings import broker_key, rooted_at, slave_of
from .state.delivery_log import DeliveryLog

if TYPE_CHECKING:
    from .dashboard.server import DashboardServer
    from .grpc.server import GrpcEndpoint
    from .trace import Tracer

log = logging.getLogger("rocketmq_emulator")


class _Front(Protocol):
    async def start(self) -> Any: ...


F = TypeVar("F", bound=_Front)


class Emulator:
    """A name server plus the brokers of `config.brokers` (broker-a, broker-b, ...; more: pass `extra_brokers`),
    and with `config.slaves` each one's slaves (broker-a/1, ...). `config.role` NAMESRV runs the name server alone,
    BROKER the brokers alone, registered over TCP with `config.namesrv_addr` (broker/outer_api.py).

    `stop_broker(name)` / `start_broker(name)` take one away and bring it back (also as the emulator requests
    STOP_BROKER / START_BROKER on the name-server port, `admin stopBroker` / `startBroker`). `config` is read,
    never written: with `ephemeral`, the temporary store is `store_root` here, and the brokers' configs are
    rebuilt under it."""

    def __init__(self, config: EmulatorConfig, extra_brokers: list[BrokerConfig] | None = None) -> None:
        self.config = config
        self.tracer: Tracer | None = None
        if config.wire_trace is not None:  # first: a trace file that cannot be opened leaves nothing behind
            from rocketmq_emulator.protocol.trace import TraceFilter  # the wire trace's modules: only when it is on

            from .trace import Tracer
            try:
                self.tracer = Tracer.open(config.wire_trace, fmt=config.wire_trace_format, trace_filter=TraceFilter(
                    config.wire_trace_codes, config.wire_trace_group, config.wire_trace_topic))
            except OSError as exc:
                raise OSError(f"cannot open the trace file {config.wire_trace!r}: {exc.strerror or exc}") from None
        #: the store directory of the first broker (the temporary one with `ephemeral`, removed at stop)
        self.store_root = config.broker.store.store_path_root_dir
        configs = config.brokers
        if config.ephemeral:
            self.store_root = tempfile.mkdtemp(prefix="rocketmq-emulator-")
            configs = rooted_at(config, self.store_root)
        #: the name server of this process (None with role BROKER: its brokers register over TCP)
        self.namesrv: NameServer | None = None
        if config.role is not ServeRole.BROKER:
            self.namesrv = NameServer(config.host, config.namesrv_port, Path(self.store_root) / "namesrv")
        #: the brokers' one clock (fast-forward: `advance_time`)
        self.clock = BrokerClock()
        #: who may send destructive and emulator-only requests (adminAllowedAddresses)
        self.admin_guard = AdminGuard(config.admin_allowed_addresses)
        self._fronts: dict[str, BrokerFront] = {}  # broker name -> its read model and write cores (_broker)
        if config.role is ServeRole.NAMESRV:
            configs = ()
        elif config.slaves and not config.processes:  # each master's slaves, after the masters
            configs = (*configs, *(slave_of(m, k, nested=config.ephemeral) for m in configs
                                   for k in range(1, config.slaves + 1)))
        self.brokers = [self._broker(c) for c in (*configs, *(extra_brokers or ()))]
        self.stopped: set[str] = set()  # keys (broker_key) of brokers taken away with stop_broker or kill_broker
        self.paused: set[str] = set()  # keys of brokers paused with pause_broker
        self.grpc: GrpcEndpoint | None = None  # the 5.x clients' endpoint (grpc_server_port)
        self.dashboard: DashboardServer | None = None  # dashboard_port
        self._route_drops: dict[str, asyncio.TimerHandle] = {}
        if self.namesrv is not None:
            table = self.namesrv.table
            self.admin_guard.protect(table)
            if self.brokers and self.broker.acl is not None:  # with ACL on, the test controls need an admin too
                AdminGuard(None, is_admin=self.broker.acl.is_admin).protect(table)
                self.admin_guard.accounts_required = True  # (and the dashboard's destructive actions are refused)
            register_broker_controls(table, self)
            table.register(EmulatorRequestCode.ADVANCE_TIME, self._advance_time_request)
        self.descriptor_watch = DescriptorWatch()
        self._watch_task: asyncio.Task[None] | None = None
        if self.tracer is not None:
            for server in self.servers():
                server.tracer = self.tracer

    def _broker(self, config: BrokerConfig, vip_channel: bool = True) -> BrokerController:
        link: NamesrvLink = LocalNamesrv(self.namesrv.routes) if self.namesrv is not None \
            else RemoteNamesrvs(self.config.namesrv_addr)
        broker = BrokerController(config, link, host=self.config.host, vip_channel=vip_channel,
                                  namesrv_addr=lambda: self.namesrv_addr, clock=self.clock,
                                  admin_guard=self.admin_guard)
        if config.broker_id == 0:  # the fronts (dashboard, gRPC) see the masters
            if self.config.dashboard_port is not None:  # its message story reads the deliveries
                broker.delivery_log = DeliveryLog()
            self._fronts[config.broker_name] = BrokerFront(ReadModel(broker), broker)
        return broker

    def fronts(self) -> list[BrokerFront]:
        """The running brokers as the fronts (dashboard, gRPC) see them: a read model and the write cores each."""
        return [self._fronts[b.config.broker_name] for b in self.brokers
                if b.config.broker_id == 0 and broker_key(b.config) not in self.stopped]

    def read_model(self, name: str | None = None) -> ReadModel:
        """The read model of broker `name` (default: the first)."""
        return self._fronts[name or self.broker.config.broker_name].read

    def servers(self) -> list[RemotingServer]:
        """Every listening port: the name server's, then each broker's (and its VIP port)."""
        own = [self.namesrv.server] if self.namesrv is not None else []
        return [*own, *(s for b in self.brokers for s in _broker_servers(b))]

    @property
    def broker(self) -> BrokerController:
        return self.brokers[0]

    @property
    def grpc_port(self) -> int | None:
        """The gRPC endpoint's bound port, when it runs."""
        return self.grpc.port if self.grpc is not None else None

    @property
    def namesrv_addr(self) -> str:
        """This process's name server, or (role BROKER) the first of those its brokers register with."""
        if self.namesrv is None:
            return self.config.namesrv_addr[0] if self.config.namesrv_addr else ""
        host = self.config.host
        if host in WILDCARD_HOSTS:  # listening everywhere: name an address a client can use
            host = self.config.broker.broker_ip1
        return f"{host}:{self.namesrv.port}"

    async def start(self) -> None:
        entities = read_entities_file(self.config.entities_file) if self.config.entities_file else None
        if self.tracer is not None:
            self.tracer.start()
        if self.namesrv is not None:
            await self.namesrv.start()
        for b in self.brokers:
            await b.start(self.config.topics, self.config.groups, entities)
        if entities is not None:
            namesrv = self.namesrv
            if namesrv is None and entities.kv:
                log.warning("the entities' %d KV setting(s) belong to the name server: not applied by a broker-only "
                            "process (give the file to the name server's process)", len(entities.kv))
            kv = sum(namesrv.set_kv(s.namespace, s.key, s.value) for s in entities.kv) if namesrv else 0
            log.info("entities of %s: %d topic(s), %d group(s), %d KV setting(s) (%d KV changed), %d account(s)",
                     self.config.entities_file, len(entities.topics), len(entities.groups), len(entities.kv), kv,
                     len(entities.accounts))
        if self.config.grpc_server_port is not None:
            await self._start_grpc(self.config.grpc_server_port)
        if self.config.dashboard_port is not None:
            await self._start_dashboard(self.config.dashboard_port)
        self._watch_task = asyncio.get_running_loop().create_task(self._watch_descriptors())

    async def _start_dashboard(self, port: int) -> None:
        def make() -> DashboardServer:
            from .dashboard.server import DashboardServer  # the [dashboard] extra: imported only when enabled
            return DashboardServer(self, self.config.host, port, read_only=self.config.dashboard_read_only)
        self.dashboard = await self._start_front("the dashboard", "dashboard", make)

    async def _start_grpc(self, port: int) -> None:
        def make() -> GrpcEndpoint:
            from .grpc.server import GrpcEndpoint  # the [grpc] extra: imported only when enabled
            return GrpcEndpoint(self.fronts,
                                self.config.host, port, self.config.broker.broker_ip1, self.config.grpc_tls_port,
                                Path(self.store_root) / "config" / "grpc-tls", tracer=self.tracer)
        self.grpc = await self._start_front("the gRPC endpoint", "grpc", make)

    async def _start_front(self, what: str, extra: str, make: Callable[[], F]) -> F:
        """Make and start an optional front (`make` imports its extra); if either fails, the emulator stops."""
        try:
            front = make()
        except ImportError as exc:
            await self.stop()
            raise RuntimeError(f"{what} needs the [{extra}] extra ({install_hint(extra)}): {exc}") from None
        try:
            await front.start()
        except BaseException:
            await self.stop()
            raise
        return front

    async def _watch_descriptors(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.descriptor_watch.check()

    async def stop(self) -> None:
        if self._watch_task is not None:
            self._watch_task.cancel()
            self._watch_task = None
        for handle in self._route_drops.values():
            handle.cancel()
        self._route_drops.clear()
        if self.dashboard is not None:
            await self.dashboard.stop()
            self.dashboard = None
        if self.grpc is not None:
            await self.grpc.stop()
            self.grpc = None
        for b in self.brokers:
            key = broker_key(b.config)
            if key in self.paused:
                self.pause_broker(key, False)
            if key not in self.stopped:
                await b.stop()
        if self.namesrv is not None:
            await self.namesrv.stop()
        if self.tracer is not None:
            self.tracer.stop()
        if self.config.ephemeral:
            shutil.rmtree(self.store_root, ignore_errors=True)

    # -- one broker away and back -------------------------------------------------------------------
    def find_broker(self, name: str) -> BrokerController:
        """A broker by its key: `broker-a` (the master) or `broker-a/1` (its slave)."""
        for b in self.brokers:
            if broker_key(b.config) == name:
                return b
        known = ", ".join(broker_key(b.config) for b in self.brokers)
        raise BrokerError(ResponseCode.SYSTEM_ERROR, f"no broker named {name!r} in this emulator (it has {known})")

    async def stop_broker(self, name: str, route_delay: float = 0.0) -> None:
        """A clean stop of one broker (its clients' connections close); the name server drops its routes at once
        or `route_delay` seconds later, as a real one does when heartbeats stop."""
        broker = self.find_broker(name)
        if name in self.stopped:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"broker {name} is already stopped")
        self.stopped.add(name)
        self.paused.discard(name)
        await broker.stop(unregister=route_delay <= 0)
        if route_delay > 0:
            self._route_drops[name] = asyncio.get_running_loop().call_later(route_delay, self._drop_routes, name)
        log.info("%s stopped%s", name, f"; its routes go in {route_delay:g} s" if route_delay > 0 else "")

    async def kill_broker(self, name: str) -> None:
        """As a killed process: its connections close, its store is left as a crash leaves it (recovered at the
        next start), its routes go at once (a killed broker's connection to the name server closes)."""
        broker = self.find_broker(name)
        if name in self.stopped:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"broker {name} is already stopped")
        self.stopped.add(name)
        self.paused.discard(name)
        await broker.stop(clean=False)
        log.info("%s killed", name)

    def pause_broker(self, name: str, paused: bool = True) -> None:
        """As a paused process (SIGSTOP): its connections stay open and are accepted, it answers nothing; or go
        on. (In one process, replication and the broker's timers go on meanwhile.)"""
        broker = self.find_broker(name)
        if name in self.stopped:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"broker {name} is stopped")
        for server in _broker_servers(broker):
            server.pause(paused)
        (self.paused.add if paused else self.paused.discard)(name)
        log.info("%s %s", name, "paused" if paused else "resumed")

    def members(self) -> list[dict[str, Any]]:
        """Every broker of this process, masters and slaves (the dashboard's brokers panel): its key (`broker-a`,
        `broker-a/1`), name, id, role, address and state (running, paused or stopped)."""
        out = []
        for b in self.brokers:
            key = broker_key(b.config)
            state = "stopped" if key in self.stopped else "paused" if key in self.paused else "running"
            out.append({"key": key, "name": b.config.broker_name, "id": b.config.broker_id,
                        "role": b.config.store.broker_role.value, "addr": b.broker_addr, "state": state})
        return out

    async def control_broker(self, key: str, what: str) -> str:
        """The dashboard's broker controls: kill, pause, resume, stop or start broker `key`."""
        return await control_broker(self, key, what)

    def _drop_routes(self, name: str) -> None:
        self._route_drops.pop(name, None)
        if name in self.stopped:
            self.find_broker(name).unregister_from_namesrv()
            log.info("%s: routes removed from the name server", name)

    async def start_broker(self, name: str) -> None:
        """Bring a stopped broker back: the same store, ports and name, routes registered again."""
        old = self.find_broker(name)
        if name not in self.stopped:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"broker {name} is running")
        handle = self._route_drops.pop(name, None)
        if handle is not None:
            handle.cancel()
        # the same port: the one bound the first time (also when 0 was asked for); no VIP port if it had none
        config = replace(old.config, listen_port=old.listen_port, store=replace(
            old.config.store, ha_listen_port=old.ha_server.port if old.ha_server is not None else None))
        broker = self._broker(config, vip_channel=old.vip_server is not None)
        for server in _broker_servers(broker):
            server.tracer = self.tracer
        await broker.start(self.config.topics, self.config.groups)
        self.brokers[self.brokers.index(old)] = broker
        self.stopped.discard(name)
        log.info("%s started again on %s", name, broker.broker_addr)

    def advance_time(self, seconds: float) -> dict[str, int]:
        """Fast-forward: every broker-side timer behaves as if `seconds` more had passed, at once and in order of
        due time (BrokerController.run_due_work). Stored timestamps stay real. Returns what happened."""
        if not 0 <= seconds <= 10 * 365 * 24 * 3600:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"advance by 0 to 10 years of seconds, not {seconds}")
        self.clock.advance(seconds)
        total = {"offsetMillis": self.clock.offset_ms, "delivered": 0, "revived": 0, "pullsAnswered": 0,
                 "filesDeleted": 0}
        for b in self.brokers:
            if broker_key(b.config) not in self.stopped:
                for key, n in b.run_due_work().items():
                    total[key] += n
        log.info("clock advanced by %g s (now %g s ahead): %d delayed message(s) delivered, %d POP message(s) "
                 "revived, %d held pull(s) answered, %d file(s) expired", seconds, self.clock.offset_ms / 1000,
                 total["delivered"], total["revived"], total["pullsAnswered"], total["filesDeleted"])
        return total

    async def _advance_time_request(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = AdvanceTimeRequestHeader.from_ext(req.ext_fields)
        done = self.advance_time(h.millis / 1000)
        return RemotingCommand.response_to(req, ext_fields=AdvanceTimeResponseHeader(
            offset_millis=done["offsetMillis"], delivered=done["delivered"], revived=done["revived"],
            pulls_answered=done["pullsAnswered"], files_deleted=done["filesDeleted"]).to_ext())

    async def __aenter__(self) -> Emulator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def ready_info(self) -> dict[str, Any]:
        """What `serve --ready-file` writes: every address a client needs (the bound ports, also for port 0)."""
        def addr(port: int) -> str:
            return f"{self.config.broker.broker_ip1}:{port}"
        return {
            "namesrvAddr": self.namesrv_addr,
            "role": self.config.role.value,
            "cluster": self.config.broker.broker_cluster_name,
            "brokers": [{"name": b.config.broker_name, "id": b.config.broker_id, "addr": b.broker_addr,
                         "port": b.server.port, "vipPort": b.vip_server.port if b.vip_server is not None else None,
                         "haAddr": b.ha_server_addr or None, "pid": os.getpid()} for b in self.brokers],
            "grpcAddr": addr(self.grpc.port) if self.grpc is not None else None,
            "grpcTlsAddr": addr(self.grpc.tls_port) if self.grpc is not None and self.grpc.tls_port is not None
            else None,
            "dashboardUrl": f"http://{addr(self.dashboard.port)}/" if self.dashboard is not None else None,
            "store": None if self.config.ephemeral else str(self.store_root),
            "pid": os.getpid(),
        }

    def ready_line(self) -> str:
        brokers = ", ".join(f"{b.config.broker_name}{f' (slave {b.config.broker_id})' if b.config.broker_id else ''}"
                            f"@{b.broker_addr}" for b in self.brokers)
        store = "ephemeral" if self.config.ephemeral else self.store_root
        namesrv = self.namesrv_addr
        grpc = ""
        if self.grpc is not None:
            tls = f", TLS {self.grpc.tls_port}" if self.grpc.tls_port is not None else ""
            grpc = f", gRPC {self.config.broker.broker_ip1}:{self.grpc.port}{tls} (5.x clients)"
        if self.dashboard is not None:
            grpc += f", dashboard http://{self.config.broker.broker_ip1}:{self.dashboard.port}/"
        lane = "native lane" if native.lane is not None else f"Python path ({native.WHY})"
        if self.namesrv is None:
            return (f"rocketmq-emulator ready: broker {brokers}{grpc}, registered with namesrv "
                    f"{';'.join(self.config.namesrv_addr)}, cluster {self.config.broker.broker_cluster_name}, "
                    f"store {store}, send path: {lane}")
        if not self.brokers:
            return f"rocketmq-emulator ready: namesrv {namesrv} (set namesrvAddr to it; name server only)"
        return (f"rocketmq-emulator ready: namesrv {namesrv} (set namesrvAddr to it), broker {brokers}{grpc}, "
                f"cluster {self.config.broker.broker_cluster_name}, store {store}, send path: {lane}")


def _broker_servers(broker: BrokerController) -> list[RemotingServer]:
    return [broker.server] + ([broker.vip_server] if broker.vip_server is not None else [])


def second_broker(config: BrokerConfig, name: str = "broker-b", port_offset: int = 100) -> BrokerConfig:
    """A config for another broker in the same process and cluster (own port and store directory)."""
    root = config.store.store_path_root_dir.rstrip("/")
    return replace(config, broker_name=name, listen_port=config.listen_port + port_offset if config.listen_port else 0,
                   advertised_port=None, store=replace(config.store, store_path_root_dir=f"{root}-{name}"))


class Served(Protocol):
    """What `serve` runs: the Emulator, or `serve --processes`' supervisor (cli/cluster.py)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def ready_info(self) -> dict[str, Any]: ...

    def ready_line(self) -> str: ...


async def serve(config: EmulatorConfig, started: float | None = None,
                make: Callable[[EmulatorConfig], Served] = Emulator) -> None:
    """Run `make(config)` (the Emulator by default) until SIGTERM/SIGINT. `started` (`time.perf_counter()` clock):
    when the process started, for the ready line's "started in" figure (default: now)."""
    started = time.perf_counter() if started is None else started
    raise_descriptor_limit()
    served = make(config)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    ready_file = Path(config.ready_file) if config.ready_file else None
    if ready_file is not None:
        ready_file.unlink(missing_ok=True)  # a file left by a killed run must not pass for this one's
    await served.start()
    if ready_file is not None:
        try:
            write_ready_file(ready_file, served.ready_info())
        except OSError as exc:
            await served.stop()
            raise OSError(f"cannot write the ready file {str(ready_file)!r}: {exc.strerror or exc}") from None
    log.info("%s (started in %.0f ms)", served.ready_line(), (time.perf_counter() - started) * 1000)
    try:
        await stop.wait()
    finally:
        t0 = time.perf_counter()
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)
        await served.stop()
        log.info("stopped in %.0f ms", (time.perf_counter() - t0) * 1000)


def write_ready_file(path: Path, info: dict[str, Any]) -> None:
    """The ready file, whole or not at all: written beside it, then renamed over it (a reader never sees half)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
