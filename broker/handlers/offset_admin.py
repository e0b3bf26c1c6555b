"""Admin requests about consumer offsets: INVOKE_BROKER_TO_RESET_OFFSET (222), INVOKE_BROKER_TO_GET_CONSUMER_STATUS
(223), GET_CONSUME_STATS (with 5.x's pull offset, for ready and inflight), and the emulator's EXPIRE_FILES_NOW.

GET_CONSUME_STATS covers the topics the group has offsets for and, unlike 4.9.x, the topics an online group
subscribes to (so progress shows before the first commit). Per queue: `brokerOffset` (max), `consumerOffset` (committed; for a broadcasting group the
minimum over its live clients), `pullOffset` (the next offset the group's last pull was given, never below the
committed one) and `lastTimestamp`. Inflight = pullOffset − consumerOffset, ready = brokerOffset − pullOffset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import (GetConsumerStatusBody, ResetOffsetBody, TopicOffset,
                                                     TopicStatsTable)
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.emulator_requests import (EmulatorRequestCode, ExpireFilesNowRequestHeader,
                                                          ExpireFilesNowResponseHeader)
from rocketmq_emulator.protocol.headers import (GetConsumerStatusRequestHeader, GetConsumeStatsRequestHeader,
                                                ResetOffsetRequestHeader)
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

from ..config import Compat
from ..core.broker2client import ResetRequest
from ..core.consume_stats import consume_stats
from ..core.remarks import NOT_SET_ANY_RESPONSE_CODE

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext


class OffsetAdminProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.reset_offset)
        table.register(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, self.get_consumer_status)
        table.register(RequestCode.GET_CONSUME_STATS, self.get_consume_stats)
        table.register(EmulatorRequestCode.EXPIRE_FILES_NOW, self.expire_files_now)

    def reset_offset(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = ResetOffsetRequestHeader.from_ext(req.ext_fields)
        offset = h.offset if h.offset is not None and h.offset >= 0 else None
        table = self.broker.broker2client.reset_offset(ResetRequest(
            h.topic, h.group, h.timestamp, h.is_force, queue_id=h.queue_id if h.queue_id is not None and
            h.queue_id >= 0 else None, offset=offset, for_cpp=str(req.language).upper() == "CPP"))
        return RemotingCommand.response_to(req, remark=NOT_SET_ANY_RESPONSE_CODE,  # 4.9.8's remark of a reset done
                                           body=ResetOffsetBody(offset_table=table).encode())

    async def get_consumer_status(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = GetConsumerStatusRequestHeader.from_ext(req.ext_fields)
        tables = await self.broker.broker2client.get_consumer_status(h.topic, h.group, h.client_addr)
        # upstream's answer keeps the remark its response was created with
        return RemotingCommand.response_to(req, remark="not set any response code",
                                           body=GetConsumerStatusBody(consumer_table=tables).encode())

    def get_consume_stats(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = GetConsumeStatsRequestHeader.from_ext(req.ext_fields)
        compat_4_9 = self.broker.config.compat is Compat.V4_9
        stats = consume_stats(self.broker, h.consumer_group, h.topic, subscribed=not compat_4_9)
        if compat_4_9:  # 4.9.8's OffsetWrapper has no pullOffset (5.x added it)
            for wrapper in stats.offset_table.values():
                wrapper.pull_offset = None
        return RemotingCommand.response_to(req, body=stats.encode())

    def expire_files_now(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = ExpireFilesNowRequestHeader.from_ext(req.ext_fields)
        store = self.broker.store
        topic = h.topic
        tc = self.broker.topic_config_manager.get(topic) if topic is not None else None
        if topic is not None and tc is None:
            raise BrokerError(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        deleted = store.expire_files_now(roll=True)
        body = b""
        if topic is not None and tc is not None:
            body = TopicStatsTable(offset_table={
                MessageQueue(topic, self.broker.config.broker_name, q): TopicOffset(
                    min_offset=max(0, store.get_min_offset_in_queue(topic, q)),
                    max_offset=max(0, store.get_max_offset_in_queue(topic, q)), last_update_timestamp=0)
                for q in range(tc.write_queue_nums)}).encode()
        return RemotingCommand.response_to(req, ext_fields=ExpireFilesNowResponseHeader(deleted_files=deleted).to_ext(),
                                           body=body)
