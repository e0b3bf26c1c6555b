"""Fixtures: an emulator on free loopback ports with a temporary store, run in its own event-loop thread so
that blocking clients (the C++ client in a subprocess, sockets) can talk to it from the test
(`rocketmq_emulator.testing.emulator_thread`), and the official clients' drivers."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from rocketmq_emulator.testing.emulator_thread import EmulatorThread

#: What each module's tests need beyond Python and the emulator: each test gets these marks (registered in
#: pyproject.toml), so `pytest -m "not java and not container"` and the like select by what a machine has.
#: A module that needs nothing more is listed with (); test_every_module_says_what_it_needs keeps this whole.
NEEDS: dict[str, tuple[str, ...]] = {
    "store/test_store_crash.py": (),
    "store/test_store_disk_full.py": (),
    "store/test_store_flush_descriptors.py": (),
    "test_acl.py": ("java", "cpp", "grpc5"),
    "test_ali_ons.py": ("node",),
    "test_broadcast_offsets.py": ("java",),
    "test_broker_features.py": ("cpp",),
    "test_broker_fuzz.py": (),
    "test_broker_process.py": (),
    "test_broker_protocol.py": ("cpp",),
    "test_broker_stats.py": ("java",),
    "test_cli_input.py": (),
    "test_cli_ports.py": (),
    "test_cluster.py": ("parity-record",),
    "test_client_broadcasting.py": (),
    "test_client_cli.py": (),
    "test_client_clustering.py": (),
    "test_client_cpp.py": ("cpp",),
    "test_client_errors.py": (),
    "test_client_pull.py": (),
    "test_client_retry_orderly.py": (),
    "test_client_server_requests.py": (),
    "test_consumer_admin.py": ("java", "cpp"),
    "test_container.py": ("container", "cpp", "grpc5"),
    "test_container_tools.py": ("container",),
    "test_cpp_client.py": ("cpp",),
    "test_dashboard.py": ("browser", "cpp"),
    "test_dashboard_api.py": (),
    "test_deferred_handlers.py": (),
    "test_docs.py": (),
    "test_docs_examples.py": (),
    "test_entities.py": ("java", "grpc5"),
    "test_failover.py": ("java", "go"),
    "test_fast_forward.py": ("cpp", "grpc5"),
    "test_fresh_interpreter.py": (),
    "test_go_client.py": ("go",),
    "test_golden_frames.py": ("cpp",),
    "test_grpc_bounds.py": (),
    "test_grpc_clients.py": ("cpp", "grpc5"),
    "test_ha_real_broker.py": ("parity-record",),
    "test_java_client.py": ("java", "cpp"),
    "test_mqadmin_admin.py": ("java",),
    "test_mqadmin_commands.py": ("java",),
    "test_multi_broker.py": ("cpp",),
    "test_namespaces.py": ("java", "grpc5"),
    "test_offset_durability.py": (),
    "test_offset_journal_disk_full.py": (),
    "test_offset_transfer.py": ("cpp",),
    "test_offsets.py": ("cpp",),
    "test_packaging.py": (),
    "test_parity_acl.py": (),
    "test_parity_clients.py": ("java", "cpp", "go"),
    "test_parity_grpc.py": (),
    "test_parity_ha.py": (),
    "test_parity_py5.py": ("grpc5",),
    "test_parity_record.py": ("parity-record",),
    "test_parity_remoting.py": (),
    "test_pytest_plugin.py": (),
    "test_python_path.py": ("cpp",),
    "test_release.py": (),  # send/pull unit tests and TCP modules again, ROCKETMQ_EMULATOR_NATIVE=0
    "test_request_reply.py": ("java",),
    "test_reset_durability.py": ("java",),
    "test_send_refusals.py": (),
    "test_send_run.py": (),
    "test_spark.py": ("spark",),
    "test_spark_seed_command.py": ("spark",),
    "test_sql92_filter.py": ("java",),
    "test_start_refusals.py": (),
    "test_trace.py": ("cpp", "grpc5"),
    "test_trace_render.py": (),
    "test_transactions.py": ("java",),
    "test_types.py": (),
}


#: Tests that go to one worker together under pytest-xdist, by module (or by node id prefix: "module::test[id"):
#: the scheduler in the root conftest.py sends each group's tests to one worker, one after the other; every other
#: test is scheduled on its own. Two reasons to list a module: a costly shared set-up (a session or module
#: fixture, made once per worker that runs one of the module's tests otherwise), or tests that each fill both
#: cores (Spark), which run faster one at a time than side by side.
SHARED_SETUP: dict[str, str] = {
    "test_java_client.py": "java-world",        # the session's Java/C++/Python world (java_world.py)
    "test_consumer_admin.py": "java-world",
    "test_mqadmin_commands.py": "mqadmin-batch",  # every README mqadmin command in one JVM
    "test_spark.py": "spark",                     # one Spark session
    "test_spark_seed_command.py": "spark",        # Spark jobs of their own: one at a time
    "test_docs_examples.py::test_docs_python_block_runs[user/spark.md": "spark",
    "test_container.py": "container",             # the image, built once
    "test_container_tools.py": "container",
    "test_release.py": "release",                 # the sdist and wheel, built once
    "test_parity_ha.py": "ha-parity",             # one master-slave set-up of emulator processes
    "test_broker_stats.py": "broker-stats",       # the stats scenario (a consumer read for 10 s, mqadmin)
}


def worker_group(nodeid: str) -> str | None:
    """The SHARED_SETUP group of a test (its node id as pytest gives it, from the project root), or None."""
    name = nodeid.removeprefix("integration_tests/")
    module = name.split("::", 1)[0]
    if module in SHARED_SETUP:
        return SHARED_SETUP[module]
    return next((group for prefix, group in SHARED_SETUP.items() if "::" in prefix and name.startswith(prefix)), None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        path = Path(str(item.path))
        if here not in path.parents:
            continue
        for mark in NEEDS.get(path.relative_to(here).as_posix(), ()):
            item.add_marker(mark)


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
def world(java_clients, tmp_path_factory: pytest.TempPathFactory):
    """The Java, C++ and Python clients' world of test_java_client.py and test_consumer_admin.py (java_world.py),
    made once a session for both: a fixture imported into two modules would be two fixtures, each made once."""
    from .java_world import make_world
    yield from make_world(java_clients, tmp_path_factory)


@pytest.fixture(scope="session")
def java_clients(tmp_path_factory: pytest.TempPathFactory):
    """The official Java 4.9.8 client drivers and mqadmin (integration_tests/java/), compiled once a session."""
    from .java_client import JavaClients
    return JavaClients.prepare(tmp_path_factory.mktemp("java"))
