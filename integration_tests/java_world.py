"""The broker the Java-client tests look at (`world`, one per session): a live Java producer and a live Java
push consumer with message trace on, a C++ push consumer and a live C++ producer, this project's push consumer,
pull consumer and producer, all having sent or consumed `COUNT` messages of `TOPIC`; then one mqadmin JVM
(`mqadmin_batch`) runs the commands the tests read (`world["out"][name]`). Used by `test_java_client.py`
(mqadmin's view) and `test_consumer_admin.py` (the broker's relay and admin requests, with a raw client).
"""

from __future__ import annotations

import time
from pathlib import Path


from rocketmq_emulator.client import FIRST_OFFSET, Producer, PullConsumer, PushConsumer
from rocketmq_emulator.protocol import RemotingCommand
from rocketmq_emulator.protocol.topics import TRACE_TOPIC
from rocketmq_emulator.testing.emulator_thread import EmulatorThread
from rocketmq_emulator.testing.waits import wait_until

from .cppclient import start_driver
from .rawclient import RawClient

TOPIC, COUNT = "JavaTopic", 16
JAVA_GROUP, CPP_GROUP, PY_GROUP, PY_PULL_GROUP = "JavaGroup", "CppGroup", "PyGroup", "PyPullGroup"
JAVA_PRODUCER, CPP_PRODUCER, PY_PRODUCER = "JavaProducer", "CppProducer", "PyProducer"
OFFLINE_ID = "127.0.0.9@offline"
BODIES = {f"hello-java-{i}" for i in range(COUNT)}


def raw_request(emu: EmulatorThread, code: int, ext: dict[str, str], timeout: float = 15) -> RemotingCommand:
    """One request to the broker over a fresh connection (on the emulator's loop); its response."""
    host, port = emu.broker.broker_addr.split(":")

    async def ask() -> RemotingCommand:
        client = await RawClient.connect(host, int(port))
        try:
            return await client.request(RemotingCommand.request(code, ext), timeout)
        finally:
            client.close()
    return emu.run(ask(), timeout + 5)


def _wait(predicate, timeout: float, what: str) -> None:
    assert wait_until(predicate, timeout, interval=0.2), f"not within {timeout} s: {what}"


def _client_ids(emu: EmulatorThread, group: str) -> list[str]:
    def ids() -> list[str]:
        gi = emu.broker.consumer_manager.get(group)
        return gi.client_ids() if gi is not None else []
    return emu.call(ids)


def _batch(java, ns: str, home: Path, commands: dict[str, list[object]]) -> dict[str, str]:
    outputs = java.mqadmin_batch([[c[0], "-n", ns, *c[1:]] for c in commands.values()], home=home)
    missing = [name for name, out in zip(commands, outputs) if out is None]
    assert not missing, f"mqadmin exited before {missing}: {outputs}"
    return dict(zip(commands, outputs))  # type: ignore[arg-type]


def make_world(java_clients, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The `world` fixture's body (integration_tests/conftest.py): made once a session, for both modules."""
    tmp = tmp_path_factory.mktemp("javaworld")
    emu = EmulatorThread(tmp / "store").start()
    ns = emu.namesrv_addr
    handles = []
    py: dict[str, object] = {"got": []}
    try:
        begin_ms = int(time.time() * 1000) - 1000
        jp = java_clients.start("Produce", ns, COUNT, TOPIC, "TagA", JAVA_PRODUCER, "trace", 600, timeout=660,
                                home=tmp / "java-producer")
        handles.append(jp)
        assert jp.wait_for("sent_all", 60), jp.describe()
        sent = jp.of("sent")
        assert {e["body"] for e in sent} == BODIES and all(e["status"] == "SEND_OK" for e in sent), jp.describe()
        jc = java_clients.start("PushConsume", ns, "CLUSTERING", JAVA_GROUP, COUNT, 60, TOPIC, "first", "trace",
                                600, timeout=660, home=tmp / "java-consumer")
        handles.append(jc)
        cc = start_driver(["push", "--namesrv", ns, "--topic", TOPIC, "--group", CPP_GROUP, "--duration", "600"],
                          timeout=660, home=tmp / "cpp-consumer")
        handles.append(cc)
        cp = start_driver(["produce", "--namesrv", ns, "--topic", "CppTopic", "--group", CPP_PRODUCER, "--count",
                           "1", "--linger", "600"], timeout=660, home=tmp / "cpp-producer")
        handles.append(cp)

        async def start_own() -> None:
            producer = await Producer(PY_PRODUCER, namesrv=ns).start()
            await producer.send("PyTopic", "hello-py")
            consumer = PushConsumer(PY_GROUP, namesrv=ns, consume_from=FIRST_OFFSET)
            consumer.subscribe(TOPIC, "*")
            consumer.on_message(lambda m: py["got"].append(m.text))  # type: ignore[attr-defined]
            await consumer.start()
            pull = await PullConsumer(PY_PULL_GROUP, namesrv=ns).start()
            py.update(producer=producer, consumer=consumer, pull=pull)
            await pull.fetch_message_queues(TOPIC)  # it knows the broker now, and sends it heartbeats
        emu.run(start_own())

        assert jc.wait_for("all_consumed", 60), jc.describe()
        assert cp.wait_for("sent_all", 60), cp.describe()
        _wait(lambda: len({e["body"] for e in cc.of("received")}) == COUNT, 60, "the C++ consumer got everything")
        _wait(lambda: set(py["got"]) == BODIES, 60, "this project's consumer got everything")  # type: ignore[arg-type]

        def committed(group: str) -> int:
            return emu.call(lambda: sum(emu.broker.consumer_offset_manager.query_offsets_of_group(group, TOPIC)
                                        .values()))
        _wait(lambda: all(committed(g) == COUNT for g in (JAVA_GROUP, CPP_GROUP, PY_GROUP)), 30,
              "every group's offsets committed")

        def traces() -> int:
            store = emu.broker.store
            return sum(max(0, store.get_max_offset_in_queue(TRACE_TOPIC, q)) for q in range(8))
        _wait(lambda: emu.call(traces) >= 2, 30, "the producer's and the consumer's traces stored")

        _wait(lambda: _client_ids(emu, PY_PULL_GROUP), 30, "the pull consumer's heartbeat")
        # the C++ producer's first heartbeat comes with its periodic ones (every 30 s)
        _wait(lambda: emu.call(lambda: CPP_PRODUCER in emu.broker.producer_manager.groups), 45,
              "the C++ producer's heartbeat")
        first = sent[0]
        ids = {g: _client_ids(emu, g) for g in (JAVA_GROUP, CPP_GROUP, PY_GROUP, PY_PULL_GROUP)}
        assert all(len(v) == 1 for v in ids.values()), ids
        home = tmp / "mqadmin"
        home.mkdir()
        addr = emu.broker.broker_addr
        commands: dict[str, list[object]] = {
            "progress": ["consumerProgress", "-g", JAVA_GROUP],
            "topicList": ["topicList"],
            "topicRoute": ["topicRoute", "-t", TOPIC],
            "topicStatus": ["topicStatus", "-t", TOPIC],
            "updateTopic": ["updateTopic", "-b", addr, "-t", "JavaNewTopic", "-r", "3", "-w", "3"],
            "routeNew": ["topicRoute", "-t", "JavaNewTopic"],
            "deleteTopic": ["deleteTopic", "-c", "DefaultCluster", "-t", "JavaNewTopic"],
            "topicListAfter": ["topicList"],
            "updateSubGroup": ["updateSubGroup", "-b", addr, "-g", "JavaNewGroup", "-r", "2"],
            "byId": ["queryMsgById", "-i", first["offsetMsgId"]],
            "byKey": ["queryMsgByKey", "-t", TOPIC, "-k", "k3"],
            "byUnique": ["queryMsgByUniqueKey", "-i", first["msgId"], "-t", TOPIC],
            "byOffset": ["queryMsgByOffset", "-t", TOPIC, "-b", "broker-a", "-i", first["queueId"], "-o",
                         first["queueOffset"]],
            "trace": ["queryMsgTraceById", "-i", first["msgId"]],
            "printMsg": ["printMsg", "-t", TOPIC, "-d", "true"],
            "printMsgByQueue": ["printMsgByQueue", "-t", TOPIC, "-a", "broker-a", "-i", first["queueId"], "-p",
                                "true", "-d", "true"],
            "sendMsgStatus": ["sendMsgStatus", "-b", "broker-a", "-c", "3"],
            "sendMessage": ["sendMessage", "-t", "AdminSendTopic", "-p", "from-mqadmin", "-b", "broker-a", "-i", "0"],
            "consumeMessage": ["consumeMessage", "-t", "AdminSendTopic", "-c", "1"],
            "allocate": ["allocateMQ", "-t", TOPIC, "-i", "10.0.0.1,10.0.0.2"],
            "clone": ["cloneGroupOffset", "-s", JAVA_GROUP, "-d", "JavaClone", "-t", TOPIC],
            "skip": ["skipAccumulatedMessage", "-g", PY_GROUP, "-t", TOPIC],
            "statusOffline": ["consumerStatus", "-g", JAVA_GROUP, "-i", OFFLINE_ID],
        }
        for group in ids:
            commands[f"conn {group}"] = ["consumerConnection", "-g", group]
            commands[f"status {group}"] = ["consumerStatus", "-g", group]
            commands[f"status -i {group}"] = ["consumerStatus", "-g", group, "-i", ids[group][0]]
        for group in (JAVA_PRODUCER, CPP_PRODUCER, PY_PRODUCER):
            commands[f"pconn {group}"] = ["producerConnection", "-g", group, "-t", TOPIC]
        java_offsets = emu.call(lambda: emu.broker.consumer_offset_manager.query_offsets_of_group(JAVA_GROUP, TOPIC))
        outputs = _batch(java_clients, ns, home, commands)
        yield {"emu": emu, "ns": ns, "home": home, "begin_ms": begin_ms, "sent": sent, "ids": ids,
               "java_consumer": jc, "out": outputs, "java": java_clients, "py_got": py["got"],
               "java_offsets": java_offsets, "cpp_consumer": cc}
    finally:
        for h in handles:
            h.stop()
        if "consumer" in py:
            async def stop_own() -> None:
                for name in ("consumer", "pull", "producer"):
                    await py[name].stop()  # type: ignore[attr-defined]
            emu.run(stop_own())
        emu.close()
