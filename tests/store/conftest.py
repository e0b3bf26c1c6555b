from __future__ import annotations

import pytest

from store_testlib import Clock, small_config  # noqa: F401  (tests/store is on sys.path)
from rocketmq_emulator.store import MessageStore


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def open_store(tmp_path, clock):
    """open_store(**config overrides) -> a started MessageStore on tmp_path (stopped at teardown)."""
    opened = []

    def _open(root=None, clock_=None, **kw):
        store = MessageStore(small_config(root or tmp_path / "store", **kw), clock=clock_ or clock).start()
        opened.append(store)
        return store

    yield _open
    for store in opened:
        store.stop()
