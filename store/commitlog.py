"""CommitLog: the append-only log of stored records (reference §7.1, §8.2).

* Records are written in the exact §7.1 layout (v1 magic), so a PULL body is a slice of the log.
* One record writer, ``put_messages``, for every put: one message, a batch, or a run of single sends read
  together, written contiguously in one segment (all or nothing).
* A record never spans segments: when ``size + 8`` does not fit, an 8-byte BLANK filler
  ``[remaining][BLANK_MAGIC_CODE]`` closes the segment and the records go to the start of the next one.
* Crash safety: every record is written with TOTALSIZE = 0 and TOTALSIZE is stored last (for a batch, the
  first record's TOTALSIZE). A process killed mid-write leaves a record whose size is 0 or does not match its
  fields; recovery (``check_message_and_return_size``) validates magic, size against the fields, the
  PHYSICALOFFSET field against the position, and the body CRC, and stops at the first invalid record.
* SYNC_FLUSH: ``msync`` of the written range before ``put`` returns. ASYNC_FLUSH: ``flush()`` is called by the
  owner every ``flush_interval_commit_log`` ms.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from typing import Iterator, Sequence

from rocketmq_emulator.native import lane
from rocketmq_emulator.protocol.codes import MessageSysFlag
from rocketmq_emulator.protocol.message import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, POS_SYS_FLAG

from .config import FlushDiskType, MessageStoreConfig
from .mapped_file import MappedFile, MappedFileQueue
from .message_ext_broker_inner import MessageExtBrokerInner
from .results import PutMessageStatus

END_FILE_MIN_BLANK_LENGTH = 8
_V6_BITS = int(MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOSTADDRESS_V6)
_BORN_V6 = int(MessageSysFlag.BORNHOST_V6)
_STORE_V6 = int(MessageSysFlag.STOREHOSTADDRESS_V6)

# A record's bytes beyond its body: the fixed fields (at most 2 x 16-byte IPv6 hosts), topic and properties.
_MAX_RECORD_OVERHEAD = 128 + 1 + 255 + 2 + 32767
# Fixed part TOTALSIZE..BODYLEN per (born v6, store v6).
_FIXED = {(b6, s6): struct.Struct(">iiiiiqqiq" + ("16s" if b6 else "4s") + "iq" + ("16s" if s6 else "4s") + "iiqi")
          for b6 in (False, True) for s6 in (False, True)}
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_USHORT = struct.Struct(">H")
_BLANK = struct.Struct(">ii")
_PROPERTIES_LEN = _USHORT.pack  # (a table of the 32,768 values cost 1.4 MB of idle memory and 3 ms of start-up)
crc32 = zlib.crc32
#: the native lane's record packer (rocketmq_emulator.native), None on the Python path
_pack_records = lane.pack_records if lane is not None else None
PUT_OK = PutMessageStatus.PUT_OK


class DispatchRequest:
    """What the dispatcher needs of one valid record (built by recovery)."""

    __slots__ = ("topic", "queue_id", "phy", "size", "properties_raw", "store_timestamp", "queue_offset",
                 "sys_flag")

    def __init__(self, topic: str, queue_id: int, phy: int, size: int, properties_raw: bytes, store_timestamp: int,
                 queue_offset: int, sys_flag: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.phy = phy
        self.size = size
        self.properties_raw = properties_raw
        self.store_timestamp = store_timestamp
        self.queue_offset = queue_offset
        self.sys_flag = sys_flag


class CommitLog:
    def __init__(self, config: MessageStoreConfig, store_host: bytes, store_port: int) -> None:
        self.config = config
        self.file_size = config.mapped_file_size_commit_log
        self.queue = MappedFileQueue(config.commit_log_dir, self.file_size, preallocate=config.preallocate_mapped_file)
        self.sync_flush = config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        self.store_host = store_host
        self.store_port = store_port
        store6 = len(store_host) == 16
        #: by "born host is IPv6" (the store host's is fixed): the record's size without body, topic and
        #: properties (fixed part + PROPERTIESLENGTH), its packer, and the IPv6 sys-flag bits
        self._variants = tuple((_FIXED[(born6, store6)].size + 2, _FIXED[(born6, store6)].pack,
                                (_BORN_V6 if born6 else 0) | (_STORE_V6 if store6 else 0)) for born6 in (False, True))
        self.max_message_size = config.max_message_size
        self._topic_prefix: dict[str, bytes] = {}  # topic -> TOPICLEN byte + UTF-8 topic
        self.last_store_timestamp = 0  # store time of the last record, for the checkpoint

    # -- offsets -------------------------------------------------------------------------------------
    @property
    def min_offset(self) -> int:
        return self.queue.min_offset

    @property
    def max_offset(self) -> int:
        return self.queue.max_offset

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_size - offset % self.file_size

    def roll(self) -> bool:
        """Close the segment being written (BLANK filler) and start the next one, so everything stored so far
        is in complete segments. False when the segment is still empty (nothing to close). Raises OSError when
        the next segment cannot be created."""
        files = self.queue.files
        if not files or files[-1].wrote_position == 0:
            return False
        self._roll(self.file_size)
        return True

    # -- append --------------------------------------------------------------------------------------
    def _prefix(self, topic: str) -> bytes | None:
        prefix = self._topic_prefix.get(topic)
        if prefix is None:
            raw = topic.encode()
            if not raw or len(raw) > 127:
                return None
            prefix = bytes((len(raw),)) + raw
            if len(self._topic_prefix) >= 100_000:
                self._topic_prefix.clear()
            self._topic_prefix[topic] = prefix
        return prefix

    def _roll(self, need: int) -> MappedFile:
        """The segment the next `need` bytes go to, closing the current one with a BLANK filler when needed.

        Raises OSError when a new segment cannot be created."""
        files = self.queue.files
        mf = files[-1] if files else None
        if mf is not None:
            pos = mf.wrote_position
            if pos + need + END_FILE_MIN_BLANK_LENGTH <= self.file_size:
                return mf
            start = mf.file_from_offset + self.file_size
            new = self.queue.create_mapped_file(start)  # may raise: the current segment stays open
            if pos < self.file_size:  # filler: magic first, size last
                remaining = self.file_size - pos
                mm = mf.mm
                _INT.pack_into(mm, pos + 4, BLANK_MAGIC_CODE)
                _INT.pack_into(mm, pos, remaining)
                mf.wrote_position = self.file_size
            return new
        return self.queue.create_mapped_file(0 if self.queue.min_offset < 0 else self.queue.min_offset)

    def put_messages(self, msgs: Sequence[MessageExtBrokerInner], queue_offsets: Sequence[int],
                     store_ts: int, run: bool = False) -> tuple[PutMessageStatus, list[int] | None, list[int] | None]:
        """The one record writer (RocketMQ's doAppend): append `msgs` contiguously in one segment, all or nothing:
        one message, a batch, or a run of single sends read together (any topics and queues). `queue_offsets[i]`
        is message i's; all get one store timestamp. The first record's TOTALSIZE is written last: until then
        recovery sees none of them.

        `run` (single sends read together): one that does not fit the current (non-empty) segment is not written
        (RUN_CROSSES_SEGMENT): its messages are put one by one, each where a put of it alone puts it.

        Returns (status, list of physical offsets, list of sizes); offsets None when nothing was written."""
        if not msgs:
            return PutMessageStatus.MESSAGE_ILLEGAL, None, None
        files = self.queue.files
        mf = files[-1] if files else None
        # Records are packed for the current segment's end; in the rare case they do not fit there the segment
        # is rolled and they are packed again for the new one.
        while True:
            start = mf.wrote_position if mf is not None else 0
            phy = mf.file_from_offset + start if mf is not None else 0
            packed = None if _pack_records is None else _pack_records(
                msgs, queue_offsets, phy, store_ts, self.store_host, self.store_port, self.max_message_size, crc32)
            if packed is None:  # the Python path, or a put the native lane leaves to it (a refusal, a bad value)
                packed = self._pack(msgs, queue_offsets, phy, store_ts)
                if isinstance(packed, PutMessageStatus):
                    return packed, None, None
            records, offsets, sizes = packed
            total = len(records)
            if total + END_FILE_MIN_BLANK_LENGTH > self.file_size:
                return PutMessageStatus.MESSAGE_ILLEGAL, None, None
            if mf is not None and start + total + END_FILE_MIN_BLANK_LENGTH <= self.file_size:
                break
            if run and start > 0:
                return PutMessageStatus.RUN_CROSSES_SEGMENT, None, None
            try:
                mf = self._roll(total)  # a fresh segment: the records fit there
            except OSError:
                return PutMessageStatus.CREATE_MAPEDFILE_FAILED, None, None
        if start + total + END_FILE_MIN_BLANK_LENGTH > mf.allocated and \
                not mf.ensure_allocated(start + total + END_FILE_MIN_BLANK_LENGTH):
            return PutMessageStatus.SERVICE_NOT_AVAILABLE, None, None  # disk full: nothing written
        mm = mf.mm
        mm[start:start + total] = records
        _INT.pack_into(mm, start, sizes[0])  # the whole put becomes valid here
        mf.wrote_position = start + total
        self.last_store_timestamp = store_ts
        if self.sync_flush and not self._flush_sync():
            return PutMessageStatus.FLUSH_DISK_TIMEOUT, offsets, sizes
        return PUT_OK, offsets, sizes

    def _pack(self, msgs: Sequence[MessageExtBrokerInner], queue_offsets: Sequence[int], phy: int, store_ts: int
              ) -> tuple[bytes, list[int], list[int]] | PutMessageStatus:
        """The records of `msgs` from physical offset `phy`, the first one's TOTALSIZE left 0: (bytes, offsets,
        sizes), or the status that refuses the put. The reference the native lane's `pack_records` matches."""
        cache = self._topic_prefix
        variants = self._variants
        max_body = self.max_message_size
        store_host, store_port = self.store_host, self.store_port
        offsets = []
        sizes = []
        parts: list[bytes] = []
        later = 0  # the first record's TOTALSIZE stays 0 in the copy; it is written last
        born = msgs[0].born_host  # the messages of one put nearly always share it: one variant lookup
        fixed_size, pack, host_bits = variants[len(born) == 16]
        i = 0  # (no zip: for one message creating it costs more than indexing)
        for m in msgs:
            qo = queue_offsets[i]
            i += 1
            prefix = cache.get(m.topic) or self._prefix(m.topic)
            if prefix is None:
                return PutMessageStatus.MESSAGE_ILLEGAL
            body = m.body
            props = m.properties_raw
            pl = len(props)
            if pl > 32767:
                return PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
            bl = len(body)
            if bl > max_body:
                return PutMessageStatus.MESSAGE_ILLEGAL
            if m.born_host is not born:
                born = m.born_host
                fixed_size, pack, host_bits = variants[len(born) == 16]
            size = fixed_size + len(prefix) + bl + pl
            offsets.append(phy)
            sizes.append(size)
            parts += (pack(later and size, MESSAGE_MAGIC_CODE, crc32(body) & 0x7FFFFFFF, m.queue_id, m.flag, qo,
                         phy, (m.sys_flag & ~_V6_BITS) | host_bits, m.born_timestamp, born, m.born_port,
                         store_ts, store_host, store_port, m.reconsume_times, m.prepared_transaction_offset, bl),
                      body, prefix, _PROPERTIES_LEN(pl), props)
            later = 1
            phy += size
        return b"".join(parts), offsets, sizes

    def _flush_sync(self) -> bool:
        try:
            self.queue.flush()
            return True
        except (OSError, ValueError):
            return False

    def flush(self) -> None:
        self.queue.flush()

    # -- read ----------------------------------------------------------------------------------------
    def get_message(self, phy: int, size: int) -> bytes | None:
        """The `size` bytes at `phy`, or None when they are not (or no longer) in the log."""
        files = self.queue.files
        if not files or size <= 0:
            return None
        idx = (phy - files[0].file_from_offset) // self.file_size
        if idx < 0 or idx >= len(files):
            return None
        mf = files[idx]
        pos = phy - mf.file_from_offset
        if pos + size > mf.wrote_position:
            return None
        return mf.mm[pos:pos + size]

    def select_one_message_by_offset(self, phy: int, size: int | None = None) -> bytes | None:
        """The record starting at `phy` (size read from its TOTALSIZE when not given), validated lightly."""
        mf = self.queue.find_mapped_file_by_offset(phy)
        if mf is None:
            return None
        pos = phy - mf.file_from_offset
        if pos < 0 or pos + 8 > mf.wrote_position:
            return None
        total, magic = _BLANK.unpack_from(mf.mm, pos)
        if size is None:
            size = total
        if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2) or size != total or size < 92 \
                or pos + size > mf.wrote_position:
            return None
        return mf.mm[pos:pos + size]

    def size_field_at(self, phy: int) -> int | None:
        """The four bytes at `phy` read as a record's TOTALSIZE (signed), whether or not a record starts there;
        None outside the written data. (What 4.9.8 reads before it looks a message up by its offset.)"""
        data = self.get_message(phy, 4)
        return None if data is None else int.from_bytes(data, "big", signed=True)

    def pickup_store_timestamp(self, phy: int, size: int) -> int:
        """STORETIMESTAMP of the record at `phy`, -1 when it is gone."""
        files = self.queue.files
        if not files or phy < files[0].file_from_offset:
            return -1
        idx = (phy - files[0].file_from_offset) // self.file_size
        if idx >= len(files):
            return -1
        mf = files[idx]
        pos = phy - mf.file_from_offset
        if pos + 64 > mf.wrote_position:
            return -1
        sys_flag = _INT.unpack_from(mf.mm, pos + POS_SYS_FLAG)[0]
        return int(_LONG.unpack_from(mf.mm, pos + (68 if sys_flag & _BORN_V6 else 56))[0])

    # -- validation (recovery) ------------------------------------------------------------------------
    def check_message_and_return_size(self, mm: mmap.mmap, pos: int, file_end: int, expected_phy: int,
                                      check_crc: bool = True) -> tuple[int, DispatchRequest | None]:
        """Validate the record at `pos` of a segment.

        Returns ``(size, request)``: ``size > 0`` and a DispatchRequest for a valid record; ``size > 0`` and None for
        the BLANK filler (skip to the next segment); ``(0, None)`` for the end of the log (zero, torn or corrupt).
        """
        if pos + 8 > file_end:
            return 0, None
        total, magic = _BLANK.unpack_from(mm, pos)
        if magic == BLANK_MAGIC_CODE:
            return (total, None) if total == file_end - pos else (0, None)
        if magic != MESSAGE_MAGIC_CODE or total < 92 or pos + total > file_end:
            return 0, None
        sys_flag = _INT.unpack_from(mm, pos + POS_SYS_FLAG)[0]
        fixed = _FIXED[(bool(sys_flag & _BORN_V6), bool(sys_flag & _STORE_V6))]
        fields = fixed.unpack_from(mm, pos)
        crc, queue_id, queue_offset, phy, store_ts, bl = fields[2], fields[3], fields[5], fields[6], fields[11], \
            fields[16]
        if phy != expected_phy or bl < 0:
            return 0, None
        p = pos + fixed.size + bl
        if p + 1 > pos + total:
            return 0, None
        tl = mm[p]
        p += 1
        if p + tl + 2 > pos + total:
            return 0, None
        topic_raw = mm[p:p + tl]
        p += tl
        pl = _USHORT.unpack_from(mm, p)[0]
        p += 2
        if p + pl != pos + total or tl == 0:
            return 0, None
        body_start = pos + fixed.size
        if check_crc and zlib.crc32(mm[body_start:body_start + bl]) & 0x7FFFFFFF != crc:
            return 0, None
        try:
            topic = topic_raw.decode()
        except UnicodeDecodeError:
            return 0, None
        return total, DispatchRequest(topic, queue_id, phy, total, mm[p:p + pl], store_ts, queue_offset, sys_flag)

    def valid_records_after(self, offset: int) -> tuple[int, int]:
        """Valid records anywhere after `offset` (where a scan stopped): (how many, the end of the last one; 0, 0
        when none). A record is valid only where its own PHYSICALOFFSET field names its place and its body's CRC
        holds, so stray bytes that look like a record's magic are not counted."""
        magic = _INT.pack(MESSAGE_MAGIC_CODE)
        count, last_end = 0, 0
        for mf in self.queue.files:
            if mf.file_from_offset + self.file_size <= offset:
                continue
            mm, pos = mf.mm, max(0, offset - mf.file_from_offset)
            if mf.file_from_offset <= offset:
                pos = self._unfinished_put_end(mm, pos, offset)
            while True:
                found = mm.find(magic, pos + 4)
                if found < 0:
                    break
                q = found - 4
                size, req = self.check_message_and_return_size(mm, q, self.file_size, mf.file_from_offset + q)
                if size > 0 and req is not None:
                    count += 1
                    last_end = mf.file_from_offset + q + size
                    pos = q + size
                else:
                    pos = q + 1
        return count, last_end

    def _unfinished_put_end(self, mm: mmap.mmap, pos: int, phy: int) -> int:
        """Where the put that a kill interrupted ends, when `pos` is the head of such a put (else `pos`).

        A put's bytes are copied with its first record's size 0 and that size is set last. The copy itself is one
        memcpy, which may store its bytes in any order (glibc stores the first 32 or 64 bytes last), so a kill
        before the size was set leaves a head whose size is 0 and whose other bytes may be partly written, and
        any of the put's other records may already be whole. Those records follow the head within one record's
        length, contiguous, each valid at its place and stored at the same instant: none of them was
        acknowledged, they are the torn tail, and their end is returned."""
        if pos + 8 > self.file_size or _INT.unpack_from(mm, pos)[0] != 0:
            return pos
        magic = _INT.pack(MESSAGE_MAGIC_CODE)
        reach = min(self.file_size, pos + self.max_message_size + _MAX_RECORD_OVERHEAD)
        q = pos + 1
        while True:  # the put's first whole record after its head
            found = mm.find(magic, q + 4, reach + 4)
            if found < 0:
                return pos
            q = found - 4
            size, req = self.check_message_and_return_size(mm, q, self.file_size, phy + q - pos)
            if size > 0 and req is not None:
                break
            q += 1
        store_ts = req.store_timestamp
        while True:  # the put's other records: contiguous, valid, stored at the same instant
            q += size
            size, req = self.check_message_and_return_size(mm, q, self.file_size, phy + q - pos)
            if size <= 0 or req is None or req.store_timestamp != store_ts:
                return q

    def copy_range(self, start: int, end: int, path: str) -> None:
        """The commitlog's bytes from `start` to `end` written to `path` (kept aside before a cut)."""
        with open(path, "wb") as out:
            for mf in self.queue.files:
                lo, hi = max(start, mf.file_from_offset), min(end, mf.file_from_offset + self.file_size)
                if lo < hi:
                    out.write(mf.mm[lo - mf.file_from_offset:hi - mf.file_from_offset])
            out.flush()
            os.fsync(out.fileno())

    def iter_records(self, start: int | None = None, check_crc: bool = True) -> Iterator[tuple[int, bytes]]:
        """(physical offset, record bytes) of every valid record from `start` to the end (or first invalid one)."""
        for phy, _req, mf, pos, size in self.scan(start, check_crc):
            yield phy, mf.mm[pos:pos + size]

    def scan(self, start: int | None = None, check_crc: bool = True, limit_to_written: bool = True
             ) -> Iterator[tuple[int, DispatchRequest, MappedFile, int, int]]:
        """Walk records from `start`: yields (phy, DispatchRequest, segment, position, size); stops at the end.

        After the loop, ``self.scan_end`` is the offset where the walk stopped."""
        files = self.queue.files
        self.scan_end = start if start is not None else max(self.min_offset, 0)
        if not files:
            return
        offset = max(start if start is not None else 0, files[0].file_from_offset)
        idx = (offset - files[0].file_from_offset) // self.file_size
        while idx < len(files):
            mf = files[idx]
            end = mf.wrote_position if limit_to_written else self.file_size
            pos = offset - mf.file_from_offset
            mm = mf.mm
            while True:
                size, req = self.check_message_and_return_size(mm, pos, end, mf.file_from_offset + pos, check_crc)
                if size <= 0:
                    self.scan_end = mf.file_from_offset + pos
                    return
                if req is None:  # BLANK filler: next segment
                    break
                yield req.phy, req, mf, pos, size
                pos += size
            idx += 1
            offset = mf.file_from_offset + self.file_size
            self.scan_end = offset
