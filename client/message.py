"""Messages as the application sees them: `Message` to send, `ReceivedMessage` consumed, and the client's
unique message ids (UNIQ_KEY, reference §7.5, §7.7)."""

from __future__ import annotations

import datetime as _dt
import itertools
import os
import random
import struct
import time
import zlib
from typing import Any, Iterable, Mapping

from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.codes import MessageSysFlag
from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.message import (PROPERTY_DELAY_TIME_LEVEL, PROPERTY_KEYS, PROPERTY_RETRY_TOPIC,
                                                PROPERTY_TAGS, PROPERTY_WAIT_STORE_MSG_OK, MessageExt,
                                                encode_batch_rows, pack_host)

from .errors import InvalidArgumentError

__all__ = ["Message", "ReceivedMessage", "MessageQueue", "new_unique_id", "decode_received"]

#: properties the client or broker set themselves; a user property with one of these names is refused
RESERVED_PROPERTIES = frozenset({
    "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID", "TRAN_MSG", "PGROUP", "MIN_OFFSET",
    "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG", "CORRECTION_FLAG", "MQ2_FLAG",
    "RECONSUME_TIME", "MSG_REGION", "TRACE_ON", "UNIQ_KEY", "MAX_RECONSUME_TIMES", "CONSUME_START_TIME",
    "TRAN_PREPARED_QUEUE_OFFSET", "TRANSACTION_CHECK_TIMES", "CHECK_IMMUNITY_TIME_IN_SECONDS", "CLUSTER",
})


class Message:
    """A message to send. `body` is bytes (str is UTF-8 encoded); `keys` one key or several."""

    __slots__ = ("topic", "body", "flag", "properties")

    def __init__(self, topic: str, body: bytes | str, *, tags: str | None = None,
                 keys: str | Iterable[str] | None = None, properties: Mapping[str, str] | None = None,
                 delay_level: int = 0, flag: int = 0, wait_store_msg_ok: bool = True) -> None:
        self.topic = topic
        if isinstance(body, str):
            body = body.encode()
        elif not isinstance(body, (bytes, bytearray, memoryview)):
            raise InvalidArgumentError(f"message body must be bytes or str, not {type(body).__name__}")
        if not body:
            raise InvalidArgumentError("message body is empty; the broker refuses empty messages")
        self.body = bytes(body)
        self.flag = flag
        props: dict[str, str] = {}
        if properties:
            for k, v in properties.items():
                if k in RESERVED_PROPERTIES:
                    raise InvalidArgumentError(f"property name {k!r} is reserved by RocketMQ; use tags=, keys= "
                                               f"or delay_level= for it, or pick another name")
                if not k or v is None or v == "":
                    raise InvalidArgumentError(f"property {k!r}: names and values must be non-empty")
                props[str(k)] = str(v)
        if tags:
            props[PROPERTY_TAGS] = tags
        if keys:
            props[PROPERTY_KEYS] = keys if isinstance(keys, str) else " ".join(keys)
        if delay_level:
            if not 0 < delay_level:
                raise InvalidArgumentError(f"delay_level {delay_level} must be positive (1 = the broker's first "
                                           f"level, 1 s by default)")
            props[PROPERTY_DELAY_TIME_LEVEL] = str(delay_level)
        props[PROPERTY_WAIT_STORE_MSG_OK] = "true" if wait_store_msg_ok else "false"
        self.properties = props

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> str | None:
        return self.properties.get(PROPERTY_KEYS)

    def __repr__(self) -> str:
        return f"<Message topic={self.topic!r} body={len(self.body)}B props={self.properties!r}>"


class ReceivedMessage(MessageExt):
    """A consumed message: a `protocol.message.MessageExt` (topic, body, properties, tags, keys, msg_id,
    queue_id, queue_offset, reconsume_times, born/store timestamps and hosts, ...) plus `broker_name` and the
    `message_queue` it was pulled from. For a message redelivered through `%RETRY%<group>`, `topic` is the
    original topic again (as in Java) while `message_queue` names the retry queue. The body is uncompressed."""

    __slots__ = ("broker_name", "message_queue", "_pq")
    broker_name: str
    message_queue: MessageQueue
    _pq: object | None  # the ProcessQueue holding it while it is consumed (process_queue.py imports this module)

    @property
    def queue(self) -> MessageQueue:
        return self.message_queue

    def uncompressed_body(self) -> bytes:
        return self.body

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (invalid bytes replaced)."""
        return self.body.decode("utf-8", "replace")

    def __repr__(self) -> str:
        return (f"<ReceivedMessage topic={self.topic!r} queue={self.broker_name}:{self.queue_id} "
                f"offset={self.queue_offset} msg_id={self.msg_id} reconsume_times={self.reconsume_times} "
                f"body={len(self.body)}B>")


def decode_received(body: bytes, mq: MessageQueue, retry_topic: str | None = None) -> list[ReceivedMessage]:
    """Decode a PULL body like the Java client: stop at a malformed record, inflate compressed bodies,
    restore the topic of messages pulled from the group's retry topic."""
    msgs: list[ReceivedMessage] = []
    pos, n = 0, len(body)
    decode = ReceivedMessage.decode
    while pos < n:
        try:
            m = decode(body, pos)
        except ProtocolError:
            break
        pos += m.store_size
        msgs.append(m)
    broker = mq.broker_name
    for m in msgs:
        m.broker_name = broker
        m.message_queue = mq
        m._pq = None
        if m.sys_flag & MessageSysFlag.COMPRESSED:
            try:
                m.body = zlib.decompress(m.body)
            except zlib.error:
                pass
        if retry_topic is not None and m.topic == retry_topic:
            original = m.properties.get(PROPERTY_RETRY_TOPIC)
            if original:
                m.topic = original
    return msgs


# --------------------------------------------------------------------------------------------------
# Unique message ids (UNIQ_KEY): ip(4) + pid(2) + random(4) + ms since month start(4) + counter(2)
# --------------------------------------------------------------------------------------------------
class _UniqueIdGenerator:
    def __init__(self) -> None:
        self.prefix = ""
        self._counter = itertools.count(random.randrange(1 << 16))
        self._month_start_ms = 0
        self._next_month_ms = 0
        self.reset("127.0.0.1")

    def reset(self, ip: str) -> None:
        try:
            raw = pack_host(ip)
        except Exception:  # noqa: BLE001 - any unusable address gives a random one
            raw = os.urandom(4)
        if len(raw) != 4:
            raw = raw[-4:]
        self.prefix = (raw + struct.pack(">HI", os.getpid() & 0xFFFF, random.getrandbits(32))).hex().upper()

    def _roll_month(self, now_ms: int) -> None:
        now = _dt.datetime.fromtimestamp(now_ms / 1000)
        start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        nxt = (start + _dt.timedelta(days=32)).replace(day=1)
        self._month_start_ms = int(start.timestamp() * 1000)
        self._next_month_ms = int(nxt.timestamp() * 1000)

    def next(self) -> str:
        now_ms = time.time_ns() // 1_000_000
        if now_ms >= self._next_month_ms:
            self._roll_month(now_ms)
        return "%s%08X%04X" % (self.prefix, (now_ms - self._month_start_ms) & 0xFFFFFFFF,
                               next(self._counter) & 0xFFFF)

    def many(self, n: int) -> list[str]:
        """`n` ids at once (one clock read): the batch producer's column path."""
        now_ms = time.time_ns() // 1_000_000
        if now_ms >= self._next_month_ms:
            self._roll_month(now_ms)
        head = "%s%08X" % (self.prefix, (now_ms - self._month_start_ms) & 0xFFFFFFFF)
        counter = self._counter
        return [f"{head}{next(counter) & 0xFFFF:04X}" for _ in range(n)]


_ids = _UniqueIdGenerator()
new_unique_id = _ids.next
new_unique_ids = _ids.many

def encode_batch_columns(bodies: list[Any], tags: list[Any] | None = None, keys: list[Any] | None = None,
                         properties: list[Any] | None = None) -> tuple[bytes, list[str], int]:
    """The SEND_BATCH_MESSAGE body for rows given as columns (the Spark writer's path): one item per body with
    its TAGS, KEYS, user properties (checked as `Message` checks them), WAIT and a fresh UNIQ_KEY, without a
    `Message` per row. Returns (body, unique ids, total body bytes)."""
    n = len(bodies)
    ids = new_unique_ids(n)
    encoded: list[bytes] = []
    props_raw: list[bytes] = []
    total = 0
    for i in range(n):
        body = bodies[i]
        if type(body) is not bytes:  # (bytes first: no isinstance chain for the common row)
            if isinstance(body, str):
                body = body.encode()
            elif isinstance(body, (bytes, bytearray, memoryview)):
                body = bytes(body)
            else:
                raise InvalidArgumentError(f"message body must be bytes or str, not {type(body).__name__}")
        if not body:
            raise InvalidArgumentError("message body is empty; the broker refuses empty messages")
        props = ""
        if properties is not None and properties[i]:
            user = Message("-", b"-", properties=dict(properties[i])).properties  # the same checks
            del user[PROPERTY_WAIT_STORE_MSG_OK]
            props = "".join(f"{k}\x01{v}\x02" for k, v in user.items())
        if tags is not None and tags[i]:
            props += f"TAGS\x01{tags[i]}\x02"
        if keys is not None and keys[i]:
            props += f"KEYS\x01{keys[i]}\x02"
        total += len(body)
        encoded.append(body)
        props_raw.append(f"{props}WAIT\x01true\x02UNIQ_KEY\x01{ids[i]}".encode())
    try:
        return encode_batch_rows(encoded, props_raw), ids, total
    except ProtocolError as exc:  # a properties string over 32767 bytes
        raise InvalidArgumentError(str(exc)) from None


def set_unique_id_ip(ip: str) -> None:
    _ids.reset(ip)


def timestamp_ms(value: Any) -> int:
    """ms since the epoch from an int/float (ms), a `datetime`, or a `yyyyMMddHHmmss` string (local time)."""
    if isinstance(value, _dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str) and len(value) == 14 and value.isdigit():
        return int(_dt.datetime.strptime(value, "%Y%m%d%H%M%S").timestamp() * 1000)
    raise InvalidArgumentError(f"timestamp {value!r}: give ms since the epoch, a datetime, or yyyyMMddHHmmss")
