"""The read side's one core, the twin of `send_core.py`: every front that reads a group's messages or offsets
translates to it (PULL_MESSAGE and its held re-runs, POP from remoting and gRPC, QUERY_CONSUMER_OFFSET).

- `read(ReadRequest)`: a pull. The pending server-side reset is decided here (a pull from the reset offset applies
  it; a told client's first pull from elsewhere waits, and so do its others while the telling settles; any other
  is moved), then the broadcasting resume, then the
  store read; the store status becomes an `Outcome`; an illegal offset is corrected and recorded in
  OFFSET_MOVED_EVENT; the pull's commit, the pull offset (ready/inflight), the broadcasting client's offset, the
  offset history and the statistics are written here, once.
- `fetch(...)`: one store read with its statistics (POP reads with it, correcting an illegal offset silently as
  5.x's POP does).
- `start_offset(...)` (POP) and `committed_or_start(...)` (QUERY_CONSUMER_OFFSET): where a group is, or starts
  (the new-group rule of `start_offset.py`).
"""

from __future__ import annotations

import enum
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

from rocketmq_emulator.protocol import BrokerError, ResponseCode
from rocketmq_emulator.protocol.bodies import MessageQueue, OffsetMovedEvent
from rocketmq_emulator.protocol.message import java_string_hash
from rocketmq_emulator.protocol.pop_headers import INIT_MODE_MIN
from rocketmq_emulator.protocol.topics import OFFSET_MOVED_EVENT, RETRY_GROUP_TOPIC_PREFIX
from rocketmq_emulator.store.config import BrokerRole
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner
from rocketmq_emulator.store.results import GetMessageResult, GetMessageStatus

from .filter.tags import parse_tag_expression
from .start_offset import young_queue_offset

if TYPE_CHECKING:
    from .broker_state import BrokerState

log = logging.getLogger("rocketmq_emulator.pull")

_S = GetMessageStatus
_SLAVE = BrokerRole.SLAVE
#: statuses that correct the offset (PULL_OFFSET_MOVED; POP reads again from the corrected offset)
_ILLEGAL = frozenset({_S.OFFSET_TOO_SMALL, _S.OFFSET_OVERFLOW_BADLY})
#: a told client's first pull of a queue since: (group, topic, queue id, client id) -> True once
FirstPullSinceTold = Callable[[str, str, int, str], bool]
#: seconds left before a told client's pulls from its old offset may be moved: (group, topic, client id) -> seconds
Settling = Callable[[str, str, str], float]


class OffsetBook(Protocol):
    """What the consume core asks of a group's offsets, by the same names for clustering (ConsumerOffsetManager:
    one reset per queue) and broadcasting (BroadcastOffsetManager: one per client)."""

    def pending_reset(self, *, group: str, topic: str, queue_id: int, client_id: str) -> int | None: ...

    def take_reset(self, *, group: str, topic: str, queue_id: int, client_id: str) -> int | None: ...

    def assign_reset(self, *, group: str, topic: str, queue_id: int, offset: int, by: str = "admin") -> None: ...


class Outcome(enum.Enum):
    FOUND = "found"  # messages (SUCCESS)
    RETRY = "retry"  # nothing matched the filter in what was read, or the messages are being removed
    NOT_FOUND = "not found"  # nothing new: the pull may be held
    MOVED = "moved"  # an illegal offset, corrected (PULL_OFFSET_MOVED, recorded in OFFSET_MOVED_EVENT)
    RESET = "reset"  # moved by a pending reset or the broadcasting resume (PULL_OFFSET_MOVED, OFFSET_RESET)
    RESET_PENDING = "reset pending"  # a pull from the old offset while a told client applies a reset
    RESET_SETTLING = "reset settling"  # the same, to be held `hold_s` (then answered as RESET_PENDING)


@dataclass(slots=True)
class ReadRequest:
    """A pull, parsed once: the group's queue, where and how much, its filter, who asks."""

    group: str
    topic: str
    queue_id: int
    offset: int
    max_nums: int
    tag_codes: frozenset[int] | None = None  # None: every tag
    record_filter: Callable[[bytes], bool] | None = None  # a compiled SQL92 filter of records
    client_id: str = ""
    peer: str = ""  # who, in the offset history
    broadcasting: bool = False
    session: int = 0  # the broadcasting client's connection session
    commit_offset: int | None = None  # the pull's commit (sysFlag COMMIT_OFFSET), stored with the read


@dataclass(slots=True)
class ReadResult:
    outcome: Outcome
    remark: str  # the store status's name, OFFSET_RESET or OFFSET_RESET_PENDING (what the answer's remark says)
    next_offset: int
    min_offset: int
    max_offset: int
    got: GetMessageResult | None = None
    hold_s: float = 0.0  # RESET_SETTLING: how long the pull may be held before it is answered "nothing new"


class ConsumeCore:
    def __init__(self, broker: BrokerState, first_pull_since_told: FirstPullSinceTold,
                 settling: Settling = lambda group, topic, client_id: 0.0) -> None:
        self.broker = broker
        self.first_pull_since_told = first_pull_since_told
        self.settling = settling

    # -- reads --------------------------------------------------------------------------------------
    def fetch(self, group: str, topic: str, queue_id: int, offset: int, max_nums: int,
              tag_codes: frozenset[int] | None, record_filter: Callable[[bytes], bool] | None, joined: bool = False
              ) -> GetMessageResult | None:
        """One store read, counted in the broker statistics (GROUP_GET_NUMS/SIZE, found or missed). `joined`: only
        the answer's body is wanted (`MessageStore.get_message`)."""
        b = self.broker
        began = time.perf_counter_ns()
        got = b.store.get_message(group, topic, queue_id, offset, max_nums, tag_codes, record_filter, joined)
        elapsed_ms = (time.perf_counter_ns() - began) // 1_000_000
        if got is not None and got.status is _S.FOUND:
            b.stats.got(group, topic, queue_id, got.message_count, got.buffer_total_size, elapsed_ms)
        else:
            b.stats.missed(elapsed_ms)
        return got

    def fetch_correcting(self, group: str, topic: str, queue_id: int, offset: int, max_nums: int,
                         tag_codes: frozenset[int] | None, record_filter: Callable[[bytes], bool] | None
                         ) -> tuple[GetMessageResult | None, int]:
        """`fetch`, read again from the corrected offset after an illegal one (5.x's POP): (result, offset read)."""
        got = self.fetch(group, topic, queue_id, offset, max_nums, tag_codes, record_filter)
        if got is not None and got.status in _ILLEGAL:
            offset = got.next_begin_offset
            got = self.fetch(group, topic, queue_id, offset, max_nums, tag_codes, record_filter)
        return got, offset

    def read(self, r: ReadRequest, *, held: bool = False) -> ReadResult | None:
        """A pull (`held`: the re-run of a held one). None when the store could not read (no store)."""
        b = self.broker
        store = b.store
        reset = self._pending_reset(r) if b.config.use_server_side_reset_offset else None
        if reset is not None and reset != r.offset:
            if self.first_pull_since_told(r.group, r.topic, r.queue_id, r.client_id) or held:
                # (the told client's first pull counts, held or not) a pull from the old offset that the reset woke
                # (it was held) or that was under way when the client was told: "nothing new"; the client's next
                # pulls decide (from the reset offset if it applied RESET_CONSUMER_CLIENT_OFFSET; from the old one
                # again, once the telling has settled, if it ignores it: then it is moved)
                return ReadResult(Outcome.RESET_PENDING, "OFFSET_RESET_PENDING", r.offset,
                                  store.get_min_offset_in_queue(r.topic, r.queue_id),
                                  store.get_max_offset_in_queue(r.topic, r.queue_id))
            settle = self.settling(r.group, r.topic, r.client_id)
            if settle > 0:
                # another pull from the old offset right after the telling: a client applying the reset sends one
                # when its pull thread answers "nothing new" before its reset handler has paused the queue (Go
                # 2.1.2); moved, it would apply the reset a second time. Held until the telling settles, then
                # "nothing new"; a client that ignores the reset pulls from the old offset again and is moved
                return ReadResult(Outcome.RESET_SETTLING, "OFFSET_RESET_PENDING", r.offset,
                                  store.get_min_offset_in_queue(r.topic, r.queue_id),
                                  store.get_max_offset_in_queue(r.topic, r.queue_id), hold_s=settle)
        if reset is not None or r.broadcasting:
            moved_to = self._override(r, reset is not None)
            if moved_to is not None:
                return self._moved(r, moved_to)
        got = self.fetch(r.group, r.topic, r.queue_id, r.offset, r.max_nums, r.tag_codes, r.record_filter, True)
        if got is None:
            return None
        status = got.status
        outcome = _OUTCOMES.get(status) or (Outcome.MOVED if r.offset != 0 else Outcome.NOT_FOUND)
        if store.config.broker_role is _SLAVE:  # 4.9.8: a slave neither stores a pull's commit nor corrects an
            # offset (offsetCheckInSlave false): an illegal one is answered PULL_RETRY_IMMEDIATELY, offset unchanged
            if outcome is Outcome.MOVED:
                return ReadResult(Outcome.RETRY, status.name, r.offset, got.min_offset, got.max_offset, got)
            return ReadResult(outcome, status.name, got.next_begin_offset, got.min_offset, got.max_offset, got)
        offsets = b.consumer_offset_manager
        if r.commit_offset is not None:
            offsets.commit_offset(r.peer, r.group, r.topic, r.queue_id, r.commit_offset)
        # after the commit: a commit offset is checked against what was pulled before this pull
        offsets.commit_pull_offset(r.group, r.topic, r.queue_id, got.next_begin_offset)
        if r.broadcasting:  # where the client is: as asked, or where an illegal offset was corrected to (as 5.x)
            b.broadcast_offsets.update_offset(r.topic, r.group, r.queue_id, r.client_id, r.session,
                                              got.next_begin_offset if outcome is Outcome.MOVED else r.offset,
                                              got.next_begin_offset)
        if outcome is Outcome.MOVED:
            self._offset_moved_event(r, got.next_begin_offset)
        elif outcome is Outcome.FOUND and b.delivery_log is not None:  # (only while the dashboard runs)
            b.delivery_log.add(r.group, r.topic, r.queue_id, r.offset, got.next_begin_offset, r.client_id, "pull")
        return ReadResult(outcome, status.name, got.next_begin_offset, got.min_offset, got.max_offset, got)

    def filters(self, expression_type: str | None, expression: str | None
                ) -> tuple[frozenset[int] | None, Callable[[bytes], bool] | None]:
        """A POP's subscription (remoting or gRPC) as (tag codes, SQL92 record filter): TAG by default; a SQL92
        expression that does not compile is refused (SUBSCRIPTION_PARSE_FAILED), as 5.x refuses it."""
        kind = (expression_type or "TAG").upper()
        if kind == "TAG":
            return parse_tag_expression(expression), None
        if kind != "SQL92" or not self.broker.config.enable_property_filter:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "The broker does not support consumer to filter message by "
                                                         + kind)
        built = self.broker.consumer_filter_manager.build(expression or "")
        if isinstance(built, str):
            raise BrokerError(ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"parse the consumer's subscription failed: "
                                                                      f"{built}")
        return None, built

    # -- offsets ------------------------------------------------------------------------------------
    def committed_or_start(self, group: str, topic: str, queue_id: int, *, zero_if_not_found: bool) -> int | None:
        """QUERY_CONSUMER_OFFSET: the group's committed offset, else where a new group starts (0 of a young queue
        under the legacy rule), else None (not found: the client's consumeFromWhere decides)."""
        offset = self.broker.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset >= 0:
            return offset
        return young_queue_offset(self.broker.config, self.broker.store, topic, queue_id,
                                  zero_if_not_found=zero_if_not_found)

    def start_offset(self, group: str, topic: str, queue_id: int, init_mode: int) -> int:
        """POP: the group's offset in a queue: a pending reset, the stored offset, or for a group new to the queue
        the first message with initMode MIN (and in retry topics), else 0 while the queue is young (newGroupOffset),
        else the last message (upstream's "pop last one"); a new group's start is committed."""
        b = self.broker
        offsets = b.consumer_offset_manager
        if b.config.use_server_side_reset_offset:
            reset = offsets.take_reset(group=group, topic=topic, queue_id=queue_id)
            if reset is not None:
                offsets.commit_offset("pop", group, topic, queue_id, reset)
                return reset
        offset = offsets.query_offset(group, topic, queue_id)
        if offset >= 0:
            return offset
        store = b.store
        if init_mode == INIT_MODE_MIN or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            offset = store.get_min_offset_in_queue(topic, queue_id)
        else:
            young = young_queue_offset(b.config, store, topic, queue_id)
            offset = young if young is not None else max(0, store.get_max_offset_in_queue(topic, queue_id) - 1)
        offsets.commit_offset("pop", group, topic, queue_id, offset)
        return offset

    # -- resets and moves ---------------------------------------------------------------------------
    def _book(self, r: ReadRequest) -> OffsetBook:
        """The offsets a reset of the group is kept in: the group's (clustering) or each client's (broadcasting)."""
        return self.broker.broadcast_offsets if r.broadcasting else self.broker.consumer_offset_manager

    def _pending_reset(self, r: ReadRequest) -> int | None:
        """The offset a pending server-side reset moves this client's pulls of the queue to, or None."""
        if not self.broker.config.use_server_side_reset_offset:
            return None
        return self._book(r).pending_reset(group=r.group, topic=r.topic, queue_id=r.queue_id, client_id=r.client_id)

    def _override(self, r: ReadRequest, reset_pending: bool) -> int | None:
        """Where this pull must go instead of its offset: the pending server-side reset (taken now: a pull from
        the reset offset applies it, any other is moved there), or (broadcasting) the broker's offset for a
        client whose first pull of the queue in this session starts at the end. None: as asked."""
        b = self.broker
        target = None
        if reset_pending:
            target = self._book(r).take_reset(group=r.group, topic=r.topic, queue_id=r.queue_id, client_id=r.client_id)
        if target is None and r.broadcasting and b.config.enable_broadcast_offset_store:
            target = b.broadcast_offsets.init_offset(r.topic, r.group, r.queue_id, r.client_id, r.session, r.offset,
                                                     b.store.get_max_offset_in_queue(r.topic, r.queue_id))
        return target if target is not None and target != r.offset else None

    def _moved(self, r: ReadRequest, offset: int) -> ReadResult:
        """PULL_OFFSET_MOVED to `offset` (5.x's OFFSET_RESET): every client moves its pull there at once, and the
        pull's commit offset (the client's old position) is not stored."""
        b = self.broker
        b.consumer_offset_manager.commit_pull_offset(r.group, r.topic, r.queue_id, offset)
        b.consumer_offset_manager.history.add(r.group, r.topic, r.queue_id, offset, "moved",
                                              f"broker (reset applied to {r.client_id})", r.offset)
        if r.broadcasting:
            b.broadcast_offsets.update_offset(r.topic, r.group, r.queue_id, r.client_id, r.session, offset, offset)
        log.info("%s: pull of %s queue %d by %s moved from %d to %d", r.group, r.topic, r.queue_id, r.client_id,
                 r.offset, offset)
        return ReadResult(Outcome.RESET, "OFFSET_RESET", offset, b.store.get_min_offset_in_queue(r.topic, r.queue_id),
                          b.store.get_max_offset_in_queue(r.topic, r.queue_id))

    def _offset_moved_event(self, r: ReadRequest, offset_new: int) -> None:
        """Record the correction in topic OFFSET_MOVED_EVENT, as a master broker does (§9.4)."""
        b = self.broker
        b.consumer_offset_manager.history.add(r.group, r.topic, r.queue_id, offset_new, "moved",
                                              "broker (illegal offset)", r.offset)
        event = OffsetMovedEvent(consumer_group=r.group, message_queue=MessageQueue(
            r.topic, b.config.broker_name, r.queue_id), offset_request=r.offset, offset_new=offset_new)
        props = f"TAGS\x01{r.group}\x02DELAY\x010\x02KEYS\x01{r.group}".encode()  # 4.9.8 sets delay level 0
        inner = MessageExtBrokerInner(OFFSET_MOVED_EVENT, 0, event.encode(), properties_raw=props,
                                      tags_code=java_string_hash(r.group), born_timestamp=int(time.time() * 1000),
                                      born_host=b.store_host_packed, born_port=b.config.advertised_port or
                                      b.listen_port, keys=[r.group])
        b.store.put_message(inner)


#: 4.9.8's PullMessageProcessor table from store status to answer; NO_MATCHED_LOGIC_QUEUE and NO_MESSAGE_IN_QUEUE
#: (absent here) answer MOVED unless the pull asked for offset 0 (then NOT_FOUND)
_OUTCOMES = {_S.FOUND: Outcome.FOUND, _S.NO_MATCHED_MESSAGE: Outcome.RETRY, _S.MESSAGE_WAS_REMOVING: Outcome.RETRY,
             _S.OFFSET_TOO_SMALL: Outcome.MOVED, _S.OFFSET_OVERFLOW_BADLY: Outcome.MOVED,
             _S.OFFSET_OVERFLOW_ONE: Outcome.NOT_FOUND, _S.OFFSET_FOUND_NULL: Outcome.NOT_FOUND}
