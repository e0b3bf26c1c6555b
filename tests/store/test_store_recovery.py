"""Recovery (§8.6): clean restart without a scan, abnormal restart, torn and corrupt tails, consume-queue repair."""

from __future__ import annotations

import os

import pytest

from rocketmq_emulator.protocol.message import MessageExt
from rocketmq_emulator.store import GetMessageStatus, MessageStore, StoreLoadError
from rocketmq_emulator.store.commitlog import CommitLog
from store_testlib import make_msg, small_config


def fill(store, clock, n, topic="A", queue_id=0, size=200, **kw):
    out = []
    for i in range(n):
        out.append(store.put_message(make_msg(topic, queue_id, os.urandom(size), keys=f"{topic}-{i}", **kw)))
        clock.advance(1)
    return out


def all_records(store):
    return [(phy, bytes(data)) for phy, data in store.commitlog.iter_records(store.commitlog_min_offset)]


def assert_consistent(store):
    """Every record is dispatched to its queue at its queue offset, and queues hold nothing else."""
    expected = {}
    end = store.commitlog_min_offset
    for phy, data in all_records(store):
        m = MessageExt.decode(data)
        expected.setdefault((m.topic, m.queue_id), []).append((m.queue_offset, phy, len(data)))
        end = phy + len(data)
    assert store.commitlog.scan_end >= end
    for (topic, qid), units in expected.items():
        cq = store.find_consume_queue(topic, qid)
        assert cq.max_offset_in_queue == units[-1][0] + 1
        for qo, phy, size in units:
            assert cq.get_unit(qo)[:2] == (phy, size)
    for cq in store.consume_queues():
        assert (cq.topic, cq.queue_id) in expected or cq.max_offset_in_queue == cq.min_offset_in_queue


def test_clean_restart_trusts_the_checkpoint_and_does_not_scan(tmp_path, clock, monkeypatch):
    cfg = small_config(tmp_path)
    with MessageStore(cfg, clock=clock) as store:
        puts = fill(store, clock, 50) + fill(store, clock, 7, "B", 3)
        records = all_records(store)
    assert not os.path.exists(cfg.abort_path)

    def no_scan(*a, **k):
        raise AssertionError("the scan path was taken")

    monkeypatch.setattr(CommitLog, "scan", no_scan)
    with MessageStore(cfg, clock=clock) as store:
        assert store.recovery.mode == "normal" and store.recovery.scanned_records == 0
        assert os.path.exists(cfg.abort_path)
        assert store.commitlog_max_offset == puts[-1].wrote_offset + puts[-1].wrote_bytes
        assert (store.get_max_offset_in_queue("A", 0), store.get_max_offset_in_queue("B", 3)) == (50, 7)
        clock.now -= 10_000  # the clock went backwards: store time stays monotonic
        r = store.put_message(make_msg("A", 0, b"next"))
        assert r.logics_offset == 50 and r.store_timestamp == puts[-1].store_timestamp
        assert len(store.query_message("A", "A-3").messages) == 1
        monkeypatch.undo()
        assert all_records(store)[:-1] == records


def test_abnormal_restart_scans_from_the_checkpoint(tmp_path, clock):
    cfg = small_config(tmp_path)
    store = MessageStore(cfg, clock=clock).start()
    fill(store, clock, 20)
    store.flush()  # checkpoint: everything so far confirmed
    confirmed = store.commitlog_max_offset
    fill(store, clock, 9)
    records = all_records(store)
    store.stop(clean=False)  # like a kill: no checkpoint, abort file left
    assert os.path.exists(cfg.abort_path)
    with MessageStore(cfg, clock=clock) as store:
        rec = store.recovery
        assert (rec.mode, rec.scan_start_offset, rec.scanned_records) == ("abnormal", confirmed, 9)
        assert all_records(store) == records
        assert_consistent(store)
        assert store.put_message(make_msg("A")).logics_offset == 29
        assert len(store.query_message("A", "A-5").messages) == 2  # one before, one after the checkpoint


def corrupt_tail(store, how):
    """Append one record, then damage it the way a killed writer (or a bad disk) would."""
    end = store.commitlog_max_offset
    r = store.put_message(make_msg("A", 0, b"tail-record" * 20, keys="torn"))
    assert r.wrote_offset == end
    mf = store.commitlog.queue.find_mapped_file_by_offset(end)
    pos = end - mf.file_from_offset
    mm = mf.mm
    if how == "size-zero":  # killed before TOTALSIZE was stored
        mm[pos:pos + 4] = bytes(4)
    elif how == "size-partial":  # killed in the middle of storing TOTALSIZE (low byte written first)
        mm[pos:pos + 3] = bytes(3)
    elif how == "half-written":  # killed in the middle of the copy
        mm[pos + r.wrote_bytes // 2:pos + r.wrote_bytes] = bytes(r.wrote_bytes - r.wrote_bytes // 2)
    elif how == "bad-crc":
        mm[pos + 100] ^= 0xFF
    elif how == "bad-magic":
        mm[pos + 4] ^= 0x01
    elif how == "wrong-position":  # a stale record from elsewhere
        mm[pos + 28:pos + 36] = (end + 4096).to_bytes(8, "big")
    return end


@pytest.mark.parametrize("how", ["size-zero", "size-partial", "half-written", "bad-crc", "bad-magic",
                                 "wrong-position"])
def test_a_torn_or_corrupt_tail_is_cut_and_never_served(tmp_path, clock, how):
    cfg = small_config(tmp_path)
    store = MessageStore(cfg, clock=clock).start()
    fill(store, clock, 12)
    store.flush()
    fill(store, clock, 3)
    good = all_records(store)
    end = corrupt_tail(store, how)
    store.stop(clean=False)
    with MessageStore(cfg, clock=clock) as store:
        assert store.recovery.mode == "abnormal"
        assert store.commitlog_max_offset == end
        assert all_records(store) == good
        assert store.get_max_offset_in_queue("A", 0) == 15
        assert store.get_message("G", "A", 0, 15).status is GetMessageStatus.OFFSET_OVERFLOW_ONE
        assert store.select_one_message_by_offset(end) is None
        assert store.query_message("A", "torn").messages == []
        mf = store.commitlog.queue.find_mapped_file_by_offset(end)
        assert mf.mm[end - mf.file_from_offset:] == bytes(mf.file_size - (end - mf.file_from_offset))  # zeroed
        r = store.put_message(make_msg("A", 0, b"after"))
        assert (r.wrote_offset, r.logics_offset) == (end, 15)
        assert_consistent(store)


def test_crash_between_commitlog_and_consume_queue_is_repaired(tmp_path, clock):
    cfg = small_config(tmp_path)
    store = MessageStore(cfg, clock=clock).start()
    fill(store, clock, 10)
    store.flush()
    puts = fill(store, clock, 4)
    cq = store.find_consume_queue("A", 0)
    mf = cq.queue.files[-1]
    mf.mm[mf.wrote_position - 3 * 20:mf.wrote_position] = bytes(60)  # the last 3 units never reached the CQ
    store.stop(clean=False)
    with MessageStore(cfg, clock=clock) as store:
        assert store.get_max_offset_in_queue("A", 0) == 14
        got = store.get_message("G", "A", 0, 10, 32)
        assert got.phy_offsets == [p.wrote_offset for p in puts]
        assert_consistent(store)


def test_consume_queue_ahead_of_the_commitlog_is_cut(tmp_path, clock):
    cfg = small_config(tmp_path)
    store = MessageStore(cfg, clock=clock).start()
    fill(store, clock, 10)
    store.flush()
    puts = fill(store, clock, 5)
    cut = puts[2].wrote_offset
    mf = store.commitlog.queue.find_mapped_file_by_offset(cut)
    end = puts[-1].wrote_offset + puts[-1].wrote_bytes
    for mf in store.commitlog.queue.files:  # the log lost its tail (everything from `cut` on)
        lo, hi = max(cut, mf.file_from_offset), min(end, mf.file_from_offset + mf.file_size)
        if lo < hi:
            mf.mm[lo - mf.file_from_offset:hi - mf.file_from_offset] = bytes(hi - lo)
    store.stop(clean=False)
    with MessageStore(cfg, clock=clock) as store:
        assert store.commitlog_max_offset == cut
        assert store.get_max_offset_in_queue("A", 0) == 12
        assert_consistent(store)
        assert store.put_message(make_msg("A")).logics_offset == 12


def test_unusable_checkpoint_means_a_full_scan(tmp_path, clock):
    cfg = small_config(tmp_path)
    store = MessageStore(cfg, clock=clock).start()
    fill(store, clock, 30)
    records = all_records(store)
    store.stop(clean=False)
    with open(cfg.checkpoint_path, "r+b") as f:
        f.seek(24)
        f.write(b"garbage!")
    with MessageStore(cfg, clock=clock) as store:
        rec = store.recovery
        assert (rec.mode, rec.scan_start_offset, rec.scanned_records) == ("abnormal", 0, 30)
        assert all_records(store) == records
        assert_consistent(store)


def test_missing_abort_file_but_no_clean_checkpoint_is_abnormal(tmp_path, clock):
    cfg = small_config(tmp_path)
    store = MessageStore(cfg, clock=clock).start()
    fill(store, clock, 5)
    store.stop(clean=False)
    os.unlink(cfg.abort_path)
    with MessageStore(cfg, clock=clock) as store:
        assert store.recovery.mode == "abnormal" and store.recovery.reason == "checkpoint has no clean end"
        assert store.get_max_offset_in_queue("A", 0) == 5


def test_end_exactly_at_a_segment_boundary(tmp_path, clock):
    cfg = small_config(tmp_path)
    for clean in (True, False):
        root = tmp_path / f"clean-{clean}"
        c = small_config(root)
        store = MessageStore(c, clock=clock).start()
        store.put_message(make_msg(body=b"x" * 3900))
        r = store.put_message(make_msg(body=b"y" * 3900))
        assert r.wrote_offset == 4096
        store.stop(clean=clean)
        with MessageStore(c, clock=clock) as store:
            assert store.commitlog_max_offset == 4096 + r.wrote_bytes
            assert store.put_message(make_msg(body=b"z" * 3900)).wrote_offset == 8192
            assert store.get_max_offset_in_queue("TopicA", 0) == 3
    assert cfg


def test_recovery_keeps_queues_created_at_a_nonzero_offset(tmp_path, clock):
    cfg = small_config(tmp_path)
    store = MessageStore(cfg, clock=clock).start()
    fill(store, clock, 40)
    store.delete_topics(["A"])
    fill(store, clock, 3)  # A/0 again from offset 0
    store.stop(clean=False)
    with MessageStore(cfg, clock=clock) as store:
        assert store.get_max_offset_in_queue("A", 0) == 3


def test_segments_of_the_wrong_size_or_with_holes_refuse_to_load(tmp_path, clock):
    cfg = small_config(tmp_path)
    with MessageStore(cfg, clock=clock) as store:
        fill(store, clock, 50)
    names = sorted(os.listdir(cfg.commit_log_dir))
    victim = os.path.join(cfg.commit_log_dir, names[1])
    with open(victim, "r+b") as f:
        f.truncate(100)
    with pytest.raises(StoreLoadError):
        MessageStore(cfg, clock=clock).start()
    os.unlink(victim)
    with pytest.raises(StoreLoadError):
        MessageStore(cfg, clock=clock).start()


def test_one_store_per_directory(tmp_path, clock):
    cfg = small_config(tmp_path)
    with MessageStore(cfg, clock=clock):
        with pytest.raises(StoreLoadError):
            MessageStore(cfg, clock=clock).start()
    with MessageStore(cfg, clock=clock) as store:
        assert store.running


def test_recovery_reindexes_keys_without_duplicates(tmp_path, clock):
    cfg = small_config(tmp_path)
    store = MessageStore(cfg, clock=clock).start()
    fill(store, clock, 10)
    store.flush()
    fill(store, clock, 10, topic="B")
    store.index.drain()  # entries after the checkpoint were written: recovery sees them again
    store.stop(clean=False)
    with MessageStore(cfg, clock=clock) as store:
        for topic in ("A", "B"):
            for i in range(10):
                assert len(store.query_message(topic, f"{topic}-{i}").messages) == 1


def test_a_consume_queue_that_cannot_grow_stops_the_store_and_is_repaired_on_restart(tmp_path, clock, monkeypatch):
    cfg = small_config(tmp_path)
    store = MessageStore(cfg, clock=clock).start()
    fill(store, clock, 16)  # the first consume-queue file (16 units) is full
    cq = store.find_consume_queue("A", 0)

    def disk_full(start):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cq.queue, "create_mapped_file", disk_full)
    r = store.put_message(make_msg("A", 0, b"in the log only"))
    assert r.is_ok()  # the record is in the commitlog (and would be acknowledged)
    assert store.dispatch_error_offset == r.wrote_offset
    assert store.put_message(make_msg("A", 0)).status.name == "SERVICE_NOT_AVAILABLE"
    store.flush()
    assert store.checkpoint.confirm_offset == r.wrote_offset  # never vouches past the undispatched record
    store.stop()  # even a "clean" stop leaves an abnormal restart
    monkeypatch.undo()
    with MessageStore(cfg, clock=clock) as store:
        assert store.recovery.mode == "abnormal"
        assert store.get_max_offset_in_queue("A", 0) == 17
        got = store.get_message("G", "A", 0, 16)
        assert MessageExt.decode(got.messages[0]).body == b"in the log only"
        assert store.put_message(make_msg("A", 0)).is_ok()
        assert_consistent(store)


def test_an_index_file_that_cannot_be_created_holds_the_checkpoint_back(tmp_path, clock, monkeypatch):
    cfg = small_config(tmp_path)
    store = MessageStore(cfg, clock=clock).start()
    fill(store, clock, 5)
    store.flush()
    confirmed = store.commitlog_max_offset

    def disk_full():
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.index, "_new_file", disk_full)
    store.index.files[-1].index_count = store.index.files[-1].index_num  # pretend the file is full
    fill(store, clock, 3)
    store.flush()
    assert store.checkpoint.confirm_offset == confirmed and len(store.index.pending) == 3
    store.stop()
    monkeypatch.undo()
    with MessageStore(cfg, clock=clock) as store:
        assert store.recovery.mode == "abnormal" and store.recovery.scanned_records == 3
        assert len(store.query_message("A", "A-1").messages) == 2


def test_records_with_undecodable_properties_are_stored_and_recovered(tmp_path, clock):
    from rocketmq_emulator.store import MessageExtBrokerInner
    cfg = small_config(tmp_path)
    store = MessageStore(cfg, clock=clock).start()
    raw = MessageExtBrokerInner("A", 0, b"body", properties_raw=b"KEYS\x01\xff\xfe\x02TAGS\x01x")
    assert store.put_message(raw).is_ok()
    store.stop(clean=False)
    with MessageStore(cfg, clock=clock) as store:
        assert store.recovery.scanned_records == 1
        assert store.get_max_offset_in_queue("A", 0) == 1
        assert store.get_message("G", "A", 0, 0).messages[0].endswith(b"\xff\xfe\x02TAGS\x01x")
