"""Key index (reference §8.7): IndexFile (one hash-slot file) and IndexService (the files, put and query).

Layout as RocketMQ's: 40-byte header ``beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset (longs),
hashSlotCount, indexCount (ints)``, then ``max_hash_slot_num`` int slots (newest entry index of the slot), then
``max_index_num`` 20-byte entries ``keyHash int, phyOffset long, timeDiff int (seconds since begin), prevIndex int``.
Entry 0 is unused; indexCount starts at 1. Files are named ``yyyyMMddHHmmssSSS`` (creation time).

Deviations, on purpose:
* keyHash is ``crc32(topic#key) & 0x7FFFFFFF`` instead of Java's ``abs(String.hashCode())``: computed in C, which
  matters because every message carries at least its UNIQ_KEY. The files are not meant for RocketMQ's tools.
* A query verifies every candidate record (it must exist, be of the topic and carry the key), so hash collisions
  and stale entries (left after a dirty commitlog tail was cut) never reach the caller; results are deduplicated.

Indexing is deferred like RocketMQ's reput: puts queue (topic, keys, offset, time) and ``drain`` writes them in
a batch; queries and the checkpoint drain first, so callers never see a gap, and the checkpoint's confirm offset
never passes an unindexed message.

Crash safety without a scan: a drain writes its entries beyond ``indexCount`` first, then raises ``indexCount``,
then points the slots at the new entries. ``indexCount`` and slots are written with a single aligned 4-byte copy,
so a killed process leaves either the old or the new value: a chain can lose its newest entries (re-indexed by
recovery, which re-dispatches from the checkpoint) but never points into garbage.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
import zlib
from itertools import chain, repeat
from typing import Callable, Sequence

from rocketmq_emulator.native import lane

from .mapped_file import BlockReserving, create_full_size, fsync_dir, remove_tmp_files

INDEX_HEADER_SIZE = 40
_HEADER = struct.Struct(">qqqqii")
_ENTRY = struct.Struct(">iqii")
_ENTRY_CHUNK = struct.Struct(">" + "iqii" * 256)  # 256 entries in one call
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")

#: the native lane's twin of `_drain_python` (rocketmq_emulator.native), None on the Python path
_index_drain = lane.index_drain if lane is not None else None

# a message's keys waiting to be indexed: (topic, keys, commitlog offset, store timestamp)
IndexRequest = tuple[str, Sequence[str], int, int]


def key_hash(topic: str, key: str) -> int:
    """crc32 of ``topic#key`` (same as crc32(key, crc32(topic#)) used by the writer)."""
    return zlib.crc32(f"{topic}#{key}".encode()) & 0x7FFFFFFF


class IndexFile(BlockReserving):
    __slots__ = ("slot_num", "index_num", "begin_timestamp", "end_timestamp", "begin_phy_offset", "end_phy_offset",
                 "hash_slot_count", "index_count", "_entries_at")

    def __init__(self, path: str, slot_num: int, index_num: int, *, create: bool, preallocate: bool = False):
        size = INDEX_HEADER_SIZE + slot_num * 4 + index_num * 20
        self.path = path
        self.slot_num = slot_num
        self.index_num = index_num
        self._entries_at = INDEX_HEADER_SIZE + slot_num * 4
        self.file_size = size
        fd = create_full_size(path, size, preallocate) if create else os.open(path, os.O_RDWR)
        try:
            if not create and os.fstat(fd).st_size != size:
                raise ValueError(f"{path}: index file of {os.fstat(fd).st_size} bytes, expected {size}")
            if preallocate:  # header and slot table now (written at random); entries in chunks, as written
                os.posix_fallocate(fd, 0, self._entries_at)
            self.mm = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            raise
        # kept open for the file's life: block reservation and flushes go through it (see MappedFile)
        self.fd, self.allocated = fd, (self._entries_at if preallocate else size)
        if create:
            self.begin_timestamp = self.end_timestamp = 0
            self.begin_phy_offset = self.end_phy_offset = 0
            self.hash_slot_count = 0
            self.index_count = 1
            self.mm[0:INDEX_HEADER_SIZE] = _HEADER.pack(0, 0, 0, 0, 0, 1)
        else:
            (self.begin_timestamp, self.end_timestamp, self.begin_phy_offset, self.end_phy_offset,
             self.hash_slot_count, self.index_count) = _HEADER.unpack_from(self.mm, 0)
            self.index_count = min(max(self.index_count, 1), index_num)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @property
    def is_full(self) -> bool:
        return self.index_count >= self.index_num

    def mark_end(self, phy: int, store_ts: int) -> None:
        self.end_phy_offset = phy
        self.end_timestamp = store_ts
        mm = self.mm
        mm[8:16] = _LONG.pack(store_ts)
        mm[24:32] = _LONG.pack(phy)

    def select_phy_offsets(self, h: int, out: list[int], max_num: int, begin: int, end: int) -> None:
        mm = self.mm
        count = self.index_count
        idx = _INT.unpack_from(mm, INDEX_HEADER_SIZE + (h % self.slot_num) * 4)[0]
        while 0 < idx < count and len(out) < max_num:
            h2, phy, diff, prev = _ENTRY.unpack_from(mm, self._entries_at + idx * 20)
            if h2 == h:
                t = self.begin_timestamp + diff * 1000
                if begin <= t <= end:
                    out.append(phy)
            if prev >= idx:
                break
            idx = prev

    def write_header(self) -> None:
        self.mm[32:36] = _INT.pack(self.hash_slot_count)

    def flush(self) -> None:
        self.write_header()
        self.mm.flush()


class IndexService:
    def __init__(self, index_dir: str, slot_num: int, index_num: int, preallocate: bool = False,
                 clock: Callable[[], int] | None = None) -> None:
        self.index_dir = index_dir
        self.slot_num = slot_num
        self.index_num = index_num
        self.preallocate = preallocate
        self.clock = clock or (lambda: time.time_ns() // 1_000_000)
        self.files: list[IndexFile] = []
        self.pending: list[IndexRequest] = []  # (topic, keys, phy, store timestamp) not written yet
        self._dirty: dict[str, IndexFile] = {}  # files written since the last flush
        self.max_indexed_phy = -1  # messages at or below this commitlog offset are already indexed

    def load(self) -> None:
        self.close()
        if not os.path.isdir(self.index_dir):
            return
        remove_tmp_files(self.index_dir)
        for name in sorted(os.listdir(self.index_dir)):
            if len(name) != 17 or not name.isdigit():
                continue
            try:
                f = IndexFile(os.path.join(self.index_dir, name), self.slot_num, self.index_num, create=False)
            except (OSError, ValueError):
                continue  # wrong size (configuration changed) or unreadable: ignore it
            self.files.append(f)
        if self.files:
            last = self.files[-1]
            self.max_indexed_phy = last.end_phy_offset if last.index_count > 1 else -1

    def _new_file(self) -> IndexFile:
        os.makedirs(self.index_dir, exist_ok=True)
        ms = self.clock()
        while True:
            name = time.strftime("%Y%m%d%H%M%S", time.localtime(ms / 1000)) + f"{ms % 1000:03d}"
            if not self.files or name > self.files[-1].name:
                path = os.path.join(self.index_dir, name)
                if not os.path.exists(path):
                    break
            ms += 1
        f = IndexFile(path, self.slot_num, self.index_num, create=True, preallocate=self.preallocate)
        fsync_dir(self.index_dir)
        self.files.append(f)
        return f

    def build_index(self, topic: str, keys: Sequence[str], phy: int, store_ts: int) -> None:
        """Queue `keys` of the message at `phy` for indexing (written by the next ``drain``)."""
        self.pending.append((topic, keys, phy, store_ts))

    def drain(self) -> bool:
        """Write the queued entries. Per file: entries beyond the count, then the count, then the slot heads
        (each slot a single aligned 4-byte copy). Returns False when an index file cannot be created."""
        pend = self.pending
        if not pend:
            return True
        self.pending = []
        i = 0
        while i < len(pend):
            try:
                f = self.files[-1] if self.files and not self.files[-1].is_full else self._new_file()
            except OSError:
                self.pending = pend[i:] + self.pending  # kept for the next drain; the checkpoint waits for them
                return False
            try:
                reached = self._drain_into(f, pend, i)
            except OSError:  # the disk is full: keep them for the next drain; the checkpoint waits for them
                self.pending = pend[i:] + self.pending
                return False
            self._dirty[f.name] = f
            if reached == i and not f.is_full:
                break  # cannot happen; never loop forever
            i = reached
        return True

    def _drain_into(self, f: IndexFile, pend: list[IndexRequest], i: int) -> int:
        """Index pending[i:] into `f` until it is full; returns the position reached in `pend`.

        The per-key work runs in C-level maps and comprehensions: hashes, slots, current slot heads; only
        keys sharing a slot within the drain are chained in a Python loop."""
        mm, first, limit, slot_num, at = f.mm, f.index_count, f.index_num, f.slot_num, f._entries_at
        last_phy = self.max_indexed_phy
        drained = None if _index_drain is None else \
            _index_drain(mm, first, limit, slot_num, at, f.allocated, last_phy, f.begin_timestamp, pend, i)
        if drained is not None:  # the native lane did it (None: this twin must)
            i, count, new_slots, last_phy = drained[:4]
            if count:
                if first == 1:
                    f.begin_timestamp, f.begin_phy_offset = drained[4], drained[5]
                f.index_count = first + count
                f.hash_slot_count += new_slots
                f.end_phy_offset, f.end_timestamp = drained[6], drained[7]
            self.max_indexed_phy = last_phy
            return i
        return self._drain_python(f, pend, i)

    def _drain_python(self, f: IndexFile, pend: list[IndexRequest], i: int) -> int:
        """`_drain_into` in Python: the reference the native lane's `index_drain` matches."""
        mm, first, limit, slot_num, at = f.mm, f.index_count, f.index_num, f.slot_num, f._entries_at
        last_phy = self.max_indexed_phy
        # flatten (topic, keys, phy, ts) -> per key: topic, key, phy, ts; stop when the file is full
        topics: list[str] = []
        keys_flat: list[str] = []
        phys: list[int] = []
        stamps: list[int] = []
        room = limit - first
        end = len(pend)
        while i < end:
            topic, keys, phy, ts = pend[i]
            if phy <= last_phy:
                i += 1
                continue
            k = len(keys)
            if k > room:
                if keys_flat or room <= 0:
                    break
                keys, k = keys[:room], room  # more keys than a whole file holds: index what fits
            i += 1
            room -= k
            last_phy = phy
            if k == 1:
                topics.append(topic)
                keys_flat.append(keys[0])
                phys.append(phy)
                stamps.append(ts)
            else:
                topics += [topic] * k
                keys_flat += keys
                phys += [phy] * k
                stamps += [ts] * k
        count = len(keys_flat)
        if not count:
            self.max_indexed_phy = last_phy
            return i
        if first == 1:
            f.begin_timestamp, f.begin_phy_offset = stamps[0], phys[0]
            mm[0:8] = _LONG.pack(stamps[0])
            mm[16:24] = _LONG.pack(phys[0])
        begin_ts = f.begin_timestamp
        bases = {t: zlib.crc32(f"{t}#".encode()) for t in set(topics)}
        hashes = [h & 0x7FFFFFFF for h in map(zlib.crc32, map(str.encode, keys_flat), map(bases.__getitem__, topics))]
        slots = [h % slot_num for h in hashes]
        unpack_from = _INT.unpack_from
        prevs = [p if 0 < p < first else 0
                 for (p,) in map(unpack_from, repeat(mm, count), [INDEX_HEADER_SIZE + 4 * s for s in slots])]
        indexes = range(first, first + count)
        heads = dict(zip(slots, indexes))  # newest entry per slot
        f.hash_slot_count += len({s for s, p in zip(slots, prevs) if p == 0})  # slots used for the first time
        if len(heads) != count:  # keys sharing a slot in this drain: chain them in order
            seen: dict[int, int] = {}
            for j, s in enumerate(slots):
                if s in seen:
                    prevs[j] = seen[s]
                seen[s] = first + j
        diffs = [(ts - begin_ts) // 1000 for ts in stamps]
        if diffs[0] < 0 or diffs[-1] > 0x7FFFFFFF:
            diffs = [d if 0 <= d <= 0x7FFFFFFF else 0 for d in diffs]
        flat = list(chain.from_iterable(zip(hashes, phys, diffs, prevs)))
        if not f.ensure_allocated(at + (first + count) * 20):
            raise OSError("no disk space for the key index")
        # entries (beyond the count), then the count, then the slot heads
        pos = at + first * 20
        chunk = _ENTRY_CHUNK
        per_chunk = chunk.size // 20 * 4
        k = 0
        total = len(flat)
        while total - k >= per_chunk:
            chunk.pack_into(mm, pos, *flat[k:k + per_chunk])
            pos += chunk.size
            k += per_chunk
        while k < total:
            _ENTRY.pack_into(mm, pos, *flat[k:k + 4])
            pos += 20
            k += 4
        n = first + count
        f.index_count = n
        mm[36:40] = _INT.pack(n)  # count before slots: a slot never points past the count
        pack = _INT.pack
        for s, idx in heads.items():
            p = INDEX_HEADER_SIZE + 4 * s
            mm[p:p + 4] = pack(idx)
        f.mark_end(phys[-1], stamps[-1])
        self.max_indexed_phy = last_phy
        return i

    def query_offsets(self, topic: str, key: str, max_num: int, begin: int, end: int) -> list[int]:
        """Commitlog offsets of candidates for `topic#key`, newest first (may include collisions)."""
        self.drain()
        h = key_hash(topic, key)
        out: list[int] = []
        for f in reversed(self.files):
            if f.index_count <= 1:
                continue
            if f.end_timestamp < begin or f.begin_timestamp > end + 1000:
                continue
            f.select_phy_offsets(h, out, max_num, begin - 1000, end)
            if len(out) >= max_num:
                break
        return out

    @property
    def last_update(self) -> tuple[int, int]:
        """(timestamp, phy offset) of the newest indexed message."""
        for f in reversed(self.files):
            if f.index_count > 1:
                return f.end_timestamp, f.end_phy_offset
        return 0, 0

    def truncate_after(self, phy: int) -> None:
        """The commitlog was cut at `phy`: forget indexed offsets at or beyond it (re-index from there)."""
        self.pending = [p for p in self.pending if p[2] < phy]
        if self.max_indexed_phy >= phy:
            self.max_indexed_phy = phy - 1
        for f in self.files:
            if f.end_phy_offset >= phy:
                f.mark_end(phy - 1, f.end_timestamp)
                self._dirty[f.name] = f

    def delete_expired(self, phy_min: int) -> int:
        count = 0
        while len(self.files) > 1 and self.files[0].end_phy_offset < phy_min:
            self.files.pop(0).destroy()
            count += 1
        return count

    def flush(self) -> None:
        self.drain()
        dirty, self._dirty = self._dirty, {}
        for f in dirty.values():
            if f in self.files:
                f.flush()

    def take_dirty_fds(self) -> list[int]:
        """For a background flush: write pending entries and headers; return the descriptors to fsync."""
        self.drain()
        dirty, self._dirty = self._dirty, {}
        fds = []
        for f in dirty.values():
            if f in self.files:
                f.write_header()
                fds.append(f.fd)
        return fds

    def close(self) -> None:
        for f in self.files:
            f.close()
        self.files = []
        self.pending = []
        self._dirty = {}

    def destroy(self) -> None:
        for f in self.files:
            f.destroy()
        self.files = []
