"""MessageStoreConfig (RocketMQ property names, defaults) and MessageExtBrokerInner helpers."""

from __future__ import annotations

import os

from rocketmq_emulator.protocol.message import tag_hash_code
from rocketmq_emulator.store import FlushDiskType, MessageExtBrokerInner, MessageStoreConfig


def test_defaults_are_rocketmq_defaults(tmp_path):
    cfg = MessageStoreConfig(store_path_root_dir=str(tmp_path))
    assert cfg.mapped_file_size_commit_log == 1024 ** 3
    assert cfg.mapped_file_size_consume_queue == 300_000 * 20
    assert (cfg.file_reserved_time, cfg.delete_when, cfg.disk_max_used_space_ratio) == (72, "04", 75)
    assert cfg.flush_disk_type is FlushDiskType.ASYNC_FLUSH
    assert (cfg.max_transfer_bytes_on_message_in_memory, cfg.max_transfer_count_on_message_in_memory) == (262144, 32)
    assert (cfg.max_transfer_bytes_on_message_in_disk, cfg.max_transfer_count_on_message_in_disk) == (65536, 8)
    assert (cfg.max_hash_slot_num, cfg.max_index_num) == (5_000_000, 20_000_000)
    assert cfg.total_physical_memory_size is None  # everything "in memory": deterministic
    assert cfg.commit_log_dir == os.path.join(str(tmp_path), "commitlog")
    assert cfg.consume_queue_dir == os.path.join(str(tmp_path), "consumequeue")


def test_inner_message_build_and_keys():
    m = MessageExtBrokerInner.build("T", 1, b"x", {"TAGS": "TagA", "KEYS": "a b  c", "UNIQ_KEY": "U1"})
    assert m.tags_code == tag_hash_code("TagA") == 2598919
    assert m.keys == ["a", "b", "c", "U1"]
    assert m.born_host == b"\x7f\x00\x00\x01"
    raw = MessageExtBrokerInner("T", 1, b"x", properties_raw=m.properties_raw)
    assert raw.keys is None and raw.index_keys() == ["a", "b", "c", "U1"]
    assert MessageExtBrokerInner("T", 1, b"x").index_keys() == ()
