"""HEART_BEAT, UNREGISTER_CLIENT, CHECK_CLIENT_CONFIG, consumer lists and connections, queue locks
(reference §9.8, §9.9, §9.17)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import (CheckClientRequestBody, Connection, ConsumerConnection,
                                               GetConsumerListByGroupResponseBody, HeartbeatData, LockBatchRequestBody,
                                               LockBatchResponseBody, ProducerConnection, UnlockBatchRequestBody)
from rocketmq_emulator.protocol.codes import LANGUAGE_BY_NAME, LanguageCode
from rocketmq_emulator.protocol.headers import (GetProducerConnectionListRequestHeader, GroupRequestHeader,
                                                UnregisterClientRequestHeader)
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

from ..core.filter.consumer_filter import SQL92, compile_problem
from ..state.client_manager import ClientChannelInfo
from ..state.lock_manager import java_hash_set_order

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext

log = logging.getLogger("rocketmq_emulator.clients")
#: CHECK_CLIENT_CONFIG of an expression type no filter knows: 4.9.8 answers the JVM's text of the
#: NullPointerException it runs into (FilterFactory.get(type) is null)
_NO_FILTER_OF_TYPE = ('Cannot invoke "org.apache.rocketmq.filter.FilterSpi.compile(String)" because the return value '
                      'of "org.apache.rocketmq.filter.FilterFactory.get(String)" is null')


class ClientManageProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.HEART_BEAT, self.heart_beat)
        table.register(RequestCode.UNREGISTER_CLIENT, self.unregister_client)
        table.register(RequestCode.CHECK_CLIENT_CONFIG, self.check_client_config)
        table.register(RequestCode.GET_CONSUMER_LIST_BY_GROUP, self.get_consumer_list_by_group)
        table.register(RequestCode.GET_CONSUMER_CONNECTION_LIST, self.get_consumer_connection_list)
        table.register(RequestCode.GET_PRODUCER_CONNECTION_LIST, self.get_producer_connection_list)
        table.register(RequestCode.LOCK_BATCH_MQ, self.lock_batch_mq)
        table.register(RequestCode.UNLOCK_BATCH_MQ, self.unlock_batch_mq)

    def heart_beat(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        b = self.broker
        data = HeartbeatData.decode(req.body)
        conn.attributes["client_id"] = data.client_id
        conn.attributes["language"] = req.language
        conn.attributes["version"] = req.version
        for cd in data.consumer_data_set:
            group_cfg = b.subscription_group_manager.find(cd.group_name)
            if group_cfg is not None:
                b.topic_config_manager.ensure_group_retry_topic(cd.group_name, group_cfg.retry_queue_nums)
            notify = b.config.notify_consumer_ids_changed_enable and (
                group_cfg is None or group_cfg.notify_consumer_ids_changed_enable)
            info = ClientChannelInfo(conn, data.client_id, req.language, req.version)
            b.consumer_manager.register(cd.group_name, info, cd.consume_type, cd.message_model,
                                        cd.consume_from_where, list(cd.subscription_data_set), notify)
            if b.config.enable_property_filter:  # SQL92 subscriptions compiled once per version (ConsumerFilterManager)
                for sub in cd.subscription_data_set:
                    if sub.expression_type == SQL92:
                        b.consumer_filter_manager.register(cd.group_name, sub.topic, sub.sub_string, sub.sub_version)
        for pd in data.producer_data_set:
            b.producer_manager.register(pd.group_name, ClientChannelInfo(conn, data.client_id, req.language,
                                                                         req.version))
        return RemotingCommand.response_to(req)

    def unregister_client(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = UnregisterClientRequestHeader.from_ext(req.ext_fields)
        b = self.broker
        if h.producer_group:
            b.producer_manager.unregister(h.producer_group, conn)
        if h.consumer_group:
            cfg = b.subscription_group_manager.table.get(h.consumer_group)
            notify = b.config.notify_consumer_ids_changed_enable and (cfg is None or
                                                                      cfg.notify_consumer_ids_changed_enable)
            b.consumer_manager.unregister(h.consumer_group, conn, notify)
        return RemotingCommand.response_to(req)

    def check_client_config(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        body = CheckClientRequestBody.decode(req.body) if req.body else CheckClientRequestBody()
        sub = body.subscription_data
        if sub is not None and sub.expression_type not in ("", "TAG"):
            if not self.broker.config.enable_property_filter:
                raise BrokerError(ResponseCode.SYSTEM_ERROR,
                                  f"The broker does not support consumer to filter message by {sub.expression_type}")
            if sub.expression_type != SQL92:  # 4.9.8's text: FilterFactory has no filter of that type
                raise BrokerError(ResponseCode.SUBSCRIPTION_PARSE_FAILED, _NO_FILTER_OF_TYPE)
            problem = compile_problem(sub.sub_string)
            if problem is not None:
                log.info("client %s: SQL92 subscription of %s refused: %s", body.client_id, sub.topic, problem)
                raise BrokerError(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(problem), java=problem.java)
        return RemotingCommand.response_to(req)

    def get_consumer_list_by_group(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        group = GroupRequestHeader.from_ext(req.ext_fields).consumer_group
        gi = self.broker.consumer_manager.get(group)
        if gi is None or not gi.channels:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}")
        return RemotingCommand.response_to(
            req, body=GetConsumerListByGroupResponseBody(consumer_id_list=gi.client_ids()).encode())

    def get_consumer_connection_list(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        group = GroupRequestHeader.from_ext(req.ext_fields).consumer_group
        gi = self.broker.consumer_manager.get(group)
        if gi is None:
            raise BrokerError(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        body = ConsumerConnection(
            connection_set=[_connection(info) for info in gi.channels.values()],
            consume_type=gi.consume_type, message_model=gi.message_model, consume_from_where=gi.consume_from_where,
            subscription_table=dict(gi.subscription_table))
        return RemotingCommand.response_to(req, body=body.encode())

    def get_producer_connection_list(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        group = GetProducerConnectionListRequestHeader.from_ext(req.ext_fields).producer_group
        channels = self.broker.producer_manager.groups.get(group)
        if not channels:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        body = ProducerConnection(connection_set=[_connection(info) for info in channels.values()])
        return RemotingCommand.response_to(req, body=body.encode())

    def lock_batch_mq(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        body = LockBatchRequestBody.decode(req.body)
        granted = self.broker.lock_manager.try_lock_batch(body.consumer_group, set(body.mq_set), body.client_id)
        ordered = java_hash_set_order(granted, len(body.mq_set))  # written in the Java HashSet's order, as 4.9.8
        answer = LockBatchResponseBody(lock_ok_mq_set=ordered)  # type: ignore[arg-type]  # the set as an ordered list
        return RemotingCommand.response_to(req, body=answer.encode())

    def unlock_batch_mq(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        body = UnlockBatchRequestBody.decode(req.body)
        self.broker.lock_manager.unlock_batch(body.consumer_group, set(body.mq_set), body.client_id)
        return RemotingCommand.response_to(req)


def _connection(info: ClientChannelInfo) -> Connection:
    return Connection(client_addr=info.connection.peer, client_id=info.client_id,
                      language=LANGUAGE_BY_NAME.get(info.language, LanguageCode.OTHER), version=info.version)
