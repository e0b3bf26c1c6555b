"""Frame codec: `[int total][byte type | 3-byte header length][header][body]` (reference §2.2-2.4).

Sans-IO: `FrameDecoder.feed(bytes)` then iterate complete commands; `encode_command(cmd)` returns the
segments of one frame for `transport.writelines`. Every malformed input raises `ProtocolError`.
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Iterator

import msgspec

from rocketmq_emulator.native import lane

from .codes import CURRENT_VERSION, LANGUAGE_BY_NAME, LanguageCode, SerializeType
from .command import RemotingCommand
from .errors import ProtocolError

#: Largest frame a Java peer accepts (`com.rocketmq.remoting.frameMaxLength`), not counting the length word.
MAX_FRAME_LENGTH = 16 * 1024 * 1024
MAX_HEADER_LENGTH = 0xFFFFFF

#: `(JSON header bytes, body)` -> the command with its typed header, or None to decode it the generic way
TypedHeaderDecoder = Callable[[bytes | bytearray | memoryview, bytes], "RemotingCommand | None"]

#: the native lane's frame splitter (rocketmq_emulator.native), None on the Python path
_split_frames = lane.split_frames if lane is not None else None

_PREFIX = struct.Struct(">iI")  # total length, (type << 24) | header length
_INT = struct.Struct(">i")
_BIN_FIXED = struct.Struct(">hBhiii")  # code, language, version, opaque, flag, remark length
_BIN_SHORT = struct.Struct(">h")

_LANGUAGE_NAMES = {int(m): m.name for m in LanguageCode}
_LANGUAGE_JSON = {m.name: b'"%s"' % m.name.encode() for m in LanguageCode}


# --------------------------------------------------------------------------------------------------
# JSON header (type 0)
# --------------------------------------------------------------------------------------------------
class _JsonHeaderIn(msgspec.Struct):
    code: int
    language: str | int = "JAVA"
    version: int = CURRENT_VERSION  # as the strict path's RemotingCommand (a header without a version)
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    extFields: dict[str, Any] | None = None


_json_decoder = msgspec.json.Decoder(_JsonHeaderIn)
_json_encoder = msgspec.json.Encoder()


def _ext_value(value: Any) -> str | None:
    """What fastjson makes of a non-string extFields value when it reads a `Map<String,String>`."""
    if value is None:
        return None
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if not value.is_integer() else str(int(value)) if abs(value) < 1e16 else repr(value)
    return _json_encoder.encode(value).decode()


def normalise_ext_fields(ext: dict[str, Any]) -> dict[str, str]:
    """Coerce numbers/booleans to their text and drop JSON nulls (reference §2.3)."""
    for value in ext.values():
        if type(value) is not str:
            break
    else:
        return ext
    out: dict[str, str] = {}
    for key, value in ext.items():
        if type(value) is not str:
            value = _ext_value(value)
            if value is None:
                continue
        out[key] = value
    return out


_command_decoder = msgspec.json.Decoder(RemotingCommand)


def decode_json_header(data: bytes | bytearray | memoryview, body: bytes) -> RemotingCommand:
    try:  # hot path: a header whose extFields values are all strings decodes straight into the command
        cmd = _command_decoder.decode(data)
    except msgspec.ValidationError:  # numbers/booleans in extFields (C++, ali-ons), a numeric language, ...
        cmd = _decode_json_header_tolerant(data)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"invalid JSON header: {exc}") from None
    cmd.body = body
    cmd.serialize_type = SerializeType.JSON
    cmd.header = None  # never taken from the wire
    return cmd


def _decode_json_header_tolerant(data: bytes | bytearray | memoryview) -> RemotingCommand:
    """A header with a numeric `language`, or a key of an unexpected type."""
    try:
        h = _json_decoder.decode(data)
    except msgspec.DecodeError as exc:  # includes ValidationError
        raise ProtocolError(f"invalid JSON header: {exc}") from None
    lang = h.language
    if not isinstance(lang, str):
        lang = _LANGUAGE_NAMES.get(lang, "OTHER")
    ext = normalise_ext_fields(h.extFields) if h.extFields is not None else None
    return RemotingCommand(h.code, lang, h.version, h.opaque, h.flag, h.remark, ext)


def encode_json_header(cmd: RemotingCommand) -> bytes:
    """The header as a 4.9.8 Java process writes it: alphabetical keys, extFields values always strings,
    `extFields` and `remark` omitted when None."""
    ext = cmd.ext_fields
    if ext is not None:
        for value in ext.values():
            if type(value) is not str:
                ext = normalise_ext_fields(ext)
                break
        ext_part = b'"extFields":' + _json_encoder.encode(ext) + b","
    else:
        ext_part = b""
    remark = cmd.remark
    remark_part = b'"remark":' + _json_encoder.encode(remark) + b"," if remark is not None else b""
    language = _LANGUAGE_JSON.get(cmd.language) or _json_encoder.encode(cmd.language)
    try:
        return b'{"code":%d,%s"flag":%d,"language":%s,"opaque":%d,%s"serializeTypeCurrentRPC":"JSON","version":%d}' % (
            cmd.code, ext_part, cmd.flag, language, cmd.opaque, remark_part, cmd.version)
    except TypeError as exc:
        raise ProtocolError(f"cannot encode JSON header: {exc}") from None


# --------------------------------------------------------------------------------------------------
# ROCKETMQ binary header (type 1)
# --------------------------------------------------------------------------------------------------
def decode_binary_header(data: bytes | bytearray | memoryview, body: bytes) -> RemotingCommand:
    n = len(data)
    if n < 21:
        raise ProtocolError(f"binary header too short: {n} bytes, at least 21 needed")
    code, lang, version, opaque, flag, remark_len = _BIN_FIXED.unpack_from(data, 0)
    if remark_len < 0 or 17 + remark_len + 4 > n:
        raise ProtocolError(f"binary header remark length {remark_len} exceeds the header ({n} bytes)")
    pos = 17
    try:
        remark = bytes(data[pos:pos + remark_len]).decode() if remark_len else None
        pos += remark_len
        (ext_len,) = _INT.unpack_from(data, pos)
        pos += 4
        if ext_len < 0 or pos + ext_len > n:
            raise ProtocolError(f"binary header extFields length {ext_len} exceeds the header ({n} bytes)")
        end = pos + ext_len
        fields: dict[str, str] = {}
        while pos < end:
            if pos + 2 > end:
                raise ProtocolError("binary header: truncated extFields key length")
            (klen,) = _BIN_SHORT.unpack_from(data, pos)
            pos += 2
            if klen < 0 or pos + klen + 4 > end:
                raise ProtocolError(f"binary header: extFields key length {klen} out of bounds")
            key = bytes(data[pos:pos + klen]).decode()
            pos += klen
            (vlen,) = _INT.unpack_from(data, pos)
            pos += 4
            if vlen < 0 or pos + vlen > end:
                raise ProtocolError(f"binary header: extFields value length {vlen} out of bounds")
            value = bytes(data[pos:pos + vlen]).decode()
            pos += vlen
            if key and value:  # Java reads a zero-length string as null: the entry is absent
                fields[key] = value
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"binary header: invalid UTF-8 ({exc.reason})") from None
    return RemotingCommand(code, _LANGUAGE_NAMES.get(lang, "OTHER"), version, opaque, flag, remark,
                           fields if ext_len else None, body, SerializeType.ROCKETMQ)


def encode_binary_header(cmd: RemotingCommand) -> bytes:
    remark = cmd.remark.encode() if cmd.remark else b""
    parts = []
    if cmd.ext_fields:
        for key, value in cmd.ext_fields.items():
            if value is None:
                continue
            k = key.encode()
            v = (value if type(value) is str else _ext_value(value) or "").encode()
            parts.append(_BIN_SHORT.pack(len(k)) + k + _INT.pack(len(v)) + v)
    ext = b"".join(parts)
    try:
        fixed = _BIN_FIXED.pack(cmd.code, int(LANGUAGE_BY_NAME.get(cmd.language, LanguageCode.OTHER)),
                                cmd.version, cmd.opaque, cmd.flag, len(remark))
    except struct.error as exc:
        raise ProtocolError(f"cannot encode binary header: {exc}") from None
    return b"".join((fixed, remark, _INT.pack(len(ext)), ext))


# --------------------------------------------------------------------------------------------------
# Frames
# --------------------------------------------------------------------------------------------------
def encode_command(cmd: RemotingCommand) -> list[bytes]:
    """The segments of one frame: `[prefix + header]` or `[prefix + header, body]`."""
    stype = cmd.serialize_type
    header = encode_binary_header(cmd) if stype == 1 else encode_json_header(cmd)
    hlen = len(header)
    body = cmd.body
    total = 4 + hlen + len(body)
    if hlen > MAX_HEADER_LENGTH:
        raise ProtocolError(f"header of {hlen} bytes exceeds the 24-bit header length")
    if total > MAX_FRAME_LENGTH:
        raise ProtocolError(f"frame of {total} bytes exceeds the {MAX_FRAME_LENGTH}-byte frame limit")
    first = _PREFIX.pack(total, hlen | 0x1000000 if stype == 1 else hlen) + header
    return [first, body] if body else [first]


def json_frame_template(cmd: RemotingCommand, placeholders: dict[str, str]) -> str:
    """A `%`-template of `cmd`'s whole JSON frame minus its 8-byte prefix, for answers sent thousands of times
    a second with a few fields changing: each extFields value in `placeholders` (field -> `%d` or `%s`) and
    the opaque become conversions, in extFields order, opaque last. Fill it, encode it, and put
    `frame_prefix(len(header))` before it. Values filled in must need no JSON escaping (numbers, hex ids)."""
    ext = dict(cmd.ext_fields or {})
    for i, key in enumerate(placeholders):
        ext[key] = f"@{i}@"
    cmd = RemotingCommand(cmd.code, cmd.language, cmd.version, -1234567, cmd.flag, cmd.remark, ext, b"",
                          SerializeType.JSON)
    template = encode_json_header(cmd).decode().replace("%", "%%")
    for i, conversion in enumerate(placeholders.values()):
        marker = f'"@{i}@"'
        if template.count(marker) != 1:
            raise ValueError(f"placeholder {marker} is ambiguous in {template!r}")
        template = template.replace(marker, f'"{conversion}"')
    if template.count('"opaque":-1234567,') != 1:
        raise ValueError(f"cannot place the opaque in {template!r}")
    return template.replace('"opaque":-1234567,', '"opaque":%d,')


def frame_prefix(header_length: int, body_length: int = 0) -> bytes:
    """The 8 bytes before a JSON header of `header_length` bytes (and a body of `body_length`)."""
    return _PREFIX.pack(header_length + 4 + body_length, header_length)


def encode_command_bytes(cmd: RemotingCommand) -> bytes:
    return b"".join(encode_command(cmd))


def _decode_header(word: int, header: bytes | bytearray, body: bytes,
                   typed: dict[bytes, TypedHeaderDecoder] | None) -> RemotingCommand:
    """One frame's command from its header (binary or JSON; a JSON header of a `typed` code read straight into
    its typed header when the typed decoder can)."""
    if word >> 24:
        return decode_binary_header(header, body)
    decode = typed.get(bytes(header[:12])) if typed is not None else None
    read = decode(header, body) if decode is not None else None
    return read if read is not None else decode_json_header(header, body)


class FrameDecoder:
    """Streaming decoder. Feed bytes, then iterate the complete commands.

    A partial frame stays buffered untouched. Limits are checked from the first 8 bytes, before anything
    is allocated for the frame. After a `ProtocolError` the stream is unusable (the decoder keeps raising);
    the connection must be closed. When nothing is pending, fed `bytes` are parsed in place (no copy).
    """

    __slots__ = ("_buf", "_pos", "max_frame_length", "_error", "typed")

    def __init__(self, max_frame_length: int = MAX_FRAME_LENGTH) -> None:
        self._buf: bytes | bytearray = b""
        self._pos = 0
        self.max_frame_length = max_frame_length
        self._error: ProtocolError | None = None
        #: JSON headers read straight into their typed header (`RemotingCommand.header`, `ext_fields` None), by
        #: the header's first 12 bytes (`{"code":310,`): the decoder returns None when it cannot, and the
        #: frame is decoded the generic way (so every error is the generic path's). See `DispatchTable.typed`.
        self.typed: dict[bytes, TypedHeaderDecoder] | None = None

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        buf = self._buf
        if self._pos == len(buf):
            self._buf = data if type(data) is bytes else bytes(data)
            self._pos = 0
        elif type(buf) is bytes:
            merged = bytearray(buf[self._pos:])
            merged += data
            self._buf = merged
            self._pos = 0
        else:
            buf += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as commands."""
        return len(self._buf) - self._pos

    def __iter__(self) -> Iterator[RemotingCommand]:
        if _split_frames is not None:
            yield from self._native_commands()
            return
        while True:
            cmd = self.next_command()
            if cmd is None:
                return
            yield cmd

    def with_lane(self, read: Callable[[bytes | bytearray, int, int, Any], tuple[list[Any], Any]], context: Any
                  ) -> Iterator[RemotingCommand | list[Any]]:
        """`__iter__` through a native read lane (`DispatchTable.lane`): its `read(buf, pos, max_frame_length,
        context)` splits the frames as `_lane.split_frames` does and takes some requests whole; each run it took
        is yielded as its list `[items, opaques, end]`, in its place among the commands."""
        yield from self._native_commands(read, context)

    def _native_commands(self, read: Callable[..., Any] | None = None, context: Any = None
                         ) -> Iterator[Any]:
        """`__iter__` with the frames split by the native lane (`_lane.split_frames`, or a read lane's `read`:
        `with_lane`): the same commands, the same errors at the same frame, the buffer consumed frame by frame
        as `next_command` does."""
        if self._error is not None:
            raise self._error
        buf = self._buf
        if read is not None:
            frames, bad = read(buf, self._pos, self.max_frame_length, context)
        elif _split_frames is not None:
            frames, bad = _split_frames(buf, self._pos, self.max_frame_length)
        else:  # (never: `__iter__` calls this only on the native lane)
            return
        typed = self.typed
        for frame in frames:
            if frame.__class__ is list:  # a run the read lane took: [items, opaques, end]
                self._pos = frame[2]
                yield frame
                continue
            word, header, body, end = frame
            try:
                cmd = _decode_header(word, header, body, typed)
            except ProtocolError as exc:
                self._error = exc
                raise
            self._pos = end
            yield cmd
        if frames:
            self._consumed(buf, self._pos)
        if bad is not None:
            self._check_prefix(*bad)

    def _consumed(self, buf: bytes | bytearray, end: int) -> None:
        """The frames up to `end` are taken: drop the buffer when it is all taken, compact a large bytearray."""
        if end == len(buf):
            self._buf = b""
            self._pos = 0
        elif end > 65536 and type(buf) is bytearray:
            del buf[:end]
            self._pos = 0
        else:
            self._pos = end

    def _fail(self, message: str) -> ProtocolError:
        self._error = ProtocolError(message)
        return self._error

    def next_command(self) -> RemotingCommand | None:
        if self._error is not None:
            raise self._error
        buf = self._buf
        pos = self._pos
        avail = len(buf) - pos
        if avail < 8:
            if avail >= 4:
                (total,) = _INT.unpack_from(buf, pos)
                if total < 4 or total > self.max_frame_length:
                    self._check_prefix(total, 0)
            return None
        total, word = _PREFIX.unpack_from(buf, pos)
        hlen = word & 0xFFFFFF
        if total < 4 or total > self.max_frame_length or word > 0x1FFFFFF or hlen > total - 4:
            self._check_prefix(total, word)
        end = pos + 4 + total
        if end > len(buf):
            return None
        body_start = pos + 8 + hlen
        header = buf[pos + 8:body_start]
        body = buf[body_start:end]
        if type(body) is not bytes:
            body = bytes(body)
        try:
            cmd = _decode_header(word, header, body, self.typed)
        except ProtocolError as exc:
            self._error = exc
            raise
        self._consumed(buf, end)
        return cmd

    def _check_prefix(self, total: int, word: int) -> None:
        if total < 4:
            raise self._fail(f"frame length {total} is smaller than the 4-byte header-length word")
        if total > self.max_frame_length:
            raise self._fail(f"frame length {total} exceeds the limit of {self.max_frame_length} bytes")
        if word >> 24 not in (0, 1):
            raise self._fail(f"unknown header serialization type {word >> 24}")
        raise self._fail(f"header length {word & 0xFFFFFF} exceeds the frame length {total} minus 4")


def decode_frames(data: bytes) -> list[RemotingCommand]:
    """Decode a byte string holding only complete frames (a convenience for tests and tools)."""
    decoder = FrameDecoder()
    decoder.feed(data)
    cmds = list(decoder)
    if decoder.buffered:
        raise ProtocolError(f"{decoder.buffered} trailing bytes do not form a complete frame")
    return cmds
