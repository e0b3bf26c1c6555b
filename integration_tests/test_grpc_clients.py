"""The official RocketMQ 5.x Python client (rocketmq-python-client 5.1.2, gRPC) against `serve --grpc-port`, the
emulator in a subprocess: sends, SimpleConsumer and PushConsumer consumption (POP), change-invisible, FIFO, delay,
DLQ, transactions, a kill -9, and messages crossing between the 5.x client and the 4.x C++ client both ways."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from rocketmq_emulator.client.admin import Admin
from rocketmq_emulator.testing.emulator_process import launch_emulator
from rocketmq_emulator.testing.ports import free_port

from .cppclient import produce as cpp_produce, run_driver
from .py5_client import Py5Handle, run_py5, start_py5

pytestmark = pytest.mark.timeout(240)


class Grpc:
    def __init__(self, root: Path, *args: str) -> None:
        self.root = root
        self.broker = launch_emulator(root, "--min-invisible-time", "1000", "--topic", "T:4", *args, grpc=True)
        assert self.broker.grpc_endpoint is not None
        self.endpoint = self.broker.grpc_endpoint
        self.namesrv_addr = self.broker.namesrv_addr
        self._homes = 0
        # typed topics, as `mqadmin updateTopic -a +message.type=...` makes them: the 5.x proxy (and so the
        # emulator) refuses a message of another type than its topic's (T is NORMAL: made without a type)
        for topic, kind in (("F", "FIFO"), ("D", "DELAY"), ("X", "TRANSACTION")):
            self.admin(lambda a, topic=topic, kind=kind: a.create_topic(topic, 4, 4, message_type=kind))

    def home(self) -> Path:
        self._homes += 1
        return self.root / f"home{self._homes}"

    def run(self, *args: str, timeout: float = 60) -> Py5Handle:
        command, *rest = args
        return run_py5([command, "--endpoint", self.endpoint, *rest], home=self.home(), timeout=timeout)

    def start(self, *args: str, timeout: float = 60) -> Py5Handle:
        command, *rest = args
        return start_py5([command, "--endpoint", self.endpoint, *rest], home=self.home(), timeout=timeout)

    def admin(self, call):  # noqa: ANN001, ANN201 - a coroutine function of the admin
        async def go():  # noqa: ANN202
            async with Admin(self.namesrv_addr) as admin:
                return await call(admin)
        return asyncio.run(go())


@pytest.fixture
def grpc_emulator(tmp_path: Path):
    g = Grpc(tmp_path)
    try:
        yield g
    finally:
        g.broker.stop()


def finished(handle: Py5Handle) -> list[dict]:
    """The events of a driver that ran to its end without a failed send or receive, shutting down in under 5 s."""
    assert not handle.timed_out and handle.returncode == 0, handle.describe()
    assert not handle.of("send_error") and not handle.of("receive_error"), handle.describe()
    [done] = handle.of("done")
    assert done["shutdown_ms"] < 5000, handle.describe()
    return handle.events


def test_a_5x_producer_sends_ids_tags_keys_and_properties_that_the_cpp_client_reads(grpc_emulator, tmp_path):
    sent = grpc_emulator.run("produce", "--topic", "T", "--count", "3", "--tag", "TagA", "--keys", "key{i}",
                             "--prop", "color=red{i}")
    events = finished(sent)
    ids = [e["message_id"] for e in events if e["event"] == "sent"]
    assert len(ids) == 3 and len(set(ids)) == 3
    pulled = run_driver(["pull", "--namesrv", grpc_emulator.namesrv_addr, "--topic", "T", "--group", "cpp-reader",
                         "--duration", "5", "--show-property", "color"], timeout=60, home=tmp_path / "cpp").events
    got = {e["body"]: e for e in pulled if e["event"] == "pulled"}
    assert sorted(got) == ["m0", "m1", "m2"], pulled
    for i, body in enumerate(["m0", "m1", "m2"]):
        e = got[body]
        props = e["properties"]
        assert props["UNIQ_KEY"] == ids[i] and props["TAGS"] == "TagA" and props["KEYS"] == f"key{i}"
        assert props["color"] == f"red{i}"


def test_a_simple_consumer_receives_what_the_cpp_client_sent_acks_it_and_then_waits_out_the_poll(
        grpc_emulator, tmp_path):
    sent = cpp_produce(grpc_emulator, tmp_path / "cpp", 3, topic="T")
    got = grpc_emulator.run("simple", "--topic", "T", "--group", "S1", "--expect", "3")
    events = finished(got)
    received = [e for e in events if e["event"] == "received"]
    assert sorted(e["body"] for e in received) == ["m-0", "m-1", "m-2"]
    assert {e["message_id"] for e in received} == {e["msg_id"] for e in sent}  # UNIQ_KEY is the 5.x id
    assert all(e["attempt"] == 1 and e["topic"] == "T" for e in received)
    assert {e["tag"] for e in received} == {"Tag0", "Tag1", "Tag2"}
    assert {tuple(e["keys"]) for e in received} == {("k", f"key{i}") for i in range(3)}
    again = grpc_emulator.run("simple", "--topic", "T", "--group", "S1", "--duration", "2.5", "--await", "2")
    events = finished(again)
    empty = [e for e in events if e["event"] == "empty"]
    assert not [e for e in events if e["event"] == "received"] and empty
    assert all(e["waited"] >= 1.8 for e in empty), empty  # held for the long-polling time, then MESSAGE_NOT_FOUND


def test_change_invisible_duration_brings_the_message_back_with_delivery_attempt_2(grpc_emulator):
    finished(grpc_emulator.run("produce", "--topic", "T", "--count", "1"))
    got = grpc_emulator.run("simple", "--topic", "T", "--group", "S2", "--ack", "after-change", "--change-to", "1",
                            "--expect", "2")
    events = finished(got)
    received = [e for e in events if e["event"] == "received"]
    assert [e["attempt"] for e in received] == [1, 2] and received[0]["message_id"] == received[1]["message_id"]
    assert len([e for e in events if e["event"] == "changed"]) == 1


def test_a_push_consumer_starts_fast_and_gets_a_failed_message_again(grpc_emulator):
    finished(grpc_emulator.run("produce", "--topic", "T", "--count", "3"))
    got = grpc_emulator.run("push", "--topic", "T", "--group", "P1", "--fail-first", "1", "--expect", "3")
    events = finished(got)
    assert got.of("started")[0]["ms"] < 3000
    received = [e for e in events if e["event"] == "received"]
    for body in ("m0", "m1", "m2"):
        deliveries = [e for e in received if e["body"] == body]
        assert [(e["failed"], e["attempt"]) for e in deliveries] == [(True, 1), (False, 2)], received


def test_fifo_groups_get_a_message_group_in_order_and_a_failure_blocks_the_rest(grpc_emulator):
    grpc_emulator.admin(lambda a: a.update_subscription_group("FIFO1", consume_message_orderly=True))
    finished(grpc_emulator.run("produce", "--topic", "F", "--count", "5", "--message-group", "order-1"))
    got = grpc_emulator.run("push", "--topic", "F", "--group", "FIFO1", "--fail-first", "1", "--expect", "5")
    events = finished(got)
    received = [(e["body"], e["failed"]) for e in events if e["event"] == "received"]
    assert [b for b, failed in received if not failed] == ["m0", "m1", "m2", "m3", "m4"], received
    for i, (body, failed) in enumerate(received):  # the next message only after the failed one succeeded
        if failed:
            assert received[i + 1] == (body, False), received
    assert all(e["message_group"] == "order-1" for e in events if e["event"] == "received")


def test_a_delayed_message_arrives_at_its_delivery_time(grpc_emulator):
    consumer = grpc_emulator.start("simple", "--topic", "D", "--group", "D1", "--expect", "1", "--await", "5")
    assert consumer.wait_for("started", timeout=30)
    produced = finished(grpc_emulator.run("produce", "--topic", "D", "--count", "1", "--delay-s", "3"))
    [sent] = [e for e in produced if e["event"] == "sent"]
    consumer.wait()
    events = finished(consumer)
    [received] = [e for e in events if e["event"] == "received"]
    # the producer asked for now + 3 s in whole epoch seconds (5.1.2 takes seconds: up to 1 s earlier than now + 3),
    # before its first send (route lookup and connection included): measure against the delivery time it asked for
    assert received["delivery_ts"] is not None
    delivery_s = received["delivery_ts"] / 1000 if received["delivery_ts"] > 10**11 else received["delivery_ts"]
    [started] = [e for e in produced if e["event"] == "started"]  # the producer started: the message is built after
    assert received["t"] >= delivery_s - 0.01, (sent, received)  # never before its delivery time
    assert delivery_s - started["t"] >= 2.0, (started, received)  # and that time was a real delay (3 s, floored)


def test_after_its_max_attempts_a_message_goes_to_the_dlq(grpc_emulator, tmp_path):
    grpc_emulator.admin(lambda a: a.update_subscription_group("DLQ1", retry_max_times=1))  # 2 deliveries
    finished(grpc_emulator.run("produce", "--topic", "T", "--count", "1"))
    got = grpc_emulator.run("push", "--topic", "T", "--group", "DLQ1", "--fail-first", "99", "--duration", "8")
    events = finished(got)
    assert [e["attempt"] for e in events if e["event"] == "received"] == [1, 2], got.describe()
    pulled = run_driver(["pull", "--namesrv", grpc_emulator.namesrv_addr, "--topic", "%DLQ%DLQ1", "--group",
                         "dlq-reader", "--duration", "4"], timeout=60, home=tmp_path / "cpp").events
    assert [e["body"] for e in pulled if e["event"] == "pulled"] == ["m0"], pulled


def test_a_topic_that_does_not_exist_is_reported_as_not_found(grpc_emulator):
    got = grpc_emulator.run("produce", "--topic", "Nope", "--count", "1")
    assert got.of("error") or got.of("send_error"), got.describe()
    text = got.describe()
    # TOPIC_NOT_FOUND with the 5.3.3 proxy's text, in the client's log
    assert "40402, CODE: 17  DESC: No topic route info in name server for the topic: Nope" in text, text
    assert not got.of("sent")


def test_unacked_messages_come_back_after_a_kill_9_and_acked_ones_never_do(grpc_emulator):
    finished(grpc_emulator.run("produce", "--topic", "T", "--count", "4"))
    finished(grpc_emulator.run("simple", "--topic", "T", "--group", "K1", "--ack", "none", "--invisible", "3",
                               "--expect", "4", "--batch", "4"))
    grpc_emulator.broker.kill()
    grpc_emulator.broker.start()
    again = finished(grpc_emulator.run("simple", "--topic", "T", "--group", "K1", "--expect", "4",
                                       "--duration", "30", "--await", "5"))
    received = [e for e in again if e["event"] == "received"]
    assert sorted(e["body"] for e in received) == ["m0", "m1", "m2", "m3"]
    assert all(e["attempt"] == 2 for e in received), received
    grpc_emulator.broker.stop()  # acked: never again, also after a clean restart
    grpc_emulator.broker.start()
    late = finished(grpc_emulator.run("simple", "--topic", "T", "--group", "K1", "--duration", "5", "--await", "2"))
    assert not [e for e in late if e["event"] == "received"]


def test_transactions_commit_and_a_check_back_reaches_the_5x_producer(tmp_path):
    # The 5.x Python client stamps bornTimestamp in whole seconds (int(time.time())), so a half message looks up
    # to a second older than it is, to this broker as to 4.9.8's check (age = now - bornTimestamp): a
    # transactionTimeOut under a second could check a message its producer is about to commit (and the commit
    # then finds the transaction decided). 2 s leaves the commit a second; the held producer is checked well
    # within its 5 s.
    g = Grpc(tmp_path, "--transaction-timeout", "2000", "--transaction-check-interval", "300")
    try:
        finished(g.run("produce", "--topic", "X", "--count", "1", "--transaction", "commit", "--body-prefix", "c"))
        finished(g.run("produce", "--topic", "X", "--count", "1", "--transaction", "rollback", "--body-prefix", "r"))
        checked = g.run("produce", "--topic", "X", "--count", "1", "--transaction", "unknown", "--checker", "commit",
                        "--hold", "5", "--body-prefix", "u")
        events = finished(checked)
        assert [e["body"] for e in events if e["event"] == "checked"][:1] == ["u0"], checked.describe()
        got = finished(g.run("simple", "--topic", "X", "--group", "TX", "--duration", "6", "--await", "2"))
        assert sorted(e["body"] for e in got if e["event"] == "received") == ["c0", "u0"]
    finally:
        g.broker.stop()


def test_the_tls_port_serves_a_client_that_trusts_the_emulators_certificate(tmp_path):
    """`--grpc-tls-port`: TLS with a self-signed certificate (kept under the store); a client on gRPC's C core
    trusts it through GRPC_DEFAULT_SSL_ROOTS_FILE_PATH (the Java 5.x client trusts any certificate)."""
    tls_port = free_port()
    g = Grpc(tmp_path, "--grpc-tls-port", str(tls_port))
    try:
        cert = tmp_path / "store" / "config" / "grpc-tls" / "cert.pem"
        assert cert.exists()
        env = {"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(cert)}
        endpoint = f"127.0.0.1:{tls_port}"
        sent = run_py5(["produce", "--endpoint", endpoint, "--topic", "T", "--count", "2", "--tls"],
                       home=tmp_path / "p", env=env)
        finished(sent)
        got = run_py5(["simple", "--endpoint", endpoint, "--topic", "T", "--group", "TLS", "--expect", "2", "--tls"],
                      home=tmp_path / "c", env=env)
        assert sorted(e["body"] for e in finished(got) if e["event"] == "received") == ["m0", "m1"]
        plain = run_py5(["produce", "--endpoint", endpoint, "--topic", "T", "--count", "1"], home=tmp_path / "x",
                        timeout=30)
        assert not plain.of("sent")  # plaintext to the TLS port: refused, not served
    finally:
        g.broker.stop()


def test_the_readme_5x_example_runs_with_the_official_client(tmp_path):
    """README's 5.x section, run as written with rocketmq-python-client 5.1.2 against `serve --grpc-port`."""
    import re
    import subprocess

    from rocketmq_emulator.testing.py5_env import py5_python
    readme = (Path(__file__).resolve().parents[1] / "docs" / "user" / "clients-5x.md").read_text()
    blocks = re.findall(r"<!-- 5.x-client: [^>]* -->\n+```python\n(.*?)```", readme, flags=re.S)
    assert blocks
    g = Grpc(tmp_path, "--topic", "orders:4")
    try:
        for i, code in enumerate(blocks):
            home = tmp_path / f"readme{i}"
            home.mkdir()
            out = subprocess.run([str(py5_python()), "-c", code], cwd=home, capture_output=True, text=True,
                                 timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(home),
                                                   "ROCKETMQ_GRPC_ENDPOINT": g.endpoint})
            assert out.returncode == 0, out.stdout + out.stderr
            sent = re.search(r"^sent (\S+)$", out.stdout, flags=re.M)
            assert sent is not None, out.stdout
            assert f"received {sent.group(1)} b'order-1 paid' paid {{'region': 'eu'}} attempt 1" in out.stdout
    finally:
        g.broker.stop()


def test_consumer_progress_shows_a_5x_group_alone_and_among_all_groups(grpc_emulator):
    """A 5.x consumer's group is known to the admin tools as a 4.x group is: its heartbeat makes the group's
    retry topic (as the proxy's heartbeat to a 5.x broker does), so `consumerProgress -g` finds its brokers and
    `consumerProgress` lists it; what it received and did not ack is in flight."""
    import json
    import subprocess

    from rocketmq_emulator.testing.command_line import COMMAND
    finished(grpc_emulator.run("produce", "--topic", "T", "--count", "3"))
    finished(grpc_emulator.run("simple", "--topic", "T", "--group", "Pop5", "--expect", "3", "--ack", "none",
                               "--invisible", "60"))

    def admin(*args: str) -> dict | list:
        proc = subprocess.run([*COMMAND, "admin", *args, "-n", grpc_emulator.namesrv_addr, "--json"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)
    one = admin("consumerProgress", "-g", "Pop5")
    assert sum(o["inflight"] for o in one["offsets"]) == 3 and one["diffTotal"] == 3, one
    every = admin("consumerProgress")
    assert {"group": "Pop5", "consumeTps": one["consumeTps"], "diffTotal": 3} in every, every


def test_consumer_connection_lists_a_live_5x_consumer_and_drops_it_when_it_ends(grpc_emulator):
    """A 5.x simple consumer is in the broker's consumer table as the 5.3.3 proxy registers it (its client id,
    address and language, CLUSTERING, its subscription), so `consumerConnection` and the dashboard's data show it;
    NotifyClientTermination at its shutdown takes it out."""
    import json
    import subprocess

    from rocketmq_emulator.testing.command_line import COMMAND
    finished(grpc_emulator.run("produce", "--topic", "T", "--count", "1"))
    live = grpc_emulator.start("simple", "--topic", "T", "--group", "Live5", "--expression", "TagA || TagB",
                               "--idle", "--duration", "5", timeout=60)
    try:
        assert live.wait_for("started", 30), live.describe()

        def connection() -> subprocess.CompletedProcess[str]:
            return subprocess.run([*COMMAND, "admin", "consumerConnection", "-n", grpc_emulator.namesrv_addr, "-g",
                                   "Live5", "--json"], capture_output=True, text=True, timeout=60)
        deadline = time.monotonic() + 20  # the client's first heartbeat
        while (done := connection()).returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        [client] = data["connections"]
        assert client["language"] == "PYTHON" and client["clientAddr"].startswith("127.0.0.1:"), data
        assert data["subscriptions"] == {"T": "TagA || TagB"} and data["messageModel"] == "CLUSTERING", data
        assert data["consumeType"] == "CONSUME_ACTIVELY"
    finally:
        live.wait()
    gone = subprocess.run([*COMMAND, "admin", "consumerConnection", "-n", grpc_emulator.namesrv_addr, "-g", "Live5"],
                          capture_output=True, text=True, timeout=60)
    assert gone.returncode == 1, gone.stdout  # no consumer online once it said goodbye


def test_a_push_consumers_long_consumption_is_renewed_and_not_delivered_twice(grpc_emulator):
    """The push consumer's message is invisible for 60 s; the clock is moved 52 s while its listener works (11 s):
    the renewal (every 5 s, 10 s ahead, as the proxy's) extends it, so it is delivered once, and the ack the
    client sends with its first receipt handle still counts (the proxy acks with the latest)."""
    import json
    import subprocess

    from rocketmq_emulator.testing.command_line import COMMAND
    finished(grpc_emulator.run("produce", "--topic", "T", "--count", "1"))
    slow = grpc_emulator.start("push", "--topic", "T", "--group", "Slow5", "--work-s", "11", "--expect", "1",
                               "--duration", "40", timeout=90)
    assert slow.wait_for("received", 30), slow.describe()
    advanced = subprocess.run([*COMMAND, "admin", "advanceTime", "-n", grpc_emulator.namesrv_addr, "-s", "52"],
                              capture_output=True, text=True, timeout=60)
    assert advanced.returncode == 0, advanced.stderr
    slow.wait()
    events = finished(slow)
    assert len([e for e in events if e["event"] == "received"]) == 1, slow.describe()  # once: renewed meanwhile
    progress = subprocess.run([*COMMAND, "admin", "consumerProgress", "-n", grpc_emulator.namesrv_addr, "-g",
                               "Slow5", "--json"], capture_output=True, text=True, timeout=60)
    data = json.loads(progress.stdout)
    assert sum(o["inflight"] for o in data["offsets"]) == 0 and data["diffTotal"] == 0, data  # the ack counted


def test_consumer_progress_of_an_online_5x_group_shows_its_pending_retries(grpc_emulator):
    """A message received and not acked goes to the group's retry topic when its invisible time is over; with a
    5.x consumer of the group online, consumerProgress still shows that retry topic's row (its pending retry)."""
    import json
    import subprocess

    from rocketmq_emulator.testing.command_line import COMMAND
    ns = grpc_emulator.namesrv_addr
    finished(grpc_emulator.run("produce", "--topic", "T", "--count", "1", "--tag", "TagA"))
    finished(grpc_emulator.run("simple", "--topic", "T", "--group", "Pend5", "--expect", "1", "--ack", "none",
                               "--invisible", "10"))
    assert subprocess.run([*COMMAND, "admin", "advanceTime", "-n", ns, "-s", "11"], capture_output=True,
                          timeout=60).returncode == 0
    live = grpc_emulator.start("simple", "--topic", "T", "--group", "Pend5", "--idle", "--duration", "5", timeout=60)
    try:
        assert live.wait_for("started", 30), live.describe()
        deadline = time.monotonic() + 20
        while True:
            progress = subprocess.run([*COMMAND, "admin", "consumerProgress", "-n", ns, "-g", "Pend5", "--json"],
                                      capture_output=True, text=True, timeout=60)
            conn = subprocess.run([*COMMAND, "admin", "consumerConnection", "-n", ns, "-g", "Pend5"],
                                  capture_output=True, text=True, timeout=60)
            connected = conn.returncode == 0
            rows = {o["topic"]: o for o in json.loads(progress.stdout)["offsets"]} if progress.returncode == 0 else {}
            if connected and "%RETRY%Pend5_T" in rows or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert connected, "the consumer never showed as online"
        assert rows["%RETRY%Pend5_T"]["diff"] == 1, rows  # the pending retry
    finally:
        live.wait()
