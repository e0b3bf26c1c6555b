"""Retention (reference §8.5): deleting expired commitlog segments, then the consume-queue and index files wholly
below the new commitlog minimum, then correcting every consume queue's min logical offset (§8.4, seed 001).

``CleanCommitLogService.run(now_ms)`` is one run of RocketMQ's cleaner (the broker calls it every
``clean_resource_interval`` ms): it deletes only when it is the ``delete_when`` hour (local time of ``now_ms``), or
the disk is fuller than ``disk_max_used_space_ratio``, or a manual request (DELETE_EXPIRED_COMMITLOG) armed it
for 20 runs. Segments are examined oldest first, never the last one, stopping at the first kept one, at most
``delete_file_batch_max`` per run; a segment is expired when ``now >= last write + file_reserved_time`` (or
unconditionally above ``disk_space_clean_forcibly_ratio`` with ``clean_file_forcibly_enable``). Above
``disk_space_warning_level_ratio`` the store stops accepting messages until usage drops again.

"Last write" of a segment is the store timestamp of the first record of the next segment (every record of the
segment is older), falling back to the file's mtime. This is deterministic under an injected clock; RocketMQ uses
the mtime, which is the same instant up to a few milliseconds.

``expire_files_now(older_than_ms, count)`` is the explicit operation for tests and the admin API: delete, now,
the oldest segments whose every record is older than ``older_than_ms``, at most ``count`` of them (both
optional; never the last segment), then clean consume queues and the index as above.
"""

from __future__ import annotations

import shutil
import time
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .commitlog import CommitLog
    from .config import MessageStoreConfig
    from .consume_queue import ConsumeQueue
    from .index_file import IndexService


class CleanedStore(Protocol):
    """What retention uses of the MessageStore (which imports this module)."""

    config: MessageStoreConfig
    commitlog: CommitLog
    index: IndexService
    writable: bool
    _last_physical_min_offset: int

    def consume_queues(self) -> list[ConsumeQueue]: ...


def is_time_to_delete(delete_when: str, now_ms: int) -> bool:
    hour = time.localtime(now_ms / 1000).tm_hour
    for item in delete_when.split(";"):
        item = item.strip()
        if item.isdigit() and int(item) == hour:
            return True
    return False


def disk_used_ratio(path: str) -> float:
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return -1.0
    return (usage.total - usage.free) / usage.total if usage.total else -1.0


class CleanCommitLogService:
    MANUAL_DELETE_RUNS = 20

    def __init__(self, store: CleanedStore) -> None:
        self.store = store
        self.manual_delete_file_several_times = 0
        self.disk_ratio = disk_used_ratio  # replaceable (tests)
        self.last_disk_ratio = 0.0

    def execute_delete_files_manually(self) -> None:
        self.manual_delete_file_several_times = self.MANUAL_DELETE_RUNS

    def _space_check(self) -> tuple[bool, bool]:
        """(space full enough to delete, clean immediately); also flips the store's writable flag."""
        cfg = self.store.config
        ratios = [self.disk_ratio(cfg.commit_log_dir), self.disk_ratio(cfg.store_path_root_dir)]
        ratio = max(ratios)
        self.last_disk_ratio = ratio
        self.store.writable = ratio <= cfg.disk_space_warning_level_ratio / 100
        return ratio > cfg.disk_max_used_space_ratio / 100, ratio > cfg.disk_space_clean_forcibly_ratio / 100

    def run(self, now_ms: int) -> int:
        cfg = self.store.config
        time_up = is_time_to_delete(cfg.delete_when, now_ms)
        space_full, clean_immediately = self._space_check()
        manual = self.manual_delete_file_several_times > 0
        if not (time_up or space_full or manual):
            return 0
        if manual:
            self.manual_delete_file_several_times -= 1
        clean_at_once = clean_immediately and cfg.clean_file_forcibly_enable
        reserved_ms = cfg.file_reserved_time * 3600 * 1000
        files = self.store.commitlog.queue.files
        count = 0
        for i in range(len(files) - 1):
            if count >= cfg.delete_file_batch_max:
                break
            if not clean_at_once and now_ms < last_write_time(self.store.commitlog, i) + reserved_ms:
                break
            count += 1
        return delete_commitlog_files(self.store, count)


def last_write_time(commitlog: CommitLog, idx: int) -> int:
    """When segment `idx` was last written: store time of the next segment's first record, else its mtime."""
    files = commitlog.queue.files
    if idx + 1 < len(files):
        nxt = files[idx + 1]
        if nxt.wrote_position >= 64:
            ts = commitlog.pickup_store_timestamp(nxt.file_from_offset, 64)
            if ts > 0:
                return ts
    return files[idx].last_modified_ms()


def newest_write_ms(commitlog: CommitLog) -> int:
    """When the commitlog was last written (its active segment's mtime); 0 when it holds nothing."""
    files = commitlog.queue.files
    return files[-1].last_modified_ms() if files and commitlog.max_offset > 0 else 0


def expire_files_now(store: CleanedStore, older_than_ms: int | None = None, count: int | None = None) -> int:
    files = store.commitlog.queue.files
    n = 0
    for i in range(len(files) - 1):
        if count is not None and n >= count:
            break
        if older_than_ms is not None and last_write_time(store.commitlog, i) >= older_than_ms:
            break
        n += 1
    return delete_commitlog_files(store, n)


def delete_commitlog_files(store: CleanedStore, count: int) -> int:
    """Delete the `count` oldest commitlog segments, then clean consume queues and the index. Returns count."""
    if count > 0:
        count = len(store.commitlog.queue.delete_first_files(count))
    clean_consume_queues(store)
    return count


def clean_consume_queues(store: CleanedStore) -> None:
    """CleanConsumeQueueService: drop consume-queue / index files below the commitlog minimum, correct mins."""
    phy_min = store.commitlog.min_offset
    if phy_min < 0 or phy_min == store._last_physical_min_offset:
        return
    store._last_physical_min_offset = phy_min
    across = store.config.correct_min_offset_across_files
    for cq in store.consume_queues():
        cq.delete_expired_file(phy_min, across)
    store.index.delete_expired(phy_min)
