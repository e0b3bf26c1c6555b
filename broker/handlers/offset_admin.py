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
from rocketmq_emulator.protocol.admin_bodies import (ConsumeStats, GetConsumerStatusBody, OffsetWrapper,
                                                     ResetOffsetBody, TopicOffset, TopicStatsTable)
from rocketmq_emulator.protocol.bodies import MessageModel, MessageQueue
from rocketmq_emulator.protocol.emulator_requests import (EmulatorRequestCode, ExpireFilesNowRequestHeader,
                                                          ExpireFilesNowResponseHeader)
from rocketmq_emulator.protocol.headers import (GetConsumerStatusRequestHeader, GetConsumeStatsRequestHeader,
                                                ResetOffsetRequestHeader)
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

from ..broker2client import ResetRequest
from ..consumer_offset import BROADCAST_SUFFIX

if TYPE_CHECKING:
    from rocketmq_emulator.store.message_store import MessageStore

    from ..broker_context import BrokerContext


def last_consumed_timestamp(store: MessageStore, topic: str, queue_id: int, consumer_offset: int) -> int:
    """The store time of the last message a group consumed in the queue (the one before its committed offset;
    0 when it consumed none): consume stats' lastTimestamp."""
    if consumer_offset < 1:
        return 0
    return max(0, store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1))


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
        return RemotingCommand.response_to(req, body=ResetOffsetBody(offset_table=table).encode())

    async def get_consumer_status(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = GetConsumerStatusRequestHeader.from_ext(req.ext_fields)
        tables = await self.broker.broker2client.get_consumer_status(h.topic, h.group, h.client_addr)
        return RemotingCommand.response_to(req, body=GetConsumerStatusBody(consumer_table=tables).encode())

    def get_consume_stats(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        b = self.broker
        h = GetConsumeStatsRequestHeader.from_ext(req.ext_fields)
        group = h.consumer_group
        gi = b.consumer_manager.get(group)
        broadcasting = (gi.message_model == MessageModel.BROADCASTING) if gi is not None \
            else b.broadcast_offsets.knows_group(group)
        offsets = b.consumer_offset_manager
        stored_as = group + BROADCAST_SUFFIX if broadcasting else group
        topics = {h.topic} if h.topic else offsets.topics_of_group(stored_as)
        if not h.topic and gi is not None:  # an online group's topics show before anything is committed
            topics |= set(gi.subscription_table)
        if broadcasting and not h.topic:
            topics |= {t for t, g in b.broadcast_offsets.clients if g == group}
        table = {}
        online = gi is not None and bool(gi.channels)
        consume_tps = 0.0
        for topic in sorted(topics):
            tc = b.topic_config_manager.get(topic)
            if tc is None:
                continue
            if gi is not None and gi.subscription_table and topic not in gi.subscription_table:
                continue
            consume_tps += b.stats.group_get_tps(group, topic)  # messages pulled per second, last minute
            for q in range(tc.read_queue_nums):
                broker_offset = max(0, b.store.get_max_offset_in_queue(topic, q))
                if broadcasting:
                    consumer_offset = max(0, b.broadcast_offsets.group_offset(topic, group, q))
                    pulled = max([consumer_offset] + [c.offsets[q] for _, c in b.broadcast_offsets.live(topic, group)
                                                      if q in c.offsets and online])
                else:
                    consumer_offset = max(0, offsets.query_offset(group, topic, q))
                    # nothing is in flight without a consumer: what the last one pulled ahead of its commit is
                    # delivered again from the committed offset to the next one
                    pulled = max(consumer_offset, offsets.query_pull_offset(group, topic, q)) if online \
                        else consumer_offset
                    unacked = b.pop_service.first_unacked(group, topic, q)
                    if unacked is not None:  # a POP group: popped and not acked is in flight, from the first
                        pulled, consumer_offset = consumer_offset, min(unacked, consumer_offset)
                table[MessageQueue(topic, b.config.broker_name, q)] = OffsetWrapper(
                    broker_offset=broker_offset, consumer_offset=consumer_offset,
                    last_timestamp=last_consumed_timestamp(b.store, topic, q, consumer_offset),
                    pull_offset=min(pulled, max(broker_offset, consumer_offset)))
        return RemotingCommand.response_to(req, body=ConsumeStats(consume_tps=consume_tps,
                                                                  offset_table=table).encode())

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
