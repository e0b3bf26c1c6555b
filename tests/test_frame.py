"""Frame codec: decoding whole / byte by byte / followed by the next frame, limits, fuzz, round trips."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_emulator.protocol import (MAX_FRAME_LENGTH, FrameDecoder, LanguageCode, ProtocolError, RemotingCommand,
                                        SerializeType, encode_command, encode_command_bytes)
from rocketmq_emulator.protocol.frame import decode_frames

# A real SEND_MESSAGE frame of the C++ client (rocketmq==0.4.4): numbers inside extFields and a trailing newline
# in the JSON header (tests/test_headers.py decodes its header too)
CPP_SEND_FRAME = (Path(__file__).resolve().parent / "golden" / "cpp_send_message.frame").read_bytes()
CPP_SEND_BODY = b"conformance cpp produce 9180ba3dee6f #0"


def raw_frame(header: bytes, body: bytes = b"", stype: int = 0) -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), (stype << 24) | len(header)) + header + body


def decode_three_ways(frame: bytes, follower: bytes) -> RemotingCommand:
    """Decode `frame` whole, byte by byte, and followed by `follower` (another complete frame)."""
    d = FrameDecoder()
    d.feed(frame)
    whole = list(d)
    assert len(whole) == 1 and d.buffered == 0

    d = FrameDecoder()
    got = []
    for i in range(len(frame)):
        d.feed(frame[i:i + 1])
        got.extend(d)
        if i < len(frame) - 1:
            assert not got and d.buffered == i + 1
    assert got == whole

    d = FrameDecoder()
    d.feed(frame + follower)
    both = list(d)
    assert both[0] == whole[0] and len(both) == 2 and d.buffered == 0
    return whole[0]


def test_cpp_send_request_three_ways():
    follower = encode_command_bytes(RemotingCommand(34, opaque=9))
    cmd = decode_three_ways(CPP_SEND_FRAME, follower)
    assert cmd.code == 10 and cmd.opaque == 1 and cmd.language == "CPP" and cmd.version == 63
    assert not cmd.is_response and not cmd.is_oneway
    assert cmd.body == CPP_SEND_BODY
    # numbers normalised to their text, as fastjson does for Map<String,String>
    assert cmd.ext_fields["queueId"] == "0" and cmd.ext_fields["defaultTopicQueueNums"] == "4"
    assert all(type(v) is str for v in cmd.ext_fields.values())
    assert cmd.ext_fields["properties"].startswith("KEYS\x01k1\x02TAGS\x01TagA\x02")


@pytest.mark.parametrize("stype", [SerializeType.JSON, SerializeType.ROCKETMQ])
@pytest.mark.parametrize("body", [b"", b"x" * 300])
def test_encoded_command_three_ways(stype, body):
    cmd = RemotingCommand(11, opaque=77, flag=0, remark="r", ext_fields={"topic": "T", "queueId": "3"},
                          body=body, serialize_type=stype)
    frame = encode_command_bytes(cmd)
    got = decode_three_ways(frame, frame)
    assert got == cmd


def test_java_pull_response_header_exactly():
    resp = RemotingCommand(19, opaque=4711, flag=1, remark="OFFSET_OVERFLOW_ONE", ext_fields={
        "suggestWhichBrokerId": "0", "nextBeginOffset": "120", "minOffset": "0", "maxOffset": "120"})
    header = encode_command(resp)[0][8:]
    assert header == (b'{"code":19,"extFields":{"suggestWhichBrokerId":"0","nextBeginOffset":"120","minOffset":"0",'
                      b'"maxOffset":"120"},"flag":1,"language":"JAVA","opaque":4711,"remark":"OFFSET_OVERFLOW_ONE",'
                      b'"serializeTypeCurrentRPC":"JSON","version":409}')


def test_binary_header_worked_example():
    """Reference §2.4: QUERY_CONSUMER_OFFSET, JAVA, version 409, opaque 7, extFields {topic: T}."""
    header = bytes.fromhex("000e0001990000000700000000000000000000000c0005746f7069630000000154")
    cmd = RemotingCommand(14, version=409, opaque=7, ext_fields={"topic": "T"}, serialize_type=SerializeType.ROCKETMQ)
    frame = encode_command_bytes(cmd)
    assert frame == bytes.fromhex("0000002501000021") + header
    got = decode_three_ways(frame, frame)
    assert got.code == 14 and got.ext_fields == {"topic": "T"} and got.serialize_type == SerializeType.ROCKETMQ


def test_response_to_copies_opaque_and_serialization():
    req = RemotingCommand.request(14, {"topic": "T"}, serialize_type=SerializeType.ROCKETMQ)
    resp = RemotingCommand.response_to(req, 22, "not found")
    assert resp.opaque == req.opaque and resp.is_response and not resp.is_oneway
    assert resp.serialize_type == SerializeType.ROCKETMQ and resp.code == 22 and resp.remark == "not found"
    assert RemotingCommand.request(15, oneway=True).is_oneway


def test_encoder_segments_for_writelines():
    cmd = RemotingCommand(0, flag=1, body=b"abc")
    segs = encode_command(cmd)
    assert len(segs) == 2 and segs[1] == b"abc"
    assert len(encode_command(RemotingCommand(0, flag=1))) == 1


def test_encoder_always_writes_string_ext_values():
    cmd = RemotingCommand(0, ext_fields={"offset": 5, "ok": True})  # type: ignore[dict-item]
    header = encode_command(cmd)[0][8:]
    assert b'"extFields":{"offset":"5","ok":"true"}' in header


# -- limits ---------------------------------------------------------------------------------------
def test_oversized_frame_rejected_from_the_length_word_alone():
    d = FrameDecoder()
    d.feed(struct.pack(">i", MAX_FRAME_LENGTH + 1))
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        d.next_command()
    with pytest.raises(ProtocolError):  # sticky: the stream is unusable
        d.next_command()


@pytest.mark.parametrize("prefix, message", [
    (struct.pack(">iI", 3, 0), "smaller than"),
    (struct.pack(">iI", 10, 7), "header length 7 exceeds"),
    (struct.pack(">iI", 10, (2 << 24) | 1), "serialization type 2"),
    (struct.pack(">iI", -5, 0), "smaller than"),
])
def test_bad_prefixes(prefix, message):
    d = FrameDecoder()
    d.feed(prefix)
    with pytest.raises(ProtocolError, match=message):
        list(d)


@pytest.mark.parametrize("header", [b"not json", b"[1,2]", b'{"code":"x"}', b'{"opaque":1}', b"\xff\xfe{}"])
def test_bad_json_headers(header):
    with pytest.raises(ProtocolError):
        decode_frames(raw_frame(header))


@pytest.mark.parametrize("header", [
    b"\x00" * 10,  # too short
    bytes.fromhex("000e000199000000070000000000007fffff"),  # remark length beyond the header
    bytes.fromhex("000e0001990000000700000000000000000000007f"),  # ext length beyond the header
    bytes.fromhex("000e000199000000070000000000000000000000060005746f70"),  # truncated key
])
def test_bad_binary_headers(header):
    with pytest.raises(ProtocolError):
        decode_frames(raw_frame(header, stype=1))


def test_partial_frame_leaves_buffer_untouched():
    frame = encode_command_bytes(RemotingCommand(34, body=b"z" * 100))
    d = FrameDecoder()
    d.feed(frame[:50])
    assert d.next_command() is None and d.buffered == 50
    assert d.next_command() is None and d.buffered == 50
    d.feed(frame[50:])
    assert d.next_command().body == b"z" * 100


def test_header_too_long_to_encode():
    with pytest.raises(ProtocolError, match="24-bit"):
        encode_command(RemotingCommand(0, remark="x" * (1 << 24)))


def test_frame_too_long_to_encode():
    with pytest.raises(ProtocolError, match="frame limit"):
        encode_command(RemotingCommand(0, body=b"x" * MAX_FRAME_LENGTH))


# -- property tests -------------------------------------------------------------------------------
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
nonempty = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
int32 = st.integers(-(2 ** 31), 2 ** 31 - 1)


@st.composite
def commands(draw, stype):
    binary = stype == SerializeType.ROCKETMQ
    values = nonempty if binary else text  # binary reads empty strings as null (absent)
    return RemotingCommand(
        draw(st.integers(-(2 ** 15), 2 ** 15 - 1) if binary else int32),
        language=draw(st.sampled_from([m.name for m in LanguageCode])),
        version=draw(st.integers(-(2 ** 15), 2 ** 15 - 1) if binary else int32),
        opaque=draw(int32), flag=draw(st.integers(0, 3)),
        remark=draw(st.one_of(st.none(), nonempty if binary else text)),
        ext_fields=draw(st.one_of(st.none(), st.dictionaries(nonempty, values, min_size=1 if binary else 0,
                                                             max_size=6))),
        body=draw(st.binary(max_size=64)), serialize_type=stype)


@given(st.sampled_from(list(SerializeType)).flatmap(commands))
def test_command_round_trip(cmd):
    frame = encode_command_bytes(cmd)
    got = decode_three_ways(frame, encode_command_bytes(RemotingCommand(1)))
    assert got == cmd


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048), st.lists(st.integers(1, 64), max_size=50))
def test_fuzz_arbitrary_bytes(data, chunks):
    """Arbitrary bytes either yield commands or raise ProtocolError; nothing else; memory stays bounded."""
    d = FrameDecoder(max_frame_length=4096)
    pos = 0
    sizes = chunks or [len(data) or 1]
    try:
        while pos < len(data):
            n = sizes[pos % len(sizes)]
            d.feed(data[pos:pos + n])
            pos += n
            for cmd in d:
                assert isinstance(cmd, RemotingCommand)
            assert d.buffered <= 4096 + 8
    except ProtocolError:
        pass


@settings(max_examples=300)
@given(st.integers(4, 200), st.integers(0, 1), st.binary(max_size=200))
def test_fuzz_valid_prefix_random_header(total, stype, rest):
    """A well-formed prefix followed by garbage: a command or ProtocolError, never another exception."""
    hlen = min(len(rest), total - 4)
    frame = struct.pack(">iI", total, (stype << 24) | hlen) + rest
    d = FrameDecoder()
    d.feed(frame)
    try:
        list(d)
    except ProtocolError:
        pass
