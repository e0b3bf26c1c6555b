"""The native lane's key-index drain (`_lane.index_drain`) against its Python twin (`IndexService._drain_python`):
random pending keys (topics, several keys per message, no key, more keys than a file holds, already indexed
offsets, store times far after the file's begin) into index files of a few slots (collisions and
chains) and few entries (full files), with blocks reserved in chunks or not: the same file bytes, the same
IndexFile and service state, the same position reached."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_emulator import native
from rocketmq_emulator.store import index_file
from rocketmq_emulator.store.index_file import IndexService

pytestmark = pytest.mark.skipif(native.lane is None, reason=f"the native lane does not run: {native.WHY}")
FAST_DIR = "/dev/shm" if Path("/dev/shm").is_dir() else None
KEYS = st.one_of(st.sampled_from(["k1", "order-42", "UNIQ0001", "\u00e9t\u00e9", "\U0001f600", ""]), st.text(max_size=6))


def state(service: IndexService) -> list[object]:
    return [service.max_indexed_phy, len(service.pending)] + [
        (f.mm[:], f.index_count, f.hash_slot_count, f.begin_timestamp, f.end_timestamp, f.begin_phy_offset,
         f.end_phy_offset, f.allocated) for f in service.files]


def drain_all(service: IndexService, rounds: list[list[tuple[str, list[str], int, int]]]) -> list[object]:
    reached = []
    for pend in rounds:
        service.pending.extend(pend)
        reached.append(service.drain())
    return reached


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=st.lists(st.lists(st.tuples(st.sampled_from(["Orders", "Pay", "t\u00e9"]), st.lists(KEYS, max_size=4),
                                          st.integers(0, 60), st.integers(0, 5000)), max_size=12),
                       min_size=1, max_size=5),
       slots=st.sampled_from([1, 3, 7, 64]), entries=st.sampled_from([4, 9, 40]), preallocate=st.booleans(),
       begin=st.sampled_from([1_700_000_000_000, 0]), far=st.booleans())
def test_index_drain_is_its_python_twin(rounds, slots, entries, preallocate, begin, far):  # type: ignore[no-untyped-def]
    # offsets and store times never go back (as a store's); an offset repeated is already indexed; a time may
    # jump further than an entry's 32-bit seconds reach
    phy, ts = 0, begin
    made = []
    for pend in rounds:
        out = []
        for topic, keys, step, dt in pend:
            phy += step
            ts += dt + (3_000_000_000_000 if far and dt > 4500 else 0)
            out.append((topic, keys, phy, ts))
        made.append(out)
    tmp = Path(tempfile.mkdtemp(prefix="index-drain-", dir=FAST_DIR))
    saved = index_file._index_drain
    try:
        results = []
        for name, drain in (("native", saved), ("python", None)):
            index_file._index_drain = drain
            service = IndexService(str(tmp / name), slots, entries, preallocate, clock=lambda: 1_700_000_000_000)
            try:
                reached = drain_all(service, [list(p) for p in made])
                results.append((reached, state(service)))
            finally:
                service.close()
    finally:
        index_file._index_drain = saved
        shutil.rmtree(tmp, ignore_errors=True)
    assert results[0] == results[1]
