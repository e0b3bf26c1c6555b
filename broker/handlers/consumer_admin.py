"""Admin requests answered by a group's clients or about them (4.9.x `AdminBrokerProcessor`):

* GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309): relayed to the client connection of the
  named client id (`callConsumer`: the admin's header fields and body go to the client unchanged, except that
  CONSUME_MESSAGE_DIRECTLY gets the broker's name and the stored message as its body), and the client's answer
  goes back to the admin as it is. A client id that is not online is SYSTEM_ERROR "The Consumer <G> <ID> not
  online"; no answer within 10 s is CONSUME_MSG_TIMEOUT; a lost connection is SYSTEM_ERROR.
* GET_ALL_PRODUCER_INFO (328): every producer connection by group (`ProducerTableInfo`), for mqadmin `producer`.
* CLONE_GROUP_OFFSET (314): copy a group's committed offsets of a topic to another group (the admin API's
  `cloneGroupOffset`; mqadmin's command of that name copies them with UPDATE_CONSUMER_OFFSET instead).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode, fastjson
from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.headers import (CloneGroupOffsetRequestHeader,
                                                ConsumeMessageDirectlyResultRequestHeader,
                                                GetConsumerRunningInfoRequestHeader)
from rocketmq_emulator.protocol.message import decode_message_id
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

if TYPE_CHECKING:
    from ..state.client_manager import ClientChannelInfo
    from ..core.broker_context import BrokerContext

log = logging.getLogger("rocketmq_emulator.clients")

#: Broker2Client.callClient waits this long for the client's answer (4.9.x: 10 s)
CALL_CLIENT_TIMEOUT_S = 10.0
#: MQVersion.Version.V3_1_8_SNAPSHOT: older clients cannot answer these requests
MIN_CALL_CLIENT_VERSION = 62


class ConsumerAdminProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self.get_consumer_running_info)
        table.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self.consume_message_directly)
        table.register(RequestCode.GET_ALL_PRODUCER_INFO, self.get_all_producer_info)
        table.register(RequestCode.CLONE_GROUP_OFFSET, self.clone_group_offset)

    # -- relayed to a client --------------------------------------------------------------------------
    async def get_consumer_running_info(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = GetConsumerRunningInfoRequestHeader.from_ext(req.ext_fields)
        return await self.call_consumer(req, h.consumer_group, h.client_id, dict(req.ext_fields or {}), req.body)

    async def consume_message_directly(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = ConsumeMessageDirectlyResultRequestHeader.from_ext(req.ext_fields)
        ext = dict(req.ext_fields or {})
        ext["brokerName"] = self.broker.config.broker_name
        body = req.body
        try:
            offset = decode_message_id(h.msg_id or "")[2]
        except (ProtocolError, ValueError):
            offset = None  # upstream sends the request on with the admin's body
        if offset is not None:
            record = self.broker.store.select_one_message_by_offset(offset)
            if record is not None:
                body = bytes(record)
        return await self.call_consumer(req, h.consumer_group, h.client_id or "", ext, body)

    async def call_consumer(self, req: RemotingCommand, group: str, client_id: str, ext: dict[str, str],
                            body: bytes) -> RemotingCommand:
        gi = self.broker.consumer_manager.get(group)
        info: ClientChannelInfo | None = gi.find_channel(client_id) if gi is not None else None
        if info is None:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        if info.version < MIN_CALL_CLIENT_VERSION:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"The Consumer <{client_id}> Version <{info.version}> too "
                                                         f"low to finish, please upgrade it to V3_1_8_SNAPSHOT")
        try:
            answer = await self.broker.broker2client.call_consumer(info, req.code, ext, body, CALL_CLIENT_TIMEOUT_S)
        except (asyncio.TimeoutError, TimeoutError) as exc:
            raise BrokerError(ResponseCode.CONSUME_MSG_TIMEOUT, f"consumer <{group}> <{client_id}> Timeout: {exc}")
        except (ConnectionError, ProtocolError) as exc:
            raise BrokerError(ResponseCode.SYSTEM_ERROR,
                              f"invoke consumer <{group}> <{client_id}> Exception: {exc}") from None
        return RemotingCommand.response_to(req, answer.code, answer.remark, answer.ext_fields, answer.body,
                                           version=answer.version)

    # -- producers and offsets ------------------------------------------------------------------------
    def get_all_producer_info(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        now_wall, now_mono = time.time(), time.monotonic()
        data = {}
        for group, channels in self.broker.producer_manager.groups.items():
            data[group] = [{
                "clientId": info.client_id,
                "remoteIP": f"/{info.connection.peer}",
                "language": str(info.language), "version": info.version,
                "lastUpdateTimestamp": int((now_wall - (now_mono - info.last_update)) * 1000),
            } for info in channels.values()]
        return RemotingCommand.response_to(req, body=fastjson.dumps({"data": data}).encode())

    def clone_group_offset(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """Upstream's rule: with a topic, that topic (skipped when the source group is online without
        subscribing it, unless `offline`). Without one, 4.9.8 (and 5.x) go through every topic the source group
        has offsets of but copy the offsets of topic `null` each time (the header's topic): nothing is cloned.
        The destination's offsets of the topic become the source's."""
        h = CloneGroupOffsetRequestHeader.from_ext(req.ext_fields)
        b = self.broker
        offsets = b.consumer_offset_manager
        topics = {h.topic} if h.topic else offsets.topics_of_group(h.src_group)
        gi = b.consumer_manager.get(h.src_group)
        for topic in sorted(topics):
            if b.topic_config_manager.get(topic) is None:
                log.info("[cloneGroupOffset] topic config not exist, %s", topic)
                continue
            if not h.offline and gi is not None and gi.subscription_table and topic not in gi.subscription_table:
                log.info("[cloneGroupOffset] the consumer group[%s], topic[%s] not exist", h.src_group, topic)
                continue
            if not h.topic:
                continue
            for queue_id, offset in offsets.query_offsets_of_group(h.src_group, topic).items():
                offsets.commit_offset("cloneGroupOffset", h.dest_group, topic, queue_id, offset)
        return RemotingCommand.response_to(req)
