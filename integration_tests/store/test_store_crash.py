"""Crash test: a real process appending in SYNC_FLUSH mode is killed with SIGKILL at random moments, many times.

After each kill the store is reopened (abnormal recovery) and checked:
* every append that had returned (acknowledged by the writer) is readable with identical bytes, by offset and
  through its consume queue;
* no partial record is readable: the commitlog walks cleanly (magic, size, CRC, position) to its max offset and
  every record decodes;
* every consume queue matches the commitlog (unit per record at its queue offset, tags code, nothing extra);
* the store accepts new appends.
At the end the recovered store is expired (half its segments) and every queue's min offset is its first kept unit.
The store directory is shared by all iterations, so later writers also recover from earlier kills (and from the
verifier's clean or unclean closes).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WRITER = HERE / "crash_writer.py"
ITERATIONS = 24

sys.path[:0] = [str(HERE), str(HERE.parents[1] / "tests" / "store")]  # the writer; the store tests' helpers
from crash_writer import crash_config  # noqa: E402
from store_testlib import digest, expected_record, make_msg  # noqa: E402

from rocketmq_emulator.protocol.message import MessageExt, tag_hash_code  # noqa: E402
from rocketmq_emulator.store import GetMessageStatus, MessageStore  # noqa: E402


def read_acks(path: Path) -> tuple[list[tuple], list[str]]:
    """Complete ack lines (a line cut by the kill is ignored) and the comment lines."""
    if not path.exists():
        return [], []
    acks, notes = [], []
    for line in path.read_bytes().decode().split("\n")[:-1]:
        if line.startswith("#"):
            notes.append(line)
            continue
        phy, size, qoff, topic, qid, sha, key = line.split(" ")
        acks.append((int(phy), int(size), int(qoff), topic, int(qid), sha, key))
    return acks, notes


def check_acks(store: MessageStore, acks: list[tuple]) -> None:
    for phy, size, qoff, topic, qid, sha, _key in acks:
        rec = store.select_one_message_by_offset(phy)
        assert rec is not None and len(rec) == size and digest(rec) == sha, f"acked record at {phy} lost"
        got = store.get_message("verify", topic, qid, qoff, 1)
        assert got.status is GetMessageStatus.FOUND and got.messages == [rec], f"{topic}/{qid}@{qoff} not served"


def check_consistency(store: MessageStore) -> int:
    units: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    count = 0
    for phy, data in store.commitlog.iter_records(store.commitlog_min_offset):
        m = MessageExt.decode(data)  # strict: a partial record would raise
        assert m.commit_log_offset == phy and m.store_size == len(data)
        units.setdefault((m.topic, m.queue_id), []).append((m.queue_offset, phy, len(data), tag_hash_code(m.tags)))
        count += 1
    assert store.commitlog.scan_end == store.commitlog_max_offset, "the log does not walk to its end"
    for (topic, qid), expected in units.items():
        cq = store.find_consume_queue(topic, qid)
        assert [u[0] for u in expected] == list(range(len(expected))), f"{topic}/{qid}: queue offsets not dense"
        assert cq.max_offset_in_queue == len(expected)
        for qoff, phy, size, tags in expected:
            assert cq.get_unit(qoff) == (phy, size, tags)
    assert {(cq.topic, cq.queue_id) for cq in store.consume_queues() if cq.max_offset_in_queue} == set(units)
    return count


def run_writer(root: Path, ack: Path, seed: int, rnd: random.Random) -> None:
    proc = subprocess.Popen([sys.executable, str(WRITER), str(root), str(seed), str(ack)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if seed % 5 == 0:  # anywhere, start-up and recovery included
            time.sleep(rnd.uniform(0.0, 0.4))
        else:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and proc.poll() is None and not read_acks(ack)[1]:
                time.sleep(0.005)
            time.sleep(rnd.uniform(0.01, 0.25))
        assert proc.poll() is None, f"writer died by itself: {proc.stderr.read().decode()[-2000:]}"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stderr.close()


def test_sigkill_while_appending_in_sync_flush_mode(tmp_path):
    root = tmp_path / "store"
    rnd = random.Random(20240601)
    acked: list[tuple] = []
    modes = set()
    cfg = crash_config(root)
    for it in range(ITERATIONS):
        ack = tmp_path / f"acks-{it}"
        run_writer(root, ack, it, rnd)
        new, notes = read_acks(ack)
        modes.update(n.split()[2] for n in notes if n.startswith("# ready"))
        assert not any("failed" in n for n in notes), notes
        acked += new
        store = MessageStore(cfg).start()
        try:
            assert store.recovery.mode == "abnormal" or not os.path.exists(ack) or not new
            check_acks(store, new)
            if it % 6 == 5 or it == ITERATIONS - 1:
                check_acks(store, acked)
                check_consistency(store)
            m = make_msg("CrashA", 1, b"verifier-%d" % it, keys=f"v{it}")
            r = store.put_message(m)  # the store accepts new appends
            assert r.is_ok()
            rec = expected_record(m, queue_offset=r.logics_offset, phy=r.wrote_offset,
                                  store_ts=r.store_timestamp, config=cfg)
            assert store.select_one_message_by_offset(r.wrote_offset) == rec
            acked.append((r.wrote_offset, len(rec), r.logics_offset, "CrashA", 1, digest(rec), f"v{it}"))
            sample = rnd.sample(acked, min(5, len(acked)))
            for phy, _s, _q, topic, _qid, _sha, key in sample:
                assert phy in store.query_message(topic, key).phy_offsets, f"key {key} not found"
        finally:
            store.stop(clean=rnd.random() < 0.5)
    assert len(acked) > ITERATIONS  # (hundreds per iteration on a normal disk)
    assert "abnormal" in modes
    with MessageStore(cfg) as store:
        check_acks(store, acked)
        assert check_consistency(store) >= len(acked)
        # ... and expired: half of the segments go, each queue's min moves to its first kept unit (§8.4)
        assert store.expire_files_now(count=len(store.commitlog.queue.files) // 2) > 0
        phy_min = store.commitlog_min_offset
        firsts: dict[tuple[str, int], int] = {}
        for phy, _size, qoff, topic, qid, _sha, _key in sorted(acked):
            if phy >= phy_min:
                firsts.setdefault((topic, qid), qoff)
        for (topic, qid), qoff in firsts.items():
            assert store.get_min_offset_in_queue(topic, qid) <= qoff  # unacked records may come first
            unit = store.find_consume_queue(topic, qid).get_unit(store.get_min_offset_in_queue(topic, qid))
            assert unit[0] >= phy_min
            below = store.get_min_offset_in_queue(topic, qid) - 1
            if below >= 0 and store.find_consume_queue(topic, qid).get_unit(below) is not None:
                assert store.find_consume_queue(topic, qid).get_unit(below)[0] < phy_min
        check_acks(store, [a for a in acked if a[0] >= phy_min])
        assert all(store.select_one_message_by_offset(a[0]) is None for a in acked if a[0] < phy_min)
