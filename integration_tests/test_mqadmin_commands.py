"""Every mqadmin 4.9.8 command the README's table "mqadmin 4.9.8 against the emulator" lists as working, run
against a broker with realistic state, and failing on anything in its output a user would take for a failure.

The command list comes from the README table (so the two cannot drift), and the table is checked against the
commands the vendored mqadmin itself registers (its help). The state: topic `MqAdminTopic` with 10 messages
(keys k0..k9) sent by a live Java producer with message trace on, group `MqAdminGroup` with a live Java push
consumer (trace on) that consumed them all, and the trace topic holding both sides' traces. All commands run in
one JVM (`mqadmin_batch`), in the order of `COMMANDS` (the ones that change state come last).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from rocketmq_emulator.testing.emulator_thread import EmulatorThread

README = Path(__file__).resolve().parents[1] / "docs" / "user" / "mqadmin.md"
TABLE_TITLE = "# mqadmin 4.9.8 against the emulator"
TOPIC, GROUP, PRODUCER_GROUP, COUNT = "MqAdminTopic", "MqAdminGroup", "MqAdminProducer", 10
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"

#: what a user takes for a failure in mqadmin's output (it always exits 0); case matters ("exceptionDesc=null" is
#: a field of a healthy MessageTrack)
FAILURE = re.compile(r"Exception|\bError\b|\bERROR\b|usage: mqadmin|The sub command \S+ not exist|CODE: \d+|"
                     r"\bnot online\b|\b[Ff]ailed\b|\bFAILED\b")

#: command -> (arguments after `-n NAMESRV`, a regex its output must match). `{...}`: filled from the state.
#: Order matters: the batch runs in this order, so commands that change state come after those that read it.
COMMANDS: dict[str, tuple[list[str], str]] = {
    "clusterList": ([], r"DefaultCluster\s+broker-a"),
    "brokerStatus": (["-b", "{broker_addr}"], r"brokerVersionDesc"),
    "topicList": ([], rf"(?m)^{TOPIC}$"),
    "topicRoute": (["-t", TOPIC], r'"brokerName":"broker-a"'),
    "topicStatus": (["-t", TOPIC], r"broker-a\s+0\s+0\s+\d+"),
    "topicClusterList": (["-t", TOPIC], r"DefaultCluster"),
    "queryMsgById": (["-i", "{offset_msg_id}"], r"hello-java-0|Topic:\s+MqAdminTopic"),
    "queryMsgByKey": (["-t", TOPIC, "-k", "k1"], r"#Message ID"),
    "queryMsgByUniqueKey": (["-i", "{msg_id}", "-t", TOPIC], r"Topic:\s+MqAdminTopic"),
    "queryMsgByOffset": (["-t", TOPIC, "-b", "broker-a", "-i", "{queue_id}", "-o", "{queue_offset}"],
                         r"Topic:\s+MqAdminTopic"),
    "queryMsgTraceById": (["-i", "{msg_id}"], r"(?s)Pub.*Sub"),
    "printMsg": (["-t", TOPIC, "-d", "true"], r"hello-java-"),
    "printMsgByQueue": (["-t", TOPIC, "-a", "broker-a", "-i", "{queue_id}", "-p", "true", "-d", "true"],
                        r"hello-java-"),
    "brokerConsumeStats": (["-b", "{broker_addr}"], rf"{TOPIC}\s+{GROUP}"),
    "producerConnection": (["-g", PRODUCER_GROUP, "-t", TOPIC], r"JAVA"),
    "consumerConnection": (["-g", GROUP], r"(?s)JAVA.*ConsumeType: CONSUME_PASSIVELY"),
    "consumerProgress": (["-g", GROUP], rf"{TOPIC}\s+broker-a\s+\d+\s+\d+\s+\d+"),
    "consumerStatus": (["-g", GROUP], r"Rebalance OK"),
    "getConsumerStatus": (["-g", GROUP, "-t", TOPIC], r"broker-a"),
    "getConsumerConfig": (["-g", GROUP], r"groupName"),
    "allocateMQ": (["-t", TOPIC, "-i", "10.0.0.1,10.0.0.2"], r'"10.0.0.1"'),
    "statsAll": ([], rf"{TOPIC}"),
    "queryCq": (["-t", TOPIC, "-q", "{queue_id}", "-i", "0"], r"max: \d+, min: 0"),
    "getBrokerConfig": (["-b", "{broker_addr}"], r"brokerName"),
    "getNamesrvConfig": ([], r"="),
    "consumeMessage": (["-t", TOPIC, "-c", "3"], r"hello-java-"),
    "sendMessage": (["-t", TOPIC, "-p", "from-mqadmin", "-k", "mqadmin-key"], r"SEND_OK|#Status"),
    "sendMsgStatus": (["-b", "broker-a", "-c", "5"], r"SEND_OK"),
    "checkMsgSendRT": (["-t", TOPIC, "-a", "5", "-s", "64"], r"#Broker Name"),
    "producer": (["-b", "{broker_addr}"], rf"producer group \({PRODUCER_GROUP}\)"),
    "exportMetadata": (["-c", "DefaultCluster", "-f", "{home}/export"], r"export"),
    "exportConfigs": (["-c", "DefaultCluster", "-f", "{home}/export"], r"export"),
    "exportMetrics": (["-c", "DefaultCluster", "-f", "{home}/export"], r"export"),
    "clusterAclConfigVersion": (["-c", "DefaultCluster"], r"broker-a"),
    "updateAclConfig": (["-c", "DefaultCluster", "-a", "mqadminAK", "-s", "mqadminSK123"], r"success"),
    "updateGlobalWhiteAddr": (["-c", "DefaultCluster", "-g", "10.10.*"], r"success"),
    "deleteAclConfig": (["-c", "DefaultCluster", "-a", "mqadminAK"], r"success"),
    "updateKvConfig": (["-s", "ORDER_TOPIC_CONFIG", "-k", "SomeTopic", "-v", "broker-a:2"], r"success"),
    "deleteKvConfig": (["-s", "ORDER_TOPIC_CONFIG", "-k", "SomeTopic"], r"success"),
    "updateOrderConf": (["-t", TOPIC, "-m", "put", "-v", "broker-a:4"], r"success"),
    "updateNamesrvConfig": (["-k", "orderMessageEnable", "-v", "false"], r"success"),
    "updateBrokerConfig": (["-b", "{broker_addr}", "-k", "defaultTopicQueueNums", "-v", "4"], r"success"),
    "updateTopic": (["-b", "{broker_addr}", "-t", "MqAdminNewTopic", "-r", "2", "-w", "2"], r"create topic .* success"),
    "updateTopicPerm": (["-b", "{broker_addr}", "-t", "MqAdminNewTopic", "-p", "4"], r"success"),
    "deleteTopic": (["-c", "DefaultCluster", "-t", "MqAdminNewTopic"], r"delete topic .* success"),
    "updateSubGroup": (["-b", "{broker_addr}", "-g", "MqAdminNewGroup"], r"create subscription group .* success"),
    "deleteSubGroup": (["-b", "{broker_addr}", "-g", "MqAdminNewGroup"], r"delete subscription group .* success"),
    "cloneGroupOffset": (["-s", GROUP, "-d", "MqAdminCloneGroup", "-t", TOPIC], r"clone group offset success"),
    "resetOffsetByTime": (["-g", GROUP, "-t", TOPIC, "-s", "{begin_ms}"], r"(?s)(broker-a\s+\d\s+0\s+){4}"),
    "skipAccumulatedMessage": (["-g", GROUP, "-t", TOPIC], r"(?s)(broker-a\s+\d\s+[1-9]\d*\s+){4}"),
    "wipeWritePerm": (["-b", "broker-a"], r"wipe write perm of broker\[broker-a\] in name server\[.*\] OK, [1-9]"),
    "addWritePerm": (["-b", "broker-a"], r"add write perm of broker\[broker-a\] in name server\[.*\] OK, [1-9]"),
    "cleanExpiredCQ": (["-b", "{broker_addr}"], r"success"),
    "deleteExpiredCommitLog": (["-b", "{broker_addr}"], r"success"),
    "cleanUnusedTopic": (["-b", "{broker_addr}"], r"success"),
    # never end by themselves: run in the background, last. startMonitoring prints nothing: its first round
    # (after 20 s) goes to the client log, checked in test_command_works
    "clusterRT": (["-a", "3", "-s", "64", "-i", "600"], r"DefaultCluster\s+broker-a\s+\d+\.\d+\s+3\s+0"),
    "startMonitoring": ([], r"^\s*$"),
}
#: commands the table says do not work: what mqadmin prints instead (checked, so the table stays true)
DOCUMENTED: dict[str, str] = {
    "producer": r"JSONException: default constructor not found\. class "
                r"org\.apache\.rocketmq\.common\.protocol\.body\.ProducerTableInfo",
    "updateAclConfig": r"CODE: 209 ",
    "deleteAclConfig": r"CODE: 210 ",
    "updateGlobalWhiteAddr": r"CODE: 211 ",
    "clusterAclConfigVersion": r"CODE: 1  DESC: ACL is disabled on this broker \(aclEnable=false\)",
}
#: commands that never end: how long to let them run (seconds)
BACKGROUND = {"clusterRT": 5, "startMonitoring": 32}


def readme_table() -> dict[str, str]:
    """The README table: command -> what it says ("works", or what the broker answers instead)."""
    text = README.read_text()
    start = text.index(TABLE_TITLE)
    rows: dict[str, str] = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("#"):
            break
        m = re.match(r"\|\s*`(\w+)`\s*\|\s*([^|]*?)\s*\|", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def working() -> list[str]:
    return [name for name, status in readme_table().items() if status.startswith("works")]


def not_working() -> list[str]:
    return [name for name, status in readme_table().items() if not status.startswith("works")]


@pytest.fixture(scope="module")
def state(java_clients, tmp_path_factory):
    """The realistic broker: see the module docstring. Yields the values the commands' arguments use."""
    tmp = tmp_path_factory.mktemp("mqadmin")
    emu = EmulatorThread(tmp / "store").start()
    ns = emu.namesrv_addr
    handles = []
    try:
        begin_ms = int(time.time() * 1000) - 1000
        producer = java_clients.start("Produce", ns, COUNT, TOPIC, "TagA", PRODUCER_GROUP, "trace", 600,
                                      timeout=660, home=tmp / "producer")
        handles.append(producer)
        assert producer.wait_for("sent_all", 60), producer.describe()
        sent = producer.of("sent")
        assert len(sent) == COUNT and all(e["status"] == "SEND_OK" for e in sent), producer.describe()
        consumer = java_clients.start("PushConsume", ns, "CLUSTERING", GROUP, COUNT, 60, TOPIC, "first", "trace",
                                      600, timeout=660, home=tmp / "consumer")
        handles.append(consumer)
        assert consumer.wait_for("all_consumed", 60), consumer.describe()

        def settled() -> bool:
            committed = emu.call(lambda: sum(emu.broker.consumer_offset_manager.query_offsets_of_group(
                GROUP, TOPIC).values()))
            traces = emu.call(lambda: sum(max(0, emu.broker.store.get_max_offset_in_queue(TRACE_TOPIC, q))
                                          for q in range(8)))
            return committed == COUNT and traces >= 2
        deadline = time.monotonic() + 30
        while not settled():
            assert time.monotonic() < deadline, "offsets not committed or traces not stored in 30 s"
            time.sleep(0.5)
        first = sent[0]
        home = tmp / "mqadmin"
        home.mkdir()
        yield {"ns": ns, "broker_addr": emu.broker.broker_addr, "msg_id": first["msgId"],
               "offset_msg_id": first["offsetMsgId"], "queue_id": first["queueId"],
               "queue_offset": first["queueOffset"], "begin_ms": begin_ms, "home": home,
               "client_id": consumer.of("consumer_started")[0]["clientId"]}
    finally:
        for h in handles:
            h.stop()
        emu.close()


@pytest.fixture(scope="module")
def outputs(java_clients, state) -> dict[str, str | None]:
    """The output of every command in the table, from one mqadmin JVM."""
    names = [n for n in COMMANDS if n in readme_table()]
    batch: list = []
    for name in names:
        args = [a.format(**state) for a in COMMANDS[name][0]]
        line = [name, "-n", state["ns"], *args]
        batch.append((line, BACKGROUND[name]) if name in BACKGROUND else line)
    out = java_clients.mqadmin_batch(batch, timeout=600, home=state["home"])
    return dict(zip(names, out))


def test_readme_lists_every_registered_command(java_clients):
    """The table has exactly the commands mqadmin 4.9.8 registers (its help), plus getConsumerStatus, and an
    argument line here for each one it says works."""
    help_text = java_clients.mqadmin()
    registered = set(re.findall(r"(?m)^ {3}(\w+) +\S", help_text))
    table = readme_table()
    assert len(registered) > 50, help_text
    assert set(table) == registered | {"getConsumerStatus"}
    assert set(working()) <= set(COMMANDS)
    assert set(not_working()) <= set(DOCUMENTED)


@pytest.mark.parametrize("command", working())
def test_command_works(outputs, state, command):
    home = state["home"]
    out = outputs[command]
    assert out is not None, f"mqadmin never ran {command}: an earlier command made it exit"
    failure = FAILURE.search(out)
    assert failure is None, f"{command}: {failure.group(0)!r} in its output:\n{out}"
    assert re.search(COMMANDS[command][1], out), f"{command}: expected {COMMANDS[command][1]!r} in:\n{out}"
    if command == "startMonitoring":  # one round: each group's undone messages and running info, to the log
        log = (home / "logs" / "rocketmqlogs" / "rocketmq_client.log").read_text(errors="replace")
        rounds = log.split("beginRound")
        assert len(rounds) > 1 and "endRound" in rounds[1], log[-3000:]
        assert f"consumerGroup={GROUP}" in rounds[1] and "Exception" not in rounds[1], rounds[1]


@pytest.mark.parametrize("command", not_working())
def test_command_answers_as_documented(outputs, command):
    out = outputs[command]
    assert out is not None and re.search(DOCUMENTED[command], out), \
        f"{command}: the README's entry is out of date:\n{out}"
