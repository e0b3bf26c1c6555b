"""Master-slave replication, the store's side (4.9.8's HA; no network here: broker/ha/ moves the bytes).

* Master: ``read_for_replication(store, offset, max_bytes)`` is 4.9.8's ``getCommitLogData``: the commitlog's
  bytes from `offset` to the written end of the segment holding it (never across a segment's end), at most
  `max_bytes`; empty when there is nothing new (or `offset` is no longer, or not yet, in the log).
  ``transfer_start(store, slave_offset)`` is where a slave's first transfer starts: where it says its log ends, or,
  for a slave reporting 0 (an empty one), the start of the master's LAST segment (``max - max % segmentSize``).
* Slave: ``append_replicated(store, phy_offset, data)`` is ``appendToCommitLog`` followed by the reput: the bytes
  are copied into the segment where the slave's copy ends (a segment is created when a transfer starts one), then
  every whole record now there is checked (magic, size against its fields, PHYSICALOFFSET; no CRC, as 4.9.8's
  reput) and dispatched as recovery dispatches (consume-queue unit for a NOT/COMMIT message with the tags code of
  ``recovery.tags_code_of``, index entries for every message but a ROLLBACK), and the log's end advances over it.
  A record cut at the end of a transfer stays beyond the log's end (its bytes are in the file, not counted) until
  the rest arrives, so the log itself always ends on a record boundary: a flush, a clean stop and a crash see only
  whole records, and a restarted slave reports that end and gets the rest again. The BLANK filler closing a
  segment counts once the whole rest of the segment has arrived.
"""

from __future__ import annotations

import logging
import struct
import threading
from typing import TYPE_CHECKING, Protocol

from rocketmq_emulator.protocol.message import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE
from rocketmq_emulator.protocol.topics import parse_delay_levels

from .config import BrokerRole
from .message_ext_broker_inner import keys_of
from .recovery import _properties, tags_code_of
from .results import ReplicaAppendResult, ReplicaAppendStatus

if TYPE_CHECKING:
    from .commitlog import CommitLog
    from .config import MessageStoreConfig
    from .consume_queue import ConsumeQueue
    from .index_file import IndexService
    from .mapped_file import MappedFile

log = logging.getLogger("rocketmq_emulator.store")


class MessageStore(Protocol):
    """What replication uses of the MessageStore (which imports this module)."""

    config: MessageStoreConfig
    commitlog: CommitLog
    index: IndexService
    _lock: threading.RLock
    _replica_pending: int
    _last_ts: int
    put_count: int
    put_bytes: int

    @property
    def running(self) -> bool: ...

    def find_or_create_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None: ...

    def _dispatch_failed(self, phy: int) -> None: ...

_HEAD = struct.Struct(">ii")
_MIN_RECORD = 92  # a record's smallest size (IPv4 hosts, empty body, one-byte topic, no properties)
_INDEX_DRAIN_AT = 256
_OK = ReplicaAppendStatus.APPENDED


def transfer_start(store: MessageStore, slave_offset: int) -> int:
    """Where the transfers to a slave that reports `slave_offset` first start (4.9.8's WriteSocketService)."""
    if slave_offset != 0:
        return slave_offset
    max_offset = store.commitlog.max_offset
    return max(0, max_offset - max_offset % store.config.mapped_file_size_commit_log)


def read_for_replication(store: MessageStore, offset: int, max_bytes: int) -> bytes:
    """The commitlog's bytes from `offset`, within its segment, at most `max_bytes` (b"": nothing to send)."""
    if max_bytes <= 0:
        return b""
    with store._lock:
        if not store.running:
            return b""
        cl = store.commitlog
        files = cl.queue.files
        if not files or offset < files[0].file_from_offset:
            return b""
        mf = cl.queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return b""
        pos = offset - mf.file_from_offset
        end = min(mf.wrote_position, pos + max_bytes)
        if end <= pos:
            return b""
        return mf.mm[pos:end]


def replica_max_offset(store: MessageStore) -> int:
    """Where the slave's copy ends: the commitlog's max offset plus the bytes of a record waiting for its rest."""
    return store.commitlog.max_offset + store._replica_pending


def append_replicated(store: MessageStore, phy_offset: int, data: bytes) -> ReplicaAppendResult:
    """A slave stores `data`, the master's commitlog bytes from `phy_offset` (module docstring)."""
    with store._lock:
        cl = store.commitlog
        if not store.running or store.config.broker_role is not BrokerRole.SLAVE:
            return ReplicaAppendResult(ReplicaAppendStatus.SERVICE_NOT_AVAILABLE, replica_max_offset(store))
        file_size = cl.file_size
        pending = store._replica_pending
        expected = cl.max_offset + pending
        if expected == 0:  # an empty slave takes the master's offset, which starts a segment (4.9.8: slave offset 0)
            if phy_offset % file_size or phy_offset < 0:
                return ReplicaAppendResult(ReplicaAppendStatus.OFFSET_MISMATCH, 0)
        elif phy_offset != expected:
            return ReplicaAppendResult(ReplicaAppendStatus.OFFSET_MISMATCH, expected)
        if not data:
            return ReplicaAppendResult(_OK, expected)
        files = cl.queue.files
        mf = files[-1] if files else None
        if expected == 0 and phy_offset != 0 and mf is not None:
            cl.queue.truncate_dirty_files(0, keep_first=False)  # empty segments of another start: replaced
            mf = None
        if mf is None or (pending == 0 and mf.wrote_position >= file_size):
            try:
                mf = cl.queue.create_mapped_file(phy_offset)
            except (OSError, ValueError) as exc:
                log.error("slave: cannot create the commitlog segment at %d: %s", phy_offset, exc)
                return ReplicaAppendResult(ReplicaAppendStatus.CREATE_MAPEDFILE_FAILED, expected)
        pos = phy_offset - mf.file_from_offset
        end = pos + len(data)
        if pos < 0 or end > file_size:
            log.warning("slave: a transfer of %d bytes at %d crosses the end of segment %d: dropped", len(data),
                        phy_offset, mf.file_from_offset)
            return _bad(store, expected)
        if not mf.ensure_allocated(end):
            return ReplicaAppendResult(ReplicaAppendStatus.SERVICE_NOT_AVAILABLE, expected)
        mm = mf.mm
        mm[pos:end] = data
        status, dispatched, arrived = _dispatch(store, mf, end)
        store._replica_pending = end - mf.wrote_position if status is _OK else 0
        if dispatched and cl.sync_flush:
            cl._flush_sync()
        return ReplicaAppendResult(status, replica_max_offset(store), dispatched, arrived)


def _bad(store: MessageStore, expected: int) -> ReplicaAppendResult:
    store._replica_pending = 0  # what waited is dropped with the bad transfer: the master resends it
    return ReplicaAppendResult(ReplicaAppendStatus.BAD_DATA, store.commitlog.max_offset)


def _dispatch(store: MessageStore, mf: MappedFile, end: int
              ) -> tuple[ReplicaAppendStatus, int, dict[tuple[str, int], int]]:
    """Advance the log's end over the whole records (and a whole BLANK filler) between it and `end` (a position in
    segment `mf`), dispatching each (4.9.8's reput on a slave)."""
    cl = store.commitlog
    file_size = cl.file_size
    mm = mf.mm
    base = mf.file_from_offset
    p = mf.wrote_position
    index = store.index if store.config.message_index_enable else None
    delay_levels: list[int] | None = None
    arrived: dict[tuple[str, int], int] = {}
    dispatched = 0
    wrote = 0
    last_ts = 0
    status = _OK
    while end - p >= 8:
        total, magic = _HEAD.unpack_from(mm, p)
        if magic == BLANK_MAGIC_CODE:
            if total != file_size - p:
                status = _bad_record(base + p, "a BLANK filler whose size is not the rest of its segment")
            elif end == file_size:
                p = file_size
            break
        if magic != MESSAGE_MAGIC_CODE or total < _MIN_RECORD or p + total > file_size:
            status = _bad_record(base + p, f"no record (magic {magic & 0xFFFFFFFF:#x}, size {total})")
            break
        if p + total > end:
            break  # cut at the end of the transfer: waits for the rest
        size, req = cl.check_message_and_return_size(mm, p, p + total, base + p, check_crc=False)
        if size != total or req is None:
            status = _bad_record(base + p, "a record whose fields do not match its size or place")
            break
        tran = req.sys_flag & 0xC
        props = None
        if tran == 0 or tran == 0x8:
            props = _properties(req.properties_raw)
            if delay_levels is None:
                delay_levels = parse_delay_levels(store.config.message_delay_level)
            queue = store.find_or_create_consume_queue(req.topic, req.queue_id)
            if queue is not None:
                if queue.put(req.phy, size, tags_code_of(req.topic, props, req.store_timestamp, delay_levels),
                             req.queue_offset):
                    arrived[(req.topic, req.queue_id)] = queue.max_offset_in_queue
                else:
                    store._dispatch_failed(req.phy)
        if index is not None and tran != 0xC and req.phy > index.max_indexed_phy:
            if props is None:
                props = _properties(req.properties_raw)
            keys = keys_of(props)
            if keys:
                index.build_index(req.topic, keys, req.phy, req.store_timestamp)
        last_ts = req.store_timestamp
        dispatched += 1
        wrote += size
        p += size
        mf.wrote_position = p
    mf.wrote_position = p
    if dispatched:
        cl.last_store_timestamp = last_ts
        if last_ts > store._last_ts:
            store._last_ts = last_ts
        store.put_count += dispatched
        store.put_bytes += wrote
        if index is not None and len(index.pending) >= _INDEX_DRAIN_AT:
            index.drain()
    return status, dispatched, arrived


def _bad_record(phy: int, what: str) -> ReplicaAppendStatus:
    log.warning("slave: the master's bytes at commitlog offset %d are %s: dropped from there", phy, what)
    return ReplicaAppendStatus.BAD_DATA
