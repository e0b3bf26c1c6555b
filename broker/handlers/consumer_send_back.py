"""CONSUMER_SEND_MSG_BACK (reference §9.10): a consumer returns a message it failed to consume; it goes to
`%RETRY%<group>` after a delay level, or to `%DLQ%<group>` after max reconsume times."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, PermName, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.headers import ConsumerSendMsgBackRequestHeader
from rocketmq_emulator.protocol.message import (PROPERTY_DELAY_TIME_LEVEL, PROPERTY_ORIGIN_MESSAGE_ID,
                                                PROPERTY_WAIT_STORE_MSG_OK,
                                                PROPERTY_RETRY_TOPIC, PROPERTY_TAGS, encode_properties, pack_host,
                                                tag_hash_code)
from rocketmq_emulator.protocol.topics import dlq_topic, retry_topic
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner, keys_of
from rocketmq_emulator.store.results import STORED


if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext


class ConsumerSendBackProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.CONSUMER_SEND_MSG_BACK, self.consumer_send_msg_back)

    def consumer_send_msg_back(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        b = self.broker
        h = ConsumerSendMsgBackRequestHeader.from_ext(req.ext_fields)
        cfg = b.subscription_group_manager.find(h.group)
        if cfg is None:
            raise BrokerError(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {h.group}")
        if not b.config.broker_permission & PermName.WRITE:  # brokerPermission without write (updateBrokerConfig)
            raise BrokerError(ResponseCode.NO_PERMISSION, f"the broker[{b.config.broker_ip1}] "
                                                          "sending message is forbidden")
        if cfg.retry_queue_nums <= 0:
            return RemotingCommand.response_to(req)
        msg = b.store.look_message_by_offset(h.offset)
        if msg is None:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}")
        props = dict(msg.properties)
        props.setdefault(PROPERTY_RETRY_TOPIC, msg.topic)
        max_times = cfg.retry_max_times
        if req.version >= 121 and h.max_reconsume_times is not None:
            max_times = h.max_reconsume_times
        delay_level = h.delay_level
        if msg.reconsume_times >= max_times or delay_level < 0:
            topic, queue_id = dlq_topic(h.group), 0
            b.topic_config_manager.create_without_template(topic, 1)
            props[PROPERTY_DELAY_TIME_LEVEL] = "0"  # as 4.9.8 stores a message sent back to the DLQ
            delay_level = 0
        else:
            topic = retry_topic(h.group)
            b.topic_config_manager.create_without_template(topic, cfg.retry_queue_nums)
            queue_id = random.randrange(cfg.retry_queue_nums)
            if delay_level == 0:
                delay_level = 3 + msg.reconsume_times
        # 4.9.8 (and 5.x): the stored message's offset msgId (lookMessageByOffset decodes it so), not the header's
        # originMsgId (a client sends its UNIQ_KEY there); a message sent back again keeps its first one
        props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, msg.offset_msg_id)
        props[PROPERTY_WAIT_STORE_MSG_OK] = "false"  # 4.9.8's setWaitStoreMsgOK(false): kept in the record
        tags_code = tag_hash_code(props.get(PROPERTY_TAGS))
        if delay_level > 0:
            topic, queue_id, tags_code = b.schedule_service.park(topic, queue_id, props, delay_level)
        inner = MessageExtBrokerInner(
            topic, queue_id, msg.body, flag=msg.flag, properties_raw=encode_properties(props).encode(),
            tags_code=tags_code, sys_flag=msg.sys_flag & ~0x30, born_timestamp=msg.born_timestamp,
            born_host=pack_host(msg.born_host), born_port=msg.born_port, reconsume_times=msg.reconsume_times + 1,
            keys=keys_of(props))
        result = b.send_core.put_message(inner)
        if result.status not in STORED:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, result.status.name)
        if delay_level > 0:  # parked in SCHEDULE_TOPIC_XXXX: counted as a put there, as 4.9.8 does
            b.stats.parked(topic, queue_id, result.wrote_bytes)
        b.stats.sent_back(h.group, props[PROPERTY_RETRY_TOPIC])
        return RemotingCommand.response_to(req)
