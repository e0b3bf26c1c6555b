"""`rocketmq-emulator admin|produce|consume` against a live broker: every admin
command with its mqadmin flags, its table output and its `--json` output parsed."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from rocketmq_emulator.client import Producer, PushConsumer
from rocketmq_emulator.testing.waits import wait_for
from rocketmq_emulator.testing.command_line import COMMAND

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*COMMAND, *args], cwd=ROOT, input=stdin, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "NAMESRV_ADDR": ""})
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def admin_json(ns: str, *args: str):
    return json.loads(cli("admin", *args, "-n", ns, "--json").stdout)


@pytest.fixture
def ns(emulator) -> str:
    return emulator.namesrv_addr


def test_topic_commands(ns):
    out = cli("admin", "updateTopic", "-n", ns, "-t", "CliTopic", "-r", "3", "-w", "3").stdout
    assert "create topic to" in out and "success" in out and "readQueueNums=3" in out
    data = admin_json(ns, "updateTopic", "-t", "CliTopic2", "-r", "2", "-w", "2", "-p", "6")
    assert data["topic"] == "CliTopic2" and len(data["brokers"]) == 1

    assert "CliTopic" in cli("admin", "topicList", "-n", ns).stdout.split()
    assert {"CliTopic", "CliTopic2"} <= set(admin_json(ns, "topicList")["topicList"])

    route = admin_json(ns, "topicRoute", "-t", "CliTopic")
    assert route["queueDatas"][0]["readQueueNums"] == 3

    produced = [json.loads(line) for line in
                cli("produce", "-n", ns, "-t", "CliTopic", "--tags", "TagC", "-k", "key1 key2", "-p", "a=b",
                    "--json", stdin="one\ntwo\nthree\n").stdout.splitlines()]
    assert [p["status"] for p in produced] == ["SEND_OK"] * 3
    batch = cli("produce", "-n", ns, "-t", "CliTopic", "-m", "gen-{i}", "-c", "10", "--batch", "5").stdout
    assert batch.count("SEND_OK 5 messages") == 2

    text = cli("admin", "topicStatus", "-n", ns, "-t", "CliTopic").stdout
    assert text.splitlines()[0].split()[:4] == ["#Broker", "Name", "#QID", "#Min"]
    status = admin_json(ns, "topicStatus", "-t", "CliTopic")
    assert [s["queueId"] for s in status] == [0, 1, 2] and sum(s["maxOffset"] for s in status) == 13
    assert all(s["lastUpdateTimestamp"] > 0 for s in status)

    by_key = admin_json(ns, "queryMsgByKey", "-t", "CliTopic", "-k", "key2")
    assert sorted(m["body"] for m in by_key) == ["one", "three", "two"]
    assert all(m["tags"] == "TagC" and m["properties"]["a"] == "b" for m in by_key)
    assert "#Message ID" in cli("admin", "queryMsgByKey", "-n", ns, "-t", "CliTopic", "-k", "key1").stdout

    msg = admin_json(ns, "queryMsgById", "-i", produced[1]["offsetMsgId"])
    assert msg["body"] == "two" and msg["msgId"] == produced[1]["msgId"]
    msg = admin_json(ns, "queryMsgById", "-i", produced[2]["msgId"], "-t", "CliTopic")
    assert msg["body"] == "three"
    assert "Message Body:" in cli("admin", "queryMsgById", "-n", ns, "-i", produced[0]["offsetMsgId"]).stdout

    deleted = admin_json(ns, "deleteTopic", "-t", "CliTopic2")
    assert deleted["topic"] == "CliTopic2"
    assert "success" in cli("admin", "deleteTopic", "-n", ns, "-t", "CliTopic", "-c", "DefaultCluster").stdout
    assert not {"CliTopic", "CliTopic2"} & set(admin_json(ns, "topicList")["topicList"])


def test_cluster_list(ns, emulator):
    brokers = admin_json(ns, "clusterList")
    assert [(b["cluster"], b["brokerName"], b["brokerId"]) for b in brokers] == [("DefaultCluster", "broker-a", 0)]
    assert brokers[0]["addr"].endswith(f":{emulator.broker_port}") and brokers[0]["version"]
    assert "broker-a" in cli("admin", "clusterList", "-n", ns).stdout


async def test_consumer_commands_and_reset_offset(ns):
    async with Producer("cli_producer", namesrv=ns) as p:
        for i in range(8):
            await p.send("CliConsume", f"m{i}")
    received = []
    consumer = PushConsumer("cli_group", namesrv=ns)
    consumer.subscribe("CliConsume", "*")
    consumer.on_message(lambda m: received.append(m.text))
    async with consumer:
        assert await wait_for(lambda: len(received) == 8, 20)
        conn = await _async_cli_json(ns, "consumerConnection", "-g", "cli_group")
        assert [c["clientId"] for c in conn["connections"]] == [consumer.client_id]
        assert conn["messageModel"] == "CLUSTERING" and conn["subscriptions"]["CliConsume"] == "*"
        assert "Below is subscription" in (await _async_cli("admin", "consumerConnection", "-n", ns, "-g",
                                                            "cli_group")).stdout
    progress = await _async_cli_json(ns, "consumerProgress", "-g", "cli_group")
    assert progress["diffTotal"] == 0
    rows = [o for o in progress["offsets"] if o["topic"] == "CliConsume"]
    assert sum(o["consumerOffset"] for o in rows) == 8
    assert "Diff Total: 0" in (await _async_cli("admin", "consumerProgress", "-n", ns, "-g", "cli_group")).stdout
    groups = await _async_cli_json(ns, "consumerProgress")
    assert {"group": "cli_group", "consumeTps": 0.0, "diffTotal": 0} in groups

    # no consumer online: the broker records the reset (server-side reset) and applies it when the group returns
    reset = await _async_cli_json(ns, "resetOffsetByTime", "-g", "cli_group", "-t", "CliConsume", "-s", "0")
    assert reset["method"] == "broker" and all(r["offset"] == 0 for r in reset["offsets"])
    progress = await _async_cli_json(ns, "consumerProgress", "-g", "cli_group")
    assert progress["diffTotal"] == 8
    text = (await _async_cli("admin", "resetOffsetByTime", "-n", ns, "-g", "cli_group", "-t", "CliConsume",
                             "-s", "now")).stdout
    assert text.splitlines()[0].split() == ["#brokerName", "#queueId", "#offset"]
    assert (await _async_cli_json(ns, "consumerProgress", "-g", "cli_group"))["diffTotal"] == 0
    future = time.strftime("%Y-%m-%d#%H:%M:%S:000", time.localtime(time.time() + 3600))
    await _async_cli_json(ns, "resetOffsetByTime", "-g", "cli_group", "-t", "CliConsume", "-s", future, "-f", "false")

    replay = await _async_cli("consume", "-n", ns, "-t", "CliConsume", "-g", "cli_replay", "--from-beginning",
                              "--max-messages", "8", "--json")
    assert sorted(json.loads(line)["body"] for line in replay.stdout.splitlines()) == [f"m{i}" for i in range(8)]


async def _async_cli(*args: str) -> subprocess.CompletedProcess[str]:
    import asyncio
    return await asyncio.to_thread(cli, *args)


async def _async_cli_json(ns: str, *args: str):
    return json.loads((await _async_cli("admin", *args, "-n", ns, "--json")).stdout)


def test_reset_without_server_side_reset_falls_back_to_writing_offsets(emulator_factory):
    """4.9.x: with no consumer online the broker answers CONSUMER_NOT_ONLINE and the admin writes the offsets."""
    ns = emulator_factory(use_server_side_reset_offset=False).namesrv_addr
    cli("produce", "-n", ns, "-t", "OldReset", "-m", "m{i}", "-c", "4")
    cli("consume", "-n", ns, "-t", "OldReset", "-g", "old_group", "--from-beginning", "--max-messages", "4")
    reset = admin_json(ns, "resetOffsetByTime", "-g", "old_group", "-t", "OldReset", "-s", "0")
    assert reset["method"] == "old" and all(r["offset"] == 0 for r in reset["offsets"])
    assert admin_json(ns, "consumerProgress", "-g", "old_group")["diffTotal"] == 4
    text = cli("admin", "resetOffsetByTime", "-n", ns, "-g", "old_group", "-t", "OldReset", "-s", "now").stdout
    assert "written to the brokers directly" in text and "#resetOffset" in text
    assert admin_json(ns, "consumerProgress", "-g", "old_group")["diffTotal"] == 0


def test_errors_are_reported_not_raised(ns):
    proc = cli("admin", "topicStatus", "-n", ns, "-t", "NoSuchTopic", check=False)
    assert proc.returncode == 1 and "NoSuchTopic" in proc.stderr and "updateTopic" in proc.stderr
    proc = cli("admin", "consumerProgress", "-n", ns, "-g", "nobody", check=False)
    assert proc.returncode == 1 and "CONSUMER_NOT_ONLINE" in proc.stderr
    proc = cli("admin", "resetOffsetByTime", "-n", ns, "-g", "g", "-t", "T", "-s", "yesterday", check=False)
    assert proc.returncode == 2 and "yyyy-MM-dd#HH:mm:ss:SSS" in proc.stderr


def test_export_offsets_refuses_what_it_cannot_do(ns, tmp_path):
    """An unknown group is refused as consumerProgress refuses it; a file that cannot be written is named."""
    proc = cli("admin", "exportOffsets", "-n", ns, "-g", "nobody", check=False)
    assert proc.returncode == 1 and "CONSUMER_NOT_ONLINE" in proc.stderr and "Traceback" not in proc.stderr
    cli("produce", "-n", ns, "-t", "ExportT", "-c", "2")
    cli("consume", "-n", ns, "-t", "ExportT", "-g", "exporter", "--from-beginning", "--max-messages", "2")
    for target in (tmp_path / "no" / "such" / "dir.json", tmp_path):
        proc = cli("admin", "exportOffsets", "-n", ns, "-g", "exporter", "-f", str(target), check=False)
        assert proc.returncode == 1 and f"cannot write {target}" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("admin", "exportOffsets", "-n", ns, "-g", "exporter", "-f", str(tmp_path / "ok.json"))
    assert "ExportT@exporter" in (tmp_path / "ok.json").read_text()


def test_consume_into_a_reader_that_goes_away_stops_quietly(ns):
    """`consume ... | head -3`: no traceback, the pipe's usual exit status (141)."""
    cli("produce", "-n", ns, "-t", "PipeT", "-c", "2000", "-m", "line {i} " + "x" * 200)
    proc = subprocess.run(["bash", "-c", " ".join([*COMMAND, "consume", "-n", ns, "-t", "PipeT", "-g", "piper",
                                                   "--from-beginning", "--max-messages", "2000"])
                           + " | head -3; echo exit=${PIPESTATUS[0]} >&2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert len(proc.stdout.splitlines()) == 3 and "line" in proc.stdout
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert "exit=141" in proc.stderr
