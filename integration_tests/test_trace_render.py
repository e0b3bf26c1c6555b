"""The wire trace without a network (protocol/trace.py, and broker/trace.py with its real renderer process):
filters, the record and line of a command, a full queue, saved traces."""

from __future__ import annotations

import json

import pytest

from rocketmq_emulator.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.protocol.frame import encode_command_bytes
from rocketmq_emulator.broker.trace import Tracer
from rocketmq_emulator.protocol.trace import (Renderer, TraceFilter, format_text, pack, pack_dropped, parse_codes,
                                               parse_text_line, read_trace)


class Conn:
    name, peer = "broker broker-a", "127.0.0.1:5555"

    def __init__(self) -> None:
        self.attributes: dict = {}


def test_parse_codes_takes_names_and_numbers_and_names_a_bad_one():
    assert parse_codes("PULL_MESSAGE, send_message_v2,34") == {11, 310, 34}
    with pytest.raises(ValueError, match="unknown request code 'PULL'"):
        parse_codes("PULL")
    with pytest.raises(ValueError, match="no request code"):
        parse_codes(" , ")


def test_the_renderer_makes_the_same_lines_of_records_however_their_bytes_arrive():
    """The codec half of the renderer process: packed records in, lines out, with no I/O of its own."""
    send = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "PG", "b": "T"}, b"hello", opaque=3)
    data = pack(1_700_000_000.25, "broker broker-a", "127.0.0.1:5555", {"client_id": "c1"}, "in", 310, send) + \
        pack_dropped(4)
    whole = Renderer("json").feed(data)
    assert [json.loads(whole[0])[k] for k in ("name", "opaque", "client", "header")] == \
        ["SEND_MESSAGE_V2", 3, "c1", {"a": "PG", "b": "T"}]
    assert whole[1] == "# trace: 4 lines dropped (the renderer could not keep up)"
    renderer = Renderer("json")
    assert [line for i in range(len(data)) for line in renderer.feed(data[i:i + 1])] == whole
    text = Renderer("text").feed(data)[0]
    assert text == format_text(json.loads(whole[0])) and " <- SEND_MESSAGE_V2(310) opaque=3 " in text


def test_requests_are_chosen_by_the_filter_and_answers_follow_them(tmp_path):
    out = tmp_path / "trace.jsonl"
    tracer = Tracer.open(str(out), fmt="json", trace_filter=TraceFilter(group="G1"))
    conn = Conn()
    pull = RemotingCommand.request(RequestCode.PULL_MESSAGE, {"consumerGroup": "G1", "topic": "T"}, opaque=7)
    other = RemotingCommand.request(RequestCode.PULL_MESSAGE, {"consumerGroup": "G2", "topic": "T"}, opaque=8)
    tracer.inbound(conn, pull)
    tracer.inbound(conn, other)
    tracer.outbound(conn, RemotingCommand(0, flag=1, opaque=8))  # the answer to the unchosen one
    tracer.outbound_frame(conn, encode_command_bytes(RemotingCommand(19, flag=1, opaque=7, remark="OFFSET")))
    # a broker-initiated request and the client's answer (whose opaque may repeat a request's)
    conn.attributes.update(client_id="c1", language="CPP", version=63)
    tracer.outbound(conn, RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "G1"},
                                                  opaque=7))
    tracer.inbound(conn, RemotingCommand(0, flag=1, opaque=7))
    with tracer:
        pass
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["dir"], r["kind"], r["name"], r["opaque"]) for r in recs] == [
        ("in", "request", "PULL_MESSAGE", 7), ("out", "response", "PULL_NOT_FOUND", 7),
        ("out", "request", "NOTIFY_CONSUMER_IDS_CHANGED", 7), ("in", "response", "SUCCESS", 7)]
    assert recs[1]["request"] == "PULL_MESSAGE" and recs[1]["remark"] == "OFFSET"
    assert recs[2]["client"] == "c1" and (recs[2]["language"], recs[2]["version"]) == ("CPP", 63)
    assert recs[3]["request"] == "NOTIFY_CONSUMER_IDS_CHANGED"


def test_a_full_queue_drops_lines_and_says_how_many(tmp_path):
    out = tmp_path / "trace.log"
    tracer = Tracer.open(str(out), max_pending=2)  # not started yet: nothing is handed over, the queue fills
    conn = Conn()
    for i in range(5):
        tracer.inbound(conn, RemotingCommand.request(RequestCode.HEART_BEAT, opaque=i, body=b'{"clientID":"x"}'))
    assert tracer.dropped == 3
    with tracer:
        pass
    lines = out.read_text().splitlines()
    assert len(lines) == 3 and lines[-1] == "# trace: 3 lines dropped (the renderer could not keep up)"
    assert "<- HEART_BEAT(34) opaque=0" in lines[0] and 'json={"clientID":"x"}' in lines[0]


def test_saved_traces_are_filtered_and_printed_as_text(tmp_path):
    out = tmp_path / "trace.jsonl"
    tracer = Tracer.open(str(out), fmt="json")
    conn = Conn()
    tracer.inbound(conn, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "PG", "b": "T1", "i": "TAGS\x01x"},
                                                 opaque=1, body=b"hi"))
    tracer.inbound(conn, RemotingCommand.request(RequestCode.PULL_MESSAGE, {"consumerGroup": "G", "topic": "T2"},
                                                 opaque=2))
    tracer.outbound(conn, RemotingCommand(0, flag=1, opaque=1, ext_fields={"msgId": "AB", "queueOffset": "4"}))
    with tracer:
        pass
    saved = out.read_text().splitlines() + ["not a record", "# trace: 1 lines dropped"]
    chosen = list(read_trace(saved, TraceFilter(codes={310})))
    assert [r["name"] for r in chosen if isinstance(r, dict)] == ["SEND_MESSAGE_V2", "SUCCESS"]
    assert chosen[-1] == "# trace: 1 lines dropped"
    line = format_text(chosen[0])
    assert "<- SEND_MESSAGE_V2(310) opaque=1 flag=0 {a=PG, b=T1, i=TAGS=x} body=bytes=2 messages=1" in line
    assert list(read_trace(saved, TraceFilter(topic="T2")))[0]["name"] == "PULL_MESSAGE"


def _two_groups_on_two_connections(out, fmt: str) -> None:
    """Sends and pulls of groups G1 and G2 on two connections, whose opaques repeat; a heartbeat; a broker
    request to a client of G1 and its answer."""
    tracer = Tracer.open(str(out), fmt=fmt)
    one, two = Conn(), Conn()
    two.peer = "127.0.0.1:6666"
    for conn, group, topic in ((one, "G1", "T1"), (two, "G2", "T2")):
        tracer.inbound(conn, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": group, "b": topic},
                                                     opaque=1, body=b"x"))
        tracer.inbound(conn, RemotingCommand.request(RequestCode.PULL_MESSAGE, {"consumerGroup": group,
                                                                                 "topic": topic}, opaque=2))
        tracer.inbound(conn, RemotingCommand.request(RequestCode.HEART_BEAT, opaque=3, body=b'{"clientID":"c"}'))
    for conn in (two, one):  # answers in another order than their requests
        for opaque in (1, 2, 3):
            tracer.outbound(conn, RemotingCommand(0, flag=1, opaque=opaque, remark="a, {b}",
                                                  ext_fields={"queueOffset": str(opaque)}))
    tracer.outbound(one, RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "G1"},
                                                 opaque=2))
    tracer.inbound(one, RemotingCommand(0, flag=1, opaque=2))
    with tracer:
        pass


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_saved_trace_keeps_the_answers_of_the_chosen_requests_only(tmp_path, fmt):
    out = tmp_path / f"trace.{fmt}"
    _two_groups_on_two_connections(out, fmt)
    saved = out.read_text().splitlines()
    assert len(saved) == 14

    def summary(trace_filter):
        got = []
        for item in read_trace(saved, trace_filter):
            rec = item if isinstance(item, dict) else parse_text_line(item)
            got.append((rec["peer"][-4:], rec["dir"], rec["kind"], rec["code"], rec["opaque"]))
        return got

    assert summary(TraceFilter(group="G1")) == [
        ("5555", "in", "request", 310, 1), ("5555", "in", "request", 11, 2),
        ("5555", "out", "response", 0, 1), ("5555", "out", "response", 0, 2),
        ("5555", "out", "request", 40, 2), ("5555", "in", "response", 0, 2)]
    assert summary(TraceFilter(topic="T2")) == [
        ("6666", "in", "request", 310, 1), ("6666", "in", "request", 11, 2),
        ("6666", "out", "response", 0, 1), ("6666", "out", "response", 0, 2)]
    assert summary(TraceFilter(codes={34})) == [
        ("5555", "in", "request", 34, 3), ("6666", "in", "request", 34, 3),
        ("6666", "out", "response", 0, 3), ("5555", "out", "response", 0, 3)]
    assert summary(TraceFilter(codes={310}, group="G2")) == [("6666", "in", "request", 310, 1),
                                                             ("6666", "out", "response", 0, 1)]
    assert len(summary(TraceFilter())) == 14
