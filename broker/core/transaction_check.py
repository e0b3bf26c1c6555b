"""The transaction check-back (4.9.8's TransactionalMessageCheckService and TransactionalMessageServiceImpl.check):
every `transactionCheckInterval` the broker reads the half queue from the system group CID_RMQ_SYS_TRANS's
offset, skips the half messages an op record decided, and for each undecided one older than
`transactionTimeOut` (or its CHECK_IMMUNITY_TIME_IN_SECONDS) puts a copy at the end of the half queue with
TRANSACTION_CHECK_TIMES + 1 and sends CHECK_TRANSACTION_STATE (oneway) about that copy to a live producer of its
group; the producer answers with END_TRANSACTION. A half message checked `transactionCheckMax` times is moved to
TRANS_CHECK_MAX_TIME_TOPIC and logged. Its progress (half and op queue offsets) is the system group's consumer
offsets, so a restart (or a kill -9) resumes where it was, and every undecided half message is checked again.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, TYPE_CHECKING

from rocketmq_emulator.protocol.headers import CheckTransactionStateRequestHeader
from rocketmq_emulator.protocol.message import (PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS, PROPERTY_PRODUCER_GROUP,
                                                PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC,
                                                PROPERTY_TRANSACTION_CHECK_TIMES,
                                                PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET,
                                                PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, PROPERTY_WAIT_STORE_MSG_OK,
                                                MessageExt, decode_messages,
                                                encode_properties, pack_host, tag_hash_code)
from rocketmq_emulator.protocol.topics import (TRANS_CHECK_MAX_TIME_TOPIC, TRANS_CONSUMER_GROUP, TRANS_HALF_TOPIC,
                                               TRANS_OP_HALF_TOPIC)
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner, keys_of
from rocketmq_emulator.store.results import STORED, GetMessageStatus

if TYPE_CHECKING:
    from .broker_state import BrokerState
    from ..state.client_manager import ClientChannelInfo

log = logging.getLogger("rocketmq_emulator.transaction")

_CHECKER = "CHECK_TRANSACTION_STATE"  # who commits the system group's offsets, in the offset history


#: sends CHECK_TRANSACTION_STATE to a producer (Broker2Client.check_transaction_state): False when it is gone
CheckState = Callable[["ClientChannelInfo", dict[str, str], bytes], bool]


class TransactionalMessageCheckService:
    def __init__(self, broker: BrokerState, check_state: CheckState) -> None:
        self.broker = broker
        self.check_state = check_state
        self._no_producer_logged: dict[str, float] = {}
        #: check-back routes of other fronts (the gRPC endpoint's): each takes the half message (its real topic
        #: restored) and returns True when it sent the check to a producer of its own
        self.fronts: list[Callable[[MessageExt], bool]] = []

    def check(self) -> None:
        """One round over every half queue."""
        b = self.broker
        queues = b.store.topics_and_queues().get(TRANS_HALF_TOPIC, [])
        started = b.clock.now_ms()
        for queue_id in queues:
            self._check_queue(queue_id, started)

    def _offset(self, topic: str, queue_id: int) -> int:
        b = self.broker
        offset = b.consumer_offset_manager.query_offset(TRANS_CONSUMER_GROUP, topic, queue_id)
        return b.store.get_min_offset_in_queue(topic, queue_id) if offset < 0 else offset

    def _read(self, topic: str, queue_id: int, offset: int) -> MessageExt | None | bool:
        """The message at `offset`; None when there is none (yet); False when it is gone (an expired file)."""
        result = self.broker.store.get_message(TRANS_CONSUMER_GROUP, topic, queue_id, offset, 1)
        if result is None or result.status is not GetMessageStatus.FOUND:
            if result is not None and result.status is GetMessageStatus.OFFSET_TOO_SMALL:
                return False
            return None
        msgs = decode_messages(result.body(), strict=False)
        return msgs[0] if msgs else None

    def _check_queue(self, queue_id: int, started: int) -> None:
        b = self.broker
        cfg = b.config
        half_offset = self._offset(TRANS_HALF_TOPIC, queue_id)
        op_offset = self._offset(TRANS_OP_HALF_TOPIC, queue_id)
        # the decisions: half queue offset -> op queue offset (fillOpRemoveMap, every op record up to now)
        removed: dict[int, int] = {}
        done_ops: list[int] = []
        op_max = b.store.get_max_offset_in_queue(TRANS_OP_HALF_TOPIC, queue_id)
        for at in range(op_offset, op_max):
            op = self._read(TRANS_OP_HALF_TOPIC, queue_id, at)
            if not isinstance(op, MessageExt):
                continue
            try:
                decided = int(op.body)
            except ValueError:
                done_ops.append(at)
                continue
            if decided < half_offset:
                done_ops.append(at)
            else:
                removed[decided] = at
        i = half_offset
        half_max = b.store.get_max_offset_in_queue(TRANS_HALF_TOPIC, queue_id)
        while i < half_max:
            if i in removed:
                done_ops.append(removed.pop(i))
                i += 1
                continue
            msg = self._read(TRANS_HALF_TOPIC, queue_id, i)
            if msg is False:
                i += 1
                continue
            if not isinstance(msg, MessageExt):
                break
            props = msg.properties
            checked = int(props.get(PROPERTY_TRANSACTION_CHECK_TIMES, "0") or 0)
            if checked >= cfg.transaction_check_max:
                self._discard(msg)
                i += 1
                continue
            if b.clock.at(msg.store_timestamp) >= started:  # put during this round: the next one looks at it
                break
            age = started - b.clock.at(msg.born_timestamp)
            immunity = cfg.transaction_time_out
            immunity_s = props.get(PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
            if immunity_s:
                try:
                    immunity = int(immunity_s) * 1000
                except ValueError:
                    pass
            if 0 <= age < immunity:
                if not immunity_s:
                    break  # not due yet, nor anything after it (they are younger)
                prepared = props.get(PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET)
                if prepared is None:  # its own immunity: wait at the end of the queue, let others be checked
                    self._put_back(msg, {PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET: str(i)})
                    i += 1
                    continue
                if prepared.isdigit() and int(prepared) in removed:  # the original was decided meanwhile
                    done_ops.append(removed.pop(int(prepared)))
                    i += 1
                    continue
                break
            copy = self._put_back(msg, {PROPERTY_TRANSACTION_CHECK_TIMES: str(checked + 1)})
            if copy is not None:
                self._send_check(copy)
            i += 1
        if i != half_offset:
            b.consumer_offset_manager.commit_offset(_CHECKER, TRANS_CONSUMER_GROUP, TRANS_HALF_TOPIC, queue_id, i)
        done = set(done_ops)
        new_op_offset = op_offset
        while new_op_offset in done:
            new_op_offset += 1
        if new_op_offset != op_offset:
            b.consumer_offset_manager.commit_offset(_CHECKER, TRANS_CONSUMER_GROUP, TRANS_OP_HALF_TOPIC, queue_id,
                                                    new_op_offset)

    def _inner(self, msg: MessageExt, topic: str, props: dict[str, str]) -> MessageExtBrokerInner:
        return MessageExtBrokerInner(topic, msg.queue_id, msg.body, msg.flag, encode_properties(props).encode(),
                                     tag_hash_code(props.get("TAGS")), msg.sys_flag, msg.born_timestamp,
                                     pack_host(msg.born_host), msg.born_port, msg.reconsume_times, 0, keys_of(props))

    def _put_back(self, msg: MessageExt, changes: dict[str, str]) -> MessageExt | None:
        """A copy of the half message at the end of its queue (putBackHalfMsgQueue); the copy as stored."""
        props = {**msg.properties, **changes}
        result = self.broker.store.put_message(self._inner(msg, TRANS_HALF_TOPIC, props))
        if result.status not in STORED:
            log.warning("a half message could not be put back (%s): it is checked in the next round",
                        result.status.name)
            return None
        return self.broker.store.look_message_by_offset(result.wrote_offset)

    def _discard(self, msg: MessageExt) -> None:
        """Checked too many times: moved to TRANS_CHECK_MAX_TIME_TOPIC (resolveDiscardMsg)."""
        props = msg.properties
        result = self.broker.store.put_message(self._inner(msg, TRANS_CHECK_MAX_TIME_TOPIC, dict(props)))
        log.error("half message %s of topic %s (group %s) was checked %s times without a decision: discarded to %s%s",
                  props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX), props.get(PROPERTY_REAL_TOPIC),
                  props.get(PROPERTY_PRODUCER_GROUP), props.get(PROPERTY_TRANSACTION_CHECK_TIMES),
                  TRANS_CHECK_MAX_TIME_TOPIC, "" if result.status in STORED else f" (not stored: {result.status.name})")

    def _send_check(self, half: MessageExt) -> None:
        """CHECK_TRANSACTION_STATE about `half` to a live producer of its group (sendCheckMessage)."""
        b = self.broker
        props = half.properties
        group = props.get(PROPERTY_PRODUCER_GROUP, "")
        half.topic = props.get(PROPERTY_REAL_TOPIC, half.topic)
        half.queue_id = int(props.get(PROPERTY_REAL_QUEUE_ID, "0") or 0)
        if any(front(half) for front in self.fronts):  # a producer of another front (5.x gRPC) took it
            return
        info = b.producer_manager.any_channel(group)
        if info is None:
            now = time.monotonic()
            if now - self._no_producer_logged.get(group, -60.0) >= 60.0:
                self._no_producer_logged[group] = now
                log.warning("transaction check of group %s: no producer of the group is connected (checked again "
                            "every transactionCheckInterval)", group)
            return
        uniq = props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=half.queue_offset, commit_log_offset=half.commit_log_offset, msg_id=uniq,
            transaction_id=uniq, offset_msg_id=half.offset_msg_id)
        # 4.9.8's put-back sets WAIT=false in the properties map it shares with the message it checks: the check
        # carries WAIT=false, the stored copy keeps the half's WAIT
        half.properties_raw = encode_properties({**props, PROPERTY_WAIT_STORE_MSG_OK: "false"}).encode()
        half._properties = None
        if not self.check_state(info, header.to_ext(), half.encode()):
            log.info("transaction check of group %s: the producer's connection is gone", group)
