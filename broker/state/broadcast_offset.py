"""Server-side offsets of broadcasting groups (RocketMQ 5.x `BroadcastOffsetManager`, and the improvement
proposal "enhance server-side offset management").

A broadcasting consumer keeps its offsets in a local file, so a 4.x broker knows nothing of its progress: a
member restarted without that file starts at the end of every queue and skips what arrived meanwhile, a reset
cannot be computed for the group ("consumer group not exist"), and consume progress cannot show the group.
Here the broker keeps, per client and queue, the offset each pull asked for (where that client is), and:

* the group's offset of a queue is the minimum over its live clients; a client is live while connected or for
  `expire_s` (120 s) after its last pull. It is written to the committed-offset table under
  `topic@group@broadcast` (5.x's key) every `SCAN_INTERVAL_S` and once more at a clean stop (`shutdown`, as
  5.x's), so it survives a broker restart and shows in consume progress;
* a client's *first pull of a queue in a session* (a session: one connection; a client restarted, or
  reconnected, pulls on a new one) that starts at the end of the queue (it asks for the queue's max offset: it
  had no offset of its own) resumes instead from the broker's offset for it (`init_offset`): its own last
  position when the broker saw it before, live or expired (its client id is stable, as Java's `ip@DEFAULT`),
  else the group's. It is left alone when it asks exactly for the offset its last pull was given (it goes on
  where it was), or for an offset below the end (it has offsets of its own);
* a reset of a broadcasting group is kept per queue and applied once to each client at its next pull of the
  queue (`take_reset`), clients offline at reset time included while the reset is younger than `expire_s`.

The clients' own positions live in memory only: after a broker restart the broker knows the group's offset.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .consumer_offset import BROADCAST_SUFFIX, ConsumerOffsetManager

#: expired clients remembered for their return (oldest forgotten first)
ARCHIVE_LIMIT = 10_000
#: how often the group's minimum is recorded (5.x: every 5 s)
SCAN_INTERVAL_S = 5.0
#: the connection attribute holding its session number
SESSION_ATTRIBUTE = "broadcast_session"
_sessions = itertools.count(1)


def session_of(attributes: dict[str, Any]) -> int:
    """The session number of a connection (its `attributes`), given at its first broadcasting pull."""
    session = attributes.get(SESSION_ATTRIBUTE)
    if session is None:
        session = attributes[SESSION_ATTRIBUTE] = next(_sessions)
    return session


@dataclass
class _ClientOffsets:
    last_seen: float
    offsets: dict[int, int] = field(default_factory=dict)  # queue id -> offset its last pull asked for
    handed: dict[int, int] = field(default_factory=dict)  # queue id -> next offset its last pull was given
    session: int = 0  # the session of its last pull
    pulled: set[int] = field(default_factory=set)  # queues it pulled in that session


@dataclass
class _PendingReset:
    offset: int
    created: float
    applied: set[str] = field(default_factory=set)  # client ids that got it


class BroadcastOffsetManager:
    scan_interval_s = SCAN_INTERVAL_S

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

    def _known(self, topic: str, group: str, client_id: str) -> _ClientOffsets | None:
        entry = self.clients.get((topic, group), {}).get(client_id)
        return entry if entry is not None else self.archive.get((topic, group, client_id))

    # -- the pull path ------------------------------------------------------------------------------
    def init_offset(self, topic: str, group: str, queue_id: int, client_id: str, session: int,
                    request_offset: int, queue_max: int) -> int | None:
        """For a client's first pull of a queue in a session: where it resumes when it starts at the end, else
        None (the pull goes ahead as asked)."""
        known = self._known(topic, group, client_id)
        if known is not None and known.session == session and queue_id in known.pulled:
            return None  # not its first pull
        if request_offset < queue_max:
            return None  # it has an offset of its own
        if known is not None and known.handed.get(queue_id) == request_offset:
            return None  # it goes on where its last pull ended
        resume = known.offsets.get(queue_id, -1) if known is not None else -1
        if resume < 0:
            resume = self.group_offset(topic, group, queue_id)
        return resume if 0 <= resume < request_offset else None

    def update_offset(self, topic: str, group: str, queue_id: int, client_id: str, session: int, offset: int,
                      handed: int) -> None:
        """A pull of the client asked for `offset` (or was moved there) and was given `handed` as its next."""
        clients = self.clients.setdefault((topic, group), {})
        entry = clients.get(client_id)
        if entry is None:  # new, or back: an expired client keeps its positions until it pulls each queue
            entry = self.archive.pop((topic, group, client_id), None) or _ClientOffsets(self.clock())
            clients[client_id] = entry
        if entry.session != session:
            entry.session = session
            entry.pulled = set()
        entry.pulled.add(queue_id)
        entry.last_seen = self.clock()
        entry.offsets[queue_id] = offset
        entry.handed[queue_id] = handed

    def pending_reset(self, *, group: str, topic: str, queue_id: int, client_id: str) -> int | None:
        pending = self.resets.get((topic, group, queue_id))
        return None if pending is None or client_id in pending.applied else pending.offset

    def take_reset(self, *, group: str, topic: str, queue_id: int, client_id: str) -> int | None:
        pending = self.resets.get((topic, group, queue_id))
        if pending is None or client_id in pending.applied:
            return None
        pending.applied.add(client_id)
        return pending.offset

    def assign_reset(self, *, group: str, topic: str, queue_id: int, offset: int, by: str = "admin") -> None:
        """A reset of the group: every client, and the group's own offset, moves to `offset` (`by` is there for
        the common interface: the group's offset history names the reset itself)."""
        self.resets[(topic, group, queue_id)] = _PendingReset(offset, self.clock())
        entries = list(self.clients.get((topic, group), {}).values())
        entries += [e for (t, g, _), e in self.archive.items() if t == topic and g == group]
        for entry in entries:
            if queue_id in entry.offsets:
                entry.offsets[queue_id] = entry.handed[queue_id] = offset
        self.offsets.commit_offset("reset", group + BROADCAST_SUFFIX, topic, queue_id, offset)

    # -- periodic -----------------------------------------------------------------------------------
    def scan(self, expire: bool = True) -> None:
        """Forget expired clients and resets (unless `expire` is false); record each group's minimum (5.x does
        this every 5 s)."""
        now = self.clock()
        for key, clients in list(self.clients.items()):
            topic, group = key
            for cid in [cid for cid, c in clients.items() if expire
                        and not self.is_online(group, cid) and now - c.last_seen >= self.expire_s]:
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
        if expire:
            for reset_key in [k for k, r in self.resets.items() if now - r.created >= self.expire_s]:
                del self.resets[reset_key]

    def shutdown(self) -> None:
        """The clean stop's last scan, once no pull can come any more (5.x's shutdown): the clients' latest
        positions reach the file the next start reads. Nobody expires here: the connections were just closed,
        and every client still remembered was live at the last scan or has pulled since."""
        self.scan(expire=False)
