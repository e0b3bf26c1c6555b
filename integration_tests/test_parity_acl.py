"""ACL parity: the requests of tests/parity/acl/cases.json (signed with the accounts of acl/plain_acl.yml, or not)
answered by the emulator with `aclEnable=true` as Apache RocketMQ 4.9.8 answered them (acl/answers.json).

With `compat=4.9` code and remark are 4.9.8's word for word (a refusal is SYSTEM_ERROR with the AclException's
text and first stack frame); in the default mode the code is the same and the remark is the AclException's
message alone. Cases marked `"compare": "code"` compare the code only (their remark holds a time or an
address); `"compat_only"` ones are compared with compat=4.9 only (GET_BROKER_CLUSTER_ACL_CONFIG, which 4.9.8 does
not support and the default mode answers as 5.x does). Known differences, each with its reason, are in `DIFFERENCES`.

Record again against a real broker started with aclEnable=true and this plain_acl.yml as its
conf/plain_acl.yml (see /work/shared/realbroker; the file must be writable: the cases edit it, and leave it as
they found it but for the dataVersion):

    python -m integration_tests.test_parity_acl record 127.0.0.1:PORT /path/to/rmqhome/conf/plain_acl.yml

answers.json was recorded so, and a second run against the same broker answered the same.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rocketmq_emulator.broker.core.acl.signature import signed_fields
from rocketmq_emulator.protocol import FrameDecoder, RemotingCommand, encode_command
from rocketmq_emulator.protocol.message import encode_properties

HERE = Path(__file__).resolve().parents[1] / "tests" / "parity" / "acl"
CASES = json.loads((HERE / "cases.json").read_text())["cases"]
ANSWERS_FILE = HERE / "answers.json"
SECRETS = {"RocketMQ": "12345678", "rocketmq2": "12345678"}
#: case name -> why the emulator answers differently (in both modes)
DIFFERENCES: dict[str, str] = {}

pytestmark = pytest.mark.skipif(not ANSWERS_FILE.exists(), reason="acl/answers.json not recorded")


def build(case: dict[str, Any], acl_file: str) -> RemotingCommand:
    """The request of a case, signed as AclClientRPCHook signs it when the case says so."""
    ext: dict[str, str] = {k: v.replace("${aclFile}", acl_file) for k, v in case.get("ext", {}).items()}
    body = b""
    if "send" in case:
        ext = {"a": "PG_ACL", "b": case["send"], "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1700000000000",
               "h": "0", "i": encode_properties({"TAGS": "A", "UNIQ_KEY": "7F0000010001000000000000000A"}),
               "j": "0", "k": "false", "m": "false"}
        body = b"acl parity"
    elif "pull" in case:
        topic, group = case["pull"]
        ext = {"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
               "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*",
               "subVersion": "0", "expressionType": "TAG"}
    elif "heartbeat" in case:
        group, topic = case["heartbeat"]
        body = json.dumps({"clientID": "127.0.0.1@acl", "producerDataSet": [], "consumerDataSet": [{
            "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False, "subscriptionDataSet": [{
                "classFilterMode": False, "topic": topic, "subString": "*", "tagsSet": [], "codeSet": [],
                "subVersion": 0, "expressionType": "TAG"}]}]}).encode()
    elif "commit" in case:
        topic, group = case["commit"]
        ext = {"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "0"}
    elif "create_topic" in case:
        ext = {"topic": case["create_topic"], "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4",
               "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}
    if "sign" in case:
        ext = signed_fields(ext, body, case["sign"], case.get("secret") or SECRETS[case["sign"]])
    return RemotingCommand.request(case["code"], ext, body)


def ask(sock: socket.socket, cmd: RemotingCommand) -> RemotingCommand:
    sock.sendall(b"".join(encode_command(cmd)))
    decoder = FrameDecoder()
    while True:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("closed")
        decoder.feed(data)
        for answer in decoder:
            if answer.opaque == cmd.opaque:
                return answer


def run_cases(addr: str, acl_file: str) -> dict[str, dict[str, Any]]:
    """Each case's answer: code and remark (retried up to 15 s while the broker has not yet read its file
    again, for the cases after an edit: 4.9.8 watches the file every few seconds)."""
    host, _, port = addr.rpartition(":")
    out: dict[str, dict[str, Any]] = {}
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        for case in CASES:
            deadline = time.monotonic() + (15 if case.get("wait_reload") else 0)
            while True:
                answer = ask(sock, build(case, acl_file))
                if answer.code == 0 or time.monotonic() >= deadline:
                    break
                time.sleep(0.5)
            out[case["name"]] = {"code": answer.code, "remark": answer.remark}
    return out


@pytest.fixture(params=["4.9", "5"], ids=["compat-4.9", "default"])
def emulator(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    from rocketmq_emulator.testing.emulator_thread import EmulatorThread
    acl_file = tmp_path / "plain_acl.yml"
    shutil.copy(HERE / "plain_acl.yml", acl_file)
    emu = EmulatorThread(tmp_path / "store", aclEnable=True, aclPlainFile=str(acl_file),
                         compat=request.param).start()
    try:
        yield emu, str(acl_file), request.param
    finally:
        emu.close()


def test_the_emulator_answers_acl_requests_as_4_9_8(emulator: Any) -> None:
    emu, acl_file, compat = emulator
    real = json.loads(ANSWERS_FILE.read_text())["answers"]
    got = run_cases(emu.broker.broker_addr, acl_file)
    wrong = []
    for case in CASES:
        name = case["name"]
        want, have = real[name], got[name]
        if name in DIFFERENCES or (case.get("compat_only") and compat != "4.9"):
            continue
        same = want["code"] == have["code"]
        if case.get("compare") != "code" and same:
            if compat == "4.9" or want["code"] != 1:
                same = want["remark"] == have["remark"]
            else:  # the AclException's message, without 4.9.8's class name and stack frame
                same = bool(have["remark"]) and want["remark"].startswith(
                    f"org.apache.rocketmq.acl.common.AclException: {have['remark']}, ")
        if not same:
            wrong.append(f"{name}: real {want}, emulator {have}")
    assert not wrong, "\n".join(wrong)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "record":
        sys.exit(__doc__)
    answers = run_cases(sys.argv[2], sys.argv[3])
    ANSWERS_FILE.write_text(json.dumps({"recorded_against": "Apache RocketMQ 4.9.8, aclEnable=true",
                                        "answers": answers}, indent=2) + "\n")
    print(json.dumps(answers, indent=2))
