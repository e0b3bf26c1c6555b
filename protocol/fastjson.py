"""fastjson 1.x JSON dialect: a writer that produces what a Java RocketMQ process writes, and a tolerant
reader for what it accepts (reference §6.1, §6.2, §6.4).

Writer (`dumps`), compact by default:

* dict keys: `str` quoted; `int` written as bare numbers (`{0:"a"}`); bean keys written as a full JSON object
  in key position (`{{"brokerName":"b","queueId":0,"topic":"T"}:42}`); enum keys by quoted name.
* beans are written with their properties in alphabetical order of the wire name, `None` properties omitted.
  A bean is a `msgspec.Struct` (wire names = the fields' encode names) or any object with a
  `to_fastjson()` method returning a `dict` of wire name -> value.
* floats always carry a fraction, in Java `Double.toString` form (`0.0`, `12.5`, `1.0E7`); NaN/infinity as
  `null`. Enums by name. Lists, tuples and sets as arrays (sets sorted when their items are orderable).
* `pretty=True`: the file layout of §6.1 rule 5 (TAB indentation, one bean property or string-keyed entry per
  line; maps with non-string keys have their entries inline and the closing brace on the next line).
* `standard_json=True`: fastjson's "browser compatible" form used for route data (§6.1 rule 6): numeric keys
  quoted, map entries sorted by key, non-ASCII characters as `\\uXXXX`.

Reader (`loads`): standard JSON (through `msgspec.json` first) plus bare numeric and identifier keys, object
keys (what the caller's `object_key` makes of the object, else a tuple of sorted items; `bodies.loads` turns
the ones carrying brokerName/queueId/topic into `MessageQueue`s), single-quoted strings. Every malformed input
raises `ProtocolError`. The dialect knows no RocketMQ bean: `bodies` builds on it, never the other way round.
"""

from __future__ import annotations

import math
import re
from enum import Enum
from json.encoder import encode_basestring, encode_basestring_ascii  # C-accelerated string quoting
from typing import Any, Callable

import msgspec

from .errors import ProtocolError
from .java_texts import fastjson_not_match

__all__ = ["MAX_DEPTH", "dumps", "loads", "freeze", "java_double"]

#: Deepest nesting of arrays/objects `loads` accepts in non-standard input.
MAX_DEPTH = 512

_json_decode = msgspec.json.decode


# --------------------------------------------------------------------------------------------------
# Writer
# --------------------------------------------------------------------------------------------------
def java_double(value: float) -> str:
    """A double as Java's `Double.toString` writes it (`0.0`, `12.5`, `1.0E7`, `1.0E-5`); NaN/inf -> null."""
    if value != value or value in (math.inf, -math.inf):
        return "null"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = repr(value)
    a = abs(value)
    if 1e-3 <= a < 1e7:  # plain decimal in both languages; repr always has a '.' here
        return text
    sign = "-" if value < 0 else ""
    text = text.lstrip("-")
    if "e" in text:
        mantissa, _, exp_text = text.partition("e")
        digits, exponent = mantissa.replace(".", ""), int(exp_text)
    else:
        int_part, _, frac = text.partition(".")
        if int_part != "0":
            digits, exponent = int_part + frac, len(int_part) - 1
        else:
            stripped = frac.lstrip("0")
            digits, exponent = stripped, len(stripped) - len(frac) - 1
    digits = digits.rstrip("0") or "0"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


# Per-Struct-class cache: (wire name, quoted wire name + ':', attribute name), sorted by wire name.
_STRUCT_FIELDS: dict[type, tuple[tuple[str, str, str], ...]] = {}


def _struct_fields(cls: type) -> tuple[tuple[str, str, str], ...]:
    fields = _STRUCT_FIELDS.get(cls)
    if fields is None:
        info = msgspec.structs.fields(cls)
        fields = tuple(sorted(((f.encode_name, encode_basestring_ascii(f.encode_name) + ":", f.name) for f in info),
                              key=lambda t: t[0]))
        _STRUCT_FIELDS[cls] = fields
    return fields


def _sorted_keys(items: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    try:
        return sorted(items, key=lambda kv: kv[0])
    except TypeError:
        return sorted(items, key=lambda kv: (type(kv[0]).__name__, repr(kv[0])))


class _Writer:
    """One `dumps` call: appends text pieces to `out`."""

    __slots__ = ("out", "pretty", "standard", "quote")

    def __init__(self, pretty: bool, standard: bool) -> None:
        self.out: list[str] = []
        self.pretty = pretty
        self.standard = standard
        self.quote: Callable[[str], str] = encode_basestring_ascii if standard else encode_basestring

    def newline(self, level: int) -> None:
        self.out.append("\n" + "\t" * level)

    def value(self, v: Any, level: int) -> None:
        out = self.out
        t = type(v)
        if t is str:
            out.append(self.quote(v))
        elif t is int:
            out.append(int.__repr__(v))
        elif t is bool:
            out.append("true" if v else "false")
        elif v is None:
            out.append("null")
        elif t is float:
            out.append(java_double(v))
        elif t is dict:
            self.mapping(v, level)
        elif t is list or t is tuple:
            self.array(v, level)
        elif isinstance(v, msgspec.Struct):
            self.struct(v, level)
        elif isinstance(v, Enum):
            out.append(self.quote(v.name))
        elif isinstance(v, (set, frozenset)):
            try:
                items = sorted(v)
            except TypeError:
                items = list(v)
            self.array(items, level)
        elif hasattr(v, "to_fastjson"):
            props = v.to_fastjson()
            self.bean(sorted(((k, x) for k, x in props.items() if x is not None), key=lambda kv: kv[0]), level)
        elif isinstance(v, str):
            out.append(self.quote(str(v)))
        elif isinstance(v, int):
            out.append(int.__repr__(v))
        elif isinstance(v, float):
            out.append(java_double(float(v)))
        elif isinstance(v, dict):
            self.mapping(v, level)
        elif isinstance(v, (list, tuple)):
            self.array(v, level)
        else:
            raise TypeError(f"fastjson.dumps cannot write a {t.__name__}")

    def struct(self, obj: msgspec.Struct, level: int) -> None:
        out = self.out
        fields = _STRUCT_FIELDS.get(type(obj)) or _struct_fields(type(obj))
        pretty = self.pretty
        out.append("{")
        first = True
        for _, quoted_name, attr in fields:
            value = getattr(obj, attr)
            if value is None:
                continue
            if first:
                first = False
            else:
                out.append(",")
            if pretty:
                self.newline(level + 1)
            out.append(quoted_name)
            t = type(value)
            if t is int:
                out.append(int.__repr__(value))
            elif t is str:
                out.append(self.quote(value))
            else:
                self.value(value, level + 1)
        if pretty and not first:
            self.newline(level)
        out.append("}")

    def bean(self, items: list[tuple[str, Any]], level: int) -> None:
        """A `to_fastjson()` bean: (wire name, value) pairs, sorted, None values removed."""
        out = self.out
        if not items:
            out.append("{}")
            return
        out.append("{")
        first = True
        for name, value in items:
            if not first:
                out.append(",")
            first = False
            if self.pretty:
                self.newline(level + 1)
            out.append(self.quote(name) + ":")
            self.value(value, level + 1)
        if self.pretty:
            self.newline(level)
        out.append("}")

    def mapping(self, m: dict[Any, Any], level: int) -> None:
        out = self.out
        if not m:
            out.append("{}")
            return
        items: Any = m.items()
        if self.standard:
            items = _sorted_keys(list(items))
        out.append("{")
        first = True
        pretty = self.pretty
        for key, value in items:
            if value is None:  # fastjson drops null map values (no WriteMapNullValue)
                continue
            if not first:
                out.append(",")
            first = False
            kt = type(key)
            if kt is str:
                if pretty:
                    self.newline(level + 1)
                out.append(self.quote(key))
            elif kt is int:
                out.append(f'"{int.__repr__(key)}"' if self.standard else int.__repr__(key))
            elif isinstance(key, (Enum, str)):
                self.value(key, level + 1)
            elif isinstance(key, (int, float)):
                text = ("true" if key else "false") if kt is bool else \
                    java_double(key) if isinstance(key, float) else repr(int(key))
                out.append(f'"{text}"' if self.standard else text)
            elif self.standard:
                # a bean (or other) key in standard JSON: a string holding its compact JSON text
                out.append(self.quote(dumps(key)))
            else:
                self.value(key, level + 1)
            out.append(":")
            self.value(value, level + 1)
        if pretty and not first:
            self.newline(level)
        out.append("}")

    def array(self, items: Any, level: int) -> None:
        out = self.out
        if not items:
            out.append("[]")
            return
        out.append("[")
        first = True
        for item in items:
            if not first:
                out.append(",")
            first = False
            if self.pretty:
                self.newline(level + 1)
            self.value(item, level + 1)
        if self.pretty:
            self.newline(level)
        out.append("]")


def dumps(obj: Any, *, pretty: bool = False, standard_json: bool = False) -> str:
    """`obj` as fastjson writes it: compact by default, the §6.1 rule 5 file layout with `pretty=True`,
    the browser-compatible route form (§6.1 rule 6) with `standard_json=True`."""
    writer = _Writer(pretty, standard_json)
    try:
        writer.value(obj, 0)
    except RecursionError:
        raise ProtocolError("fastjson.dumps: value nested too deeply") from None
    return "".join(writer.out)


# --------------------------------------------------------------------------------------------------
# Reader
# --------------------------------------------------------------------------------------------------
_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, pos: int) -> int:
    """The position of the first non-blank character at or after `pos`."""
    m = _WS.match(text, pos)  # the pattern matches everywhere, if only the empty string
    return m.end() if m is not None else pos
# One token after optional whitespace. Groups: 1 punctuation, 2 "string", 3 'string', 4-6 number (integer
# part, fraction, exponent), 7 identifier (true/false/null, or a bare object key).
_TOKEN = re.compile(
    r"[ \t\n\r]*(?:"
    r"([{}\[\]:,])"
    r'|"([^"\\]*(?:\\.[^"\\]*)*)"'
    r"|'([^'\\]*(?:\\.[^'\\]*)*)'"
    r"|(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?"
    r"|([A-Za-z_$][A-Za-z0-9_$]*))",
    re.S)
_PUNCT, _DQ, _SQ, _INT, _FRAC, _EXP, _WORD = 1, 2, 3, 4, 5, 6, 7
_LITERALS = {"true": True, "false": False, "null": None}
_match_token = _TOKEN.match
# a key without escapes, or a bare integer key, then ':'
_match_key_colon = re.compile(r'[ \t\n\r]*(?:"([^"\\]*)"|(-?(?:0|[1-9][0-9]{0,99})))[ \t\n\r]*:').match
# an integer (short enough for int()) or a string without escapes, then the ',' or '}' that follows it
_match_value_sep = re.compile(r'[ \t\n\r]*(?:(-?(?:0|[1-9][0-9]{0,99}))|"([^"\\]*)")[ \t\n\r]*([,}])').match
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[^u])", re.S)
_SIMPLE_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
                   "t": "\t"}


def _unescape_one(m: re.Match[str]) -> str:
    seq = m.group(1)
    if seq[0] == "u" and len(seq) == 5:
        return chr(int(seq[1:], 16))
    try:
        return _SIMPLE_ESCAPES[seq]
    except KeyError:
        raise ProtocolError(f"invalid escape sequence \\{seq!r} in a JSON string") from None


def _unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw
    text = _ESCAPE.sub(_unescape_one, raw)
    if "\\" in _ESCAPE.sub("", raw):
        raise ProtocolError("invalid escape sequence in a JSON string")
    try:  # join surrogate pairs written as two \\uXXXX escapes
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeError:
        return text


def freeze(value: Any) -> Any:
    """A hashable form of a parsed JSON value: objects as tuples of sorted items, arrays as tuples."""
    if isinstance(value, dict):
        items = [(k, freeze(v)) for k, v in value.items()]
        try:
            items.sort()
        except TypeError:
            items.sort(key=lambda kv: (type(kv[0]).__name__, repr(kv[0])))
        return tuple(items)
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return value


#: what `loads` makes of an object in key position: a hashable key, or None to fall back on `freeze`
ObjectKey = Callable[[dict[Any, Any]], Any]


class _Parser:
    """Recursive descent over `_TOKEN` matches, one Python frame per nesting level.

    `object`/`array` take the position after their opening bracket and return (value, position after the
    closing bracket)."""

    __slots__ = ("text", "object_key")

    def __init__(self, text: str, object_key: ObjectKey | None = None) -> None:
        self.text = text
        self.object_key = object_key

    def fail(self, pos: int, what: str) -> ProtocolError:
        pos = _skip_ws(self.text, pos)
        near = self.text[pos:pos + 20]
        if not near:
            return ProtocolError(f"malformed JSON at position {pos}: unexpected end of input ({what})")
        # what fastjson says, where known: a field name not followed by ':' (its bean deserializer's lexer)
        java = fastjson_not_match(":", near[0], pos, self.text) if what == "expected ':'" else None
        return ProtocolError(f"malformed JSON at position {pos}: {what} (near {near!r})", java=java)

    def parse(self) -> Any:
        text = self.text
        m = _match_token(text, 0)
        if m is None:
            raise self.fail(0, "expected a value")
        punct = m.group(_PUNCT)
        value: Any
        if punct == "{":
            value, pos = self.object(m.end(), 1)
        elif punct == "[":
            value, pos = self.array(m.end(), 1)
        else:
            value, pos = self.scalar(m), m.end()
        end = _skip_ws(text, pos)
        if end != len(text):
            raise self.fail(end, "trailing characters")
        return value

    def scalar(self, m: re.Match[str]) -> Any:
        kind = m.lastindex
        if kind == _DQ or kind == _SQ:
            return _unescape(m.group(kind))
        if kind == _INT:
            try:
                return int(m.group(_INT))
            except ValueError:  # more digits than int() converts
                raise self.fail(m.start(_INT), "number too long") from None
        if kind == _FRAC or kind == _EXP:
            return float(m.group().lstrip(" \t\n\r"))
        if kind == _WORD and m.group(_WORD) in _LITERALS:
            return _LITERALS[m.group(_WORD)]
        raise self.fail(m.start(kind or 0), "expected a value")

    def object(self, pos: int, depth: int) -> tuple[dict[Any, Any], int]:
        if depth > MAX_DEPTH:
            raise self.fail(pos - 1, f"nesting deeper than {MAX_DEPTH}")
        text = self.text
        obj: dict[Any, Any] = {}
        m = _match_token(text, pos)
        if m is None:
            raise self.fail(pos, "expected an object key or '}'")
        if m.group(_PUNCT) == "}":
            return obj, m.end()
        while True:
            kc = _match_key_colon(text, pos)  # fast path
            key: Any
            if kc is not None:
                key = kc.group(1)
                if key is None:
                    key = int(kc.group(2))
                pos = kc.end()
            else:
                if m is None:
                    m = _match_token(text, pos)
                    if m is None:
                        raise self.fail(pos, "expected an object key")
                kind, pos = m.lastindex, m.end()
                if kind == _DQ or kind == _SQ:
                    key = _unescape(m.group(kind))
                elif kind == _WORD:
                    key = m.group(_WORD)
                elif kind == _PUNCT:
                    if m.group(_PUNCT) != "{":
                        raise self.fail(m.start(_PUNCT), "expected an object key")
                    key_obj, pos = self.object(pos, depth + 1)
                    key = self.object_key(key_obj) if self.object_key is not None else None
                    if key is None:
                        key = freeze(key_obj)
                else:
                    key = self.scalar(m)
                m = _match_token(text, pos)
                if m is None or m.group(_PUNCT) != ":":
                    raise self.fail(pos, "expected ':'")
                pos = m.end()
            vs = _match_value_sep(text, pos)  # fast path: integer or plain string, then ',' or '}'
            if vs is not None:
                digits = vs.group(1)
                obj[key] = vs.group(2) if digits is None else int(digits)
                pos = vs.end()
                if vs.group(3) == "}":
                    return obj, pos
                m = None
                continue
            m = _match_token(text, pos)
            if m is None:
                raise self.fail(pos, "expected a value")
            punct = m.group(_PUNCT)
            if punct == "{":
                obj[key], pos = self.object(m.end(), depth + 1)
            elif punct == "[":
                obj[key], pos = self.array(m.end(), depth + 1)
            else:
                obj[key], pos = self.scalar(m), m.end()
            m = _match_token(text, pos)
            if m is None:
                raise self.fail(pos, "expected ',' or '}'")
            punct = m.group(_PUNCT)
            if punct == ",":
                pos = m.end()
                m = None
            elif punct == "}":
                return obj, m.end()
            else:
                raise self.fail(pos, "expected ',' or '}'")

    def array(self, pos: int, depth: int) -> tuple[list[Any], int]:
        if depth > MAX_DEPTH:
            raise self.fail(pos - 1, f"nesting deeper than {MAX_DEPTH}")
        text = self.text
        arr: list[Any] = []
        m = _match_token(text, pos)
        if m is not None and m.group(_PUNCT) == "]":
            return arr, m.end()
        item: Any
        while True:
            if m is None:
                raise self.fail(pos, "expected a value")
            punct = m.group(_PUNCT)
            if punct == "{":
                item, pos = self.object(m.end(), depth + 1)
            elif punct == "[":
                item, pos = self.array(m.end(), depth + 1)
            else:
                item, pos = self.scalar(m), m.end()
            arr.append(item)
            m = _match_token(text, pos)
            if m is None:
                raise self.fail(pos, "expected ',' or ']'")
            punct = m.group(_PUNCT)
            if punct == ",":
                pos = m.end()
                m = _match_token(text, pos)
            elif punct == "]":
                return arr, m.end()
            else:
                raise self.fail(pos, "expected ',' or ']'")


def loads(data: str | bytes | bytearray | memoryview, *, object_key: ObjectKey | None = None) -> Any:
    """Parse fastjson text; an object in key position becomes `object_key(obj)` when that is not None, else a
    frozen tuple (see `freeze`)."""
    if isinstance(data, str):
        text = data
    elif isinstance(data, (bytes, bytearray, memoryview)):
        try:
            return _json_decode(data)
        except (msgspec.DecodeError, RecursionError, UnicodeError):  # (msgspec raises UnicodeDecodeError for a
            pass                                                       # string that is not UTF-8: refused below)
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"JSON body is not valid UTF-8: {exc.reason}") from None
    else:
        raise ProtocolError(f"cannot parse JSON from a {type(data).__name__}")
    if text.startswith("\ufeff"):
        text = text[1:]
    if text is data:
        try:
            return _json_decode(text)
        except (msgspec.DecodeError, RecursionError, UnicodeError):
            pass
    try:
        return _Parser(text, object_key).parse()
    except RecursionError:
        raise ProtocolError("JSON nested too deeply") from None
