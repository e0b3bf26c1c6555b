"""The wire trace's codec (`serve --trace`; the broker's `broker/trace.py` runs it): which commands to trace,
their packed form, and how a packed command becomes a line.

* `TraceFilter` and `choose()`: filters (`codes`, `group`, `topic`) choose requests; a response is traced when
  the request it answers was (matched by opaque, per connection and direction), so a broker-initiated request
  such as RESET_CONSUMER_CLIENT_OFFSET shows with its answer. The group and topic filters look at the header
  fields that carry them (`consumerGroup`, `producerGroup`, `group`, `topic`, the one-letter send header's
  `a`/`b`).
* `pack()`: a command with its connection's details as a length-prefixed msgpack array (what crosses from the
  broker to its renderer process); `Renderer.feed(data)` turns such a stream, as its bytes arrive, into one
  line per command (the renderer process, broker/trace.py, reads and writes them): header fields and a body
  summary (a send's message count, a pull answer's queue and first/last queue
  offset from the records' fixed fields, JSON bodies cut to a length).
* Line formats: `text` (for people; `format_text`) and `json` (one object per line); `read_trace()` filters a
  saved trace (`rocketmq-emulator trace FILE`) by the same rule, JSON or text.
"""

from __future__ import annotations

import json
import re
import struct
import time
from typing import Any, Iterable, Protocol

import msgspec

from .codes import RequestCode, request_code_name, response_code_name
from .command import ONEWAY_FLAG, RESPONSE_FLAG, RemotingCommand
from .errors import ProtocolError
from .message import POS_PHYSICAL_OFFSET, POS_QUEUE_ID, POS_QUEUE_OFFSET, POS_TOTAL_SIZE, iter_batch


_SEND_CODES = frozenset({RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE})
#: the port name of the gRPC endpoint's records (broker/grpc/trace.py)
GRPC_PORT = "grpc"
_GROUP_FIELDS = ("consumerGroup", "producerGroup", "group", "a")
_TOPIC_FIELDS = ("topic", "b")
_MAX_PENDING = 20_000  # per connection and direction: requests still waiting for their traced answer
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_LEN = struct.Struct(">I")
_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder().decode


def trace_time(ts: float) -> str:
    """A trace line's time (local, millisecond precision); such strings sort as the times do."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ts)) + f".{int(ts * 1000) % 1000:03d}"


def parse_codes(text: str) -> frozenset[int]:
    """`PULL_MESSAGE,SEND_MESSAGE_V2` or numbers -> request codes; ValueError names an unknown one."""
    codes = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item.lstrip("-").isdigit():
            codes.add(int(item))
            continue
        try:
            codes.add(int(RequestCode[item.upper()]))
        except KeyError:
            raise ValueError(f"unknown request code {item!r} (a RequestCode name such as PULL_MESSAGE, or a "
                             f"number)") from None
    if not codes:
        raise ValueError("no request code given")
    return frozenset(codes)


class TraceFilter:
    """Which requests to trace (every one when nothing is set)."""

    def __init__(self, codes: Iterable[int] | None = None, group: str | None = None, topic: str | None = None) -> None:
        self.codes = frozenset(codes) if codes else None
        self.group = group or None
        self.topic = topic or None

    def matches(self, code: int, ext: dict[str, str] | None) -> bool:
        if self.codes is not None and code not in self.codes:
            return False
        if self.group is None and self.topic is None:
            return True
        ext = ext or {}
        if self.group is not None and not any(ext.get(f) == self.group for f in _GROUP_FIELDS):
            return False
        if self.topic is not None and not any(ext.get(f) == self.topic for f in _TOPIC_FIELDS):
            return False
        return True


class TracedCommand(Protocol):
    """What `choose()` reads of a command: a RemotingCommand, or one read back from a saved trace."""

    code: int
    flag: int
    opaque: int
    ext_fields: dict[str, str] | None


def choose(attributes: dict[str, Any], direction: str, cmd: TracedCommand, trace_filter: TraceFilter
           ) -> int | None:
    """Whether to trace `cmd` (read: direction "in", written: "out") on the connection whose per-connection
    state dict is `attributes`: the request code it is or answers, None when not. A request is chosen by the
    filter; an answer when its request was (matched by opaque; the state is kept in `attributes["trace"]`)."""
    state: tuple[dict[int, int], dict[int, int]] | None = attributes.get("trace")
    if state is None:
        state = attributes["trace"] = ({}, {})  # requests read / written: opaque -> code
    if cmd.flag & RESPONSE_FLAG:
        return (state[1] if direction == "in" else state[0]).pop(cmd.opaque, None)
    if not trace_filter.matches(cmd.code, cmd.ext_fields):
        return None
    if not cmd.flag & ONEWAY_FLAG:
        requests = state[0] if direction == "in" else state[1]
        if len(requests) >= _MAX_PENDING:
            requests.clear()  # answers that never came (a dead peer): forget them
        requests[cmd.opaque] = cmd.code
    return cmd.code


def pack(ts: float, port: str, peer: str, attributes: dict[str, Any], direction: str, request_code: int,
         cmd: RemotingCommand) -> bytes:
    """One traced command as the renderer reads it: a 4-byte length and a msgpack array."""
    data = _encode((ts, port, peer, attributes.get("client_id"), attributes.get("language"),
                    attributes.get("version"), direction, request_code, cmd.code, cmd.language, cmd.version,
                    cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields, cmd.body))
    return _LEN.pack(len(data)) + data


def pack_dropped(count: int) -> bytes:
    """The note that `count` lines were dropped, in the same framing."""
    data = _encode(("#drop", count))
    return _LEN.pack(len(data)) + data


class Renderer:
    """Packed records (`pack()`, length-prefixed) in, trace lines out: `feed()` takes the bytes as they arrive
    and returns the lines of the records they complete."""

    def __init__(self, fmt: str = "text", body_chars: int = 300) -> None:
        self.fmt = fmt
        self.body_chars = body_chars
        self._pending = b""  # the start of a record not complete yet

    def feed(self, data: bytes) -> list[str]:
        buf = self._pending + data
        lines = []
        pos = 0
        while len(buf) - pos >= 4:
            (n,) = _LEN.unpack_from(buf, pos)
            if len(buf) - pos - 4 < n:
                break
            lines.append(self.line(_decode(buf[pos + 4:pos + 4 + n])))
            pos += 4 + n
        self._pending = buf[pos:]
        return lines

    def line(self, item: list[Any]) -> str:
        if item[0] == "#drop":
            return f"# trace: {item[1]} lines dropped (the renderer could not keep up)"
        try:
            return self.render(self.record(item))
        except Exception as exc:  # noqa: BLE001 - a line that cannot be rendered must not end the trace
            return f"# trace: cannot render a command: {exc!r}"

    def record(self, item: list[Any]) -> dict[str, Any]:
        (ts, port_name, peer, client_id, language, version, direction, request_code, code, cmd_language,
         cmd_version, opaque, flag, remark, ext_fields, body) = item
        response = bool(flag & RESPONSE_FLAG)
        rec: dict[str, Any] = {
            "time": trace_time(ts),
            "port": port_name, "peer": peer, "dir": direction,
            "kind": "response" if response else "request",
            "code": code,
            "name": response_code_name(code) if response else request_code_name(code),
            "opaque": opaque, "flag": flag,
        }
        if response:
            rec["request_code"] = request_code
            rec["request"] = request_code_name(request_code)
        grpc = port_name == GRPC_PORT and ext_fields is not None and "rpc" in ext_fields
        if grpc:  # a gRPC call (broker/grpc/trace.py): named by its method and status, not by remoting codes
            assert ext_fields is not None
            if response:
                rec["name"], rec["request"] = ext_fields.get("status", str(code)), ext_fields["rpc"]
            else:
                rec["name"] = ext_fields["rpc"]
        if client_id:
            rec["client"] = client_id
        if direction == "in" and not response and not grpc:  # the peer's language and version: from its own
            language, version = cmd_language, cmd_version  # request ...
        if language:  # ... else as its heartbeat told
            rec["language"], rec["version"] = language, version
        if remark:
            rec["remark"] = remark
        if ext_fields:
            rec["header"] = dict(ext_fields)
        if body:
            rec["body"] = self.body_summary(request_code, response, ext_fields or {}, body)
        return rec

    def body_summary(self, request_code: int, response: bool, ext: dict[str, str], body: bytes) -> dict[str, Any]:
        out: dict[str, Any] = {"bytes": len(body)}
        try:
            if not response and request_code in _SEND_CODES:
                if request_code == RequestCode.SEND_BATCH_MESSAGE or ext.get("m") == "true" or ext.get("batch") == "true":
                    out["messages"] = sum(1 for _ in iter_batch(body))
                else:
                    out["messages"] = 1
                return out
            if response and request_code == RequestCode.PULL_MESSAGE:
                out.update(_records_summary(body))
                return out
        except ProtocolError as exc:
            out["undecodable"] = str(exc)
            return out
        if body[:1] in (b"{", b"["):
            text = body[:self.body_chars * 4].decode("utf-8", "replace")
            out["json"] = text if len(text) <= self.body_chars else text[:self.body_chars] + "..."
        return out

    def render(self, rec: dict[str, Any]) -> str:
        return json.dumps(rec, ensure_ascii=False) if self.fmt == "json" else format_text(rec)


def _records_summary(body: bytes) -> dict[str, Any]:
    """Count, queue id and first/last queue offset of a PULL body, from the records' fixed fields only."""
    pos, n, first, last, queue_id = 0, 0, -1, -1, -1
    end = len(body)
    while pos + POS_PHYSICAL_OFFSET <= end:  # the fields read end where PHYSICALOFFSET begins
        size = _INT.unpack_from(body, pos + POS_TOTAL_SIZE)[0]
        queue = _INT.unpack_from(body, pos + POS_QUEUE_ID)[0]
        offset = _LONG.unpack_from(body, pos + POS_QUEUE_OFFSET)[0]
        if size < POS_PHYSICAL_OFFSET or pos + size > end:
            return {"messages": n, "undecodable": f"a record of {size} bytes at {pos}"}
        if n == 0:
            first, queue_id = offset, queue
        last = offset
        n += 1
        pos += size
    out: dict[str, Any] = {"messages": n}
    if n:
        out["queue_id"], out["queue_offsets"] = queue_id, [first, last]
    return out


def format_text(rec: dict[str, Any]) -> str:
    """One trace record as a line for people."""
    arrow = "<-" if rec["dir"] == "in" else "->"
    who = rec["peer"]
    if rec.get("client"):
        who += f" {rec['client']}"
    if rec.get("language"):
        who += f" {rec['language']}/{rec.get('version')}"
    if rec["kind"] == "request":
        what = f"{rec['name']}({rec['code']})"
    else:
        what = f"answer to {rec['request']}: {rec['name']}({rec['code']})"
    flags = f" flag={rec['flag']}" + (" oneway" if rec["flag"] & ONEWAY_FLAG else "")
    parts = [rec["time"], f"[{rec['port']}]", who, arrow, what, f"opaque={rec['opaque']}{flags}"]
    if rec.get("remark"):
        parts.append(f"remark={rec['remark']!r}")
    if rec.get("header"):
        parts.append("{" + ", ".join(f"{k}={_printable(v)}" for k, v in rec["header"].items()) + "}")
    if rec.get("body"):
        body = rec["body"]
        parts.append("body=" + " ".join(f"{k}={_printable(v)}" for k, v in body.items()))
    return " ".join(parts)


def _printable(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.replace("\x01", "=").replace("\x02", ";")


class NotATraceError(ValueError):
    """A file given as a saved trace is not one."""


def read_trace(lines: Iterable[str], trace_filter: TraceFilter) -> Iterable[dict[str, Any] | str]:
    """The records of a saved trace that pass the filter, by the live trace's rule (`choose()`): a request when
    the filter chooses it, an answer when its request was chosen (matched by connection, direction and opaque).
    JSON lines come as dicts; a text trace's lines as strings, parsed the same way (`parse_text_line`).
    Comments pass; other lines pass only when the filter chooses everything. NotATraceError when the first line
    that is not blank or a comment is no trace record (the file is something else)."""
    everything = trace_filter.codes is None and trace_filter.group is None and trace_filter.topic is None
    connections: dict[tuple[Any, Any], dict[str, Any]] = {}
    first = True
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line:
            continue
        item: dict[str, Any] | str = line
        rec: dict[str, Any] | None = None
        if line.startswith("{"):
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if isinstance(rec, dict) and "kind" in rec:
                item = rec
            else:
                rec = None
        if line.startswith("#"):
            yield line
            continue
        if rec is None:
            rec = parse_text_line(line)
        if first and rec is None:
            raise NotATraceError(f"line {number} is not a line of a wire trace (serve --trace FILE writes one): "
                                 f"{line[:60]!r}")
        first = False
        if rec is None:
            if everything:
                yield line
            continue
        attributes = connections.setdefault((rec.get("port"), rec.get("peer")), {})
        cmd = _SavedCommand(rec)
        if choose(attributes, rec.get("dir", "in"), cmd, trace_filter) is not None:
            yield item


class _SavedCommand:
    """What `choose()` reads of a command, from a saved trace record."""

    __slots__ = ("code", "flag", "opaque", "ext_fields")

    def __init__(self, rec: dict[str, Any]) -> None:
        self.code: int = rec.get("code", -1)
        self.flag = int(rec.get("flag") or 0) | (RESPONSE_FLAG if rec.get("kind") == "response" else 0)
        self.opaque: int = rec.get("opaque", -1)
        self.ext_fields: dict[str, str] | None = rec.get("header")


_TEXT_LINE = re.compile(r"^(?P<time>\S+) \[(?P<port>[^\]]*)\] (?P<peer>\S+).*? (?P<arrow><-|->) (?P<what>.*?) "
                        r"opaque=(?P<opaque>-?\d+) flag=(?P<flag>\d+)(?P<rest>.*)$")
_TEXT_CODE = re.compile(r"\((-?\d+)\)$")
_TEXT_REMARK = re.compile(r"^ remark=(?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
_TEXT_FIELD_SPLIT = re.compile(r", (?=[A-Za-z_][\w.]*=)")


def parse_text_line(line: str) -> dict[str, Any] | None:
    """A text trace line (`format_text`) back to what the filters read: port, peer, dir, kind, code, opaque,
    flag and the header fields (values as printed); None when it is not such a line."""
    m = _TEXT_LINE.match(line)
    if m is None:
        return None
    what = m["what"]
    response = what.startswith("answer to ")
    code = _TEXT_CODE.search(what)
    if code is None:
        return None
    rec: dict[str, Any] = {"port": m["port"], "peer": m["peer"], "dir": "in" if m["arrow"] == "<-" else "out",
                           "kind": "response" if response else "request", "code": int(code[1]),
                           "opaque": int(m["opaque"]), "flag": int(m["flag"])}
    rest = m["rest"]
    if rest.startswith(" oneway"):
        rest = rest[len(" oneway"):]
    remark = _TEXT_REMARK.match(rest)
    if remark:
        rest = rest[remark.end():]
    if rest.startswith(" {"):
        end = rest.find("} body=")
        end = end if end >= 0 else rest.rfind("}")
        if end > 0:
            rec["header"] = dict(field.partition("=")[::2] for field in _TEXT_FIELD_SPLIT.split(rest[2:end]))
    return rec
