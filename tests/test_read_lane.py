"""The native read lane (native/read_sends.c): what it takes whole and what it leaves to the Python path.

* `send_header` reads a SEND_MESSAGE_V2 header only when the typed path reads the same values from it, and a
  SEND_MESSAGE (long names: C++, Go) header only when the generic path does (random headers: key order,
  whitespace, escapes, odd numbers, unknown and repeated keys, every field);
* `read_sends` takes the plain sends and the batches to validated topics and leaves every other frame, in order,
  and takes no send after another request in the same read (that request may change the topic).

The byte-for-byte comparison of whole random streams on both paths, and of a read that changes a topic
between two sends, is tests/test_native_lane.py's.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emulator import native
from rocketmq_emulator.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.protocol.admin_bodies import TopicConfig
from rocketmq_emulator.protocol.frame import decode_json_header, encode_command_bytes
from rocketmq_emulator.broker.handlers.send_message import pull_request
from rocketmq_emulator.protocol.headers import (PullMessageRequestHeader, SendMessageRequestHeader, decode_send_header,
                                                decode_send_v2_frame)
from rocketmq_emulator.protocol.message import BatchItem, encode_batch
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner

lane = native.lane
pytestmark = pytest.mark.skipif(lane is None, reason=f"the native lane does not run: {native.WHY}")

# -- send_header against the typed path --------------------------------------------------------------------
numbers = st.one_of(st.integers(-5, 5).map(str), st.integers(-2**63, 2**63).map(str),
                    st.sampled_from(["01", "+1", " 1", "1 ", "1.0", "1e3", "-0", "", "x", "0x10", "true", "false",
                                     "TRUE", "1_000", "９", "2147483648", "-2147483649", "99999999999999999999"]))
texts = st.one_of(st.text(max_size=10), st.sampled_from(["Orders", "TAGS\x01TagA\x02KEYS\x01k1 k2\x02", "\u00e9",
                                                         "a\"b\\c/d", "\x00\x1f\x7f", "\U0001f600"]))
letters = "abcdefghijklmnop"


canonical = st.one_of(st.integers(0, 9), st.integers(-2**31, 2**31 - 1), st.integers(-2**62, 2**62)).map(str)
INT_LETTERS, BOOL_LETTERS = "defghjl", "km"


@st.composite
def headers(draw: st.DrawFn) -> bytes:
    """Mostly headers a client sends (each letter a value of its type), some with anything anywhere."""
    odd = draw(st.integers(0, 3)) == 0
    ext = {}
    for letter in draw(st.lists(st.sampled_from(letters), max_size=16)):
        if odd:
            ext[letter] = draw(st.one_of(numbers, texts, st.sampled_from(["true", "false"])))
        elif letter in INT_LETTERS:
            ext[letter] = draw(canonical)
        elif letter in BOOL_LETTERS:
            ext[letter] = draw(st.sampled_from(["true", "false", "false"]))
        else:
            ext[letter] = draw(texts)
    for letter, value in (("a", "pg"), ("e", "1"), ("g", "1700000000000"), ("b", "Orders")):
        if draw(st.integers(0, 9)) > 0:
            ext.setdefault(letter, value)
    envelope: dict[str, object] = {"code": 310, "extFields": ext, "flag": 0, "language": "JAVA",
                                   "opaque": draw(st.one_of(st.integers(-3, 3), st.integers(-2**40, 2**40))),
                                   "serializeTypeCurrentRPC": "JSON", "version": 399}
    for key in draw(st.lists(st.sampled_from(["flag", "remark", "version", "language", "serializeTypeCurrentRPC",
                                              "unknown", "extFields", "opaque"]), max_size=3 if odd else 0)):
        envelope[key] = draw(st.one_of(st.none(), st.integers(-2, 2), texts, st.just({}), st.just([1])))
    items = list(envelope.items())
    rest = draw(st.permutations(items[1:]))  # "code" stays first: the lane looks for {"code":310,
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]))
    text = "{" + json.dumps("code") + separators[1] + "310" + "".join(
        separators[0] + json.dumps(k, ensure_ascii=draw(st.booleans())) + separators[1] +
        json.dumps(v, ensure_ascii=draw(st.booleans()), separators=separators) for k, v in rest) + "}"
    if odd and draw(st.booleans()):  # a key repeated
        text = text[:-1] + separators[0] + '"e"' + separators[1] + '"2"}'
    return text.replace('{"code": 310', '{"code":310', 1).encode()


@pytest.mark.parametrize("at", range(18))
def test_every_byte_anywhere_in_a_string_is_read_as_the_typed_path_reads_it(at: int) -> None:
    """The lane scans a string's plain run eight bytes at a time: each byte value, at each place of the first,
    second and third eight (and the tail), stops the run exactly where a byte-by-byte scan would."""
    for byte in range(256):
        topic = bytearray(b"T" * 18)
        topic[at] = byte
        header = (b'{"code":310,"extFields":{"a":"pg","b":"' + bytes(topic) + b'","e":"1","g":"1700000000000"},'
                  b'"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":399}')
        read = lane.send_header(header)
        if byte >= 0x80 or byte < 0x20 or byte in b'"\\':
            assert read is None, (at, byte)  # escapes, controls and UTF-8 go to the Python path
            continue
        typed = decode_send_v2_frame(header, b"")
        assert typed is not None and read is not None, (at, byte)
        assert read[1] == typed.header.topic == topic.decode(), (at, byte)


@settings(max_examples=500, deadline=None)
@given(header=headers())
def test_send_header_reads_what_the_typed_path_reads(header: bytes) -> None:
    read = lane.send_header(header)
    if read is None:
        return  # left to the Python path, which decides alone
    typed = decode_send_v2_frame(header, b"")
    assert typed is not None, "the lane read a header the typed path does not"
    h = typed.header
    assert typed.code == 310 and typed.flag == 0
    assert read == (typed.opaque, h.topic, h.queue_id, h.sys_flag, h.born_timestamp, h.flag, h.properties,
                    h.reconsume_times or 0, h.batch)


LONG = ["producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp",
        "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "bname", "AccessKey",
        "OnsChannel", "x"]


@st.composite
def long_headers(draw: st.DrawFn) -> bytes:
    """SEND_MESSAGE (10) headers: long names, values as C++ and Go send them (strings, numbers, "0"/"1" booleans)
    and anything else."""
    odd = draw(st.integers(0, 3)) == 0
    ext: dict[str, object] = {}
    for name in draw(st.lists(st.sampled_from(LONG), max_size=17)):
        letter = letters[LONG.index(name)] if LONG.index(name) < 14 else "z"
        value = draw(st.one_of(numbers, texts, st.none(), st.booleans(), st.integers(-2**64, 2**64),
                               st.floats(allow_nan=False))) if odd else \
            draw(st.one_of(canonical, canonical.map(int))) if letter in INT_LETTERS else \
            draw(st.sampled_from(["0", "1", "true", "false", False])) if letter in BOOL_LETTERS else draw(texts)
        ext[name] = value
    for name, value in (("producerGroup", "pg"), ("queueId", 1), ("bornTimestamp", "1700000000000"),
                        ("topic", "Orders")):
        if draw(st.integers(0, 9)) > 0:
            ext.setdefault(name, value)
    envelope = {"code": 10, "extFields": ext, "flag": 0, "language": draw(st.sampled_from(["CPP", "GO", 2])),
                "opaque": draw(st.integers(-3, 2**31)), "remark": draw(st.sampled_from(["", None])), "version": 63}
    items = list(envelope.items())
    rest = draw(st.permutations(items[1:]))
    text = '{"code":10,' + ",".join(json.dumps(k) + ":" + json.dumps(v, ensure_ascii=draw(st.booleans()))
                                    for k, v in rest) + "}"
    return (text + draw(st.sampled_from(["", "\n"]))).encode()


@settings(max_examples=500, deadline=None)
@given(header=long_headers())
def test_send_header_reads_long_names_as_the_generic_path(header: bytes) -> None:
    read = lane.send_header(header)
    if read is None:
        return  # left to the Python path, which decides alone
    cmd = decode_json_header(header, b"")
    h = decode_send_header(cmd.code, cmd.ext_fields)
    assert cmd.code == 10 and cmd.flag == 0
    assert read == (cmd.opaque, h.topic, h.queue_id, h.sys_flag, h.born_timestamp, h.flag, h.properties,
                    h.reconsume_times or 0, h.batch)


def test_send_header_reads_the_cpp_and_go_clients_headers() -> None:
    """As the C++ client 0.4.4 sends it (docs: ../shared/docs/cpp-client-traces) and as the Go client 2.1.2 does."""
    cpp = (b'{"code":10,"extFields":{"AccessKey":"","OnsChannel":"ALIYUN","Signature":"IjBSrauclWLzmDgXaEOe5mvfLJU=",'
           b'"batch":"0","bornTimestamp":"1795319231460","defaultTopic":"TBW102","defaultTopicQueueNums":4,"flag":0,'
           b'"producerGroup":"PID_conformance_cpp","properties":"KEYS\\u0001k1\\u0002TAGS\\u0001TagA\\u0002",'
           b'"queueId":0,"reconsumeTimes":"0","sysFlag":0,"topic":"TopicTest","unitMode":"0"},"flag":0,'
           b'"language":"CPP","opaque":1,"remark":"","version":63}\n')
    assert lane.send_header(cpp) == (1, "TopicTest", 0, 0, 1795319231460, 0, "KEYS\x01k1\x02TAGS\x01TagA\x02", 0,
                                     False)
    go = (b'{"code":10,"language":"GO","version":317,"opaque":7,"flag":0,"remark":"","extFields":{"producerGroup":'
          b'"pg","topic":"T","queueId":"3","sysFlag":"0","bornTimestamp":"5","flag":"0","properties":"",'
          b'"reconsumeTimes":"0","unitMode":"false","maxReconsumeTimes":"0","batch":"false","defaultTopic":'
          b'"TBW102","defaultTopicQueueNums":"4"}}')
    assert lane.send_header(go) == (7, "T", 3, 0, 5, 0, "", 0, False)


def test_send_header_reads_a_java_clients_header() -> None:
    header = SendMessageRequestHeader(producer_group="pg", topic="Orders", queue_id=2, born_timestamp=1_700_000,
                                      properties="TAGS\x01TagA\x02WAIT\x01true\x02", reconsume_times=0)
    frame = encode_command_bytes(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext(),
                                                         b"body", opaque=42))
    header_length = int.from_bytes(frame[4:8], "big")
    assert lane.send_header(frame[8:8 + header_length]) == (42, "Orders", 2, 0, 1_700_000, 0,
                                                            "TAGS\x01TagA\x02WAIT\x01true\x02", 0, False)


# -- pull headers ---------------------------------------------------------------------------------------------
PULL = ["consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset",
        "suspendTimeoutMillis", "subscription", "subVersion", "expressionType", "bname", "AccessKey", "lo", "x"]
PULL_NUMBERS = {"queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset", "suspendTimeoutMillis",
                "subVersion"}


@st.composite
def pull_headers(draw: st.DrawFn) -> bytes:
    """PULL_MESSAGE (11) headers: values as Java (strings), C++ (some numbers) and Go send them, and anything else."""
    odd = draw(st.integers(0, 3)) == 0
    ext: dict[str, object] = {}
    for name in draw(st.lists(st.sampled_from(PULL), max_size=15)):
        ext[name] = draw(st.one_of(numbers, texts, st.none(), st.booleans(), st.integers(-2**64, 2**64),
                                   st.floats(allow_nan=False))) if odd else \
            draw(st.one_of(canonical, canonical.map(int))) if name in PULL_NUMBERS else draw(texts)
    for name, value in (("consumerGroup", "cg"), ("topic", "Orders"), ("queueId", 1), ("queueOffset", "0"),
                        ("maxMsgNums", "32"), ("sysFlag", 4)):
        if draw(st.integers(0, 9)) > 0:
            ext.setdefault(name, value)
    envelope = {"code": 11, "extFields": ext, "flag": draw(st.sampled_from([0, 0, 0, 1, 2])),
                "language": draw(st.sampled_from(["JAVA", "CPP", "GO", 2])), "opaque": draw(st.integers(-3, 2**31)),
                "remark": draw(st.sampled_from(["", None])), "serializeTypeCurrentRPC": "JSON", "version": 395}
    items = list(envelope.items())
    rest = draw(st.permutations(items[1:]))
    text = '{"code":11,' + ",".join(json.dumps(k) + ":" + json.dumps(v, ensure_ascii=draw(st.booleans()))
                                    for k, v in rest) + "}"
    return (text + draw(st.sampled_from(["", "\n"]))).encode()


@settings(max_examples=500, deadline=None)
@given(header=pull_headers())
def test_pull_header_reads_what_the_generic_path_reads(header: bytes) -> None:
    """Whatever header the lane reads, the generic path (the JSON command, then `from_ext`) reads the same request:
    a pull, not oneway, the same opaque and an equal header."""
    read = lane.pull_header(header)
    if read is None:
        return  # left to the Python path, which decides alone
    cmd = decode_json_header(header, b"")
    assert cmd.code == 11 and cmd.flag == 0 and cmd.opaque == read[0]
    assert pull_request(read[1], read[0]).header == PullMessageRequestHeader.from_ext(cmd.ext_fields)


def test_pull_header_reads_the_java_cpp_and_go_clients_headers() -> None:
    java = PullMessageRequestHeader(consumer_group="cg", topic="Orders", queue_id=2, queue_offset=17, max_msg_nums=32,
                                    sys_flag=7, commit_offset=15, suspend_timeout_millis=15000, subscription="TagA",
                                    sub_version=1_700_000_000_123, expression_type="TAG")
    frame = encode_command_bytes(RemotingCommand.request(RequestCode.PULL_MESSAGE, java.to_ext(), opaque=42))
    header_length = int.from_bytes(frame[4:8], "big")
    opaque, fields = lane.pull_header(frame[8:8 + header_length])
    assert opaque == 42 and pull_request(fields, opaque).header == java
    cpp = (b'{"code":11,"extFields":{"AccessKey":"","OnsChannel":"ALIYUN","Signature":"+knsytI3D6k+bcjXsuGI7r37YNU=",'
           b'"commitOffset":"0","consumerGroup":"GID_test_pull","maxMsgNums":32,"queueId":0,"queueOffset":"0",'
           b'"subVersion":"0","subscription":"*","suspendTimeoutMillis":"20000","sysFlag":4,"topic":"TopicTest"},'
           b'"flag":0,"language":"CPP","opaque":12,"remark":"","version":63}\n')  # cpp-client-traces/cpp-pull.txt
    assert lane.pull_header(cpp) == (12, ("GID_test_pull", "TopicTest", 0, 0, 32, 4, 0, 20000, "*", 0, None, None))
    go = (b'{"code":11,"language":"GO","version":317,"opaque":9,"flag":0,"remark":"","extFields":{"consumerGroup":'
          b'"g","topic":"T","queueId":"1","queueOffset":"3","maxMsgNums":"32","sysFlag":"6","commitOffset":"2",'
          b'"suspendTimeoutMillis":"20000","subscription":"*","subVersion":"0","expressionType":"TAG"}}')
    assert lane.pull_header(go) == (9, ("g", "T", 1, 3, 32, 6, 2, 20000, "*", 0, "TAG", None))
    assert lane.pull_header(go.replace(b'"flag":0', b'"flag":2')) is None  # oneway: the Python path
    assert lane.pull_header(go.replace(b'"queueId":"1"', b'"queueId":"01"')) is None  # not canonical
    assert lane.pull_header(go.replace(b'"topic":"T",', b"")) is None  # a required field missing


# -- read_sends: what it takes -----------------------------------------------------------------------------
def send(topic: str, queue_id: int = 0, props: str = "TAGS\x01TagA\x02", opaque: int = 1, **kw: object) -> bytes:
    header = SendMessageRequestHeader(producer_group="pg", topic=topic, queue_id=queue_id, born_timestamp=5,
                                      properties=props, **kw)  # type: ignore[arg-type]
    return encode_command_bytes(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext(),
                                                        b"m" * 10, opaque=opaque))


def context(limit: int = 4 * 1024 * 1024) -> tuple[object, ...]:
    table = {"Orders": TopicConfig(topic_name="Orders", read_queue_nums=4, write_queue_nums=4),
             "New": TopicConfig(topic_name="New", read_queue_nums=4, write_queue_nums=4)}
    return table, {"Orders"}, MessageExtBrokerInner, b"\x02CLUSTER\x01DefaultCluster", limit, b"\x7f\0\0\x01", 5000


def kinds(items: list[object]) -> list[object]:
    """'frame' for a frame left to Python, the taken opaques for a taken run, ('batch', opaque) for a batch."""
    return [("batch", item[1]) if isinstance(item, list) and len(item) == 4 else item[1] if isinstance(item, list)
            else "frame" for item in items]


def test_read_sends_takes_plain_sends_and_leaves_the_rest_in_order() -> None:
    heartbeat = encode_command_bytes(RemotingCommand.request(RequestCode.HEART_BEAT, None, b"{}", opaque=99))
    stream = b"".join([
        send("Orders", opaque=1), send("Orders", 3, opaque=2),
        send("New", opaque=3),  # a topic not yet validated by msgCheck
        send("Orders", 4, opaque=4),  # a queue msgCheck refuses
        send("Orders", -1, opaque=5),  # a queue picked at random
        send("Orders", props="DELAY\x013\x02", opaque=6), send("Orders", props="TRAN_MSG\x01true\x02", opaque=7),
        send("Orders", sys_flag=4, opaque=8), send("%RETRY%g", opaque=9), send("Orders", batch=True, opaque=10),
        send("Orders", props="TAGS\x01t\u00e9\x02", opaque=11),  # non-ASCII: left to the Python path
        send("Orders", opaque=12),
        heartbeat,
        send("Orders", opaque=13),  # after another request: left to the Python path
    ])
    items, bad = lane.read_sends(stream, 0, 16 * 1024 * 1024, context())
    assert bad is None
    assert kinds(items) == [[1, 2]] + ["frame"] * 9 + [[12], "frame", "frame"]
    msgs = items[0][0] + items[10][0]
    assert [(m.topic, m.queue_id, m.body, m.properties_raw, m.keys) for m in msgs] == [
        ("Orders", 0, b"m" * 10, b"TAGS\x01TagA\x02CLUSTER\x01DefaultCluster", []),
        ("Orders", 3, b"m" * 10, b"TAGS\x01TagA\x02CLUSTER\x01DefaultCluster", [])] + [
        ("Orders", 0, b"m" * 10, b"TAGS\x01TagA\x02CLUSTER\x01DefaultCluster", [])]
    assert items[-1][3] == len(stream) and items[10][2] + len(heartbeat) == items[-2][3]
    # a body over maxMessageSize is left to the Python path, which refuses it
    items, _ = lane.read_sends(send("Orders"), 0, 16 * 1024 * 1024, context(limit=9))
    assert kinds(items) == ["frame"]


def batch(opaque: int, props: str = "", topic: str = "Orders", items: int = 3, sys_flag: int = 0) -> bytes:
    header = SendMessageRequestHeader(producer_group="pg", topic=topic, queue_id=1, born_timestamp=5,
                                      properties=props, batch=True, sys_flag=sys_flag)
    body = encode_batch([BatchItem(b"b%d" % i, {"TAGS": "TagB", "UNIQ_KEY": f"U{i}"}) for i in range(items)])
    return encode_command_bytes(RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, header.to_v2().to_ext(),
                                                        body, opaque=opaque))


def test_read_sends_takes_batches_whole() -> None:
    stream = b"".join([send("Orders", opaque=1), batch(2, "WAIT\x01true\x02"), batch(3), send("Orders", opaque=4),
                       batch(5, "DELAY\x012\x02"),  # a delay level: the Python path refuses it
                       batch(6, sys_flag=4),  # transactional: refused there too
                       batch(7, topic="New"), batch(8, items=0)])
    items, bad = lane.read_sends(stream, 0, 16 * 1024 * 1024, context())
    assert bad is None
    assert kinds(items) == [[1], ("batch", 2), ("batch", 3), [4], "frame", "frame", "frame", "frame"]
    msgs = items[1][0]
    assert [(m.topic, m.queue_id, m.body, m.properties_raw, m.keys) for m in msgs] == [
        ("Orders", 1, b"b%d" % i, b"TAGS\x01TagB\x02UNIQ_KEY\x01U%d\x02WAIT\x01true\x02CLUSTER\x01DefaultCluster" % i,
         [f"U{i}"]) for i in range(3)]
    assert items[2][0][0].properties_raw == b"TAGS\x01TagB\x02UNIQ_KEY\x01U0\x02CLUSTER\x01DefaultCluster"
    # over maxMessageSize together: left to the Python path
    items, _ = lane.read_sends(batch(9), 0, 16 * 1024 * 1024, context(limit=5))
    assert kinds(items) == ["frame"]


def test_read_sends_keeps_partial_frames_and_bad_prefixes_for_the_decoder() -> None:
    whole = send("Orders", opaque=1) + send("Orders", opaque=2)
    items, bad = lane.read_sends(whole[:-3], 0, 16 * 1024 * 1024, context())
    assert kinds(items) == [[1]] and bad is None and items[0][2] == len(send("Orders", opaque=1))
    items, bad = lane.read_sends(whole + b"\xff\xff\xff\xff\0\0\0\0", 0, 16 * 1024 * 1024, context())
    assert kinds(items) == [[1, 2]] and bad == (-1, 0)
