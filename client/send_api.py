"""One send request and its answer (Java `MQClientAPIImpl.sendMessage` / `processSendResponse`): the
SEND_MESSAGE_V2 header as a Java 4.9.8 client fills it, and the response codes that mean "stored" mapped to
a `SendStatus`. The producer's sends and the consumer's fallback send-back to `%RETRY%<group>` both go
through `send_to_queue`; any other answer is raised as a `BrokerResponseError` (the caller decides whether
it retries).
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.headers import SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketmq_emulator.protocol.topics import AUTO_CREATE_TOPIC_KEY, DEFAULT_TOPIC_QUEUE_NUMS

from .instance import ClientInstance

__all__ = ["SEND_STATUS_BY_CODE", "SendResult", "SendStatus", "send_header", "send_to_queue"]


class SendStatus(enum.Enum):
    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


#: The answers that mean the broker stored the message (Java `processSendResponse`); any other is an error.
SEND_STATUS_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK, ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE}


@dataclass(frozen=True, slots=True)
class SendResult:
    """`msg_id` is the client id (UNIQ_KEY) the consumers see; `offset_msg_id` the broker's id (host + commitlog
    offset). For a batch both are comma-joined lists and `queue_offset` is the first message's offset."""

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    queue: MessageQueue
    queue_offset: int
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    transaction_id: str | None = None

    @property
    def topic(self) -> str:
        return self.queue.topic

    @property
    def broker_name(self) -> str:
        return self.queue.broker_name

    @property
    def queue_id(self) -> int:
        return self.queue.queue_id


def send_header(group: str, mq: MessageQueue, properties: str, sys_flag: int = 0, flag: int = 0, *,
                batch: bool = False, reconsume_times: int = 0, max_reconsume_times: int | None = None,
                born_timestamp: int | None = None) -> dict[str, str]:
    """SendMessageRequestHeaderV2 extFields (one-letter names), as a Java 4.9.8 producer fills them, through the
    header class's fast encoding."""
    return SendMessageRequestHeaderV2.fast_ext(
        group, mq.topic, mq.queue_id, properties, sys_flag=sys_flag, flag=flag,
        born_timestamp=time.time_ns() // 1_000_000 if born_timestamp is None else born_timestamp,
        reconsume_times=reconsume_times, batch=batch,
        bname=mq.broker_name, max_reconsume_times=max_reconsume_times, default_topic=AUTO_CREATE_TOPIC_KEY,
        default_topic_queue_nums=DEFAULT_TOPIC_QUEUE_NUMS)


async def send_to_queue(instance: ClientInstance, addr: str, mq: MessageQueue, group: str, body: bytes,
                        properties: str, uniq: str, timeout: float, *, code: int = RequestCode.SEND_MESSAGE_V2,
                        sys_flag: int = 0, flag: int = 0, batch: bool = False, born_timestamp: int | None = None,
                        reconsume_times: int = 0, max_reconsume_times: int | None = None) -> SendResult:
    """Send `body` to `mq` on the broker at `addr` once and read the answer: a `SendResult` when it is stored,
    else the answer's `BrokerResponseError`."""
    ext = send_header(group, mq, properties, sys_flag, flag, batch=batch, born_timestamp=born_timestamp,
                      reconsume_times=reconsume_times, max_reconsume_times=max_reconsume_times)
    response = await instance.api.call(addr, code, ext, body, operation=f"send to {mq.topic!r}", timeout=timeout,
                                       ok=SEND_STATUS_BY_CODE)
    ext = response.ext_fields or {}
    h = SendMessageResponseHeader.from_ext(ext)
    if h.queue_id != mq.queue_id:
        mq = MessageQueue(mq.topic, mq.broker_name, h.queue_id)
    return SendResult(SEND_STATUS_BY_CODE[response.code], uniq, h.msg_id, mq, h.queue_offset,
                      ext.get("MSG_REGION", "DefaultRegion"), ext.get("TRACE_ON", "true") != "false", h.transaction_id)
