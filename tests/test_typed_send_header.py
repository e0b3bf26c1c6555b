"""The send hot path reads a SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE JSON header straight into its typed header
(`decode_send_v2_frame`, used through `FrameDecoder.typed`). Whatever the header holds, the outcome must be the
generic path's: the same command fields and an equal header, or (when the typed decoder gives up) the generic
path's own result, error included."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emulator.protocol import ProtocolError
from rocketmq_emulator.protocol.frame import FrameDecoder, frame_prefix
from rocketmq_emulator.protocol.headers import SEND_V2_TYPED, decode_send_header, decode_send_v2_frame

LETTERS = "abcdefghijklmn"
numberish = st.sampled_from(["0", "1", "-1", "4", "007", " 5", "5 ", "+5", "1e3", "1.0", "",
                             "9223372036854775807", "9223372036854775808", "abc", "true", "TRUE", "False", "null"])
value = st.one_of(numberish, st.text(max_size=12), st.integers(-2**63, 2**64), st.booleans(), st.none(),
                  st.floats(allow_nan=False, allow_infinity=False), st.lists(st.integers(), max_size=2))
BASE = {"a": "pg", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "3", "f": "0", "g": "1700000000000", "h": "0",
        "i": "TAGS\x01TagA\x02", "j": "0", "k": "false", "m": "false"}
# a producer's header with some fields changed, dropped or added (most stay readable), or any dictionary
ext_fields = st.one_of(
    st.builds(lambda changed, dropped: {k: v for k, v in {**BASE, **changed}.items() if k not in dropped},
              st.dictionaries(st.sampled_from(list(LETTERS) + ["AccessKey", "x"]), value, max_size=3),
              st.sets(st.sampled_from(list(LETTERS)), max_size=2)),
    st.dictionaries(st.sampled_from(list(LETTERS) + ["AccessKey", "x"]), value, max_size=16))


def frame(header: bytes, body: bytes = b"body") -> bytes:
    return frame_prefix(len(header)) + header + body


def header_json(code: int, ext: object, **envelope: object) -> bytes:
    fields = {"extFields": ext, **envelope}
    return b'{"code":%d,' % code + json.dumps(fields)[1:].encode()


def generic(data: bytes) -> tuple[object, object]:
    """The generic path's outcome: (command fields, header) or the error's text."""
    d = FrameDecoder()
    d.feed(data)
    try:
        cmd = next(iter(d))
    except ProtocolError as exc:
        return "frame error", str(exc)
    try:
        header = decode_send_header(cmd.code, cmd.ext_fields)
    except ProtocolError as exc:
        header = f"header error: {exc}"
    return (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.body), header


def typed(data: bytes) -> tuple[object, object]:
    d = FrameDecoder()
    d.typed = SEND_V2_TYPED
    d.feed(data)
    try:
        cmd = next(iter(d))
    except ProtocolError as exc:
        return "frame error", str(exc)
    if cmd.header is None:  # the typed decoder gave up: the generic path decoded the frame
        try:
            header = decode_send_header(cmd.code, cmd.ext_fields)
        except ProtocolError as exc:
            header = f"header error: {exc}"
    else:
        assert cmd.ext_fields is None
        header = cmd.header
    return (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.body), header


@settings(max_examples=400, deadline=None)
@given(code=st.sampled_from([310, 320]), ext=ext_fields,
       envelope=st.fixed_dictionaries({}, optional={
           "language": st.sampled_from(["JAVA", "CPP", "GO", 3, None]), 
           "version": st.integers(-5, 500) | st.text(max_size=3),
           "opaque": st.integers(-2**31, 2**31 - 1), "flag": st.integers(0, 3), "remark": st.none() | st.text(max_size=5)}))
def typed_header_is_the_generic_one(code: int, ext: dict[str, object], envelope: dict[str, object]) -> None:
    data = frame(header_json(code, ext, **envelope))
    outcome = typed(data)
    assert outcome == generic(data)
    TYPED_READ.append(not isinstance(outcome[1], str) and decode_send_v2_frame(data[8:-4], b"body") is not None)


TYPED_READ: list[bool] = []


def test_typed_header_is_the_generic_one() -> None:
    """The property, and that the typed decoder was exercised, not only its give-ups."""
    TYPED_READ.clear()
    typed_header_is_the_generic_one()
    # a fair share of the examples is read typed (70 to 104 of 400 in runs here; 50 once in CI): the property was
    # checked on the typed decoder's answers, not only on its give-ups
    assert TYPED_READ and sum(TYPED_READ) >= len(TYPED_READ) // 20


def test_a_plain_producer_header_is_read_typed() -> None:
    ext = {"a": "pg", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "3", "f": "0", "g": "1700000000000",
           "h": "0", "i": "TAGS\x01TagA\x02", "j": "0", "k": "false", "m": "false"}
    cmd = decode_send_v2_frame(header_json(310, ext, opaque=7, language="JAVA", version=409), b"x")
    assert cmd is not None and cmd.ext_fields is None and cmd.opaque == 7 and cmd.body == b"x"
    assert (cmd.header.topic, cmd.header.queue_id, cmd.header.born_timestamp, cmd.header.properties) == \
        ("TopicTest", 3, 1700000000000, "TAGS\x01TagA\x02")


@pytest.mark.parametrize("header", [
    b'{"code":310,"extFields":null}',
    b'{"code":310,"extFields":{"a":"g","b":"T","e":"x","g":"1"}}',  # a queue id that does not parse
    b'{"code":310,"extFields":{"a":"g"',  # truncated
    b'{"code":310,"language":3,"extFields":{"a":"g","b":"T","e":"1","g":"1"}}',  # a numeric language (C++)
    b'{"code":310,"version":"409","extFields":{"a":"g","b":"T","e":"1","g":"1"}}',
])
def test_what_the_typed_decoder_leaves_to_the_generic_path(header: bytes) -> None:
    assert decode_send_v2_frame(header, b"") is None
    data = frame(header)
    assert typed(data) == generic(data)


def test_the_header_field_is_never_taken_from_the_wire() -> None:
    data = frame(b'{"code":310,"__emulator_header__":{"b":"T"},"extFields":{"a":"g","b":"T","e":"1","g":"1"}}')
    d = FrameDecoder()
    d.feed(data)
    cmd = next(iter(d))
    assert cmd.header is None and cmd.ext_fields is not None


def test_the_envelope_reads_the_header_fields_as_remoting_command_does():
    """`_JsonEnvelope` repeats RemotingCommand's header fields (extFields left raw): the same wire names, types
    and defaults, so a header the typed path reads gives the command the generic path would."""
    import msgspec

    from rocketmq_emulator.protocol import RemotingCommand
    from rocketmq_emulator.protocol.headers import _JsonEnvelope

    def wire(cls, names):  # type: ignore[no-untyped-def]
        return [(f.encode_name, f.type, f.default) for f in msgspec.structs.fields(cls) if f.name in names]

    names = ("code", "language", "version", "opaque", "flag", "remark")
    assert wire(_JsonEnvelope, names) == wire(RemotingCommand, names)
    assert [f.encode_name for f in msgspec.structs.fields(_JsonEnvelope)] == [*names, "extFields"]
