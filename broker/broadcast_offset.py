"""Server-side offsets of broadcasting groups (RocketMQ 5.x `BroadcastOffsetManager`, and the improvement
proposal "enhance server-side offset management").

A broadcasting consumer keeps its offsets in a local file, so a 4.x broker knows nothing of its progress: a
member restarted without that file starts at the end of every queue and skips what arrived meanwhile, a reset
cannot be computed for the group ("consumer group not exist"), and consume progress cannot show the group.
Here the broker keeps, per client and queue, the offset each pull asked for (where that client is), and:

* the group's offset of a queue is the minimum over its live clients; a client is live while connected or for
  `expire_s` (120 s) after its last pull. It is written to the committed-offset table under
  `topic@group@broadcast` (5.x's key), so it survives a broker restart and shows in consume progress;
* a client that starts at the end of a queue (its first pull asks for the queue's max offset: it had no
  offset of its own) resumes instead from the broker's offset for it (`init_offset`): its own last offset when
  the broker saw it before (its client id is stable, as Java's `ip@DEFAULT`), else the group's. A client that
  asks for an offset below the end has offsets of its own and goes on from there;
* a reset of a broadcasting group is kept per queue and applied once to each client at its next pull of the
  queue (`take_reset`), clients offline at reset time included while the reset is younger than `expire_s`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from .consumer_offset import BROADCAST_SUFFIX, ConsumerOffsetManager

#: expired clients remembered for their return (oldest forgotten first)
ARCHIVE_LIMIT = 10_000


@dataclass
class _ClientOffsets:
    last_seen: float
    offsets: dict[int, int] = field(default_factory=dict)  # queue id -> offset


@dataclass
class _PendingReset:
    offset: int
    created: float
    applied: set[str] = field(default_factory=set)  # client ids that got it


class BroadcastOffsetManager:
    def __init__(self, offsets: ConsumerOffsetManager, is_online: Callable[[str, str], bool],
                 expire_s: float = 120.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.offsets = offsets
        self.is_online = is_online  # (group, client id) -> connected now
        self.expire_s = expire_s
        self.clock = clock
        #: (topic, group) -> client id -> offsets
        self.clients: dict[tuple[str, str], dict[str, _ClientOffsets]] = {}
        #: (topic, group, client id) -> the last offsets of an expired client, to resume from when it returns
        self.archive: dict[tuple[str, str, str], _ClientOffsets] = {}
        #: (topic, group, queue id) -> pending reset
        self.resets: dict[tuple[str, str, int], _PendingReset] = {}

    def knows_group(self, group: str) -> bool:
        return any(g == group for _, g in self.clients) or \
            any(k.endswith(f"@{group}{BROADCAST_SUFFIX}") for k in self.offsets.offset_table)

    def group_offset(self, topic: str, group: str, queue_id: int) -> int:
        """The minimum over live clients, else the last one recorded for the group; -1 if none."""
        live = [c.offsets[queue_id] for cid, c in self.live(topic, group) if queue_id in c.offsets]
        if live:
            return min(live)
        return self.offsets.query_offset(group + BROADCAST_SUFFIX, topic, queue_id)

    def live(self, topic: str, group: str) -> list[tuple[str, _ClientOffsets]]:
        now = self.clock()
        return [(cid, c) for cid, c in self.clients.get((topic, group), {}).items()
                if self.is_online(group, cid) or now - c.last_seen < self.expire_s]

    # -- the pull path ------------------------------------------------------------------------------
    def init_offset(self, topic: str, group: str, queue_id: int, client_id: str, request_offset: int,
                    queue_max: int) -> int | None:
        """For a client's first pull of a queue in this session: where it resumes when it starts at the end,
        else None (the pull goes ahead as asked)."""
        live = self.clients.get((topic, group), {}).get(client_id)
        if live is not None and queue_id in live.offsets:
            return None  # not its first pull
        if request_offset < queue_max:
            return None  # it has an offset of its own
        archived = self.archive.get((topic, group, client_id))
        resume = archived.offsets.get(queue_id, -1) if archived is not None else -1
        if resume < 0:
            resume = self.group_offset(topic, group, queue_id)
        return resume if 0 <= resume < request_offset else None

    def update_offset(self, topic: str, group: str, queue_id: int, client_id: str, offset: int) -> None:
        clients = self.clients.setdefault((topic, group), {})
        entry = clients.get(client_id)
        if entry is None:
            entry = clients[client_id] = _ClientOffsets(self.clock())
            self.archive.pop((topic, group, client_id), None)
        entry.last_seen = self.clock()
        entry.offsets[queue_id] = offset

    def has_reset(self, topic: str, group: str, queue_id: int, client_id: str) -> bool:
        pending = self.resets.get((topic, group, queue_id))
        return pending is not None and client_id not in pending.applied

    def take_reset(self, topic: str, group: str, queue_id: int, client_id: str) -> int | None:
        pending = self.resets.get((topic, group, queue_id))
        if pending is None or client_id in pending.applied:
            return None
        pending.applied.add(client_id)
        return pending.offset

    def assign_reset(self, topic: str, group: str, queue_id: int, offset: int) -> None:
        """A reset of the group: every client, and the group's own offset, moves to `offset`."""
        self.resets[(topic, group, queue_id)] = _PendingReset(offset, self.clock())
        for entry in self.clients.get((topic, group), {}).values():
            if queue_id in entry.offsets:
                entry.offsets[queue_id] = offset
        for (t, g, _), entry in self.archive.items():
            if t == topic and g == group and queue_id in entry.offsets:
                entry.offsets[queue_id] = offset
        self.offsets.commit_offset("reset", group + BROADCAST_SUFFIX, topic, queue_id, offset)

    # -- periodic -----------------------------------------------------------------------------------
    def scan(self) -> None:
        """Forget expired clients and resets; record each group's minimum (5.x does this every 5 s)."""
        now = self.clock()
        for key, clients in list(self.clients.items()):
            topic, group = key
            for cid in [cid for cid, c in clients.items()
                        if not self.is_online(group, cid) and now - c.last_seen >= self.expire_s]:
                self.archive[(topic, group, cid)] = clients.pop(cid)
            while len(self.archive) > ARCHIVE_LIMIT:
                del self.archive[next(iter(self.archive))]
            minimum: dict[int, int] = {}
            for entry in clients.values():
                for q, off in entry.offsets.items():
                    minimum[q] = min(off, minimum.get(q, off))
            for q, off in minimum.items():
                if self.offsets.query_offset(group + BROADCAST_SUFFIX, topic, q) != off:
                    self.offsets.commit_offset("broadcast", group + BROADCAST_SUFFIX, topic, q, off)
            if not clients:
                del self.clients[key]
        for key in [k for k, r in self.resets.items() if now - r.created >= self.expire_s]:
            del self.resets[key]
