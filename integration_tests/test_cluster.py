"""A cluster of processes (README "A cluster of processes"): `serve --role namesrv`, `serve --role broker
--namesrv-addr` (with the emulator's name server and with the real 4.9.8 one), `serve --brokers N --processes`.
Every process is a real `rocketmq-emulator serve` on free loopback ports."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from rocketmq_emulator.testing.command_line import run_cli
from rocketmq_emulator.testing.serve_process import Serve, cluster_list
from rocketmq_emulator.testing.waits import wait_until


@pytest.fixture
def started(tmp_path):
    made: list[Serve] = []

    def start(name: str, *args: str) -> Serve:
        s = Serve(tmp_path, name, *args)
        made.append(s)
        return s
    yield start
    for s in reversed(made):
        s.stop()


def produce(namesrv: str, topic: str, count: int) -> list[str]:
    proc = run_cli("produce", "-n", namesrv, "-t", topic, "-c", str(count), "--json")
    assert proc.returncode == 0, proc.stderr
    return [f"{r['brokerName']}:{r['queueId']}" for r in map(json.loads, proc.stdout.strip().splitlines())]


def consume(namesrv: str, topic: str, count: int, group: str) -> list[str]:
    proc = run_cli("consume", "-n", namesrv, "-t", topic, "-g", group, "--from-beginning", "--json",
                   "--max-messages", str(count), "--idle-timeout", "20", timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line)["body"] for line in proc.stdout.strip().splitlines()]


def test_a_broker_process_registers_with_a_name_server_process_and_goes_when_it_dies(started):
    ns = started("ns", "--role", "namesrv", "--namesrv-port", "0", "--ephemeral")
    namesrv = ns.info["namesrvAddr"]
    assert "name server only" in ns.text() and ns.info["brokers"] == []
    a = started("a", "--role", "broker", "--namesrv-addr", namesrv, "--broker-port", "0", "--ephemeral",
                "--topic", "Orders:2")
    b = started("b", "--role", "broker", "--namesrv-addr", namesrv, "--broker-port", "0", "--ephemeral",
                "--broker-name", "broker-b", "--topic", "Orders:2")
    assert f"registered with namesrv {namesrv}" in a.text()
    assert sorted((row[1], row[3]) for row in cluster_list(namesrv)) == [
        ("broker-a", a.info["brokers"][0]["addr"]), ("broker-b", b.info["brokers"][0]["addr"])]
    queues = produce(namesrv, "Orders", 8)
    assert {q.split(":")[0] for q in queues} == {"broker-a", "broker-b"}  # both brokers' queues routed
    assert len(consume(namesrv, "Orders", 8, "cluster_g1")) == 8
    b.stop(signal.SIGKILL)  # its connection to the name server closes: its routes go at once (4.9.8 too)
    assert wait_until(lambda: [row[1] for row in cluster_list(namesrv)] == ["broker-a"], 5)
    assert "broker-b" not in " ".join(produce(namesrv, "Orders", 4))
    assert a.stop() == 0  # a clean stop unregisters
    assert wait_until(lambda: cluster_list(namesrv) == [], 5)
    assert "its routes are removed" in ns.text()


def test_refusals_of_the_roles_settings(tmp_path):
    for args, expected in [
        (["--role", "broker"], "invalid value for role: broker needs the name servers to register with"),
        (["--role", "broker", "--namesrv-addr", "nohost"], "'nohost' is not HOST:PORT"),
        (["--role", "broker", "--namesrv-addr", "127.0.0.1:70000"], "is not HOST:PORT"),
        (["--role", "nameserver"], "'nameserver' is not one of all, namesrv, broker"),
        (["--processes", "--brokers", "2", "--grpc-port", "0"], "processes: not with --grpc-port yet"),
        (["--role", "namesrv", "--dashboard-port", "0"], "namesrv runs no broker: --dashboard-port needs one"),
        (["--role", "broker", "--processes", "--namesrv-addr", "127.0.0.1:1"], "not with role broker"),
    ]:
        proc = run_cli("serve", *args, timeout=20)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert expected in proc.stderr, (args, proc.stderr)


def test_a_broker_process_with_no_name_server_to_reach_starts_and_says_so(started, tmp_path):
    from rocketmq_emulator.testing.ports import free_port
    gone = f"127.0.0.1:{free_port()}"
    a = started("a", "--role", "broker", "--namesrv-addr", gone, "--broker-port", "0", "--ephemeral")
    assert f"name server {gone}: REGISTER_BROKER failed" in a.text()
    assert a.text().count("REGISTER_BROKER failed") == 1  # said once, not at every retry


def test_brokers_in_processes_start_and_stop_together(started):
    s = started("p", "--brokers", "2", "--processes", "--namesrv-port", "0", "--broker-port", "0", "--ephemeral",
                "--topic", "Orders:2")
    info, text = s.info, s.text()
    assert text.count("rocketmq-emulator ready:") == 1 and "one process each" in text
    pids = {b["name"]: b["pid"] for b in info["brokers"]}
    assert sorted(pids) == ["broker-a", "broker-b"] and len(set(pids.values()) | {s.proc.pid}) == 3
    namesrv = info["namesrvAddr"]
    assert sorted(row[1] for row in cluster_list(namesrv)) == ["broker-a", "broker-b"]
    assert {q.split(":")[0] for q in produce(namesrv, "Orders", 8)} == {"broker-a", "broker-b"}
    assert len(consume(namesrv, "Orders", 8, "procs_g1")) == 8

    os.kill(pids["broker-b"], signal.SIGKILL)  # a broker process dies: the parent says so, its routes go
    assert wait_until(lambda: "broker broker-b (pid" in s.text(), 5)
    assert f"broker broker-b (pid {pids['broker-b']}) ended unasked (killed by SIGKILL)" in s.text()
    assert wait_until(lambda: [row[1] for row in cluster_list(namesrv)] == ["broker-a"], 5)
    proc = run_cli("admin", "startBroker", "-b", "broker-b", "-n", namesrv, "--timeout", "30")  # back on its port and store
    assert proc.returncode == 0, proc.stderr
    rows = {row[1]: row[3] for row in cluster_list(namesrv)}
    assert rows["broker-b"] == info["brokers"][1]["addr"]
    assert len(consume(namesrv, "Orders", 8, "procs_g2")) == 8  # broker-b's messages are still there

    assert s.stop() == 0
    for pid in pids.values():
        assert wait_until(lambda: not _alive(pid), 5), f"broker process {pid} outlived its parent"
    assert not s.ready.exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_broker_process_registers_with_the_real_4_9_8_name_server(started, tmp_path):
    """The real name server routes clients to an emulator broker, and drops it when it dies."""
    from rocketmq_emulator.testing.parity.real import REAL_49, start_namesrv

    with start_namesrv(REAL_49, tmp_path / "realns") as namesrv:
        a = started("a", "--role", "broker", "--namesrv-addr", namesrv, "--broker-port", "0", "--ephemeral",
                    "--topic", "TopicTest:4")
        assert [(row[1], row[3]) for row in cluster_list(namesrv)] == [("broker-a", a.info["brokers"][0]["addr"])]
        assert {q.split(":")[0] for q in produce(namesrv, "TopicTest", 6)} == {"broker-a"}
        assert len(consume(namesrv, "TopicTest", 6, "GID_realns")) == 6
        a.stop(signal.SIGKILL)
        assert wait_until(lambda: cluster_list(namesrv) == [], 10)  # 4.9.8's onChannelDestroy


def test_the_compose_example_says_what_the_emulator_understands():
    """docs/examples/compose-2m-2s.yaml: every service's command parses as serve's own flags; two masters
    (SYNC_MASTER) and a slave of each (brokerId 1, the master's name), all registered with the namesrv service."""
    import yaml

    from rocketmq_emulator.broker.config import ServeRole
    from rocketmq_emulator.cli.main import build_parser
    from rocketmq_emulator.cli.serve import config_from_args
    from rocketmq_emulator.store.config import BrokerRole

    compose = yaml.safe_load((Path(__file__).resolve().parents[1] / "docs" / "examples" /
                              "compose-2m-2s.yaml").read_text())
    roles = {}
    for name, service in compose["services"].items():
        config = config_from_args(build_parser().parse_args(service["command"]), environ={})
        if config.role is ServeRole.NAMESRV:
            roles[name] = "namesrv"
            continue
        b = config.broker
        assert config.role is ServeRole.BROKER and config.namesrv_addr == ("namesrv:9876",)
        assert b.broker_ip1 == name  # clients of the compose network reach it by its service name
        roles[name] = (b.broker_name, b.broker_id, b.store.broker_role)
    assert roles == {"namesrv": "namesrv",
                     "broker-a": ("broker-a", 0, BrokerRole.SYNC_MASTER), "broker-a-s": ("broker-a", 1, BrokerRole.SLAVE),
                     "broker-b": ("broker-b", 0, BrokerRole.SYNC_MASTER), "broker-b-s": ("broker-b", 1, BrokerRole.SLAVE)}
