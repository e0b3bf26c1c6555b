"""MessageExtBrokerInner: the message the broker hands to ``MessageStore.put_message`` / ``put_messages``.

The broker builds it completely: final properties string (``properties_raw``), ``tags_code`` (hash of TAGS, or
the delivery time for SCHEDULE_TOPIC_XXXX, so the store never recomputes it), born host as packed bytes
(4 or 16) and the keys to index. The store assigns queue offset, commitlog offset, store timestamp, store host
and body CRC. ``keys`` = KEYS tokens + UNIQ_KEY; when left ``None`` they are parsed from ``properties_raw``.
The IPv6 bits of ``sys_flag`` are set by the store from the host lengths.
"""

from __future__ import annotations

from typing import Any

from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.message import (KEY_SEPARATOR, PROPERTY_KEYS, PROPERTY_TAGS,
                                                PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, decode_properties,
                                                encode_properties, pack_host, tag_hash_code)


class MessageExtBrokerInner:
    # The native lane makes instances without calling __init__ (native/_lane.c lane_new_inner: allocated, then its
    # 13 arguments set as these attributes, in this order): __init__ must stay plain assignments.
    __slots__ = ("topic", "queue_id", "body", "flag", "properties_raw", "tags_code", "sys_flag", "born_timestamp",
                 "born_host", "born_port", "reconsume_times", "prepared_transaction_offset", "keys")

    def __init__(self, topic: str, queue_id: int, body: bytes, flag: int = 0, properties_raw: bytes = b"",
                 tags_code: int = 0, sys_flag: int = 0, born_timestamp: int = 0, born_host: bytes = b"\x7f\0\0\x01",
                 born_port: int = 0, reconsume_times: int = 0, prepared_transaction_offset: int = 0,
                 keys: list[str] | tuple[str, ...] | None = None) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.body = body
        self.flag = flag
        self.properties_raw = properties_raw
        self.tags_code = tags_code
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.born_port = born_port
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset
        self.keys = keys

    @classmethod
    def build(cls, topic: str, queue_id: int, body: bytes, properties: dict[str, str] | None = None, *,
              born_host: str | bytes = "127.0.0.1", **kw: Any) -> "MessageExtBrokerInner":
        """Convenience for tests and tools: properties as a dict; tags code and keys derived from them."""
        props = properties or {}
        host = pack_host(born_host) if isinstance(born_host, str) else born_host
        kw.setdefault("tags_code", tag_hash_code(props.get(PROPERTY_TAGS)))
        return cls(topic, queue_id, body, properties_raw=encode_properties(props).encode(), born_host=host,
                   keys=keys_of(props), **kw)

    @classmethod
    def rebuilt(cls, msg: Any, topic: str, queue_id: int, props: dict[str, str], *,
                reconsume_times: int | None = None) -> "MessageExtBrokerInner":
        """A stored message (a decoded MessageExt) put again into `topic`/`queue_id` with `props` (a delayed or
        timed message due, a POP message revived or moved to the DLQ): body, flag, born time and host kept, the
        store-host bits of the system flag cleared, tags code and keys from `props`."""
        return cls(topic, queue_id, msg.body, flag=msg.flag, properties_raw=encode_properties(props).encode(),
                   tags_code=tag_hash_code(props.get(PROPERTY_TAGS)), sys_flag=msg.sys_flag & ~0x30,
                   born_timestamp=msg.born_timestamp, born_host=pack_host(msg.born_host), born_port=msg.born_port,
                   reconsume_times=msg.reconsume_times if reconsume_times is None else reconsume_times,
                   keys=keys_of(props))

    def index_keys(self) -> list[str] | tuple[str, ...]:
        if self.keys is None:
            try:
                self.keys = keys_of(decode_properties(self.properties_raw)) if self.properties_raw else ()
            except ProtocolError:  # not UTF-8: nothing to index
                self.keys = ()
        return self.keys

    def __repr__(self) -> str:
        return f"<MessageExtBrokerInner {self.topic}/{self.queue_id} body={len(self.body)}B>"


def keys_of(props: dict[str, str]) -> list[str]:
    """The keys RocketMQ indexes for a message: each KEYS token, then UNIQ_KEY."""
    out = [k for k in props.get(PROPERTY_KEYS, "").split(KEY_SEPARATOR) if k]
    uniq = props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    if uniq:
        out.append(uniq)
    return out
