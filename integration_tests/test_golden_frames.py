"""Golden frames: what the real C++ client (rocketmq==0.4.4) sends, decoded by our codec, answered by our codec.

A loopback listener (plain sockets, one thread per connection) plays name server and broker using only
`FrameDecoder` (fed chunks as they arrive) and `RemotingCommand.response_to` + `encode_command_bytes`.
The client runs in a subprocess under a watchdog (integration_tests/cppclient.py), so a hang fails the test.
Regenerate the golden file with `UPDATE_GOLDEN=1 pytest tests/test_golden_frames.py`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from rocketmq_emulator.protocol.codes import LanguageCode, RequestCode, ResponseCode
from rocketmq_emulator.protocol.command import RemotingCommand
from rocketmq_emulator.protocol.frame import FrameDecoder, encode_command_bytes

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "integration_tests"))
from cppclient import run_driver, start_driver  # noqa: E402

if importlib.util.find_spec("rocketmq") is None or (sys.platform, platform.machine()) != ("linux", "x86_64"):
    pytest.skip("needs the C++ client wheel rocketmq==0.4.4 (manylinux x86_64)", allow_module_level=True)

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / "cpp_producer_first_requests.json"
TOPIC, GROUP, TAGS, KEYS, BODY = "GoldenTopic", "GID_golden", "TagA", "key-1", "golden body #"
MSG_ID_PREFIX = "7F00000100002A9F"  # 16 hex chars; the listener appends a 16-hex-char counter
FIRST_OFFSET = 1000
#: The producer's scheduled heartbeat reaches the broker before shutdown only on a slow/loaded machine.
OPTIONAL_GOLDEN_CODES = {"34"}


class Loopback:
    """Name server + broker on two free 127.0.0.1 ports, recording every decoded request."""

    def __init__(self) -> None:
        self.frames: list[tuple[str, RemotingCommand]] = []  # (role, request) in arrival order
        self.errors: list[str] = []
        self.raw = {"namesrv": bytearray(), "broker": bytearray()}  # every byte received, per role
        self._threads: list[threading.Thread] = []
        self.sent_msg_ids: list[str] = []
        self.sent_offsets: list[int] = []
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._servers = {role: socket.create_server(("127.0.0.1", 0)) for role in ("namesrv", "broker")}
        self.namesrv_addr = "127.0.0.1:%d" % self._servers["namesrv"].getsockname()[1]
        self.broker_addr = "127.0.0.1:%d" % self._servers["broker"].getsockname()[1]
        for role, server in self._servers.items():
            threading.Thread(target=self._accept, args=(role, server), daemon=True).start()

    def route_body(self) -> bytes:
        return (b'{"brokerDatas":[{"brokerAddrs":{"0":"%s"},"brokerName":"broker-a","cluster":"DefaultCluster"}],'
                b'"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,'
                b'"topicSysFlag":0,"writeQueueNums":4}]}' % self.broker_addr.encode())

    def _accept(self, role: str, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(role, conn), daemon=True)
            with self._lock:
                self._conns.append(conn)
                self._threads.append(thread)
            thread.start()

    def _serve(self, role: str, conn: socket.socket) -> None:
        decoder = FrameDecoder()
        try:
            while chunk := conn.recv(65536):
                self.raw[role] += chunk
                decoder.feed(chunk)
                for cmd in decoder:
                    with self._lock:
                        self.frames.append((role, cmd))
                        reply = None if cmd.is_response or cmd.is_oneway else self._answer(cmd)
                    if reply is not None:
                        conn.sendall(encode_command_bytes(reply))
        except OSError:
            pass
        except Exception as exc:  # a decode error (ProtocolError) or a bug here: fail the test
            self.errors.append(f"{role}: {type(exc).__name__}: {exc}")
        finally:
            if decoder.buffered:
                self.errors.append(f"{role}: {decoder.buffered} bytes of an incomplete frame at close")
            conn.close()

    def _answer(self, req: RemotingCommand) -> RemotingCommand:
        if req.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            return RemotingCommand.response_to(req, body=self.route_body())
        if req.code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
            n = len(self.sent_offsets)
            msg_id, offset = f"{MSG_ID_PREFIX}{n:016X}", FIRST_OFFSET + n
            self.sent_msg_ids.append(msg_id)
            self.sent_offsets.append(offset)
            queue_id = req.ext("queueId") or req.ext("e") or "0"
            return RemotingCommand.response_to(req, ext_fields={
                "msgId": msg_id, "queueId": queue_id, "queueOffset": str(offset),
                "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})
        if req.code == RequestCode.HEART_BEAT:
            return RemotingCommand.response_to(req)
        return RemotingCommand.response_to(req, ResponseCode.SYSTEM_ERROR, remark="not served by the loopback")

    def requests(self, code: int) -> list[RemotingCommand]:
        with self._lock:
            return [cmd for _, cmd in self.frames if cmd.code == code and not cmd.is_response]

    def wait_closed(self, timeout: float = 5.0) -> None:
        """After the client exited: let every connection thread see EOF and finish its checks."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
        assert not any(t.is_alive() for t in threads), "a connection is still open after the client exited"

    def wait_for_requests(self, codes: set[int], timeout: float) -> bool:
        """Poll until a request of every code in `codes` has arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if codes <= {cmd.code for _, cmd in self.frames}:
                    return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        for server in self._servers.values():
            server.close()
        with self._lock:
            for conn in self._conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


@pytest.fixture
def loopback():
    lb = Loopback()
    yield lb
    lb.close()


def parse_properties(text: str) -> dict[str, str]:
    """The \\x01/\\x02 separated message properties string (§7.4)."""
    return dict(item.split("\x01", 1) for item in text.split("\x02") if item)


def language_name(language) -> str:
    """`RemotingCommand.language` as its name, whether the codec keeps the name or the LanguageCode."""
    return language if isinstance(language, str) else LanguageCode(language).name


def masked(cmd: RemotingCommand) -> dict:
    """The decoded header fields of a request with volatile values replaced by placeholders."""
    ext = dict(cmd.ext_fields or {})
    for key in ("Signature", "bornTimestamp"):
        if key in ext:
            ext[key] = f"<{key}>"
    if "properties" in ext:
        ext["properties"] = re.sub(r"(UNIQ_KEY\x01)[0-9A-F]+", r"\1<UNIQ_KEY>", ext["properties"])
    if "clientID" in ext:  # "<pid>-<ip>@<instance>"
        ext["clientID"] = re.sub(r"^\d+-[^@]*@", "<pid>-<ip>@", ext["clientID"])
    return {"code": cmd.code, "language": language_name(cmd.language), "version": cmd.version,
            "opaque": "<opaque>", "flag": cmd.flag, "remark": cmd.remark, "serialize_type": int(cmd.serialize_type),
            "ext_fields": dict(sorted(ext.items()))}


# --------------------------------------------------------------------------------------------------
def test_producer_send_frames_decode_and_responses_accepted(loopback, tmp_path):
    count = 3
    run = run_driver(["produce", "--namesrv", loopback.namesrv_addr, "--topic", TOPIC, "--group", GROUP,
                      "--count", count, "--tags", TAGS, "--keys", KEYS, "--body-prefix", BODY],
                     timeout=20, home=tmp_path)
    assert not run.timed_out and run.returncode == 0, run.describe()
    loopback.wait_closed()
    assert loopback.errors == []
    # the client wrote some ext values as JSON numbers; the decoder handed them over as text
    assert re.search(rb'"defaultTopicQueueNums":4[,}]', loopback.raw["broker"])

    sends = loopback.requests(RequestCode.SEND_MESSAGE) + loopback.requests(RequestCode.SEND_MESSAGE_V2)
    assert len(sends) == count, run.describe()
    for i, req in enumerate(sends):
        ext = req.ext_fields
        assert req.code == RequestCode.SEND_MESSAGE  # long field names, not V2
        assert language_name(req.language) == "CPP"
        assert all(type(v) is str for v in ext.values()), ext
        assert ext["topic"] == TOPIC and ext["producerGroup"] == GROUP
        props = parse_properties(ext["properties"])
        assert props["TAGS"] == TAGS and props["KEYS"] == KEYS
        assert re.fullmatch(r"[0-9A-F]{32}", props["UNIQ_KEY"])
        assert req.body == f"{BODY}{i}".encode()

    # The client accepted our encoded responses: status OK and the queueOffset we returned (a string ext
    # field; the C++ header decoder ignores non-strings). The C API's msg_id is the client's UNIQ_KEY: the
    # broker's offset msgId goes into SendResult.offsetMsgId, which `rocketmq.client` does not expose.
    sent = run.of("sent")
    assert [e["status"] for e in sent] == ["OK"] * count, run.describe()
    assert [e["offset"] for e in sent] == loopback.sent_offsets
    assert [e["msg_id"] for e in sent] == [parse_properties(r.ext("properties"))["UNIQ_KEY"] for r in sends]
    assert len(loopback.sent_msg_ids) == count

    # the decoded-fields golden: the first request of each code
    firsts: dict[str, dict] = {}
    for _, cmd in loopback.frames:
        firsts.setdefault(str(cmd.code), masked(cmd))
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if os.environ.get("UPDATE_GOLDEN"):  # keeps optional entries this run did not see
        golden = {**{k: v for k, v in golden.items() if k in OPTIONAL_GOLDEN_CODES}, **firsts}
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(golden, indent=2, sort_keys=True) + "\n")
    assert set(golden) - OPTIONAL_GOLDEN_CODES <= set(firsts) <= set(golden), sorted(firsts)
    assert firsts == {code: golden[code] for code in firsts}


def test_push_consumer_start_frames(loopback, tmp_path):
    run = start_driver(["push", "--namesrv", loopback.namesrv_addr, "--topic", TOPIC, "--group", GROUP,
                        "--model", "clustering", "--duration", "20"], timeout=30, home=tmp_path)
    # normally ~10 ms after start; the C++ client's next rebalance (which asks again) is 10 s later
    seen = loopback.wait_for_requests({RequestCode.HEART_BEAT, RequestCode.GET_CONSUMER_LIST_BY_GROUP}, 15)
    run.stop()
    assert seen, run.describe()
    assert not run.timed_out and run.returncode == 0 and run.of("done"), run.describe()
    loopback.wait_closed()
    assert loopback.errors == []
    assert loopback.frames, run.describe()
    for _, cmd in loopback.frames:
        assert language_name(cmd.language) == "CPP"
        assert all(type(v) is str for v in (cmd.ext_fields or {}).values())

    routes = {cmd.ext("topic") for cmd in loopback.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)}
    assert {TOPIC, f"%RETRY%{GROUP}"} <= routes

    heartbeats = loopback.requests(RequestCode.HEART_BEAT)
    assert heartbeats, run.describe()
    body = json.loads(heartbeats[0].body)
    (consumer,) = body["consumerDataSet"]
    assert consumer["groupName"] == GROUP
    assert consumer["messageModel"] == 1  # CLUSTERING
    assert {s["topic"] for s in consumer["subscriptionDataSet"]} == {TOPIC, f"%RETRY%{GROUP}"}
    assert all(s["subString"] == "*" for s in consumer["subscriptionDataSet"])

    lists = loopback.requests(RequestCode.GET_CONSUMER_LIST_BY_GROUP)
    assert lists and all(cmd.ext("consumerGroup") == GROUP for cmd in lists), run.describe()
