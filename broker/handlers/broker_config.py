"""Broker configuration, consume-queue administration and ACL requests, answered as a 4.9.8 broker does:

* GET_BROKER_CONFIG (26) / UPDATE_BROKER_CONFIG (25): broker/core/runtime_config.py;
* QUERY_CONSUME_QUEUE (321), CLEAN_EXPIRED_CONSUMEQUEUE (306), CLEAN_UNUSED_TOPIC (316): store/queue_admin.py;
* the ACL requests of a broker with `aclEnable=false` (with it true, broker/handlers/acl_admin.py answers them
  and broker/core/acl/ checks every request): 4.9.8 has no access validator then, so UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51) and
  UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53) fail with their *_FAILED codes and no remark, and
  GET_BROKER_CLUSTER_ACL_INFO (52), which 4.9.8 leaves unanswered, gets SYSTEM_ERROR saying ACL is disabled.

With ACL off, requests signed by an ACL client (AccessKey, Signature ext fields) are served as any other.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.consume_queue_bodies import ConsumeQueueData, QueryConsumeQueueResponseBody
from rocketmq_emulator.protocol.headers import GetBrokerConfigResponseHeader, QueryConsumeQueueRequestHeader
from rocketmq_emulator.protocol.java_texts import ACL_VALIDATOR_MISSING
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection
from rocketmq_emulator.store.queue_admin import clean_expired_consume_queues, clean_unused_topics, read_units

from ..core.remarks import NOT_SET_ANY_RESPONSE_CODE

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext

log = logging.getLogger("rocketmq_emulator.broker")

_ACL_FAILED: dict[int, ResponseCode] = {
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED,
    RequestCode.DELETE_ACL_CONFIG: ResponseCode.DELETE_ACL_CONFIG_FAILED,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
}


class BrokerConfigProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.GET_BROKER_CONFIG, self.get_broker_config)
        table.register(RequestCode.UPDATE_BROKER_CONFIG, self.update_broker_config)
        table.register(RequestCode.QUERY_CONSUME_QUEUE, self.query_consume_queue)
        table.register(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, self.clean_expired_consume_queue)
        table.register(RequestCode.CLEAN_UNUSED_TOPIC, self.clean_unused_topic)
        table.register(list(_ACL_FAILED), self.acl_update)
        table.register(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, self.acl_version)

    # -- configuration ------------------------------------------------------------------------------
    def get_broker_config(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        cfg = self.broker.configuration
        return RemotingCommand.response_to(
            req, body=cfg.properties_text().encode("utf-8"),
            ext_fields=GetBrokerConfigResponseHeader(version=cfg.data_version.encode().decode()).to_ext())

    def update_broker_config(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        keys = self.broker.configuration.update(req.body)
        if keys:
            log.info("%s: config updated by %s: %s", self.broker.config.broker_name, conn.addr, ", ".join(
                f"{k}={self.broker.configuration.properties().get(k)}" for k in keys))
        return RemotingCommand.response_to(req)

    # -- consume queues -----------------------------------------------------------------------------
    def query_consume_queue(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = QueryConsumeQueueRequestHeader.from_ext(req.ext_fields)
        store = self.broker.store
        cq = store.find_consume_queue(h.topic, h.queue_id)
        if cq is None and (h.topic, h.queue_id) not in store.looked_up_queues:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"{h.queue_id}@{h.topic} is not exist!")
        body = QueryConsumeQueueResponseBody(max_queue_index=cq.max_offset_in_queue if cq is not None else 0,
                                             min_queue_index=cq.min_offset_in_queue if cq is not None else 0)
        if h.consumer_group is not None:
            group = self.broker.consumer_manager.get(h.consumer_group)
            sub = group.subscription_table.get(h.topic) if group is not None else None
            body.subscription_data = sub
            body.filter_data = (f"{h.consumer_group}@{h.topic} is not online!" if sub is None
                                else "null")  # JSON of no SQL92 filter data: this broker filters by tag
        units = read_units(cq, h.index, h.count) if cq is not None else None
        if units is None:  # 4.9.8 answers SUCCESS without a body here (mqadmin then fails on it)
            return RemotingCommand.response_to(req, remark=f"Index {h.index} of {h.queue_id}@{h.topic} is not exist!")
        body.queue_data = [ConsumeQueueData(physic_offset=phy, physic_size=size, tags_code=tags)
                           for phy, size, tags in units]
        return RemotingCommand.response_to(req, remark=NOT_SET_ANY_RESPONSE_CODE, body=body.encode())

    def clean_expired_consume_queue(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        count = clean_expired_consume_queues(self.broker.store)
        log.info("%s: cleanExpiredCQ from %s: %d consume queue(s) destroyed", self.broker.config.broker_name,
                 conn.addr, count)
        return RemotingCommand.response_to(req)

    def clean_unused_topic(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        count = clean_unused_topics(self.broker.store, set(self.broker.topic_config_manager.table))
        log.info("%s: cleanUnusedTopic from %s: %d consume queue(s) destroyed", self.broker.config.broker_name,
                 conn.addr, count)
        return RemotingCommand.response_to(req)

    # -- ACL (disabled, as on a broker with aclEnable=false) ----------------------------------------------------
    def acl_update(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """ACL is never enforced here: the *_FAILED code, as a 4.9.8 broker with ACL off answers."""
        code = RequestCode(req.code)
        raise BrokerError(_ACL_FAILED[code], "ACL is disabled on this broker (aclEnable=false)",
                          java=ACL_VALIDATOR_MISSING[code.name])

    def acl_version(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """A 4.9.8 broker with ACL off leaves this unanswered (the caller times out); this broker answers every
        request, so it says why instead."""
        return RemotingCommand.response_to(req, ResponseCode.SYSTEM_ERROR,
                                           "ACL is disabled on this broker (aclEnable=false)")
