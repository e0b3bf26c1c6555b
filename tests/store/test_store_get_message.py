"""get_message: every status of §9.3 with its nextBeginOffset, scan limits, tag filtering.

The table (status -> condition -> nextBeginOffset) is §9.3; the broker maps the status to a response code by §9.4
(FOUND 0; NO_MATCHED_MESSAGE / MESSAGE_WAS_REMOVING 20; NO_MESSAGE_IN_QUEUE / NO_MATCHED_LOGIC_QUEUE 21 or 19;
OFFSET_FOUND_NULL 19; OFFSET_OVERFLOW_ONE 19; OFFSET_OVERFLOW_BADLY 21; OFFSET_TOO_SMALL 21).
"""

from __future__ import annotations

import os

import pytest

from rocketmq_emulator.protocol.message import MessageExt, tag_hash_code
from rocketmq_emulator.store import GetMessageStatus as S
from store_testlib import make_msg

UNITS_PER_CQ_FILE = 16  # small_config: 20 * 16 bytes


def fill(store, topic, queue_id, n, body_size=100, **kw):
    return [store.put_message(make_msg(topic, queue_id, os.urandom(body_size), **kw)) for _ in range(n)]


def expired_queue_store(open_store, a_count):
    """Topic A: `a_count` messages; topic B then fills segments; everything but the last segment expires."""
    store = open_store()
    fill(store, "A", 0, a_count, body_size=150)
    fill(store, "B", 0, 60, body_size=300)
    assert store.expire_files_now() > 0
    assert store.find_consume_queue("A", 0).max_physic_offset <= store.commitlog_min_offset  # all of A is gone
    return store


def test_no_message_in_queue(open_store):
    store = open_store()
    for offset in (0, 5):
        r = store.get_message("G", "Unknown", 0, offset)
        assert (r.status, r.next_begin_offset, r.min_offset, r.max_offset) == (S.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        assert r.messages == []


def test_no_matched_logic_queue_for_names_that_cannot_be_a_queue(open_store):
    store = open_store()
    for topic, qid in (("", 0), ("a/b", 0), ("..", 0), ("A", -1)):
        r = store.get_message("G", topic, qid, 3)
        assert (r.status, r.next_begin_offset) == (S.NO_MATCHED_LOGIC_QUEUE, 0)


def test_found_overflow_one_and_overflow_badly(open_store):
    store = open_store()
    fill(store, "A", 0, 10)
    r = store.get_message("G", "A", 0, 3, 32)
    assert (r.status, r.next_begin_offset, r.min_offset, r.max_offset, r.units_scanned) == (S.FOUND, 10, 0, 10, 7)
    assert r.queue_offsets == list(range(3, 10))
    assert [MessageExt.decode(m).queue_offset for m in r.messages] == list(range(3, 10))
    r = store.get_message("G", "A", 0, 10)
    assert (r.status, r.next_begin_offset) == (S.OFFSET_OVERFLOW_ONE, 10)
    r = store.get_message("G", "A", 0, 25)
    assert (r.status, r.next_begin_offset) == (S.OFFSET_OVERFLOW_BADLY, 10)  # max, also when min == 0


def test_offset_too_small_after_expiry(open_store):
    store = open_store()
    fill(store, "A", 0, 60, body_size=300)
    store.expire_files_now(count=2)
    min_offset = store.get_min_offset_in_queue("A", 0)
    assert min_offset > 0
    r = store.get_message("G", "A", 0, 0)
    assert (r.status, r.next_begin_offset, r.min_offset, r.max_offset) == (S.OFFSET_TOO_SMALL, min_offset,
                                                                            min_offset, 60)
    r = store.get_message("G", "A", 0, 70)
    assert (r.status, r.next_begin_offset) == (S.OFFSET_OVERFLOW_BADLY, 60)
    r = store.get_message("G", "A", 0, min_offset)
    assert r.status is S.FOUND and r.queue_offsets[0] == min_offset


def test_offset_found_null_when_the_cq_file_is_gone_but_min_did_not_move(open_store):
    # A spans two consume-queue files; all its data expires; the first CQ file is deleted, the second (last) is
    # kept, nothing in it qualifies, so min stays 0 (4.x): offsets 0..15 hit a hole.
    store = expired_queue_store(open_store, UNITS_PER_CQ_FILE + 4)
    cq = store.find_consume_queue("A", 0)
    assert len(cq.queue.files) == 1 and cq.queue.files[0].file_from_offset == UNITS_PER_CQ_FILE * 20
    assert store.get_min_offset_in_queue("A", 0) == 0
    r = store.get_message("G", "A", 0, 5)
    assert (r.status, r.next_begin_offset, r.min_offset, r.max_offset) == (S.OFFSET_FOUND_NULL, 16, 0, 20)
    # ... and the next offset lands on units whose data is gone
    r = store.get_message("G", "A", 0, 16)
    assert (r.status, r.next_begin_offset, r.units_scanned) == (S.MESSAGE_WAS_REMOVING, 20, 4)


def test_message_was_removing(open_store):
    store = expired_queue_store(open_store, 5)
    assert store.get_min_offset_in_queue("A", 0) == 0  # single (last) CQ file, nothing qualifies: unchanged
    r = store.get_message("G", "A", 0, 0, 32)
    assert (r.status, r.next_begin_offset, r.messages) == (S.MESSAGE_WAS_REMOVING, 5, [])


def test_5x_rule_moves_min_past_expired_units(open_store):
    store = open_store(correct_min_offset_across_files=True)
    fill(store, "A", 0, 5, body_size=150)
    fill(store, "B", 0, 60, body_size=300)
    store.expire_files_now()
    assert store.get_min_offset_in_queue("A", 0) == 5
    r = store.get_message("G", "A", 0, 0)
    assert (r.status, r.next_begin_offset) == (S.OFFSET_TOO_SMALL, 5)


def test_tag_filter_by_hash_code_and_no_matched_message(open_store):
    store = open_store()
    tags = ["TagA", "TagB", None, "TagA", "TagC", "TagB"]
    for i, t in enumerate(tags):
        store.put_message(make_msg("A", 0, b"m%d" % i, tags=t))
    code_a, code_b = tag_hash_code("TagA"), tag_hash_code("TagB")
    r = store.get_message("G", "A", 0, 0, 32, {code_a})
    assert r.status is S.FOUND and r.queue_offsets == [0, 3] and r.next_begin_offset == 6
    r = store.get_message("G", "A", 0, 0, 32, {code_a, code_b})
    assert r.queue_offsets == [0, 1, 3, 5]
    r = store.get_message("G", "A", 0, 0, 32, lambda code: code == 0)  # a callable filter: untagged only
    assert r.queue_offsets == [2]
    r = store.get_message("G", "A", 0, 0, 32, {tag_hash_code("Nope")})
    assert (r.status, r.next_begin_offset, r.units_scanned, r.messages) == (S.NO_MATCHED_MESSAGE, 6, 6, [])
    r = store.get_message("G", "A", 0, 0, 32, None)
    assert len(r.messages) == 6


def test_schedule_topic_codes_are_matched_on_their_low_32_bits(open_store):
    store = open_store()
    deliver = 1_700_000_123_456
    store.put_message(make_msg("SCHEDULE_TOPIC_XXXX", 0, b"d", tags_code=deliver))
    low = ((deliver + 2 ** 31) % 2 ** 32) - 2 ** 31
    assert store.get_message("G", "SCHEDULE_TOPIC_XXXX", 0, 0, 32, {low}).status is S.FOUND
    assert store.get_message("G", "SCHEDULE_TOPIC_XXXX", 0, 0, 32, {deliver}).status is S.NO_MATCHED_MESSAGE


def test_max_msg_nums_stops_without_counting_the_unit(open_store):
    store = open_store()
    fill(store, "A", 0, 10)
    r = store.get_message("G", "A", 0, 0, 4)
    assert (len(r.messages), r.next_begin_offset, r.units_scanned) == (4, 4, 4)
    # filtered units before the batch is full are counted
    store2_tags = ["X", "Y"] * 5
    for t in store2_tags:
        store.put_message(make_msg("B", 0, b"x", tags=t))
    r = store.get_message("G", "B", 0, 0, 2, {tag_hash_code("Y")})
    assert r.queue_offsets == [1, 3] and r.next_begin_offset == 4


def test_a_pull_never_crosses_a_consume_queue_file(open_store):
    store = open_store()
    fill(store, "A", 0, 40, body_size=20)
    r = store.get_message("G", "A", 0, 10, 32)
    assert (len(r.messages), r.next_begin_offset) == (6, 16)
    r = store.get_message("G", "A", 0, 16, 32)
    assert (len(r.messages), r.next_begin_offset) == (16, 32)


def test_in_memory_transfer_limits_256k_and_32(open_store):
    store = open_store(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=20 * 1000)
    fill(store, "A", 0, 40, body_size=100)
    r = store.get_message("G", "A", 0, 0, 100)
    assert (len(r.messages), r.next_begin_offset) == (32, 32)
    fill(store, "Big", 0, 40, body_size=10_000)
    r = store.get_message("G", "Big", 0, 0, 100)
    size = len(r.messages[0])
    assert len(r.messages) == 256 * 1024 // size  # bytes + this size > 256 KiB stops the batch
    assert r.buffer_total_size == len(r.messages) * size <= 256 * 1024
    assert r.next_begin_offset == len(r.messages)


def test_on_disk_transfer_limits_64k_and_8(open_store):
    store = open_store(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=20 * 1000,
                       total_physical_memory_size=100_000)  # 40 % -> "on disk" when > 40,000 bytes behind
    fill(store, "A", 0, 40, body_size=100)
    fill(store, "Filler", 0, 30, body_size=2000)
    r = store.get_message("G", "A", 0, 0, 100)
    assert (len(r.messages), r.next_begin_offset) == (8, 8)
    assert r.suggest_pulling_from_slave
    assert store.check_in_disk_by_consume_offset("A", 0, 0)
    assert not store.check_in_disk_by_consume_offset("Filler", 0, 29)
    assert not store.check_in_disk_by_consume_offset("A", 0, 1000)  # no such unit: not on disk
    assert not store.check_in_disk_by_consume_offset("Nope", 0, 0)


def test_default_everything_is_in_memory(open_store):
    store = open_store(mapped_file_size_commit_log=1 << 20)
    fill(store, "A", 0, 5)
    fill(store, "Filler", 0, 200, body_size=3000)
    assert not store.check_in_disk_by_consume_offset("A", 0, 0)
    assert len(store.get_message("G", "A", 0, 0, 32).messages) == 5


def test_scan_is_limited_to_16000_bytes_of_units(open_store):
    store = open_store(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=20 * 2000)
    fill(store, "A", 0, 1000, body_size=10, tags="T")
    r = store.get_message("G", "A", 0, 0, 32, {tag_hash_code("Other")})
    assert (r.status, r.next_begin_offset) == (S.NO_MATCHED_MESSAGE, 800)
    r = store.get_message("G", "A", 0, 0, 1000, {tag_hash_code("Other")})  # max(16000, 1000 * 20) bytes
    assert r.next_begin_offset == 1000


@pytest.mark.parametrize("offset", [0, 1])
def test_result_records_are_byte_identical_to_the_commitlog(open_store, offset):
    store = open_store()
    puts = fill(store, "A", 0, 3)
    r = store.get_message("G", "A", 0, offset, 32)
    for phy, rec in zip(r.phy_offsets, r.messages):
        assert rec == store.select_one_message_by_offset(phy)
    assert r.phy_offsets == [p.wrote_offset for p in puts[offset:]]
