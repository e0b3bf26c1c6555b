"""Message codec (§7): stored records, properties, batches, message ids, tag hash codes."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emulator.protocol import MessageSysFlag, ProtocolError
from rocketmq_emulator.protocol.message import (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, BatchItem, MessageExt,
                                                body_crc, create_message_id, decode_batch, decode_message_id,
                                                decode_messages, decode_properties, encode_batch, encode_properties,
                                                java_string_hash, record_size, store_timestamp_position, tag_hash_code)


def sample(**kw) -> MessageExt:
    args = dict(topic="TopicTest", body=b"hello", queue_id=2, flag=7, queue_offset=120, commit_log_offset=2048,
                born_timestamp=1700000000000, born_host="10.0.0.5", born_port=53422,
                store_timestamp=1700000000123, store_host="10.0.0.7", store_port=10911, reconsume_times=1,
                properties={"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "0A0000050000ABCD"})
    args.update(kw)
    return MessageExt(**args)


def decode_three_ways(record: bytes, follower: bytes) -> MessageExt:
    whole = MessageExt.decode(record)
    assert whole.store_size == len(record) and whole.encode() == record
    for i in range(len(record)):  # every proper prefix is rejected, never mis-decoded
        with pytest.raises(ProtocolError):
            MessageExt.decode(record[:i])
    both = decode_messages(record + follower)
    assert both[0].encode() == record and len(both) == 2
    return whole


def test_ipv4_record_layout_and_size_formula():
    msg = sample()
    rec = msg.encode()
    assert len(rec) == 91 + 5 + len("TopicTest") + len(msg.properties_raw)
    assert len(rec) == record_size(5, 9, len(msg.properties_raw))
    assert int.from_bytes(rec[4:8], "big", signed=True) == MESSAGE_MAGIC_CODE
    assert int.from_bytes(rec[8:12], "big") == zlib.crc32(b"hello") & 0x7FFFFFFF
    assert int.from_bytes(rec[56:64], "big") == 1700000000123 == \
        int.from_bytes(rec[store_timestamp_position(0):store_timestamp_position(0) + 8], "big")
    got = decode_three_ways(rec, sample(topic="Other").encode())
    assert got.tags == "TagA" and got.keys == "k1 k2" and got.msg_id == "0A0000050000ABCD"
    assert got.offset_msg_id == create_message_id("10.0.0.7", 10911, 2048)


def test_ipv6_hosts_and_v2_magic():
    flags = MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOSTADDRESS_V6
    msg = sample(sys_flag=int(flags), born_host="2001:db8::1", store_host="::1", magic=MESSAGE_MAGIC_CODE_V2)
    rec = msg.encode()
    assert len(rec) == record_size(5, 9, len(msg.properties_raw), int(flags), v2=True)
    got = decode_three_ways(rec, sample().encode())
    assert got.born_host == "2001:db8::1" and got.store_host == "::1" and got.magic == MESSAGE_MAGIC_CODE_V2
    assert len(got.offset_msg_id) == 56


def test_compressed_flag_body():
    raw = b"x" * 5000
    msg = sample(body=zlib.compress(raw), sys_flag=int(MessageSysFlag.COMPRESSED))
    got = MessageExt.decode(msg.encode())
    assert got.uncompressed_body() == raw and got.body_crc == body_crc(msg.body)


def test_pull_body_of_32_messages():
    recs = [sample(queue_offset=i, body=b"m%d" % i).encode() for i in range(32)]
    msgs = decode_messages(b"".join(recs))
    assert [m.queue_offset for m in msgs] == list(range(32)) and msgs[31].body == b"m31"
    # like the clients: a malformed tail stops decoding, keeping what came before
    assert len(decode_messages(b"".join(recs) + b"\x00" * 10, strict=False)) == 32
    with pytest.raises(ProtocolError):
        decode_messages(b"".join(recs) + b"\x00" * 10)


def test_bad_magic_rejected():
    rec = bytearray(sample().encode())
    rec[4:8] = b"\x00\x00\x00\x01"
    with pytest.raises(ProtocolError, match="magic"):
        MessageExt.decode(bytes(rec))


def test_properties_rules():
    assert decode_properties("a\x01b\x02c\x01d\x02") == {"a": "b", "c": "d"}  # trailing separator
    assert decode_properties("a\x01b\x02c\x01d") == {"a": "b", "c": "d"}  # none (Java >= 4.9.1)
    assert decode_properties("a\x01\x02\x01x\x02k\x01v\x01w\x02a\x01z") == {"k": "v\x01w", "a": "z"}
    assert encode_properties({"a": "b", "c": "d"}) == "a\x01b\x02c\x01d"
    assert encode_properties({"a": "b"}, trailing_separator=True) == "a\x01b\x02"


def test_message_ids():
    assert create_message_id("10.0.0.7", 10911, 2048) == "0A00000700002A9F0000000000000800"
    assert decode_message_id("0A00000700002A9F0000000000000800") == ("10.0.0.7", 10911, 2048)
    ip6 = create_message_id("::1", 10911, 5)
    assert len(ip6) == 56 and decode_message_id(ip6) == ("::1", 10911, 5)
    with pytest.raises(ProtocolError):
        decode_message_id("XYZ")


def test_tag_hash_codes():
    assert tag_hash_code("TagA") == 2598919 and tag_hash_code("TagB") == 2598920 and tag_hash_code("*") == 42
    assert tag_hash_code(None) == 0 and tag_hash_code("") == 0
    assert java_string_hash("polygenelubricants") == -2147483648  # wraps to Integer.MIN_VALUE
    assert java_string_hash("\U0001F600a") == 54959966  # a non-BMP character counts as two UTF-16 units


def test_batch_three_ways():
    items = [BatchItem(b"one", {"TAGS": "a", "UNIQ_KEY": "1"}, flag=3), BatchItem(b"", {"WAIT": "true"})]
    body = encode_batch(items)
    assert len(body) == 22 * 2 + 3 + len(items[0].properties_raw) + len(items[1].properties_raw)
    assert decode_batch(body) == items
    assert decode_batch(body + encode_batch(items[:1])) == items + items[:1]
    for i in range(1, len(body)):
        if i == 22 + 3 + len(items[0].properties_raw):
            continue  # a whole first item alone is a valid batch
        with pytest.raises(ProtocolError):
            decode_batch(body[:i])
    with pytest.raises(ProtocolError):
        decode_batch(b"")


# -- property tests -------------------------------------------------------------------------------
key = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), min_size=1, max_size=8)
props = st.dictionaries(key, key, max_size=5)
ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: "%d.%d.%d.%d" % t)
ipv6 = st.binary(min_size=16, max_size=16).filter(lambda b: b[:12] != b"\0" * 10 + b"\xff\xff").map(
    lambda b: str(__import__("ipaddress").IPv6Address(b)))


@st.composite
def messages(draw):
    b6, s6, v2 = draw(st.booleans()), draw(st.booleans()), draw(st.booleans())
    sys_flag = draw(st.integers(0, 0xF)) | (0x10 if b6 else 0) | (0x20 if s6 else 0)
    i32, i64 = st.integers(-(2 ** 31), 2 ** 31 - 1), st.integers(-(2 ** 63), 2 ** 63 - 1)
    return MessageExt(
        topic=draw(st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)),
        body=draw(st.binary(max_size=200)), queue_id=draw(i32), flag=draw(i32), queue_offset=draw(i64),
        commit_log_offset=draw(i64), sys_flag=sys_flag, born_timestamp=draw(i64),
        born_host=draw(ipv6 if b6 else ipv4), born_port=draw(i32), store_timestamp=draw(i64),
        store_host=draw(ipv6 if s6 else ipv4), store_port=draw(i32), reconsume_times=draw(i32),
        prepared_transaction_offset=draw(i64), properties=draw(props), body_crc=draw(st.none() | i32),
        magic=MESSAGE_MAGIC_CODE_V2 if v2 else MESSAGE_MAGIC_CODE)


@given(messages())
def test_message_round_trip(msg):
    if len(msg.topic.encode()) > 127 and msg.magic == MESSAGE_MAGIC_CODE:
        with pytest.raises(ProtocolError):
            msg.encode()
        return
    rec = msg.encode()
    got = MessageExt.decode(rec)
    assert got.encode() == rec
    assert got.properties == msg.properties and got.topic == msg.topic and got.body == msg.body


@given(st.lists(st.builds(BatchItem, st.binary(max_size=50), props, st.integers(-(2 ** 31), 2 ** 31 - 1)),
                min_size=1, max_size=8))
def test_batch_round_trip(items):
    body = encode_batch(items)
    assert encode_batch(decode_batch(body)) == body
    assert [i.properties for i in decode_batch(body)] == [i.properties for i in items]


@given(st.binary(max_size=400))
def test_fuzz_record_and_batch_decoders(data):
    for decode in (MessageExt.decode, decode_batch, decode_messages):
        try:
            decode(data)
        except ProtocolError:
            pass


@given(props, st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "a", "A"]), st.booleans())
def test_get_property_agrees_with_full_parse(p, name, trailing):
    raw = encode_properties(p, trailing_separator=trailing).encode()
    from rocketmq_emulator.protocol.message import get_property
    if sum(1 for k in p if k == name) <= 1:
        assert get_property(raw, name.encode()) == decode_properties(raw).get(name)


def test_get_property_ignores_matches_inside_values():
    from rocketmq_emulator.protocol.message import get_property
    raw = b"X\x01aTAGS\x01no\x02TAGS\x01yes"
    assert get_property(raw, b"TAGS") == "yes"


@given(st.lists(st.builds(BatchItem, st.binary(max_size=50), props, st.integers(-(2 ** 31), 2 ** 31 - 1)),
                min_size=1, max_size=8))
def test_iter_batch_matches_decode_batch(items):
    from rocketmq_emulator.protocol.message import iter_batch
    body = encode_batch(items)
    assert [(f, b, p) for f, b, p in iter_batch(body)] == [(i.flag, i.body, i.properties_raw) for i in items]


@given(st.binary(max_size=300))
def test_fuzz_iter_batch(data):
    from rocketmq_emulator.protocol.message import iter_batch
    try:
        list(iter_batch(data))
    except ProtocolError:
        pass


def test_remove_property():
    from rocketmq_emulator.protocol.message import remove_property
    assert remove_property(b"A\x01a\x02WAIT\x01true\x02B\x01b", b"WAIT") == b"A\x01a\x02B\x01b"
    assert remove_property(b"WAIT\x01true\x02B\x01b\x02", b"WAIT") == b"B\x01b"
    assert remove_property(b"A\x01a\x02WAIT\x01true\x02", b"WAIT") == b"A\x01a"
    assert remove_property(b"A\x01xWAIT\x01no", b"WAIT") == b"A\x01xWAIT\x01no"  # inside a value: kept


@given(props, st.booleans())
def test_remove_property_agrees_with_full_parse(p, trailing):
    from rocketmq_emulator.protocol.message import remove_property
    raw = encode_properties(p, trailing_separator=trailing).encode()
    expected = {k: v for k, v in p.items() if k != "WAIT"}
    assert decode_properties(remove_property(raw, b"WAIT")) == expected


def test_java_hash_set_order_is_the_real_name_servers_topic_list_order():
    """The topic list a fresh Apache RocketMQ 4.9.8 name server answered (tests/parity/snapshots/nsr_routes_kv.json):
    a Java HashSet filled from a HashMap of 1024 buckets."""
    from rocketmq_emulator.protocol.message import java_hash_set_order
    topics = ["BenchmarkTest", "DefaultCluster", "DefaultCluster_REPLY_TOPIC", "OFFSET_MOVED_EVENT", "PT_NS",
              "SCHEDULE_TOPIC_XXXX", "SELF_TEST_TOPIC", "TBW102", "broker-a"]
    assert java_hash_set_order(topics, 1024) == [
        "SCHEDULE_TOPIC_XXXX", "DefaultCluster_REPLY_TOPIC", "BenchmarkTest", "OFFSET_MOVED_EVENT", "broker-a",
        "TBW102", "PT_NS", "SELF_TEST_TOPIC", "DefaultCluster"]
    assert java_hash_set_order(["DefaultCluster", "broker-a"]) == ["broker-a", "DefaultCluster"]


@given(st.lists(st.tuples(st.binary(min_size=1, max_size=40), st.binary(max_size=40)), max_size=8))
def test_a_batch_from_columns_is_the_batch_of_its_items(rows: list[tuple[bytes, bytes]]) -> None:
    from rocketmq_emulator.protocol.message import encode_batch_rows
    bodies, props = [b for b, _ in rows], [p for _, p in rows]
    assert encode_batch_rows(bodies, props) == encode_batch([BatchItem(b, properties_raw=p) for b, p in rows])


def test_a_batch_from_columns_refuses_properties_over_32767_bytes() -> None:
    from rocketmq_emulator.protocol.message import encode_batch_rows
    assert len(encode_batch_rows([b"x"], [b"p" * 32767])) == 22 + 1 + 32767
    with pytest.raises(ProtocolError, match="32768 bytes exceed 32767"):
        encode_batch_rows([b"x"], [b"p" * 32768])
