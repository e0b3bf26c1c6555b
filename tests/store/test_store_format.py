"""A versioned store that never zeroes good data: the format version file, and a bad record followed by valid
ones after a crash (refused, or cut only when asked, with the cut bytes kept aside)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os

import pytest

from rocketmq_emulator.store import MessageStore, StoreLoadError
from rocketmq_emulator.store.format import STORE_FORMAT_VERSION
from store_testlib import make_msg, small_config


def _crash_with_an_unknown_record(tmp_path, clock, before=20, after=10):
    """`before` messages, one whose magic is unknown (what a later record format looks like), `after` more; then
    a crash. Returns (config, commitlog offset of the unknown record, records before it)."""
    cfg = small_config(tmp_path, mapped_file_size_commit_log=64 * 1024)
    store = MessageStore(cfg, clock=clock).start()
    for i in range(before):
        store.put_message(make_msg("A", 0, f"m{i}".encode() * 20))
    bad = store.put_message(make_msg("A", 0, b"unknown" * 20))
    for i in range(after):
        store.put_message(make_msg("A", 0, f"n{i}".encode() * 20))
    kept = [bytes(d) for _, d in store.commitlog.iter_records(0)][:before]
    mf = store.commitlog.queue.find_mapped_file_by_offset(bad.wrote_offset)
    pos = bad.wrote_offset - mf.file_from_offset
    mf.mm[pos + 4:pos + 8] = (0x0BADF00D).to_bytes(4, "big")
    store.stop(clean=False)
    return cfg, bad.wrote_offset, kept


def test_a_bad_record_followed_by_valid_ones_is_not_cut_the_broker_refuses_to_start(tmp_path, clock):
    cfg, offset, _ = _crash_with_an_unknown_record(tmp_path, clock)
    with pytest.raises(StoreLoadError) as info:
        MessageStore(cfg, clock=clock).start()
    text = str(info.value)
    assert f"{0:020d}" in text and f"position {offset}" in text and "followed by 10 valid records" in text
    assert "recoveryCutInvalidRecords=true" in text and "\n" not in text  # one line, naming the way out


def test_the_refused_store_is_left_untouched(tmp_path, clock):
    cfg, offset, _ = _crash_with_an_unknown_record(tmp_path, clock)
    path = os.path.join(cfg.commit_log_dir, f"{0:020d}")
    before = open(path, "rb").read()
    with pytest.raises(StoreLoadError):
        MessageStore(cfg, clock=clock).start()
    assert open(path, "rb").read() == before


def test_with_the_recovery_flag_the_cut_is_copied_aside_and_logged_as_an_error(tmp_path, clock, caplog):
    cfg, offset, kept = _crash_with_an_unknown_record(tmp_path, clock)
    path = os.path.join(cfg.commit_log_dir, f"{0:020d}")
    tail = open(path, "rb").read()[offset:]
    cut = dataclasses.replace(cfg, recovery_cut_invalid_records=True)
    with caplog.at_level(logging.ERROR, logger="rocketmq_emulator.store"):
        with MessageStore(cut, clock=clock) as store:
            assert [bytes(d) for _, d in store.commitlog.iter_records(0)] == kept
            assert store.get_max_offset_in_queue("A", 0) == 20
            assert store.recovery.cut_valid_records == 10
    aside = os.path.join(cfg.store_path_root_dir, f"recovery-cut-{offset}.bin")
    saved = open(aside, "rb").read()
    assert saved and tail.startswith(saved)  # the unknown record and the 10 after it, byte for byte
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "cut 10 valid messages" in record.getMessage() and aside in record.getMessage()


def test_a_new_store_records_its_format_version_and_an_old_one_is_taken_as_version_1(tmp_path, clock):
    cfg = small_config(tmp_path)
    with MessageStore(cfg, clock=clock) as store:
        store.put_message(make_msg("A", 0, b"x"))
        assert store.format_version == STORE_FORMAT_VERSION
    assert json.load(open(cfg.format_path)) == {"formatVersion": STORE_FORMAT_VERSION}
    os.unlink(cfg.format_path)  # a store made before the file existed
    with MessageStore(cfg, clock=clock) as store:
        assert store.format_version == 1 and store.get_max_offset_in_queue("A", 0) == 1
    assert json.load(open(cfg.format_path)) == {"formatVersion": 1}


def test_a_store_of_a_newer_format_is_refused_naming_both_versions(tmp_path, clock):
    cfg = small_config(tmp_path)
    with MessageStore(cfg, clock=clock) as store:
        store.put_message(make_msg("A", 0, b"x"))
    with open(cfg.format_path, "w") as f:
        json.dump({"formatVersion": STORE_FORMAT_VERSION + 1}, f)
    with pytest.raises(StoreLoadError) as info:
        MessageStore(cfg, clock=clock).start()
    assert f"format version {STORE_FORMAT_VERSION + 1}" in str(info.value)
    assert f"reads version {STORE_FORMAT_VERSION} and older" in str(info.value)
    with open(cfg.format_path, "w") as f:
        f.write("garbage")
    with pytest.raises(StoreLoadError, match="not a store format file"):
        MessageStore(cfg, clock=clock).start()


@pytest.mark.parametrize("unwritten", [4, 32, 64, 200])
@pytest.mark.parametrize("batch", [1, 4])
def test_a_put_cut_by_a_kill_before_its_first_size_was_set_is_a_torn_tail_not_a_bad_record(tmp_path, clock, batch,
                                                                                          unwritten):
    # A put is copied with its first record's size 0, and that size is set last: a kill between the two leaves
    # the put's other records valid after a head of size 0. The copy (one memcpy) may store its first 32 or 64
    # bytes last, so the head's other bytes may be missing too (200: the head record's body as well). None of
    # the records was acknowledged, so recovery drops the whole put as a torn tail and starts; it is not "a bad
    # record followed by valid ones".
    cfg = small_config(tmp_path, mapped_file_size_commit_log=64 * 1024)
    store = MessageStore(cfg, clock=clock).start()
    for i in range(5):
        store.put_message(make_msg("A", 0, f"m{i}".encode() * 20))
    kept = [bytes(d) for _, d in store.commitlog.iter_records(0)]
    msgs = [make_msg("A", 0, f"b{i}".encode() * 60) for i in range(batch)]
    put = store.put_messages(msgs) if batch > 1 else store.put_message(msgs[0])
    head = put.wrote_offset
    mf = store.commitlog.queue.find_mapped_file_by_offset(head)
    at = head - mf.file_from_offset
    assert put.wrote_bytes // batch > unwritten  # (the head record is longer)
    mf.mm[at:at + unwritten] = bytes(unwritten)  # the size the kill never set, and what the copy had not stored
    store.stop(clean=False)
    with MessageStore(cfg, clock=clock) as again:
        assert [bytes(d) for _, d in again.commitlog.iter_records(0)] == kept
        assert again.commitlog_max_offset == head
        assert again.get_max_offset_in_queue("A", 0) == 5
        assert again.put_message(make_msg("A", 0, b"after")).is_ok()


def test_a_torn_put_followed_by_other_valid_records_is_still_refused(tmp_path, clock):
    # The put's own records are skipped, but a valid record beyond them is not the tail of that put.
    cfg = small_config(tmp_path, mapped_file_size_commit_log=64 * 1024)
    store = MessageStore(cfg, clock=clock).start()
    store.put_message(make_msg("A", 0, b"first" * 20))
    head = store.put_messages([make_msg("A", 0, f"b{i}".encode() * 20) for i in range(3)]).wrote_offset
    clock.advance(1000)
    store.put_message(make_msg("A", 0, b"later" * 20))  # another put (another store time) after the torn one
    mf = store.commitlog.queue.find_mapped_file_by_offset(head)
    mf.mm[head - mf.file_from_offset:head - mf.file_from_offset + 4] = bytes(4)
    store.stop(clean=False)
    with pytest.raises(StoreLoadError, match="followed by 1 valid records"):
        MessageStore(cfg, clock=clock).start()
