"""ACL as 4.9.8 checks it (broker/core/acl/): the request signature computed by hand from AclClientRPCHook's rule,
the permission table, white remote addresses, the plain ACL file (loading, refusing a bad one, reloading), and the
check of a broker with aclEnable=true (testing/broker_harness.py)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from pathlib import Path

import pytest

from rocketmq_emulator.broker.core.acl import plain_acl, plain_acl_path
from rocketmq_emulator.broker.core.acl.permission import (ANY, DENY, PUB, SUB, AclException, check_permission,
                                                          parse_perm)
from rocketmq_emulator.broker.core.acl.remote_address import address_matcher
from rocketmq_emulator.broker.core.acl.signature import request_content, sign, signed_fields
from rocketmq_emulator.broker.core.acl.validator import PlainAccessValidator, resources
from rocketmq_emulator.broker.settings import emulator_config, read_broker_conf
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.testing.broker_harness import BrokerHarness

R = ResponseCode

ACL = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB]
    groupPerms: [groupA=DENY, groupB=PUB|SUB]
  - accessKey: rocketmq2
    secretKey: 87654321
    admin: true
"""


# -- the signature ---------------------------------------------------------------------------------
def test_the_signature_is_hmac_sha1_of_the_sorted_field_values_and_the_body_computed_by_hand():
    ext = {"b": "TopicTest", "a": "PG", "AccessKey": "RocketMQ", "Z": "z"}
    # Java's TreeMap order: upper case before lower case (UTF-16 code units): AccessKey, Z, a, b
    content = b"RocketMQ" + b"z" + b"PG" + b"TopicTest" + b"hello"
    by_hand = base64.b64encode(hmac.new(b"12345678", content, hashlib.sha1).digest()).decode()
    assert request_content(ext, b"hello") == content
    assert sign(content, "12345678") == by_hand
    assert signed_fields({"b": "TopicTest", "a": "PG", "Z": "z"}, b"hello", "RocketMQ", "12345678") == {
        **ext, "Signature": by_hand}


def test_the_broker_leaves_the_signature_and_the_unique_key_query_flag_out_of_the_content():
    ext = {"topic": "T", "Signature": "xyz", "_UNIQUE_KEY_QUERY": "true", "AccessKey": "k"}
    assert request_content(ext, None) == b"kT"
    assert request_content(ext, None, client=True) == b"k" + b"true" + b"T"  # the client signs it (sorted before t)


def test_a_security_token_is_signed_too():
    fields = signed_fields({"a": "1"}, b"", "ak", "sk", security_token="tok")
    assert fields["SecurityToken"] == "tok"
    assert fields["Signature"] == sign(b"ak" + b"tok" + b"1", "sk")


# -- permissions -----------------------------------------------------------------------------------
@pytest.mark.parametrize("needed, owned, granted", [
    (PUB, PUB, True), (PUB, SUB, False), (SUB, PUB | SUB, True), (PUB, PUB | DENY, False),
    (ANY, SUB, True), (ANY, PUB, True), (ANY, DENY, False), (SUB, DENY, False)])
def test_the_permission_table(needed, owned, granted):
    assert check_permission(needed, owned) is granted


def test_permission_texts():
    assert [parse_perm(t) for t in ("PUB", "SUB", "PUB|SUB", "SUB|PUB", "DENY", None, "ALL", " SUB ")] == [
        PUB, SUB, PUB | SUB, PUB | SUB, DENY, DENY, DENY, SUB]


def _cmd(code, ext=None, body=b""):
    return RemotingCommand.request(code, ext or {}, body)


def test_what_each_request_needs():
    assert resources(_cmd(RequestCode.SEND_MESSAGE_V2, {"a": "PG", "b": "T"})) == {"T": PUB}
    # a send to a retry topic needs SUB on the group (the producer group field, as 4.9.8 reads it)
    assert resources(_cmd(RequestCode.SEND_MESSAGE_V2, {"a": "G", "b": "%RETRY%G"})) == {"%RETRY%G": SUB}
    assert resources(_cmd(RequestCode.SEND_MESSAGE, {"producerGroup": "G", "topic": "%RETRY%G"})) == {}
    assert resources(_cmd(RequestCode.PULL_MESSAGE, {"consumerGroup": "G", "topic": "T"})) == {
        "T": SUB, "%RETRY%G": SUB}
    assert resources(_cmd(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "G", "topic": "T"})) == {
        "T": SUB, "%RETRY%G": SUB}
    assert resources(_cmd(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "G"})) == {"%RETRY%G": SUB}
    assert resources(_cmd(RequestCode.QUERY_MESSAGE, {"topic": "T"})) == {"T": SUB}
    for code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        assert resources(_cmd(code, {"consumerGroup": "G"})) == {"%RETRY%G": SUB}
    beat = {"clientID": "c", "consumerDataSet": [{"groupName": "G", "subscriptionDataSet": [
        {"topic": "T1"}, {"topic": "%RETRY%G"}]}], "producerDataSet": [{"groupName": "P"}]}
    assert resources(_cmd(RequestCode.HEART_BEAT, body=json.dumps(beat).encode())) == {
        "%RETRY%G": SUB, "T1": SUB}
    # as in 4.9.8: a batch send and the admin requests name no resource
    assert resources(_cmd(RequestCode.SEND_BATCH_MESSAGE, {"a": "PG", "b": "T"})) == {}
    assert resources(_cmd(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "T"})) == {}


# -- white remote addresses ------------------------------------------------------------------------
@pytest.mark.parametrize("pattern, yes, no", [
    ("*", ["1.2.3.4", "::1"], []),
    ("", [], ["127.0.0.1"]),
    (None, [], ["127.0.0.1"]),
    ("192.168.0.*", ["192.168.0.1", "192.168.0.255"], ["192.168.1.1", "10.0.0.1"]),
    ("192.168.*.*", ["192.168.7.1"], ["192.169.0.1"]),
    ("192.168.1.1-20", ["192.168.1.1", "192.168.1.20"], ["192.168.1.21", "192.168.2.5"]),
    ("192.168.0.{1,2}", ["192.168.0.1", "192.168.0.2"], ["192.168.0.3"]),
    ("10.1.1.1,10.1.1.2", ["10.1.1.2"], ["10.1.1.3"]),
    ("127.0.0.1", ["127.0.0.1"], ["127.0.0.2"]),
    ("::1", ["0:0:0:0:0:0:0:1"], ["::2"]),
    ("2001:db8::*", ["2001:db8::5"], ["2001:db9::5"]),
])
def test_white_remote_addresses(pattern, yes, no):
    match = address_matcher(pattern)
    assert all(match(a) for a in yes) and not any(match(a) for a in no)


@pytest.mark.parametrize("pattern", ["not-an-address", "192.168.0.300", "192.168.1.20-1", "1.2.{3,4}"])
def test_white_addresses_4_9_8_cannot_read_are_refused(pattern):
    with pytest.raises(AclException):
        address_matcher(pattern)


# -- the file --------------------------------------------------------------------------------------
def test_the_file_is_read_as_4_9_8_reads_it():
    acl = plain_acl.parse(ACL.encode())
    rocketmq = acl.accounts["RocketMQ"]
    assert rocketmq.secret_key == "12345678" and not rocketmq.admin  # a number in YAML is the key's text
    assert rocketmq.resource_perms == {"%RETRY%groupA": DENY, "%RETRY%groupB": PUB | SUB, "topicA": DENY,
                                       "topicB": PUB | SUB, "topicC": SUB}
    assert (rocketmq.default_topic_perm, rocketmq.default_group_perm) == (DENY, SUB)
    admin = acl.accounts["rocketmq2"]
    assert admin.admin and admin.resource_perms is None and admin.default_topic_perm == DENY
    assert acl.global_white_addrs == ["10.10.103.*"] and acl.data_version.counter == 0


@pytest.mark.parametrize("text, problem", [
    ("accounts: [{accessKey: short, secretKey: 12345678}]", "The accessKey=short and secretKey=12345678 cannot"),
    ("accounts: [{accessKey: longenough}]", "secretKey=null cannot be null"),
    ("accounts: [{accessKey: RocketMQ, secretKey: 12345678, topicPerms: [topicA]}]",
     "Parse resource permission failed for topic:topicA"),
    ("accounts: [{accessKey: RocketMQ, secretKey: 12345678, whiteRemoteAddress: nowhere}]",
     "Netaddress examine Exception netaddress is nowhere"),
    ("accounts: {accessKey: RocketMQ}", "accounts is not a list"),
    ("- just a list", "not a mapping"),
    ("accounts: [unclosed", "not YAML"),
])
def test_a_bad_file_is_refused_in_one_line_naming_it(tmp_path, text, problem):
    path = tmp_path / "plain_acl.yml"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        PlainAccessValidator(path)
    message = str(info.value)
    assert str(path) in message and problem in message and "\n" not in message


def test_a_missing_file_is_created_empty(tmp_path):
    path = tmp_path / "config" / "plain_acl.yml"
    validator = PlainAccessValidator(path)
    assert path.exists() and validator.acl.accounts == {}


def test_the_default_file_is_in_the_brokers_config_directory(tmp_path):
    config = emulator_config(storePathRootDir=str(tmp_path), aclEnable=True).broker
    assert config.acl_enable and plain_acl_path(config) == tmp_path / "config" / "plain_acl.yml"
    other = emulator_config(storePathRootDir=str(tmp_path), aclPlainFile="/etc/rmq/acl.yml").broker
    assert not other.acl_enable and plain_acl_path(other) == Path("/etc/rmq/acl.yml")


def test_acl_enable_is_read_from_a_broker_conf(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("aclEnable=true\n")
    assert read_broker_conf(conf) == ({"aclEnable": "true"}, [])
    conf.write_text("aclEnable=perhaps\n")
    with pytest.raises(ValueError, match="aclEnable"):
        read_broker_conf(conf)


def test_the_file_is_read_again_when_it_changes_and_a_broken_edit_keeps_the_accounts(tmp_path):
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL)
    validator = PlainAccessValidator(path)
    assert not validator.reload_if_changed()
    path.write_text(ACL.replace("rocketmq2", "rocketmq3"))
    os.utime(path, ns=(1, 1))
    assert validator.reload_if_changed() and set(validator.acl.accounts) == {"RocketMQ", "rocketmq3"}
    path.write_text("accounts: [unclosed")
    assert not validator.reload_if_changed() and set(validator.acl.accounts) == {"RocketMQ", "rocketmq3"}


def test_edits_bump_the_data_version_and_keep_the_other_accounts():
    acl = plain_acl.parse(ACL.encode())
    doc = plain_acl.with_account(acl, {"accessKey": "newuser1", "secretKey": "newsecret1", "admin": False,
                                       "defaultTopicPerm": "PUB", "topicPerms": ["topicB=SUB"]})
    edited = plain_acl.parse(plain_acl.dump(doc))
    assert set(edited.accounts) == {"RocketMQ", "rocketmq2", "newuser1"} and edited.data_version.counter == 1
    assert edited.accounts["newuser1"].resource_perms == {"topicB": SUB}
    again = plain_acl.parse(plain_acl.dump(plain_acl.without_account(edited, "newuser1")))
    assert set(again.accounts) == {"RocketMQ", "rocketmq2"} and again.data_version.counter == 2
    assert plain_acl.without_account(again, "newuser1") is None
    with pytest.raises(AclException, match="Parse resource permission error for topicB=ALL"):
        plain_acl.with_account(acl, {"accessKey": "newuser1", "secretKey": "newsecret1", "topicPerms": ["topicB=ALL"]})


# -- a broker with aclEnable=true ------------------------------------------------------------------
@pytest.fixture
async def acl_broker(tmp_path):
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL)
    async with BrokerHarness(tmp_path / "store", aclEnable=True, aclPlainFile=str(path)) as broker:
        yield broker


def _signed(code, ext, ak="RocketMQ", sk="12345678", body=b""):
    return code, signed_fields(ext, body, ak, sk)


async def test_every_request_is_checked(acl_broker):
    send = {"a": "PG", "b": "topicB", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0", "i": "",
            "j": "0", "k": "false"}
    r = await acl_broker.ask(RequestCode.SEND_MESSAGE_V2, send, b"x")
    assert (r.code, r.remark) == (R.SYSTEM_ERROR, "No accessKey is configured")
    r = await acl_broker.ask(RequestCode.SEND_MESSAGE_V2, signed_fields(send, b"x", "RocketMQ", "12345678"), b"x")
    assert r.code == R.SUCCESS
    r = await acl_broker.ask(RequestCode.SEND_MESSAGE_V2, signed_fields(send, b"x", "RocketMQ", "12345678"), b"y")
    assert (r.code, r.remark) == (R.SYSTEM_ERROR, "Check signature failed for accessKey=RocketMQ")  # body signed
    denied = {**send, "b": "topicA"}
    r = await acl_broker.ask(RequestCode.SEND_MESSAGE_V2, signed_fields(denied, b"x", "RocketMQ", "12345678"), b"x")
    assert (r.code, r.remark) == (R.SYSTEM_ERROR, "No default permission for topic:topicA")
    create = {"topic": "T2", "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6",
              "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}
    r = await acl_broker.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, signed_fields(create, b"", "RocketMQ", "12345678"))
    assert (r.code, r.remark) == (R.SYSTEM_ERROR,
                                  "Need admin permission for request code=17, but accessKey=RocketMQ is not")
    r = await acl_broker.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, signed_fields(create, b"", "rocketmq2", "87654321"))
    assert r.code == R.SUCCESS and acl_broker.broker.topic_config_manager.get("T2") is not None


async def test_is_admin_names_a_signed_request_of_an_admin_account(acl_broker):
    acl = acl_broker.broker.acl
    ext = {"topic": "T"}
    admin = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, signed_fields(ext, b"", "rocketmq2", "87654321"))
    assert acl.is_admin(admin, "127.0.0.1:50000")
    forged = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, signed_fields(ext, b"", "rocketmq2", "wrong!!"))
    assert not acl.is_admin(forged, "127.0.0.1:50000")
    user = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, signed_fields(ext, b"", "RocketMQ", "12345678"))
    assert not acl.is_admin(user, "127.0.0.1:50000")
    assert not acl.is_admin(RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, ext), "127.0.0.1:50000")


async def test_acl_admin_requests_edit_the_file(acl_broker, tmp_path):
    r = await acl_broker.ask(*_signed(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {
        "accessKey": "newuser1", "secretKey": "newsecret1", "admin": "true", "topicPerms": "topicB=SUB,topicC=PUB"}))
    assert r.code == R.SUCCESS
    text = (tmp_path / "plain_acl.yml").read_text()
    assert "newuser1" in text and "topicC=PUB" in text and (tmp_path / "plain_acl.yml.bak").exists()
    r = await acl_broker.ask(*_signed(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}))
    assert r.code == R.SUCCESS and json.loads(r.ext_fields["version"])["counter"] == 1
    assert r.ext_fields["brokerName"] == "broker-a" and str(tmp_path / "plain_acl.yml") in r.ext_fields[
        "allAclFileVersion"]
    r = await acl_broker.ask(*_signed(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}))
    body = json.loads(r.body)
    assert body["globalWhiteAddrs"] == ["10.10.103.*"]
    assert {c["accessKey"]: c["admin"] for c in body["plainAccessConfigs"]} == {
        "RocketMQ": False, "rocketmq2": True, "newuser1": True}
    r = await acl_broker.ask(*_signed(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {
        "globalWhiteAddrs": "127.0.0.1", "aclFileFullPath": str(tmp_path / "plain_acl.yml")}))
    assert r.code == R.SUCCESS
    r = await acl_broker.ask(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)  # unsigned, from a white address now
    assert r.code == R.SUCCESS
    r = await acl_broker.ask(*_signed(RequestCode.DELETE_ACL_CONFIG, {"accessKey": "newuser1"}))
    assert r.code == R.SUCCESS and "newuser1" not in (tmp_path / "plain_acl.yml").read_text()
