"""MappedFile and MappedFileQueue: fixed-size, memory-mapped segment files named by their 20-digit start offset.

* A MappedFile is created at full size as a sparse file (``ftruncate``) and mapped read/write (``MAP_SHARED``).
  With ``preallocate`` the disk blocks are reserved in chunks (``posix_fallocate``, ``ALLOCATE_AHEAD`` past the
  write position) before bytes are written there: a full disk then fails the allocation, which the writer
  turns into an error status, instead of killing the process with SIGBUS on a write into the mapping; and a
  1 GiB segment costs only the disk it really uses (RocketMQ's files are sparse by default too). Writes go straight into the mapping; ``flush`` is ``msync`` of the
  dirty range. Only ``wrote_position`` (in memory) says how much is used: the queue's owner restores it on load.
* The mapping is never exported as a memoryview, so a file can always be closed and deleted; readers receive
  ``bytes`` copies.
* A MappedFileQueue is the ordered list of segments of one log (the commitlog, or one consume queue). Segments
  must be contiguous and all of the configured size, otherwise loading fails (``StoreLoadError``), like the
  broker refusing to start.
"""

from __future__ import annotations

import mmap
import os

_PAGE = mmap.ALLOCATIONGRANULARITY
_ZERO_CHUNK = bytes(1 << 20)
ALLOCATE_AHEAD = 4 * 1024 * 1024


def allocation_chunk(file_size: int) -> int:
    """How far ahead of the writes blocks are reserved: 4 MiB, or 1/16 of a smaller file (64 KiB at least)."""
    return min(ALLOCATE_AHEAD, max(64 * 1024, file_size // 16))


class StoreLoadError(Exception):
    """The store directory cannot be opened (bad segment sizes, holes, another process holds the lock...)."""


def fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def create_full_size(path: str, size: int, preallocate: bool) -> int:
    """Create `path` at its full size atomically (written as ``<path>.tmp``, then renamed): a process killed
    half-way leaves no short file under the real name. Returns an open read/write descriptor. Raises OSError."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, size)
        if preallocate:  # fail now rather than on the first write when the disk has not even one chunk
            os.posix_fallocate(fd, 0, min(size, allocation_chunk(size)))
        if os.path.exists(path):
            raise FileExistsError(path)
        os.rename(tmp, path)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return fd


class BlockReserving:
    """A sparse mapped file: disk blocks reserved in chunks just ahead of the writes (module docstring), and
    closing/deleting it. Users have `path`, `mm`, `fd` (open for the file's life, -1 once closed),
    `allocated` and `file_size`."""

    __slots__ = ("path", "mm", "fd", "allocated", "file_size")
    path: str
    mm: mmap.mmap
    fd: int
    allocated: int
    file_size: int

    def ensure_allocated(self, end: int) -> bool:
        """Reserve disk blocks up to `end` (and a chunk beyond); False when the disk has no room."""
        if end <= self.allocated:
            return True
        new = min(self.file_size, max(end, self.allocated + allocation_chunk(self.file_size)))
        try:
            os.posix_fallocate(self.fd, self.allocated, new - self.allocated)
        except OSError:
            return False
        self.allocated = new
        return True

    def close(self) -> None:
        try:
            self.mm.close()
        except (BufferError, ValueError):
            pass
        self._close_descriptor()

    def destroy(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def _close_descriptor(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1


def data_extents(path: str, start: int, end: int) -> list[tuple[int, int]]:
    """The [from, to) ranges of `path` within [start, end) that hold data (SEEK_DATA/SEEK_HOLE).

    Code that scans a sparse file through its mapping must stay inside these: on tmpfs even a read fault on
    a hole allocates a page, which kills the process with SIGBUS when the filesystem is full."""
    out: list[tuple[int, int]] = []
    fd = os.open(path, os.O_RDONLY)
    try:
        p = start
        while p < end:
            try:
                data = os.lseek(fd, p, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after p
                break
            if data >= end:
                break
            hole = os.lseek(fd, data, os.SEEK_HOLE)
            out.append((data, min(hole, end)))
            p = hole
    finally:
        os.close(fd)
    return out


def remove_tmp_files(directory: str) -> None:
    """Leftovers of a creation interrupted by a crash."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name.endswith(".tmp"):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


class MappedFile(BlockReserving):
    __slots__ = ("file_from_offset", "wrote_position", "flushed_position")

    def __init__(self, path: str, file_size: int, *, create: bool = False, preallocate: bool = False) -> None:
        self.path = path
        self.file_from_offset = int(os.path.basename(path))
        self.file_size = file_size
        self.wrote_position = 0
        self.flushed_position = 0
        fd = create_full_size(path, file_size, preallocate) if create else os.open(path, os.O_RDWR)
        try:
            if not create:
                actual = os.fstat(fd).st_size
                if actual != file_size:
                    raise StoreLoadError(f"{path}: size {actual}, expected {file_size}")
            self.mm = mmap.mmap(fd, file_size)
        except BaseException:
            os.close(fd)
            raise
        # The descriptor stays open for the file's life: blocks are reserved through it ahead of the writes, and
        # flushes fdatasync it, so a flush opens nothing (and cannot fail for want of a descriptor).
        self.fd = fd
        if preallocate:
            self.allocated = min(file_size, allocation_chunk(file_size)) if create else 0
        else:
            self.allocated = file_size

    # -- state --------------------------------------------------------------------------------------
    @property
    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    @property
    def end_offset(self) -> int:
        """Offset just past the written part."""
        return self.file_from_offset + self.wrote_position

    def last_modified_ms(self) -> int:
        try:
            return int(os.stat(self.path).st_mtime * 1000)
        except OSError:
            return 0

    # -- io -----------------------------------------------------------------------------------------
    def flush(self) -> int:
        """msync the range written since the last flush; returns the new flushed position."""
        wrote = self.wrote_position
        flushed = self.flushed_position
        if wrote > flushed:
            start = flushed - flushed % _PAGE
            self.mm.flush(start, wrote - start)
            self.flushed_position = wrote
        return wrote

    def zero_from(self, pos: int) -> int:
        """Zero every non-zero byte from `pos` to the end of the file; returns how many bytes were rewritten.

        Only pages that hold non-zero bytes are written (those are backed by disk blocks already): writing zeros
        over a hole would make the filesystem allocate it, which on a full disk kills the process (SIGBUS)."""
        mm = self.mm
        page = mmap.PAGESIZE
        zero_page = _ZERO_CHUNK[:page]
        rewritten = 0
        for p, end in data_extents(self.path, pos, self.file_size):
            # 1 MiB slices compared against zeros; inside a slice that differs, page by page
            while p < end:
                n = min(len(_ZERO_CHUNK) - p % len(_ZERO_CHUNK), end - p)
                if mm[p:p + n] != _ZERO_CHUNK[:n]:
                    q, stop = p, p + n
                    while q < stop:
                        m = min(page - q % page, stop - q)
                        if mm[q:q + m] != zero_page[:m]:
                            mm[q:q + m] = zero_page[:m]
                            rewritten += m
                        q += m
                p += n
        if rewritten:
            start = pos - pos % _PAGE
            mm.flush(start, self.file_size - start)
        return rewritten

    def __repr__(self) -> str:
        return f"<MappedFile {os.path.basename(self.path)} wrote={self.wrote_position}/{self.file_size}>"


class MappedFileQueue:
    """The ordered, contiguous segments of one log."""

    def __init__(self, store_path: str, mapped_file_size: int, *, preallocate: bool = False) -> None:
        self.store_path = store_path
        self.mapped_file_size = mapped_file_size
        self.preallocate = preallocate
        self.files: list[MappedFile] = []

    # -- load / close -------------------------------------------------------------------------------
    def load(self) -> None:
        """Map every segment of the directory; each counts as full until its owner says otherwise."""
        self.close()
        if not os.path.isdir(self.store_path):
            return
        remove_tmp_files(self.store_path)
        names = sorted(n for n in os.listdir(self.store_path) if len(n) == 20 and n.isdigit())
        size = self.mapped_file_size
        files: list[MappedFile] = []
        try:
            for name in names:
                mf = MappedFile(os.path.join(self.store_path, name), size)
                if files and mf.file_from_offset != files[-1].file_from_offset + size:
                    mf.close()
                    raise StoreLoadError(f"{self.store_path}: segment {name} does not follow "
                                         f"{os.path.basename(files[-1].path)} (hole or wrong size)")
                if mf.file_from_offset % size:
                    mf.close()
                    raise StoreLoadError(f"{self.store_path}: segment {name} is not aligned to {size}")
                mf.wrote_position = mf.flushed_position = size
                files.append(mf)
        except BaseException:
            for mf in files:
                mf.close()
            raise
        self.files = files

    def close(self) -> None:
        for mf in self.files:
            mf.close()
        self.files = []

    def destroy(self) -> None:
        for mf in self.files:
            mf.destroy()
        self.files = []
        try:
            os.rmdir(self.store_path)
        except OSError:
            pass

    # -- lookup -------------------------------------------------------------------------------------
    @property
    def first(self) -> MappedFile | None:
        return self.files[0] if self.files else None

    @property
    def last(self) -> MappedFile | None:
        return self.files[-1] if self.files else None

    @property
    def min_offset(self) -> int:
        """Start of the first segment, -1 without segments."""
        return self.files[0].file_from_offset if self.files else -1

    @property
    def max_offset(self) -> int:
        """End of the written part of the last segment, 0 without segments."""
        return self.files[-1].end_offset if self.files else 0

    def find_mapped_file_by_offset(self, offset: int) -> MappedFile | None:
        files = self.files
        if not files:
            return None
        idx = (offset - files[0].file_from_offset) // self.mapped_file_size
        if 0 <= idx < len(files):
            return files[idx]
        return None

    # -- growth -------------------------------------------------------------------------------------
    def create_mapped_file(self, start_offset: int) -> MappedFile:
        """Create the segment starting at `start_offset` (must follow the last one). Raises OSError."""
        if self.files and start_offset != self.files[-1].file_from_offset + self.mapped_file_size:
            raise ValueError(f"segment {start_offset} does not follow the last one")
        os.makedirs(self.store_path, exist_ok=True)
        path = os.path.join(self.store_path, f"{start_offset:020d}")
        try:
            mf = MappedFile(path, self.mapped_file_size, create=True, preallocate=self.preallocate)
        except FileExistsError:
            os.unlink(path)  # a stale segment beyond the end (never listed): start it afresh
            mf = MappedFile(path, self.mapped_file_size, create=True, preallocate=self.preallocate)
        fsync_dir(self.store_path)
        self.files.append(mf)
        return mf

    # -- flush --------------------------------------------------------------------------------------
    def flush(self) -> None:
        for mf in reversed(self.files):
            if mf.wrote_position > mf.flushed_position:
                mf.flush()
            elif mf is not self.files[-1]:
                break

    # -- shrink -------------------------------------------------------------------------------------
    def truncate_dirty_files(self, offset: int, keep_first: bool = True) -> int:
        """Make `offset` the end of the log: zero the tail of the segment holding it, delete later segments.

        Segments before it are marked full. A segment starting exactly at `offset` is deleted unless it is the
        only one left and `keep_first`. Returns the number of bytes zeroed."""
        zeroed = 0
        kept: list[MappedFile] = []
        for mf in self.files:
            start = mf.file_from_offset
            if start + self.mapped_file_size <= offset:
                mf.wrote_position = mf.flushed_position = self.mapped_file_size
                kept.append(mf)
            elif start < offset or (start == offset and not kept and keep_first):
                pos = offset - start
                zeroed += mf.zero_from(pos)
                mf.wrote_position = mf.flushed_position = pos
                kept.append(mf)
            else:
                mf.destroy()
        self.files = kept
        return zeroed

    def delete_first_files(self, count: int) -> list[MappedFile]:
        """Delete the `count` oldest segments (never the last one); returns the deleted segments."""
        count = max(0, min(count, len(self.files) - 1))
        victims = self.files[:count]
        for mf in victims:
            mf.destroy()
        self.files = self.files[count:]
        return victims
