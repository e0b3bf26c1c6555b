"""The Docker image, built and run for real with Podman (`docs/containers.md`): remapped ports with
the advertised-address variables, the C++ client from the host, the 5.x client through the gRPC port, HEALTHCHECK, a fast clean stop, topics from
ROCKETMQ_EMULATOR_TOPICS, and a volume-backed store that survives a new container.

Podman is installed (apt) and the local base image built when missing; where that cannot be done the module
is skipped with the reason."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from rocketmq_emulator.client import FIRST_OFFSET, Admin, Producer, PushConsumer
from integration_tests import podman
from integration_tests.cppclient import run_driver, start_driver
from rocketmq_emulator.testing.ports import free_broker_port, free_port
from rocketmq_emulator.testing.waits import wait_for

pytestmark = pytest.mark.timeout(1500)


@pytest.fixture(scope="module")
def image() -> str:
    tag, reason = podman.prepared_image()
    if reason is not None:
        pytest.skip(f"container tests need podman and a base image: {reason}")
    return tag


@pytest.fixture
def container(image):
    names: list[str] = []

    def start(*args: str) -> str:
        name = f"rmq-emu-test-{uuid.uuid4().hex[:8]}"
        names.append(name)
        podman.run(name, *args)
        podman.wait_healthy(name)
        return name
    yield start
    for name in names:
        podman.remove(name)


def remapped(ns_port: int, broker_port: int) -> list[str]:
    return ["-p", f"{ns_port}:9876", "-p", f"{broker_port}:10911",
            "-e", "ROCKETMQ_EMULATOR_ADVERTISED_HOST=127.0.0.1", "-e", f"ROCKETMQ_EMULATOR_ADVERTISED_PORT={broker_port}"]


async def test_remapped_ports_cpp_client_topics_health_and_stop(container, tmp_path):
    ns_port, broker_port = free_port(), free_port()
    name = container(*remapped(ns_port, broker_port), "-e", "ROCKETMQ_EMULATOR_TOPICS=orders:8,payments:4")
    ns = f"127.0.0.1:{ns_port}"
    assert podman.healthy(name)

    async with Admin(ns) as admin:
        assert [b.addr for b in await admin.cluster_list()] == [f"127.0.0.1:{broker_port}"]
        assert len(await admin.topic_status("orders")) == 8
        assert len(await admin.topic_status("payments")) == 4

    sent = await asyncio.to_thread(run_driver, ["produce", "--namesrv", ns, "--topic", "orders", "--group", "cpp_pg",
                                                "--count", "10"], timeout=60, home=tmp_path)
    assert [e["status"] for e in sent.of("sent")] == ["OK"] * 10, sent.describe()
    consumer = await asyncio.to_thread(start_driver, ["push", "--namesrv", ns, "--topic", "orders", "--group",
                                                      "cpp_cg", "--expect", "10", "--duration", "60"],
                                       timeout=90, home=tmp_path)
    done = await asyncio.to_thread(consumer.wait_for, "done", 80)
    await asyncio.to_thread(consumer.stop)
    assert done is not None and done["expected_reached"], consumer.describe()
    assert {e["msg_id"] for e in consumer.of("received")} == {e["msg_id"] for e in sent.of("sent")}

    # SIGTERM with a 2 s grace: exit code 0 means it stopped by itself in time (137 would be the SIGKILL)
    assert await asyncio.to_thread(podman.stop, name, 2) == 0, podman.logs(name)
    assert "stopped in" in podman.logs(name)
    # the builder stage compiled the native lane; the image ships it (and no compiler)
    assert "send path: native lane" in podman.logs(name)


async def test_the_grpc_endpoint_and_the_dashboard_through_remapped_ports(container, tmp_path):
    """8081 in the image, published on another port: routes name the address the client used, so the 5.x
    client's data-plane calls reach the container through the remapped port. The dashboard on 8080."""
    import json
    import urllib.request
    from integration_tests.py5_client import run_py5
    ns_port, broker_port, grpc_port, dash_port = free_port(), free_port(), free_port(), free_port()
    container(*remapped(ns_port, broker_port), "-p", f"{grpc_port}:8081", "-p", f"{dash_port}:8080",
              "-e", "ROCKETMQ_EMULATOR_TOPICS=orders:4")
    endpoint = f"127.0.0.1:{grpc_port}"
    sent = await asyncio.to_thread(run_py5, ["produce", "--endpoint", endpoint, "--topic", "orders", "--count", "3"],
                                   home=tmp_path / "p")
    assert len(sent.of("sent")) == 3 and not sent.of("send_error"), sent.describe()
    got = await asyncio.to_thread(run_py5, ["simple", "--endpoint", endpoint, "--topic", "orders", "--group", "g5",
                                            "--expect", "3"], home=tmp_path / "c")
    assert sorted(e["body"] for e in got.of("received")) == ["m0", "m1", "m2"], got.describe()

    def dashboard(path: str) -> object:
        with urllib.request.urlopen(f"http://127.0.0.1:{dash_port}{path}", timeout=10) as resp:
            return json.loads(resp.read())
    topics = await asyncio.to_thread(dashboard, "/api/topics")
    assert [(t["topic"], t["messages"]) for t in topics] == [("orders", 3)]
    page = await asyncio.to_thread(lambda: urllib.request.urlopen(f"http://127.0.0.1:{dash_port}/", timeout=10).read())
    assert b"rocketmq-emulator dashboard" in page


async def test_a_mounted_entities_file_declares_the_topics_and_groups(container, tmp_path):
    """The image reads /etc/rocketmq-emulator/entities.yaml (an empty one by default): a file mounted over it
    declares the topics and groups."""
    entities = tmp_path / "entities.yaml"
    entities.write_text("topics:\n  - {name: orders, queues: 3}\ngroups:\n  - {name: billing, retryMaxTimes: 2}\n")
    entities.chmod(0o644)
    ns_port, broker_port = free_port(), free_port()
    container(*remapped(ns_port, broker_port), "-v", f"{entities}:/etc/rocketmq-emulator/entities.yaml:ro")
    async with Admin(f"127.0.0.1:{ns_port}") as admin:
        assert len(await admin.topic_status("orders")) == 3
        exported = await admin.export_entities()
    assert exported["topics"] == [{"name": "orders", "queues": 3}]
    assert exported["groups"] == [{"name": "billing", "retryMaxTimes": 2}]


async def test_volume_backed_store_survives_a_new_container(container):
    volume = f"rmq-emu-test-{uuid.uuid4().hex[:8]}"
    try:
        ns_port, broker_port = free_port(), free_port()
        first = container(*remapped(ns_port, broker_port), "-v", f"{volume}:/data")
        ns = f"127.0.0.1:{ns_port}"
        bodies = {f"kept-{i}" for i in range(20)}
        async with Producer("vol_pg", namesrv=ns) as producer:
            for body in sorted(bodies):
                await producer.send("Kept", body)
        assert await asyncio.to_thread(podman.stop, first, 2) == 0, podman.logs(first)

        second = container(*remapped(ns_port, broker_port), "-v", f"{volume}:/data")
        assert "abnormal stop" not in podman.logs(second)  # the first one stopped clean: no recovery scan
        got: set[str] = set()
        consumer = PushConsumer("vol_cg", namesrv=ns, consume_from=FIRST_OFFSET)
        consumer.subscribe("Kept")
        consumer.on_message(lambda m: got.add(m.text))
        async with consumer:
            assert await wait_for(lambda: got >= bodies, 30), sorted(bodies - got)
        assert got == bodies
    finally:
        podman.remove_volume(volume)


async def test_several_brokers_stop_start_and_a_trace_from_the_environment(container):
    ns_port, broker_port = free_port(), free_broker_port(2)
    name = container("-p", f"{ns_port}:9876", "-p", f"{broker_port}:10911", "-p", f"{broker_port + 10}:10921",
                     "-e", "ROCKETMQ_EMULATOR_ADVERTISED_HOST=127.0.0.1",
                     "-e", f"ROCKETMQ_EMULATOR_ADVERTISED_PORT={broker_port}", "-e", "ROCKETMQ_EMULATOR_BROKERS=2",
                     "-e", "ROCKETMQ_EMULATOR_TRACE=-", "-e", "ROCKETMQ_EMULATOR_TRACE_CODES=SEND_MESSAGE_V2")
    ns = f"127.0.0.1:{ns_port}"
    async with Admin(ns) as admin:
        assert sorted(b.addr for b in await admin.cluster_list()) == [f"127.0.0.1:{broker_port}",
                                                                      f"127.0.0.1:{broker_port + 10}"]
        await admin.create_topic("Both", 2, 2)
    async with Producer("two_pg", namesrv=ns) as producer:
        brokers = {(await producer.send("Both", f"m{i}")).queue.broker_name for i in range(8)}
    assert brokers == {"broker-a", "broker-b"}
    # take broker-b away inside the container and bring it back (same store: its message is still there)
    async with Admin(ns) as admin:
        await admin.stop_broker("broker-b")
        assert [b.broker_name for b in await admin.cluster_list()] == ["broker-a"]
        assert [b.broker_name for b in (await admin.topic_route("Both")).broker_datas] == ["broker-a"]
        await admin.start_broker("broker-b")
        assert sorted(b.broker_name for b in await admin.cluster_list()) == ["broker-a", "broker-b"]
        status = await admin.topic_status("Both")
        assert {mq.broker_name for mq, off in status.items() if off.max_offset > 0} == {"broker-a", "broker-b"}
        assert sum(off.max_offset for off in status.values()) == 8
    logs = podman.logs(name)
    assert logs.count("<- SEND_MESSAGE_V2(310)") == 8 and "[broker broker-b]" in logs, logs[-3000:]
