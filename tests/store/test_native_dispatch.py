"""The native lane's consume-queue side of a run (`_lane.run_queue_offsets`, `_lane.put_units`) against its Python
twin (`MessageStore._reserve_queue_offsets`' loop, `_dispatch`'s unit loop and `ConsumeQueue.put_batch`): random
runs of single messages over several topics and queues, and batches, (new queues among them, consume-queue segments of a few units that roll in the
middle of a run, blocks reserved in chunks or not), put on a store per path: the same commitlog and
consume-queue files, the same queue offsets, the same answers."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_emulator import native
from rocketmq_emulator.store import MessageStore
from rocketmq_emulator.store import message_store as message_store_module
from store_testlib import Clock, make_msg, small_config

pytestmark = pytest.mark.skipif(native.lane is None, reason=f"the native lane does not run: {native.WHY}")
FAST_DIR = "/dev/shm" if Path("/dev/shm").is_dir() else None


def files(root: Path) -> list[tuple[str, bytes]]:
    return [(str(p.relative_to(root)), p.read_bytes()) for sub in ("commitlog", "consumequeue")
            for p in sorted((root / sub).rglob("*")) if p.is_file()]


def run_store(root: Path, runs: list[tuple[bool, list[tuple[str, int, int]]]], preallocate: bool) -> list[object]:
    store = MessageStore(small_config(root, preallocate_mapped_file=preallocate), clock=Clock()).start()
    out: list[object] = []
    try:
        for batch, run in runs:
            if batch:  # a batch: one topic and queue
                run = [(run[0][0], run[0][1], size) for _, _, size in run]
            msgs = [make_msg(topic, queue_id, b"m" * size, tags=f"T{queue_id}") for topic, queue_id, size in run]
            result = store.put_messages(msgs) if batch else \
                store.put_message_run(msgs) if len(msgs) > 1 else store.put_message(msgs[0])
            out.append((result.status, result.phy_offsets, result.queue_offsets))
        out.append([(key, cq.max_offset_in_queue, cq.max_physic_offset) for key, cq in sorted(store._cqs.items())])
    finally:
        store.stop()
    return out + files(root)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=st.lists(st.tuples(st.integers(0, 3).map(lambda n: n == 0), st.lists(
           st.tuples(st.sampled_from(["A", "B"]), st.integers(0, 3), st.integers(0, 300)), min_size=1, max_size=30)),
                     min_size=1, max_size=8),
       preallocate=st.booleans())
def test_run_units_are_their_python_twin(runs, preallocate):  # type: ignore[no-untyped-def]
    tmp = Path(tempfile.mkdtemp(prefix="dispatch-", dir=FAST_DIR))
    saved = message_store_module._run_queue_offsets, message_store_module._put_units
    try:
        native_out = run_store(tmp / "native", runs, preallocate)
        message_store_module._run_queue_offsets = message_store_module._put_units = None
        python_out = run_store(tmp / "python", runs, preallocate)
    finally:
        message_store_module._run_queue_offsets, message_store_module._put_units = saved
        shutil.rmtree(tmp, ignore_errors=True)
    assert native_out == python_out


def test_the_native_functions_are_the_ones_taken() -> None:
    """(so the test above compares two paths, not the Python one twice)"""
    assert message_store_module._put_units is native.lane.put_units
    assert message_store_module._run_queue_offsets is native.lane.run_queue_offsets
