"""Requests only this emulator understands, in a private code range (990000-990999) that no RocketMQ release
uses, so a real broker answers them with REQUEST_CODE_NOT_SUPPORTED and nothing else is confused.

| code | name | header | answer |
|---|---|---|---|
| 990001 | EXPIRE_FILES_NOW | `topic` (optional: only reported) | `deletedFiles`; body: the topic's per-queue min/max (TopicStatsTable) when `topic` is given |
| 990002 | DROP_CONNECTIONS | none | `droppedConnections`; then the broker closes every client connection but the one that asked |

EXPIRE_FILES_NOW is retention on demand: the broker closes the commitlog segment being written and deletes
every segment before it, as if they had all passed `fileReservedTime`; each queue's min offset moves to the
first message still stored (for the messages stored so far: to the max offset). Segments are shared by all
topics, so every topic's messages stored so far expire together, as on a real broker.

DROP_CONNECTIONS is a network fault on demand: the broker answers, then closes all its other client connections
(both ports), as a restarted router or a NAT timeout would; clients must reconnect and carry on.
"""

from __future__ import annotations

from enum import IntEnum

from .headers import CommandHeader


class EmulatorRequestCode(IntEnum):
    EXPIRE_FILES_NOW = 990001
    DROP_CONNECTIONS = 990002


class ExpireFilesNowRequestHeader(CommandHeader, kw_only=True):
    topic: str | None = None


class ExpireFilesNowResponseHeader(CommandHeader, kw_only=True):
    deleted_files: int


class DropConnectionsResponseHeader(CommandHeader, kw_only=True):
    dropped_connections: int
