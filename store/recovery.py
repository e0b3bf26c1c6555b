"""Start-up recovery (reference §8.6): decide how far the commitlog is valid and make consume queues and the key
index match it.

Modes (``RecoveryReport.mode``):

* ``fresh``: no commitlog segment yet.
* ``normal``: no ``abort`` file and the checkpoint carries a clean-stop end offset. The end is trusted: no record is
  read. Consume-queue ends are found by binary search on their last segment (no scan); a consume queue pointing
  beyond the end makes recovery fall back to ``abnormal``.
* ``abnormal``: ``abort`` file present (or the checkpoint cannot be trusted). The commitlog is walked from the
  checkpoint's confirm offset (everything before it was flushed and dispatched; from the first segment if the
  checkpoint is unusable), validating magic, size against the fields, position and body CRC; the walk stops at the
  first invalid record. Consume-queue units pointing at or beyond the walk's start are dropped, every valid
  record walked is dispatched again (consume queue + key index), the dirty tail of the commitlog is zeroed and
  later segments deleted.

Dispatch after recovery recomputes the consume-queue tags code from the record: the TAGS hash, or for
SCHEDULE_TOPIC_XXXX with a DELAY level the delivery time (store time + level delay), as RocketMQ's
``checkMessageAndReturnSize``.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.message import (PROPERTY_DELAY_TIME_LEVEL, PROPERTY_TAGS, decode_properties,
                                                tag_hash_code)
from rocketmq_emulator.protocol.topics import SCHEDULE_TOPIC, parse_delay_levels

from .mapped_file import StoreLoadError
from .message_ext_broker_inner import keys_of

if TYPE_CHECKING:
    from .checkpoint import StoreCheckpoint
    from .commitlog import CommitLog
    from .config import MessageStoreConfig
    from .consume_queue import ConsumeQueue
    from .index_file import IndexService
    from .mapped_file import MappedFile


class RecoveredStore(Protocol):
    """What recovery uses of the MessageStore (which imports this module)."""

    config: MessageStoreConfig
    commitlog: CommitLog
    index: IndexService
    checkpoint: StoreCheckpoint | None

    def consume_queues(self) -> list[ConsumeQueue]: ...

    def find_or_create_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None: ...



log = logging.getLogger("rocketmq_emulator.store")

@dataclass
class RecoveryReport:
    mode: str = "fresh"  # fresh | normal | abnormal
    reason: str = ""
    scan_start_offset: int = -1
    commitlog_max_offset: int = 0
    scanned_records: int = 0
    redispatched: int = 0
    dropped_cq_units: int = 0
    truncated_bytes: int = 0
    cut_valid_records: int = 0  # valid records cut after a bad one (recoveryCutInvalidRecords=true)
    rebuilt_cq_units: int = 0  # consume-queue units rebuilt from the commitlog after a hole (ConsumeQueue.hole)
    duration_ms: float = 0.0

    def summary(self, kept_messages: int, queues: int) -> str:
        """One line after an abnormal stop (kill -9, crash, power loss): what recovery found and kept."""
        return (f"recovered after an abnormal stop ({self.reason}): scanned {self.scanned_records} records "
                f"({self.commitlog_max_offset - max(self.scan_start_offset, 0)} bytes) from commitlog offset "
                f"{max(self.scan_start_offset, 0)}, kept {kept_messages} messages in {queues} queues "
                f"({self.redispatched} re-dispatched), dropped {self.truncated_bytes} bytes of torn tail, in "
                f"{self.duration_ms:.0f} ms")


def tags_code_of(topic: str, props: dict[str, str], store_ts: int, delay_levels: list[int]) -> int:
    if topic == SCHEDULE_TOPIC:
        level = props.get(PROPERTY_DELAY_TIME_LEVEL)
        if level and level.lstrip("-").isdigit():
            lv = min(int(level), len(delay_levels))
            if lv > 0:
                return store_ts + delay_levels[lv - 1]
    return tag_hash_code(props.get(PROPERTY_TAGS))


def _properties(raw: bytes) -> dict[str, str]:
    if not raw:
        return {}
    try:
        return decode_properties(raw)
    except ProtocolError:  # stored as received; not UTF-8: no tag, no keys
        return {}


def recover(store: RecoveredStore, abnormal: bool) -> RecoveryReport:
    started = time.perf_counter()
    report = RecoveryReport()
    cl = store.commitlog
    cp = store.checkpoint
    if cp is None:
        raise RuntimeError("recovery needs the store's checkpoint loaded first")
    if not cl.queue.files:
        report.mode = "fresh"
        for cq in store.consume_queues():
            report.dropped_cq_units += cq.truncate_by_physic(0)
        store.index.truncate_after(0)
    elif not abnormal and cp.ext_valid and cp.clean and _end_is_plausible(cl, cp.clean_end_offset) \
            and all(cq.max_physic_offset <= cp.clean_end_offset for cq in store.consume_queues()):
        report.mode = "normal"
        _set_end(cl, cp.clean_end_offset)
        cl.last_store_timestamp = cp.physic_msg_timestamp
        _rebuild_after_holes(store, report)
    else:
        report.mode = "abnormal"
        report.reason = "abort file present" if abnormal else "checkpoint has no clean end"
        for cq in store.consume_queues():
            cq.find_hole()
        _rebuild_after_holes(store, report)  # before the walk from the checkpoint, which would pad a hole
        _recover_abnormally(store, cp, report)
    report.commitlog_max_offset = cl.max_offset
    report.duration_ms = (time.perf_counter() - started) * 1000
    return report


def _rebuild_after_holes(store: RecoveredStore, report: RecoveryReport) -> None:
    """A consume queue whose last segment has a unit of size 0 followed by written units (a machine crash that
    lost a page, a damaged file) is not cut there and left short: its units from the hole on are dispatched
    again from the commitlog, the truth, and the file is named in a WARNING."""
    cl = store.commitlog
    delay_levels = parse_delay_levels(store.config.message_delay_level)
    for cq in store.consume_queues():
        if cq.hole is None:
            continue
        path, pos, after = cq.hole
        cq.hole = None
        start = cq.max_physic_offset if cq.max_physic_offset >= 0 else (
            cl.queue.files[0].file_from_offset if cl.queue.files else 0)
        rebuilt = 0
        for phy, req, _mf, _pos, size in cl.scan(start, check_crc=False):
            if req.queue_id == cq.queue_id and req.topic == cq.topic and req.sys_flag & 0xC in (0, 0x8):
                tags = tags_code_of(req.topic, _properties(req.properties_raw), req.store_timestamp, delay_levels)
                if cq.put(phy, size, tags, req.queue_offset):
                    rebuilt += 1
        report.rebuilt_cq_units += rebuilt
        log.warning("%s: a unit of size 0 at position %d is followed by %d written units (not a torn tail); the "
                    "queue was rebuilt from the commitlog from there: %d units, up to queue offset %d", path, pos,
                    after, rebuilt, cq.max_offset_in_queue)


def _end_is_plausible(cl: CommitLog, end: int) -> bool:
    files = cl.queue.files
    return files[0].file_from_offset <= end <= files[-1].file_from_offset + cl.file_size


def _set_end(cl: CommitLog, end: int) -> None:
    """Trust `end`: earlier segments are full, later ones are dropped; nothing is read."""
    kept: list[MappedFile] = []
    for mf in cl.queue.files:
        start = mf.file_from_offset
        if start + cl.file_size <= end:
            mf.wrote_position = mf.flushed_position = cl.file_size
            kept.append(mf)
        elif start < end or not kept:
            mf.wrote_position = mf.flushed_position = end - start
            kept.append(mf)
        else:
            mf.destroy()
    cl.queue.files = kept


def _recover_abnormally(store: RecoveredStore, cp: StoreCheckpoint, report: RecoveryReport) -> None:
    cl = store.commitlog
    files = cl.queue.files
    first = files[0].file_from_offset
    last_end = files[-1].file_from_offset + cl.file_size
    start = cp.confirm_offset if cp.ext_valid and first <= cp.confirm_offset <= last_end else first
    report.scan_start_offset = start
    for cq in store.consume_queues():
        report.dropped_cq_units += cq.truncate_by_physic(start)
    delay_levels = parse_delay_levels(store.config.message_delay_level)
    index = store.index if store.config.message_index_enable else None
    last_ts = cp.physic_msg_timestamp
    check_crc = store.config.check_crc_on_recover
    for phy, req, _mf, _pos, size in cl.scan(start, check_crc=check_crc):
        report.scanned_records += 1
        last_ts = req.store_timestamp
        tran = req.sys_flag & 0xC
        props = None
        if tran in (0, 0x8):
            props = _properties(req.properties_raw)
            queue = store.find_or_create_consume_queue(req.topic, req.queue_id)
            if queue is not None:
                queue.put(phy, size, tags_code_of(req.topic, props, req.store_timestamp, delay_levels),
                       req.queue_offset)
                report.redispatched += 1
        if index is not None and tran != 0xC and phy > index.max_indexed_phy:
            if props is None:
                props = _properties(req.properties_raw)
            keys = keys_of(props)
            if keys:
                index.build_index(req.topic, keys, phy, req.store_timestamp)
                if len(index.pending) >= 8192:
                    index.drain()
    end = cl.scan_end
    valid_after, valid_end = cl.valid_records_after(end)
    if valid_after:  # not a torn tail: a bad record with good ones after it; never zeroed silently
        where = cl.queue.find_mapped_file_by_offset(end)
        name = where.path if where is not None else store.config.commit_log_dir
        if not store.config.recovery_cut_invalid_records:
            raise StoreLoadError(
                f"{name}: an invalid record at position {end - (where.file_from_offset if where else 0)} (commitlog "
                f"offset {end}) is followed by {valid_after} valid records; the store is left as it is. To cut them, "
                f"start once with recoveryCutInvalidRecords=true (serve --recovery-cut-invalid true): the cut "
                f"bytes are copied aside first")
        aside = os.path.join(store.config.store_path_root_dir, f"recovery-cut-{end}.bin")
        cl.copy_range(end, valid_end, aside)
        report.cut_valid_records = valid_after
        log.error("%s: cut %d valid messages after an invalid record at commitlog offset %d "
                  "(recoveryCutInvalidRecords=true); the cut bytes (%d) are kept in %s", name, valid_after, end,
                  valid_end - end, aside)
    report.truncated_bytes = cl.queue.truncate_dirty_files(end)
    for cq in store.consume_queues():
        report.dropped_cq_units += cq.truncate_by_physic(end)
    store.index.truncate_after(end)
    cl.last_store_timestamp = last_ts
