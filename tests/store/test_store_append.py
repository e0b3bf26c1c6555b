"""CommitLog appends: record layout (§7.1), read back, file boundaries, batches, statuses of bad messages."""

from __future__ import annotations

import os

import pytest

from rocketmq_emulator.protocol.message import (BLANK_MAGIC_CODE, MessageExt, create_message_id, decode_messages,
                                                pack_host, tag_hash_code)
from rocketmq_emulator.store import FlushDiskType, GetMessageStatus, MessageExtBrokerInner, PutMessageStatus
from store_testlib import expected_record, make_msg


def test_single_put_writes_the_exact_record_and_reads_back(open_store, clock):
    store = open_store()
    msg = make_msg(body=b"payload-1", tags="TagA", keys="k1 k2", uniq="UNIQ1", flag=7, reconsume_times=2)
    r = store.put_message(msg)
    assert r.status is PutMessageStatus.PUT_OK and r.is_ok()
    assert (r.wrote_offset, r.logics_offset, r.msg_num, r.store_timestamp) == (0, 0, 1, clock.now)
    expected = expected_record(msg, queue_offset=0, phy=0, store_ts=clock.now, config=store.config)
    assert r.wrote_bytes == len(expected)
    assert store.select_one_message_by_offset(0) == expected
    assert r.msg_id == create_message_id("10.0.0.7", 10911, 0) == "0A00000700002A9F0000000000000000"
    got = store.get_message("G", "TopicA", 0, 0, 32)
    assert got.status is GetMessageStatus.FOUND
    assert got.messages == [expected] and got.body() == expected
    m = MessageExt.decode(got.body())
    assert (m.body, m.tags, m.keys, m.flag, m.reconsume_times) == (b"payload-1", "TagA", "k1 k2", 7, 2)
    assert store.look_message_by_offset(0).properties["UNIQ_KEY"] == "UNIQ1"


def test_queue_offsets_and_store_timestamps_are_monotonic(open_store, clock):
    store = open_store()
    offsets = {}
    last_ts = 0
    for i in range(30):
        q = i % 3
        if i == 10:
            clock.now -= 50  # the wall clock steps back: store time must not
        r = store.put_message(make_msg(queue_id=q, body=b"m%d" % i))
        assert r.logics_offset == offsets.get(q, 0)
        offsets[q] = r.logics_offset + 1
        assert r.store_timestamp >= last_ts
        last_ts = r.store_timestamp
        clock.advance(1)
    for q in range(3):
        assert store.get_max_offset_in_queue("TopicA", q) == 10
        assert store.get_min_offset_in_queue("TopicA", q) == 0


def test_records_never_span_segments_and_blank_filler_closes_a_segment(open_store):
    store = open_store()  # 4 KiB commitlog segments
    bodies = [os.urandom(300 + i * 7) for i in range(40)]
    results = [store.put_message(make_msg(body=b)) for b in bodies]
    assert all(r.is_ok() for r in results)
    files = store.commitlog.queue.files
    assert len(files) > 3
    size = store.config.mapped_file_size_commit_log
    for r in results:
        assert r.wrote_offset // size == (r.wrote_offset + r.wrote_bytes - 1) // size
    # each closed segment ends with [remaining][BLANK_MAGIC] right after its last record
    for r, nxt in zip(results, results[1:]):
        end = r.wrote_offset + r.wrote_bytes
        if nxt.wrote_offset // size != r.wrote_offset // size:
            mf = store.commitlog.queue.find_mapped_file_by_offset(r.wrote_offset)
            pos = end - mf.file_from_offset
            assert int.from_bytes(mf.mm[pos:pos + 4], "big") == size - pos
            assert int.from_bytes(mf.mm[pos + 4:pos + 8], "big", signed=True) == BLANK_MAGIC_CODE
            assert nxt.wrote_offset == mf.file_from_offset + size
    names = sorted(os.listdir(store.config.commit_log_dir))
    assert names == [f"{i * size:020d}" for i in range(len(files))]
    # read everything back through the consume queue, across segment boundaries
    offset, seen = 0, []
    while offset < store.get_max_offset_in_queue("TopicA", 0):
        got = store.get_message("G", "TopicA", 0, offset, 32)
        assert got.status is GetMessageStatus.FOUND
        seen += [m.body for m in decode_messages(got.body())]
        offset = got.next_begin_offset
    assert seen == bodies


def test_batch_is_contiguous_with_consecutive_queue_offsets(open_store, clock):
    store = open_store()
    store.put_message(make_msg(queue_id=1, body=b"before"))
    batch = [make_msg(queue_id=1, body=b"b%d" % i * (i + 1), keys=f"bk{i}", uniq=f"U{i}") for i in range(5)]
    r = store.put_messages(batch)
    assert r.is_ok() and r.msg_num == 5 and r.logics_offset == 1
    assert len(r.phy_offsets) == 5 and r.wrote_offset == r.phy_offsets[0]
    assert r.msg_id.split(",") == [create_message_id("10.0.0.7", 10911, p) for p in r.phy_offsets]
    pos = r.wrote_offset
    for i, (m, phy) in enumerate(zip(batch, r.phy_offsets)):
        assert phy == pos
        rec = expected_record(m, queue_offset=1 + i, phy=phy, store_ts=clock.now, config=store.config)
        assert store.select_one_message_by_offset(phy) == rec
        pos += len(rec)
    assert pos == r.wrote_offset + r.wrote_bytes == store.commitlog_max_offset
    got = store.get_message("G", "TopicA", 1, 1, 32)
    assert [MessageExt.decode(x).body for x in got.messages] == [b"b%d" % i * (i + 1) for i in range(5)]
    assert got.queue_offsets == [1, 2, 3, 4, 5]


def test_batch_goes_whole_to_the_next_segment(open_store):
    store = open_store()
    store.put_message(make_msg(body=os.urandom(3000)))
    r = store.put_messages([make_msg(body=os.urandom(200)) for _ in range(8)])
    assert r.is_ok()
    assert r.wrote_offset == 4096  # did not fit behind the first record: filler + next segment
    assert all(4096 <= p < 8192 for p in r.phy_offsets)


def test_batch_rules(open_store):
    store = open_store()
    assert store.put_messages([]).status is PutMessageStatus.MESSAGE_ILLEGAL
    mixed = [make_msg(queue_id=0), make_msg(queue_id=1)]
    assert store.put_messages(mixed).status is PutMessageStatus.MESSAGE_ILLEGAL
    tx = [make_msg(sys_flag=0x4)]
    assert store.put_messages(tx).status is PutMessageStatus.MESSAGE_ILLEGAL
    too_big = [make_msg(body=b"x" * 3000), make_msg(body=b"x" * 3000)]
    assert store.put_messages(too_big).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.commitlog_max_offset == 0


def test_illegal_messages_are_refused_without_writing(open_store):
    store = open_store(max_message_size=1000)
    assert store.put_message(make_msg(topic="T" * 128)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(make_msg(body=b"x" * 1001)).status is PutMessageStatus.MESSAGE_ILLEGAL
    big_props = MessageExtBrokerInner("TopicA", 0, b"x", properties_raw=b"a\x01" + b"b" * 32767)
    assert store.put_message(big_props).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert store.put_message(make_msg(topic="../evil")).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(make_msg(queue_id=-1)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.commitlog_max_offset == 0
    assert store.put_message(make_msg(topic="T" * 127)).is_ok()


def test_transaction_types_prepared_and_rollback_are_not_dispatched(open_store):
    store = open_store()
    r1 = store.put_message(make_msg(body=b"half", sys_flag=0x4, keys="kp"))
    r2 = store.put_message(make_msg(body=b"rolled", sys_flag=0xC, keys="kr"))
    r3 = store.put_message(make_msg(body=b"commit", sys_flag=0x8, keys="kc"))
    assert (r1.logics_offset, r2.logics_offset, r3.logics_offset) == (0, 0, 0)
    assert store.get_max_offset_in_queue("TopicA", 0) == 1
    got = store.get_message("G", "TopicA", 0, 0, 32)
    assert [MessageExt.decode(m).body for m in got.messages] == [b"commit"]
    assert store.look_message_by_offset(r1.wrote_offset).body == b"half"
    assert len(store.query_message("TopicA", "kp").messages) == 1  # prepared messages are indexed
    assert store.query_message("TopicA", "kr").messages == []  # rolled back ones are not


def test_ipv6_hosts(open_store):
    store = open_store(store_host="::1")
    msg = make_msg(born_host="2001:db8::5")
    r = store.put_message(msg)
    assert r.is_ok()
    rec = store.select_one_message_by_offset(0)
    assert rec == expected_record(msg, queue_offset=0, phy=0, store_ts=r.store_timestamp, config=store.config)
    m = MessageExt.decode(rec)
    assert (m.born_host, m.store_host, m.sys_flag & 0x30) == ("2001:db8::5", "::1", 0x30)
    assert r.msg_id == create_message_id("::1", 10911, 0) and len(r.msg_id) == 56
    assert store.get_message_store_timestamp("TopicA", 0, 0) == r.store_timestamp


def test_tags_code_is_taken_from_the_broker(open_store):
    store = open_store()
    store.put_message(make_msg(topic="SCHEDULE_TOPIC_XXXX", queue_id=2, tags="TagA", tags_code=1_700_000_123_456))
    unit = store.find_consume_queue("SCHEDULE_TOPIC_XXXX", 2).get_unit(0)
    assert unit[2] == 1_700_000_123_456 != tag_hash_code("TagA")


@pytest.mark.parametrize("flush", [FlushDiskType.SYNC_FLUSH, FlushDiskType.ASYNC_FLUSH])
def test_flush_modes(open_store, clock, flush):
    store = open_store(flush_disk_type=flush)
    for i in range(20):
        assert store.put_message(make_msg(body=os.urandom(500))).is_ok()
    mf = store.commitlog.queue.files[-1]
    if flush is FlushDiskType.SYNC_FLUSH:
        assert mf.flushed_position == mf.wrote_position  # msync'ed before the put returned
    else:
        assert mf.flushed_position < mf.wrote_position
        assert not store.flush_if_due(clock.now + 100)
        assert store.flush_if_due(clock.now + 500)  # flush_interval_commit_log
        assert mf.flushed_position == mf.wrote_position
    assert store.flush_if_due(clock.now + 1000)  # consume queues + checkpoint
    assert store.checkpoint.confirm_offset == store.commitlog_max_offset


def test_stopped_store_answers_service_not_available(open_store):
    store = open_store()
    store.stop()
    assert store.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert store.put_messages([make_msg()]).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert store.get_message("G", "TopicA", 0, 0) is None


def test_create_mapped_file_failure_is_a_status(open_store, monkeypatch):
    store = open_store()
    assert store.put_message(make_msg(body=b"x" * 3000)).is_ok()

    def boom(start):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.commitlog.queue, "create_mapped_file", boom)
    r = store.put_message(make_msg(body=b"y" * 3000))
    assert r.status is PutMessageStatus.CREATE_MAPEDFILE_FAILED
    monkeypatch.undo()
    assert store.put_message(make_msg(body=b"z" * 3000)).is_ok()
    got = store.get_message("G", "TopicA", 0, 0, 32)
    assert [len(MessageExt.decode(m).body) for m in got.messages] == [3000, 3000]


def test_pack_host_roundtrip_in_results(open_store):
    store = open_store(store_host="192.168.0.1", store_port=9876)
    r = store.put_message(make_msg())
    assert r.msg_ids == [(pack_host("192.168.0.1") + (9876).to_bytes(4, "big") + bytes(8)).hex().upper()]
