"""MessageStore: the store facade the broker uses (RocketMQ's DefaultMessageStore), synchronous, no threads.

Layout under ``store_path_root_dir`` as §8.1: ``commitlog/``, ``consumequeue/<topic>/<queueId>/``, ``index/``,
``checkpoint``, ``abort``, ``lock``. Lifecycle: ``start()`` (load, recover, create ``abort``), ``stop()`` (flush,
write the clean end into the checkpoint, delete ``abort``); ``with MessageStore(cfg) as store:`` does both.

Design choices:

* Dispatch runs right after each append, under the same lock: the consume-queue unit is written at once; the
  key-index entries are queued and written in batches (like RocketMQ's asynchronous reput) before any query, at
  every checkpoint and every 2048 messages. Consume queues and index stay derivable from the commitlog: abnormal
  recovery re-dispatches from the checkpoint's confirm offset, which never passes an undispatched message.
* A consume-queue unit that cannot be written (no file can be created: disk full) stops the store accepting
  messages (SERVICE_NOT_AVAILABLE, ``dispatch_error_offset`` set) and forces the next start to re-dispatch.
* The queue offset of a message is its consume queue's max offset ("next offset", rebuilt from the consume queues
  on start). PREPARED / ROLLBACK transactional messages get queue offset 0 and are not dispatched to a consume
  queue (ROLLBACK is not indexed either).
* Store timestamps come from ``clock`` (ms, injectable) and are made monotonic in log order; a batch has one.
* One flush path: ``plan_flush`` (under the lock) -> ``execute_flush_plan`` (fdatasync; the broker runs it in
  a worker thread) -> ``commit_flush_plan`` (positions and checkpoint, under the lock). ``flush_if_due`` runs
  the three inline, stop and ``flush()`` likewise; the broker calls ``clean_expired_files(now_ms)``
  periodically; nothing runs by itself.
* Operations return status values: ``PutMessageResult`` / ``GetMessageResult``; a stopped store answers
  SERVICE_NOT_AVAILABLE to puts and ``None`` to ``get_message`` (RocketMQ's "store getMessage return null").
* ``NO_MATCHED_LOGIC_QUEUE`` is answered for a topic name or queue id that cannot name a consume queue
  (empty, path separators, negative id); any other unknown queue reads as empty (NO_MESSAGE_IN_QUEUE), as 4.x
  creates queue objects on demand. Queue files appear on the first write.
* "On disk" (§9.3, §9.7) is deterministic: see ``MessageStoreConfig.total_physical_memory_size``.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import threading
import time
from typing import Callable, Iterable, Sequence

from rocketmq_emulator.native import lane
from rocketmq_emulator.protocol.message import pack_host

from . import recovery as _recovery
from . import replication as _replication
from . import retention as _retention
from .checkpoint import StoreCheckpoint
from .commitlog import CommitLog
from .config import BrokerRole, FlushDiskType, MessageStoreConfig
from .consume_queue import ConsumeQueue
from .format import check_store_format
from .index_file import IndexService
from .mapped_file import MappedFile, MappedFileQueue, StoreLoadError, fsync_dir
from .message_ext_broker_inner import MessageExtBrokerInner
from .message_lookup import MessageLookup, valid_queue_name
from .results import PutMessageResult, PutMessageStatus, ReplicaAppendResult, host_prefix

_TRANSACTION = 0xC  # the sys-flag's transaction type bits
_PREPARED = 0x4
_ROLLBACK = 0xC
_SINGLE, _BATCH, _RUN = 1, 2, 3  # what a put stores: one message, a batch, single messages read together
_NOT_AVAILABLE = PutMessageStatus.SERVICE_NOT_AVAILABLE
#: the native lane's twins of `_reserve_queue_offsets` (a run) and of `_dispatch`'s unit loop, None on the Python path
_run_queue_offsets = lane.run_queue_offsets if lane is not None else None
_put_units = lane.put_units if lane is not None else None
_index_pending = lane.index_pending if lane is not None else None
_INDEX_DRAIN_AT = 256  # small drains keep each pause short (latency); larger ones are only slightly cheaper


_time_ns = time.time_ns
_SLAVE = BrokerRole.SLAVE
log = logging.getLogger("rocketmq_emulator.store")


def _now_ms() -> int:
    return _time_ns() // 1_000_000


class FlushPlan:
    """A flush prepared under the store lock: the files to fsync (their descriptors, open for the files' life)
    and what the checkpoint may then vouch for."""

    __slots__ = ("checkpoint", "fds", "positions", "confirm", "timestamp", "index_count", "clean_possible")

    def __init__(self, checkpoint: bool) -> None:
        self.checkpoint = checkpoint
        self.clean_possible = False
        self.fds: list[int] = []
        self.positions: list[tuple[MappedFile, int]] = []
        self.confirm = 0
        self.timestamp = 0
        self.index_count = 0

    def take(self, queue: MappedFileQueue) -> None:
        for mf in queue.files:
            if mf.wrote_position > mf.flushed_position:
                self.fds.append(mf.fd)
                self.positions.append((mf, mf.wrote_position))


def execute_flush_plan(plan: FlushPlan) -> None:
    """fdatasync every planned file. Needs no lock and releases the GIL, so it belongs in a worker thread: on
    Linux a file's fsync writes back the pages dirtied through its shared mapping, as msync does. It opens
    nothing, so it works however many descriptors the process has in use. A file that retention deleted (and
    closed) meanwhile has nothing left to keep: its descriptor fails with EBADF, which is skipped."""
    for fd in plan.fds:
        try:
            os.fdatasync(fd)
        except OSError as exc:
            if exc.errno not in (errno.EBADF, errno.EINVAL):
                raise


class MessageStore(MessageLookup):
    #: a SLAVE's replicated bytes beyond the commitlog's end: a record cut at the end of a transfer (replication.py)
    _replica_pending = 0
    _slave_refusals = 0

    def __init__(self, config: MessageStoreConfig | None = None, *, clock: Callable[[], int] | None = None) -> None:
        self.config = config or MessageStoreConfig()
        self._clock = clock  # None: wall clock, inlined on the put path
        self.clock = clock or _now_ms
        self._lock = threading.RLock()
        self._running = False
        self._lock_fd = -1
        packed = pack_host(self.config.store_host)
        self._host_prefix = host_prefix(packed, self.config.store_port)
        #: the upper-case hex of store host + port: the first characters of every offset message id
        self.msg_id_host_hex = self._host_prefix.hex().upper()
        self.commitlog = CommitLog(self.config, packed, self.config.store_port)
        self.index = IndexService(self.config.index_dir, self.config.max_hash_slot_num, self.config.max_index_num,
                                  self.config.preallocate_mapped_file, self.clock)
        self.checkpoint: StoreCheckpoint | None = None
        self.cleaner = _retention.CleanCommitLogService(self)
        self.recovery: _recovery.RecoveryReport | None = None
        self.format_version = 0  # the store's format version (store/format.py), known once started
        self._writable = True
        self.dispatch_error_offset: int | None = None
        self._last_disk_recheck = 0.0
        self._accepting = False  # running and writable: the one flag the put path reads
        self._index_enabled = self.config.message_index_enable
        self._cqs: dict[tuple[str, int], ConsumeQueue] = {}
        self.looked_up_queues: set[tuple[str, int]] = set()
        self._last_ts = 0
        self._last_cl_flush = 0
        self._last_cq_flush = 0
        self._last_physical_min_offset = -1
        self.put_count = 0
        self.put_bytes = 0
        self.get_count = 0
        self.get_found = 0

    def reconfigure(self, config: MessageStoreConfig) -> None:
        """Settings changed at run time (the broker's updateBrokerConfig): the ones read on each use (flush
        interval, retention, max message size) take effect at once; paths and file sizes stay as opened."""
        self.config = config
        self.commitlog.config = config
        self.commitlog.max_message_size = config.max_message_size
        self.writable = self._writable  # the role may have changed: a SLAVE refuses puts

    # ------------------------------------------------------------------------------------------------
    # lifecycle
    # ------------------------------------------------------------------------------------------------
    def start(self) -> "MessageStore":
        """Load and recover. Raises StoreLoadError when the directory cannot be used."""
        cfg = self.config
        os.makedirs(cfg.store_path_root_dir, exist_ok=True)
        self._acquire_lock()
        try:
            self.format_version = check_store_format(cfg.format_path, cfg.store_path_root_dir)
            abnormal = os.path.exists(cfg.abort_path)
            self.checkpoint = StoreCheckpoint(cfg.checkpoint_path)
            self.commitlog.queue.load()
            self._load_consume_queues()
            self.index.load()
            self.recovery = _recovery.recover(self, abnormal)
            self._last_ts = self.commitlog.last_store_timestamp
            phy_min = self.commitlog.min_offset
            self._last_physical_min_offset = phy_min
            for cq in self._cqs.values():
                cq.correct_min_offset(max(phy_min, 0), cfg.correct_min_offset_across_files)
            # running state: the checkpoint no longer vouches for a clean end; the abort file marks the run
            self._write_checkpoint()
            with open(cfg.abort_path, "wb") as f:
                os.fsync(f.fileno())
            fsync_dir(cfg.store_path_root_dir)
        except BaseException:
            self._close_files()
            self._release_lock()
            raise
        now = self.clock()
        self._last_cl_flush = self._last_cq_flush = now
        self._running = True
        self.writable = self._writable
        return self

    def stop(self, clean: bool = True) -> None:
        """Flush everything, record the clean end, delete the abort file and close.

        ``clean=False`` closes without any of that, leaving the files as a killed process would (tests)."""
        with self._lock:
            if not self._running:
                return
            self._running = False
            self._accepting = False
            if clean:
                self._write_checkpoint(clean=True)
                try:
                    os.unlink(self.config.abort_path)
                except FileNotFoundError:
                    pass
                fsync_dir(self.config.store_path_root_dir)
            self._close_files()
            self._release_lock()

    shutdown = stop

    def __enter__(self) -> "MessageStore":
        if not self._running:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._running

    @property
    def writable(self) -> bool:
        """False while the disk is fuller than disk_space_warning_level_ratio (puts: SERVICE_NOT_AVAILABLE)."""
        return self._writable

    @writable.setter
    def writable(self, value: bool) -> None:
        self._writable = bool(value)
        self._accepting = self._running and self._writable and self.dispatch_error_offset is None \
            and self.config.broker_role is not _SLAVE

    def _refused(self) -> PutMessageResult | None:
        """A put while not accepting: SERVICE_NOT_AVAILABLE, or None when the put may go on after all. If only
        the disk guard refuses, look at the disk again (at most once a second) so that writes resume as soon as
        space is freed rather than at the cleaner's next run. A SLAVE refuses every put (4.9.8's checkStoreStatus)."""
        if self.config.broker_role is _SLAVE:
            return self._refused_as_slave()
        if self._running and not self._writable and self.dispatch_error_offset is None:
            now = time.monotonic()
            if now - self._last_disk_recheck >= 1.0:
                self._last_disk_recheck = now
                self.cleaner._space_check()
                if self._accepting:
                    return None
        return PutMessageResult(_NOT_AVAILABLE)

    def _refused_as_slave(self) -> PutMessageResult:
        if self._slave_refusals % 50000 == 0:
            log.warning("broke role is slave, so putMessage is forbidden")
        self._slave_refusals += 1
        return PutMessageResult(_NOT_AVAILABLE)

    # ------------------------------------------------------------------------------------------------
    # master-slave replication (replication.py; the network side is broker/ha/)
    # ------------------------------------------------------------------------------------------------
    def append_replicated(self, phy_offset: int, data: bytes) -> ReplicaAppendResult:
        """A SLAVE stores its master's commitlog bytes `data` from `phy_offset` (which must be where its copy ends)
        and dispatches every whole record now there (4.9.8's appendToCommitLog + reput)."""
        return _replication.append_replicated(self, phy_offset, data)

    def read_for_replication(self, offset: int, max_bytes: int) -> bytes:
        """A master's commitlog bytes from `offset` to the written end of its segment, at most `max_bytes` (b"":
        nothing new)."""
        return _replication.read_for_replication(self, offset, max_bytes)

    def replication_start_offset(self, slave_offset: int) -> int:
        """Where a master starts transferring to a slave that reports `slave_offset` (0: its last segment's
        start)."""
        return _replication.transfer_start(self, slave_offset)

    def replica_max_offset(self) -> int:
        """Where a slave's copy ends (what it reports to its master): the commitlog's max offset plus the bytes of
        a record still waiting for its rest."""
        return _replication.replica_max_offset(self)

    def _dispatch_failed(self, phy: int) -> None:
        """A consume-queue unit could not be written (no file could be created): the record is in the commitlog
        but not in its queue. Stop accepting messages (RocketMQ: logic queue error) and never let the checkpoint
        vouch for this record, so the next start re-dispatches it."""
        if self.dispatch_error_offset is None or phy < self.dispatch_error_offset:
            self.dispatch_error_offset = phy
        self._accepting = False

    def _acquire_lock(self) -> None:
        fd = os.open(self.config.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreLoadError(f"{self.config.store_path_root_dir} is locked by another store") from None
        os.ftruncate(fd, 0)
        os.write(fd, b"lock")
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd >= 0:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = -1

    def _close_files(self) -> None:
        self.commitlog.queue.close()
        for cq in self._cqs.values():
            cq.close()
        self._cqs.clear()
        self.index.close()
        if self.checkpoint is not None:
            self.checkpoint.close()

    def _load_consume_queues(self) -> None:
        root = self.config.consume_queue_dir
        if not os.path.isdir(root):
            return
        for topic in sorted(os.listdir(root)):
            tdir = os.path.join(root, topic)
            if not os.path.isdir(tdir):
                continue
            for qname in os.listdir(tdir):
                if not qname.isdigit():
                    continue
                cq = self._new_cq(topic, int(qname))
                cq.load()
                self._cqs[(topic, int(qname))] = cq

    def _new_cq(self, topic: str, queue_id: int) -> ConsumeQueue:
        return ConsumeQueue(topic, queue_id, self.config.consume_queue_dir, self.config.mapped_file_size_consume_queue,
                            self.config.preallocate_mapped_file)

    # ------------------------------------------------------------------------------------------------
    # consume queues
    # ------------------------------------------------------------------------------------------------
    def consume_queues(self) -> list[ConsumeQueue]:
        return list(self._cqs.values())

    def find_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self._cqs.get((topic, queue_id))

    def find_or_create_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        cq = self._cqs.get((topic, queue_id))
        if cq is None and valid_queue_name(topic, queue_id):
            cq = self._cqs[(topic, queue_id)] = self._new_cq(topic, queue_id)
        return cq

    def topics_and_queues(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for topic, qid in self._cqs:
            out.setdefault(topic, []).append(qid)
        return {t: sorted(q) for t, q in sorted(out.items())}

    def delete_topics(self, topics: Iterable[str]) -> int:
        """Delete the consume queues (files included) of `topics`; the commitlog keeps their records."""
        topics = set(topics)
        count = 0
        with self._lock:
            for key in [k for k in self._cqs if k[0] in topics]:
                self._cqs.pop(key).destroy()
                count += 1
            for topic in topics:
                try:
                    os.rmdir(os.path.join(self.config.consume_queue_dir, topic))
                except OSError:
                    pass
        return count

    # ------------------------------------------------------------------------------------------------
    # put
    # ------------------------------------------------------------------------------------------------
    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """One message (DefaultMessageStore.putMessage). A PREPARED or ROLLBACK transactional message gets queue
        offset 0 and no consume-queue unit."""
        return self._put((msg,), _SINGLE)

    def put_messages(self, msgs: Sequence[MessageExtBrokerInner]) -> PutMessageResult:
        """A batch (putMessages): one topic and queue, consecutive queue offsets, no transactional message."""
        return self._put(msgs, _BATCH)

    def put_message_run(self, msgs: Sequence[MessageExtBrokerInner]) -> PutMessageResult:
        """Single messages read together (any topics and queues, no transactional one): the same records, queue
        offsets and dispatch as `put_message` one after the other. All or nothing: on a failure nothing is
        written (the caller may put them one by one to learn each message's own status); a run that does not fit
        the current commitlog segment is not written either (RUN_CROSSES_SEGMENT: put them one by one)."""
        return self._put(msgs, _RUN)

    def _put(self, msgs: Sequence[MessageExtBrokerInner], kind: int) -> PutMessageResult:
        """Every put: the accepting guard, the queue offsets reserved, one store timestamp, the one record writer
        (CommitLog.put_messages), then the dispatch."""
        if not self._accepting:
            refused = self._refused()
            if refused is not None:
                return refused
        with self._lock:
            reserved = self._reserve_queue_offsets(msgs, kind)
            if isinstance(reserved, PutMessageStatus):
                return PutMessageResult(reserved)
            cqs, queue_offsets = reserved
            ts = _time_ns() // 1_000_000 if self._clock is None else self._clock()
            if ts < self._last_ts:  # the wall clock stepped back: store times stay monotonic in log order
                ts = self._last_ts
            status, offsets, sizes = self.commitlog.put_messages(msgs, queue_offsets, ts, kind == _RUN)
            if offsets is None or sizes is None:
                return PutMessageResult(status)
            self._last_ts = ts
            wrote = self._dispatch(msgs, cqs, offsets, sizes, queue_offsets, ts, kind)
        return PutMessageResult(status, offsets[0], wrote, ts, queue_offsets[0], len(msgs), offsets, queue_offsets,
                                self._host_prefix)

    def _reserve_queue_offsets(self, msgs: Sequence[MessageExtBrokerInner], kind: int
                               ) -> tuple[list[ConsumeQueue | None], list[int]] | PutMessageStatus:
        """Each message's consume queue and queue offset (its queue's next offset, consecutive within the put), with
        room made for their units so that a full disk refuses the put before anything is written; or the status
        that refuses it. A single PREPARED / ROLLBACK message has no unit (queue offset 0); in a batch or a run a
        transactional message is illegal, and a batch is one topic and queue."""
        if not msgs:
            return PutMessageStatus.MESSAGE_ILLEGAL
        cqs_by_key = self._cqs
        if kind == _BATCH:
            first = msgs[0]
            topic, queue_id = first.topic, first.queue_id
            for m in msgs:
                if m.topic != topic or m.queue_id != queue_id or m.sys_flag & _TRANSACTION:
                    return PutMessageStatus.MESSAGE_ILLEGAL
            cq = cqs_by_key.get((topic, queue_id)) or self.find_or_create_consume_queue(topic, queue_id)
            if cq is None:
                return PutMessageStatus.MESSAGE_ILLEGAL
            start = cq.max_offset_in_queue
            if not cq.reserve(len(msgs)):
                return _NOT_AVAILABLE
            return [cq] * len(msgs), list(range(start, start + len(msgs)))
        if kind == _RUN and _run_queue_offsets is not None and type(msgs) is list:
            native = _run_queue_offsets(msgs, cqs_by_key)  # None: the loop below
            if native is not None:
                for cq, count in native[2]:
                    if not cq.reserve(count):
                        return _NOT_AVAILABLE
                return native[0], native[1]
        cqs: list[ConsumeQueue | None] = []
        queue_offsets: list[int] = []
        next_offsets: dict[ConsumeQueue, int] = {}
        for m in msgs:
            tran = m.sys_flag & _TRANSACTION
            if tran:
                if kind != _SINGLE:
                    return PutMessageStatus.MESSAGE_ILLEGAL
                if tran == _PREPARED or tran == _ROLLBACK:
                    cqs.append(None)
                    queue_offsets.append(0)
                    continue
            cq = cqs_by_key.get((m.topic, m.queue_id)) or self.find_or_create_consume_queue(m.topic, m.queue_id)
            if cq is None:
                return PutMessageStatus.MESSAGE_ILLEGAL
            qo = next_offsets.get(cq, cq.max_offset_in_queue)
            next_offsets[cq] = qo + 1
            cqs.append(cq)
            queue_offsets.append(qo)
        for cq, end in next_offsets.items():
            if not cq.reserve(end - cq.max_offset_in_queue):
                return _NOT_AVAILABLE
        return cqs, queue_offsets

    def _dispatch(self, msgs: Sequence[MessageExtBrokerInner], cqs: list[ConsumeQueue | None], offsets: list[int],
                  sizes: list[int], queue_offsets: list[int], ts: int, kind: int) -> int:
        """What RocketMQ's reput does with stored records: their consume-queue units (a unit that cannot be
        written stops the store accepting) and their key-index entries (not for a ROLLBACK message, which is
        only ever put alone); then the store's counters. Returns the bytes written."""
        if kind == _BATCH:
            cq = cqs[0]
            assert cq is not None
            i = 0 if _put_units is None or type(msgs) is not list else _put_units(cqs, offsets, sizes, msgs,
                                                                                  queue_offsets)
            if i < len(msgs) and not cq.put_batch(offsets[i:], sizes[i:], [m.tags_code for m in msgs[i:]],
                                                  queue_offsets[i]):
                self._dispatch_failed(offsets[i])
        else:  # by index, not zip or enumerate: for one message creating those costs more than the indexing
            # the native lane writes the units its fast path can (all, nearly always); this loop the rest
            i = 0 if _put_units is None or type(msgs) is not list else _put_units(cqs, offsets, sizes, msgs,
                                                                                  queue_offsets)
            for unit_cq in cqs[i:] if i else cqs:
                if unit_cq is not None and not unit_cq.put(offsets[i], sizes[i], msgs[i].tags_code, queue_offsets[i]):
                    self._dispatch_failed(offsets[i])
                i += 1
        if self._index_enabled and not (kind == _SINGLE and msgs[0].sys_flag & _TRANSACTION == _ROLLBACK):
            pending = self.index.pending
            if _index_pending is not None and type(msgs) is list:
                _index_pending(pending, msgs, offsets, ts)
            else:
                i = 0
                for m in msgs:
                    keys = m.keys if m.keys is not None else m.index_keys()
                    if keys:
                        pending.append((m.topic, keys, offsets[i], ts))
                    i += 1
            if len(pending) >= _INDEX_DRAIN_AT:
                self.index.drain()
        wrote = sum(sizes)
        self.put_count += len(msgs)
        self.put_bytes += wrote
        return wrote

    # ------------------------------------------------------------------------------------------------
    # flush, retention
    # ------------------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Flush commitlog, consume queues and index, then the checkpoint (advances the recovery start)."""
        with self._lock:
            if self._running:
                self._write_checkpoint()

    def _write_checkpoint(self, clean: bool = False) -> None:
        """Flush commitlog, consume queues and index, then record in the checkpoint how far everything is flushed
        and dispatched (the next abnormal start scans from there) and, on a clean stop, the exact end. The
        same plan -> execute -> commit as the background flush, run inline under the lock."""
        plan = self._plan(checkpoint=True)
        execute_flush_plan(plan)
        self._commit(plan, clean)

    # -- the one flush path: plan under the lock, fsync (a worker thread may do it), commit under the lock ----
    def plan_flush(self, now_ms: int | None = None) -> FlushPlan | None:
        """What is due now, without doing any I/O: None if nothing is. The commitlog every
        flush_interval_commit_log ms (ASYNC_FLUSH), consume queues, index and checkpoint every
        flush_interval_consume_queue ms. Run `execute_flush_plan(plan)` (the broker: in a worker thread), then
        `commit_flush_plan(plan)`; `flush_if_due` does all three inline."""
        now = self.clock() if now_ms is None else now_ms
        cfg = self.config
        with self._lock:
            if not self._running:
                return None
            checkpoint = now - self._last_cq_flush >= cfg.flush_interval_consume_queue
            if not checkpoint and not (cfg.flush_disk_type is FlushDiskType.ASYNC_FLUSH and
                                       now - self._last_cl_flush >= cfg.flush_interval_commit_log):
                return None
            self._last_cl_flush = now
            if checkpoint:
                self._last_cq_flush = now
            return self._plan(checkpoint)

    def _plan(self, checkpoint: bool) -> FlushPlan:
        plan = FlushPlan(checkpoint)
        plan.take(self.commitlog.queue)
        if checkpoint:
            for cq in self._cqs.values():
                if cq.dirty:
                    plan.take(cq.queue)
                    cq.dirty = False
            plan.fds.extend(self.index.take_dirty_fds())
            confirm = self.commitlog.max_offset
            plan.clean_possible = True
            if self.index.pending:  # an index file could not be created: those messages are not indexed yet
                confirm = min(confirm, self.index.pending[0][2])
                plan.clean_possible = False
            if self.dispatch_error_offset is not None:
                confirm = min(confirm, self.dispatch_error_offset)
                plan.clean_possible = False
            plan.confirm = confirm
            plan.timestamp = self.commitlog.last_store_timestamp
            plan.index_count = self.index.files[-1].index_count if self.index.files else 0
        return plan

    def commit_flush_plan(self, plan: FlushPlan) -> None:
        """After `execute_flush_plan`: record the flushed positions and write the checkpoint (a 4 KiB msync)."""
        with self._lock:
            if self._running:
                self._commit(plan, clean=False)

    def _commit(self, plan: FlushPlan, clean: bool) -> None:
        for mf, position in plan.positions:
            if position > mf.flushed_position:
                mf.flushed_position = position
        if plan.checkpoint:
            clean = clean and plan.clean_possible
            cp = self.checkpoint
            if cp is None:  # never: a running store has its checkpoint
                return
            cp.physic_msg_timestamp = cp.logics_msg_timestamp = cp.index_msg_timestamp = plan.timestamp
            cp.confirm_offset = plan.confirm
            cp.clean = clean
            cp.clean_end_offset = plan.confirm if clean else -1
            cp.index_count = plan.index_count
            cp.flush()

    def flush_if_due(self, now_ms: int | None = None) -> bool:
        """The broker's flush, inline: `plan_flush`, `execute_flush_plan`, `commit_flush_plan`. Returns True when
        something was flushed."""
        plan = self.plan_flush(now_ms)
        if plan is None:
            return False
        execute_flush_plan(plan)
        self.commit_flush_plan(plan)
        return True

    def clean_expired_files(self, now_ms: int | None = None) -> int:
        """One run of the commitlog cleaner (§8.5). Returns the number of commitlog segments deleted."""
        with self._lock:
            if not self._running:
                return 0
            return self.cleaner.run(self.clock() if now_ms is None else now_ms)

    def execute_delete_files_manually(self) -> None:
        """DELETE_EXPIRED_COMMITLOG: the next 20 cleaner runs delete expired segments whatever the hour."""
        self.cleaner.execute_delete_files_manually()

    def expire_files_now(self, older_than_ms: int | None = None, count: int | None = None, *,
                         roll: bool = False) -> int:
        """Delete now the oldest commitlog segments entirely older than `older_than_ms` (at most `count`; never the
        active one), then consume-queue/index files below the new minimum, and correct min offsets. With `roll`,
        the active segment is closed first, so every message stored so far can expire."""
        with self._lock:
            if not self._running:
                return 0
            if roll:
                try:
                    self.commitlog.roll()
                except OSError:
                    return 0  # no room for a new segment: nothing expires
                self._write_checkpoint()  # the closed segment is complete on disk before older ones go
            deleted = _retention.expire_files_now(self, older_than_ms, count)
            if roll:  # every queue's min moves past what expired, even with no message stored after it yet
                phy_min = self.commitlog.min_offset
                for cq in self.consume_queues():
                    cq.correct_min_offset(phy_min, True)
            return deleted

    # ------------------------------------------------------------------------------------------------
    # stats
    # ------------------------------------------------------------------------------------------------
    def disk_util(self) -> str:
        """4.9.8's DefaultMessageStore.diskUtil: the used share of the disks of the commitlog, the consume queues and
        the index, as the SERVICE_NOT_AVAILABLE remark of a refused send shows it."""
        from .retention import disk_used_ratio
        c = self.config
        return "CL: %5.2f CQ: %5.2f INDEX: %5.2f" % tuple(disk_used_ratio(p) for p in (
            c.commit_log_dir, c.consume_queue_dir, c.index_dir))

    def running_stats(self) -> dict[str, object]:
        cl = self.commitlog
        rec = self.recovery
        return {
            "running": self._running,
            "writable": self.writable,
            "commitlogMinOffset": cl.min_offset,
            "commitlogMaxOffset": cl.max_offset,
            "commitlogFiles": len(cl.queue.files),
            "consumeQueues": len(self._cqs),
            "indexFiles": len(self.index.files),
            "putMessageTimesTotal": self.put_count,
            "putMessageSizeTotal": self.put_bytes,
            "getMessageTimesTotal": self.get_count,
            "getMessageTransferedMsgCount": self.get_found,
            "lastStoreTimestamp": self._last_ts,
            "diskRatio": self.cleaner.last_disk_ratio,
            "recoveryMode": rec.mode if rec else None,
            "recoveryScannedRecords": rec.scanned_records if rec else 0,
        }
