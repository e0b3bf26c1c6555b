"""Requests only this emulator understands, in a private code range (990000-990999) that no RocketMQ release
uses, so a real broker answers them with REQUEST_CODE_NOT_SUPPORTED and nothing else is confused.

| code | name | header | answer |
|---|---|---|---|
| 990001 | EXPIRE_FILES_NOW | `topic` (optional: only reported) | `deletedFiles`; body: the topic's per-queue min/max (TopicStatsTable) when `topic` is given |
| 990002 | DROP_CONNECTIONS | none | `droppedConnections`; then the broker closes every client connection but the one that asked |
| 990003 | STOP_BROKER (to the name server) | `brokerName`, `routeDelayMillis` (default 0) | SUCCESS once the broker has stopped |
| 990004 | START_BROKER (to the name server) | `brokerName` | SUCCESS once the broker accepts connections again |

EXPIRE_FILES_NOW is retention on demand: the broker closes the commitlog segment being written and deletes
every segment before it, as if they had all passed `fileReservedTime`; each queue's min offset moves to the
first message still stored (for the messages stored so far: to the max offset). Segments are shared by all
topics, so every topic's messages stored so far expire together, as on a real broker.

DROP_CONNECTIONS is a network fault on demand: the broker answers, then closes all its other client connections
(both ports), as a restarted router or a NAT timeout would; clients must reconnect and carry on.

STOP_BROKER / START_BROKER take one of the process's brokers away and bring it back (`serve --brokers N`): a
stop is a clean broker shutdown (connections closed, offsets persisted, store closed); the name server drops
the broker's routes at once, or `routeDelayMillis` later, as a real one does when the broker's heartbeats stop;
a start opens the same store on the same ports and registers the routes again. An unknown broker name, or one
already in the state asked for, is answered SYSTEM_ERROR with the reason.
"""

from __future__ import annotations

from enum import IntEnum

from .headers import CommandHeader


class EmulatorRequestCode(IntEnum):
    EXPIRE_FILES_NOW = 990001
    DROP_CONNECTIONS = 990002
    STOP_BROKER = 990003
    START_BROKER = 990004
    ADVANCE_TIME = 990005
    KILL_BROKER = 990006
    PAUSE_BROKER = 990007


class ExpireFilesNowRequestHeader(CommandHeader, kw_only=True):
    topic: str | None = None


class ExpireFilesNowResponseHeader(CommandHeader, kw_only=True):
    deleted_files: int


class DropConnectionsResponseHeader(CommandHeader, kw_only=True):
    dropped_connections: int


class AdvanceTimeRequestHeader(CommandHeader, kw_only=True):
    """ADVANCE_TIME: every broker-side timer behaves as if `millis` more had passed (README "Testing time-based
    behaviour"); the answer's remark says what happened."""

    millis: int


class AdvanceTimeResponseHeader(CommandHeader, kw_only=True):
    offset_millis: int
    delivered: int = 0
    revived: int = 0
    pulls_answered: int = 0
    files_deleted: int = 0


class BrokerLifecycleRequestHeader(CommandHeader, kw_only=True):
    """STOP_BROKER, START_BROKER, KILL_BROKER and PAUSE_BROKER: `broker_name` is `broker-a` (a master) or
    `broker-a/1` (its slave of brokerId 1)."""
    broker_name: str
    route_delay_millis: int = 0
    #: PAUSE_BROKER: true pauses, false resumes
    paused: bool = True
