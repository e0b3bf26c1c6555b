"""Fixtures: an emulator on free loopback ports with a temporary store, run in its own event-loop thread so
that blocking clients (the C++ client in a subprocess, sockets) can talk to it from the test."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any, Callable, Coroutine, TypeVar

import pytest
import uvloop

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.client.pytest_plugin import free_broker_port, free_port  # noqa: F401 - used by tests

T = TypeVar("T")


class EmulatorThread:
    """Runs an Emulator on a uvloop in a background thread."""

    def __init__(self, store_dir: Path, **overrides: Any) -> None:
        self.store_dir = store_dir
        self.overrides = overrides
        self.namesrv_port = free_port()
        self.broker_port = free_broker_port(overrides.get("brokers", 1))
        self.loop = uvloop.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="emulator", daemon=True)
        self.thread.start()
        self.emulator: Emulator | None = None

    def config(self) -> BrokerConfig:
        cfg = BrokerConfig(namesrv_port=self.namesrv_port, broker_port=self.broker_port, store_dir=str(self.store_dir),
                           mapped_file_size_commitlog=16 * 1024 * 1024)
        for key, value in self.overrides.items():
            setattr(cfg, key, value)
        return cfg

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], T], timeout: float = 30) -> T:
        """Run a plain function on the emulator's loop (state is not thread-safe)."""
        async def wrapper() -> T:
            return fn()
        return self.run(wrapper(), timeout)

    def start(self) -> EmulatorThread:
        self.emulator = Emulator(self.config())
        self.run(self.emulator.start())
        return self

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
    def broker(self):
        assert self.emulator is not None
        return self.emulator.broker


@pytest.fixture
def emulator(tmp_path: Path):
    logging.getLogger("rocketmq_emulator").setLevel(logging.INFO)
    emu = EmulatorThread(tmp_path / "store").start()
    try:
        yield emu
    finally:
        emu.close()


@pytest.fixture
def emulator_factory(tmp_path: Path):
    """Build an emulator with config overrides: `emulator_factory(message_delay_level="1s ...")`."""
    made: list[EmulatorThread] = []

    def make(**overrides: Any) -> EmulatorThread:
        emu = EmulatorThread(tmp_path / f"store{len(made)}", **overrides).start()
        made.append(emu)
        return emu

    yield make
    for emu in made:
        emu.close()


@pytest.fixture
def cpp_home(tmp_path: Path) -> Path:
    home = tmp_path / "cpp-home"
    home.mkdir()
    return home



@pytest.fixture(scope="session")
def java_clients(tmp_path_factory: pytest.TempPathFactory):
    """The official Java 4.9.8 client drivers and mqadmin (integration_tests/java/), compiled once a session."""
    from .java_client import JavaClients
    return JavaClients.prepare(tmp_path_factory.mktemp("java"))
