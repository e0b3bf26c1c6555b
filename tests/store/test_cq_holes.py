"""Consume queues never lose good units silently: a unit of size 0 followed by written units (a page a machine
crash lost, a damaged file) is not taken as the queue's end; the queue is rebuilt from the commitlog from the
hole on, and the file is named in a WARNING. A torn tail (nothing written after) is cut quietly as before."""

from __future__ import annotations

import logging

from rocketmq_emulator.protocol.message import MessageExt
from rocketmq_emulator.store import GetMessageStatus, MessageStore
from store_testlib import make_msg, small_config


def _store_with_a_hole(tmp_path, clock, hole: int, count: int = 30, clean: bool = True):
    cfg = small_config(tmp_path, mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 64)
    store = MessageStore(cfg, clock=clock).start()
    for i in range(count):
        store.put_message(make_msg("A", 0, f"m{i}".encode() * 10, tags="TagA"))
    store.put_message(make_msg("B", 0, b"other"))
    cq = store.find_consume_queue("A", 0)
    units = [cq.get_unit(i) for i in range(count)]
    mf = cq.queue.files[-1]
    path = mf.path
    mf.mm[hole * 20:hole * 20 + 20] = bytes(20)
    store.stop(clean=clean)
    return cfg, units, path


def _all_served(store, count):
    for i in range(count):
        got = store.get_message("g", "A", 0, i, 1)
        assert got.status is GetMessageStatus.FOUND, i
        assert MessageExt.decode(bytes(got.messages[0])).body == f"m{i}".encode() * 10


def test_after_a_crash_a_hole_inside_the_queue_is_rebuilt_from_the_commitlog(tmp_path, clock, caplog):
    cfg, units, path = _store_with_a_hole(tmp_path, clock, hole=10, clean=False)
    with caplog.at_level(logging.WARNING, logger="rocketmq_emulator.store"):
        with MessageStore(cfg, clock=clock) as store:
            assert store.recovery.mode == "abnormal"
            cq = store.find_consume_queue("A", 0)
            assert [cq.get_unit(i) for i in range(30)] == units and store.get_max_offset_in_queue("A", 0) == 30
            _all_served(store, 30)
            assert store.recovery.rebuilt_cq_units == 20
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and path in r.getMessage()]
    assert "position 200" in warning and "followed by 19 written units" in warning and "20 units" in warning


def test_after_a_clean_stop_a_hole_the_end_search_lands_on_is_not_taken_as_the_end(tmp_path, clock, caplog):
    # unit 16 of 30 zeroed (64 units a segment): the binary search for the end stops there; the 13 written units
    # after it say it is a hole, not the end, and the queue keeps all 30
    cfg, units, path = _store_with_a_hole(tmp_path, clock, hole=16)
    with caplog.at_level(logging.WARNING, logger="rocketmq_emulator.store"):
        with MessageStore(cfg, clock=clock) as store:
            assert store.recovery.mode == "normal"
            assert store.get_max_offset_in_queue("A", 0) == 30
            _all_served(store, 30)
            assert store.recovery.rebuilt_cq_units == 14
            assert store.put_message(make_msg("A", 0, b"next")).logics_offset == 30
    assert any(path in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_a_torn_tail_of_the_queue_is_cut_quietly(tmp_path, clock, caplog):
    cfg, units, path = _store_with_a_hole(tmp_path, clock, hole=29, clean=False)
    with caplog.at_level(logging.WARNING, logger="rocketmq_emulator.store"):
        with MessageStore(cfg, clock=clock) as store:
            assert store.get_max_offset_in_queue("A", 0) == 30  # re-dispatched from the commitlog as always
            _all_served(store, 30)
            assert store.recovery.rebuilt_cq_units == 0
    assert not [r for r in caplog.records if path in r.getMessage()]
