"""The broker's flush path: plan under the lock, fsync in a worker thread, commit the checkpoint after."""

from __future__ import annotations

import threading

from rocketmq_emulator.store import MessageStore
from rocketmq_emulator.store.message_store import execute_flush_plan
from store_testlib import make_msg, small_config


def test_nothing_due_until_the_interval_passed(open_store, clock):
    store = open_store()
    store.put_message(make_msg())
    assert store.plan_flush(clock.now) is None
    clock.advance(store.config.flush_interval_commit_log)
    plan = store.plan_flush(clock.now)
    assert plan is not None and not plan.checkpoint and len(plan.fds) == 1  # the commitlog only


def test_checkpoint_vouches_only_for_what_was_planned(tmp_path, clock):
    root = tmp_path / "store"
    store = MessageStore(small_config(root), clock=clock).start()
    for i in range(5):
        store.put_message(make_msg(body=b"before-%d" % i, keys=f"k{i}"))
    clock.advance(store.config.flush_interval_consume_queue)
    plan = store.plan_flush(clock.now)
    assert plan is not None and plan.checkpoint
    planned_end = store.commitlog_max_offset
    # appends go on while the worker thread syncs
    worker = threading.Thread(target=execute_flush_plan, args=(plan,))
    worker.start()
    for i in range(3):
        store.put_message(make_msg(body=b"after-%d" % i))
    worker.join()
    store.commit_flush_plan(plan)
    assert store.checkpoint.confirm_offset == planned_end
    store.stop(clean=False)  # as if killed: the next start must scan from the confirmed offset

    again = MessageStore(small_config(root), clock=clock).start()
    try:
        rec = again.recovery
        assert (rec.mode, rec.scan_start_offset, rec.scanned_records) == ("abnormal", planned_end, 3)
        assert again.get_max_offset_in_queue("TopicA", 0) == 8
        assert again.query_message("TopicA", "k4").messages  # the key index was flushed with the plan
    finally:
        again.stop()


def test_plan_for_a_stopped_store_is_none(tmp_path, clock):
    store = MessageStore(small_config(tmp_path / "s"), clock=clock).start()
    store.stop()
    assert store.plan_flush(clock.now + 10_000) is None
