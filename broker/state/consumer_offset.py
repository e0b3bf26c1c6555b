"""Consumer offsets kept by the broker: `topic@group` -> queue id -> offset, in two tiers (seed 003):

* the durable tier, `config/consumerOffset.db` (`offset_journal.py`): every commit, reset and removal, in commit
  order (each gets the next sequence number), written within the event-loop iteration that made it;
* the batched tier, `config/consumerOffset.json` in RocketMQ's format, written whole by the broker every
  `flushConsumerOffsetInterval` (100 ms) when something changed, and at stop. Its `dataVersion.counter` is
  the sequence number of the last commit it holds.

At start (`load`), the two are compared queue by queue and the newer one *by commit order* wins: a journal
entry with a sequence number above the file's counter was committed after the file was written (the broker
was killed before writing it again). A larger value never wins by being larger: a reset moves an offset back
and must survive a crash too. A file copied from a real broker (no journal yet) is simply loaded.

Three tables, as RocketMQ 5.x's `ConsumerOffsetManager`:

* the committed offsets (4.9.x semantics: a commit overwrites, also backwards);
* pending resets (`assign_reset`): a reset the broker applies at the group's next pull of the queue
  (server-side reset). While one is pending, commits of that queue are ignored: a pull held or in flight when
  the reset was made carries the old offset and must not undo it (upstream issue #4206). Once applied, the
  queue is *fenced*: a commit below the reset or beyond what the broker has handed out since is a stale
  in-memory offset of a client that did not apply the reset itself, and is ignored too, until the client
  commits an offset between the two;
* pull offsets: the next offset each group's last pull of a queue was given (every outcome, not only FOUND),
  for the "ready" and "inflight" figures of consume progress.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from rocketmq_emulator.protocol.admin_bodies import ConsumerOffsetSerializeWrapper, DataVersion
from rocketmq_emulator.protocol.topics import BROADCAST_OFFSET_SUFFIX

from .config_file import load_config_file, write_config_file
from .offset_history import OffsetHistory
from .offset_journal import JournalWriter, OffsetJournal

log = logging.getLogger("rocketmq_emulator.offsets")
TOPIC_GROUP_SEPARATOR = "@"
#: a broadcasting group's offset (the minimum over its clients) is kept under `topic@group@broadcast`, as 5.x
BROADCAST_SUFFIX = BROADCAST_OFFSET_SUFFIX


class ConsumerOffsetManager:
    """`journal=False` keeps the batched tier only (unit tests of the offset rules)."""

    def __init__(self, config_dir: Path, *, journal: bool = True, fsync: bool = False) -> None:
        self.path = config_dir / "consumerOffset.json"
        self.offset_table: dict[str, dict[int, int]] = {}
        self.reset_offset_table: dict[str, dict[int, int]] = {}
        self.pull_offset_table: dict[str, dict[int, int]] = {}
        self._fenced: dict[tuple[str, int], int] = {}  # (key, queue id) -> the reset offset applied
        self._dirty = False
        self.seq = 0  #: sequence number of the last commit, reset or removal
        self.journal = OffsetJournal(config_dir / "consumerOffset.db", fsync=fsync) if journal else None
        self.writer: JournalWriter | None = None
        self.compensated = 0  #: queues whose offset came from the journal at the last load
        #: the dashboard's offset history (changes, ignored commits, resets, corrections)
        self.history = OffsetHistory()

    @staticmethod
    def key(topic: str, group: str) -> str:
        return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"

    # -- the two tiers ------------------------------------------------------------------------------
    def load(self) -> None:
        wrapper = load_config_file(self.path, ConsumerOffsetSerializeWrapper.decode)
        table: dict[str, dict[int, int]] = {}
        file_seq = 0
        if wrapper is not None:
            table = {k: dict(v) for k, v in wrapper.offset_table.items()}
            file_seq = wrapper.data_version.counter if wrapper.data_version is not None else 0
        self.seq = file_seq
        self.compensated = 0
        if self.journal is not None:
            self.journal.open()
            for key, queue, offset, seq in self.journal.read_all():
                self.seq = max(self.seq, seq)
                if seq <= file_seq:
                    continue  # the file already holds this commit or a later one
                self.compensated += 1
                if offset is None:
                    queues = table.get(key)
                    if queues is not None:
                        queues.pop(queue, None)
                        if not queues:
                            del table[key]
                else:
                    table.setdefault(key, {})[queue] = offset
            self.writer = JournalWriter(self.journal)
            if self.compensated:
                log.warning("recovered %d consumer offset(s) from %s committed after %s was last written (the "
                            "broker did not stop cleanly)", self.compensated, self.journal.path.name, self.path.name)
                self._dirty = True
        self.offset_table = table

    def _record(self, key: str, queue_id: int, offset: int | None) -> None:
        """Every write of the offset table comes here and takes the next sequence number: write-through
        (`write_through.py`) holds the answer of any request during which `seq` moved."""
        self.seq += 1
        self._dirty = True
        if self.writer is not None:
            self.writer.record((key, queue_id, offset, self.seq))

    def encode(self) -> bytes:
        return ConsumerOffsetSerializeWrapper(offset_table=self.offset_table,
                                              data_version=DataVersion(counter=self.seq)).encode(pretty=True)

    def persist(self) -> None:
        """Write consumerOffset.json now (blocking; the clean stop's final write)."""
        write_config_file(self.path, self.encode())
        self._dirty = False

    def take_dirty(self) -> tuple[bytes, int] | None:
        """The file content and the sequence number it holds, if anything changed since the last call (for a
        write off the event loop)."""
        if not self._dirty:
            return None
        self._dirty = False
        return self.encode(), self.seq

    def written(self, seq: int) -> None:
        """consumerOffset.json holding everything up to `seq` is on disk: removal markers up to it can go, and
        the journal's WAL is checkpointed (both on the journal's worker thread)."""
        if self.writer is not None and self.writer.failed is None:
            self.writer.after_write(seq)

    async def drain(self) -> None:
        if self.writer is not None:
            await self.writer.drain()

    async def stop(self) -> None:
        """The clean stop: the journal's pending writes, a final consumerOffset.json, the journal closed."""
        await self.drain()
        self.persist()
        self.close()

    def close(self) -> None:
        """After the final persist(): checkpoint and close the journal."""
        if self.writer is not None:
            self.writer.shutdown()
            self.writer = None
        if self.journal is not None:
            self.journal.close()

    def take_master_offsets(self, table: dict[str, dict[int, int]]) -> None:
        """A slave's copy of its master's offsets (broker/slave_sync.py), as 4.9.8's putAll: each `topic@group` of
        the master replaces the slave's whole (a queue committed only on the slave goes); others stay."""
        for key, queues in table.items():
            mine = self.offset_table.get(key, {})
            if mine == queues:
                continue
            for queue_id in [q for q in mine if q not in queues]:
                self._record(key, queue_id, None)
            for queue_id, offset in queues.items():
                if mine.get(queue_id) != offset:
                    self._record(key, queue_id, offset)
            self.offset_table[key] = dict(queues)

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The stored offset, or -1 when the group has none for this queue."""
        queues = self.offset_table.get(f"{topic}@{group}")
        if queues is None:
            return -1
        return queues.get(queue_id, -1)

    def commit_offset(self, client: str, group: str, topic: str, queue_id: int, offset: int) -> bool:
        """Store a commit (UPDATE_CONSUMER_OFFSET, or the commit offset of a pull). False when it was ignored
        because a reset of the queue is pending or fenced (see the module's docstring)."""
        key = f"{topic}@{group}"
        if queue_id in self.reset_offset_table.get(key, ()):
            log.debug("%s: commit %d of %s queue %d ignored: a reset is pending", client, offset, key, queue_id)
            self.history.add(group, topic, queue_id, offset, "ignored", client,
                             self.query_offset(group, topic, queue_id))
            return False
        fence = self._fenced.get((key, queue_id))
        if fence is not None:
            if not fence <= offset <= self.pull_offset_table.get(key, {}).get(queue_id, -1):
                log.debug("%s: commit %d of %s queue %d ignored: not between the reset (%d) and what was pulled "
                          "since", client, offset, key, queue_id, fence)
                self.history.add(group, topic, queue_id, offset, "ignored", client,
                                 self.query_offset(group, topic, queue_id))
                return False
            del self._fenced[(key, queue_id)]
        queues = self.offset_table.setdefault(key, {})
        previous = queues.get(queue_id)
        if previous is not None and offset < previous:
            log.debug("%s: offset of %s queue %d moves back from %d to %d", client, key, queue_id, previous, offset)
        if previous != offset:
            self.history.add(group, topic, queue_id, offset, "commit", client, previous)
        queues[queue_id] = offset
        self._record(key, queue_id, offset)
        return True

    # -- server-side reset --------------------------------------------------------------------------
    def assign_reset(self, *, group: str, topic: str, queue_id: int, offset: int, by: str = "admin") -> None:
        """Record a reset: it is the committed offset now, and the group's next pull of the queue is moved to it."""
        key = f"{topic}@{group}"
        self.history.add(group, topic, queue_id, offset, "reset", by, self.query_offset(group, topic, queue_id))
        self.reset_offset_table.setdefault(key, {})[queue_id] = offset
        self.offset_table.setdefault(key, {})[queue_id] = offset
        self.pull_offset_table.setdefault(key, {})[queue_id] = offset
        self._record(key, queue_id, offset)

    def pending_reset(self, *, group: str, topic: str, queue_id: int, client_id: str = "") -> int | None:
        """The pending reset of the queue (the same for every client of a clustering group), or None."""
        return self.reset_offset_table.get(f"{topic}@{group}", {}).get(queue_id)

    def take_reset(self, *, group: str, topic: str, queue_id: int, client_id: str = "") -> int | None:
        """The pending reset of the queue, if any, which is then applied: the queue stays fenced."""
        key = f"{topic}@{group}"
        pending = self.reset_offset_table.get(key)
        if not pending or queue_id not in pending:
            return None
        offset = pending.pop(queue_id)
        if not pending:
            del self.reset_offset_table[key]
        self._fenced[(key, queue_id)] = offset
        return offset

    # -- pull offsets (ready / inflight) ------------------------------------------------------------
    def commit_pull_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.pull_offset_table.setdefault(f"{topic}@{group}", {})[queue_id] = offset

    def query_pull_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The next offset the group's last pull of the queue was given, never below the committed offset
        (a commit or a reset can run ahead of the last pull); -1 when neither is known."""
        key = f"{topic}@{group}"
        return max(self.pull_offset_table.get(key, {}).get(queue_id, -1),
                   self.offset_table.get(key, {}).get(queue_id, -1))

    def query_offsets_of_group(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.offset_table.get(f"{topic}@{group}", {}))

    def topics_of_group(self, group: str) -> set[str]:
        suffix = f"@{group}"
        return {k[: -len(suffix)] for k in self.offset_table if k.endswith(suffix)}

    def groups_of_topic(self, topic: str) -> set[str]:
        prefix = f"{topic}@"
        return {k[len(prefix):].removesuffix(BROADCAST_SUFFIX) for k in self.offset_table if k.startswith(prefix)}

    def remove_group(self, group: str) -> None:
        self._remove(lambda k: k.endswith(f"@{group}") or k.endswith(f"@{group}{BROADCAST_SUFFIX}"))

    def remove_topic(self, topic: str) -> None:
        self._remove(lambda k: k.startswith(f"{topic}@"))

    def _remove(self, match: Callable[[str], bool]) -> None:
        for key in [k for k in self.offset_table if match(k)]:
            for queue_id in self.offset_table[key]:
                self._record(key, queue_id, None)
        for table in (self.offset_table, self.reset_offset_table, self.pull_offset_table):
            for key in [k for k in table if match(k)]:
                del table[key]
        self._fenced = {f: o for f, o in self._fenced.items() if not match(f[0])}
        self._dirty = True
