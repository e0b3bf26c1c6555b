"""Helpers shared by the store tests and the crash-test writer process (imported as a plain module)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rocketmq_emulator.protocol.message import MessageExt, tag_hash_code  # noqa: E402
from rocketmq_emulator.store import MessageExtBrokerInner, MessageStoreConfig  # noqa: E402

T0 = 1_700_000_000_000  # a fixed epoch for fake clocks


class Clock:
    """An injectable store clock (ms) that only moves when told to."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int = 1) -> int:
        self.now += ms
        return self.now


def small_config(root, **kw) -> MessageStoreConfig:
    """Tiny segments so that rolling, expiry and index rolls happen with a few messages."""
    base = dict(store_path_root_dir=str(root), mapped_file_size_commit_log=4096,
                mapped_file_size_consume_queue=20 * 16, max_hash_slot_num=64, max_index_num=256,
                preallocate_mapped_file=False, store_host="10.0.0.7", store_port=10911)
    base.update(kw)
    return MessageStoreConfig(**base)


def make_msg(topic: str = "TopicA", queue_id: int = 0, body: bytes = b"hello", *, tags: str | None = None,
             keys: str | None = None, uniq: str | None = None, props: dict | None = None,
             **kw) -> MessageExtBrokerInner:
    p = dict(props or {})
    if tags is not None:
        p["TAGS"] = tags
    if keys is not None:
        p["KEYS"] = keys
    if uniq is not None:
        p["UNIQ_KEY"] = uniq
    kw.setdefault("born_timestamp", T0 - 5)
    kw.setdefault("born_port", 54321)
    return MessageExtBrokerInner.build(topic, queue_id, body, p, born_host=kw.pop("born_host", "192.168.1.2"), **kw)


def expected_record(msg: MessageExtBrokerInner, *, queue_offset: int, phy: int, store_ts: int,
                    config: MessageStoreConfig) -> bytes:
    """The record the store must have written, encoded by the protocol codec (independent of the store)."""
    from rocketmq_emulator.protocol.message import unpack_host
    sys_flag = msg.sys_flag & ~0x30
    if len(msg.born_host) == 16:
        sys_flag |= 0x10
    if ":" in config.store_host:
        sys_flag |= 0x20
    return MessageExt(topic=msg.topic, body=msg.body, queue_id=msg.queue_id, flag=msg.flag,
                      queue_offset=queue_offset, commit_log_offset=phy, sys_flag=sys_flag,
                      born_timestamp=msg.born_timestamp, born_host=unpack_host(msg.born_host),
                      born_port=msg.born_port, store_timestamp=store_ts, store_host=config.store_host,
                      store_port=config.store_port, reconsume_times=msg.reconsume_times,
                      prepared_transaction_offset=msg.prepared_transaction_offset,
                      properties_raw=msg.properties_raw).encode()


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def tags_code(props: dict) -> int:
    return tag_hash_code(props.get("TAGS"))
