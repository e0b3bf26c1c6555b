"""`--compat 4.9` answers the remark 4.9.8 answers when a request fails inside the JVM (protocol/java_texts.py).

The expected texts were recorded from the real classes on this JDK (OpenJDK 17): fastjson's via
`RemotingSerializable.decode(body, HeartbeatData.class)` of 4.9.8's jars, the others by the parity corpus from a
real broker (tests/parity/snapshots). The broker-level cases run end to end in the parity replay."""

from __future__ import annotations

import pytest

from rocketmq_emulator.protocol import java_texts
from rocketmq_emulator.protocol.bodies import HeartbeatData
from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.headers import SendMessageRequestHeaderV2
from rocketmq_emulator.protocol.message import iter_batch

_FRAME = "com.alibaba.fastjson.parser.JSONLexerBase.nextTokenWithChar(JSONLexerBase.java:395)"


@pytest.mark.parametrize("body, text", [
    ("{not json", "not match : - j, info : pos 5, line 1, column 6{not json"),
    ('{"not" json}', 'not match : - j, info : pos 7, line 1, column 8{"not" json}'),
    ('{"clientID" 1}', 'not match : - 1, info : pos 12, line 1, column 13{"clientID" 1}'),
    ('{"a":1,\n b 2}', 'not match : - 2, info : pos 11, line 2, column 5{"a":1,\n b 2}'),
    ("{clientID x}", "not match : - x, info : pos 10, line 1, column 11{clientID x}"),
])
def test_a_field_name_without_a_colon_gets_fastjsons_text(body, text):
    with pytest.raises(ProtocolError) as info:
        HeartbeatData.decode(body.encode())
    assert info.value.java == f"com.alibaba.fastjson.JSONException: {text}, {_FRAME}"
    assert "expected ':'" in str(info.value)  # the emulator's own words stay the message


def test_no_body_gets_the_null_pointer_text_and_the_emulator_says_a_body_is_needed():
    for body in (None, b""):
        with pytest.raises(ProtocolError) as info:
            HeartbeatData.decode(body)  # type: ignore[arg-type]
        assert info.value.java == java_texts.NULL_BODY
        assert "no body" in str(info.value)


def test_a_non_numeric_header_value_gets_javas_number_format_text():
    with pytest.raises(ProtocolError) as info:
        SendMessageRequestHeaderV2.from_ext({"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "abc", "f": "0",
                                              "g": "1", "h": "0", "j": "0"})
    assert info.value.java == ('java.lang.NumberFormatException: For input string: "abc", java.base/java.lang.'
                               'NumberFormatException.forInputString(NumberFormatException.java:67)')
    assert "`e` (queueId)" in str(info.value)


@pytest.mark.parametrize("body, java", [
    (b"", java_texts.NULL_BATCH_BODY),
    (b"\x00\x00\x00\x40\x00\x00", java_texts.BUFFER_UNDERFLOW),  # ends inside the second int
    (b"\x00" * 21, None),  # ends after the five ints: 4.9.8's text is not known here, the emulator's words stay
])
def test_malformed_batch_bodies(body, java):
    with pytest.raises(ProtocolError) as info:
        list(iter_batch(body))
    assert info.value.java == java
