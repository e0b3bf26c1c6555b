"""The byte layouts of the reference, written declaratively with `construct` and used as an independent
oracle for the hand-written struct codecs (frame prefix §2.2, binary header §2.4, stored record §7.1, batch
item §7.6, consume-queue unit §8.3)."""

from __future__ import annotations

import construct as c
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emulator.protocol import RemotingCommand, SerializeType, encode_command_bytes
from rocketmq_emulator.protocol.message import (MESSAGE_MAGIC_CODE, BatchItem, MessageExt, encode_batch,
                                                encode_properties, pack_host)
from rocketmq_emulator.store.consume_queue import _UNIT

Frame = c.Struct(
    "total_length" / c.Int32sb,
    "serialize_type" / c.Int8ub,
    "header_length" / c.Int24ub,
    "header" / c.Bytes(c.this.header_length),
    "body" / c.Bytes(c.this.total_length - 4 - c.this.header_length),
)

BinaryHeader = c.Struct(
    "code" / c.Int16sb, "language" / c.Int8ub, "version" / c.Int16sb, "opaque" / c.Int32sb, "flag" / c.Int32sb,
    "remark" / c.PascalString(c.Int32sb, "utf8"),
    "ext_length" / c.Int32sb,
    "ext" / c.FixedSized(c.this.ext_length, c.GreedyRange(c.Struct(
        "key" / c.PascalString(c.Int16sb, "utf8"), "value" / c.PascalString(c.Int32sb, "utf8")))),
)

Host = c.Struct("address" / c.Bytes(4), "port" / c.Int32sb)  # IPv4 (sysFlag bits 4/5 clear)

StoredRecord = c.Struct(
    "total_size" / c.Int32sb, "magic" / c.Int32sb, "body_crc" / c.Int32sb, "queue_id" / c.Int32sb,
    "flag" / c.Int32sb, "queue_offset" / c.Int64sb, "physical_offset" / c.Int64sb, "sys_flag" / c.Int32sb,
    "born_timestamp" / c.Int64sb, "born_host" / Host, "store_timestamp" / c.Int64sb, "store_host" / Host,
    "reconsume_times" / c.Int32sb, "prepared_transaction_offset" / c.Int64sb,
    "body" / c.Prefixed(c.Int32sb, c.GreedyBytes),
    "topic" / c.PascalString(c.Int8ub, "utf8"),
    "properties" / c.Prefixed(c.Int16ub, c.GreedyBytes),
)

BatchItemLayout = c.Struct(
    "total_size" / c.Int32sb, "magic" / c.Int32sb, "body_crc" / c.Int32sb, "flag" / c.Int32sb,
    "body" / c.Prefixed(c.Int32sb, c.GreedyBytes), "properties" / c.Prefixed(c.Int16ub, c.GreedyBytes),
)

ConsumeQueueUnit = c.Struct("commitlog_offset" / c.Int64sb, "size" / c.Int32sb, "tags_code" / c.Int64sb)

text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), min_size=1,
               max_size=10)
i32 = st.integers(-(2 ** 31), 2 ** 31 - 1)
i64 = st.integers(-(2 ** 63), 2 ** 63 - 1)


@given(st.dictionaries(text, text, min_size=1, max_size=4), st.binary(max_size=40), i32)
def test_binary_frame_matches_the_declared_layout(ext, body, opaque):
    cmd = RemotingCommand(14, opaque=opaque, remark="r", ext_fields=ext, body=body,
                          serialize_type=SerializeType.ROCKETMQ)
    frame = Frame.parse(encode_command_bytes(cmd))
    assert frame.serialize_type == 1 and frame.body == body
    header = BinaryHeader.parse(frame.header)
    assert (header.code, header.version, header.opaque, header.remark) == (14, 409, opaque, "r")
    assert {e.key: e.value for e in header.ext} == ext


@given(st.binary(max_size=64), st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=30),
       st.dictionaries(text, text, max_size=4), i32, i64, i64, i64, i64)
def test_stored_record_matches_the_declared_layout(body, topic, props, queue_id, queue_offset, phy, born_ts, store_ts):
    msg = MessageExt(topic=topic, body=body, queue_id=queue_id, queue_offset=queue_offset, commit_log_offset=phy,
                     born_timestamp=born_ts, born_host="10.1.2.3", born_port=1234, store_timestamp=store_ts,
                     store_host="10.0.0.7", store_port=10911, properties=props)
    rec = msg.encode()
    parsed = StoredRecord.parse(rec)
    assert parsed.total_size == len(rec) and parsed.magic == MESSAGE_MAGIC_CODE
    assert (parsed.queue_id, parsed.queue_offset, parsed.physical_offset) == (queue_id, queue_offset, phy)
    assert (parsed.born_timestamp, parsed.store_timestamp) == (born_ts, store_ts)
    assert parsed.born_host.address == pack_host("10.1.2.3") and parsed.store_host.port == 10911
    assert (parsed.body, parsed.topic, parsed.properties) == (body, topic, encode_properties(props).encode())
    assert StoredRecord.build(parsed) == rec


@given(st.lists(st.tuples(st.binary(max_size=30), st.dictionaries(text, text, max_size=3), i32), min_size=1,
                max_size=5))
def test_batch_body_matches_the_declared_layout(items):
    body = encode_batch([BatchItem(b, p, f) for b, p, f in items])
    parsed = c.GreedyRange(BatchItemLayout).parse(body)
    assert [(i.body, i.properties, i.flag) for i in parsed] == \
        [(b, encode_properties(p).encode(), f) for b, p, f in items]
    assert all(i.total_size == 22 + len(i.body) + len(i.properties) for i in parsed)


@given(i64, st.integers(0, 2 ** 31 - 1), i64)
def test_consume_queue_unit_matches_the_declared_layout(offset, size, tags):
    packed = _UNIT.pack(offset, size, tags)
    assert len(packed) == 20
    assert ConsumeQueueUnit.build(dict(commitlog_offset=offset, size=size, tags_code=tags)) == packed
