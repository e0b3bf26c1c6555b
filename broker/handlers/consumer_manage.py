"""QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET, GET_MIN/MAX_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP,
GET_EARLIEST_MSG_STORETIME (reference §9.7, §9.13).

QUERY_CONSUMER_OFFSET follows 4.9.x exactly: with no stored offset, a queue whose min offset is still 0 and
whose first message is not "on disk" answers 0 (so a new group reads the whole young queue even with
CONSUME_FROM_LAST_OFFSET); otherwise QUERY_NOT_FOUND, and the client applies its ConsumeFromWhere rule. A 5.x
request with `setZeroIfNotFound=false`, and every request with `newGroupOffset=strict`, gets QUERY_NOT_FOUND
whenever no offset is stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.headers import (GetEarliestMsgStoretimeResponseHeader, OffsetResponseHeader,
                                                QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader,
                                                QueueRequestHeader, SearchOffsetRequestHeader,
                                                UpdateConsumerOffsetRequestHeader)
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

from ..config import Compat

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext


class ConsumerManageProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.QUERY_CONSUMER_OFFSET, self.query_consumer_offset)
        table.register(RequestCode.UPDATE_CONSUMER_OFFSET, self.update_consumer_offset)
        table.register(RequestCode.GET_MAX_OFFSET, self.get_max_offset)
        table.register(RequestCode.GET_MIN_OFFSET, self.get_min_offset)
        table.register(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, self.search_offset_by_timestamp)
        table.register(RequestCode.GET_EARLIEST_MSG_STORETIME, self.get_earliest_msg_storetime)

    def query_consumer_offset(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = QueryConsumerOffsetRequestHeader.from_ext(req.ext_fields)
        # setZeroIfNotFound=false (5.x clients) asks for QUERY_NOT_FOUND; 4.9.8 has no such field
        zero = h.set_zero_if_not_found is not False or self.broker.config.compat is Compat.V4_9
        offset = self.broker.consume_core.committed_or_start(h.consumer_group, h.topic, h.queue_id,
                                                             zero_if_not_found=zero)
        if offset is not None:
            return RemotingCommand.response_to(req, ext_fields=QueryConsumerOffsetResponseHeader(offset=offset).to_ext())
        return RemotingCommand.response_to(req, ResponseCode.QUERY_NOT_FOUND,
                                           "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")

    def update_consumer_offset(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """(With write-through, broker/core/write_through.py holds the answer until the commit is durable.)"""
        h = UpdateConsumerOffsetRequestHeader.from_ext(req.ext_fields)
        gi = self.broker.consumer_manager.get(h.consumer_group)
        # who, for the dashboard's offset history: a consumer of the group, or a tool (mqadmin, importOffsets)
        who = conn.peer if gi is not None and conn in gi.channels else f"{conn.peer} (admin: not a consumer)"
        self.broker.consumer_offset_manager.commit_offset(who, h.consumer_group, h.topic, h.queue_id,
                                                          h.commit_offset)
        return RemotingCommand.response_to(req)

    def get_max_offset(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = QueueRequestHeader.from_ext(req.ext_fields)
        offset = self.broker.store.get_max_offset_in_queue(h.topic, h.queue_id)
        return RemotingCommand.response_to(req, ext_fields=OffsetResponseHeader(offset=offset).to_ext())

    def get_min_offset(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = QueueRequestHeader.from_ext(req.ext_fields)
        offset = self.broker.store.get_min_offset_in_queue(h.topic, h.queue_id)
        return RemotingCommand.response_to(req, ext_fields=OffsetResponseHeader(offset=offset).to_ext())

    def search_offset_by_timestamp(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = SearchOffsetRequestHeader.from_ext(req.ext_fields)
        offset = self.broker.store.get_offset_in_queue_by_time(h.topic, h.queue_id, h.timestamp)
        return RemotingCommand.response_to(req, ext_fields=OffsetResponseHeader(offset=offset).to_ext())

    def get_earliest_msg_storetime(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = QueueRequestHeader.from_ext(req.ext_fields)
        ts = self.broker.store.get_earliest_message_time(h.topic, h.queue_id)
        return RemotingCommand.response_to(req, ext_fields=GetEarliestMsgStoretimeResponseHeader(timestamp=ts).to_ext())
