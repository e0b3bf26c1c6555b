"""Consumer offset stores (seed 004, reference §10.6): the in-memory offset of each queue plus where it is
kept durably. `RemoteBrokerOffsetStore` (clustering) keeps it on the queue's broker; `LocalFileOffsetStore`
(broadcasting) in `<store dir>/.rocketmq_offsets/<clientId>/<group>/offsets.json`, in the Java client's format.

Operations, as in Java's `OffsetStore`: `load`, `update_offset` (increase-only or not), `read_offset`
(`ReadOffsetType`), `persist_all`, `persist`, `remove_offset`, `clone_offset_table`,
`update_consume_offset_to_broker`. Read results: the offset (>= 0), -1 "no offset stored", -2 "could not
ask" (broker unreachable or timed out). `stored_offset` reads the durable offset without touching memory and
raises what goes wrong (`PushConsumer.committed`).

Unlike Java 4.9.x, `LocalFileOffsetStore.persist(mq)` writes the file (seed 000 fix 2), merging with the
entries already in it (as 4.9.8 does), so a reset or an offset correction is durable at once.
"""

from __future__ import annotations

import asyncio
import enum
import json
import logging
import os
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from rocketmq_emulator.protocol.admin_bodies import OffsetSerializeWrapper
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.errors import ProtocolError

from .api import committed_offset
from .errors import BrokerResponseError, ClientError

if TYPE_CHECKING:
    from .instance import ClientInstance

log = logging.getLogger("rocketmq_emulator.client.offsets")

#: the C++ client's broadcasting offsets file, beside Java's offsets.json
CPP_OFFSETS_FILE = "offsets.Json"
OFFSETS_DIR_NAME = ".rocketmq_offsets"


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = 0
    READ_FROM_STORE = 1
    MEMORY_FIRST_THEN_STORE = 2


class OffsetStore(ABC):
    def __init__(self, group: str) -> None:
        self.group = group
        self.offset_table: dict[MessageQueue, int] = {}

    async def load(self) -> None:
        """Read durable offsets into memory (only the local store has any)."""

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        table = self.offset_table
        old = table.get(mq)
        if old is None or not increase_only or offset > old:
            table[mq] = offset

    async def read_offset(self, mq: MessageQueue, kind: ReadOffsetType) -> int:
        if kind is not ReadOffsetType.READ_FROM_STORE:
            offset = self.offset_table.get(mq)
            if offset is not None:
                return offset
            if kind is ReadOffsetType.READ_FROM_MEMORY:
                return -1
        offset = await self._read_from_store(mq)
        if offset >= 0:
            self.update_offset(mq, offset, False)
        return offset

    @abstractmethod
    async def _read_from_store(self, mq: MessageQueue) -> int: ...

    async def stored_offset(self, mq: MessageQueue) -> int:
        """The offset the durable store holds for `mq` (-1: none), memory left alone."""
        return await self._read_from_store(mq)

    @abstractmethod
    async def persist_all(self, mqs: Iterable[MessageQueue], *, wait: bool = False) -> None:
        """Make the offsets of `mqs` durable; `wait`: until the broker confirmed (remote store)."""

    @abstractmethod
    async def persist(self, mq: MessageQueue) -> None: ...

    def remove_offset(self, mq: MessageQueue) -> None:
        self.offset_table.pop(mq, None)

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]:
        return {mq: o for mq, o in self.offset_table.items() if topic is None or mq.topic == topic}

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool = True) -> None:
        """Send an offset to the queue's broker (remote store only; the local store ignores it)."""


class RemoteBrokerOffsetStore(OffsetStore):
    """Clustering: the broker of each queue keeps the group's offset (its consumerOffset.json)."""

    def __init__(self, instance: ClientInstance, group: str) -> None:
        super().__init__(group)
        self.instance = instance

    async def stored_offset(self, mq: MessageQueue) -> int:
        """The broker's offset of the group (-1: none); other answers and lost connections are raised."""
        addr = await self.instance.find_admin(mq.broker_name, mq.topic)
        return await committed_offset(self.instance.api, addr, self.group, mq)

    async def _read_from_store(self, mq: MessageQueue) -> int:
        try:
            return await self.stored_offset(mq)
        except BrokerResponseError:
            return -1  # 4.9.x: any error code means "no offset" (QUERY_NOT_FOUND or worse)
        except ClientError as exc:
            log.debug("%s: cannot read the offset of %s: %s", self.group, mq, exc)
            return -2

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool = True) -> None:
        addr = await self.instance.find_admin(mq.broker_name, mq.topic)
        await self.instance.api.update_consumer_offset(addr, self.group, mq, offset, oneway=oneway)

    async def persist_all(self, mqs: Iterable[MessageQueue], *, wait: bool = False) -> None:
        """One UPDATE_CONSUMER_OFFSET per owned queue with a known offset (oneway unless `wait`); entries of
        queues no longer owned are dropped from memory."""
        owned = set(mqs)
        for mq in [m for m in self.offset_table if m not in owned]:
            del self.offset_table[mq]
        results = await asyncio.gather(*(self.update_consume_offset_to_broker(mq, offset, oneway=not wait)
                                         for mq, offset in list(self.offset_table.items())), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def persist(self, mq: MessageQueue) -> None:
        offset = self.offset_table.get(mq)
        if offset is not None:
            await self.update_consume_offset_to_broker(mq, offset, oneway=True)


_CPP_ENTRY = re.compile(rb"(\d+) (?=\{)")


def read_cpp_offsets(path: Path) -> dict[MessageQueue, int]:
    """The C++ client's broadcasting offsets file (`offsets.Json` in the same directory as Java's
    `offsets.json`): a boost text archive of a map from the MessageQueue as JSON text to the offset, e.g.
    `22 serialization::archive 12 0 0 4 0 0 0 71 {"brokerName" : "broker-a", ...} 0 71 {...} 1`: each key is
    its length, a space and that many bytes of JSON; its offset is the number after it. ValueError when the file
    is not such an archive."""
    data = path.read_bytes()
    if b"serialization::archive" not in data[:64]:
        raise ValueError(f"{path} is not a boost serialization archive")
    out: dict[MessageQueue, int] = {}
    pos = 0
    while (m := _CPP_ENTRY.search(data, pos)) is not None:
        start = m.end()
        end = start + int(m.group(1))
        try:
            key = json.loads(data[start:end])
            mq = MessageQueue(str(key["topic"]), str(key["brokerName"]), int(key["queueId"]))
            value = data[end:].split(None, 1)[0]
            out[mq] = int(value)
        except (ValueError, KeyError, TypeError, IndexError):
            pos = start
            continue
        pos = end
    return out


class LocalFileOffsetStore(OffsetStore):
    """Broadcasting: offsets.json next to its .bak, written through a temporary file and an atomic rename. With
    neither, the C++ client's offsets.Json of the same client id and group is read (a broadcasting consumer
    moved from the C++ client keeps its position); this store then writes offsets.json."""

    def __init__(self, store_dir: str | os.PathLike[str] | None, client_id: str, group: str) -> None:
        super().__init__(group)
        base = Path(store_dir) if store_dir is not None else Path.home()
        self.path = base / OFFSETS_DIR_NAME / client_id / group / "offsets.json"

    async def load(self) -> None:
        self.offset_table.update(self.read_file())

    def read_file(self) -> dict[MessageQueue, int]:
        """The file's table; an empty, missing or unparsable file falls back to offsets.json.bak."""
        for path in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                text = path.read_bytes()
            except OSError:
                continue
            if not text.strip():
                continue
            try:
                return dict(OffsetSerializeWrapper.decode(text).offset_table)
            except ProtocolError as exc:
                log.warning("%s is not a valid offsets file (%s); trying its backup", path, exc)
        cpp = self.path.with_name(CPP_OFFSETS_FILE)
        if cpp.exists():
            try:
                return read_cpp_offsets(cpp)
            except (OSError, ValueError) as exc:
                log.warning("%s (the C++ client's offsets) cannot be read: %s", cpp, exc)
        return {}

    async def _read_from_store(self, mq: MessageQueue) -> int:
        return self.read_file().get(mq, -1)

    def write_file(self, table: dict[MessageQueue, int]) -> None:
        """Java's `MixAll.string2File`: new content to .tmp, the current file to .bak, then rename."""
        data = OffsetSerializeWrapper(offset_table=dict(sorted(table.items()))).encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            old = self.path.read_bytes()
        except OSError:
            old = None
        if old:
            bak = self.path.with_name(self.path.name + ".bak")
            bak.write_bytes(old)
        os.replace(tmp, self.path)

    async def persist_all(self, mqs: Iterable[MessageQueue], *, wait: bool = False) -> None:
        """Rewrite the file with the in-memory offsets of `mqs`, keeping the file's other entries."""
        entries = {mq: self.offset_table[mq] for mq in mqs if mq in self.offset_table}
        if not entries:
            return
        table = self.read_file()
        if all(table.get(mq) == o for mq, o in entries.items()):
            return
        table.update(entries)
        self.write_file(table)

    async def persist(self, mq: MessageQueue) -> None:
        await self.persist_all([mq])
