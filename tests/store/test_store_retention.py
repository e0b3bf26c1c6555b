"""Retention (§8.5) and min-offset correction (§8.4, seed 001)."""

from __future__ import annotations

import os
import time

from rocketmq_emulator.protocol.message import MessageExt
from rocketmq_emulator.store import GetMessageStatus, MessageStore, PutMessageStatus
from store_testlib import Clock, make_msg, small_config

HOUR = 3600 * 1000


def local_ms(hour: int, minute: int = 30, day: int = 10) -> int:
    return int(time.mktime((2024, 1, day, hour, minute, 0, 0, 0, -1)) * 1000)


def fill(store, clock, n, topic="A", queue_id=0, body_size=300, step_ms=1):
    out = []
    for _ in range(n):
        out.append(store.put_message(make_msg(topic, queue_id, os.urandom(body_size))))
        clock.advance(step_ms)
    return out


def first_kept_unit(puts, phy_min):
    return next(r.logics_offset for r in puts if r.wrote_offset >= phy_min)


def test_min_offset_after_expire_now_is_the_first_kept_unit(open_store, clock):
    store = open_store()
    puts_a, puts_b = [], []
    for _ in range(40):  # A and B interleaved across ~7 segments
        puts_a += fill(store, clock, 1, "A")
        puts_b += fill(store, clock, 1, "B", body_size=200)
    assert store.get_min_offset_in_queue("A", 0) == 0  # a young queue: min 0 (seed 001: new groups start at 0)
    assert store.expire_files_now(count=1) == 1
    phy_min = store.commitlog_min_offset
    assert phy_min == store.config.mapped_file_size_commit_log
    assert store.get_min_offset_in_queue("A", 0) == first_kept_unit(puts_a, phy_min) > 0
    assert store.get_min_offset_in_queue("B", 0) == first_kept_unit(puts_b, phy_min) > 0
    assert store.expire_files_now(count=2) == 2
    phy_min = store.commitlog_min_offset
    assert store.get_min_offset_in_queue("A", 0) == first_kept_unit(puts_a, phy_min)
    min_a = store.get_min_offset_in_queue("A", 0)
    r = store.get_message("G", "A", 0, 0)
    assert (r.status, r.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, min_a)
    assert store.get_earliest_message_time("A", 0) == puts_a[min_a].store_timestamp
    assert MessageExt.decode(store.get_message("G", "A", 0, min_a).messages[0]).commit_log_offset >= phy_min


def test_consume_queue_files_wholly_below_the_commitlog_minimum_are_deleted(open_store, clock):
    store = open_store()
    puts = fill(store, clock, 80, body_size=150)  # 80 units = 5 CQ files of 16
    cq = store.find_consume_queue("A", 0)
    assert len(cq.queue.files) == 5
    store.expire_files_now(count=4)
    phy_min = store.commitlog_min_offset
    min_a = store.get_min_offset_in_queue("A", 0)
    assert min_a == first_kept_unit(puts, phy_min)
    first_cq = cq.queue.files[0].file_from_offset // 20
    assert first_cq <= min_a < first_cq + 16  # the file holding the first kept unit is the first one left
    for mf in cq.queue.files[1:]:
        assert mf.file_from_offset // 20 > min_a
    names = sorted(os.listdir(os.path.join(store.config.consume_queue_dir, "A", "0")))
    assert names == [f"{mf.file_from_offset:020d}" for mf in cq.queue.files]


def test_expire_by_time_and_never_the_active_segment(open_store, clock):
    store = open_store()
    fill(store, clock, 20, step_ms=1000)
    cutoff = clock.now
    fill(store, clock, 20, step_ms=1000)
    files_before = len(store.commitlog.queue.files)
    deleted = store.expire_files_now(older_than_ms=cutoff)
    assert 0 < deleted < files_before
    # every deleted segment held only messages older than the cutoff; the first kept one holds a newer one
    nxt = store.commitlog.queue.files[1] if len(store.commitlog.queue.files) > 1 else None
    last_write = store.commitlog.pickup_store_timestamp(nxt.file_from_offset, 64) if nxt else clock.now
    assert last_write >= cutoff
    n = len(store.commitlog.queue.files)
    assert store.expire_files_now() == n - 1
    assert len(store.commitlog.queue.files) == 1
    assert store.expire_files_now() == 0
    assert store.put_message(make_msg()).is_ok()


def test_clean_expired_files_at_delete_when_hour_after_reserved_time(tmp_path):
    clock = Clock(local_ms(10, day=10))
    store = MessageStore(small_config(tmp_path, delete_when="04;05"), clock=clock).start()
    try:
        store.cleaner.disk_ratio = lambda path: 0.10
        fill(store, clock, 40)
        n_files = len(store.commitlog.queue.files)
        assert store.clean_expired_files(local_ms(4, day=11)) == 0  # 04:30 but only ~18 h old
        assert store.clean_expired_files(local_ms(10, day=14)) == 0  # old enough, but 10:30
        assert store.clean_expired_files(local_ms(5, day=14)) == n_files - 1  # 05:30, > 72 h: all but the last
        assert len(store.commitlog.queue.files) == 1
    finally:
        store.stop()


def test_at_most_delete_file_batch_max_per_run(tmp_path):
    clock = Clock(local_ms(10, day=10))
    store = MessageStore(small_config(tmp_path, delete_file_batch_max=3), clock=clock).start()
    try:
        store.cleaner.disk_ratio = lambda path: 0.10
        fill(store, clock, 100)
        assert len(store.commitlog.queue.files) > 7
        assert store.clean_expired_files(local_ms(4, day=20)) == 3
        assert store.clean_expired_files(local_ms(4, day=20)) == 3
    finally:
        store.stop()


def test_manual_delete_arms_twenty_runs(tmp_path):
    clock = Clock(local_ms(10, day=10))
    store = MessageStore(small_config(tmp_path, delete_file_batch_max=1), clock=clock).start()
    try:
        store.cleaner.disk_ratio = lambda path: 0.10
        fill(store, clock, 100, body_size=1500)
        files = len(store.commitlog.queue.files)
        assert files > 22
        late = local_ms(12, day=20)
        assert store.clean_expired_files(late) == 0
        store.execute_delete_files_manually()
        assert sum(store.clean_expired_files(late) for _ in range(25)) == 20
        assert len(store.commitlog.queue.files) == files - 20
    finally:
        store.stop()


def test_manual_delete_still_respects_reserved_time(tmp_path):
    clock = Clock(local_ms(10, day=10))
    store = MessageStore(small_config(tmp_path), clock=clock).start()
    try:
        store.cleaner.disk_ratio = lambda path: 0.10
        fill(store, clock, 40)
        store.execute_delete_files_manually()
        assert store.clean_expired_files(local_ms(12, day=10)) == 0
    finally:
        store.stop()


def test_disk_space_guard(tmp_path):
    clock = Clock(local_ms(10, day=10))
    store = MessageStore(small_config(tmp_path), clock=clock).start()
    try:
        fill(store, clock, 40)
        n = len(store.commitlog.queue.files)
        store.cleaner.disk_ratio = lambda path: 0.80  # > 75 %: delete expired files whatever the hour
        assert store.clean_expired_files(local_ms(12, day=10)) == 0  # nothing is 72 h old
        assert store.clean_expired_files(local_ms(12, day=14)) == n - 1
        fill(store, clock, 40)
        n = len(store.commitlog.queue.files)
        store.cleaner.disk_ratio = lambda path: 0.87  # > 85 %: clean immediately, expired or not
        assert store.clean_expired_files(clock.now) == min(n - 1, 10)
        store.cleaner.disk_ratio = lambda path: 0.95  # > 90 %: refuse messages
        store.clean_expired_files(clock.now)
        assert not store.writable
        assert store.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.get_message("G", "A", 0, store.get_min_offset_in_queue("A", 0)).status is \
            GetMessageStatus.FOUND  # reads still work
        store.cleaner.disk_ratio = lambda path: 0.50
        store.clean_expired_files(clock.now)
        assert store.writable and store.put_message(make_msg()).is_ok()
    finally:
        store.stop()


def test_index_files_below_the_minimum_are_deleted(open_store, clock):
    store = open_store(max_index_num=16, max_hash_slot_num=8)
    for i in range(60):
        store.put_message(make_msg("A", 0, os.urandom(300), keys=f"k{i}"))
        clock.advance(1)
    store.flush()
    n_index = len(store.index.files)
    assert n_index > 3
    store.expire_files_now(count=5)
    assert 0 < len(store.index.files) < n_index
    assert all(f.end_phy_offset >= store.commitlog_min_offset for f in store.index.files)
    assert store.query_message("A", "k0").messages == []  # expired
    assert len(store.query_message("A", "k59").messages) == 1


def test_min_offset_survives_restart(tmp_path, clock):
    cfg = small_config(tmp_path)
    with MessageStore(cfg, clock=clock) as store:
        puts = fill(store, clock, 50)
        store.expire_files_now(count=3)
        min_a = store.get_min_offset_in_queue("A", 0)
        assert min_a == first_kept_unit(puts, store.commitlog_min_offset)
    with MessageStore(cfg, clock=clock) as store:
        assert store.recovery.mode == "normal"
        assert store.get_min_offset_in_queue("A", 0) == min_a
        assert store.get_max_offset_in_queue("A", 0) == 50
