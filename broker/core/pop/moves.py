"""Where un-acked popped messages go (PopReviveService's part): back into the group's pop retry topic with their
reconsume times + 1, or into the group's DLQ once delivered its max times (retryMaxTimes + 1)."""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol.message import (PROPERTY_DELAY_TIME_LEVEL, PROPERTY_ORIGIN_MESSAGE_ID, PROPERTY_RETRY_TOPIC,
                                                PROPERTY_WAIT_STORE_MSG_OK, MessageExt)
from rocketmq_emulator.protocol.pop_headers import PROPERTY_POP_CK
from rocketmq_emulator.protocol.topics import dlq_topic, origin_topic, pop_retry_topic
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner
from rocketmq_emulator.store.results import STORED

if TYPE_CHECKING:
    from ..broker_state import BrokerState

log = logging.getLogger("rocketmq_emulator.pop")

#: DLQ properties 5.x sets on a message moved there
PROPERTY_DLQ_ORIGIN_TOPIC = "DLQ_ORIGIN_TOPIC"
PROPERTY_DLQ_ORIGIN_MESSAGE_ID = "DLQ_ORIGIN_MESSAGE_ID"


class MessageMoves:
    def __init__(self, broker: BrokerState) -> None:
        self.broker = broker

    def max_attempts(self, group: str) -> int:
        cfg = self.broker.subscription_group_manager.find(group)
        return (cfg.retry_max_times if cfg is not None else 16) + 1

    def message_at(self, topic: str, queue_id: int, offset: int) -> MessageExt | None:
        got = self.broker.store.get_message("", topic, queue_id, offset, 1)
        if got is None or not got.messages or got.queue_offsets[0] != offset:
            return None
        return MessageExt.decode(got.messages[0])

    def retry(self, group: str, msg: MessageExt) -> bool:
        if msg.reconsume_times + 1 >= self.max_attempts(group):
            return self.to_dlq(group, msg)
        props = dict(msg.properties)
        real = origin_topic(msg.topic, props)
        props[PROPERTY_RETRY_TOPIC] = real
        props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
        props.pop(PROPERTY_POP_CK, None)
        cfg = self.broker.subscription_group_manager.find(group)
        queues = max(1, cfg.retry_queue_nums if cfg is not None else 1)
        topic = pop_retry_topic(group, real)
        self.broker.topic_config_manager.create_without_template(topic, queues)
        return self._put(msg, topic, random.randrange(queues), props, msg.reconsume_times + 1)

    def to_dlq(self, group: str, msg: MessageExt) -> bool:
        props = dict(msg.properties)
        real = origin_topic(msg.topic, props)
        props.setdefault(PROPERTY_DLQ_ORIGIN_TOPIC, real)
        props.setdefault(PROPERTY_DLQ_ORIGIN_MESSAGE_ID, msg.msg_id)
        props.setdefault(PROPERTY_RETRY_TOPIC, real)
        props.pop(PROPERTY_POP_CK, None)
        topic = dlq_topic(group)
        self.broker.topic_config_manager.create_without_template(topic, 1)
        log.info("%s: message %s of %s delivered %d times, moved to %s", group, msg.msg_id, real,
                 msg.reconsume_times + 1, topic)
        return self._put(msg, topic, 0, props, msg.reconsume_times + 1)

    def send_back_to_dlq(self, group: str, msg: MessageExt) -> bool:
        """The 5.x proxy's ForwardMessageToDeadLetterQueue: a CONSUMER_SEND_MSG_BACK with delay level -1, so the
        DLQ message is stored as a send-back stores it (RETRY_TOPIC, ORIGIN_MESSAGE_ID, DELAY=0, WAIT=false; no
        DLQ_ORIGIN_* properties: seen on 5.3.3)."""
        props = dict(msg.properties)
        props.setdefault(PROPERTY_RETRY_TOPIC, msg.topic)
        props[PROPERTY_DELAY_TIME_LEVEL] = "0"
        props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, msg.offset_msg_id)
        props[PROPERTY_WAIT_STORE_MSG_OK] = "false"
        props.pop(PROPERTY_POP_CK, None)
        topic = dlq_topic(group)
        self.broker.topic_config_manager.create_without_template(topic, 1)
        return self._put(msg, topic, 0, props, msg.reconsume_times + 1)

    def _put(self, msg: MessageExt, topic: str, queue_id: int, props: dict[str, str], reconsume_times: int) -> bool:
        inner = MessageExtBrokerInner.rebuilt(msg, topic, queue_id, props, reconsume_times=reconsume_times)
        return self.broker.send_core.put_message(inner).status in STORED
