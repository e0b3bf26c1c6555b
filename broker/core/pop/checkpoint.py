"""Pop checkpoints: what one pop delivered from one queue, which of it is acked, and until when the rest stays
invisible; and the receipt handle that names one message of a checkpoint.

Checkpoints are kept in `config/popCheckpoint.db` (SQLite in WAL mode, as the offsets' durable tier): a row is
written before the pop is answered and removed when every message is acked or revived, so a broker killed with
un-acked messages delivers them again after their invisible time. (Upstream writes checkpoints and acks as
messages of a revive topic in the commitlog; a table holding only the live ones needs no replay or compaction.)
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ...state.config_file import open_database

log = logging.getLogger("rocketmq_emulator.pop")


@dataclass(slots=True, eq=False)
class PopCheckpoint:
    ck_id: int
    group: str
    #: the topic read: the real one, or the group's pop retry topic
    topic: str
    queue_id: int
    offsets: list[int]
    pop_time: int  # ms since the epoch
    invisible_time: int  # ms
    #: an orderly (FIFO) pop: the queue's offset moves only when acked; no revive, the queue is blocked meanwhile
    order: bool = False
    acked: set[int] = field(default_factory=set)
    #: delivery attempt of each offset in this pop (orderly pops count redeliveries themselves)
    attempts: dict[int, int] = field(default_factory=dict)
    #: orderly pops: where the read ended (the group's offset once every message is acked)
    end_offset: int = -1

    @property
    def deadline(self) -> int:
        return self.pop_time + self.invisible_time

    def pending(self) -> list[int]:
        return [o for o in self.offsets if o not in self.acked]


class ReceiptHandle(NamedTuple):
    """Upstream's extraInfo layout: `ckId popTime invisibleTime reviveQid retry brokerName queueId offset`."""

    ck_id: int
    pop_time: int
    invisible_time: int
    retry: bool
    broker_name: str
    queue_id: int
    offset: int

    def encode(self) -> str:
        return (f"{self.ck_id} {self.pop_time} {self.invisible_time} 0 {int(self.retry)} {self.broker_name} "
                f"{self.queue_id} {self.offset}")

    @classmethod
    def parse(cls, text: str) -> "ReceiptHandle | None":
        parts = text.split(" ") if isinstance(text, str) else []
        if len(parts) != 8:
            return None
        try:
            return cls(int(parts[0]), int(parts[1]), int(parts[2]), parts[4] == "1", parts[5], int(parts[6]),
                       int(parts[7]))
        except ValueError:
            return None


class CheckpointStore:
    """The live checkpoints on disk. Every write is one autocommit statement: it survives a killed process."""

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self.fsync = fsync
        self._db: sqlite3.Connection | None = None

    def open(self) -> list[PopCheckpoint]:
        """Open (creating) the table; the checkpoints a previous run left."""
        db = open_database(self.path, self.fsync)
        db.execute("CREATE TABLE IF NOT EXISTS checkpoints (id INTEGER PRIMARY KEY, grp TEXT NOT NULL, "
                   "topic TEXT NOT NULL, queue INTEGER NOT NULL, offsets TEXT NOT NULL, pop_time INTEGER NOT NULL, "
                   "invisible INTEGER NOT NULL, ord INTEGER NOT NULL, acked TEXT NOT NULL, attempts TEXT NOT NULL, "
                   "end_offset INTEGER NOT NULL)")
        self._db = db
        out = []
        for row in db.execute("SELECT id, grp, topic, queue, offsets, pop_time, invisible, ord, acked, attempts, end_offset "
                              "FROM checkpoints ORDER BY id"):
            try:
                out.append(PopCheckpoint(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], row[6],
                                         bool(row[7]), set(json.loads(row[8])),
                                         {int(k): v for k, v in json.loads(row[9]).items()}, row[10]))
            except (ValueError, TypeError) as exc:
                log.warning("pop checkpoint %s unreadable, dropped: %s", row[0], exc)
        return out

    def insert(self, ck: PopCheckpoint) -> None:
        assert self._db is not None
        self._db.execute("INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (ck.ck_id, ck.group, ck.topic, ck.queue_id, json.dumps(ck.offsets), ck.pop_time,
                          ck.invisible_time, int(ck.order), json.dumps(sorted(ck.acked)),
                          json.dumps(ck.attempts), ck.end_offset))

    def acked(self, ck: PopCheckpoint) -> None:
        assert self._db is not None
        self._db.execute("UPDATE checkpoints SET acked = ? WHERE id = ?", (json.dumps(sorted(ck.acked)), ck.ck_id))

    def delete(self, ck_id: int) -> None:
        assert self._db is not None
        self._db.execute("DELETE FROM checkpoints WHERE id = ?", (ck_id,))

    @property
    def is_open(self) -> bool:
        return self._db is not None

    def max_id(self) -> int:
        assert self._db is not None
        row = self._db.execute("SELECT MAX(id) FROM checkpoints").fetchone()
        return int(row[0] or 0)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
