"""Failover (README "Master and slave"): two SYNC_MASTER brokers with a slave each, every broker in its own process
(`serve --brokers 2 --slaves 1 --processes`). The master of broker-a is killed (SIGKILL): consumers of this
project, the Java 4.9.8 client and the Go client go on from its slave, each consuming every message a master
acknowledged; producers send to broker-b; the master comes back on its store and port, its slave catches up and
it serves again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path


from rocketmq_emulator.testing.command_line import run_cli
from rocketmq_emulator.testing.serve_process import Serve, cluster_list
from rocketmq_emulator.testing.waits import wait_until

RMQ_GO = Path(__file__).resolve().with_name("go") / "rmq-go"


def produce(namesrv: str, topic: str, count: int, prefix: str) -> list[dict]:
    """`count` messages with bodies PREFIX-0, PREFIX-1, ...: their send results."""
    proc = run_cli("produce", "-n", namesrv, "-t", topic, "--json", "-m", f"{prefix}-{{i}}", "-c", str(count),
                   "--timeout", "10")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.strip().splitlines()]


def run_go(home: Path, namesrv: str, group: str) -> set[str]:
    """The Go driver's push-clustering: a consumer of `group` (from the first offset) while it sends 4 messages of
    its own; the bodies it consumed."""
    home.mkdir()
    done = subprocess.run([str(RMQ_GO), "push-clustering", "--namesrv", namesrv, "--home", str(home), "--topic",
                           "Orders", "--group", group, "--count", "4", "--settle", "2", "--linger", "1", "--timeout",
                           "60"], capture_output=True, text=True, timeout=120, cwd=home)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert events and events[-1]["event"] == "result" and events[-1]["ok"], done.stdout[-3000:]
    return {e["body"] for e in events if e.get("event") == "consumed"}


def consume(namesrv: str, topic: str, group: str, count: int) -> list[str]:
    proc = run_cli("consume", "-n", namesrv, "-t", topic, "-g", group, "--from-beginning", "--json",
                   "--max-messages", str(count), "--idle-timeout", "25", timeout=90)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line)["body"] for line in proc.stdout.strip().splitlines()]


def test_consumers_go_on_from_the_slave_when_a_master_dies(tmp_path, java_clients):
    conf = tmp_path / "broker.conf"
    conf.write_text("registerNameServerPeriod=1000\n")  # a slave learns its restarted master within a second
    cluster = Serve(tmp_path, "cluster", "--brokers", "2", "--slaves", "1", "--processes", "--namesrv-port", "0",
                    "--broker-port", "0", "--ephemeral", "--broker-role", "SYNC_MASTER", "--topic", "Orders:2",
                    "--config", str(conf))
    try:
        namesrv = cluster.info["namesrvAddr"]
        pids = {(b["name"], b["id"]): b["pid"] for b in cluster.info["brokers"]}
        assert sorted(pids) == [("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)]
        assert wait_until(lambda: len(cluster_list(namesrv)) == 4, 10)
        # SYNC_MASTER: answered once the slave holds the message
        sent = produce(namesrv, "Orders", 12, "before")
        assert {s["status"] for s in sent} == {"SEND_OK"} and {s["brokerName"] for s in sent} == {"broker-a",
                                                                                                   "broker-b"}
        acknowledged = sorted(f"before-{i}" for i in range(12))

        os.kill(pids[("broker-a", 0)], signal.SIGKILL)
        assert wait_until(lambda: "broker broker-a (pid" in cluster.text(), 5)
        assert wait_until(lambda: sorted((r[1], r[2]) for r in cluster_list(namesrv)) == [
            ("broker-a", "1"), ("broker-b", "0"), ("broker-b", "1")], 5)

        # this project's consumer: broker-a's messages from its slave
        assert sorted(consume(namesrv, "Orders", "GID_fo_py", 12)) == acknowledged
        # the Java 4.9.8 push consumer, a group of its own from the first offset
        got = java_clients.run("PushConsume", namesrv, "CLUSTERING", "GID_fo_java", 12, 60, "Orders", "first",
                               timeout=120, home=tmp_path / "java-c")
        assert sorted(e["body"] for e in got.of("consumed")) == acknowledged, got.describe()
        # producers send to the other master meanwhile
        during = produce(namesrv, "Orders", 4, "during")
        assert {(s["status"], s["brokerName"]) for s in during} == {("SEND_OK", "broker-b")}
        go_sent, go_group = 0, f"GID_fo_go_{uuid.uuid4().hex[:6]}"
        if RMQ_GO.exists():  # the Go client v2.1.2 reads and commits offsets only at a master: while broker-a's
            # is away it consumes broker-b's queues (and broker-a's once the master is back, below)
            bodies = run_go(tmp_path / "go1", namesrv, go_group)
            go_sent += 4
            on_b = {f"before-{i}" for i, s in enumerate(sent) if s["brokerName"] == "broker-b"}
            assert on_b | {f"during-{i}" for i in range(4)} <= bodies

        # the master comes back on its store and port; its slave catches up; sends to it are acknowledged again
        proc = run_cli("admin", "startBroker", "-b", "broker-a", "-n", namesrv, "--timeout", "30")
        assert proc.returncode == 0, proc.stderr
        assert wait_until(lambda: len(cluster_list(namesrv)) == 4, 10)

        probes: list[dict] = []

        def acknowledged_by_a() -> bool:
            probes.extend(produce(namesrv, "Orders", 2, f"probe{len(probes)}"))
            return any(s["brokerName"] == "broker-a" and s["status"] == "SEND_OK" for s in probes[-2:])
        assert wait_until(acknowledged_by_a, 20, interval=0.5), (probes, cluster.text()[-4000:])  # (until then:
        # SLAVE_NOT_AVAILABLE, as 4.9.8)
        after = produce(namesrv, "Orders", 6, "after")
        assert all(s["status"] == "SEND_OK" for s in after)
        if RMQ_GO.exists():  # the Go group again: broker-a's messages now, from its master
            bodies = run_go(tmp_path / "go2", namesrv, go_group)
            go_sent += 4
            assert {f"before-{i}" for i, s in enumerate(sent) if s["brokerName"] == "broker-a"} <= bodies
        stored = 12 + 4 + go_sent + len(probes) + 6
        bodies = consume(namesrv, "Orders", "GID_fo_after", stored)  # a new group reads all of both brokers
        assert set(acknowledged) | {f"after-{i}" for i in range(6)} <= set(bodies) and len(bodies) == stored
    finally:
        assert cluster.stop() == 0
