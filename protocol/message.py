"""Message formats (reference §7): the stored record, properties, batches, message ids and tag hashes.

The stored record is the commitlog record, a PULL body element, a VIEW/QUERY body and a
CHECK_TRANSACTION_STATE body: the same bytes everywhere. `MessageExt.decode` / `encode` round-trip them bit
for bit (the properties are kept as the raw string and parsed only when asked for).
"""

from __future__ import annotations

import ipaddress
import struct
import zlib
from functools import lru_cache
from typing import Any, Callable, Iterable, Iterator, Mapping, Self, TypeVar, cast

from .codes import MessageSysFlag
from .errors import ProtocolError
from .java_texts import BUFFER_UNDERFLOW, NULL_BATCH_BODY

T = TypeVar("T")

MESSAGE_MAGIC_CODE = -626843481  # 0xDAA320A7, v1: 1-byte topic length
MESSAGE_MAGIC_CODE_V2 = -626843477  # 0xDAA320AB, v2 (5.x): 2-byte topic length
BLANK_MAGIC_CODE = -875286124  # 0xCBD43194, end-of-file filler in commitlog segments

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

# Standard property keys (reference §7.5), the ones this project reads or writes.
PROPERTY_KEYS = "KEYS"
PROPERTY_TAGS = "TAGS"
PROPERTY_WAIT_STORE_MSG_OK = "WAIT"
PROPERTY_DELAY_TIME_LEVEL = "DELAY"
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_REAL_QUEUE_ID = "REAL_QID"
PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG"
# transactions: how often the broker has checked a half message back, the producer's "do not check before" (s),
# and a re-put half message's original queue offset
PROPERTY_TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
PROPERTY_PRODUCER_GROUP = "PGROUP"
PROPERTY_MIN_OFFSET = "MIN_OFFSET"
PROPERTY_MAX_OFFSET = "MAX_OFFSET"
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
PROPERTY_RECONSUME_TIME = "RECONSUME_TIME"
PROPERTY_MSG_REGION = "MSG_REGION"
PROPERTY_TRACE_SWITCH = "TRACE_ON"
PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
PROPERTY_MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
PROPERTY_CLUSTER = "CLUSTER"
# request-reply (4.6+): the requester's correlation id and client id, the request's time to live (ms), the
# reply's type marker, and when the broker pushed the reply
PROPERTY_CORRELATION_ID = "CORRELATION_ID"
PROPERTY_MESSAGE_REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
PROPERTY_MESSAGE_TTL = "TTL"
PROPERTY_MESSAGE_TYPE = "MSG_TYPE"
PROPERTY_TIMER_DELIVER_MS = "TIMER_DELIVER_MS"  # 5.x: deliver at this time (ms since the epoch)
PROPERTY_PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
PROPERTY_REPLY_MESSAGE_ARRIVE_TIME = "ARRIVE_TIME"
REPLY_MESSAGE_FLAG = "reply"
KEY_SEPARATOR = " "

# Record layout (§7.1). Offsets of the fixed fields, valid for every host variant.
POS_TOTAL_SIZE = 0
POS_MAGIC = 4
POS_BODY_CRC = 8
POS_QUEUE_ID = 12
POS_FLAG = 16
POS_QUEUE_OFFSET = 20
POS_PHYSICAL_OFFSET = 28
POS_SYS_FLAG = 36
POS_BORN_TIMESTAMP = 40
POS_BORN_HOST = 48

_HEAD = struct.Struct(">iiiiiqqiq")  # 48 bytes up to BORNHOST
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")
_USHORT = struct.Struct(">H")

# Fixed part from TOTALSIZE to BODYLEN for each (born v6, store v6) pair.
_FIXED: dict[tuple[bool, bool], struct.Struct] = {
    (b6, s6): struct.Struct(">iiiiiqqiq" + ("16s" if b6 else "4s") + "iq" + ("16s" if s6 else "4s") + "iiqi")
    for b6 in (False, True) for s6 in (False, True)
}
_FIXED_V4 = _FIXED[(False, False)]  # 88 bytes: BODY starts at 88 for IPv4/IPv4


def store_timestamp_position(sys_flag: int) -> int:
    """Offset of STORETIMESTAMP in a record: 48 + born host length."""
    return 48 + (20 if sys_flag & MessageSysFlag.BORNHOST_V6 else 8)


def record_size(body_len: int, topic_len: int, props_len: int, sys_flag: int = 0, v2: bool = False) -> int:
    """TOTALSIZE of a record (91 + body + topic + properties for IPv4/IPv4 v1)."""
    size = 91 + body_len + topic_len + props_len
    if sys_flag & MessageSysFlag.BORNHOST_V6:
        size += 12
    if sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6:
        size += 12
    return size + (1 if v2 else 0)


def body_crc(body: bytes) -> int:
    """BODYCRC as the broker writes it: CRC32 of the stored body, masked to a non-negative int."""
    return zlib.crc32(body) & 0x7FFFFFFF


# --------------------------------------------------------------------------------------------------
# Hosts, message ids, tag hash codes
# --------------------------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def pack_host(ip: str) -> bytes:
    """4 bytes for an IPv4 address (IPv4-mapped IPv6 is normalised to IPv4), 16 for IPv6."""
    if ip.startswith("::ffff:") and "." in ip:
        ip = ip[7:]
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        raise ProtocolError(f"not an IP address: {ip!r}") from None
    return addr.packed


@lru_cache(maxsize=4096)
def unpack_host(raw: bytes) -> str:
    if len(raw) == 4:
        return "%d.%d.%d.%d" % (raw[0], raw[1], raw[2], raw[3])
    return str(ipaddress.IPv6Address(raw))


def create_message_id(store_ip: bytes | str, store_port: int, commit_log_offset: int) -> str:
    """The *offset message id* (§7.7): store host + port + commitlog offset, upper-case hex."""
    raw = pack_host(store_ip) if isinstance(store_ip, str) else store_ip
    return (raw + struct.pack(">iq", store_port, commit_log_offset)).hex().upper()


def decode_message_id(msg_id: str) -> tuple[str, int, int]:
    """(store ip, store port, commitlog offset) of an offset message id; 32 chars = IPv4, else IPv6."""
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise ProtocolError(f"message id {msg_id!r} is not hexadecimal") from None
    if len(raw) not in (16, 28):
        raise ProtocolError(f"message id {msg_id!r} has {len(raw) * 2} hex digits, expected 32 or 56")
    n = len(raw) - 12
    port, offset = struct.unpack_from(">iq", raw, n)
    return unpack_host(raw[:n]), port, offset


def java_hash_set_order(items: Iterable[T], source_capacity: int | None = None, *, initial_capacity: int = 16,
                        table_size: int | None = None, hash_code: Callable[[T], int] | None = None) -> list[T]:
    """The order a Java HashSet / HashMap (or ConcurrentHashMap: the same bins) filled with `items` iterates in: by
    bin of its final table (bin = (h ^ h >>> 16) & (n - 1)), then by insertion. A RocketMQ answer that serialises
    such a set or map (topic lists, locked queues, groups, ...) lists its items in this order.

    The table: `table_size` when known (a `new ConcurrentHashMap<>(1024)` has 2048 bins), else `initial_capacity`
    rounded up to a power of two and doubled while over 3/4 full. `hash_code`: the items' Java hashCode (String's
    by default). `source_capacity`: the items were inserted in the order of another hash map of that table size."""
    unique = list(dict.fromkeys(items))
    code = hash_code or cast("Callable[[T], int]", java_string_hash)
    capacity = table_size or 1
    if table_size is None:
        while capacity < initial_capacity:
            capacity <<= 1
        while len(unique) > capacity * 3 // 4:
            capacity <<= 1

    def spread(item: T) -> int:
        h = code(item) & 0xFFFFFFFF
        return h ^ (h >> 16)
    if source_capacity is not None:
        unique.sort(key=lambda item: spread(item) & (source_capacity - 1))
    return sorted(unique, key=lambda item: spread(item) & (capacity - 1))  # stable: insertion order in a bin


@lru_cache(maxsize=8192)
def java_string_hash(s: str) -> int:
    """Java `String.hashCode()` as a signed 32-bit int (UTF-16 code units)."""
    h = 0
    if s.isascii():
        for ch in s.encode():
            h = (31 * h + ch) & 0xFFFFFFFF
    else:
        units = s.encode("utf-16-be")
        for i in range(0, len(units), 2):
            h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def tag_hash_code(tags: str | None) -> int:
    """The consume-queue tagsCode of a message (§7.8): hash of the TAGS string, 0 without a tag."""
    return java_string_hash(tags) if tags else 0


# --------------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------------
def decode_properties(text: str | bytes) -> dict[str, str]:
    """Parse `name\\x01value\\x02...` like Java 4.9.x: empty names/values dropped, later duplicates win."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode()
        except UnicodeDecodeError:
            raise ProtocolError("message properties are not valid UTF-8") from None
    out: dict[str, str] = {}
    if not text:
        return out
    for item in text.split(PROPERTY_SEPARATOR):
        i = item.find(NAME_VALUE_SEPARATOR)
        if 0 < i < len(item) - 1:
            out[item[:i]] = item[i + 1:]
    return out


def get_property(raw: bytes, name: bytes) -> str | None:
    """One property straight from a raw properties string (no full parse); same result as
    `decode_properties(raw).get(name)` for names that occur once."""
    key = name + b"\x01"
    i = raw.find(key)
    while i > 0 and raw[i - 1] != 2:  # a match inside another value: look further
        i = raw.find(key, i + 1)
    if i < 0:
        return None
    start = i + len(key)
    end = raw.find(b"\x02", start)
    value = raw[start:] if end < 0 else raw[start:end]
    return value.decode() if value else None


def remove_property(raw: bytes, name: bytes) -> bytes:
    """`raw` without the pair named `name` (and without a trailing separator)."""
    key = name + b"\x01"
    i = raw.find(key)
    while i > 0 and raw[i - 1] != 2:
        i = raw.find(key, i + 1)
    if i < 0:
        return raw.rstrip(b"\x02")
    end = raw.find(b"\x02", i)
    rest = b"" if end < 0 else raw[end + 1:]
    return (raw[:i] + rest).rstrip(b"\x02")


def encode_properties(props: dict[str, str] | None, trailing_separator: bool = False) -> str:
    """Java >= 4.9.1 writes no trailing 0x02; C++, Go and ali-ons write one (`trailing_separator`)."""
    if not props:
        return ""
    text = PROPERTY_SEPARATOR.join(f"{k}{NAME_VALUE_SEPARATOR}{v}" for k, v in props.items()
                                   if k and v is not None and v != "")
    return text + PROPERTY_SEPARATOR if trailing_separator and text else text


# --------------------------------------------------------------------------------------------------
# Stored record
# --------------------------------------------------------------------------------------------------
class MessageExt:
    """One stored message, as decoded from (or encoded to) its record bytes."""

    __slots__ = ("magic", "body_crc", "queue_id", "flag", "queue_offset", "commit_log_offset", "sys_flag",
                 "born_timestamp", "born_host", "born_port", "store_timestamp", "store_host", "store_port",
                 "reconsume_times", "prepared_transaction_offset", "body", "topic", "properties_raw",
                 "_properties", "store_size")

    def __init__(self, *, topic: str, body: bytes, queue_id: int = 0, flag: int = 0, queue_offset: int = 0,
                 commit_log_offset: int = 0, sys_flag: int = 0, born_timestamp: int = 0,
                 born_host: str = "127.0.0.1", born_port: int = 0, store_timestamp: int = 0,
                 store_host: str = "127.0.0.1", store_port: int = 0, reconsume_times: int = 0,
                 prepared_transaction_offset: int = 0, properties: dict[str, str] | None = None,
                 properties_raw: bytes | None = None, body_crc: int | None = None,
                 magic: int = MESSAGE_MAGIC_CODE) -> None:
        self.magic = magic
        self.topic = topic
        self.body = body
        self.queue_id = queue_id
        self.flag = flag
        self.queue_offset = queue_offset
        self.commit_log_offset = commit_log_offset
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.born_port = born_port
        self.store_timestamp = store_timestamp
        self.store_host = store_host
        self.store_port = store_port
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset
        if properties_raw is None:
            properties_raw = encode_properties(properties).encode()
        self.properties_raw = properties_raw
        self._properties = dict(properties) if properties is not None else None
        self.body_crc = (zlib.crc32(body) & 0x7FFFFFFF) if body_crc is None else body_crc
        self.store_size = 0

    # -- convenience --------------------------------------------------------------------------------
    @property
    def properties(self) -> dict[str, str]:
        if self._properties is None:
            self._properties = decode_properties(self.properties_raw)
        return self._properties

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> str | None:
        return self.properties.get(PROPERTY_KEYS)

    @property
    def offset_msg_id(self) -> str:
        return create_message_id(self.store_host, self.store_port, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        """What applications see as the message id: UNIQ_KEY if present, else the offset msgId."""
        return self.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or self.offset_msg_id

    def uncompressed_body(self) -> bytes:
        if self.sys_flag & MessageSysFlag.COMPRESSED:
            try:
                return zlib.decompress(self.body)
            except zlib.error as exc:
                raise ProtocolError(f"compressed message body does not inflate: {exc}") from None
        return self.body

    def __repr__(self) -> str:
        return (f"<MessageExt topic={self.topic!r} queue={self.queue_id} offset={self.queue_offset} "
                f"phy={self.commit_log_offset} body={len(self.body)}B props={self.properties!r}>")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageExt):
            return NotImplemented
        return self.encode() == other.encode()

    # -- codec --------------------------------------------------------------------------------------
    def encode(self) -> bytes:
        topic = self.topic.encode()
        props = self.properties_raw
        v2 = self.magic == MESSAGE_MAGIC_CODE_V2
        if len(props) > 32767:
            raise ProtocolError(f"properties of {len(props)} bytes exceed 32767")
        if len(topic) > (32767 if v2 else 127):
            raise ProtocolError(f"topic of {len(topic)} bytes is too long for this record version")
        sf = self.sys_flag
        fixed = _FIXED[(bool(sf & MessageSysFlag.BORNHOST_V6), bool(sf & MessageSysFlag.STOREHOSTADDRESS_V6))]
        born = pack_host(self.born_host)
        store = pack_host(self.store_host)
        if len(born) != (16 if sf & MessageSysFlag.BORNHOST_V6 else 4) or \
                len(store) != (16 if sf & MessageSysFlag.STOREHOSTADDRESS_V6 else 4):
            raise ProtocolError("host address family does not match the sysFlag IPv6 bits")
        total = fixed.size + len(self.body) + (2 if v2 else 1) + len(topic) + 2 + len(props)
        try:
            head = fixed.pack(total, self.magic, self.body_crc, self.queue_id, self.flag, self.queue_offset,
                              self.commit_log_offset, sf, self.born_timestamp, born, self.born_port,
                              self.store_timestamp, store, self.store_port, self.reconsume_times,
                              self.prepared_transaction_offset, len(self.body))
        except struct.error as exc:
            raise ProtocolError(f"cannot encode message: {exc}") from None
        tlen = _USHORT.pack(len(topic)) if v2 else bytes((len(topic),))
        return b"".join((head, self.body, tlen, topic, _USHORT.pack(len(props)), props))

    @classmethod
    def decode(cls, buf: bytes | bytearray | memoryview, pos: int = 0) -> Self:
        """Decode the record starting at `pos`; `store_size` tells where the next one starts."""
        n = len(buf)
        if n - pos < 91:
            raise ProtocolError(f"message record truncated: {n - pos} bytes, at least 91 needed")
        total, magic = _INT.unpack_from(buf, pos)[0], _INT.unpack_from(buf, pos + 4)[0]
        if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
            raise ProtocolError(f"bad message magic code {magic & 0xFFFFFFFF:#010x} at {pos}")
        if total < 91 or pos + total > n:
            raise ProtocolError(f"message record size {total} at {pos} does not fit the {n - pos} bytes left")
        (sf,) = _INT.unpack_from(buf, pos + POS_SYS_FLAG)
        fixed = _FIXED[(bool(sf & MessageSysFlag.BORNHOST_V6), bool(sf & MessageSysFlag.STOREHOSTADDRESS_V6))]
        end = pos + total
        if fixed.size + 3 > total:
            raise ProtocolError(f"message record size {total} is smaller than its fixed part")
        (_, _, crc, queue_id, flag, queue_offset, phy, _, born_ts, born, born_port, store_ts, store,
         store_port, reconsume, prepared, body_len) = fixed.unpack_from(buf, pos)
        p = pos + fixed.size
        v2 = magic == MESSAGE_MAGIC_CODE_V2
        if body_len < 0 or p + body_len + (2 if v2 else 1) > end:
            raise ProtocolError(f"message body length {body_len} exceeds the record")
        body = bytes(buf[p:p + body_len])
        p += body_len
        if v2:
            (tlen,) = _USHORT.unpack_from(buf, p)
            p += 2
        else:
            tlen = buf[p]
            p += 1
        if p + tlen + 2 > end:
            raise ProtocolError(f"message topic length {tlen} exceeds the record")
        try:
            topic = bytes(buf[p:p + tlen]).decode()
        except UnicodeDecodeError:
            raise ProtocolError("message topic is not valid UTF-8") from None
        p += tlen
        (plen,) = _USHORT.unpack_from(buf, p)
        p += 2
        if p + plen != end:
            raise ProtocolError(f"message record size {total} does not match its fields")
        msg = cls.__new__(cls)
        msg.magic = magic
        msg.body_crc = crc
        msg.queue_id = queue_id
        msg.flag = flag
        msg.queue_offset = queue_offset
        msg.commit_log_offset = phy
        msg.sys_flag = sf
        msg.born_timestamp = born_ts
        msg.born_host = unpack_host(born)
        msg.born_port = born_port
        msg.store_timestamp = store_ts
        msg.store_host = unpack_host(store)
        msg.store_port = store_port
        msg.reconsume_times = reconsume
        msg.prepared_transaction_offset = prepared
        msg.body = body
        msg.topic = topic
        msg.properties_raw = bytes(buf[p:end])
        msg._properties = None
        msg.store_size = total
        return msg


def record_properties(record: bytes | bytearray | memoryview) -> RawProperties:
    """The properties of one stored record (a SQL92 filter reads only a few of them), found without decoding the
    rest of the record and looked up without decoding the other properties; empty for a record too short."""
    (sf,) = _INT.unpack_from(record, POS_SYS_FLAG)
    p = _FIXED_SIZES[(sf & _BORN_V6) != 0, (sf & _STORE_V6) != 0]
    (body_len,) = _INT.unpack_from(record, p - 4)
    p += body_len
    if _INT.unpack_from(record, 4)[0] == MESSAGE_MAGIC_CODE_V2:
        (tlen,) = _USHORT.unpack_from(record, p)
        p += 2 + tlen
    else:
        p += 1 + record[p]
    if p + 2 > len(record):
        return RawProperties(b"")
    (plen,) = _USHORT.unpack_from(record, p)
    return RawProperties(bytes(record[p + 2:p + 2 + plen]))


_FIXED_SIZES = {key: st.size for key, st in _FIXED.items()}
_BORN_V6 = int(MessageSysFlag.BORNHOST_V6)  # plain ints: `int & IntFlag` runs Python-level code
_STORE_V6 = int(MessageSysFlag.STOREHOSTADDRESS_V6)
_SEP = PROPERTY_SEPARATOR.encode()
_NV = NAME_VALUE_SEPARATOR.encode()


class RawProperties(Mapping[str, str]):
    """A message's encoded properties (`name\x01value\x02...`) read as a mapping: `get` finds one name in the
    bytes (the last occurrence wins, as decoding them all would give) without decoding the others."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def get(self, name: str, default: Any = None) -> Any:
        raw = self.raw
        key = name.encode() + _NV
        i = raw.rfind(_SEP + key)
        if i >= 0:
            start = i + 1 + len(key)
        elif raw.startswith(key):
            start = len(key)
        else:
            return default
        end = raw.find(_SEP, start)
        return raw[start:end if end >= 0 else len(raw)].decode("utf-8", "replace")

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return str(value)

    def __iter__(self) -> Iterator[str]:
        return iter(decode_properties(self.raw))

    def __len__(self) -> int:
        return len(decode_properties(self.raw))


def iter_messages(buf: bytes | bytearray | memoryview) -> Iterator[MessageExt]:
    """Decode concatenated records (a PULL or QUERY body); raise `ProtocolError` on a malformed one."""
    pos = 0
    n = len(buf)
    while pos < n:
        msg = MessageExt.decode(buf, pos)
        pos += msg.store_size
        yield msg


def decode_messages(buf: bytes | bytearray | memoryview, *, strict: bool = True) -> list[MessageExt]:
    """All records of a PULL body. With `strict=False`, like the clients: stop at the first bad record."""
    out: list[MessageExt] = []
    try:
        for msg in iter_messages(buf):
            out.append(msg)
    except ProtocolError:
        if strict:
            raise
    return out


# --------------------------------------------------------------------------------------------------
# Batch body (SEND_BATCH_MESSAGE / batch=true), §7.6
# --------------------------------------------------------------------------------------------------
class BatchItem:
    """One message of a batch body: its user flag, body and own properties string."""

    __slots__ = ("flag", "body", "properties_raw", "magic", "body_crc")

    def __init__(self, body: bytes, properties: dict[str, str] | None = None, flag: int = 0, *,
                 properties_raw: bytes | None = None, magic: int = 0, body_crc: int = 0) -> None:
        self.flag = flag
        self.body = body
        self.properties_raw = encode_properties(properties).encode() if properties_raw is None \
            else properties_raw
        self.magic = magic
        self.body_crc = body_crc

    @property
    def properties(self) -> dict[str, str]:
        return decode_properties(self.properties_raw)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BatchItem) and all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __repr__(self) -> str:
        return f"<BatchItem flag={self.flag} body={len(self.body)}B props={self.properties!r}>"


_BATCH_HEAD = struct.Struct(">iiiii")  # total, magic, crc, flag, body length


def encode_batch(items: list[BatchItem]) -> bytes:
    parts = []
    for item in items:
        plen = len(item.properties_raw)
        if plen > 32767:
            raise ProtocolError(f"batch item properties of {plen} bytes exceed 32767")
        total = 22 + len(item.body) + plen
        parts.append(_BATCH_HEAD.pack(total, item.magic, item.body_crc, item.flag, len(item.body)))
        parts.append(item.body)
        parts.append(_USHORT.pack(plen))
        parts.append(item.properties_raw)
    return b"".join(parts)


def encode_batch_rows(bodies: list[bytes], properties_raw: list[bytes]) -> bytes:
    """`encode_batch` of items of flag 0 given as two columns: no `BatchItem` per row (the bulk producers')."""
    parts: list[bytes] = []
    head, ushort = _BATCH_HEAD.pack, _USHORT.pack
    for body, props in zip(bodies, properties_raw, strict=True):
        plen = len(props)
        if plen > 32767:
            raise ProtocolError(f"batch item properties of {plen} bytes exceed 32767")
        bl = len(body)
        parts += (head(22 + bl + plen, 0, 0, 0, bl), body, ushort(plen), props)
    return b"".join(parts)


def iter_batch(buf: bytes) -> Iterator[tuple[int, bytes, bytes]]:
    """(flag, body, properties) of each batch item, validated like `decode_batch` (hot path: no objects)."""
    pos = 0
    n = len(buf)
    unpack = _BATCH_HEAD.unpack_from
    if n == 0:
        raise ProtocolError("empty batch body", java=NULL_BATCH_BODY)
    while pos < n:
        if n - pos < 22:  # 4.9.8 reads five ints first: fewer than 20 bytes end inside one
            raise ProtocolError(f"batch item truncated at {pos}: {n - pos} bytes, at least 22 needed",
                                java=BUFFER_UNDERFLOW if n - pos < 20 else None)
        total, _, _, flag, body_len = unpack(buf, pos)
        end = pos + total
        if total < 22 or end > n or body_len < 0 or 22 + body_len > total:
            raise ProtocolError(f"batch item at {pos} (size {total}, body {body_len}) does not fit the body")
        p = pos + 20 + body_len
        plen = (buf[p] << 8) | buf[p + 1]
        if p + 2 + plen != end:
            raise ProtocolError(f"batch item size {total} does not match its fields")
        yield flag, buf[pos + 20:p], buf[p + 2:end]
        pos = end


def decode_batch(buf: bytes | bytearray | memoryview) -> list[BatchItem]:
    out: list[BatchItem] = []
    pos = 0
    n = len(buf)
    while pos < n:
        if n - pos < 22:
            raise ProtocolError(f"batch item truncated at {pos}: {n - pos} bytes, at least 22 needed")
        total, magic, crc, flag, body_len = _BATCH_HEAD.unpack_from(buf, pos)
        if total < 22 or pos + total > n:
            raise ProtocolError(f"batch item size {total} at {pos} does not fit the {n - pos} bytes left")
        if body_len < 0 or 20 + body_len + 2 > total:
            raise ProtocolError(f"batch item body length {body_len} exceeds the item size {total}")
        p = pos + 20
        body = bytes(buf[p:p + body_len])
        p += body_len
        (plen,) = _USHORT.unpack_from(buf, p)
        p += 2
        if p + plen != pos + total:
            raise ProtocolError(f"batch item size {total} does not match its fields")
        out.append(BatchItem(body, flag=flag, properties_raw=bytes(buf[p:p + plen]), magic=magic, body_crc=crc))
        pos += total
    if not out:
        raise ProtocolError("empty batch body")
    return out
