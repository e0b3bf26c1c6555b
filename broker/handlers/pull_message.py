"""PULL_MESSAGE (reference §9.2-9.6): the pre-checks, the subscription and its filter, then the read in the consume
core (broker/core/consume_core.py: resets, the store read, offsets, OFFSET_MOVED_EVENT, statistics), its outcome as a
response code, and long polling."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable

from rocketmq_emulator.protocol import BrokerError, PullSysFlag, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import MessageModel
from rocketmq_emulator.protocol.codes import SerializeType
from rocketmq_emulator.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

from ..core.consume_checks import check_consume
from ..core.consume_core import Outcome, ReadRequest
from ..core.filter.consumer_filter import SQL92
from ..core.filter.tags import parse_tag_expression
from ..core.long_polling import PullRequest
from ..core.remarks import suggest_todo
from ..state.broadcast_offset import session_of

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext

log = logging.getLogger("rocketmq_emulator.pull")

_R = ResponseCode
#: the sysFlag bits as plain ints: `int & IntFlag` goes through the enum's reflected operator, about 1,000
#: instructions each on the hot path
_COMMIT_OFFSET, _SUSPEND, _SUBSCRIPTION = (int(PullSysFlag.COMMIT_OFFSET), int(PullSysFlag.SUSPEND),
                                           int(PullSysFlag.SUBSCRIPTION))
#: the answer to each outcome of a read (4.9.8's PullMessageProcessor; OFFSET_RESET as 5.x)
_CODES = {Outcome.FOUND: _R.SUCCESS, Outcome.RETRY: _R.PULL_RETRY_IMMEDIATELY, Outcome.NOT_FOUND: _R.PULL_NOT_FOUND,
          Outcome.MOVED: _R.PULL_OFFSET_MOVED, Outcome.RESET: _R.PULL_OFFSET_MOVED,
          Outcome.RESET_PENDING: _R.PULL_NOT_FOUND, Outcome.RESET_SETTLING: _R.PULL_NOT_FOUND}
#: the outcomes a pull with the suspend flag is held on (long polling)
_HELD = frozenset({Outcome.NOT_FOUND, Outcome.RESET_SETTLING})
_JSON = int(SerializeType.JSON)
_found_frame = PullMessageResponseHeader.found_frame


#: a slave's answer to an offset it cannot serve (4.9.8: PULL_RETRY_IMMEDIATELY, the group's brokerId suggested)
_BADLY = frozenset({"OFFSET_OVERFLOW_BADLY", "OFFSET_TOO_SMALL", "NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"})


class PullMessageProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.PULL_MESSAGE, self.pull_message)

    def pull_message(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand | bytes | None:
        return self.process(req, conn, allow_suspend=True)

    def rerun(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """A held pull runs again: no suspension, no offset commit."""
        response = self.process(req, conn, allow_suspend=False)
        assert isinstance(response, RemotingCommand)
        return response

    def process(self, req: RemotingCommand, conn: RemotingConnection, allow_suspend: bool
                ) -> RemotingCommand | bytes | None:
        """The answer (a found pull's as its encoded frame, `PullMessageResponseHeader.found_frame`), or None: held
        (long polling)."""
        b = self.broker
        h = req.header if req.header is not None else PullMessageRequestHeader.from_ext(req.ext_fields)  # (set: the
        # native read lane read it, broker/handlers/send_message.py SendLane)
        group_cfg, _ = check_consume(b, h.consumer_group, h.topic, h.queue_id, consumer=f"/{conn.peer}")  # Java's
        # InetSocketAddress.toString()
        sys_flag = h.sys_flag
        if sys_flag & _SUBSCRIPTION:
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
        read = ReadRequest(h.consumer_group, h.topic, h.queue_id, h.queue_offset, h.max_msg_nums, codes, record_filter,
                           conn.attributes.get("client_id") or conn.peer, conn.peer, broadcasting,
                           session_of(conn.attributes) if broadcasting else 0,
                           h.commit_offset if allow_suspend and sys_flag & _COMMIT_OFFSET else None)
        result = b.consume_core.read(read, held=not allow_suspend)
        if result is None:
            raise BrokerError(_R.SYSTEM_ERROR, "store getMessage return null")
        outcome = result.outcome
        if outcome in _HELD and allow_suspend and sys_flag & _SUSPEND:
            hold_ms = h.suspend_timeout_millis if b.config.long_polling_enable else b.config.short_polling_time_mills
            if outcome is Outcome.RESET_SETTLING:  # its re-run is answered "nothing new" (OFFSET_RESET_PENDING)
                hold_ms = min(hold_ms, int(result.hold_s * 1000) + 1)
            pr = PullRequest(req, conn, h.queue_offset, codes, time.monotonic() + max(0, hold_ms) / 1000,
                             h.consumer_group)
            b.pull_hold_service.suspend(h.topic, h.queue_id, pr)
            return None
        got = result.got
        suggest = 0  # 4.9.8: the master, unless slaveReadEnable: then the group's brokerId, or (the consumer lags
        # by more than the memory share) its whichBrokerWhenConsumeSlowly; a slave's offset it cannot serve: the
        # group's brokerId
        if b.config.slave_read_enable:
            suggest = group_cfg.which_broker_when_consume_slowly if got is not None and \
                got.suggest_pulling_from_slave else group_cfg.broker_id
        if outcome is Outcome.RETRY and result.remark in _BADLY and b.config.broker_id != 0:
            suggest = group_cfg.broker_id
        if outcome is Outcome.FOUND and got is not None:
            if allow_suspend and req.serialize_type == _JSON and conn.tracer is None and not suggest:  # the hot path: the frame as
                # encoding the response below gives it (a held pull's re-run answers a command)
                return _found_frame(req.opaque, result.next_offset, result.min_offset, result.max_offset, got.body())
            body = got.body()
        else:
            body = b""
        return RemotingCommand.response_to(req, _CODES[outcome], result.remark, PullMessageResponseHeader.fast_ext(
            result.next_offset, result.min_offset, result.max_offset, suggest), body)

    def _sql92_filter(self, h: PullMessageRequestHeader, expression_type: str) -> Callable[[bytes], bool] | None:
        """The compiled SQL92 expression of the pull (its own, with the subscription flag) or of the group's
        subscription (ConsumerFilterManager, fed by heartbeats), as 4.9.8's PullMessageProcessor answers. An
        expression of the pull's own that does not compile (or of a type no filter knows) filters nothing, as 4.9.8
        and 5.x do (their ConsumerFilterManager.build returns null and the pull goes on without filter data)."""
        b = self.broker
        if not b.config.enable_property_filter:
            raise BrokerError(_R.SYSTEM_ERROR, "The broker does not support consumer to filter message by "
                                               + expression_type)
        if h.sys_flag & _SUBSCRIPTION:
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
