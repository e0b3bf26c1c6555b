"""The official mqadmin 4.9.8 against the emulator: configuration, consume-queue, permission, KV, export and ACL
commands (issue 21). Each test runs its commands in as few JVMs as it can (`mqadmin_batch`) and asserts on what
a user reads, then on the behaviour the command changed (a send refused or accepted, a route's perm, a
restart keeping a setting).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import pytest

from rocketmq_emulator.client import Producer
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.headers import PullMessageRequestHeader

from .rawclient import RawClient

pytestmark = pytest.mark.timeout(240)


def prop(output: str, key: str) -> str | None:
    """A value of getBrokerConfig / getNamesrvConfig output (`key<padding>=  value`)."""
    m = re.search(rf"^{re.escape(key)}\s+=  (.*)$", output, re.M)
    return m.group(1) if m else None


def route_perms(output: str) -> list[int]:
    """The queue perms of a topicRoute output (its JSON)."""
    return [int(p) for p in re.findall(r'"perm"\s*:\s*(\d+)', output)]


def send_ok(output: str) -> bool:
    """mqadmin sendMessage printed a SEND_OK row."""
    return re.search(r"^broker-a\s+\d+\s+SEND_OK\s", output, re.M) is not None


def batch(java_clients, ns: str, *commands) -> list[str]:
    """Run mqadmin commands in one JVM, `-n NS` added to each; every command must have run."""
    runs = [(list(c[0]) + ["-n", ns], c[1]) if isinstance(c, tuple) else list(c) + ["-n", ns] for c in commands]
    outputs = java_clients.mqadmin_batch(runs)
    assert None not in outputs, outputs
    return outputs  # type: ignore[return-value]


def raw_pull(emu, topic: str, queue_id: int = 0) -> RemotingCommand:
    """One PULL_MESSAGE of a queue from offset 0, no suspension."""
    h = PullMessageRequestHeader(consumer_group="GID_perm", topic=topic, queue_id=queue_id, queue_offset=0,
                                 max_msg_nums=1, sys_flag=0x4, suspend_timeout_millis=0, subscription="*")

    async def go() -> RemotingCommand:
        async with await RawClient.connect("127.0.0.1", emu.broker.listen_port) as client:
            return await client.request(RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext()))
    return asyncio.run(go())


def produce(ns: str, topic: str, count: int, size: int = 16) -> list:
    async def go():
        async with Producer("mqadmin_admin_producer", namesrv=ns) as producer:
            return [await producer.send(topic, b"x" * size, queue=0) for _ in range(count)]
    return asyncio.run(go())


# -- getBrokerConfig / updateBrokerConfig ----------------------------------------------------------------
def test_broker_config_reported_updated_applied_and_kept_over_a_restart(emulator, java_clients):
    ns, ba = emulator.namesrv_addr, emulator.broker.broker_addr
    out = batch(java_clients, ns,
                ["getBrokerConfig", "-b", ba],
                ["updateBrokerConfig", "-b", ba, "-k", "autoCreateTopicEnable", "-v", "false"],
                ["updateBrokerConfig", "-b", ba, "-k", "sendMessageThreadPoolNums", "-v", "7"],
                ["updateBrokerConfig", "-b", ba, "-k", "defaultTopicQueueNums", "-v", "abc"],
                ["updateBrokerConfig", "-b", ba, "-k", "noSuchKey", "-v", "1"],
                ["updateBrokerConfig", "-b", ba, "-k", "brokerConfigPath", "-v", "/tmp/elsewhere"],
                ["getBrokerConfig", "-c", "DefaultCluster"],
                ["sendMessage", "-t", "NeverCreatedTopic", "-p", "hello"])
    before, update, stored, bad, unknown, black, after, send = out
    # (mqadmin's sendMessage works once per JVM: a second batch)
    _, send_on, _ = batch(java_clients, ns,
                          ["updateBrokerConfig", "-b", ba, "-k", "autoCreateTopicEnable", "-v", "true"],
                          ["sendMessage", "-t", "CreatedOnSendTopic", "-p", "hello"],
                          ["updateBrokerConfig", "-b", ba, "-k", "autoCreateTopicEnable", "-v", "false"])
    assert f"============{ba}============" in before
    assert prop(before, "brokerName") == "broker-a" and prop(before, "brokerClusterName") == "DefaultCluster"
    assert prop(before, "listenPort") == str(emulator.broker.listen_port)
    assert prop(before, "autoCreateTopicEnable") == "true" and prop(before, "brokerPermission") == "6"
    assert prop(before, "flushConsumerOffsetInterval") == "100" and prop(before, "maxMessageSize") == "4194304"
    assert prop(before, "sendMessageThreadPoolNums") == "2"  # a 4.9.8 key the emulator only reports
    assert f"update broker config success, {ba}" in update and "Exception" not in update
    assert f"update broker config success, {ba}" in stored
    assert "CODE: 1 " in bad and "invalid value for defaultTopicQueueNums: 'abc' is not an int" in bad
    assert f"update broker config success, {ba}" in unknown  # ignored, as 4.9.8 does
    assert "CODE: 16 " in black and "Can not update config in black list." in black
    assert f"============Master: {ba}============" in after
    assert prop(after, "autoCreateTopicEnable") == "false"
    assert prop(after, "sendMessageThreadPoolNums") == "7"
    assert prop(after, "defaultTopicQueueNums") == "8" and prop(after, "noSuchKey") is None
    # the change took effect: a new topic is no longer created by a send; back on, it is again
    assert not send_ok(send) and "CODE: 17  DESC: topic[NeverCreatedTopic] not exist, apply first please!" in send
    assert send_ok(send_on), send_on

    saved = (Path(emulator.store_dir) / "config" / "broker.properties").read_text()
    assert "autoCreateTopicEnable=false\n" in saved and "sendMessageThreadPoolNums=7\n" in saved

    emulator.restart()  # the run-time changes come back from config/broker.properties
    ba = emulator.broker.broker_addr
    assert emulator.broker.config.auto_create_topic_enable is False
    after_restart, send = batch(java_clients, ns, ["getBrokerConfig", "-b", ba],
                                ["sendMessage", "-t", "NeverCreatedTopic", "-p", "hello"])
    assert prop(after_restart, "autoCreateTopicEnable") == "false"
    assert prop(after_restart, "sendMessageThreadPoolNums") == "7"
    # started with autoCreateTopicEnable=false, the broker has no TBW102 (as 4.9.8): no route for a new topic
    assert not send_ok(send) and "No route info of this topic: NeverCreatedTopic" in send


def test_flush_consumer_offset_interval_and_max_message_size_apply_at_once(emulator, java_clients):
    ns, ba = emulator.namesrv_addr, emulator.broker.broker_addr
    update_size, update_flush, send = batch(
        java_clients, ns, ["updateBrokerConfig", "-b", ba, "-k", "maxMessageSize", "-v", "10"],
        ["updateBrokerConfig", "-b", ba, "-k", "flushConsumerOffsetInterval", "-v", "60000"],
        ["sendMessage", "-t", "TopicSize", "-p", "longer than ten bytes"])
    assert "update broker config success" in update_size and "update broker config success" in update_flush
    assert not send_ok(send) and "CODE: 13" in send  # MESSAGE_ILLEGAL: over the new maxMessageSize
    assert emulator.broker.config.flush_consumer_offset_interval == 60000


# -- brokerPermission, wipeWritePerm / addWritePerm --------------------------------------------------------
def test_write_permission_of_a_broker(emulator, java_clients):
    ns, ba = emulator.namesrv_addr, emulator.broker.broker_addr
    # one batch (JVM) per state: mqadmin's sendMessage works once per JVM
    _, wipe, wiped_route, wiped_send = batch(
        java_clients, ns, ["updateTopic", "-c", "DefaultCluster", "-t", "PermTopic", "-r", "4", "-w", "4"],
        ["wipeWritePerm", "-b", "broker-a"], ["topicRoute", "-t", "PermTopic"],
        ["sendMessage", "-t", "PermTopic", "-p", "while wiped"])
    add, added_route, added_send = batch(java_clients, ns, ["addWritePerm", "-b", "broker-a"],
                                         ["topicRoute", "-t", "PermTopic"],
                                         ["sendMessage", "-t", "PermTopic", "-p", "after add"])
    ro, ro_route, ro_send = batch(java_clients, ns,
                                  ["updateBrokerConfig", "-b", ba, "-k", "brokerPermission", "-v", "4"],
                                  ["topicRoute", "-t", "PermTopic"],
                                  ["sendMessage", "-t", "PermTopic", "-p", "read-only broker"])
    wo, wo_route = batch(java_clients, ns, ["updateBrokerConfig", "-b", ba, "-k", "brokerPermission", "-v", "2"],
                         ["topicRoute", "-t", "PermTopic"])
    refused = raw_pull(emulator, "PermTopic")
    rw, rw_route, rw_send = batch(java_clients, ns,
                                  ["updateBrokerConfig", "-b", ba, "-k", "brokerPermission", "-v", "6"],
                                  ["topicRoute", "-t", "PermTopic"],
                                  ["sendMessage", "-t", "PermTopic", "-p", "writable again"])
    topics = len(emulator.broker.topic_config_manager.table)
    assert re.search(rf"wipe write perm of broker\[broker-a\] in name server\[{ns}\] OK, {topics}\b", wipe), wipe
    assert route_perms(wiped_route) == [4]
    assert not send_ok(wiped_send) and "No route info of this topic" in wiped_send
    assert re.search(rf"add write perm of broker\[broker-a\] in name server\[{ns}\] OK, {topics}\b", add), add
    assert route_perms(added_route) == [6]
    assert send_ok(added_send), added_send
    assert "update broker config success" in ro and "update broker config success" in rw
    assert route_perms(ro_route) == [4]
    assert not send_ok(ro_send) and "No route info of this topic" in ro_send
    assert "update broker config success" in wo and route_perms(wo_route) == [2]
    assert refused.code == ResponseCode.NO_PERMISSION
    assert refused.remark == "the broker[127.0.0.1] pulling message is forbidden"
    assert route_perms(rw_route) == [6]
    assert send_ok(rw_send), rw_send
    queue = int(re.search(r"^broker-a\s+(\d+)\s+SEND_OK", rw_send, re.M).group(1))
    assert raw_pull(emulator, "PermTopic", queue).code == ResponseCode.SUCCESS  # the message sent just now


# -- getNamesrvConfig / updateNamesrvConfig, KV config, order conf ----------------------------------------
def test_namesrv_config_kv_config_and_order_conf(emulator, java_clients):
    ns = emulator.namesrv_addr
    out = batch(java_clients, ns,
                ["updateTopic", "-c", "DefaultCluster", "-t", "OrderTopic", "-r", "4", "-w", "4", "-o", "false"],
                ["getNamesrvConfig"],
                ["updateOrderConf", "-t", "OrderTopic", "-v", "broker-a:4", "-m", "put"],
                ["updateOrderConf", "-t", "OrderTopic", "-m", "get"],
                ["topicRoute", "-t", "OrderTopic"],
                ["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"],
                ["topicRoute", "-t", "OrderTopic"],
                ["getNamesrvConfig"],
                ["updateNamesrvConfig", "-k", "clusterTest", "-v", "maybe"],
                ["updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/kv.json"],
                ["updateKvConfig", "-s", "my_ns", "-k", "color", "-v", "blue"],
                ["updateKvConfig", "-s", "my_ns", "-k", "size", "-v", "9"],
                ["deleteKvConfig", "-s", "my_ns", "-k", "size"],
                ["updateOrderConf", "-t", "OrderTopic", "-m", "delete"],
                ["topicRoute", "-t", "OrderTopic"])
    (_, config, put, get, route_off, update, route_on, config_on, bad, black, kv1, kv2, kv_del, delete,
     route_deleted) = out
    assert f"============{ns}============" in config
    assert prop(config, "orderMessageEnable") == "false" and prop(config, "productEnvName") == "center"
    assert prop(config, "listenPort") == str(emulator.emulator.namesrv.port)
    assert "update orderConf success. topic=[OrderTopic], orderConf=[broker-a:4]" in put
    assert "get orderConf success. topic=[OrderTopic], orderConf=[broker-a:4]" in get
    assert "orderTopicConf" not in route_off  # 4.9.8: only with orderMessageEnable=true
    assert f"update name server config success![{ns}]" in update and "orderMessageEnable : true" in update
    assert '"orderTopicConf":"broker-a:4"' in route_on.replace(" ", "")
    assert prop(config_on, "orderMessageEnable") == "true"
    assert "CODE: 1 " in bad and "invalid value for clusterTest: 'maybe' is not true or false" in bad
    assert "CODE: 16 " in black and "Can not update config in black list." in black
    assert "create or update kv config to namespace success." in kv1 and "success" in kv2
    assert "delete kv config from namespace success." in kv_del
    assert "delete orderConf success. topic=[OrderTopic]" in delete
    assert "orderTopicConf" not in route_deleted
    assert emulator.call(lambda: dict(emulator.emulator.namesrv.routes.kv_config["my_ns"])) == {"color": "blue"}

    saved = (Path(emulator.store_dir) / "namesrv" / "namesrv.properties").read_text()
    assert "orderMessageEnable=true\n" in saved
    emulator.restart()  # the setting and the KV config (kvConfig.json) come back
    assert emulator.emulator.namesrv.configuration.order_message_enable is True
    assert emulator.call(lambda: dict(emulator.emulator.namesrv.routes.kv_config["my_ns"])) == {"color": "blue"}


# -- queryCq, cleanUnusedTopic, deleteExpiredCommitLog, cleanExpiredCQ ------------------------------------
def test_consume_queue_commands(emulator_factory, java_clients):
    emu = emulator_factory(mapped_file_size_commit_log=64 * 1024)
    ns, ba = emu.namesrv_addr, emu.broker.broker_addr
    sent = produce(ns, "CqOld", 3)
    produce(ns, "CqUnused", 2)
    emu.call(lambda: emu.broker.topic_config_manager.delete("CqUnused"))  # its queues stay in the store
    out = batch(java_clients, ns,
                ["queryCq", "-t", "CqOld", "-q", "0", "-i", "0", "-c", "10", "-b", ba],
                ["queryCq", "-t", "CqOld", "-q", "0", "-i", "1", "-c", "1", "-b", ba],
                ["queryCq", "-t", "CqUnused", "-q", "0", "-i", "0", "-b", ba],
                ["cleanUnusedTopic", "-b", ba],
                ["queryCq", "-t", "CqUnused", "-q", "0", "-i", "0", "-b", ba],
                ["queryCq", "-t", "CqOld", "-q", "0", "-i", "0", "-b", ba])
    units, one, unused, clean_unused, unused_after, old_after = out
    assert "Queue data: \nmax: 3, min: 0" in units
    offsets = [int(m) for m in re.findall(r"physicOffset=(\d+)", units)]
    assert [int(o) for o in re.findall(r"^idx: (\d+)$", units, re.M)] == [0, 1, 2]
    store_units = emu.call(lambda: [emu.broker.store.find_consume_queue("CqOld", 0).get_unit(i) for i in range(3)])
    assert offsets == [u[0] for u in store_units]
    assert re.findall(r"physicSize=(\d+)", units) == [str(u[1]) for u in store_units]
    assert [r.queue_offset for r in sent] == [0, 1, 2]
    assert re.findall(r"^idx: (\d+)$", one, re.M) == ["1"] and f"physicOffset={offsets[1]}" in one
    assert "max: 2, min: 0" in unused
    assert clean_unused.strip() == "success"
    assert "CODE: 1  DESC: 0@CqUnused is not exist!" in unused_after
    assert "max: 3, min: 0" in old_after  # a topic with a config is kept

    # the commitlog's first files expire (fileReservedTime 0, then deleteExpiredCommitLog): CqOld's messages are
    # gone, its consume queue stays until cleanExpiredCQ
    produce(ns, "CqFill", 60, size=4000)
    reserved, delete = batch(java_clients, ns, ["updateBrokerConfig", "-b", ba, "-k", "fileReservedTime", "-v", "0"],
                             ["deleteExpiredCommitLog", "-b", ba])
    assert "update broker config success" in reserved and delete.strip() == "success"
    last_old = offsets[-1]
    deadline = time.monotonic() + 30
    while emu.call(lambda: emu.broker.store.commitlog_min_offset) <= last_old:  # the 10-second clean round
        assert time.monotonic() < deadline, "the expired commitlog files were not deleted"
        time.sleep(0.5)
    before, clean, after, fill = batch(java_clients, ns, ["queryCq", "-t", "CqOld", "-q", "0", "-i", "0", "-b", ba],
                                      ["cleanExpiredCQ", "-b", ba],
                                      ["queryCq", "-t", "CqOld", "-q", "0", "-i", "0", "-b", ba],
                                      ["queryCq", "-t", "CqFill", "-q", "0", "-i", "59", "-b", ba])
    assert "max: 3, min: 0" in before  # as on 4.9.8: the queue's min is only corrected within its first file
    assert clean.strip() == "success"
    assert "CODE: 1  DESC: 0@CqOld is not exist!" in after
    assert "max: 60" in fill and "idx: 59" in fill


# -- ACL commands: a broker with aclEnable=false ----------------------------------------------------------
def test_acl_commands_answered_as_a_broker_with_acl_disabled(emulator, java_clients):
    ns, ba = emulator.namesrv_addr, emulator.broker.broker_addr
    update, delete, white, version, cluster = batch(
        java_clients, ns, ["updateAclConfig", "-a", "RocketMQUser", "-s", "12345678", "-b", ba],
        ["deleteAclConfig", "-a", "RocketMQUser", "-b", ba],
        ["updateGlobalWhiteAddr", "-g", "10.10.10.10", "-b", ba],
        ["clusterAclConfigVersion", "-c", "DefaultCluster"],
        ["clusterList"])
    # the *_FAILED codes of a 4.9.8 broker with ACL off (whose remark is a NullPointerException's text; that one
    # with --compat 4.9), saying why
    disabled = "DESC: ACL is disabled on this broker (aclEnable=false)"
    assert f"CODE: 209  {disabled}" in update  # UPDATE_AND_CREATE_ACL_CONFIG_FAILED
    assert f"CODE: 210  {disabled}" in delete  # DELETE_ACL_CONFIG_FAILED
    assert f"CODE: 211  {disabled}" in white  # UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
    assert "#AclConfigVersionNum" in version and "CODE: 1  DESC: ACL is disabled" in version  # 4.9.8: no answer
    assert "broker-a" in cluster and "Exception" not in cluster  # the signed requests changed nothing


# -- the rest: cluster and group views, allocation, send RT, exports ---------------------------------------
def test_cluster_views_send_rt_and_exports(emulator, java_clients, tmp_path):
    ns, ba = emulator.namesrv_addr, emulator.broker.broker_addr
    export = tmp_path / "export"
    out = batch(java_clients, ns,
                ["updateTopic", "-c", "DefaultCluster", "-t", "ViewTopic", "-r", "4", "-w", "4"],
                ["updateSubGroup", "-c", "DefaultCluster", "-g", "GID_view", "-r", "5"],
                ["topicClusterList", "-t", "ViewTopic"],
                ["getConsumerConfig", "-g", "GID_view"],
                ["allocateMQ", "-t", "ViewTopic", "-i", "10.0.0.1@a,10.0.0.2@b"],
                ["checkMsgSendRT", "-t", "ViewTopic", "-a", "4", "-s", "64"],
                ["deleteExpiredCommitLog", "-b", ba],
                ["exportMetadata", "-c", "DefaultCluster", "-f", str(export)],
                ["exportConfigs", "-c", "DefaultCluster", "-f", str(export)],
                ["exportMetrics", "-c", "DefaultCluster", "-f", str(export)],
                (["clusterRT", "-a", "3", "-s", "32", "-i", "1"], 4))
    _, _, cluster, consumer, allocate, rt, delete, metadata, configs, metrics, cluster_rt = out
    assert cluster.strip() == "DefaultCluster"
    assert "=============================DefaultCluster:broker-a=============================" in consumer
    assert re.search(r"^groupName\s+=  GID_view$", consumer, re.M)
    assert re.search(r"^retryMaxTimes\s+=  5$", consumer, re.M)
    allocation = json.loads(allocate[allocate.index("{"):])["result"]
    assert sorted(q["queueId"] for qs in allocation.values() for q in qs) == [0, 1, 2, 3]
    assert {len(qs) for qs in allocation.values()} == {2}
    rows = re.findall(r"^broker-a\s+(\d)\s+true\s+\d+$", rt, re.M)
    assert rows == ["0", "1", "2", "3"] and "Avg RT:" in rt
    assert delete.strip() == "success"
    assert f"export {export}/metadata.json success" in metadata
    assert json.loads((export / "metadata.json").read_text())  # what 4.9.8 writes: topic and group configs
    assert f"export {export}/configs.json success" in configs
    exported = json.loads((export / "configs.json").read_text())
    assert exported["brokerConfigs"]["broker-a"]["brokerName"] == "broker-a"
    assert exported["brokerConfigs"]["broker-a"]["autoCreateTopicEnable"] == "true"
    assert exported["clusterScale"] == {"namesrvSize": 1, "masterBrokerSize": 1, "slaveBrokerSize": 0}
    assert f"export {export}/metrics.json success" in metrics, metrics
    assert "#Cluster Name" in cluster_rt
    assert re.search(r"^DefaultCluster\s+broker-a\s+[\d.]+\s+3\s+0\s*$", cluster_rt, re.M), cluster_rt
