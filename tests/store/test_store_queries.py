"""Queries: offset by timestamp (§9.13 boundary rules), store times, lookups by offset msgId and by key, topics."""

from __future__ import annotations

import os

from rocketmq_emulator.protocol.message import MessageExt, decode_message_id
from store_testlib import T0, make_msg


def put_at(store, clock, ts, topic="A", queue_id=0, **kw):
    clock.now = ts
    r = store.put_message(make_msg(topic, queue_id, **kw))
    assert r.is_ok() and r.store_timestamp == ts
    return r


def test_search_offset_by_timestamp_boundaries(open_store, clock):
    store = open_store()
    times = [T0 + 1000 * i for i in range(10)]  # offsets 0..9, 1 s apart
    for ts in times:
        put_at(store, clock, ts)
    search = lambda ts: store.get_offset_in_queue_by_time("A", 0, ts)  # noqa: E731
    assert search(T0 - 10_000) == 0  # before the first message: the first one
    assert search(T0 + 50_000) == 9  # after the last: the last message, not max offset (4.9.x)
    assert search(times[4]) == 4  # exact
    assert search(times[4] + 200) == 4  # closer to the left neighbour
    assert search(times[4] + 800) == 5  # closer to the right one
    assert search(times[4] + 500) == 4  # a tie goes left
    assert store.get_offset_in_queue_by_time("A", 1, T0) == 0  # unknown queue
    assert store.get_offset_in_queue_by_time("Nope", 0, T0) == 0


def test_search_offset_with_equal_timestamps_in_a_batch(open_store, clock):
    store = open_store()
    put_at(store, clock, T0)
    clock.now = T0 + 1000
    r = store.put_messages([make_msg("A", 0, b"b%d" % i) for i in range(6)])  # offsets 1..6, one store time
    put_at(store, clock, T0 + 2000)
    assert all(store.get_message_store_timestamp("A", 0, k) == T0 + 1000 for k in range(1, 7))
    found = store.get_offset_in_queue_by_time("A", 0, T0 + 1000)
    assert r.logics_offset <= found <= r.logics_offset + 5  # one of the equal ones (4.9.x: any)
    assert store.get_message_store_timestamp("A", 0, found) == T0 + 1000
    assert store.get_offset_in_queue_by_time("A", 0, T0 + 999) in range(1, 7)
    assert store.get_offset_in_queue_by_time("A", 0, T0 + 1) == 0


def test_search_offset_across_consume_queue_files(open_store, clock):
    store = open_store(mapped_file_size_commit_log=1 << 16)  # CQ files of 16 units
    for i in range(50):
        put_at(store, clock, T0 + 10 * i)
    assert len(store.find_consume_queue("A", 0).queue.files) == 4
    for k in (0, 15, 16, 17, 31, 32, 49):
        assert store.get_offset_in_queue_by_time("A", 0, T0 + 10 * k) == k
        assert store.get_offset_in_queue_by_time("A", 0, T0 + 10 * k + 3) == k if k % 16 != 15 else k + 1
    # 4.9.x picks ONE file (first whose last write >= timestamp) and searches only there: a time just after a
    # file's last message answers the next file's first message, even though the earlier one is closer
    assert store.get_offset_in_queue_by_time("A", 0, T0 + 10 * 15 + 1) == 16
    assert store.get_offset_in_queue_by_time("A", 0, T0 + 10 * 60) == 49


def test_search_offset_ignores_expired_units(open_store, clock):
    store = open_store()
    for i in range(60):
        put_at(store, clock, T0 + 10 * i, body=os.urandom(300))
    store.expire_files_now(count=2)
    first_kept = store.get_min_offset_in_queue("A", 0)
    assert first_kept > 0
    assert store.get_offset_in_queue_by_time("A", 0, T0 - 1) == first_kept
    assert store.get_offset_in_queue_by_time("A", 0, T0 + 10 * first_kept) == first_kept


def test_store_times(open_store, clock):
    store = open_store()
    assert store.get_earliest_message_time("A", 0) == -1
    assert store.get_commitlog_earliest_time() == -1
    for i in range(5):
        put_at(store, clock, T0 + 100 * i)
    assert store.get_earliest_message_time("A", 0) == T0
    assert store.get_commitlog_earliest_time() == T0
    assert store.get_message_store_timestamp("A", 0, 3) == T0 + 300
    assert store.get_message_store_timestamp("A", 0, 5) == -1
    assert store.get_message_store_timestamp("B", 0, 0) == -1
    assert store.get_commit_log_offset_in_queue("A", 0, 1) == store.find_consume_queue("A", 0).get_unit(1)[0]


def test_look_message_by_offset_msg_id(open_store):
    store = open_store()
    r = [store.put_message(make_msg(body=b"m%d" % i)) for i in range(5)][3]
    host, port, offset = decode_message_id(r.msg_id)
    assert (host, port) == ("10.0.0.7", 10911)
    msg = store.look_message_by_offset(offset)
    assert msg.body == b"m3" and msg.offset_msg_id == r.msg_id
    assert store.select_one_message_by_offset(offset, r.wrote_bytes) == store.select_one_message_by_offset(offset)
    assert store.select_one_message_by_offset(offset + 1) is None  # not a record start
    assert store.select_one_message_by_offset(10 ** 9) is None
    assert store.look_message_by_offset(-5) is None


def test_query_message_by_keys_and_unique_key(open_store, clock):
    store = open_store()
    for i in range(20):
        clock.advance(100)
        store.put_message(make_msg("A", i % 2, b"m%d" % i, keys=f"order-{i % 5} all", uniq=f"UNIQ{i:04d}"))
    clock.advance(100)
    store.put_message(make_msg("B", 0, b"other", keys="order-1"))
    res = store.query_message("A", "order-1", 32)
    bodies = sorted(MessageExt.decode(m).body for m in res.messages)
    assert bodies == sorted(b"m%d" % i for i in range(20) if i % 5 == 1)
    assert res.phy_offsets == sorted(res.phy_offsets, reverse=True)  # newest first
    assert [MessageExt.decode(m).body for m in store.query_message("A", "UNIQ0007").messages] == [b"m7"]
    assert len(store.query_message("A", "all", 32).messages) == 20
    assert len(store.query_message("A", "all", 3).messages) == 3
    assert [MessageExt.decode(m).body for m in store.query_message("B", "order-1").messages] == [b"other"]
    assert store.query_message("A", "nope").messages == []
    window = store.query_message("A", "all", 32, T0 + 500, T0 + 1000)
    assert sorted(MessageExt.decode(m).store_timestamp for m in window.messages) == \
        [T0 + 500, T0 + 600, T0 + 700, T0 + 800, T0 + 900, T0 + 1000]
    assert res.index_last_update_timestamp == clock.now


def test_query_message_across_index_file_rolls(open_store, clock):
    store = open_store(max_index_num=32, max_hash_slot_num=8)
    for i in range(100):
        clock.advance(10)
        store.put_message(make_msg("A", 0, b"m%d" % i, keys=f"k{i} common"))
    store.flush()
    assert len(store.index.files) > 3
    for i in (0, 31, 57, 99):
        assert [MessageExt.decode(m).body for m in store.query_message("A", f"k{i}").messages] == [b"m%d" % i]
    assert len(store.query_message("A", "common", 64).messages) == 64  # max_msgs_num_batch


def test_topics_and_queues_and_delete_topics(open_store):
    store = open_store()
    for topic, q in (("A", 0), ("A", 3), ("B", 1)):
        store.put_message(make_msg(topic, q))
    store.put_message(make_msg("A", 3))
    assert store.topics_and_queues() == {"A": [0, 3], "B": [1]}
    assert store.delete_topics(["A"]) == 2
    assert store.topics_and_queues() == {"B": [1]}
    assert not os.path.exists(os.path.join(store.config.consume_queue_dir, "A"))
    assert store.get_max_offset_in_queue("A", 3) == 0
    r = store.put_message(make_msg("A", 3, b"again"))  # queues are created again on the first write
    assert r.logics_offset == 0 and store.get_max_offset_in_queue("A", 3) == 1
    assert MessageExt.decode(store.get_message("G", "A", 3, 0).messages[0]).body == b"again"


def test_running_stats(open_store):
    store = open_store()
    store.put_message(make_msg())
    store.get_message("G", "TopicA", 0, 0)
    stats = store.running_stats()
    assert stats["putMessageTimesTotal"] == 1 and stats["getMessageTransferedMsgCount"] == 1
    assert stats["commitlogMaxOffset"] == store.commitlog_max_offset > 0
    assert stats["recoveryMode"] == "fresh"
