"""put_message_run: single messages read together (any topics and queues) stored with one write."""

from __future__ import annotations

import os

from rocketmq_emulator.protocol.message import create_message_id
from rocketmq_emulator.store import FlushDiskType, MessageStore, PutMessageStatus
from store_testlib import expected_record, make_msg, small_config


def test_a_run_stores_what_single_puts_would(open_store, clock, tmp_path):
    msgs = [make_msg(topic=("RunA", "RunB")[i % 2], queue_id=i % 3, body=b"m%d" % i, tags=f"T{i % 2}",
                     keys=f"k{i}", uniq=f"U{i}", flag=i) for i in range(12)]
    run_store = open_store(tmp_path / "run")
    run_store.put_message(make_msg(topic="RunA", queue_id=0, body=b"before"))
    r = run_store.put_message_run(msgs)
    assert r.status is PutMessageStatus.PUT_OK and r.store_timestamp == clock.now

    single_store = open_store(tmp_path / "single")  # the same messages one by one, same clock
    single_store.put_message(make_msg(topic="RunA", queue_id=0, body=b"before"))
    singles = [single_store.put_message(m) for m in msgs]
    assert r.phy_offsets == [s.wrote_offset for s in singles]
    assert r.queue_offsets == [s.logics_offset for s in singles]
    assert r.queue_offsets[:6] == [1, 0, 0, 0, 0, 0]  # RunA/0 continues after "before"
    for k, (m, phy, qo) in enumerate(zip(msgs, r.phy_offsets, r.queue_offsets)):
        rec = expected_record(m, queue_offset=qo, phy=phy, store_ts=clock.now, config=run_store.config)
        assert run_store.select_one_message_by_offset(phy) == rec
        assert r.msg_ids[k] == create_message_id("10.0.0.7", 10911, phy) == singles[k].msg_id
    assert run_store.commitlog_max_offset == single_store.commitlog_max_offset
    for topic in ("RunA", "RunB"):
        for q in range(3):
            got = run_store.get_message("G", topic, q, 0, 32)
            want = single_store.get_message("G", topic, q, 0, 32)
            assert got.messages == want.messages and got.queue_offsets == want.queue_offsets
    found = run_store.query_message("RunB", "k7", 10, 0, 2**62)
    assert found.phy_offsets == [r.phy_offsets[7]]


def test_a_run_that_does_not_fit_the_segment_is_left_to_puts_one_by_one(open_store):
    """Each message of a run lands where a put of it alone puts it, however sends were grouped into runs: a run
    crossing the segment's end is not written, and put one by one its first messages fill the segment."""
    store = open_store()
    store.put_message(make_msg(body=os.urandom(3000)))
    run = [make_msg(queue_id=q % 2, body=os.urandom(200)) for q in range(6)]
    r = store.put_message_run(run)
    assert r.status is PutMessageStatus.RUN_CROSSES_SEGMENT and r.phy_offsets is None
    assert store.get_max_offset_in_queue("TopicA", 1) == 0  # nothing written, nothing dispatched
    one_by_one = [store.put_message(m) for m in run]
    assert all(x.status is PutMessageStatus.PUT_OK for x in one_by_one)
    offsets = [x.phy_offsets[0] for x in one_by_one]
    assert offsets[0] < 4096 and offsets[-1] >= 4096  # the first ones in the segment, the rest in the next
    assert [x.logics_offset for x in one_by_one] == [1, 0, 2, 1, 3, 2]
    whole = store.put_message_run([make_msg(body=os.urandom(200)) for _ in range(3)])  # fits: one write
    assert whole.status is PutMessageStatus.PUT_OK and len(whole.phy_offsets) == 3


def test_a_run_is_all_or_nothing(open_store):
    store = open_store()
    bigger_than_a_segment = [make_msg(body=b"x" * 1500, queue_id=q) for q in range(3)]
    assert store.put_message_run(bigger_than_a_segment).status is PutMessageStatus.MESSAGE_ILLEGAL
    with_a_prepared = [make_msg(), make_msg(sys_flag=0x4)]
    assert store.put_message_run(with_a_prepared).status is PutMessageStatus.MESSAGE_ILLEGAL
    bad_queue_name = [make_msg(), make_msg(topic="../evil")]
    assert store.put_message_run(bad_queue_name).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.commitlog_max_offset == 0 and store.get_max_offset_in_queue("TopicA", 0) == 0
    store.stop()
    r = store.put_message_run([make_msg()])
    assert r.status is PutMessageStatus.SERVICE_NOT_AVAILABLE and r.phy_offsets is None


def test_a_run_survives_a_restart_and_sync_flush_acknowledges_after_the_write(tmp_path, clock):
    cfg = small_config(tmp_path / "s", flush_disk_type=FlushDiskType.SYNC_FLUSH)
    store = MessageStore(cfg, clock=clock).start()
    r = store.put_message_run([make_msg(queue_id=q % 2, body=b"r%d" % q) for q in range(5)])
    assert r.status is PutMessageStatus.PUT_OK
    store.stop(clean=False)  # as if killed: SYNC_FLUSH already wrote it out
    again = MessageStore(cfg, clock=clock).start()
    try:
        assert again.get_max_offset_in_queue("TopicA", 0) == 3 and again.get_max_offset_in_queue("TopicA", 1) == 2
        assert again.commitlog_max_offset == r.phy_offsets[-1] + len(again.select_one_message_by_offset(
            r.phy_offsets[-1]))
    finally:
        again.stop()


def test_a_run_is_written_whole_when_the_topic_prefix_cache_is_cleared_during_it(open_store, clock):
    store = open_store()
    cache = store.commitlog._topic_prefix
    cache.update({f"filler-{i}": b"\x01x" for i in range(99_999)})  # the next new topic clears the cache
    msgs = [make_msg(topic=f"Fresh{i}", body=b"f%d" % i) for i in range(3)]
    r = store.put_message_run(msgs)
    assert r.status is PutMessageStatus.PUT_OK
    for m, phy, qo in zip(msgs, r.phy_offsets, r.queue_offsets):
        assert store.select_one_message_by_offset(phy) == expected_record(m, queue_offset=qo, phy=phy,
                                                                          store_ts=clock.now, config=store.config)


def test_every_record_of_one_put_carries_its_own_born_host(open_store, clock):
    """One record writer for every put: each message's born host (IPv4 or IPv6) and its sys-flag bit, even when
    the messages of one run or batch differ."""
    store = open_store()
    msgs = [make_msg(body=b"v4", born_host="192.168.1.2"), make_msg(body=b"v6", born_host="fe80::1"),
            make_msg(body=b"v4 again", born_host="10.1.2.3")]
    for put in (store.put_message_run, store.put_messages):
        r = put(msgs)
        assert r.status is PutMessageStatus.PUT_OK and len(r.phy_offsets) == 3
        for m, phy, qo in zip(msgs, r.phy_offsets, r.queue_offsets):
            assert store.select_one_message_by_offset(phy) == expected_record(m, queue_offset=qo, phy=phy,
                                                                              store_ts=clock.now, config=store.config)
