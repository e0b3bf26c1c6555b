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
from rocketmq_emulator.testing.waits import wait_for, wait_until
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


def test_broker_status_prints_the_runtime_statistics_sorted(emulator):
    """mqadmin brokerStatus: `key : value` lines sorted by key for one broker (-b); with the address first for
    every broker (or a cluster's, -c)."""
    ns, addr = emulator.namesrv_addr, f"127.0.0.1:{emulator.broker_port}"
    lines = cli("admin", "brokerStatus", "-n", ns, "-b", addr).stdout.splitlines()
    keys = [line.split(":", 1)[0].strip() for line in lines]
    assert keys == sorted(keys) and "brokerVersionDesc" in keys and "msgPutTotalTodayNow" in keys
    assert any(line.startswith("brokerVersionDesc") and line.endswith(": V4_9_8 (rocketmq-emulator)")
               for line in lines), lines
    every = cli("admin", "brokerStatus", "-n", ns, "-c", "DefaultCluster").stdout.splitlines()
    assert every and all(line.startswith(addr) for line in every)
    assert admin_json(ns, "brokerStatus")[addr]["brokerVersionDesc"] == "V4_9_8 (rocketmq-emulator)"
    assert cli("admin", "brokerStatus", "-n", ns, "-c", "NoSuchCluster", check=False).returncode == 1


def test_update_sub_group_replaces_the_config_as_mqadmin_does(emulator):
    """Fields given are set, fields not given go back to Java's defaults (mqadmin builds a new config)."""
    ns = emulator.namesrv_addr
    out = cli("admin", "updateSubGroup", "-n", ns, "-g", "CliGroup", "-r", "3", "-d", "false", "-o", "true").stdout
    assert out.splitlines() == [
        f"create subscription group to 127.0.0.1:{emulator.broker_port} success.",
        "SubscriptionGroupConfig [groupName=CliGroup, consumeEnable=true, consumeFromMinEnable=true, "
        "consumeBroadcastEnable=false, retryQueueNums=1, retryMaxTimes=3, brokerId=0, whichBrokerWhenConsumeSlowly=1, "
        "notifyConsumerIdsChangedEnable=true, consumeMessageOrderly=true]"]
    stored = emulator.call(lambda: emulator.broker.subscription_group_manager.find("CliGroup"))
    assert (stored.retry_max_times, stored.consume_broadcast_enable, stored.consume_message_orderly) == (3, False, True)
    data = admin_json(ns, "updateSubGroup", "-g", "CliGroup", "-q", "2")
    assert data["retryMaxTimes"] == 16 and data["retryQueueNums"] == 2
    assert data["brokers"] == [f"127.0.0.1:{emulator.broker_port}"]
    stored = emulator.call(lambda: emulator.broker.subscription_group_manager.find("CliGroup"))
    assert (stored.retry_max_times, stored.retry_queue_nums, stored.consume_broadcast_enable) == (16, 2, True)
    bad = cli("admin", "updateSubGroup", "-n", ns, "-g", "bad group", check=False)
    assert bad.returncode == 1 and "letters, digits and the characters" in bad.stderr


def test_produce_with_a_delay_level_arrives_after_its_delay(emulator):
    ns = emulator.namesrv_addr
    cli("admin", "updateTopic", "-n", ns, "-t", "CliDelay", "-r", "1", "-w", "1")
    sent = json.loads(cli("produce", "-n", ns, "-t", "CliDelay", "-m", "later", "--delay-level", "3", "--json").stdout)
    assert sent["status"] == "SEND_OK"
    assert admin_json(ns, "topicStatus", "-t", "CliDelay")[0]["maxOffset"] == 0  # held for level 3: 10 s
    cli("admin", "advanceTime", "-n", ns, "-s", "10")
    assert wait_until(lambda: admin_json(ns, "topicStatus", "-t", "CliDelay")[0]["maxOffset"] == 1, timeout=10)
    [line] = cli("consume", "-n", ns, "-t", "CliDelay", "--from-beginning", "--max-messages", "1",
                 "--json").stdout.splitlines()
    got = json.loads(line)
    assert got["body"] == "later" and got["msgId"] == sent["msgId"] and got["properties"]["DELAY"] == "3"
    refused = cli("produce", "-n", ns, "-t", "CliDelay", "-m", "x", "--delay-level", "2", "--batch", "5", check=False)
    assert refused.returncode == 2 and "--delay-level cannot be used with --batch" in refused.stderr


def test_consume_with_a_sql92_filter(emulator_factory):
    emu = emulator_factory(enable_property_filter=True)
    ns = emu.namesrv_addr
    for region, amount in (("eu", 150), ("us", 150), ("eu", 50)):
        cli("produce", "-n", ns, "-t", "CliSql", "-m", f"{region}-{amount}", "-p", f"region={region}",
            "-p", f"amount={amount}")
    out = cli("consume", "-n", ns, "-t", "CliSql", "--from-beginning", "--sql", "region = 'eu' AND amount > 100",
              "--idle-timeout", "2").stdout
    assert [line.rsplit("| ", 1)[1] for line in out.splitlines()] == ["eu-150"]
    bad = cli("consume", "-n", ns, "-t", "CliSql", "--sql", "region =", "--idle-timeout", "1", check=False)
    assert bad.returncode == 1
    assert "invalid SQL92 expression 'region =': the expression ends too soon (after column 8)" in bad.stderr
    both = cli("consume", "-n", ns, "-t", "CliSql", "-e", "TagA", "--sql", "a > 1", check=False)
    assert both.returncode == 2 and "not allowed with argument -e/--expression" in both.stderr
