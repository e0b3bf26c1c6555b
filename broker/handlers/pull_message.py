"""PULL_MESSAGE (reference §9.2-9.6): pre-checks, the store lookup, status to response code, long polling,
offset commit through sysFlag, and OFFSET_MOVED_EVENT on PULL_OFFSET_MOVED."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable

from rocketmq_emulator.protocol import BrokerError, PullSysFlag, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import MessageModel, MessageQueue, OffsetMovedEvent
from rocketmq_emulator.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_emulator.protocol.message import java_string_hash
from rocketmq_emulator.protocol.topics import OFFSET_MOVED_EVENT
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner
from rocketmq_emulator.store.results import GetMessageStatus

from ..broadcast_offset import session_of
from ..consume_checks import check_consume
from ..filter.consumer_filter import SQL92
from ..filter.tags import parse_tag_expression
from ..long_polling import PullRequest
from ..remarks import suggest_todo

if TYPE_CHECKING:
    from ..broker_context import BrokerContext

log = logging.getLogger("rocketmq_emulator.pull")

_S = GetMessageStatus
_R = ResponseCode


class PullMessageProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.PULL_MESSAGE, self.pull_message)

    def pull_message(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand | None:
        return self.process(req, conn, allow_suspend=True)

    def rerun(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """A held pull runs again: no suspension, no offset commit."""
        response = self.process(req, conn, allow_suspend=False)
        assert response is not None
        return response

    def process(self, req: RemotingCommand, conn: RemotingConnection, allow_suspend: bool) -> RemotingCommand | None:
        b = self.broker
        h = PullMessageRequestHeader.from_ext(req.ext_fields)
        group_cfg, _ = check_consume(b, h.consumer_group, h.topic, h.queue_id, consumer=f"/{conn.peer}")  # Java's
        # InetSocketAddress.toString()
        sys_flag = h.sys_flag
        if sys_flag & PullSysFlag.SUBSCRIPTION:
            expression_type = h.expression_type or "TAG"
            codes = parse_tag_expression(h.subscription)
        else:
            gi = b.consumer_manager.get(h.consumer_group)
            if gi is None:
                raise BrokerError(_R.SUBSCRIPTION_NOT_EXIST, suggest_todo("the consumer's group info not exist"))
            if gi.message_model == MessageModel.BROADCASTING and not group_cfg.consume_broadcast_enable:
                raise BrokerError(_R.NO_PERMISSION,
                                  f"the consumer group[{h.consumer_group}] can not consume by broadcast way")
            sub = gi.subscription_table.get(h.topic)
            if sub is None:
                raise BrokerError(_R.SUBSCRIPTION_NOT_EXIST, suggest_todo("the consumer's subscription not exist"))
            if sub.sub_version < h.sub_version:
                raise BrokerError(_R.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
            expression_type = sub.expression_type or "TAG"
            # the heartbeat's tag hash codes decide, as 4.9.8's ExpressionMessageFilter: a subscription of tags
            # that came without codes matches nothing
            codes = parse_tag_expression(sub.sub_string) if sub.sub_string.strip() in ("", "*") else \
                frozenset(sub.code_set)
        record_filter = None
        if expression_type != "TAG":
            record_filter = self._sql92_filter(h, expression_type)
            codes = None  # every tag; the properties decide

        gi = b.consumer_manager.get(h.consumer_group)
        broadcasting = gi is not None and gi.message_model == MessageModel.BROADCASTING
        client_id = conn.attributes.get("client_id") or conn.peer
        session = session_of(conn.attributes) if broadcasting else 0
        reset = self._pending_reset(h, broadcasting, client_id)
        if reset is not None and reset != h.queue_offset and (
                not allow_suspend or b.broker2client.first_pull_since_told(h.consumer_group, h.topic, h.queue_id,
                                                                           client_id)):
            # a pull from the old offset that the reset woke (it was held) or that was under way when the client
            # was told: "nothing new", and the client's next pull decides (from the reset offset if it applied
            # RESET_CONSUMER_CLIENT_OFFSET; from the old one again if it ignores it: then it is moved)
            return RemotingCommand.response_to(req, _R.PULL_NOT_FOUND, "OFFSET_RESET_PENDING",
                                               PullMessageResponseHeader.fast_ext(
                                                   h.queue_offset, b.store.get_min_offset_in_queue(h.topic, h.queue_id),
                                                   b.store.get_max_offset_in_queue(h.topic, h.queue_id)))
        moved_to = self._offset_override(h, broadcasting, client_id, session, reset is not None)
        if moved_to is not None:
            return self._moved(req, h, moved_to, broadcasting, client_id, session)

        began = time.perf_counter_ns()
        result = b.store.get_message(h.consumer_group, h.topic, h.queue_id, h.queue_offset, h.max_msg_nums, codes,
                                     record_filter)
        if result is None:
            raise BrokerError(_R.SYSTEM_ERROR, "store getMessage return null")
        status = result.status
        body = b""
        if status is _S.FOUND:
            code = _R.SUCCESS
            body = result.body()
        elif status is _S.NO_MATCHED_MESSAGE or status is _S.MESSAGE_WAS_REMOVING:
            code = _R.PULL_RETRY_IMMEDIATELY
        elif status is _S.NO_MATCHED_LOGIC_QUEUE or status is _S.NO_MESSAGE_IN_QUEUE:
            code = _R.PULL_OFFSET_MOVED if h.queue_offset != 0 else _R.PULL_NOT_FOUND
        elif status is _S.OFFSET_OVERFLOW_BADLY or status is _S.OFFSET_TOO_SMALL:
            code = _R.PULL_OFFSET_MOVED
        else:  # OFFSET_OVERFLOW_ONE, OFFSET_FOUND_NULL
            code = _R.PULL_NOT_FOUND
        elapsed_ms = (time.perf_counter_ns() - began) // 1_000_000
        if code == _R.SUCCESS:  # the broker statistics: GROUP_GET_NUMS/SIZE, get found/miss
            b.stats.got(h.consumer_group, h.topic, h.queue_id, len(result.messages), len(body), elapsed_ms)
        else:
            b.stats.missed(elapsed_ms)

        if allow_suspend and sys_flag & PullSysFlag.COMMIT_OFFSET:
            b.consumer_offset_manager.commit_offset(conn.peer, h.consumer_group, h.topic, h.queue_id,
                                                    h.commit_offset)
        # after the commit: a commit offset is checked against what was pulled before this pull
        b.consumer_offset_manager.commit_pull_offset(h.consumer_group, h.topic, h.queue_id, result.next_begin_offset)
        if broadcasting:  # where the client is: as asked, or where an illegal offset was corrected to (as 5.x)
            b.broadcast_offsets.update_offset(h.topic, h.consumer_group, h.queue_id, client_id, session,
                                              result.next_begin_offset if code == _R.PULL_OFFSET_MOVED
                                              else h.queue_offset, result.next_begin_offset)

        if code == _R.PULL_NOT_FOUND and allow_suspend and sys_flag & PullSysFlag.SUSPEND:
            hold_ms = h.suspend_timeout_millis if b.config.long_polling_enable else b.config.short_polling_time_mills
            pr = PullRequest(req, conn, h.queue_offset, codes, time.monotonic() + max(0, hold_ms) / 1000,
                             h.consumer_group)
            b.pull_hold_service.suspend(h.topic, h.queue_id, pr)
            return None

        if code == _R.PULL_OFFSET_MOVED:
            self._offset_moved_event(h, result.next_begin_offset)

        return RemotingCommand.response_to(req, code, status.name, PullMessageResponseHeader.fast_ext(
            result.next_begin_offset, result.min_offset, result.max_offset), body)

    def _sql92_filter(self, h: PullMessageRequestHeader, expression_type: str) -> Callable[[bytes], bool] | None:
        """The compiled SQL92 expression of the pull (its own, with the subscription flag) or of the group's
        subscription (ConsumerFilterManager, fed by heartbeats), as 4.9.8's PullMessageProcessor answers. An
        expression of the pull's own that does not compile (or of a type no filter knows) filters nothing, as 4.9.8
        and 5.x do (their ConsumerFilterManager.build returns null and the pull goes on without filter data)."""
        b = self.broker
        if not b.config.enable_property_filter:
            raise BrokerError(_R.SYSTEM_ERROR, "The broker does not support consumer to filter message by "
                                               + expression_type)
        if h.sys_flag & PullSysFlag.SUBSCRIPTION:
            if expression_type != SQL92:
                return None
            built = b.consumer_filter_manager.build(h.subscription or "")
            if isinstance(built, str):
                log.info("pull of %s by %s: %s (pulled without filter, as 4.9.8)", h.topic, h.consumer_group, built)
                return None
            return built
        data = b.consumer_filter_manager.get(h.topic, h.consumer_group)
        if data is None or data.record_filter is None:
            raise BrokerError(_R.FILTER_DATA_NOT_EXIST,
                              "The broker's consumer filter data is not exist!Your expression may be wrong!")
        if data.version < h.sub_version:
            raise BrokerError(_R.FILTER_DATA_NOT_LATEST, "the consumer's consumer filter data not latest")
        return data.record_filter

    def _pending_reset(self, h: PullMessageRequestHeader, broadcasting: bool, client_id: str) -> int | None:
        """The offset a pending server-side reset moves this client's pulls of the queue to, or None."""
        b = self.broker
        if not b.config.use_server_side_reset_offset:
            return None
        if broadcasting:
            return b.broadcast_offsets.pending_reset(h.topic, h.consumer_group, h.queue_id, client_id)
        return b.consumer_offset_manager.pending_reset(h.topic, h.consumer_group, h.queue_id)

    def _offset_override(self, h: PullMessageRequestHeader, broadcasting: bool, client_id: str,
                         session: int, reset_pending: bool) -> int | None:
        """Where this pull must go instead of its queueOffset: the pending server-side reset (taken now: a pull
        from the reset offset applies it, any other is moved there), or (broadcasting) the broker's offset for a
        client whose first pull of the queue in this session starts at the end. None: as asked."""
        b = self.broker
        target = None
        if reset_pending:
            if broadcasting:
                target = b.broadcast_offsets.take_reset(h.topic, h.consumer_group, h.queue_id, client_id)
            else:
                target = b.consumer_offset_manager.query_then_erase_reset_offset(h.topic, h.consumer_group,
                                                                                 h.queue_id)
        if target is None and broadcasting and b.config.enable_broadcast_offset_store:
            target = b.broadcast_offsets.init_offset(h.topic, h.consumer_group, h.queue_id, client_id, session,
                                                     h.queue_offset,
                                                     b.store.get_max_offset_in_queue(h.topic, h.queue_id))
        return target if target is not None and target != h.queue_offset else None

    def _moved(self, req: RemotingCommand, h: PullMessageRequestHeader, offset: int, broadcasting: bool,
               client_id: str, session: int) -> RemotingCommand:
        """PULL_OFFSET_MOVED to `offset` (5.x's OFFSET_RESET): every client moves its pull there at once, and
        the pull's commit offset (the client's old position) is not stored."""
        b = self.broker
        b.consumer_offset_manager.commit_pull_offset(h.consumer_group, h.topic, h.queue_id, offset)
        b.consumer_offset_manager.history.add(h.consumer_group, h.topic, h.queue_id, offset, "moved",
                                              f"broker (reset applied to {client_id})", h.queue_offset)
        if broadcasting:
            b.broadcast_offsets.update_offset(h.topic, h.consumer_group, h.queue_id, client_id, session, offset,
                                              offset)
        log.info("%s: pull of %s queue %d by %s moved from %d to %d", h.consumer_group, h.topic, h.queue_id,
                 client_id, h.queue_offset, offset)
        return RemotingCommand.response_to(req, _R.PULL_OFFSET_MOVED, "OFFSET_RESET", PullMessageResponseHeader.fast_ext(
            offset, b.store.get_min_offset_in_queue(h.topic, h.queue_id),
            b.store.get_max_offset_in_queue(h.topic, h.queue_id)))

    def _offset_moved_event(self, h: PullMessageRequestHeader, offset_new: int) -> None:
        """Record the correction in topic OFFSET_MOVED_EVENT, as a master broker does (§9.4)."""
        b = self.broker
        b.consumer_offset_manager.history.add(h.consumer_group, h.topic, h.queue_id, offset_new, "moved",
                                              "broker (illegal offset)", h.queue_offset)
        event = OffsetMovedEvent(consumer_group=h.consumer_group, message_queue=MessageQueue(
            h.topic, b.config.broker_name, h.queue_id), offset_request=h.queue_offset, offset_new=offset_new)
        props = f"TAGS\x01{h.consumer_group}\x02DELAY\x010\x02KEYS\x01{h.consumer_group}".encode()  # 4.9.8 sets
        # delay level 0 on the event
        inner = MessageExtBrokerInner(OFFSET_MOVED_EVENT, 0, event.encode(), properties_raw=props,
                                      tags_code=java_string_hash(h.consumer_group),
                                      born_timestamp=int(time.time() * 1000), born_host=b.store_host_packed,
                                      born_port=b.config.advertised_port or b.listen_port,
                                      keys=[h.consumer_group])
        b.store.put_message(inner)
