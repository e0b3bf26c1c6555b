"""The native lane's walk over consume-queue units (`_lane.scan_units`, pulls) against its Python twin
(`MessageLookup._scan_units`' own loop): on random stores, segments expired or not, every pull's result is the
same, field by field, and a pull's joined answer body is the same records. (tests/test_native_lane.py holds whole pull answers of both paths byte-equal.)"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_emulator import native
from rocketmq_emulator.protocol.message import tag_hash_code
from rocketmq_emulator.store import MessageStore
from rocketmq_emulator.store import message_lookup
from store_testlib import Clock, make_msg, small_config

pytestmark = pytest.mark.skipif(native.lane is None, reason=f"the native lane does not run: {native.WHY}")
TAGS = ["TagA", "TagB", "TagC"]


def fields(result):  # type: ignore[no-untyped-def]
    return None if result is None else (
        result.status, result.next_begin_offset, result.min_offset, result.max_offset, result.messages,
        result.queue_offsets, result.phy_offsets, result.buffer_total_size, result.units_scanned,
        result.suggest_pulling_from_slave)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(st.tuples(st.integers(0, 1), st.sampled_from(TAGS), st.integers(0, 1200) | st.integers(0, 200)),
                         min_size=1, max_size=80),
       expire=st.booleans(),
       pulls=st.lists(st.tuples(st.integers(0, 1), st.integers(0, 20) | st.integers(-2, 70), st.integers(1, 40),
                                st.one_of(st.none(), st.sets(st.sampled_from(TAGS + ["TagZ"]), max_size=3))),
                      min_size=1, max_size=12),
       max_count=st.sampled_from([32, 5]), max_bytes=st.sampled_from([256 * 1024, 2000]))
def test_pulls_find_the_same_on_both_paths(messages, expire, pulls, max_count, max_bytes):  # type: ignore[no-untyped-def]
    root = Path(tempfile.mkdtemp(prefix="scan-units-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    store = MessageStore(small_config(root, max_transfer_count_on_message_in_memory=max_count,
                                      max_transfer_bytes_on_message_in_memory=max_bytes), clock=Clock()).start()
    try:
        for queue_id, tag, size in messages:
            store.put_message(make_msg("A", queue_id, b"m" * size, tags=tag))
        if expire:
            for _ in range(30):  # topic B fills segments; all but the last expire
                store.put_message(make_msg("B", 0, b"f" * 300))
            store.expire_files_now()
        for queue_id, offset, max_nums, tags in pulls:
            codes = None if tags is None else {tag_hash_code(t) for t in tags}
            native_result = fields(store.get_message("G", "A", queue_id, offset, max_nums, codes))
            saved, message_lookup._scan_units = message_lookup._scan_units, None
            try:
                python_result = fields(store.get_message("G", "A", queue_id, offset, max_nums, codes))
            finally:
                message_lookup._scan_units = saved
            assert native_result == python_result
            # a pull's answer body (`joined`): the same records back to back, the same counts and offsets
            native_joined = store.get_message("G", "A", queue_id, offset, max_nums, codes, joined=True)
            assert native_joined is not None and native_result is not None
            assert native_joined.body() == b"".join(native_result[4])
            assert native_joined.message_count == len(native_result[4])
            assert (native_joined.status, native_joined.next_begin_offset, native_joined.buffer_total_size,
                    native_joined.units_scanned) == (native_result[0], native_result[1], native_result[7],
                                                     native_result[8])
    finally:
        store.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_the_native_walk_is_the_one_taken():
    """(so the test above compares two paths, not the Python one twice)"""
    assert message_lookup._scan_units is native.lane.scan_units
