"""The broker's two offset tiers (seed 003): the journal (SQLite, every commit) and consumerOffset.json (batched,
atomic with a .bak), and the compensation after a crash, which keeps per queue the newer by commit order."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketmq_emulator.broker.state.config_file import load_config_file, write_config_file
from rocketmq_emulator.broker.state.consumer_offset import ConsumerOffsetManager
from rocketmq_emulator.broker.state.offset_journal import OffsetJournal
from rocketmq_emulator.protocol.admin_bodies import ConsumerOffsetSerializeWrapper

#: consumerOffset.json as a 4.9.x broker writes it (fastjson pretty form, bare numeric queue ids, no dataVersion)
UPSTREAM_FILE = (Path(__file__).resolve().parents[1] / "golden" / "consumerOffset.json").read_bytes()


def started(config_dir: Path) -> ConsumerOffsetManager:
    m = ConsumerOffsetManager(config_dir)
    m.load()
    return m


async def crash(m: ConsumerOffsetManager) -> None:
    """What a kill -9 leaves: the journal's transactions done so far; consumerOffset.json as last written."""
    await m.drain()
    m.writer.shutdown()  # type: ignore[union-attr]
    m.journal._db.close()  # type: ignore[union-attr]  # no checkpoint, no final consumerOffset.json


async def write_file(m: ConsumerOffsetManager) -> None:
    content, seq = m.take_dirty()  # type: ignore[misc]
    write_config_file(m.path, content)
    m.written(seq)


async def test_journal_keeps_the_latest_entry_per_queue(tmp_path):
    j = OffsetJournal(tmp_path / "o.db")
    j.open()
    j.write([("T@g", 0, 5, 1), ("T@g", 1, 7, 2), ("T@g", 0, 9, 3)])
    j.write([("T@g", 1, None, 4)])
    j.close()
    j = OffsetJournal(tmp_path / "o.db")
    j.open()
    assert sorted(j.read_all()) == [("T@g", 0, 9, 3), ("T@g", 1, None, 4)]
    j.drop_removed(4)
    assert j.read_all() == [("T@g", 0, 9, 3)]
    j.close()


def test_a_torn_file_falls_back_to_the_backup(tmp_path):
    path = tmp_path / "consumerOffset.json"
    write_config_file(path, UPSTREAM_FILE)
    write_config_file(path, UPSTREAM_FILE.replace(b"250,1:250", b"300,1:300"))
    assert (tmp_path / "consumerOffset.json.bak").read_bytes() == UPSTREAM_FILE
    path.write_bytes(path.read_bytes()[:40])  # torn: a partial write by something else
    wrapper = load_config_file(path, ConsumerOffsetSerializeWrapper.decode)
    assert wrapper is not None and wrapper.offset_table["TopicTest@cg1"][0] == 250


async def test_an_upstream_file_loads_and_the_written_file_reads_back(tmp_path):
    (tmp_path / "consumerOffset.json").write_bytes(UPSTREAM_FILE)
    m = started(tmp_path)
    assert m.query_offset("cg1", "TopicTest", 2) == 249 and m.query_offset("cg1", "%RETRY%cg1", 0) == 0
    m.commit_offset("c", "cg1", "TopicTest", 2, 260)
    await write_file(m)
    text = m.path.read_bytes()
    assert b'"TopicTest@cg1":{0:250,1:250,2:260,3:251\n' in text  # fastjson's bare numeric keys, pretty
    again = ConsumerOffsetSerializeWrapper.decode(text)
    assert again.offset_table["TopicTest@cg1"] == {0: 250, 1: 250, 2: 260, 3: 251}
    assert again.data_version is not None and again.data_version.counter == m.seq == 1
    await m.stop()


async def test_a_crash_keeps_commits_made_after_the_last_file_write(tmp_path):
    m = started(tmp_path)
    m.commit_offset("c", "g", "T", 0, 10)
    await write_file(m)  # the file holds 10
    m.commit_offset("c", "g", "T", 0, 25)
    m.commit_offset("c", "g", "T", 1, 3)
    await crash(m)
    m2 = started(tmp_path)
    assert (m2.query_offset("g", "T", 0), m2.query_offset("g", "T", 1)) == (25, 3)
    assert m2.compensated == 2 and m2.seq == 3
    await m2.stop()


async def test_a_reset_after_the_last_file_write_survives_a_crash(tmp_path):
    m = started(tmp_path)
    m.commit_offset("c", "g", "T", 0, 500)
    await write_file(m)  # the file holds 500
    m.assign_reset(group="g", topic="T", queue_id=0, offset=20)  # a reset moves the offset back: smaller, but newer
    await crash(m)
    m2 = started(tmp_path)
    assert m2.query_offset("g", "T", 0) == 20  # the larger stale value in the file must not undo the reset
    await m2.stop()


async def test_the_file_wins_where_it_is_newer_than_the_journal(tmp_path):
    m = started(tmp_path)
    m.commit_offset("c", "g", "T", 0, 5)
    await m.drain()
    m.writer.shutdown()  # type: ignore[union-attr]  # the journal loses everything from here on
    m.writer = None
    m.commit_offset("c", "g", "T", 0, 8)
    await write_file(m)  # the file holds 8 (seq 2); the journal still says 5 (seq 1)
    m.journal._db.close()  # type: ignore[union-attr]
    m2 = started(tmp_path)
    assert m2.query_offset("g", "T", 0) == 8 and m2.compensated == 0
    await m2.stop()


async def test_a_removed_group_stays_removed_after_a_crash(tmp_path):
    m = started(tmp_path)
    m.commit_offset("c", "g", "T", 0, 5)
    m.commit_offset("c", "other", "T", 0, 6)
    await write_file(m)
    m.remove_group("g")
    await crash(m)
    m2 = started(tmp_path)
    assert m2.query_offset("g", "T", 0) == -1 and m2.query_offset("other", "T", 0) == 6
    m2.commit_offset("c", "g", "T", 0, 1)  # committed again later: back
    await write_file(m2)
    await asyncio.sleep(0)
    await m2.stop()
    m3 = started(tmp_path)
    assert m3.query_offset("g", "T", 0) == 1
    await m3.stop()


async def test_a_clean_stop_needs_no_compensation(tmp_path):
    m = started(tmp_path)
    for i in range(100):
        m.commit_offset("c", "g", "T", i % 4, i)
    await m.stop()
    m2 = started(tmp_path)
    assert m2.compensated == 0 and m2.query_offsets_of_group("g", "T") == {0: 96, 1: 97, 2: 98, 3: 99}
    await m2.stop()
