"""The read side of MessageStore (a mixin): the pull lookup of §9.3, offsets and times of §9.13, lookups by offset
msgId and by key.

Rules kept from RocketMQ 4.9.x ``DefaultMessageStore.getMessage``:

* status order: NO_MESSAGE_IN_QUEUE (max == 0, next 0), OFFSET_TOO_SMALL (next min), OFFSET_OVERFLOW_ONE (next
  offset), OFFSET_OVERFLOW_BADLY (next max), OFFSET_FOUND_NULL (no file holds the offset: next = first offset of the
  next consume-queue file), else a scan (FOUND / NO_MATCHED_MESSAGE / MESSAGE_WAS_REMOVING, next = offset + units
  scanned);
* the scan reads units from the offset to the end of the written part of that consume-queue file, at most
  ``max(max_filter_message_count, max_msg_nums * 20)`` bytes; before each unit, once something was found, a full
  batch stops the scan without counting the unit (``max_msg_nums``; 256 KiB / 32 in memory; 64 KiB / 8 "on
  disk"); the tag filter compares ``(int) tagsCode``; a unit whose commitlog data is gone makes every following
  unit in that commitlog segment skipped;
* NO_MATCHED_LOGIC_QUEUE (never returned by 4.x) is answered for names that cannot be a queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Collection

from rocketmq_emulator.native import lane
from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.message import PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, MessageExt

from .consume_queue import CQ_STORE_UNIT_SIZE, CQ_UNIT
from .results import GetMessageResult, GetMessageStatus, QueryMessageResult

#: the native lane's walk over consume-queue units for plain pulls (rocketmq_emulator.native), None on the
#: Python path; its outcome codes as statuses
_scan_units = lane.scan_units if lane is not None else None
_FOUND_STATUS = (GetMessageStatus.NO_MATCHED_MESSAGE, GetMessageStatus.FOUND, GetMessageStatus.MESSAGE_WAS_REMOVING)

if TYPE_CHECKING:
    import threading

    from .commitlog import CommitLog
    from .config import MessageStoreConfig
    from .consume_queue import ConsumeQueue
    from .index_file import IndexService
    from .mapped_file import MappedFile

# the pull's tag filter: None (every message), a set of tag hash codes, or a predicate on the tag hash code
TagFilter = Collection[int] | Callable[[int], bool] | None
#: a filter on a found message's record bytes (the broker's SQL92 property filter): keep it when it answers True
RecordFilter = Callable[[bytes], bool] | None


def valid_queue_name(topic: str, queue_id: int) -> bool:
    return (isinstance(topic, str) and 0 < len(topic) <= 255 and topic not in (".", "..") and "/" not in topic
            and "\\" not in topic and "\0" not in topic and isinstance(queue_id, int) and queue_id >= 0)


class MessageLookup:
    """Mixed into MessageStore; uses its ``_lock``, ``_running``, ``_cqs``, ``commitlog``, ``index``, ``config``."""

    # set by MessageStore.__init__
    _lock: threading.RLock
    _running: bool
    _cqs: dict[tuple[str, int], ConsumeQueue]
    #: queues whose offsets or times were asked for: 4.9.8's store makes an empty consume queue for each (its
    #: findConsumeQueue), which queryCq then finds (broker/handlers/broker_config.py)
    looked_up_queues: set[tuple[str, int]]
    commitlog: CommitLog
    index: IndexService
    config: MessageStoreConfig
    get_count: int
    get_found: int

    # ------------------------------------------------------------------------------------------------
    # get (§9.3)
    # ------------------------------------------------------------------------------------------------
    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int = 32,
                    tag_filter: TagFilter = None, record_filter: RecordFilter = None, joined: bool = False
                    ) -> GetMessageResult | None:
        """Pull lookup. `tag_filter`: None (all), a set of tag hash codes, or a callable(tags_code) -> bool;
        `record_filter`: None, or a callable(record bytes) -> bool applied to the messages the tag filter kept.
        `joined`: only the records back to back are wanted (a pull's answer body, `GetMessageResult.body()`); the
        native lane then makes one bytes object, not one per message (`GetMessageResult.joined`)."""
        if not self._running:
            return None
        with self._lock:
            self.get_count += 1
            cq = self._cqs.get((topic, queue_id))
            if cq is None:
                if not valid_queue_name(topic, queue_id):
                    return GetMessageResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, 0, 0, 0)
                return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
            min_offset = cq.min_offset_in_queue
            max_offset = cq.max_offset_in_queue
            if max_offset == 0:
                return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, min_offset, max_offset)
            if offset < min_offset:
                return GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, min_offset, min_offset, max_offset)
            if offset == max_offset:
                return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, min_offset, max_offset)
            if offset > max_offset:
                return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset, min_offset, max_offset)
            buf = cq.index_buffer(offset)
            if buf is None:
                return GetMessageResult(GetMessageStatus.OFFSET_FOUND_NULL, cq.roll_next_file(offset), min_offset,
                                        max_offset)
            result = self._scan_units(buf, offset, max_msg_nums, tag_filter, min_offset, max_offset, record_filter,
                                      joined)
            if result.status is GetMessageStatus.FOUND:
                self.get_found += result.message_count
            return result

    def _scan_units(self, buf: tuple[MappedFile, int, int], offset: int, max_msg_nums: int, tag_filter: TagFilter,
                    min_offset: int, max_offset: int, record_filter: RecordFilter = None, joined: bool = False
                    ) -> GetMessageResult:
        cfg = self.config
        mf, pos, wrote = buf
        end = min(wrote, pos + max(cfg.max_filter_message_count, max_msg_nums * CQ_STORE_UNIT_SIZE))
        result = GetMessageResult(GetMessageStatus.NO_MATCHED_MESSAGE, offset, min_offset, max_offset)
        commitlog = self.commitlog
        mem = cfg.total_physical_memory_size
        if _scan_units is not None and record_filter is None and mem is None and \
                (tag_filter is None or type(tag_filter) is set or type(tag_filter) is frozenset):
            native = _scan_units(mf.mm, pos, end, offset, max_msg_nums, tag_filter, commitlog.queue.files,
                                 commitlog.file_size, cfg.max_transfer_bytes_on_message_in_memory,
                                 cfg.max_transfer_count_on_message_in_memory, joined)
            if native is not None:  # (None: something is off; the walk below decides)
                if joined:
                    found, p, result.buffer_total_size, result.joined, result.count = native
                else:
                    found, p, result.buffer_total_size, result.messages, result.queue_offsets, result.phy_offsets = \
                        native
                result.status = _FOUND_STATUS[found]
                result.units_scanned = scanned = (p - pos) // CQ_STORE_UNIT_SIZE
                result.next_begin_offset = offset + scanned
                return result
        max_phy = commitlog.max_offset
        mem_limit = None if mem is None else mem * cfg.access_message_in_memory_max_ratio // 100
        match: Callable[[int], bool] | None
        if tag_filter is None:
            match = None
        elif callable(tag_filter):
            match = tag_filter
        else:
            match = tag_filter.__contains__
        messages = result.messages
        queue_offsets = result.queue_offsets
        phy_offsets = result.phy_offsets
        unpack = CQ_UNIT.unpack_from
        get = commitlog.get_message
        mm = mf.mm
        total = 0
        status = GetMessageStatus.NO_MATCHED_MESSAGE
        next_phy_file_start = -1
        p = pos
        while p < end:
            phy, size, tags = unpack(mm, p)
            if phy < next_phy_file_start:
                p += CQ_STORE_UNIT_SIZE
                continue
            if total:
                count = len(messages)
                if count >= max_msg_nums:
                    break
                if mem_limit is not None and max_phy - phy > mem_limit:
                    if total + size > cfg.max_transfer_bytes_on_message_in_disk or \
                            count >= cfg.max_transfer_count_on_message_in_disk:
                        break
                elif total + size > cfg.max_transfer_bytes_on_message_in_memory or \
                        count >= cfg.max_transfer_count_on_message_in_memory:
                    break
            if match is not None:
                code = tags if -0x80000000 <= tags <= 0x7FFFFFFF else ((tags + 0x80000000) & 0xFFFFFFFF) - 0x80000000
                if not match(code):
                    p += CQ_STORE_UNIT_SIZE
                    continue
            data = get(phy, size)
            if data is None:
                if not total:
                    status = GetMessageStatus.MESSAGE_WAS_REMOVING
                next_phy_file_start = commitlog.roll_next_file(phy)
                p += CQ_STORE_UNIT_SIZE
                continue
            if record_filter is not None and not record_filter(data):
                p += CQ_STORE_UNIT_SIZE
                continue
            messages.append(data)
            queue_offsets.append(offset + (p - pos) // CQ_STORE_UNIT_SIZE)
            phy_offsets.append(phy)
            total += size
            status = GetMessageStatus.FOUND
            next_phy_file_start = -1
            p += CQ_STORE_UNIT_SIZE
        scanned = (p - pos) // CQ_STORE_UNIT_SIZE
        result.status = status
        result.units_scanned = scanned
        result.next_begin_offset = offset + scanned
        result.buffer_total_size = total
        if mem_limit is not None and messages:
            result.suggest_pulling_from_slave = max_phy - phy_offsets[-1] > mem_limit
        return result

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, consume_offset: int) -> bool:
        """§9.7: is the message at `consume_offset` "on disk"? False when there is no such unit."""
        mem = self.config.total_physical_memory_size
        with self._lock:
            cq = self._cqs.get((topic, queue_id))
            unit = cq.get_unit(consume_offset) if cq is not None else None
            if unit is None or mem is None:
                return False
            return self.commitlog.max_offset - unit[0] > mem * self.config.access_message_in_memory_max_ratio // 100

    # ------------------------------------------------------------------------------------------------
    # offsets and time (§9.13)
    # ------------------------------------------------------------------------------------------------
    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        self.looked_up_queues.add((topic, queue_id))
        cq = self._cqs.get((topic, queue_id))
        return cq.max_offset_in_queue if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        self.looked_up_queues.add((topic, queue_id))
        cq = self._cqs.get((topic, queue_id))
        return cq.min_offset_in_queue if cq is not None else 0

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_offset: int) -> int:
        with self._lock:
            cq = self._cqs.get((topic, queue_id))
            unit = cq.get_unit(consume_offset) if cq is not None else None
            return unit[0] if unit is not None else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        self.looked_up_queues.add((topic, queue_id))
        with self._lock:
            cq = self._cqs.get((topic, queue_id))
            return cq.get_offset_in_queue_by_time(timestamp, self.commitlog) if cq is not None else 0

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        self.looked_up_queues.add((topic, queue_id))
        with self._lock:
            cq = self._cqs.get((topic, queue_id))
            return cq.get_earliest_store_time(self.commitlog) if cq is not None else -1

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_offset: int) -> int:
        with self._lock:
            cq = self._cqs.get((topic, queue_id))
            unit = cq.get_unit(consume_offset) if cq is not None else None
            return -1 if unit is None else self.commitlog.pickup_store_timestamp(unit[0], unit[1])

    def get_commitlog_earliest_time(self) -> int:
        """Store time of the first record of the commitlog, -1 if empty."""
        with self._lock:
            for phy, data in self.commitlog.iter_records(self.commitlog.min_offset, check_crc=False):
                return MessageExt.decode(data).store_timestamp
            return -1

    @property
    def commitlog_min_offset(self) -> int:
        """Start of the first commitlog segment (-1 without segments): RocketMQ's getMinPhyOffset."""
        return self.commitlog.min_offset

    @property
    def commitlog_max_offset(self) -> int:
        """End of the written commitlog: RocketMQ's getMaxPhyOffset."""
        return self.commitlog.max_offset

    def get_min_phy_offset(self) -> int:
        return self.commitlog.min_offset

    def get_max_phy_offset(self) -> int:
        return self.commitlog.max_offset

    # ------------------------------------------------------------------------------------------------
    # lookups
    # ------------------------------------------------------------------------------------------------
    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> bytes | None:
        with self._lock:
            if not self._running or commit_log_offset < self.commitlog.min_offset:
                return None
            return self.commitlog.select_one_message_by_offset(commit_log_offset, size)

    def size_field_at(self, commit_log_offset: int) -> int | None:
        """`CommitLog.size_field_at`: the signed TOTALSIZE read at an offset (None outside the kept data)."""
        with self._lock:
            if not self._running or commit_log_offset < self.commitlog.min_offset:
                return None
            return self.commitlog.size_field_at(commit_log_offset)

    def look_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> MessageExt | None:
        data = self.select_one_message_by_offset(commit_log_offset, size)
        if data is None:
            return None
        try:
            return MessageExt.decode(data)
        except ProtocolError:
            return None

    def query_message(self, topic: str, key: str, max_num: int = 32, begin_timestamp: int = 0,
                      end_timestamp: int = 2 ** 62) -> QueryMessageResult:
        """Messages of `topic` indexed under `key` (a KEYS token or UNIQ_KEY), newest first."""
        result = QueryMessageResult()
        max_num = min(max_num, self.config.max_msgs_num_batch)
        with self._lock:
            if not self._running:
                return result
            self.index.drain()
            result.index_last_update_timestamp, result.index_last_update_phyoffset = self.index.last_update
            seen = set()
            for phy in self.index.query_offsets(topic, key, max_num * 4, begin_timestamp, end_timestamp):
                if phy in seen or len(result.messages) >= max_num:
                    continue
                seen.add(phy)
                data = self.select_one_message_by_offset(phy)
                if data is None:
                    continue
                try:
                    msg = MessageExt.decode(data)
                    if msg.topic != topic or msg.commit_log_offset != phy or \
                            not begin_timestamp <= msg.store_timestamp <= end_timestamp:
                        continue
                    if key not in (msg.keys or "").split(" ") and \
                            msg.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) != key:
                        continue  # a hash collision or a stale entry
                except ProtocolError:
                    continue
                result.messages.append(data)
                result.phy_offsets.append(phy)
        return result
