"""Status enums and small result objects the store returns (it never raises for an operation's outcome).

* ``PutMessageStatus`` / ``PutMessageResult``: one object per put, whatever it stored (one message, a batch, or a
  run of single messages read together): every record's commitlog and queue offset. RocketMQ nests an
  ``AppendMessageResult`` inside; here its fields are flattened into ``PutMessageResult`` (``append_message_result``
  returns the object itself) so a put allocates one object. Offset msgIds are built lazily.
* ``GetMessageStatus`` / ``GetMessageResult``: records are ``bytes`` copies of the stored records, byte-identical
  to the commitlog; ``body()`` concatenates them into a PULL body.
* ``QueryMessageResult``: QUERY_MESSAGE by key.
"""

from __future__ import annotations

import enum

from rocketmq_emulator.native import lane

_msg_ids = lane.msg_ids if lane is not None else None


class PutMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
    #: the emulator's own: a run of single sends that does not fit the current commitlog segment is not written;
    #: the caller puts its messages one by one, so that each lands where a put of it alone puts it (the native
    #: lane and the Python path group sends into runs differently; their files must be byte-equal)
    RUN_CROSSES_SEGMENT = "RUN_CROSSES_SEGMENT"


class GetMessageStatus(enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


PUT_OK = PutMessageStatus.PUT_OK
#: the statuses of a put that wrote its records (a flush timeout: written, not yet known to be on disk)
STORED = frozenset({PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT})


class PutMessageResult:
    """Outcome of a put (``put_message``, ``put_messages``, ``put_message_run``).

    ``wrote_offset``: commitlog offset of the (first) record; ``wrote_bytes``: total bytes appended;
    ``logics_offset``: queue offset of the (first) message; ``msg_num``: records written;
    ``store_timestamp``: store time (one value for the whole put); ``phy_offsets`` / ``queue_offsets``: every
    record's commitlog / queue offset (None when nothing was written).
    """

    __slots__ = ("status", "wrote_offset", "wrote_bytes", "store_timestamp", "logics_offset", "msg_num",
                 "phy_offsets", "queue_offsets", "_host")

    def __init__(self, status: PutMessageStatus, wrote_offset: int = -1, wrote_bytes: int = 0,
                 store_timestamp: int = 0, logics_offset: int = 0, msg_num: int = 0,
                 phy_offsets: list[int] | None = None, queue_offsets: list[int] | None = None,
                 host: bytes = b"") -> None:
        self.status = status
        self.wrote_offset = wrote_offset
        self.wrote_bytes = wrote_bytes
        self.store_timestamp = store_timestamp
        self.logics_offset = logics_offset
        self.msg_num = msg_num
        self.phy_offsets = phy_offsets
        self.queue_offsets = queue_offsets
        self._host = host  # packed store host + port, the msgId prefix

    def is_ok(self) -> bool:
        return self.status is PUT_OK

    @property
    def append_message_result(self) -> "PutMessageResult":
        return self

    @property
    def msg_ids(self) -> list[str]:
        """Offset message ids (§7.7) of every record written, in order."""
        if self.phy_offsets is None:
            return []
        host_hex = self._host.hex().upper()
        return [_MSG_ID % (host_hex, offset) for offset in self.phy_offsets]

    @property
    def msg_id(self) -> str:
        """A send response's ``msgId`` for this put as one request: the offset ids of all its records,
        comma-separated for a batch."""
        if self.wrote_offset < 0:
            return ""
        if self.msg_num == 1:
            return offset_msg_id(self._host.hex().upper(), self.wrote_offset)
        if _msg_ids is not None and type(self.phy_offsets) is list:
            joined: str | None = _msg_ids(self._host.hex().upper(), self.phy_offsets)
            if joined is not None:
                return joined
        return ",".join(self.msg_ids)

    def __repr__(self) -> str:
        return (f"<PutMessageResult {self.status.name} phy={self.wrote_offset} queueOffset={self.logics_offset} "
                f"n={self.msg_num} bytes={self.wrote_bytes} ts={self.store_timestamp}>")


class GetMessageResult:
    """Outcome of ``get_message`` (§9.3): status, records, offsets and how many units were scanned."""

    __slots__ = ("status", "next_begin_offset", "min_offset", "max_offset", "messages", "queue_offsets",
                 "phy_offsets", "buffer_total_size", "units_scanned", "suggest_pulling_from_slave", "joined", "count")

    def __init__(self, status: GetMessageStatus, next_begin_offset: int, min_offset: int, max_offset: int) -> None:
        self.status = status
        self.next_begin_offset = next_begin_offset
        self.min_offset = min_offset
        self.max_offset = max_offset
        self.messages: list[bytes] = []
        self.queue_offsets: list[int] = []
        self.phy_offsets: list[int] = []
        self.buffer_total_size = 0
        self.units_scanned = 0
        self.suggest_pulling_from_slave = False
        #: a read asked `joined` (a pull's answer) that the native lane made: the records back to back, `count` of
        #: them, and `messages`, `queue_offsets` and `phy_offsets` left empty
        self.joined: bytes | None = None
        self.count = 0

    @property
    def message_count(self) -> int:
        return self.count if self.joined is not None else len(self.messages)

    def body(self) -> bytes:
        """The PULL response body: the records back to back."""
        joined = self.joined
        return joined if joined is not None else b"".join(self.messages)

    def __repr__(self) -> str:
        return (f"<GetMessageResult {self.status.name} n={self.message_count} next={self.next_begin_offset} "
                f"min={self.min_offset} max={self.max_offset} scanned={self.units_scanned}>")


class QueryMessageResult:
    """Outcome of ``query_message``: the matching records plus the index's last update (QUERY_MESSAGE header)."""

    __slots__ = ("messages", "phy_offsets", "index_last_update_timestamp", "index_last_update_phyoffset")

    def __init__(self) -> None:
        self.messages: list[bytes] = []
        self.phy_offsets: list[int] = []
        self.index_last_update_timestamp = 0
        self.index_last_update_phyoffset = 0

    @property
    def buffer_total_size(self) -> int:
        return sum(len(m) for m in self.messages)

    def body(self) -> bytes:
        return b"".join(self.messages)

    def __repr__(self) -> str:
        return f"<QueryMessageResult n={len(self.messages)} offsets={self.phy_offsets}>"


_MSG_ID = "%s%016X"


def offset_msg_id(host_hex: str, offset: int) -> str:
    """An offset message id (§7.7) from the upper-case hex of store host + port and a commitlog offset."""
    return _MSG_ID % (host_hex, offset)


def host_prefix(packed_host: bytes, port: int) -> bytes:
    """Store host + port, the first 8 (IPv4) or 20 (IPv6) bytes of an offset msgId."""
    return packed_host + port.to_bytes(4, "big", signed=True)


class ReplicaAppendStatus(enum.Enum):
    """Outcome of ``MessageStore.append_replicated`` (a slave storing what its master sent)."""
    #: stored (a record cut at the end of the transfer waits, unwritten to the log, for the rest)
    APPENDED = "APPENDED"
    #: the transfer does not start where the slave's log ends (4.9.8: "master pushed offset not equal the max phy
    #: offset in slave"): nothing written
    OFFSET_MISMATCH = "OFFSET_MISMATCH"
    #: whole bytes that are no record (bad magic, size or fields), or a transfer crossing a segment's end: the records
    #: before them are kept, the rest dropped
    BAD_DATA = "BAD_DATA"
    #: the next segment could not be created (disk full)
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    #: the store is stopped, not a SLAVE, or its disk has no room: nothing written
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"


class ReplicaAppendResult:
    """``status``; ``max_offset``: where the slave's copy now ends (the commitlog's max offset plus the bytes of a
    record still waiting for its rest: what the slave reports to its master); ``dispatched``: records made
    readable by this append; ``arrived``: (topic, queue id) -> the queue's new max offset, for every consume queue
    that got units (to wake held pulls)."""

    __slots__ = ("status", "max_offset", "dispatched", "arrived")

    def __init__(self, status: ReplicaAppendStatus, max_offset: int, dispatched: int = 0,
                 arrived: dict[tuple[str, int], int] | None = None) -> None:
        self.status = status
        self.max_offset = max_offset
        self.dispatched = dispatched
        self.arrived: dict[tuple[str, int], int] = arrived if arrived is not None else {}

    def is_ok(self) -> bool:
        return self.status is ReplicaAppendStatus.APPENDED

    def __repr__(self) -> str:
        return f"<ReplicaAppendResult {self.status.name} max={self.max_offset} dispatched={self.dispatched}>"
