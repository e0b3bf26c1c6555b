"""The entities file (`serve --entities FILE`, ROCKETMQ_EMULATOR_ENTITIES): topics, groups and KV settings applied
at start and again at every start, every mistake reported (file, entity, field) before anything starts, and
`admin exportEntities` writing a running broker's entities in the same format; with the official Java 4.9.8
client on a broker that creates no topic on send, and with the 5.x Python client on a declared FIFO topic."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.emulator_process import launch_emulator

ROOT = Path(__file__).resolve().parents[1]
ENTITIES_YAML = """\
topics:
  - {name: Orders, queues: 4}
  - {name: Payments, readQueueNums: 2, writeQueueNums: 2, messageType: FIFO, order: true}
groups:
  - {name: billing, retryMaxTimes: 3}
  - {name: audit, consumeBroadcastEnable: false, consumeMessageOrderly: true}
kv:
  - {namespace: ORDER_TOPIC_CONFIG, key: Payments, value: "broker-a:2"}
"""
EXPORTED = {
    "topics": [{"name": "Orders", "queues": 4}, {"name": "Payments", "queues": 2, "order": True,
                                                  "messageType": "FIFO"}],
    "groups": [{"name": "audit", "consumeBroadcastEnable": False, "consumeMessageOrderly": True},
               {"name": "billing", "retryMaxTimes": 3}],
    "kv": [{"namespace": "ORDER_TOPIC_CONFIG", "key": "Payments", "value": "broker-a:2"}],
}


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*COMMAND, *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NAMESRV_ADDR": ""})
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def exported(namesrv: str) -> dict:
    return json.loads(cli("admin", "exportEntities", "-n", namesrv).stdout)


def test_the_file_is_applied_at_start_and_exported_the_same(tmp_path):
    entities = tmp_path / "entities.yaml"
    entities.write_text(ENTITIES_YAML)
    broker = launch_emulator(tmp_path / "a", "--entities", str(entities))
    try:
        assert exported(broker.namesrv_addr) == EXPORTED
        route = json.loads(cli("admin", "topicRoute", "-n", broker.namesrv_addr, "-t", "Payments", "--json").stdout)
        assert [(q["readQueueNums"], q["writeQueueNums"]) for q in route["queueDatas"]] == [(2, 2)]
        out = tmp_path / "exported.json"
        cli("admin", "exportEntities", "-n", broker.namesrv_addr, "-f", str(out))
    finally:
        broker.stop()
    again = launch_emulator(tmp_path / "b", "--entities", str(out))  # a fresh store from the export
    try:
        assert exported(again.namesrv_addr) == EXPORTED
    finally:
        again.stop()


def test_every_start_applies_the_file_again_and_leaves_the_rest_alone(tmp_path):
    """Idempotent: the same file changes nothing at a restart (no topic logged again); a changed file wins over
    what a client changed meanwhile; a topic the file does not name stays as the clients made it."""
    entities = tmp_path / "entities.json"
    entities.write_text(json.dumps({"topics": [{"name": "Orders", "queues": 4}]}))
    broker = launch_emulator(tmp_path, "--entities", str(entities))
    try:
        ns = broker.namesrv_addr
        cli("admin", "updateTopic", "-n", ns, "-t", "Orders", "-r", "6", "-w", "6")
        cli("admin", "updateTopic", "-n", ns, "-t", "Runtime", "-r", "3", "-w", "3")
        log_before = broker.log_path.read_text().count("topic Orders:")
        broker.restart()
        doc = exported(broker.namesrv_addr)
        assert {"name": "Orders", "queues": 4} in doc["topics"] and {"name": "Runtime", "queues": 3} in doc["topics"]
        assert broker.log_path.read_text().count("topic Orders:") == log_before + 1  # put back to 4, once
        broker.restart()
        assert broker.log_path.read_text().count("topic Orders:") == log_before + 1  # unchanged: nothing logged
        entities.write_text(json.dumps({"topics": [{"name": "Orders", "queues": 2, "perm": 4}]}))
        broker.restart()
        assert {"name": "Orders", "queues": 2, "perm": 4} in exported(broker.namesrv_addr)["topics"]
    finally:
        broker.stop()


BAD = """\
topics:
  - {name: "bad topic", queues: 4}
  - {name: Payments, queues: 0, messageType: FIFOX}
  - {name: Payments}
  - {name: Refunds, colour: red}
groups:
  - {name: billing, retryMaxTimes: three, consumeFast: true}
  - just-a-name
kv:
  - {namespace: ORDER_TOPIC_CONFIG}
"""


def test_every_mistake_is_one_line_naming_the_file_entity_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    proc = cli("serve", "--ephemeral", "--namesrv-port", "0", "--broker-port", "0", "--entities", str(bad),
               check=False)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [f"error: {bad}: {line}" for line in [
        "topics[0]: topic 'bad topic' is invalid: use letters, digits and the characters % | _ -",
        "topics[1] 'Payments': queues 0 is not a whole number from 1 to 1024",
        "topics[1] 'Payments': messageType 'FIFOX': use one of NORMAL, FIFO, DELAY, TRANSACTION, MIXED",
        "topics[2] 'Payments': declared twice",
        "topics[3] 'Refunds': unknown field 'colour' (a topic has name, queues, readQueueNums, writeQueueNums, "
        "perm, order, messageType)",
        "groups[0] 'billing': retryMaxTimes 'three' is not a whole number of at least -1",
        "groups[0] 'billing': unknown field 'consumeFast' (a group has name, consumeEnable, consumeFromMinEnable, "
        "consumeBroadcastEnable, retryQueueNums, retryMaxTimes, brokerId, whichBrokerWhenConsumeSlowly, "
        "notifyConsumerIdsChangedEnable, consumeMessageOrderly, groupRetryPolicy)",
        "groups[1]: a group is a mapping with a name, not 'just-a-name'",
        "kv[0]: a setting is {namespace, key, value}, each a non-empty string, not {'namespace': "
        "'ORDER_TOPIC_CONFIG'}"]], proc.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"topics": [')
    proc = cli("serve", "--ephemeral", "--entities", str(broken), check=False)
    assert proc.returncode == 2
    assert proc.stderr == f"error: {broken}: not valid JSON: Expecting value: line 1 column 13 (char 12)\n"
    proc = cli("serve", "--ephemeral", "--entities", str(tmp_path / "missing.yaml"), check=False)
    assert proc.returncode == 2
    assert proc.stderr == f"error: cannot read the entities file '{tmp_path}/missing.yaml': No such file or directory\n"


def test_the_environment_variable_names_the_file(tmp_path):
    entities = tmp_path / "entities.json"
    entities.write_text(json.dumps({"topics": [{"name": "FromEnv", "queues": 1}]}))
    os.environ["ROCKETMQ_EMULATOR_ENTITIES"] = str(entities)
    try:
        broker = launch_emulator(tmp_path)
    finally:
        del os.environ["ROCKETMQ_EMULATOR_ENTITIES"]
    try:
        assert exported(broker.namesrv_addr)["topics"] == [{"name": "FromEnv", "queues": 1}]
    finally:
        broker.stop()


def test_the_java_client_uses_a_declared_topic_on_a_broker_that_creates_none(tmp_path, java_clients):
    """autoCreateTopicEnable=false: only the file's topic exists; the official Java 4.9.8 producer sends to it
    and a push consumer of the declared group reads every message (the group's retry settings as declared). The
    topic is typed FIFO: a remoting send is stored whatever its type, as the real 5.3.3 broker stores it (the type
    check is the gRPC proxy's)."""
    conf = tmp_path / "broker.conf"
    conf.write_text("autoCreateTopicEnable=false\n")
    entities = tmp_path / "entities.json"
    entities.write_text(json.dumps({"topics": [{"name": "Declared", "queues": 2, "messageType": "FIFO"}],
                                    "groups": [{"name": "GID_declared", "retryMaxTimes": 1}]}))
    broker = launch_emulator(tmp_path / "emu", "--config", str(conf), "--entities", str(entities))
    try:
        ns = broker.namesrv_addr
        sent = java_clients.run("Produce", ns, 5, "Declared", "TagA", "PID_declared", timeout=120,
                                home=tmp_path / "java-p")
        assert [e["status"] for e in sent.of("sent")] == ["SEND_OK"] * 5, sent.describe()
        refused = java_clients.run("Produce", ns, 1, "NotDeclared", "TagA", "PID_declared", timeout=120,
                                   home=tmp_path / "java-p2")
        assert not refused.of("sent") and refused.of("send_error"), refused.describe()
        got = java_clients.run("PushConsume", ns, "CLUSTERING", "GID_declared", 5, 60, "Declared", "first",
                               timeout=120, home=tmp_path / "java-c")
        assert sorted(e["body"] for e in got.of("consumed")) == [f"hello-java-{i}" for i in range(5)], \
            got.describe()
        assert {"name": "GID_declared", "retryMaxTimes": 1} in exported(ns)["groups"]
    finally:
        broker.stop()


@pytest.mark.timeout(300)
def test_a_5x_client_sends_to_a_declared_fifo_topic_and_a_normal_message_is_refused(tmp_path):
    """The file's `messageType: FIFO`: the official 5.x Python producer's messages with a message group are
    stored; one without (a NORMAL message) is refused: the route says the topic's queues accept FIFO only."""
    from .py5_client import run_py5
    entities = tmp_path / "entities.json"
    entities.write_text(json.dumps({"topics": [{"name": "Fifo", "queues": 2, "messageType": "FIFO"}]}))
    broker = launch_emulator(tmp_path / "emu", "--entities", str(entities), grpc=True)
    try:
        assert broker.grpc_endpoint is not None
        fifo = run_py5(["produce", "--endpoint", broker.grpc_endpoint, "--topic", "Fifo", "--count", "3",
                        "--message-group", "g1"], home=tmp_path / "py5", timeout=120)
        assert len(fifo.of("sent")) == 3 and not fifo.of("send_error"), fifo.describe()
        normal = run_py5(["produce", "--endpoint", broker.grpc_endpoint, "--topic", "Fifo", "--count", "1"],
                         home=tmp_path / "py5", timeout=120)
        assert not normal.of("sent") and normal.of("send_error"), normal.describe()
        # the route's accept_message_types (FIFO, from the file) make the client itself refuse it
        assert normal.of("send_error")[0]["error"] == (
            "IllegalArgumentException: current message type not match with queue accept message types, topic:Fifo, "
            "message_type:NORMAL, queue access type:FIFO"), normal.describe()
    finally:
        broker.stop()


ACL_ENTITIES = {
    "topics": [{"name": "AclOrders", "queues": 2}],
    "accounts": [{"accessKey": "orders_app", "secretKey": "orders_secret", "defaultTopicPerm": "DENY",
                  "defaultGroupPerm": "DENY", "topicPerms": ["AclOrders=PUB|SUB"], "groupPerms": ["GID_orders=SUB"]},
                 {"accessKey": "ops_admin", "secretKey": "ops_secret1", "admin": True}],
}


def test_acl_accounts_are_declared_and_the_java_client_signs_with_them(tmp_path, java_clients):
    """With --acl-enable true, the file's accounts go into the plain ACL file (the others there stay); the
    official Java client signing with a declared key sends, one with another key is refused; a restart with the
    same file leaves the ACL file as it is."""
    entities = tmp_path / "entities.json"
    entities.write_text(json.dumps(ACL_ENTITIES))
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text("accounts:\n  - accessKey: old_user\n    secretKey: old_secret1\n    admin: false\n")
    broker = launch_emulator(tmp_path / "emu", "--acl-enable", "true", "--acl-plain-file", str(acl_file),
                             "--entities", str(entities))
    try:
        ns = broker.namesrv_addr
        text = acl_file.read_text()
        assert "old_user" in text and "orders_app" in text and "ops_admin" in text, text
        sent = java_clients.run("AclClient", "produce", ns, "orders_app", "orders_secret", "AclOrders", 3,
                                timeout=120, home=tmp_path / "p")
        assert [e for e in sent.of("result") if e.get("ok")], sent.describe()
        refused = java_clients.run("AclClient", "produce", ns, "nobody_here", "nobody_secret", "AclOrders", 1,
                                   timeout=120, home=tmp_path / "p2")
        assert not [e for e in refused.of("result") if e.get("ok")], refused.describe()
        stamp = acl_file.stat().st_mtime_ns
        broker.restart()
        assert acl_file.stat().st_mtime_ns == stamp  # nothing to change: not rewritten
    finally:
        broker.stop()


def test_an_account_the_broker_would_refuse_is_refused_before_the_start(tmp_path):
    entities = tmp_path / "entities.yaml"
    entities.write_text("accounts:\n  - {accessKey: abc, secretKey: short}\n  - {accessKey: fine_key, "
                        "secretKey: fine_secret, colour: red}\n")
    proc = cli("serve", "--ephemeral", "--entities", str(entities), check=False)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"error: {entities}: accounts[1] 'fine_key': unknown field 'colour' (an account has accessKey, secretKey, "
        f"whiteRemoteAddress, admin, defaultTopicPerm, defaultGroupPerm, topicPerms, groupPerms)"], proc.stderr
    entities.write_text("accounts:\n  - {accessKey: abc, secretKey: short}\n")
    proc = cli("serve", "--ephemeral", "--entities", str(entities), check=False)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: {entities}: accounts[0] 'abc': "), proc.stderr


def test_a_retry_policy_is_exported_as_declared_and_a_bad_one_is_refused(tmp_path):
    entities = tmp_path / "entities.json"
    declared = {"name": "payments", "groupRetryPolicy": {
        "type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": 1000, "max": 60000, "multiplier": 2}}}
    entities.write_text(json.dumps({"groups": [declared]}))
    broker = launch_emulator(tmp_path / "emu", "--entities", str(entities))
    try:
        assert exported(broker.namesrv_addr)["groups"] == [declared]
    finally:
        broker.stop()
    entities.write_text(json.dumps({"groups": [{"name": "payments", "groupRetryPolicy": {"type": "LINEAR"}}]}))
    proc = cli("serve", "--ephemeral", "--entities", str(entities), check=False)
    assert proc.returncode == 2 and "groups[0] 'payments': use groupRetryPolicy: {type: EXPONENTIAL" in proc.stderr
