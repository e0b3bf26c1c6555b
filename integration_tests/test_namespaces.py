"""Namespaces: the official Java 4.9.8 client with `setNamespace` (an `MQ_INST_...` instance name, as Alibaba Cloud's
endpoints give it) keeps its topic, group and retry topic apart from another namespace's of the same names; the
command line's `--namespace` names them as that client does and lists them by namespace; the dashboard's API gives
each topic and group its namespace; the 5.x client's namespace is what the real 5.3.3 proxy makes of it (asked on
2026-11-27: a send with namespace ns1 to NsT lands in NsT; a message of `ns1%NsT` is received as NsT in ns1)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.emulator_process import launch_emulator

ROOT = Path(__file__).resolve().parents[1]
NS_A, NS_B = "MQ_INST_1234567890_BXhaRnJH", "MQ_INST_1234567890_Caaaaaaa"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*COMMAND, *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NAMESRV_ADDR": ""})
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def broker(tmp_path: Path):
    b = launch_emulator(tmp_path / "emu", grpc=True, dashboard=True)
    try:
        yield b
    finally:
        b.stop()


def test_java_clients_of_two_namespaces_keep_their_topics_and_groups_apart(broker, java_clients, tmp_path):
    ns = broker.namesrv_addr
    for namespace, count in ((NS_A, 3), (NS_B, 2)):
        sent = java_clients.run("Produce", ns, count, "Orders", "TagA", "PID_orders", timeout=120,
                                home=tmp_path / f"p-{namespace}", props={"rmq.namespace": namespace})
        assert [e["status"] for e in sent.of("sent")] == ["SEND_OK"] * count, sent.describe()
    got = java_clients.run("PushConsume", ns, "CLUSTERING", "billing", 3, 60, "Orders", "first", timeout=120,
                           home=tmp_path / "c-a", props={"rmq.namespace": NS_A})
    consumed = got.of("consumed")
    assert sorted(e["body"] for e in consumed) == [f"hello-java-{i}" for i in range(3)], got.describe()
    assert {e["topic"] for e in consumed} == {"Orders"}  # the client names it without its namespace

    topics = json.loads(cli("admin", "topicList", "-n", ns, "--json").stdout)
    assert f"{NS_A}%Orders" in topics["byNamespace"][NS_A] and f"{NS_B}%Orders" in topics["byNamespace"][NS_B]
    assert f"{NS_A}%Orders" not in topics["byNamespace"].get("", [])
    only_a = cli("admin", "topicList", "-n", ns, "--namespace", NS_A).stdout.split()
    assert sorted(only_a) == [f"%RETRY%{NS_A}%billing", f"{NS_A}%Orders"], only_a  # its retry topic is its too
    status = json.loads(cli("admin", "topicStatus", "-n", ns, "--namespace", NS_B, "-t", "Orders", "--json").stdout)
    assert sum(q["maxOffset"] for q in status) == 2
    progress = json.loads(cli("admin", "consumerProgress", "-n", ns, "--namespace", NS_A, "-g", "billing",
                              "--json").stdout)
    assert progress["diffTotal"] == 0
    topics_of_a = {o["topic"] for o in progress["offsets"]}  # its retry topic's row once the client committed it
    assert f"{NS_A}%Orders" in topics_of_a and topics_of_a <= {f"{NS_A}%Orders", f"%RETRY%{NS_A}%billing"}
    every = json.loads(cli("admin", "consumerProgress", "-n", ns, "--namespace", NS_A, "--json").stdout)
    assert [g["group"] for g in every] == [f"{NS_A}%billing"], every

    with urllib.request.urlopen(broker.dashboard_url + "api/topics", timeout=10) as answer:
        by_name = {t["topic"]: t for t in json.loads(answer.read())}
    assert by_name[f"{NS_A}%Orders"]["namespace"] == NS_A and by_name[f"{NS_B}%Orders"]["messages"] == 2
    with urllib.request.urlopen(broker.dashboard_url + "api/groups", timeout=10) as answer:
        groups = {g["group"]: g for g in json.loads(answer.read())}
    assert groups[f"{NS_A}%billing"]["namespace"] == NS_A


def test_the_command_lines_namespace_is_the_java_clients(broker, java_clients, tmp_path):
    """`produce --namespace NS -t Orders` is read by a Java consumer with setNamespace(NS) and topic Orders."""
    ns = broker.namesrv_addr
    cli("produce", "-n", ns, "--namespace", NS_A, "-t", "Orders", "-m", "from the cli {i}", "-c", "2")
    got = java_clients.run("PushConsume", ns, "CLUSTERING", "audit", 2, 60, "Orders", "first", timeout=120,
                           home=tmp_path / "c", props={"rmq.namespace": NS_A})
    assert sorted(e["body"] for e in got.of("consumed")) == ["from the cli 0", "from the cli 1"], got.describe()
    out = cli("consume", "-n", ns, "--namespace", NS_A, "-t", "Orders", "-g", "cli-reader", "--from-beginning",
              "--max-messages", "2", "--json").stdout
    assert sorted(json.loads(line)["body"] for line in out.splitlines()) == ["from the cli 0", "from the cli 1"]


def test_a_5x_client_with_a_namespace_as_the_real_5_3_3_proxy_treats_it(broker, tmp_path):
    from .py5_client import run_py5
    cli("admin", "updateTopic", "-n", broker.namesrv_addr, "-t", "NsT", "-r", "1", "-w", "1")
    cli("admin", "updateTopic", "-n", broker.namesrv_addr, "-t", f"{NS_A}%NsT", "-r", "1", "-w", "1")
    sent = run_py5(["produce", "--endpoint", broker.grpc_endpoint, "--namespace", NS_A, "--topic", "NsT",
                    "--count", "1"], home=tmp_path / "py5", timeout=120)
    assert len(sent.of("sent")) == 1, sent.describe()
    plain = json.loads(cli("admin", "topicStatus", "-n", broker.namesrv_addr, "-t", "NsT", "--json").stdout)
    assert sum(q["maxOffset"] for q in plain) == 1  # the proxy takes the resource's name as it is
    cli("produce", "-n", broker.namesrv_addr, "--namespace", NS_A, "-t", "NsT", "-m", "in the namespace")
    got = run_py5(["simple", "--endpoint", broker.grpc_endpoint, "--namespace", NS_A, "--topic", f"{NS_A}%NsT",
                   "--group", "g5", "--expect", "1"], home=tmp_path / "py5", timeout=120)
    [msg] = got.of("received")
    assert (msg["body"], msg["topic"], msg["namespace"]) == ("in the namespace", "NsT", NS_A), got.describe()
