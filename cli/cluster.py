"""`serve --brokers N --processes`: this process runs the name server and starts one process per broker
(`serve --role broker`), so that the brokers use the machine's cores; they start and stop together, with one ready
line (README "A cluster of processes").

Each broker process gets its settings from a broker.conf written for it (every broker and store setting of its
config that is not the default) plus the process flags (host, log level, topics, groups, ...); nothing reaches it
through `ROCKETMQ_EMULATOR_*` variables, which are removed from its environment. Its log lines come out on this
process's standard error prefixed with `[broker-b] `. A broker process that ends unasked is reported (ERROR: its
name, pid and exit status); the name server drops its routes when its connection closes, as 4.9.8's does. The
name server's STOP_BROKER / START_BROKER (`admin stopBroker` / `startBroker`) stop a broker's process cleanly and
start it again on the same port and store; `kill_broker` (SIGKILL) and `pause_broker` (SIGSTOP, then SIGCONT)
are for failover tests (testing/).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, ResponseCode
from rocketmq_emulator.protocol.emulator_requests import EmulatorRequestCode
from rocketmq_emulator.protocol.transport import RemotingConnection

from rocketmq_emulator.broker.config import BrokerConfig, EmulatorConfig, ServeRole
from rocketmq_emulator.broker.broker_controls import register_broker_controls
from rocketmq_emulator.broker.emulator import Emulator, serve
from rocketmq_emulator.broker.settings import SETTINGS, current, rooted_at, slave_of, text_of

log = logging.getLogger("rocketmq_emulator")

#: how long a broker process may take to be ready (it binds, recovers its store, registers)
START_TIMEOUT_S = 60.0
#: a broker process asked to stop that has not exited after this long is killed
STOP_TIMEOUT_S = 15.0
#: the child's own start-up lines, not repeated (this process prints the one ready line)
_QUIET = ("rocketmq-emulator ready:", "rocketmq-emulator 0", "rocketmq-emulator 1")


def broker_conf_text(config: BrokerConfig) -> str:
    """A broker.conf giving every broker and store setting of `config` that differs from the default."""
    default = BrokerConfig()
    lines = []
    for key, s in SETTINGS.items():
        if s.scope == "process":
            continue
        value = current(config, key)
        if value is not None and value != current(default, key):
            lines.append(f"{key}={text_of(value)}")
    return "\n".join(lines) + "\n"


@dataclass
class BrokerProcess:
    """One broker's process, as the supervisor sees it."""

    config: BrokerConfig
    proc: asyncio.subprocess.Process | None = None
    info: dict[str, Any] | None = None  # its ready file
    stopping: bool = False
    paused: bool = False
    pumps: tuple[asyncio.Task[None], ...] = ()

    @property
    def name(self) -> str:
        return self.config.broker_name if self.config.broker_id == 0 else \
            f"{self.config.broker_name}/{self.config.broker_id}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None


class BrokerProcesses:
    """The name server here, each broker of `config.brokers` (and `config.slaves` slaves of each: `broker-a/1`)
    in a process of its own."""

    def __init__(self, config: EmulatorConfig, brokers: tuple[BrokerConfig, ...] | None = None) -> None:
        self.config = config
        self.workdir = Path(tempfile.mkdtemp(prefix="rocketmq-emulator-processes-"))
        self.emulator = Emulator(replace(config, role=ServeRole.NAMESRV, processes=False))
        root = self.emulator.store_root  # the temporary store with --ephemeral, else the first broker's
        configs = brokers if brokers is not None else config.brokers
        if config.ephemeral:
            configs = rooted_at(replace(config, brokers=configs), root)
        slaves = [slave_of(m, k, nested=config.ephemeral) for m in configs for k in range(1, config.slaves + 1)]
        self.children = [BrokerProcess(c) for c in (*configs, *slaves)]
        assert self.emulator.namesrv is not None
        table = self.emulator.namesrv.table
        register_broker_controls(table, self)
        table.register(EmulatorRequestCode.ADVANCE_TIME, self._advance_time_request)
        self._watchers: list[asyncio.Task[None]] = []

    @property
    def namesrv_addr(self) -> str:
        return self.emulator.namesrv_addr

    # -- life cycle ---------------------------------------------------------------------------------
    async def start(self) -> None:
        await self.emulator.start()
        try:
            # the masters first: a slave learns its master from its first registration
            await asyncio.gather(*(self._spawn(c) for c in self.children if c.config.broker_id == 0))
            await asyncio.gather(*(self._spawn(c) for c in self.children if c.config.broker_id != 0))
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        for c in self.children:
            c.stopping = True
        await asyncio.gather(*(self._end(c) for c in self.children))
        for w in self._watchers:
            w.cancel()
        await self.emulator.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    async def __aenter__(self) -> BrokerProcesses:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def command(self, c: BrokerProcess) -> list[str]:
        cfg, conf = self.config, self.workdir / f"{c.name.replace('/', '-')}.conf"
        conf.write_text(broker_conf_text(c.config), encoding="utf-8")
        args = [sys.executable, "-m", "rocketmq_emulator.cli", "serve", "--role", "broker",
                "--namesrv-addr", self.namesrv_addr, "--config", str(conf), "--host", cfg.host,
                "--log-level", cfg.log_level.value, "--ready-file", str(self._ready_path(c))]
        if cfg.topics:
            args += ["--topic", ",".join(f"{t}:{q}" for t, q in cfg.topics)]
        if cfg.groups:
            args += ["--group", ",".join(cfg.groups)]
        if cfg.entities_file:
            args += ["--entities", cfg.entities_file]
        if cfg.admin_allowed_addresses is not None:
            args += ["--admin-allow", ",".join(cfg.admin_allowed_addresses)]
        if cfg.wire_trace is not None:
            args += ["--trace", cfg.wire_trace, "--trace-format", cfg.wire_trace_format.value]
        return args

    def _ready_path(self, c: BrokerProcess) -> Path:
        return self.workdir / f"{c.name.replace('/', '-')}.ready.json"

    async def _spawn(self, c: BrokerProcess) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETMQ_EMULATOR_")}
        ready = self._ready_path(c)
        ready.unlink(missing_ok=True)
        c.stopping, c.paused, c.info = False, False, None
        c.proc = await asyncio.create_subprocess_exec(*self.command(c), env=env, stdin=asyncio.subprocess.DEVNULL,
                                                      stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        c.pumps = tuple(asyncio.get_running_loop().create_task(self._pump(c, stream))
                        for stream in (c.proc.stdout, c.proc.stderr) if stream is not None)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready.exists():
            if c.proc.returncode is not None:
                await asyncio.gather(*c.pumps, return_exceptions=True)
                raise RuntimeError(f"broker {c.name}'s process ended before it was ready ({_status(c.proc.returncode)})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"broker {c.name}'s process was not ready within {START_TIMEOUT_S:g} s")
            await asyncio.sleep(0.02)
        c.info = json.loads(ready.read_text(encoding="utf-8"))
        self._watchers.append(asyncio.get_running_loop().create_task(self._watch(c, c.proc)))

    async def _pump(self, c: BrokerProcess, stream: asyncio.StreamReader) -> None:
        """The broker process's output on this one's standard error, each line prefixed with its name."""
        while line := await stream.readline():
            text = line.decode("utf-8", "replace").rstrip("\n")
            if not any(q in text for q in _QUIET):
                sys.stderr.write(f"[{c.name}] {text}\n")
                sys.stderr.flush()

    async def _watch(self, c: BrokerProcess, proc: asyncio.subprocess.Process) -> None:
        code = await proc.wait()
        if not c.stopping:
            log.error("broker %s (pid %d) ended unasked (%s); the name server removes its routes as its connection "
                      "closed", c.name, proc.pid, _status(code))

    async def _end(self, c: BrokerProcess) -> None:
        proc = c.proc
        if proc is None or proc.returncode is not None:
            return
        c.stopping = True
        if c.paused:
            proc.send_signal(signal.SIGCONT)
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
        except asyncio.TimeoutError:
            log.warning("broker %s (pid %d) did not stop within %g s: killed", c.name, proc.pid, STOP_TIMEOUT_S)
            proc.kill()
            await proc.wait()
        await asyncio.gather(*c.pumps, return_exceptions=True)

    # -- one broker away and back ---------------------------------------------------------------------
    def find(self, name: str) -> BrokerProcess:
        for c in self.children:
            if c.name == name or (c.config.broker_name == name and c.config.broker_id == 0):
                return c
        known = ", ".join(c.name for c in self.children)
        raise BrokerError(ResponseCode.SYSTEM_ERROR, f"no broker named {name!r} here (there are {known})")

    async def stop_broker(self, name: str, route_delay: float = 0.0) -> None:
        """A clean stop of one broker's process (it unregisters at once: `route_delay` is for brokers in one
        process)."""
        c = self.find(name)
        if not c.running:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"broker {name} is already stopped")
        await self._end(c)
        log.info("broker %s stopped", c.name)

    async def start_broker(self, name: str) -> None:
        """Start a stopped (or killed) broker's process again: the same port (the one bound the first time), store
        and name."""
        c = self.find(name)
        if c.running:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"broker {name} is running")
        if c.info is not None:  # the ports it had: its clients' and its slaves' addresses stay right
            first = c.info["brokers"][0]
            ha = first.get("haAddr")
            c.config = replace(c.config, listen_port=int(first["port"]), store=replace(
                c.config.store, ha_listen_port=int(ha.rpartition(":")[2]) if ha else None))
        await self._spawn(c)
        log.info("broker %s started again (pid %d)", c.name, c.proc.pid if c.proc else 0)

    async def kill_broker(self, name: str) -> None:
        """SIGKILL a broker's process, as a crash: no clean stop, no unregistration."""
        c = self.find(name)
        if not c.running or c.proc is None:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"broker {name} is not running")
        c.stopping = True
        c.proc.kill()
        await c.proc.wait()
        log.info("broker %s killed (SIGKILL)", c.name)

    def pause_broker(self, name: str, paused: bool = True) -> None:
        """SIGSTOP (paused) or SIGCONT a broker's process: it holds its connections and answers nothing."""
        c = self.find(name)
        if not c.running or c.proc is None:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"broker {name} is not running")
        c.proc.send_signal(signal.SIGSTOP if paused else signal.SIGCONT)
        c.paused = paused

    async def _advance_time_request(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        raise BrokerError(ResponseCode.SYSTEM_ERROR, "advancing the clock is not available with --processes (each "
                                                     "broker process has its own clock): run the brokers in one "
                                                     "process for it")

    # -- what serve prints ------------------------------------------------------------------------------
    def ready_info(self) -> dict[str, Any]:
        info = self.emulator.ready_info()
        info["role"] = "all"
        info["processes"] = True
        info["brokers"] = [b for c in self.children if c.info is not None for b in c.info["brokers"]]
        for c, b in zip([c for c in self.children if c.info is not None], info["brokers"]):
            b["pid"] = c.proc.pid if c.proc is not None else None
        return info

    def ready_line(self) -> str:
        brokers = ", ".join(f"{c.name}@{c.info['brokers'][0]['addr']} (pid {c.proc.pid if c.proc else '?'})"
                            for c in self.children if c.info is not None)
        store = "ephemeral" if self.config.ephemeral else self.emulator.store_root
        return (f"rocketmq-emulator ready: namesrv {self.namesrv_addr} (set namesrvAddr to it), broker {brokers}, "
                f"one process each, cluster {self.config.broker.broker_cluster_name}, store {store}")


def _status(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


async def serve_processes(config: EmulatorConfig, started: float | None = None) -> None:
    """`serve --processes`: run until SIGTERM/SIGINT, as `emulator.serve` does for one process."""
    await serve(config, started, BrokerProcesses)
