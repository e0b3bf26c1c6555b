"""Consumer offsets stored by the broker (reference §9.7, §8.8): `topic@group` -> queue id -> offset,
persisted to `config/consumerOffset.json` in RocketMQ's format every few seconds and at stop.

Semantics here are the plain 4.9.x ones (unconditional overwrite on commit); the seeds' offset rules build on
this table."""

from __future__ import annotations

import logging
from pathlib import Path

from rocketmq_emulator.protocol.admin_bodies import ConsumerOffsetSerializeWrapper

from .config_file import load_config_file, write_config_file

log = logging.getLogger("rocketmq_emulator.offsets")
TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetManager:
    def __init__(self, config_dir: Path) -> None:
        self.path = config_dir / "consumerOffset.json"
        self.offset_table: dict[str, dict[int, int]] = {}
        self._dirty = False

    @staticmethod
    def key(topic: str, group: str) -> str:
        return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"

    def load(self) -> None:
        wrapper = load_config_file(self.path, ConsumerOffsetSerializeWrapper.decode)
        if wrapper is not None:
            self.offset_table = {k: dict(v) for k, v in wrapper.offset_table.items()}

    def encode(self) -> bytes:
        return ConsumerOffsetSerializeWrapper(offset_table=self.offset_table).encode(pretty=True)

    def persist(self) -> None:
        write_config_file(self.path, self.encode())
        self._dirty = False

    def take_dirty(self) -> bytes | None:
        """The file content if anything changed since the last call (for a write off the event loop)."""
        if not self._dirty:
            return None
        self._dirty = False
        return self.encode()

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The stored offset, or -1 when the group has none for this queue."""
        queues = self.offset_table.get(f"{topic}@{group}")
        if queues is None:
            return -1
        return queues.get(queue_id, -1)

    def commit_offset(self, client: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        queues = self.offset_table.setdefault(f"{topic}@{group}", {})
        previous = queues.get(queue_id)
        if previous is not None and offset < previous:
            log.debug("%s: offset of %s@%s queue %d moves back from %d to %d", client, topic, group, queue_id,
                      previous, offset)
        queues[queue_id] = offset
        self._dirty = True

    def query_offsets_of_group(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.offset_table.get(f"{topic}@{group}", {}))

    def topics_of_group(self, group: str) -> set[str]:
        suffix = f"@{group}"
        return {k[: -len(suffix)] for k in self.offset_table if k.endswith(suffix)}

    def groups_of_topic(self, topic: str) -> set[str]:
        prefix = f"{topic}@"
        return {k[len(prefix):] for k in self.offset_table if k.startswith(prefix)}

    def remove_group(self, group: str) -> None:
        for key in [k for k in self.offset_table if k.endswith(f"@{group}")]:
            del self.offset_table[key]
        self._dirty = True

    def remove_topic(self, topic: str) -> None:
        for key in [k for k in self.offset_table if k.startswith(f"{topic}@")]:
            del self.offset_table[key]
        self._dirty = True
