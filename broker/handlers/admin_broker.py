"""Topic and admin requests (reference §9.12, §9.16, §9.17): create/update/delete topics, topic configs and
stats, subscription groups, runtime info, and the manual expiry of commitlog files."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import (SubscriptionGroupConfig, SubscriptionGroupWrapper, TopicConfig,
                                                     TopicFilterType, TopicOffset, TopicStatsTable)
from rocketmq_emulator.protocol.bodies import GroupList, KVTable, MessageQueue, TopicList
from rocketmq_emulator.protocol.emulator_requests import DropConnectionsResponseHeader, EmulatorRequestCode
from rocketmq_emulator.protocol.headers import (CreateTopicRequestHeader, DeleteSubscriptionGroupRequestHeader,
                                                TopicRequestHeader)
from rocketmq_emulator.protocol.java_texts import NULL_KEY_GET, NULL_KEY_REMOVE, topic_filter_type_invalid
from rocketmq_emulator.protocol.transport import DispatchTable, Handler, RemotingConnection
from rocketmq_emulator.store.config import BrokerRole

from rocketmq_emulator.protocol.message import java_hash_set_order

from ..config import Compat
from ..core.connections import drop_connections
from ..core.remarks import NOT_SET_ANY_RESPONSE_CODE
from ..state.topic_config import alter_attributes, validate_topic
from .broker_stats import runtime_info

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext

log = logging.getLogger("rocketmq_emulator.broker")

#: 4.9.8's TopicValidator.SYSTEM_TOPIC_SET before the broker adds its cluster, broker and reply topic names
SYSTEM_TOPIC_SET_4_9 = ("TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "RMQ_SYS_TRANS_HALF_TOPIC",
                        "RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC",
                        "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT")


def _master_only(handler: Handler) -> Handler:
    def refuse(req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        return RemotingCommand.response_to(req, ResponseCode.SYSTEM_ERROR, "Can't modify topic or subscription group "
                                                                           "from slave broker, please execute it from "
                                                                           "master broker.")
    return refuse


class AdminBrokerProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.UPDATE_AND_CREATE_TOPIC, self.update_and_create_topic)
        table.register(RequestCode.DELETE_TOPIC_IN_BROKER, self.delete_topic)
        table.register(RequestCode.GET_ALL_TOPIC_CONFIG, self.get_all_topic_config)
        table.register(RequestCode.GET_TOPIC_STATS_INFO, self.get_topic_stats_info)
        table.register(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER, self.get_system_topic_list)
        table.register(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, self.update_and_create_subscription_group)
        table.register(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, self.get_all_subscription_group)
        table.register(RequestCode.DELETE_SUBSCRIPTIONGROUP, self.delete_subscription_group)
        table.register(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, self.query_topic_consume_by_who)
        table.register(RequestCode.GET_ALL_CONSUMER_OFFSET, self.get_all_consumer_offset)
        table.register(RequestCode.GET_BROKER_RUNTIME_INFO, self.get_broker_runtime_info)
        table.register(RequestCode.DELETE_EXPIRED_COMMITLOG, self.delete_expired_commitlog)
        table.register(EmulatorRequestCode.DROP_CONNECTIONS, self.drop_connections)
        if self.broker.config.store.broker_role is BrokerRole.SLAVE:  # 4.9.8's validateSlave
            table.wrap_handlers(_master_only, only=(RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.DELETE_TOPIC_IN_BROKER,
                                                    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                                                    RequestCode.DELETE_SUBSCRIPTIONGROUP))

    def update_and_create_topic(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = CreateTopicRequestHeader.from_ext(req.ext_fields)
        validate_topic(h.topic)
        tcm = self.broker.topic_config_manager
        if tcm.is_system_topic(h.topic):
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"The topic[{h.topic}] is conflict with system topic.")
        try:
            filter_type = TopicFilterType[h.topic_filter_type]
        except KeyError:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"invalid topicFilterType {h.topic_filter_type!r}",
                              java=topic_filter_type_invalid(h.topic_filter_type)) from None
        if (h.read_queue_nums <= 0 or h.write_queue_nums <= 0) and self.broker.config.compat is not Compat.V4_9:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "readQueueNums and writeQueueNums must be positive")
        existing = tcm.get(h.topic)
        attributes = alter_attributes(existing.attributes if existing is not None else None, h.attributes)
        order = h.order and self.broker.config.compat is not Compat.V4_9  # 4.9.8 never sets a topic's order flag
        tcm.update(TopicConfig(topic_name=h.topic, read_queue_nums=h.read_queue_nums,
                               write_queue_nums=h.write_queue_nums, perm=h.perm, topic_filter_type=filter_type,
                               topic_sys_flag=h.topic_sys_flag or 0, order=order, attributes=attributes))
        return RemotingCommand.response_to(req, remark=NOT_SET_ANY_RESPONSE_CODE)  # 4.9.8 leaves the default remark

    def delete_topic(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        topic = (req.ext_fields or {}).get("topic", "")  # none: 4.9.8's "The specified topic is blank."
        validate_topic(topic)
        if self.broker.topic_config_manager.is_system_topic(topic):
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
        self.broker.delete_topic(topic)
        return RemotingCommand.response_to(req)

    def get_all_topic_config(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        return RemotingCommand.response_to(req, body=self.broker.topic_config_manager.wrapper().encode())

    def get_topic_stats_info(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        if not (req.ext_fields or {}).get("topic"):  # 4.9.8 looks the null name up in its topic table
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "missing required header field `topic`", java=NULL_KEY_GET)
        topic = TopicRequestHeader.from_ext(req.ext_fields).topic
        tc = self.broker.topic_config_manager.get(topic)
        if tc is None:
            raise BrokerError(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = self.broker.store
        table = {}
        for q in range(tc.write_queue_nums):
            max_offset = store.get_max_offset_in_queue(topic, q)
            last = store.get_message_store_timestamp(topic, q, max_offset - 1) if max_offset > 0 else 0
            table[MessageQueue(topic, self.broker.config.broker_name, q)] = TopicOffset(
                min_offset=store.get_min_offset_in_queue(topic, q), max_offset=max_offset,
                last_update_timestamp=max(0, last))
        return RemotingCommand.response_to(req, body=TopicStatsTable(offset_table=table).encode())

    def get_system_topic_list(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """4.9.8's TopicValidator system topic set (whether the topics exist or not), in its HashSet's order."""
        c = self.broker.config
        names = SYSTEM_TOPIC_SET_4_9 + (c.broker_cluster_name, c.broker_name, f"{c.broker_cluster_name}_REPLY_TOPIC")
        return RemotingCommand.response_to(req, body=TopicList(topic_list=java_hash_set_order(names)).encode())

    def update_and_create_subscription_group(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        cfg = SubscriptionGroupConfig.decode(req.body)
        if not cfg.group_name and self.broker.config.compat is not Compat.V4_9:  # 4.9.8 keeps a group named ""
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "groupName is required")
        self.broker.subscription_group_manager.update(cfg)
        return RemotingCommand.response_to(req)

    def get_all_subscription_group(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        sgm = self.broker.subscription_group_manager
        return RemotingCommand.response_to(req, body=SubscriptionGroupWrapper(
            subscription_group_table=dict(sgm.table), data_version=sgm.data_version).encode())

    def delete_subscription_group(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        if not (req.ext_fields or {}).get("groupName"):  # 4.9.8 removes the null name from its group table
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "missing required header field `groupName`",
                              java=NULL_KEY_REMOVE)
        h = DeleteSubscriptionGroupRequestHeader.from_ext(req.ext_fields)
        self.broker.subscription_group_manager.delete(h.group_name)
        if h.remove_offset:
            self.broker.consumer_offset_manager.remove_group(h.group_name)
        return RemotingCommand.response_to(req)

    def query_topic_consume_by_who(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        topic = TopicRequestHeader.from_ext(req.ext_fields).topic
        b = self.broker
        groups = b.consumer_manager.groups_subscribing(topic) | b.consumer_offset_manager.groups_of_topic(topic)
        return RemotingCommand.response_to(req, body=GroupList(group_list=sorted(groups)).encode())

    def get_all_consumer_offset(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        from rocketmq_emulator.protocol.admin_bodies import ConsumerOffsetSerializeWrapper
        return RemotingCommand.response_to(req, body=ConsumerOffsetSerializeWrapper(
            offset_table=self.broker.consumer_offset_manager.offset_table).encode(pretty=False))

    def get_broker_runtime_info(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        return RemotingCommand.response_to(req, body=KVTable(table=runtime_info(self.broker)).encode())

    def delete_expired_commitlog(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        self.broker.store.execute_delete_files_manually()
        return RemotingCommand.response_to(req)

    def drop_connections(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """The emulator's DROP_CONNECTIONS: answer, then close every other client connection of this broker."""
        dropped = drop_connections(self.broker, keep=conn)
        log.info("dropped %d client connection(s) on request from %s", dropped, conn.addr)
        return RemotingCommand.response_to(req, ext_fields=DropConnectionsResponseHeader(
            dropped_connections=dropped).to_ext())
