"""Messages (properties, unique ids, decoding of pulled records), queue selection by key, the exceptions'
texts, and the CLI's argument parsing."""

from __future__ import annotations

import argparse
import re
import zlib

import pytest

from rocketmq_emulator.cli.admin_commands import parse_timestamp, table
from rocketmq_emulator.client.config import ClientConfig, build_client_id
from rocketmq_emulator.client.errors import (BrokerResponseError, ConsumerNotOnlineError, InvalidArgumentError,
                                             response_error)
from rocketmq_emulator.client.message import Message, decode_received, new_unique_id
from rocketmq_emulator.client.producer import select_queue_by_hash, send_header
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.message import MessageExt, encode_properties


def test_message_properties():
    m = Message("T", "body", tags="TagA", keys=["k1", "k2"], properties={"a": "1"}, delay_level=3)
    assert m.body == b"body"
    assert m.properties == {"a": "1", "TAGS": "TagA", "KEYS": "k1 k2", "DELAY": "3", "WAIT": "true"}
    with pytest.raises(InvalidArgumentError, match="reserved"):
        Message("T", b"x", properties={"UNIQ_KEY": "x"})
    with pytest.raises(InvalidArgumentError, match="bytes or str"):
        Message("T", 42)  # type: ignore[arg-type]


def test_unique_ids_are_32_hex_and_distinct():
    ids = {new_unique_id() for _ in range(10_000)}
    assert len(ids) == 10_000 and all(re.fullmatch(r"[0-9A-F]{32}", i) for i in ids)


def test_decode_received_restores_retry_topic_and_inflates():
    body = b"y" * 5000
    retried = MessageExt(topic="%RETRY%g", body=zlib.compress(body), sys_flag=1, queue_offset=3,
                         reconsume_times=1, properties={"RETRY_TOPIC": "Orig", "TAGS": "A"})
    plain = MessageExt(topic="%RETRY%g", body=b"p", queue_offset=4)
    mq = MessageQueue("%RETRY%g", "broker-a", 0)
    data = retried.encode() + plain.encode() + b"\x00\x00\x00\x10garbage"
    a, b = decode_received(data, mq, "%RETRY%g")  # the malformed tail is dropped, as clients do
    assert (a.topic, a.body, a.tags, a.message_queue, a.broker_name) == ("Orig", body, "A", mq, "broker-a")
    assert b.topic == "%RETRY%g" and b.queue == mq


def test_select_queue_by_hash_is_stable_and_javas():
    queues = [MessageQueue("T", "b", i) for i in range(4)]
    assert select_queue_by_hash(queues, "order-1") == select_queue_by_hash(queues, "order-1")
    # Java: Math.abs("abc".hashCode() % 4) = abs(96354 % 4) = 2; Integer 7 -> 3; -7 -> 3
    assert select_queue_by_hash(queues, "abc").queue_id == 2
    assert select_queue_by_hash(queues, 7).queue_id == 3 and select_queue_by_hash(queues, -7).queue_id == 3


def test_send_header_is_java_v2():
    ext = send_header("pg", MessageQueue("T", "broker-a", 2), encode_properties({"TAGS": "A"}), batch=True)
    assert {k: ext[k] for k in "abcdefhjkmn"} == {"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "2", "f": "0",
                                                  "h": "0", "j": "0", "k": "false", "m": "true", "n": "broker-a"}
    assert "l" not in ext


def test_client_ids():
    cfg = ClientConfig(namesrv="127.0.0.1:9876", client_ip="10.0.0.5")
    assert build_client_id(cfg, broadcasting=True) == "10.0.0.5@DEFAULT"
    a, b = build_client_id(cfg), build_client_id(cfg)
    assert a != b and re.fullmatch(r"10\.0\.0\.5@\d+#\d+", a)
    assert build_client_id(cfg.with_(instance_name="x")) == "10.0.0.5@x"
    with pytest.raises(InvalidArgumentError, match="host:port"):
        ClientConfig(namesrv="nohost").namesrv_addrs


def test_error_texts():
    err = response_error(16, "the topic[T] sending message is forbidden", operation="send to 'T'",
                         addr="127.0.0.1:10911")
    assert isinstance(err, BrokerResponseError) and err.code == 16 and err.remark.startswith("the topic")
    assert str(err) == ("send to 'T' failed at 127.0.0.1:10911: NO_PERMISSION (16): the topic[T] sending message "
                        "is forbidden (the topic's or broker's perm, or the broker's access control, forbids this)")
    assert isinstance(response_error(206, "x"), ConsumerNotOnlineError)
    assert "UNKNOWN" not in str(response_error(4242, "odd")) and "4242" in str(response_error(4242, "odd"))


def test_cli_timestamps_and_tables():
    assert parse_timestamp("now") == -1 and parse_timestamp("1700000000000") == 1700000000000
    assert parse_timestamp("2024-01-02#03:04:05:678") % 1000 == 678
    with pytest.raises(argparse.ArgumentTypeError):
        parse_timestamp("2024-01-02 03:04:05")
    assert table(["#A", "#Bee"], [[1, "x"], [22, "yy"]]) == "#A  #Bee\n1   x\n22  yy"


def test_batch_columns_encode_like_messages():
    from rocketmq_emulator.client.message import encode_batch_columns
    from rocketmq_emulator.protocol.message import decode_batch
    body, ids, size = encode_batch_columns(["a", b"bb", "ccc"], tags=["T1", None, "T3"], keys=[None, "k2", "k3"],
                                           properties=[{"color": "red"}, None, {}])
    items = decode_batch(body)
    assert [i.body for i in items] == [b"a", b"bb", b"ccc"] and size == 6 and len(set(ids)) == 3
    expected = [Message("T", "a", tags="T1", properties={"color": "red"}), Message("T", "bb", keys="k2"),
                Message("T", "ccc", tags="T3", keys="k3")]
    for item, msg, uniq in zip(items, expected, ids):
        assert item.properties == {**msg.properties, "UNIQ_KEY": uniq}
    with pytest.raises(InvalidArgumentError, match="reserved"):
        encode_batch_columns(["x"], properties=[{"TAGS": "no"}])
    with pytest.raises(InvalidArgumentError, match="empty"):
        encode_batch_columns([""])


def test_an_empty_sql92_expression_is_refused_by_the_client():
    """As Java's FilterAPI.build: an empty SQL92 expression is the caller's mistake; it is not sent as '*' (which
    the broker would then refuse naming a '*' the user never wrote)."""
    from rocketmq_emulator.client.subscription import build_subscription
    for empty in ("", "  ", None):
        with pytest.raises(InvalidArgumentError, match="a SQL92 expression cannot be empty"):
            build_subscription("T", empty, "SQL92")
    assert build_subscription("T", "", "TAG").sub_string == "*"
