"""The wire trace (`serve --trace`): a C++ produce/consume session and a reset, decoded line by line; the filters;
`rocketmq-emulator trace FILE`."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
from pathlib import Path

from integration_tests.cppclient import run_driver, start_driver
from integration_tests.rawclient import RawClient, pull_request, send_request
from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.waits import wait_until

ROOT = Path(__file__).resolve().parents[1]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def requests_named(recs: list[dict], name: str) -> list[dict]:
    return [r for r in recs if r["kind"] == "request" and r["name"] == name]


def answers_to(recs: list[dict], request: dict) -> list[dict]:
    return [r for r in recs if r["kind"] == "response" and r["opaque"] == request["opaque"]
            and r["peer"] == request["peer"] and r["port"] == request["port"] and r["dir"] != request["dir"]]


def test_trace_of_a_cpp_session_and_a_reset(emulator_factory, cpp_home, tmp_path):
    trace = tmp_path / "trace.jsonl"
    emu = emulator_factory(wire_trace=str(trace), wire_trace_format="json")
    produced = run_driver(["produce", "--namesrv", emu.namesrv_addr, "--topic", "TraceT", "--group", "TP",
                           "--count", "5", "--tags", "TagA", "--keys", "key{i}"], timeout=60, home=cpp_home).events
    assert sum(1 for e in produced if e["event"] == "sent") == 5
    consumer = start_driver(["push", "--namesrv", emu.namesrv_addr, "--topic", "TraceT", "--group", "TG",
                             "--duration", "60"], timeout=90, home=cpp_home)
    try:
        assert wait_until(lambda: len(consumer.of("received")) >= 5, 30), consumer.events[-3:]
        reset = subprocess.run([*COMMAND, "admin", "resetOffsetByTime",
                                "-n", emu.namesrv_addr, "-g", "TG", "-t", "TraceT", "-s", "0"],
                               capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert reset.returncode == 0, reset.stderr
        assert wait_until(lambda: len(consumer.of("received")) >= 10, 30)  # re-consumed after the reset
    finally:
        consumer.stop()
        consumer.wait()
    emu.stop()  # the tracer writes what it has queued
    recs = records(trace)

    sends = [r for r in requests_named(recs, "SEND_MESSAGE") if r["header"].get("topic") == "TraceT"]  # C++: long names
    assert len(sends) == 5 and all(r["language"] == "CPP" and r["port"] == "broker broker-a" for r in sends)
    assert all(r["body"]["messages"] == 1 and "KEYS\x01key" in r["header"]["properties"] for r in sends)
    for send in sends:
        (answer,) = answers_to(recs, send)
        assert answer["name"] == "SUCCESS" and answer["request"] == "SEND_MESSAGE"
        assert {"msgId", "queueId", "queueOffset"} <= set(answer["header"])
    routes = requests_named(recs, "GET_ROUTEINFO_BY_TOPIC")
    assert any(r["port"] == "namesrv" and r["header"]["topic"] == "TraceT" for r in routes)
    heartbeat = next(r for r in requests_named(recs, "HEART_BEAT") if '"TG"' in r["body"].get("json", ""))
    client_id = re.search(r'"clientID":"([^"]+)"', heartbeat["body"]["json"]).group(1)
    pulls = [r for r in requests_named(recs, "PULL_MESSAGE") if r["header"]["topic"] == "TraceT"]
    found = [a for p in pulls for a in answers_to(recs, p) if a["name"] == "SUCCESS"]
    assert sum(a["body"]["messages"] for a in found) >= 10
    for pull, answer in ((p, a) for p in pulls for a in answers_to(recs, p) if a["name"] == "SUCCESS"):
        first, last = answer["body"]["queue_offsets"]
        assert answer["body"]["queue_id"] == int(pull["header"]["queueId"])
        assert first == int(pull["header"]["queueOffset"]) and last - first + 1 == answer["body"]["messages"]
    assert all(p.get("client") == client_id for p in pulls)  # known once the heartbeat named it
    # the reset, end to end: the admin's request and answer, then the broker's request to the C++ client
    (invoke,) = requests_named(recs, "INVOKE_BROKER_TO_RESET_OFFSET")
    assert invoke["header"]["group"] == "TG" and answers_to(recs, invoke)[0]["name"] == "SUCCESS"
    (to_client,) = requests_named(recs, "RESET_CONSUMER_CLIENT_OFFSET")
    assert to_client["dir"] == "out" and to_client["flag"] & 2 and to_client["client"] == client_id
    assert to_client["header"]["group"] == "TG" and to_client["header"]["topic"] == "TraceT"
    assert to_client["language"] == "CPP" and "offsetTable" in to_client["body"]["json"]

    printed = subprocess.run([*COMMAND, "trace", str(trace), "--codes",
                              "RESET_CONSUMER_CLIENT_OFFSET,INVOKE_BROKER_TO_RESET_OFFSET"],
                             capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert len(lines) == 3, lines  # the admin's request, its answer, the request to the client (oneway)
    assert any("-> RESET_CONSUMER_CLIENT_OFFSET(220)" in line and "oneway" in line and client_id in line
               for line in lines), lines


def _traffic(emu) -> None:
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emu.broker_port) as c:
            for topic in ("FA", "FB"):
                assert (await c.request(send_request(topic))).code == 0
                await c.request(pull_request(topic, 0, suspend_ms=0, group="GA" if topic == "FA" else "GB"))
    asyncio.run(scenario())


def test_trace_filters_by_code_group_and_topic(emulator_factory, tmp_path):
    for name, overrides, check in (
            ("codes", {"wire_trace_codes": frozenset({11})}, lambda r: r.get("request_code", r["code"]) == 11),
            ("group", {"wire_trace_group": "GB"}, lambda r: r["kind"] == "response" or r["header"].get(
                "consumerGroup") == "GB"),
            ("topic", {"wire_trace_topic": "FA"}, lambda r: r["kind"] == "response" or "FA" in (
                r["header"].get("topic"), r["header"].get("b")))):
        trace = tmp_path / f"{name}.jsonl"
        emu = emulator_factory(wire_trace=str(trace), wire_trace_format="json", **overrides)
        _traffic(emu)
        emu.stop()
        recs = records(trace)
        assert recs and all(check(r) for r in recs), (name, recs)
        assert any(r["kind"] == "response" for r in recs), name  # answers follow their requests
    assert {r["header"]["topic"] for r in records(tmp_path / "codes.jsonl") if r["kind"] == "request"} == {"FA", "FB"}


def test_text_trace_to_a_file_from_the_command_line(tmp_path):
    from rocketmq_emulator.testing.ports import free_broker_port, free_port
    trace = tmp_path / "trace.txt"
    ns, bp = free_port(), free_broker_port()
    proc = subprocess.Popen([*COMMAND, "serve", "--ephemeral",
                             "--namesrv-port", str(ns), "--broker-port", str(bp), "--trace", str(trace),
                             "--trace-codes", "SEND_MESSAGE_V2"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while "ready" not in proc.stderr.readline():
            assert time.monotonic() < deadline
        sent = subprocess.run([*COMMAND, "produce", "-n", f"127.0.0.1:{ns}",
                               "-t", "TextTrace", "-m", "hello", "-c", "2"], capture_output=True, text=True,
                              timeout=60, cwd=ROOT)
        assert sent.returncode == 0, sent.stderr
    finally:
        proc.terminate()
        proc.wait(10)
    lines = trace.read_text().splitlines()
    assert len(lines) == 4, lines  # two sends and their answers, nothing else
    assert "<- SEND_MESSAGE_V2(310)" in lines[0] and "b=TextTrace" in lines[0] and "body=bytes=5 messages=1" in lines[0]
    assert "-> answer to SEND_MESSAGE_V2: SUCCESS(0)" in lines[1] and "queueOffset=" in lines[1]


def test_the_trace_command_filters_text_and_json_traces_by_the_live_rule(emulator_factory, tmp_path):
    """`rocketmq-emulator trace FILE --group/--topic`: a request when it names the group or topic, an answer
    when its request did (so no answer to another group's request, and every chosen request's answer)."""
    for fmt in ("text", "json"):
        trace = tmp_path / f"full.{fmt}"
        emu = emulator_factory(wire_trace=str(trace), wire_trace_format=fmt)
        _traffic(emu)  # on one connection: sends to FA and FB (group PG), pulls of FA by GA and FB by GB
        emu.stop()

        def printed(*args: str) -> list[str]:
            done = subprocess.run([*COMMAND, "trace", str(trace), *args],
                                  capture_output=True, text=True, timeout=30, cwd=ROOT)
            assert done.returncode == 0 and not done.stderr, done.stderr
            return done.stdout.splitlines()

        by_group = printed("--group", "GA")
        assert len(by_group) == 2, (fmt, by_group)
        assert "<- PULL_MESSAGE(11)" in by_group[0] and "consumerGroup=GA" in by_group[0], (fmt, by_group)
        assert "-> answer to PULL_MESSAGE:" in by_group[1], (fmt, by_group)
        assert by_group[0].split(" opaque=")[1].split()[0] == by_group[1].split(" opaque=")[1].split()[0]

        by_topic = printed("--topic", "FB")
        assert [line.split(" opaque=")[0].split("<- ")[-1].split("-> ")[-1] for line in by_topic] == [
            "SEND_MESSAGE_V2(310)", "answer to SEND_MESSAGE_V2: SUCCESS(0)", "PULL_MESSAGE(11)",
            "answer to PULL_MESSAGE: SUCCESS(0)"], (fmt, by_topic)
        assert "b=FB" in by_topic[0] and "topic=FB" in by_topic[2] and "queue_offsets=[0, 0]" in by_topic[3]
        assert len(printed()) == len(trace.read_text().splitlines())  # no filter: every line


def test_trace_refuses_a_file_that_is_not_a_trace(tmp_path):
    """`trace` of a file `serve --trace` did not write (a config, a log) is one line and exit status 1, not the
    file printed back as if it were a trace."""
    other = tmp_path / "broker.conf"
    other.write_text("brokerName=b\nlistenPort=10911\n")
    proc = subprocess.run([*COMMAND, "trace", str(other)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (f"error: {other}: line 1 is not a line of a wire trace (serve --trace FILE writes one): "
                           f"'brokerName=b'\n")
    comments_only = tmp_path / "empty.trace"
    comments_only.write_text("# trace: 3 lines dropped (the renderer could not keep up)\n\n")
    proc = subprocess.run([*COMMAND, "trace", str(comments_only)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("# trace: 3 lines dropped"), proc.stderr


def test_the_5x_clients_grpc_calls_are_traced_and_filtered_like_remoting_requests(tmp_path):
    """The official 5.x Python client through the gRPC endpoint: each call is a request and its answer (the
    method, the remoting code it stands for, its topic and group, the status), Telemetry commands one-way; the
    live filters and `rocketmq-emulator trace` treat them as remoting requests (--codes SEND_MESSAGE_V2 keeps the
    5.x sends), in JSON and in text."""
    from integration_tests.py5_client import run_py5
    from rocketmq_emulator.client import Admin
    from rocketmq_emulator.testing.emulator_process import launch_emulator
    trace = tmp_path / "trace.jsonl"
    broker = launch_emulator(tmp_path / "emu", "--trace", str(trace), "--trace-format", "json", grpc=True)
    try:
        async def create() -> None:
            async with Admin(broker.namesrv_addr) as admin:
                await admin.create_topic("GT", 2, 2)
        asyncio.run(create())
        assert broker.grpc_endpoint is not None
        sent = run_py5(["produce", "--endpoint", broker.grpc_endpoint, "--topic", "GT", "--count", "2"],
                       home=tmp_path / "py5", timeout=120)
        assert len(sent.of("sent")) == 2, sent.describe()
        got = run_py5(["simple", "--endpoint", broker.grpc_endpoint, "--topic", "GT", "--group", "GG", "--expect",
                       "2"], home=tmp_path / "py5", timeout=120)
        assert len(got.of("received")) == 2, got.describe()
    finally:
        broker.stop()
    recs = [r for r in records(trace) if r["port"] == "grpc"]
    sends = requests_named(recs, "SendMessage")
    assert len(sends) == 2 and all(s["code"] == 310 and s["header"]["topic"] == "GT" and
                                   s["header"]["messages"] == "1" and s["language"] == "PYTHON" for s in sends), sends
    for send in sends:
        [answer] = answers_to(recs, send)
        assert (answer["name"], answer["request"], answer["code"]) == ("OK", "SendMessage", 20000), answer
    receives = requests_named(recs, "ReceiveMessage")
    assert receives and all(r["header"]["group"] == "GG" and r["header"]["topic"] == "GT" for r in receives)
    delivered = [int(a["header"]["messages"]) for r in receives for a in answers_to(recs, r)]
    assert sum(delivered) == 2, delivered
    assert len(requests_named(recs, "AckMessage")) >= 1
    telemetry = [r for r in recs if r["name"] == "Telemetry"]
    assert {r["dir"] for r in telemetry} == {"in", "out"} and all(r["flag"] == 2 for r in telemetry)  # one-way

    def trace_cli(path: Path, *args: str) -> list[str]:
        done = subprocess.run([*COMMAND, "trace", str(path), *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()
    only_sends = [json.loads(line) for line in trace_cli(trace, "--codes", "SEND_MESSAGE_V2", "--json")]
    assert {(r["port"], r["kind"]) for r in only_sends} == {("grpc", "request"), ("grpc", "response")}
    assert len(only_sends) == 4
    text = tmp_path / "trace.txt"
    text.write_text("\n".join(line for line in trace_cli(trace) if "[grpc]" in line) + "\n")
    by_group = trace_cli(text, "--group", "GG")
    assert by_group and all("[grpc]" in line for line in by_group)
    assert any("<- ReceiveMessage(200050)" in line for line in by_group)
    assert any("-> answer to ReceiveMessage: OK(20000)" in line for line in by_group), by_group
