"""The emulator in this process: `EmulatorThread` runs an Emulator on free loopback ports with its own store, on
a uvloop in a background thread, so that blocking clients (the C++ client in a subprocess, sockets) and other
event loops can talk to it while a test inspects the broker's state (`call`, `run`)."""

from __future__ import annotations

import asyncio
import errno
import threading
from pathlib import Path
from typing import Any, Callable, Coroutine, TypeVar

import uvloop

from rocketmq_emulator.broker.config import EmulatorConfig
from rocketmq_emulator.broker.controller import BrokerController
from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.broker.settings import emulator_config

from .ports import free_broker_port, free_port

T = TypeVar("T")

#: a `message_delay_level` of 18 one-second levels: retries and delayed messages come back within a second
DELAY_1S = " ".join(["1s"] * 18)


class EmulatorThread:
    """Runs an Emulator on a uvloop in a background thread (`overrides`: settings by Java key or field name,
    e.g. `message_delay_level=DELAY_1S` or `maxMessageSize=1024`, through the settings' parser)."""

    def __init__(self, store_dir: Path, **overrides: Any) -> None:
        self.store_dir = store_dir
        self.overrides = overrides
        self.namesrv_port = free_port()
        self.broker_port = free_broker_port(overrides.get("brokers", 1))
        self.loop = uvloop.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="emulator", daemon=True)
        self.thread.start()
        self.emulator: Emulator | None = None

    def config(self) -> EmulatorConfig:
        return emulator_config({"namesrvPort": self.namesrv_port, "listenPort": self.broker_port,
                                "storePathRootDir": str(self.store_dir), "mappedFileSizeCommitLog": 16 * 1024 * 1024},
                               **self.overrides)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], T], timeout: float = 30) -> T:
        """Run a plain function on the emulator's loop (state is not thread-safe)."""
        async def wrapper() -> T:
            return fn()
        return self.run(wrapper(), timeout)

    def start(self) -> EmulatorThread:
        """Start on the ports chosen; at the first start, a port another process took since it was found free
        (EADDRINUSE) is chosen again, up to three times (a restart keeps its ports: tests rely on them)."""
        for attempt in range(3):
            self.emulator = Emulator(self.config())
            try:
                self.run(self.emulator.start())
                self._started = True
                return self
            except OSError as exc:
                self._stop_quietly()
                if exc.errno != errno.EADDRINUSE or getattr(self, "_started", False) or attempt == 2:
                    raise
                self.namesrv_port = free_port()
                self.broker_port = free_broker_port(self.overrides.get("brokers", 1))
        raise AssertionError("unreachable")

    def _stop_quietly(self) -> None:
        emulator, self.emulator = self.emulator, None
        if emulator is not None:
            try:
                self.run(emulator.stop())
            except Exception:  # noqa: BLE001 - a half-started emulator: what could be stopped is
                pass

    def stop(self) -> None:
        if self.emulator is not None:
            self.run(self.emulator.stop())
            self.emulator = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        try:
            self.stop()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
            self.loop.close()

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker(self) -> BrokerController:
        """The (first) broker; its state may be read or changed only on the emulator's loop (`call`)."""
        assert self.emulator is not None
        return self.emulator.broker


def held_pulls_on_loop(broker: BrokerController, topic: str) -> int:
    """Pulls `broker` holds for `topic` (long polling); call on the emulator's loop."""
    return sum(len(v) for k, v in broker.pull_hold_service.table.items() if k[0] == topic)


def held_pulls(emu: EmulatorThread, topic: str) -> int:
    """Pulls the broker holds for `topic`: a consumer waiting there is ready for new messages."""
    return emu.call(lambda: held_pulls_on_loop(emu.broker, topic))
