"""ConsumeQueue: the per (topic, queueId) index of 20-byte units ``[long phyOffset][int size][long tagsCode]``
(reference §8.3, §8.4, §9.13).

* Logical offset k is byte k x 20 of the queue's address space; segment files hold
  ``mapped_file_size_consume_queue`` bytes and are named by their starting byte offset.
* Units are written by the dispatcher with one ``pack_into`` whose fields land in order (offset, size, tags):
  a unit whose size is non-zero has a complete commitlog offset, and the written units of a segment are a
  prefix of non-zero sizes. That is what lets ``load`` find the end of the last segment by binary search
  (no scan), and recovery cut a queue at a commitlog offset by binary search.
* Dispatch is idempotent: a unit whose ``offset + size`` is not beyond the highest indexed commitlog end is
  skipped. A unit for a logical offset beyond the end pads the gap with filler units ``(0, 0x7FFFFFFF, 0)``
  (the first segment of a queue recreated at a non-zero offset); a unit for an offset below the end cuts the
  queue there first (the commitlog is the truth).
* ``min_logic_offset`` is maintained like RocketMQ's (§8.4): 0 when loaded, corrected by ``correct_min_offset`` at
  start-up and after cleaning, and left unchanged when nothing qualifies (so after the first segment is deleted an
  offset below the first remaining one can be OFFSET_FOUND_NULL, as in 4.x). The 4.x rule searches the first
  segment only (a binary search on the commitlog offsets, which increase along a queue; leading filler units are
  skipped); ``across_files`` is the 5.x rule (all segments; nothing qualifies -> the max offset).
* ``get_offset_in_queue_by_time`` follows 4.9.x (§9.13). The segment is picked as "the first whose mtime >=
  timestamp, else the last"; the mtime is approximated by the store timestamp of the segment's last unit (the time
  it was last written), which is deterministic under an injected clock.
"""

from __future__ import annotations

import os
import re
import struct
from typing import TYPE_CHECKING

from .mapped_file import data_extents, MappedFile, MappedFileQueue

if TYPE_CHECKING:
    from .commitlog import CommitLog

CQ_STORE_UNIT_SIZE = 20
FILLER_SIZE = 0x7FFFFFFF
_UNIT = CQ_UNIT = struct.Struct(">qiq")
_INT = struct.Struct(">i")
_NON_ZERO = re.compile(rb"[^\x00]")
_WHOLE_UNITS = re.compile(rb"(?:.{8}(?!\x00\x00\x00\x00).{12})*", re.S)  # units whose size is not 0


class ConsumeQueue:
    def __init__(self, topic: str, queue_id: int, root_dir: str, mapped_file_size: int,
                 preallocate: bool = False) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = mapped_file_size - mapped_file_size % CQ_STORE_UNIT_SIZE
        self.queue = MappedFileQueue(os.path.join(root_dir, topic, str(queue_id)), self.file_size,
                                     preallocate=preallocate)
        self.min_logic_offset = 0  # bytes
        self.max_offset_in_queue = 0  # logical offset of the next unit (kept in step with the files)
        self.max_physic_offset = -1  # end (offset + size) of the last unit
        self.dirty = False

    # -- load ----------------------------------------------------------------------------------------
    def load(self) -> None:
        self.queue.load()
        files = self.queue.files
        #: a unit of size 0 followed by written units in the last segment (not a torn tail: a crash of the
        #: machine, a damaged file): (segment path, position, units written after it); recovery rebuilds the
        #: queue from the commitlog from there (store/recovery.py) instead of dropping what follows
        self.hole: tuple[str, int, int] | None = None
        if files:
            last = files[-1]
            last.wrote_position = last.flushed_position = self._find_end(last)
            after = self._units_after(last, last.wrote_position + CQ_STORE_UNIT_SIZE)
            if after:
                self.hole = (last.path, last.wrote_position, after)
        self.min_logic_offset = 0  # as RocketMQ: 0 until correct_min_offset runs (at start-up)
        self._refresh_ends()

    def find_hole(self) -> None:
        """After a crash (recovery asks): a unit of size 0 inside the written prefix of the last segment, which
        the binary search of `load` steps over. A C scan of the segment's written part; the queue then ends at
        the hole (in memory) and `hole` says where, for recovery to rebuild from the commitlog."""
        files = self.queue.files
        if not files or self.hole is not None:
            return
        mf = files[-1]
        end = mf.wrote_position
        whole = _WHOLE_UNITS.match(mf.mm, 0, end)
        pos = whole.end() - whole.end() % CQ_STORE_UNIT_SIZE if whole is not None else 0
        if pos >= end:
            return
        self.hole = (mf.path, pos, self._units_after(mf, pos + CQ_STORE_UNIT_SIZE))
        mf.wrote_position = mf.flushed_position = pos
        self._refresh_ends()

    def _units_after(self, mf: MappedFile, start: int) -> int:
        """Units with a non-zero size from byte `start` of a segment to its end (only data extents are read)."""
        count = 0
        for lo, hi in data_extents(mf.path, start - start % CQ_STORE_UNIT_SIZE, self.file_size):
            found = _NON_ZERO.search(mf.mm, max(lo, start), hi)  # a C scan: most segments end in zeros
            if found is None:
                continue
            pos = found.start() - found.start() % CQ_STORE_UNIT_SIZE
            while pos + CQ_STORE_UNIT_SIZE <= hi:
                count += _INT.unpack_from(mf.mm, pos + 8)[0] != 0
                pos += CQ_STORE_UNIT_SIZE
        return count

    def _find_end(self, mf: MappedFile) -> int:
        """Byte position of the first unit with size 0 (binary search over the prefix of written units, which
        lies inside the file's first data extent: holes are never read, see `data_extents`)."""
        extents = data_extents(mf.path, 0, self.file_size)
        data_end = extents[0][1] if extents and extents[0][0] == 0 else 0
        lo, hi = 0, data_end // CQ_STORE_UNIT_SIZE
        mm = mf.mm
        unpack = _INT.unpack_from
        while lo < hi:
            mid = (lo + hi) >> 1
            if unpack(mm, mid * CQ_STORE_UNIT_SIZE + 8)[0] != 0:
                lo = mid + 1
            else:
                hi = mid
        return lo * CQ_STORE_UNIT_SIZE

    def _refresh_ends(self) -> None:
        self.max_offset_in_queue = self.queue.max_offset // CQ_STORE_UNIT_SIZE
        self.max_physic_offset = -1
        for mf in reversed(self.queue.files):
            if mf.wrote_position >= CQ_STORE_UNIT_SIZE:
                phy, size, _ = _UNIT.unpack_from(mf.mm, mf.wrote_position - CQ_STORE_UNIT_SIZE)
                if size != FILLER_SIZE:
                    self.max_physic_offset = phy + size
                return

    def close(self) -> None:
        self.queue.close()

    def destroy(self) -> None:
        self.queue.destroy()
        self._refresh_ends()
        try:
            os.rmdir(os.path.dirname(self.queue.store_path))
        except OSError:
            pass

    # -- offsets -------------------------------------------------------------------------------------
    @property
    def min_offset_in_queue(self) -> int:
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    @property
    def units_per_file(self) -> int:
        return self.file_size // CQ_STORE_UNIT_SIZE

    def roll_next_file(self, index: int) -> int:
        per = self.units_per_file
        return index + per - index % per

    # -- write ---------------------------------------------------------------------------------------
    def reserve(self, units: int) -> bool:
        """Make sure the next `units` units can be written (their segment exists and has disk blocks), so that a
        full disk refuses a put before its commitlog record is written instead of failing its dispatch."""
        files = self.queue.files
        if files:
            mf = files[-1]
            end = mf.wrote_position + units * CQ_STORE_UNIT_SIZE
            if end <= self.file_size:
                return end <= mf.allocated or mf.ensure_allocated(end)
        return True  # a new segment: created (and its first chunk reserved) by the write itself

    def put(self, phy: int, size: int, tags_code: int, index: int) -> bool:
        """Write the unit of logical offset `index`. Returns False only when a segment cannot be created."""
        if phy + size <= self.max_physic_offset:
            return True  # already dispatched
        files = self.queue.files
        if index == self.max_offset_in_queue and files:
            mf = files[-1]
            pos = mf.wrote_position
            if pos < self.file_size and (pos + CQ_STORE_UNIT_SIZE <= mf.allocated
                                         or mf.ensure_allocated(pos + CQ_STORE_UNIT_SIZE)):
                _UNIT.pack_into(mf.mm, pos, phy, size, tags_code)
                mf.wrote_position = pos + CQ_STORE_UNIT_SIZE
                self.max_offset_in_queue = index + 1
                self.max_physic_offset = phy + size
                self.dirty = True
                return True
        return self._put_slow(phy, size, tags_code, index)

    def put_batch(self, offsets: list[int], sizes: list[int], tags_codes: list[int], first_index: int) -> bool:
        """Units of consecutive logical offsets from `first_index` (a batch), in order."""
        files = self.queue.files
        n = len(offsets)
        if first_index == self.max_offset_in_queue and files and offsets[0] + sizes[0] > self.max_physic_offset:
            mf = files[-1]
            pos = mf.wrote_position
            end = pos + n * CQ_STORE_UNIT_SIZE
            if end <= self.file_size and (end <= mf.allocated or mf.ensure_allocated(end)):
                mm = mf.mm
                pack_into = _UNIT.pack_into
                for phy, size, tags in zip(offsets, sizes, tags_codes):
                    pack_into(mm, pos, phy, size, tags)
                    pos += CQ_STORE_UNIT_SIZE
                mf.wrote_position = pos
                self.max_offset_in_queue = first_index + n
                self.max_physic_offset = offsets[-1] + sizes[-1]
                self.dirty = True
                return True
        ok = True
        for i in range(n):
            ok = self.put(offsets[i], sizes[i], tags_codes[i], first_index + i) and ok
        return ok

    def _put_slow(self, phy: int, size: int, tags_code: int, index: int) -> bool:
        target = index * CQ_STORE_UNIT_SIZE
        end = self.queue.max_offset
        try:
            if not self.queue.files:
                start = target - target % self.file_size
                self.queue.create_mapped_file(start)
                self.min_logic_offset = target
                end = start
            elif target < end:
                if target < self.queue.files[0].file_from_offset:  # below the first segment: start afresh
                    self.queue.destroy()
                    self._refresh_ends()
                    return self._put_slow(phy, size, tags_code, index)
                self.truncate_logic(target)
                end = self.queue.max_offset
            while end < target or end == target:
                mf = self.queue.files[-1]
                if mf.wrote_position >= self.file_size:
                    mf = self.queue.create_mapped_file(mf.file_from_offset + self.file_size)
                pos = mf.wrote_position
                if not mf.ensure_allocated(pos + CQ_STORE_UNIT_SIZE):
                    raise OSError("no disk space for the consume queue")
                if end == target:
                    _UNIT.pack_into(mf.mm, pos, phy, size, tags_code)
                    mf.wrote_position = pos + CQ_STORE_UNIT_SIZE
                    break
                _UNIT.pack_into(mf.mm, pos, 0, FILLER_SIZE, 0)  # a hole: filler units
                mf.wrote_position = pos + CQ_STORE_UNIT_SIZE
                end += CQ_STORE_UNIT_SIZE
        except OSError:
            self._refresh_ends()
            return False
        self._refresh_ends()
        self.dirty = True
        return True

    def truncate_logic(self, target: int) -> None:
        """Make logical byte offset `target` the end of the queue."""
        if not self.queue.files or target >= self.queue.max_offset:
            return
        self.queue.truncate_dirty_files(max(target, self.queue.files[0].file_from_offset))
        if self.min_logic_offset > target:
            self.min_logic_offset = target
        self._refresh_ends()
        self.dirty = True

    def truncate_by_physic(self, phy_offset: int) -> int:
        """Drop every unit pointing at or beyond commitlog offset `phy_offset`; returns how many were dropped."""
        files = self.queue.files
        if not files or 0 <= self.max_physic_offset <= phy_offset:
            return 0
        end = self.queue.max_offset
        cut = self._first_unit_at_or_after(phy_offset)
        if cut >= end:
            return 0
        self.truncate_logic(cut)
        return (end - cut) // CQ_STORE_UNIT_SIZE

    def _first_unit_at_or_after(self, phy_offset: int, files: list[MappedFile] | None = None) -> int:
        """Logical byte offset of the first real unit whose commitlog offset >= `phy_offset` (end if none)."""
        files = self.queue.files if files is None else files
        for mf in files:
            n = mf.wrote_position // CQ_STORE_UNIT_SIZE
            if n == 0:
                continue
            phy, size, _ = _UNIT.unpack_from(mf.mm, (n - 1) * CQ_STORE_UNIT_SIZE)
            if size != FILLER_SIZE and phy < phy_offset:
                continue
            lo, hi = 0, n
            mm = mf.mm
            while lo < hi:
                mid = (lo + hi) >> 1
                phy, size, _ = _UNIT.unpack_from(mm, mid * CQ_STORE_UNIT_SIZE)
                if size != FILLER_SIZE and phy >= phy_offset:
                    hi = mid
                else:
                    lo = mid + 1
            if lo < n:
                return mf.file_from_offset + lo * CQ_STORE_UNIT_SIZE
        return files[-1].end_offset if files else 0

    def flush(self) -> None:
        self.queue.flush()
        self.dirty = False

    # -- read ----------------------------------------------------------------------------------------
    def _locate(self, index: int) -> tuple[MappedFile, int] | None:
        """(segment, position) of logical offset `index`, None below the min offset or outside any segment."""
        offset = index * CQ_STORE_UNIT_SIZE
        if offset < self.min_logic_offset:
            return None
        mf = self.queue.find_mapped_file_by_offset(offset)
        return None if mf is None else (mf, offset - mf.file_from_offset)

    def get_unit(self, index: int) -> tuple[int, int, int] | None:
        found = self._locate(index)
        if found is None:
            return None
        mf, pos = found
        if pos + CQ_STORE_UNIT_SIZE > mf.wrote_position:
            return None
        return _UNIT.unpack_from(mf.mm, pos)

    def index_buffer(self, index: int) -> tuple[MappedFile, int, int] | None:
        """(segment, start position, end of written part) of the units from `index` to the segment's end."""
        found = self._locate(index)
        if found is None:
            return None
        mf, pos = found
        if pos >= mf.wrote_position:
            return None
        return mf, pos, mf.wrote_position

    # -- min offset / cleaning -----------------------------------------------------------------------
    def correct_min_offset(self, phy_min_offset: int, across_files: bool = False) -> None:
        files = self.queue.files
        if not files:
            return
        search = files if across_files else files[:1]
        found = self._first_unit_at_or_after(phy_min_offset, search)
        if found < search[-1].end_offset:
            self.min_logic_offset = found
        elif across_files:
            self.min_logic_offset = self.queue.max_offset

    def delete_expired_file(self, phy_min_offset: int, across_files: bool = False) -> int:
        """Delete segments (never the last) whose last unit points below `phy_min_offset`; then correct min."""
        files = self.queue.files
        count = 0
        for mf in files[:-1]:
            if mf.wrote_position < CQ_STORE_UNIT_SIZE:
                break
            phy, size, _ = _UNIT.unpack_from(mf.mm, mf.wrote_position - CQ_STORE_UNIT_SIZE)
            if size != FILLER_SIZE and phy >= phy_min_offset:
                break
            count += 1
        if count:
            self.queue.delete_first_files(count)
            self._refresh_ends()
        self.correct_min_offset(phy_min_offset, across_files)
        return count

    # -- time search (§9.13) --------------------------------------------------------------------------
    def get_offset_in_queue_by_time(self, timestamp: int, commitlog: CommitLog) -> int:
        files = self.queue.files
        if not files:
            return 0
        phy_min = commitlog.min_offset
        written = [mf for mf in files if mf.wrote_position >= CQ_STORE_UNIT_SIZE]
        if not written:
            return self.min_offset_in_queue
        chosen = written[-1]
        for mf in written:
            phy, size, _ = _UNIT.unpack_from(mf.mm, mf.wrote_position - CQ_STORE_UNIT_SIZE)
            if commitlog.pickup_store_timestamp(phy, size) >= timestamp:
                chosen = mf
                break
        mm = chosen.mm
        low = max(self.min_logic_offset - chosen.file_from_offset, 0) // CQ_STORE_UNIT_SIZE
        high = chosen.wrote_position // CQ_STORE_UNIT_SIZE - 1
        left = right = -1
        left_value = right_value = -1
        target = -1
        while high >= low:
            mid = (low + high) >> 1
            phy, size, _ = _UNIT.unpack_from(mm, mid * CQ_STORE_UNIT_SIZE)
            if phy < phy_min or size == FILLER_SIZE:
                low = mid + 1
                left = mid
                continue
            store_time = commitlog.pickup_store_timestamp(phy, size)
            if store_time < 0:
                return 0
            if store_time == timestamp:
                target = mid
                break
            if store_time > timestamp:
                high = mid - 1
                right, right_value = mid, store_time
            else:
                low = mid + 1
                left, left_value = mid, store_time
        if target < 0:
            if left_value == -1 and right_value == -1:  # nothing readable in that segment
                return self.min_offset_in_queue
            if left_value == -1:
                target = right
            elif right_value == -1:
                target = left
            else:
                target = right if abs(timestamp - left_value) > abs(timestamp - right_value) else left
        return chosen.file_from_offset // CQ_STORE_UNIT_SIZE + target

    def get_earliest_store_time(self, commitlog: CommitLog) -> int:
        unit = self.get_unit(self.min_offset_in_queue)
        return -1 if unit is None else commitlog.pickup_store_timestamp(unit[0], unit[1])

    def __repr__(self) -> str:
        return (f"<ConsumeQueue {self.topic}/{self.queue_id} min={self.min_offset_in_queue} "
                f"max={self.max_offset_in_queue}>")
