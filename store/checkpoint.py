"""StoreCheckpoint: the 4 KiB ``checkpoint`` file (reference §8.6), plus this store's own fields after byte 24.

Bytes 0-23 as RocketMQ: ``physicMsgTimestamp``, ``logicsMsgTimestamp``, ``indexMsgTimestamp`` (longs).
Bytes 24-59 (this store's extension, ignored by anything else):

====  ====  ===========================================================================================
24    4     magic ``RQEM``
28    4     version (1)
32    8     confirm offset: every record before it is flushed, dispatched, and its consume-queue units
            and index entries are flushed. Abnormal recovery scans the commitlog from here.
40    8     commitlog end offset written by a clean stop (-1 while running)
48    4     clean flag: 1 after a clean stop, 0 while running
52    4     index count of the last index file at a clean stop (informational)
56    4     crc32 of bytes 24-55
====  ====  ===========================================================================================

The checkpoint is written in one 64-byte copy and ``msync``-ed; a torn or foreign extension fails its CRC and
is treated as absent (recovery then scans from the first commitlog segment).
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib

CHECKPOINT_SIZE = 4096
_MAGIC = b"RQEM"
_BASE = struct.Struct(">qqq")
_EXT = struct.Struct(">4siqqii")  # magic, version, confirm, clean end, clean flag, index count
_CRC = struct.Struct(">I")


class StoreCheckpoint:
    def __init__(self, path: str) -> None:
        self.path = path
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        self.confirm_offset = -1
        self.clean_end_offset = -1
        self.clean = False
        self.index_count = 0
        self.ext_valid = False
        self.existed = os.path.exists(path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size != CHECKPOINT_SIZE:
                os.ftruncate(fd, CHECKPOINT_SIZE)
            self.mm = mmap.mmap(fd, CHECKPOINT_SIZE)
        finally:
            os.close(fd)
        self._read()

    def _read(self) -> None:
        mm = self.mm
        self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp = _BASE.unpack_from(mm, 0)
        magic, version, confirm, clean_end, clean, index_count = _EXT.unpack_from(mm, 24)
        (crc,) = _CRC.unpack_from(mm, 24 + _EXT.size)
        if magic == _MAGIC and version == 1 and zlib.crc32(mm[24:24 + _EXT.size]) == crc:
            self.ext_valid = True
            self.confirm_offset = confirm
            self.clean_end_offset = clean_end
            self.clean = clean == 1
            self.index_count = index_count

    @property
    def min_timestamp(self) -> int:
        """RocketMQ's getMinTimestamp: min(physic, logics) - 3 s."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)

    def flush(self) -> None:
        ext = _EXT.pack(_MAGIC, 1, self.confirm_offset, self.clean_end_offset, 1 if self.clean else 0,
                        self.index_count)
        data = _BASE.pack(self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp) + ext + \
            _CRC.pack(zlib.crc32(ext))
        self.mm[0:len(data)] = data
        self.mm.flush()
        self.ext_valid = True

    def close(self) -> None:
        try:
            self.mm.close()
        except (BufferError, ValueError):
            pass
