"""The offset journal on a full disk (a real 32 MiB tmpfs: mounting it starts `mount`, so this lives in the
integration tier): the write fails, offsets are still served from memory, and once space is back they are
written again and survive a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_emulator.broker.state.consumer_offset import ConsumerOffsetManager


def started(config_dir: Path) -> ConsumerOffsetManager:
    m = ConsumerOffsetManager(config_dir)
    m.load()
    return m


async def test_a_full_disk_fails_the_journal_write_and_recovers(tiny_fs):
    m = started(tiny_fs / "config")
    m.commit_offset("c", "g", "T", 0, 1)
    await m.writer.flushed()  # type: ignore[union-attr]
    filler = tiny_fs / "filler"
    with open(filler, "wb") as f:  # take every free byte
        try:
            while True:
                f.write(b"\0" * (1 << 20))
                f.flush()
        except OSError:
            pass
    try:
        for i in range(2, 200):  # enough commits to need a new WAL page
            m.commit_offset("c", f"g{i}", "T" * 100, i % 8, i)
        with pytest.raises(Exception, match="full|disk"):
            await m.writer.flushed()  # type: ignore[union-attr]
        assert m.writer.failed is not None  # type: ignore[union-attr]
        assert m.query_offset("g5", "T" * 100, 5) == 5  # still served from memory
    finally:
        filler.unlink()
    m.commit_offset("c", "g", "T", 0, 99)
    await m.writer.flushed()  # type: ignore[union-attr]  # space is back: written again
    assert m.writer.failed is None  # type: ignore[union-attr]
    await m.stop()
    m2 = started(tiny_fs / "config")
    assert m2.query_offset("g", "T", 0) == 99 and m2.query_offset("g5", "T" * 100, 5) == 5
    await m2.stop()
