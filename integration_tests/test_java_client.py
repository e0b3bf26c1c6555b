"""The official Java 4.9.8 client and mqadmin against the emulator, with the C++ client and this project's own
client beside them: what mqadmin shows of the broker `world` (see `java_world.py`) holds, and broadcasting and
the lite pull consumer on brokers of their own.
"""

from __future__ import annotations

import collections
import re
import time

from rocketmq_emulator.client import Producer
from rocketmq_emulator.protocol import fastjson

from .java_world import (BODIES, COUNT, CPP_GROUP, CPP_PRODUCER, JAVA_GROUP, JAVA_PRODUCER, OFFLINE_ID,
                         PY_GROUP, PY_PRODUCER, PY_PULL_GROUP, TOPIC)


def _clean(out: str) -> None:
    assert "Exception" not in out and "Error" not in out and "usage: mqadmin" not in out, out


# -- clustering: every message consumed, offsets in consumerProgress, reset re-delivers once ------------------
def test_java_clustering_consumer_gets_every_message_once_and_progress_shows_its_offsets(world):
    consumed = world["java_consumer"].of("consumed")[:COUNT]
    assert collections.Counter(e["body"] for e in consumed) == collections.Counter(BODIES)
    out = world["out"]["progress"]
    _clean(out)
    rows = re.findall(rf"(?m)^{TOPIC}\s+broker-a\s+(\d)\s+(\d+)\s+(\d+)\s+(\d+)", out)
    assert len(rows) == 4, out
    assert all(broker == consumer and diff == "0" for _, broker, consumer, diff in rows), out
    assert sum(int(consumer) for _, _, consumer, _ in rows) == COUNT
    assert re.search(r"Diff Total: 0", out), out


def test_consumer_connection_lists_each_live_consumer(world):
    for group, language in ((JAVA_GROUP, "JAVA"), (CPP_GROUP, "CPP"), (PY_GROUP, "PYTHON")):
        out = world["out"][f"conn {group}"]
        _clean(out)
        client_id = world["ids"][group][0]
        assert re.search(rf"(?m)^{re.escape(client_id)}\s+127\.0\.0\.1:\d+\s+{language}\s", out), out
        assert re.search(rf"(?m)^{TOPIC}\s+\*", out) and "ConsumeType: CONSUME_PASSIVELY" in out, out
        assert "MessageModel: CLUSTERING" in out, out


def test_consumer_status_of_java_cpp_and_own_consumers(world):
    """consumerStatus -g: each member's running info fetched through the broker and compared; -i: printed."""
    for group in (JAVA_GROUP, CPP_GROUP, PY_GROUP):
        out = world["out"][f"status {group}"]
        _clean(out)
        assert re.search(rf"(?m)^1\s+{re.escape(world['ids'][group][0])}\s", out), out
        assert "Same subscription in the same group of consumer" in out and "Rebalance OK" in out, out
        detail = world["out"][f"status -i {group}"]
        _clean(detail)
        for section in ("#Consumer Properties#", "#Consumer Subscription#", "#Consumer Offset#",
                        "#Consumer MQ Detail#", "#Consumer RT&TPS#"):
            assert section in detail, (group, detail)
        assert re.search(r"(?m)^PROP_CONSUME_TYPE\s+: CONSUME_PASSIVELY$", detail), detail
        assert re.search(r"(?m)^PROP_CLIENT_VERSION\s+: V\d", detail), detail
        # every owned queue with the offset it will commit: all 16 messages consumed
        offsets = re.findall(rf"(?m)^{TOPIC}\s+broker-a\s+(\d)\s+(\d+)\s*$", detail)
        assert len(offsets) == 4 and sum(int(o) for _, o in offsets) == COUNT, detail
    # the C++ client answered without complaint and runs on
    cc = world["cpp_consumer"]
    assert cc.returncode is None and not cc.of("error"), cc.describe()
    assert not [line for line in cc.client_log_complaints() if "RunningInfo" in line], cc.describe()


def test_own_consumer_running_info_has_java_fields_and_counters(world):
    detail = world["out"][f"status -i {PY_GROUP}"]
    props = dict(re.findall(r"(?m)^(\w+)\s+: (.*)$", detail))
    assert props["consumerGroup"] == PY_GROUP and props["messageModel"] == "CLUSTERING"
    assert props["consumeFromWhere"] == "CONSUME_FROM_FIRST_OFFSET" and props["PROP_CONSUMEORDERLY"] == "false"
    assert props["PROP_NAMESERVER_ADDR"] == world["ns"] + ";"
    assert int(props["PROP_CONSUMER_START_TIMESTAMP"]) > world["begin_ms"]
    assert props["PROP_CLIENT_VERSION"] == "V4_9_8" and props["pullBatchSize"] == "32"
    # Consume RT&TPS of the topic: pulls found the 16 messages, all consumed OK, none failed
    row = re.search(rf"(?m)^{TOPIC}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s*$", detail)
    assert row, detail
    pull_rt, pull_tps, consume_rt, ok_tps, failed_tps, failed = row.groups()
    assert float(pull_tps) > 0 and float(ok_tps) > 0 and float(failed_tps) == 0 and failed == "0", detail


def test_own_pull_consumer_answers_running_info(world):
    detail = world["out"][f"status -i {PY_PULL_GROUP}"]
    _clean(detail)
    assert re.search(r"(?m)^PROP_CONSUME_TYPE\s+: CONSUME_ACTIVELY$", detail), detail
    assert re.search(rf"(?m)^consumerGroup\s+: {PY_PULL_GROUP}$", detail), detail


def test_consumer_status_of_an_offline_client_id_is_what_4_9_8_answers(world):
    out = world["out"]["statusOffline"]
    assert f"CODE: 1  DESC: The Consumer <{JAVA_GROUP}> <{OFFLINE_ID}> not online" in out, out


def test_reset_offset_by_time_redelivers_each_message_once_to_the_live_java_consumer(world):
    java, handle = world["java"], world["java_consumer"]
    before = len(handle.of("consumed"))
    assert before == COUNT
    out = java.mqadmin("resetOffsetByTime", "-n", world["ns"], "-g", JAVA_GROUP, "-t", TOPIC, "-s",
                       world["begin_ms"], home=world["home"])
    _clean(out)
    rows = re.findall(r"(?m)^broker-a\s+(\d)\s+(\d+)\s*$", out)
    assert len(rows) == 4 and all(offset == "0" for _, offset in rows), out
    assert handle.wait_for(lambda e: e.get("event") == "consumed" and e["n"] == 2 * COUNT, 60), handle.describe()
    time.sleep(2)  # anything more would be a duplicate
    again = handle.of("consumed")[COUNT:]
    assert collections.Counter(e["body"] for e in again) == collections.Counter(BODIES), handle.describe()


# -- producers ----------------------------------------------------------------------------------------------
def test_producer_connection_lists_each_live_producer(world):
    for group, language in ((JAVA_PRODUCER, "JAVA"), (CPP_PRODUCER, "CPP"), (PY_PRODUCER, "PYTHON")):
        out = world["out"][f"pconn {group}"]
        _clean(out)
        assert re.search(rf"(?m)^0001\s+\S+@\S+\s+127\.0\.0\.1:\d+\s+{language}\s+V\d", out), (group, out)


# -- messages and traces ------------------------------------------------------------------------------------
def test_query_msg_trace_by_id_shows_the_send_and_the_consumption(world):
    out = world["out"]["trace"]
    _clean(out)
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    assert re.search(rf"(?m)^Pub\s+{JAVA_PRODUCER}\s+\S+\s+{when}\s+\d+ms\s+success", out), out
    assert re.search(rf"(?m)^Sub\s+{JAVA_GROUP}\s+\S+\s+{when}\s+\d+ms\s+success", out), out


def test_a_traced_messages_story_has_the_java_clients_trace_records(world):
    """The dashboard's message story reads the trace records the real Java 4.9.8 client writes with enableMsgTrace
    (its AsyncTraceDispatcher's batches in RMQ_SYS_TRACE_TOPIC, other messages' records among them): this message's
    send by the producer and its consumption by the group."""
    from rocketmq_emulator.broker.core.read_model import ReadModel
    from rocketmq_emulator.broker.dashboard.story import story
    emu, first = world["emu"], world["sent"][0]
    told = emu.call(lambda: story(ReadModel(emu.broker), first["msgId"], TOPIC))
    traced = [(s["what"], s["group"]) for s in told["steps"] if s["what"].startswith("traced")]
    assert ("traced: sent", JAVA_PRODUCER) in traced, traced
    assert ("traced: consuming", JAVA_GROUP) in traced and ("traced: consumed", None) in traced, traced
    assert all(first["msgId"] in s["detail"] for s in told["steps"] if s["what"] == "traced: sent"), told["steps"]
    assert len([t for t in traced if t[0] == "traced: sent"]) == 1, traced  # not the batch's other messages


def test_message_queries(world):
    out, first = world["out"], world["sent"][0]
    for name in ("byId", "byUnique", "byOffset"):
        _clean(out[name])
        assert re.search(rf"(?m)^Topic:\s+{TOPIC}$", out[name]) and "Keys:                [k0]" in out[name], out[name]
        assert re.search(rf"(?m)^Queue Offset:\s+{first['queueOffset']}$", out[name]), out[name]
        # the message's consumption by each group (MessageTrack)
        for group in (JAVA_GROUP, CPP_GROUP, PY_GROUP):
            assert f"MessageTrack [consumerGroup={group}, trackType=CONSUMED" in out[name], out[name]
    k3 = next(e for e in world["sent"] if e["body"] == "hello-java-3")
    assert re.search(rf"(?m)^{k3['msgId']}\s+{k3['queueId']}\s+{k3['queueOffset']}\s*$", out["byKey"]), out["byKey"]
    _clean(out["printMsg"])
    assert set(re.findall(r"BODY: (hello-java-\d+)", out["printMsg"])) == BODIES, out["printMsg"]
    in_queue = {e["body"] for e in world["sent"] if e["queueId"] == first["queueId"]}
    _clean(out["printMsgByQueue"])
    assert set(re.findall(r"BODY: (hello-java-\d+)", out["printMsgByQueue"])) == in_queue, out["printMsgByQueue"]


def test_sending_and_consuming_with_mqadmin(world):
    out = world["out"]
    _clean(out["sendMsgStatus"])
    assert len(re.findall(r"sendStatus=SEND_OK", out["sendMsgStatus"])) == 3, out["sendMsgStatus"]
    _clean(out["sendMessage"])
    assert re.search(r"(?m)^broker-a\s+\d\s+SEND_OK\s+[0-9A-F]{32}", out["sendMessage"]), out["sendMessage"]
    _clean(out["consumeMessage"])
    assert "from-mqadmin" in out["consumeMessage"], out["consumeMessage"]


def test_topic_and_group_commands(world):
    out, emu = world["out"], world["emu"]
    for name in ("topicList", "topicRoute", "topicStatus", "updateTopic", "routeNew", "deleteTopic",
                 "topicListAfter", "updateSubGroup", "allocate", "clone", "skip"):
        _clean(out[name])
    assert re.search(rf"(?m)^{TOPIC}$", out["topicList"]) and "JavaNewTopic" not in out["topicListAfter"]
    assert '"readQueueNums":4' in out["topicRoute"], out["topicRoute"]
    assert len(re.findall(r"(?m)^broker-a\s+\d\s+0\s+\d+\s+\d{4}-", out["topicStatus"])) == 4, out["topicStatus"]
    assert '"readQueueNums":3' in out["routeNew"] and "success" in out["deleteTopic"], out["routeNew"]
    assert emu.call(lambda: emu.broker.topic_config_manager.get("JavaNewTopic")) is None
    group = emu.call(lambda: emu.broker.subscription_group_manager.find("JavaNewGroup"))
    assert group is not None and group.retry_max_times == 2  # -r: retryMaxTimes
    allocation = fastjson.loads(out["allocate"].strip())["result"]
    assert sorted(q["queueId"] for qs in allocation.values() for q in qs) == [0, 1, 2, 3], out["allocate"]
    assert "clone group offset success" in out["clone"], out["clone"]
    # (consumerProgress needs the group's retry topic, which only a consumer's heartbeat creates, in 4.9.8 too)
    cloned = emu.call(lambda: emu.broker.consumer_offset_manager.query_offsets_of_group("JavaClone", TOPIC))
    assert cloned == world["java_offsets"] and sum(cloned.values()) == COUNT  # as they were at the clone
    skipped = re.findall(r"(?m)^broker-a\s+(\d)\s+(\d+)\s*$", out["skip"])
    assert len(skipped) == 4 and sum(int(o) for _, o in skipped) == COUNT, out["skip"]


# -- broadcasting and the lite pull consumer, on brokers of their own ----------------------------------------
def test_java_broadcasting_members_each_get_everything(java_clients, emulator, tmp_path):
    ns = emulator.namesrv_addr

    async def produce() -> None:
        async with Producer("BcastProducer", namesrv=ns) as producer:
            for i in range(8):
                await producer.send("BcastTopic", f"b-{i}")
    emulator.run(produce())
    members = [java_clients.start("PushConsume", ns, "BROADCASTING", "JavaBcast", 8, 60, "BcastTopic", "first",
                                  timeout=90, home=tmp_path / f"member{i}") for i in range(2)]
    for m in members:
        m.wait()
    for m in members:
        assert m.returncode == 0, m.describe()
        got = collections.Counter(e["body"] for e in m.of("consumed"))
        assert got == collections.Counter(f"b-{i}" for i in range(8)), m.describe()


def test_java_lite_pull_consumer_gets_every_message(java_clients, emulator, tmp_path):
    ns = emulator.namesrv_addr

    async def produce() -> None:
        async with Producer("LiteProducer", namesrv=ns) as producer:
            for i in range(10):
                await producer.send("LiteTopic", f"l-{i}")
    emulator.run(produce())
    handle = java_clients.run("LitePull", ns, "JavaLite", 10, 60, "LiteTopic", timeout=90, home=tmp_path / "lite")
    assert handle.returncode == 0, handle.describe()
    assert collections.Counter(e["body"] for e in handle.of("polled")) == collections.Counter(
        f"l-{i}" for i in range(10)), handle.describe()
