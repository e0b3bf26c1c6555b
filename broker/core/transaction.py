"""Transactional messages (4.9.8's TransactionalMessageServiceImpl, TransactionalMessageBridge and
EndTransactionProcessor): one core for every front.

* A half message (TRAN_MSG=true) is put by the send path (send_inner.py) to `RMQ_SYS_TRANS_HALF_TOPIC` queue 0,
  its real topic and queue in REAL_TOPIC / REAL_QID, its sys flag's transaction bits cleared: consumers of the
  real topic never see it.
* `end_transaction` (END_TRANSACTION): commit puts the real message (REAL_TOPIC/REAL_QID restored, TRAN_MSG
  removed, sys flag COMMIT, preparedTransactionOffset = the half's commitlog offset, the same UNIQ_KEY so the
  client's msgId is unchanged); rollback puts nothing; both then write an op record to
  `RMQ_SYS_TRANS_OP_HALF_TOPIC` (body: the half's queue offset, tag "d"), which is how the check service
  (transaction_check.py) knows the half message is decided. Half and op topics are ordinary stored topics, so all
  of this survives a restart or a kill -9.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import ResponseCode
from rocketmq_emulator.protocol.codes import TRANSACTION_NOT_TYPE, TRANSACTION_TYPE_MASK, MessageSysFlag
from rocketmq_emulator.protocol.headers import EndTransactionRequestHeader
from rocketmq_emulator.protocol.message import (PROPERTY_PRODUCER_GROUP, PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC,
                                                PROPERTY_TAGS, PROPERTY_WAIT_STORE_MSG_OK, MessageExt,
                                                encode_properties, pack_host, tag_hash_code)
from rocketmq_emulator.protocol.topics import TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner, keys_of
from rocketmq_emulator.store.results import STORED, PutMessageResult

from .remarks import NOT_SET_ANY_RESPONSE_CODE

if TYPE_CHECKING:
    from .broker_state import BrokerState

log = logging.getLogger("rocketmq_emulator.transaction")

COMMIT = int(MessageSysFlag.TRANSACTION_COMMIT_TYPE)
ROLLBACK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
#: the op record's tag: the half message at the body's queue offset is decided (TransactionalMessageUtil.REMOVETAG)
REMOVE_TAG = "d"


class TransactionalMessageService:
    def __init__(self, broker: BrokerState) -> None:
        self.broker = broker

    def half_message(self, msg: MessageExtBrokerInner, props: dict[str, str]) -> None:
        """Turn a message being sent into its half message (parseHalfMessageInner); `props` are its properties,
        re-encoded here. The half topic is created with its first message, as upstream does."""
        self._ensure_topic(TRANS_HALF_TOPIC)
        props[PROPERTY_REAL_TOPIC] = msg.topic
        props[PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
        msg.topic = TRANS_HALF_TOPIC
        msg.queue_id = 0
        msg.sys_flag &= ~TRANSACTION_TYPE_MASK
        msg.properties_raw = encode_properties(props).encode()

    def _ensure_topic(self, topic: str) -> None:
        tcm = self.broker.topic_config_manager
        if tcm.get(topic) is None:
            tcm.create_without_template(topic, 1)

    def end_transaction(self, h: EndTransactionRequestHeader, producer: str) -> tuple[int, str | None] | None:
        """Commit or roll back the half message the header names: (response code, remark), or None when there is
        nothing to answer (the producer does not know the state yet)."""
        state = h.commit_or_rollback
        if state == TRANSACTION_NOT_TYPE or state not in (COMMIT, ROLLBACK):
            (log.debug if h.from_transaction_check else log.info)(
                "producer %s ends transaction %s with state %d (%s): left for the check-back", producer, h.msg_id,
                state, "a check's answer" if h.from_transaction_check else "unknown")
            return None
        half = self.broker.store.look_message_by_offset(h.commit_log_offset)
        if half is None or half.topic != TRANS_HALF_TOPIC:
            return ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed"
        problem = _check_prepared(half, h)
        if problem is not None:
            return ResponseCode.SYSTEM_ERROR, problem
        if state == COMMIT:
            result = self.broker.send_core.put_message(self._real_message(half, h))
            if result.status not in STORED:
                log.warning("transaction %s: the committed message was not stored: %s", h.msg_id, result.status.name)
                return ResponseCode.SYSTEM_ERROR, f"commit of the prepared message failed: {result.status.name}"
            self.put_op(half)
            return ResponseCode.SUCCESS, None
        self.put_op(half)
        return ResponseCode.SUCCESS, NOT_SET_ANY_RESPONSE_CODE  # 4.9.8 answers a rollback with the default remark

    def _real_message(self, half: MessageExt, h: EndTransactionRequestHeader) -> MessageExtBrokerInner:
        """endMessageTransaction: the half message as its real topic and queue, committed."""
        props = half.properties  # stored as they are, REAL_TOPIC, REAL_QID and TRAN_MSG included: 4.9.8 writes the
        topic = props.get(PROPERTY_REAL_TOPIC, "")  # half's properties, then clears those from the map only
        queue_id = int(props.get(PROPERTY_REAL_QUEUE_ID, "0") or 0)
        return MessageExtBrokerInner(
            topic, queue_id, half.body, half.flag, encode_properties(props).encode(),
            tag_hash_code(props.get(PROPERTY_TAGS)), (half.sys_flag & ~TRANSACTION_TYPE_MASK) | COMMIT,
            half.born_timestamp, pack_host(half.born_host), half.born_port, half.reconsume_times,
            h.commit_log_offset, keys_of(props))

    def put_op(self, half: MessageExt) -> PutMessageResult:
        """The op record of a decided half message (putOpMessage with REMOVETAG)."""
        b = self.broker  # the op topic gets no topic config: 4.9.8 writes it straight to the store (a pull of it
        props = {PROPERTY_TAGS: REMOVE_TAG, PROPERTY_WAIT_STORE_MSG_OK: "true"}  # is answered TOPIC_NOT_EXIST); WAIT
        # as Java's Message constructor sets it
        op = MessageExtBrokerInner(TRANS_OP_HALF_TOPIC, half.queue_id, str(half.queue_offset).encode(), 0,
                                   encode_properties(props).encode(), tag_hash_code(REMOVE_TAG), 0,
                                   time.time_ns() // 1_000_000, b.store_host_packed, b.listen_port)
        result = b.store.put_message(op)
        if result.status not in STORED:
            log.warning("the op record of half message %d was not stored: %s", half.queue_offset, result.status.name)
        return result


def _check_prepared(half: MessageExt, h: EndTransactionRequestHeader) -> str | None:
    """EndTransactionProcessor.checkPrepareMessage: the header must name the half message exactly."""
    if half.properties.get(PROPERTY_PRODUCER_GROUP) != h.producer_group:
        return "The producer group wrong"
    if half.queue_offset != h.tran_state_table_offset:
        return "The transaction state table offset wrong"
    if half.commit_log_offset != h.commit_log_offset:
        return "The commit log offset wrong"
    return None
