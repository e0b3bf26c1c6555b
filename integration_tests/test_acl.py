"""ACL with the official clients: the Java 4.9.8 client signing with AclClientRPCHook (integration_tests/java/src/
AclClient.java) against a broker with aclEnable=true, mqadmin 4.9.8's ACL commands (mqadmin signs every request
with the account of its conf/tools.yml, rocketmq2, an admin here), the C++ client's session credentials, the 5.x Python
client's credentials on the gRPC front, and `serve` refusing a bad ACL file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocketmq_emulator.broker.core.acl.validator import RELOAD_CHECK_S
from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.emulator_thread import EmulatorThread

ROOT = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).resolve().with_name("java") / "src" / "AclClient.java"
#: py5_driver.py signing with $RMQ_ACCESS_KEY / $RMQ_SECRET_KEY (the 5.x Python client's credentials)
PY5_DRIVER = Path(__file__).resolve().with_name("py5_acl_driver.py")

ACCOUNTS = """\
accounts:
  - accessKey: app_user
    secretKey: app_secret1
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - AclTopic=PUB|SUB
      - ReadOnlyTopic=SUB
    groupPerms:
      - GID_acl=SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    admin: true
"""


@pytest.fixture(scope="module")
def acl_java(java_clients):
    """The Java clients; the ACL driver (AclClient.java) is compiled with the others (java_client.DRIVERS)."""
    assert (java_clients.classes / "AclClient.class").exists()
    return java_clients


@pytest.fixture
def acl_emulator(tmp_path):
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACCOUNTS)
    emu = EmulatorThread(tmp_path / "store", aclEnable=True, aclPlainFile=str(acl_file),
                         topics=[("AclTopic", 4), ("ReadOnlyTopic", 4)]).start()
    try:
        yield emu, acl_file
    finally:
        emu.close()


def result(handle) -> dict:
    events = handle.wait()
    results = [e for e in events if e.get("event") == "result"]
    assert results, handle.describe()
    return results[-1] | {"events": events}


def errors(outcome: dict) -> str:
    return " ".join(e.get("error", "") for e in outcome["events"] if "error" in e)


def test_the_right_key_sends_and_consumes(acl_emulator, acl_java, tmp_path):
    emu, _ = acl_emulator
    ns = emu.namesrv_addr
    sent = result(acl_java.run("AclClient", "produce", ns, "app_user", "app_secret1", "AclTopic", 5, timeout=90,
                               home=tmp_path / "p"))
    assert sent["ok"] and sent["sent_ok"] == 5, sent
    got = result(acl_java.run("AclClient", "consume", ns, "app_user", "app_secret1", "AclTopic", "GID_acl", 5, 60,
                              timeout=90, home=tmp_path / "c"))
    assert got["ok"] and got["consumed"] >= 5, got
    assert sorted({e["body"] for e in got["events"] if e.get("event") == "consumed"}) == [f"acl-{i}" for i in range(5)]


def test_a_wrong_secret_and_a_missing_permission_are_refused(acl_emulator, acl_java, tmp_path):
    emu, _ = acl_emulator
    ns = emu.namesrv_addr
    wrong = result(acl_java.run("AclClient", "produce", ns, "app_user", "not-the-secret", "AclTopic", 1, timeout=90,
                                home=tmp_path / "w"))
    assert not wrong["ok"] and "Check signature failed for accessKey=app_user" in errors(wrong), wrong
    denied = result(acl_java.run("AclClient", "produce", ns, "app_user", "app_secret1", "ReadOnlyTopic", 1,
                                 timeout=90, home=tmp_path / "d"))
    assert not denied["ok"] and "No default permission for topic:ReadOnlyTopic" in errors(denied), denied
    assert emu.broker.store.get_max_offset_in_queue("ReadOnlyTopic", 0) == 0  # nothing stored


def test_an_admin_only_request_needs_an_admin_account(acl_emulator, acl_java, tmp_path):
    emu, _ = acl_emulator
    ns, ba = emu.namesrv_addr, emu.broker.broker_addr
    refused = result(acl_java.run("AclClient", "createTopic", ns, "app_user", "app_secret1", ba, "NewTopic",
                                  timeout=90, home=tmp_path / "u"))
    assert not refused["ok"] and "Need admin permission for request code=17, but accessKey=app_user is not" in \
        refused["error"], refused
    assert emu.broker.topic_config_manager.get("NewTopic") is None
    made = result(acl_java.run("AclClient", "createTopic", ns, "rocketmq2", "12345678", ba, "NewTopic", timeout=90,
                               home=tmp_path / "a"))
    assert made["ok"], made
    assert emu.broker.topic_config_manager.get("NewTopic") is not None


def test_mqadmin_acl_commands(acl_emulator, acl_java):
    emu, acl_file = acl_emulator
    ns, ba = emu.namesrv_addr, emu.broker.broker_addr
    update, version, white, delete, delete_again = acl_java.mqadmin_batch([
        ["updateAclConfig", "-n", ns, "-b", ba, "-a", "newuser1", "-s", "newsecret1", "-i", "PUB",
         "-t", "AclTopic=SUB,ReadOnlyTopic=PUB", "-m", "false"],
        ["clusterAclConfigVersion", "-n", ns, "-c", "DefaultCluster"],
        ["updateGlobalWhiteAddr", "-n", ns, "-b", ba, "-g", "10.10.10.*,10.10.11.*"],
        ["deleteAclConfig", "-n", ns, "-b", ba, "-a", "app_user"],
        ["deleteAclConfig", "-n", ns, "-b", ba, "-a", "app_user"],
    ])
    assert f"create or update plain access config to {ba} success." in update, update
    assert "broker-a" in version and "Exception" not in version, version
    assert f"update global white remote addresses to {ba} success." in white, white
    assert f"delete plain access config account from {ba} success." in delete, delete
    assert "CODE: 210" in delete_again and "The accesskey[app_user] corresponding to accessConfig has been deleted " \
                                          "failed." in delete_again, delete_again
    text = acl_file.read_text()
    assert "newuser1" in text and "ReadOnlyTopic=PUB" in text and "app_user" not in text and "10.10.11.*" in text
    acl = emu.broker.acl
    assert set(acl.acl.accounts) == {"rocketmq2", "newuser1"} and acl.acl.data_version.counter == 3
    # the version the file now holds is what clusterAclConfigVersion reports afterwards
    [after] = acl_java.mqadmin_batch([["clusterAclConfigVersion", "-n", ns, "-c", "DefaultCluster"]])
    [row] = [line.split() for line in after.splitlines() if line.startswith("DefaultCluster")]
    assert row[1:5] == ["broker-a", ba, str(acl_file), "3"], after  # name, address, file, version counter


def test_an_edit_on_disk_is_picked_up(acl_emulator, acl_java, tmp_path):
    emu, acl_file = acl_emulator
    acl_file.write_text(ACCOUNTS.replace("ReadOnlyTopic=SUB", "ReadOnlyTopic=PUB"))
    time.sleep(RELOAD_CHECK_S + 0.5)  # the broker looks at the file's time at most this often
    sent = result(acl_java.run("AclClient", "produce", emu.namesrv_addr, "app_user", "app_secret1", "ReadOnlyTopic",
                               1, timeout=90, home=tmp_path / "e"))
    assert sent["ok"], sent


CPP_PRODUCER = """\
import sys
from rocketmq.client import Message, Producer
ns, ak, sk, topic = sys.argv[1:5]
producer = Producer("PID_cpp_acl")
producer.set_namesrv_addr(ns)
producer.set_session_credentials(ak, sk, "ALIYUN")
producer.start()
message = Message(topic)
message.set_body("cpp-acl")
try:
    print("SENT", producer.send_sync(message).status)
except Exception as exc:
    print("ERROR", exc)
producer.shutdown()
"""


def test_the_cpp_client_signs_with_its_session_credentials(acl_emulator, tmp_path):
    """The C++ client (rocketmq 0.4.4) signs as AclClientRPCHook does, with its OnsChannel field among the signed
    ones: the right secret sends, a wrong one stores nothing."""
    pytest.importorskip("rocketmq.client")
    emu, _ = acl_emulator
    script = tmp_path / "cpp_acl_producer.py"
    script.write_text(CPP_PRODUCER)

    def send(secret: str) -> str:
        proc = subprocess.run([sys.executable, str(script), emu.namesrv_addr, "app_user", secret, "AclTopic"],
                              capture_output=True, text=True, timeout=90, cwd=tmp_path,
                              env={**os.environ, "HOME": str(tmp_path)})
        return proc.stdout
    assert "SENT 0" in send("app_secret1")  # SendStatus.OK
    assert "ERROR" in send("not-the-secret")
    stored = sum(emu.broker.store.get_max_offset_in_queue("AclTopic", q) for q in range(4))
    assert stored == 1


@pytest.mark.parametrize("content, problem", [
    ("accounts: [{accessKey: short, secretKey: 12345678}]", "cannot be null and length should longer than 6"),
    ("accounts: [unclosed", "not YAML"),
])
def test_serve_refuses_a_bad_acl_file_in_one_line(tmp_path, content, problem):
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(content)
    proc = subprocess.run([sys.executable, *COMMAND[1:], "serve", "--store-dir", str(tmp_path / "store"),
                           "--namesrv-port", "0", "--broker-port", "0", "--acl-enable", "true",
                           "--acl-plain-file", str(acl_file)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out
    [line] = [x for x in out.splitlines() if "error" in x.lower()]
    assert str(acl_file) in line and problem in line, line


# -- the 5.x Python client with credentials (gRPC) -------------------------------------------------------------
def run_py5_signed(endpoint: str, home: Path, access_key: str, secret_key: str, *args: str) -> list[dict]:
    from rocketmq_emulator.testing.py5_env import py5_python
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(home), "PYTHONUNBUFFERED": "1", "RMQ_ACCESS_KEY": access_key,
           "RMQ_SECRET_KEY": secret_key}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(py5_python()), str(PY5_DRIVER), *args, "--endpoint", endpoint], cwd=home, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_the_5x_client_signs_with_its_credentials(tmp_path):
    pytest.importorskip("grpc")
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACCOUNTS)
    emu = EmulatorThread(tmp_path / "store", aclEnable=True, aclPlainFile=str(acl_file), grpcServerPort=0,
                         topics=[("AclTopic", 4), ("ReadOnlyTopic", 4)]).start()
    try:
        endpoint = f"127.0.0.1:{emu.emulator.grpc_port}"
        sent = run_py5_signed(endpoint, tmp_path / "ok", "app_user", "app_secret1", "produce", "--topic", "AclTopic",
                              "--count", "2")
        assert [e["event"] for e in sent if e["event"] == "sent"] == ["sent", "sent"], sent
        wrong = run_py5_signed(endpoint, tmp_path / "wrong", "app_user", "not-the-secret", "produce", "--topic",
                               "AclTopic", "--count", "1")
        # its route query is refused (PERMISSION_DENIED), which the client reports as no route
        assert not [e for e in wrong if e["event"] == "sent"] and [e for e in wrong if e["event"] == "send_error"], \
            wrong
        denied = run_py5_signed(endpoint, tmp_path / "denied", "app_user", "app_secret1", "produce", "--topic",
                                "ReadOnlyTopic", "--count", "1")
        assert not [e for e in denied if e["event"] == "sent"] and "send_error" in json.dumps(denied), denied
        assert sum(emu.broker.store.get_max_offset_in_queue("AclTopic", q) for q in range(4)) == 2
    finally:
        emu.close()
