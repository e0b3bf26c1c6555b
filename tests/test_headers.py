"""Typed headers: extFields conversion, the V2 one-letter mapping, missing and invalid fields."""

from __future__ import annotations

import inspect
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emulator.protocol import ProtocolError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol import headers as H
from rocketmq_emulator.protocol.headers import (PullMessageResponseHeader, SendMessageRequestHeaderV2,
                                                SendMessageResponseHeader)
from rocketmq_emulator.protocol.frame import decode_frames, encode_command_bytes

#: a real SEND_MESSAGE frame of the C++ client (rocketmq==0.4.4)
CPP_SEND_FRAME = (Path(__file__).resolve().parent / "golden" / "cpp_send_message.frame").read_bytes()

ALL_HEADERS = sorted({obj for _, obj in inspect.getmembers(H, inspect.isclass)
                      if issubclass(obj, H.CommandHeader) and obj is not H.CommandHeader}, key=lambda c: c.__name__)


def test_cpp_send_request_decodes_to_typed_header():
    cmd = decode_frames(CPP_SEND_FRAME)[0]
    h = H.decode_send_header(cmd.code, cmd.ext_fields)
    assert (h.producer_group, h.topic, h.default_topic, h.default_topic_queue_nums) == \
        ("PID_conformance_cpp", "TopicTest", "TBW102", 4)
    assert (h.queue_id, h.sys_flag, h.born_timestamp, h.flag, h.reconsume_times) == (0, 0, 1795319231460, 0, 0)
    assert h.batch is False and h.unit_mode is False  # C++ sends "0"
    assert h.properties.startswith("KEYS\x01k1\x02")


def test_v2_single_letter_mapping():
    h = H.SendMessageRequestHeader(producer_group="g", topic="T", queue_id=3, born_timestamp=5, properties="p",
                                   reconsume_times=1, max_reconsume_times=16, batch=True, bname="broker-a")
    ext = h.to_v2().to_ext()
    assert ext == {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0", "g": "5", "h": "0", "i": "p",
                   "j": "1", "k": "false", "l": "16", "m": "true", "n": "broker-a"}
    back = H.decode_send_header(310, ext)
    assert msgspec.structs.asdict(back) == msgspec.structs.asdict(h)
    assert H.decode_send_header(10, h.to_ext()) == h


def test_missing_required_field_is_named():
    with pytest.raises(ProtocolError, match=r"missing required header field `e` \(queueId\)"):
        H.decode_send_header(310, {"a": "g", "b": "T", "g": "1"})
    with pytest.raises(ProtocolError, match="missing required header field `topic`"):
        H.decode_send_header(10, {"producerGroup": "g", "queueId": "0", "bornTimestamp": "1"})
    # a V2 send without its topic is a blank topic, refused by the broker as 4.9.8 refuses it (parity corpus)
    assert H.decode_send_header(310, {"a": "g", "e": "0", "g": "1"}).topic == ""
    with pytest.raises(ProtocolError, match="missing required header field `consumerGroup`"):
        H.PullMessageRequestHeader.from_ext({"topic": "T"})
    with pytest.raises(ProtocolError, match="missing required header field `consumerGroup`"):
        H.QueryConsumerOffsetRequestHeader.from_ext(None)


def test_invalid_value_is_named():
    with pytest.raises(ProtocolError, match="invalid value 'abc' for header field `queueId`"):
        H.QueueRequestHeader.from_ext({"topic": "T", "queueId": "abc"})


def test_java_boolean_and_empty_value_rules():
    base = {"topic": "T", "group": "g", "timestamp": "-1"}
    assert H.ResetOffsetRequestHeader.from_ext({**base, "isForce": "TRUE"}).is_force is True
    assert H.ResetOffsetRequestHeader.from_ext({**base, "isForce": "yes"}).is_force is False
    assert H.ResetOffsetRequestHeader.from_ext({**base, "isForce": ""}).is_force is False
    # an empty optional number is absent; an empty required number is missing
    assert H.SendMessageRequestHeader.from_ext({"producerGroup": "g", "topic": "T", "queueId": "1",
                                               "bornTimestamp": "1", "reconsumeTimes": ""}).reconsume_times is None
    with pytest.raises(ProtocolError, match="`queueId`"):
        H.QueueRequestHeader.from_ext({"topic": "T", "queueId": ""})


def test_special_wire_names():
    assert H.UnregisterClientRequestHeader(client_id="c", consumer_group="g").to_ext() == \
        {"clientID": "c", "consumerGroup": "g"}
    assert H.ResetOffsetRequestHeader(topic="T", group="g", timestamp=1, is_force=True).to_ext() == \
        {"topic": "T", "group": "g", "timestamp": "1", "isForce": "true"}
    assert "suspendTimeoutMillis" in H.PullMessageRequestHeader(
        consumer_group="g", topic="T", queue_id=0, queue_offset=0, max_msg_nums=32, sys_flag=2).to_ext()


def _strategy_for(annotation):
    if annotation in (str, str | None):
        base = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
    elif annotation in (int, int | None):
        base = st.integers(-(2 ** 63), 2 ** 63 - 1)
    elif annotation in (bool, bool | None):
        base = st.booleans()
    else:  # pragma: no cover - a new field type needs a strategy here
        raise AssertionError(annotation)
    return st.one_of(st.none(), base) if type(None) in getattr(annotation, "__args__", ()) else base


@pytest.mark.parametrize("cls", ALL_HEADERS, ids=lambda c: c.__name__)
def test_every_header_round_trips(cls):
    fields = msgspec.structs.fields(cls)
    strategy = st.fixed_dictionaries({f.name: _strategy_for(f.type) for f in fields})

    @given(strategy)
    def check(values):
        h = cls(**values)
        ext = h.to_ext()
        assert all(type(v) is str for v in ext.values())
        assert cls.from_ext(ext) == h

    check()


# -- fast encodings live on the header classes (Java's FastCodesHeader) and agree with the generic ones --------
def test_fast_encodings_equal_the_generic_ones():
    v2 = SendMessageRequestHeaderV2(producer_group="g", topic="t", queue_id=3, born_timestamp=123, properties="p",
                                    sys_flag=4, flag=1, reconsume_times=2, batch=True, bname="broker-a",
                                    max_reconsume_times=16)
    fast = SendMessageRequestHeaderV2.fast_ext("g", "t", 3, "p", sys_flag=4, flag=1, born_timestamp=123,
                                               reconsume_times=2, batch=True, bname="broker-a",
                                               max_reconsume_times=16)
    assert fast == v2.to_ext() and SendMessageRequestHeaderV2.from_ext(fast) == v2
    pull = PullMessageResponseHeader(suggest_which_broker_id=0, next_begin_offset=7, min_offset=1, max_offset=9)
    assert PullMessageResponseHeader.fast_ext(7, 1, 9) == pull.to_ext()
    sent = SendMessageResponseHeader(msg_id="ABC", queue_id=2, queue_offset=5)
    assert SendMessageResponseHeader.fast_ext("ABC", 2, 5) == sent.to_ext()


def test_response_headers_round_trip():
    from rocketmq_emulator.protocol.headers import (AddWritePermOfBrokerResponseHeader, GetKVConfigResponseHeader,
                                                    QueryConsumerOffsetResponseHeader, QueryDataVersionResponseHeader,
                                                    QueryMessageResponseHeader, RegisterBrokerResponseHeader,
                                                    WipeWritePermOfBrokerResponseHeader)
    for header in (QueryConsumerOffsetResponseHeader(offset=4), QueryDataVersionResponseHeader(changed=True),
                   GetKVConfigResponseHeader(value="v"), WipeWritePermOfBrokerResponseHeader(wipe_topic_count=2),
                   AddWritePermOfBrokerResponseHeader(add_topic_count=3),
                   RegisterBrokerResponseHeader(master_addr="1.2.3.4:10911"),
                   QueryMessageResponseHeader(index_last_update_timestamp=1, index_last_update_phyoffset=2)):
        assert type(header).from_ext(header.to_ext()) == header
    assert QueryDataVersionResponseHeader(changed=False).to_ext() == {"changed": "false"}
    assert WipeWritePermOfBrokerResponseHeader(wipe_topic_count=2).to_ext() == {"wipeTopicCount": "2"}


def test_send_success_frame_encoder_is_byte_identical_to_the_general_encoding():
    from rocketmq_emulator.protocol import RemotingCommand, RequestCode
    from rocketmq_emulator.protocol.frame import encode_command_bytes, json_frame_template
    from rocketmq_emulator.protocol.headers import SendMessageResponseHeader

    extra = {"MSG_REGION": "Region 100%", "TRACE_ON": "true"}  # a `%` must not break the template
    encode = SendMessageResponseHeader.success_frame_encoder(extra)
    for opaque, queue_id, offset in ((0, 0, 0), (7, 3, 123456789), (-5, 15, 2**62)):
        req = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {}, opaque=opaque)
        msg_id = "7F00000100002A9F" + f"{offset:016X}"
        general = RemotingCommand.response_to(req, 0, None, {**SendMessageResponseHeader.fast_ext(
            msg_id, queue_id, offset), **extra})
        assert encode(msg_id, queue_id, offset, opaque) == encode_command_bytes(general)
    with pytest.raises(ValueError):  # a placeholder that is not an extFields value of the prototype
        json_frame_template(RemotingCommand(0, ext_fields={"a": "@0@"}), {"b": "%d"})


@given(opaque=st.integers(-2**31, 2**31 - 1), next_offset=st.integers(0, 2**63 - 1), min_offset=st.integers(0, 2**40),
       max_offset=st.integers(0, 2**63 - 1), body=st.binary(max_size=300))
def test_a_found_pulls_frame_is_the_encoded_response(opaque: int, next_offset: int, min_offset: int, max_offset: int,
                                                     body: bytes) -> None:
    """The pull hot path's pre-encoded answer is byte for byte the response the generic encoder writes."""
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE, {}, opaque=opaque)
    response = RemotingCommand.response_to(request, ResponseCode.SUCCESS, "FOUND", PullMessageResponseHeader.fast_ext(
        next_offset, min_offset, max_offset), body)
    assert PullMessageResponseHeader.found_frame(opaque, next_offset, min_offset, max_offset, body) == \
        encode_command_bytes(response)
