"""Fixtures: an emulator on free loopback ports with a temporary store, run in its own event-loop thread so
that blocking clients (the C++ client in a subprocess, sockets) can talk to it from the test
(`rocketmq_emulator.testing.emulator_thread`), and the official clients' drivers."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from rocketmq_emulator.testing.emulator_thread import EmulatorThread


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
