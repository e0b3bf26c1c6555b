"""fastjson writer and tolerant reader (reference §6.1, §6.2, §6.4)."""

from __future__ import annotations

import json
import math
from enum import IntEnum

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rocketmq_emulator.protocol import fastjson
from rocketmq_emulator.protocol import bodies
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.errors import ProtocolError


class Color(IntEnum):
    RED = 0
    GREEN = 1


class Pojo:
    """A bean through the `to_fastjson()` protocol."""

    def __init__(self, b: int, a: str | None) -> None:
        self.b, self.a = b, a

    def to_fastjson(self) -> dict[str, object]:
        return {"zeta": self.b, "alpha": self.a, "mid": [self.b]}


class Point(msgspec.Struct, rename="camel"):
    y_pos: int
    x_pos: int
    label: str | None = None


# --------------------------------------------------------------------------------------------------
# dumps
# --------------------------------------------------------------------------------------------------
def test_int_keys_are_bare_numbers() -> None:
    assert fastjson.dumps({0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}) == '{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}'
    assert fastjson.dumps({-5: 1}) == "{-5:1}"


def test_bean_keys_are_objects_in_key_position() -> None:
    mq = MessageQueue("T", "b", 0)
    assert fastjson.dumps({mq: 42}) == '{{"brokerName":"b","queueId":0,"topic":"T"}:42}'


def test_beans_alphabetical_and_none_omitted() -> None:
    assert fastjson.dumps(Point(y_pos=2, x_pos=1)) == '{"xPos":1,"yPos":2}'
    assert fastjson.dumps(Point(y_pos=2, x_pos=1, label="p")) == '{"label":"p","xPos":1,"yPos":2}'
    assert fastjson.dumps(Pojo(3, None)) == '{"mid":[3],"zeta":3}'
    assert fastjson.dumps(Pojo(3, "x")) == '{"alpha":"x","mid":[3],"zeta":3}'


def test_scalars() -> None:
    assert fastjson.dumps(0.0) == "0.0"
    assert fastjson.dumps(12.5) == "12.5"
    assert fastjson.dumps(3.0) == "3.0"
    assert fastjson.dumps(1e7) == "1.0E7"
    assert fastjson.dumps(float("nan")) == "null"
    assert fastjson.dumps(True) == "true"
    assert fastjson.dumps(None) == "null"
    assert fastjson.dumps(Color.GREEN) == '"GREEN"'
    assert fastjson.dumps({"c": Color.RED}) == '{"c":"RED"}'
    assert fastjson.dumps('a"b\\c\n\u00e9') == '"a\\"b\\\\c\\n\u00e9"'


def test_collections() -> None:
    assert fastjson.dumps({3, 1, 2}) == "[1,2,3]"
    assert fastjson.dumps((1, "a")) == '[1,"a"]'
    assert fastjson.dumps([]) == "[]"
    assert fastjson.dumps({}) == "{}"
    assert fastjson.dumps({"a": None, "b": 1}) == '{"b":1}'  # null map values are dropped
    assert fastjson.dumps([None]) == "[null]"
    mqs = {MessageQueue("T", "b", 1), MessageQueue("T", "b", 0)}
    assert fastjson.dumps(mqs) == ('[{"brokerName":"b","queueId":0,"topic":"T"},'
                                   '{"brokerName":"b","queueId":1,"topic":"T"}]')


@pytest.mark.parametrize("value, text", [
    (0.0, "0.0"), (-0.0, "-0.0"), (1.0, "1.0"), (12.5, "12.5"), (0.001, "0.001"), (9999999.5, "9999999.5"),
    (1e7, "1.0E7"), (123456789.0, "1.23456789E8"), (1e16, "1.0E16"), (1.5e-5, "1.5E-5"), (0.00012, "1.2E-4"),
    (-2.5e20, "-2.5E20"),
])
def test_java_double(value: float, text: str) -> None:
    assert fastjson.java_double(value) == text
    assert float(text) == value


def test_standard_json_mode() -> None:
    data = {"m": {2: "b", 0: "a"}, "s": "\u00e9", "z": {"y": 1, "x": 2}}
    assert fastjson.dumps(data, standard_json=True) == '{"m":{"0":"a","2":"b"},"s":"\\u00e9","z":{"x":2,"y":1}}'
    # a bean key becomes a string holding its JSON, so the result stays valid JSON
    text = fastjson.dumps({MessageQueue("T", "b", 0): 1}, standard_json=True)
    assert msgspec.json.decode(text) == {'{"brokerName":"b","queueId":0,"topic":"T"}': 1}


PRETTY_OFFSETS = (
    '{\n'
    '\t"offsetTable":{\n'
    '\t\t"TopicTest@cg1":{0:250,1:250,2:249,3:251\n'
    '\t\t},\n'
    '\t\t"%RETRY%cg1@cg1":{0:0\n'
    '\t\t}\n'
    '\t}\n'
    '}'
)


def test_pretty_layout_of_int_key_maps() -> None:
    data = {"offsetTable": {"TopicTest@cg1": {0: 250, 1: 250, 2: 249, 3: 251}, "%RETRY%cg1@cg1": {0: 0}}}
    assert fastjson.dumps(data, pretty=True) == PRETTY_OFFSETS
    assert fastjson.loads(PRETTY_OFFSETS) == data


def test_pretty_layout_of_bean_keys_and_beans() -> None:
    data = {"offsetTable": {MessageQueue("T", "b", 0): 3}, "p": Point(y_pos=1, x_pos=0), "l": [1, 2], "e": []}
    assert fastjson.dumps(data, pretty=True) == (
        '{\n'
        '\t"offsetTable":{{\n'
        '\t\t\t"brokerName":"b",\n'
        '\t\t\t"queueId":0,\n'
        '\t\t\t"topic":"T"\n'
        '\t\t}:3\n'
        '\t},\n'
        '\t"p":{\n'
        '\t\t"xPos":0,\n'
        '\t\t"yPos":1\n'
        '\t},\n'
        '\t"l":[\n'
        '\t\t1,\n'
        '\t\t2\n'
        '\t],\n'
        '\t"e":[]\n'
        '}'
    )
    assert bodies.loads(fastjson.dumps(data, pretty=True))["offsetTable"] == {MessageQueue("T", "b", 0): 3}


def test_dumps_rejects_unknown_types() -> None:
    with pytest.raises(TypeError):
        fastjson.dumps(object())


# --------------------------------------------------------------------------------------------------
# loads
# --------------------------------------------------------------------------------------------------
def test_loads_standard_json() -> None:
    assert fastjson.loads(b'{"a":[1,2.5,"x",true,false,null]}') == {"a": [1, 2.5, "x", True, False, None]}
    assert fastjson.loads(' {"a":1} \n') == {"a": 1}
    assert fastjson.loads(bytearray(b"[1]")) == [1]
    assert fastjson.loads(memoryview(b"[1]")) == [1]


def test_loads_non_standard() -> None:
    assert fastjson.loads('{0:"a",1:"b"}') == {0: "a", 1: "b"}
    assert fastjson.loads(b'{-1:2, 1.5:3}') == {-1: 2, 1.5: 3}
    assert fastjson.loads("{'k':'v\\'s', \"q\":'\"'}") == {"k": "v's", "q": '"'}
    assert fastjson.loads("{name:1,$x_2:2}") == {"name": 1, "$x_2": 2}
    assert fastjson.loads("\ufeff{0:1}") == {0: 1}
    assert fastjson.loads(b"{0:\"\\u00e9\\ud83d\\ude00\"}") == {0: "\u00e9\U0001F600"}
    assert fastjson.loads("{0:'\u00e9'}\r\n\t ") == {0: "\u00e9"}


def test_loads_whitespace_and_escapes_everywhere() -> None:
    text = ' { 0 : "a" , -7:\t1 ,"k\\"q" : "v\\n" , \'s\' : [ 1 , -0 , 2.5e-3 , "x" , { } , [ ] ] , "t":true } '
    assert fastjson.loads(text) == {0: "a", -7: 1, 'k"q': "v\n", "s": [1, 0, 0.0025, "x", {}, []], "t": True}
    assert fastjson.loads('{"a":"\\u00e9\\/"}') == {"a": "\u00e9/"}


def test_loads_object_keys() -> None:
    text = '{{"brokerName":"b","queueId":3,"topic":"T"}:42,{"topic":"T","queueId":"4","brokerName":"b"}:7}'
    assert bodies.loads(text) == {MessageQueue("T", "b", 3): 42, MessageQueue("T", "b", 4): 7}
    # the dialect alone knows no bean: an object key is a frozen tuple of its items
    assert fastjson.loads(text) == {(("brokerName", "b"), ("queueId", 3), ("topic", "T")): 42,
                                    (("brokerName", "b"), ("queueId", "4"), ("topic", "T")): 7}
    assert fastjson.loads(text, object_key=lambda obj: obj.get("queueId")) == {3: 42, "4": 7}
    for parse in (fastjson.loads, bodies.loads):
        other = parse('{{"b":[1,{"c":2}],"a":1}:1,{}:2,{"topic":"T","brokerName":"b","queueId":"x"}:3}')
        assert other == {(("a", 1), ("b", (1, (("c", 2),)))): 1, (): 2,
                         (("brokerName", "b"), ("queueId", "x"), ("topic", "T")): 3}


@pytest.mark.parametrize("text", [
    "", " ", "{", "}", "[", "]", "[1,]", "{,}", '{"a"}', '{"a":}', '{"a" 1}', '{"a":1,}', "{1:}", "{[1]:2}",
    '"abc', "'abc", '"\\x"', '"\\u12"', "-", "01x", "1.", ".5", "tru", "nul", "[1 2]", '{"a":1}x', "{{}:}",
    "{{:1}", "1" * 5000, "@", "{true:1}x",
])
def test_loads_malformed(text: str) -> None:
    with pytest.raises(ProtocolError):
        fastjson.loads(text)
    with pytest.raises(ProtocolError):
        fastjson.loads(text.encode())


def test_loads_invalid_utf8_and_types() -> None:
    with pytest.raises(ProtocolError):
        fastjson.loads(b'{0:"\xff"}')
    with pytest.raises(ProtocolError):
        fastjson.loads(123)  # type: ignore[arg-type]


def test_loads_depth_cap() -> None:
    deep_ok = "{0:" * 500 + "1" + "}" * 500
    assert fastjson.loads(deep_ok) is not None
    for opener, closer in (("{0:", "}"), ("[", "]"), ("{{", "}:1}")):
        with pytest.raises(ProtocolError):
            fastjson.loads(opener * 5000 + "1" + closer * 5000)
    with pytest.raises(ProtocolError):  # standard JSON deeper than msgspec allows takes the capped path too
        fastjson.loads(b"[" * 100000 + b"]" * 100000)


# --------------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------------
_text = st.text(st.characters(codec="utf-8"), max_size=12)
_keys = st.one_of(_text, st.integers(-2**63, 2**63 - 1),
                  st.builds(MessageQueue, _text, _text, st.integers(-2**31, 2**31 - 1)))
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), _text,
                     st.floats(allow_nan=False, allow_infinity=False))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_keys, inner.filter(lambda v: v is not None), max_size=4)),
    max_leaves=20)


@given(_values, st.booleans())
def test_dumps_loads_round_trip(value: object, pretty: bool) -> None:
    assert bodies.loads(fastjson.dumps(value, pretty=pretty)) == value
    assert bodies.loads(fastjson.dumps(value, pretty=pretty).encode()) == value


_json_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)), max_leaves=20)


@given(_json_values)
def test_standard_json_output_is_valid_json(value: object) -> None:
    text = fastjson.dumps(value, standard_json=True)
    assert text.isascii()
    msgspec.json.decode(text)


@given(_json_values, st.sampled_from([None, 0, 2]), st.sampled_from([(",", ":"), (", ", ": "), (" ,", " :")]))
def test_fallback_parser_agrees_with_msgspec_on_standard_json(
        value: object, indent: int | None, separators: tuple[str, str]) -> None:
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=False)
    assert fastjson._Parser(text).parse() == msgspec.json.decode(text)


def _loads_or_protocol_error(data: str | bytes) -> None:
    try:
        fastjson.loads(data)
    except ProtocolError:
        pass


@example(b'"\x80"')  # a string that is not UTF-8: msgspec raises UnicodeDecodeError, not a DecodeError
@settings(max_examples=500)
@given(st.one_of(st.text(), st.binary()))
def test_fuzz_loads_arbitrary_input(data: str | bytes) -> None:
    _loads_or_protocol_error(data)


_SEEDS = [
    '{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:120}}',
    '{"brokerAddrs":{0:"10.0.0.7:10911"},\'x\':[1,2.5e3,-0.1,true,null]}',
    PRETTY_OFFSETS,
]


@settings(max_examples=500)
@given(st.sampled_from(_SEEDS), st.data())
def test_fuzz_loads_mutated_fastjson(seed: str, data: st.DataObject) -> None:
    n = len(seed)
    start = data.draw(st.integers(0, n))
    end = data.draw(st.integers(start, n))
    insert = data.draw(st.text(alphabet='{}[]:,"\'\\0123456789.-eE tuna\u00e9', max_size=6))
    mutated = seed[:start] + insert + seed[end:]
    _loads_or_protocol_error(mutated)
    _loads_or_protocol_error(mutated.encode())


def test_floats_survive() -> None:
    for v in (0.1, 1e300, 5e-324, -1.5e-7, 2.0**53):
        assert fastjson.loads(fastjson.dumps([v])) == [v]
        assert not math.isnan(fastjson.loads(fastjson.dumps(v)))
