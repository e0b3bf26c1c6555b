"""POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME (5.x remoting): headers in,
the POP core (broker/core/pop/service.py) does the work, responses out. A popped message carries its receipt handle
in the POP_CK property; "nothing to pop" after the poll time is PULL_NOT_FOUND, as upstream."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.message import encode_properties
from rocketmq_emulator.protocol.pop_headers import (PROPERTY_POP_CK, AckMessageRequestHeader,
                                                    BatchAckMessageRequestBody, ChangeInvisibleTimeRequestHeader,
                                                    ChangeInvisibleTimeResponseHeader, PopMessageRequestHeader,
                                                    PopMessageResponseHeader)
from rocketmq_emulator.protocol.topics import pop_retry_topic
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

from ..core.pop.checkpoint import ReceiptHandle
from ..core.pop.service import PoppedMessage, PopRequest

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext


def record_with_handle(popped: PoppedMessage) -> bytes:
    """The stored record again, with the receipt handle in POP_CK (and the delivery count as reconsume times)."""
    msg = popped.message
    props = dict(msg.properties)
    props[PROPERTY_POP_CK] = popped.handle.encode()
    msg.properties_raw = encode_properties(props).encode()
    msg._properties = props
    msg.reconsume_times = popped.attempt - 1
    return msg.encode()


class PopMessageProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.POP_MESSAGE, self.pop_message)
        table.register(RequestCode.ACK_MESSAGE, self.ack_message)
        table.register(RequestCode.BATCH_ACK_MESSAGE, self.batch_ack_message)
        table.register(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, self.change_invisible_time)

    async def pop_message(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = PopMessageRequestHeader.from_ext(req.ext_fields)
        pop = self.broker.pop_service
        if not 0 < h.max_msg_nums <= 32 or h.invisible_time <= 0 or h.poll_time < 0:
            raise BrokerError(ResponseCode.INVALID_PARAMETER, "maxMsgNums must be 1-32, invisibleTime positive and "
                                                              "pollTime not negative")
        tags, record_filter = self.broker.consume_core.filters(h.exp_type, h.exp)
        result = await pop.pop(PopRequest(h.consumer_group, h.topic, h.invisible_time, h.queue_id, h.max_msg_nums,
                                          h.poll_time, h.init_mode, tags, record_filter, bool(h.order),
                                          conn.attributes.get("client_id") or conn.peer))
        header = PopMessageResponseHeader(pop_time=result.pop_time, invisible_time=result.invisible_ms,
                                          rest_num=result.rest_num).to_ext()
        if not result.messages:
            return RemotingCommand.response_to(req, ResponseCode.PULL_NOT_FOUND, "no new message", header)
        body = b"".join(record_with_handle(m) for m in result.messages)
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, "FOUND", header, body)

    def ack_message(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = AckMessageRequestHeader.from_ext(req.ext_fields)
        self.broker.pop_service.ack(h.consumer_group, h.topic, h.extra_info,
                                    conn.attributes.get("client_id") or conn.peer)
        return RemotingCommand.response_to(req)

    def batch_ack_message(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """Each entry names a pop (its checkpoint's handle fields) and the positions acked after its start."""
        body = BatchAckMessageRequestBody.decode(req.body or b"{}")
        pop = self.broker.pop_service
        for ack in body.acks:
            retry = ack.retry == "1"
            topic = pop_retry_topic(ack.consumer_group, ack.topic) if retry else ack.topic
            for ck in [ck for ck in pop.checkpoints.values() if ck.group == ack.consumer_group and ck.topic == topic
                       and ck.queue_id == ack.queue_id and ck.pop_time == ack.pop_time]:
                for position in ack.bit_set:
                    offset = ack.start_offset + position
                    if offset in ck.offsets:
                        pop.ack(ack.consumer_group, ack.topic, ReceiptHandle(
                            ck.ck_id, ck.pop_time, ck.invisible_time, retry, body.broker_name, ck.queue_id,
                            offset).encode(), conn.attributes.get("client_id") or conn.peer)
        return RemotingCommand.response_to(req)

    def change_invisible_time(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = ChangeInvisibleTimeRequestHeader.from_ext(req.ext_fields)
        handle = self.broker.pop_service.change_invisible(h.consumer_group, h.topic, h.extra_info, h.invisible_time)
        header = ChangeInvisibleTimeResponseHeader(pop_time=handle.pop_time,
                                                   invisible_time=handle.invisible_time).to_ext()
        return RemotingCommand.response_to(req, ext_fields=header)
