"""Request-reply (RocketMQ 4.6+): a requester sends a message and waits for the reply; a replier answers it.

    reply = await producer.request("orders", b"price?", timeout=3)   # -> ReceivedMessage
    # in the replier's handler (any consumer of "orders"):
    await replier.send_reply(msg, b"42")                              # a Producer of the replier's

The requester's message carries CORRELATION_ID (unique), REPLY_TO_CLIENT (its client id) and TTL (the timeout in
ms). The replier's reply goes to `<cluster>_REPLY_TOPIC` (the request's CLUSTER property, which the broker sets
on every stored message) with the same three properties and MSG_TYPE=reply, by SEND_REPLY_MESSAGE_V2; the broker
pushes it to the requester's connection (PUSH_REPLY_MESSAGE_TO_CLIENT), where `RequestFutureHolder` (one per
client instance, as Java's RequestFutureHolder) completes the waiting request by its correlation id. A reply that
matches no waiting request (it came too late) is logged and dropped, as in Java.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
import zlib
from typing import Awaitable, Callable

from rocketmq_emulator.protocol import RemotingCommand, ResponseCode
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.codes import MessageSysFlag
from rocketmq_emulator.protocol.headers import ReplyMessageRequestHeader
from rocketmq_emulator.protocol.message import (PROPERTY_CLUSTER, PROPERTY_CORRELATION_ID,
                                                PROPERTY_MESSAGE_REPLY_TO_CLIENT, PROPERTY_MESSAGE_TTL,
                                                PROPERTY_MESSAGE_TYPE, PROPERTY_REPLY_MESSAGE_ARRIVE_TIME,
                                                REPLY_MESSAGE_FLAG, MessageExt, decode_properties)

from .errors import ClientError, InvalidArgumentError
from .message import Message, ReceivedMessage

log = logging.getLogger("rocketmq_emulator.client.reply")


class ReplyTimeoutError(ClientError, TimeoutError):
    """A request was sent, but no reply came within its timeout (Java's RequestTimeoutException)."""

    def __init__(self, topic: str, timeout: float) -> None:
        self.topic = topic
        self.timeout = timeout
        super().__init__(f"the request to topic {topic!r} was sent, but no reply came within {timeout:g} s; is a "
                         f"consumer of the topic replying (send_reply / MessageUtil.createReplyMessage)?")


class RequestFutureHolder:
    """The requests of one client instance waiting for their replies, by correlation id."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[ReceivedMessage]] = {}
        #: the brokers have had a heartbeat naming this client's producers since a request began (they push
        #: replies only to producers they know)
        self.announced = False

    def expect(self, correlation_id: str) -> asyncio.Future[ReceivedMessage]:
        future: asyncio.Future[ReceivedMessage] = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = future
        return future

    def discard(self, correlation_id: str) -> None:
        self._waiting.pop(correlation_id, None)

    def __len__(self) -> int:
        return len(self._waiting)

    async def receive_reply(self, cmd: RemotingCommand, h: ReplyMessageRequestHeader, conn: object = None
                            ) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT: complete the waiting request; SUCCESS whether or not one waits."""
        msg = reply_from_push(cmd, h)
        correlation_id = msg.properties.get(PROPERTY_CORRELATION_ID, "")
        future = self._waiting.pop(correlation_id, None)
        if future is None or future.done():
            log.warning("a reply matched no waiting request (correlation id %s, from %s): dropped",
                        correlation_id or "none", h.born_host)
        else:
            future.set_result(msg)
        return RemotingCommand.response_to(cmd, ResponseCode.SUCCESS)


def reply_from_push(cmd: RemotingCommand, h: ReplyMessageRequestHeader) -> ReceivedMessage:
    """The ReceivedMessage of a pushed reply (its body inflated when compressed; ARRIVE_TIME added)."""
    body = cmd.body or b""
    if h.sys_flag & MessageSysFlag.COMPRESSED:
        try:
            body = zlib.decompress(body)
        except zlib.error:
            log.warning("a compressed reply did not inflate: kept as sent")
    props = decode_properties(h.properties or "")
    props[PROPERTY_REPLY_MESSAGE_ARRIVE_TIME] = str(time.time_ns() // 1_000_000)
    born_ip, _, born_port = h.born_host.rpartition(":")
    store_ip, _, store_port = h.store_host.rpartition(":")
    msg = ReceivedMessage(topic=h.topic, body=body, queue_id=h.queue_id, flag=h.flag, sys_flag=h.sys_flag,
                          born_timestamp=h.born_timestamp, born_host=born_ip or "127.0.0.1",
                          born_port=int(born_port) if born_port.isdigit() else 0, store_timestamp=h.store_timestamp,
                          store_host=store_ip or "127.0.0.1", store_port=int(store_port) if store_port.isdigit() else 0,
                          reconsume_times=h.reconsume_times or 0, properties=props)
    msg.broker_name = ""
    msg.message_queue = MessageQueue(h.topic, "", h.queue_id)
    msg._pq = None
    return msg


def create_reply_message(request: MessageExt, body: bytes | str) -> Message:
    """The reply to a request message (Java's MessageUtil.createReplyMessage): to `<cluster>_REPLY_TOPIC`, with the
    request's CORRELATION_ID, REPLY_TO_CLIENT and TTL and MSG_TYPE=reply."""
    props = request.properties
    cluster = props.get(PROPERTY_CLUSTER)
    if not cluster:
        raise InvalidArgumentError(f"cannot reply to a message without the {PROPERTY_CLUSTER} property (a message "
                                   f"consumed from a broker has it; is this a request message?)")
    reply = Message(f"{cluster}_REPLY_TOPIC", body)
    for key in (PROPERTY_CORRELATION_ID, PROPERTY_MESSAGE_REPLY_TO_CLIENT, PROPERTY_MESSAGE_TTL):
        value = props.get(key)
        if value:
            reply.properties[key] = value
    reply.properties[PROPERTY_MESSAGE_TYPE] = REPLY_MESSAGE_FLAG
    return reply


def is_reply(msg: Message) -> bool:
    return msg.properties.get(PROPERTY_MESSAGE_TYPE) == REPLY_MESSAGE_FLAG


async def send_request(holder: RequestFutureHolder, client_id: str, msg: Message, timeout: float,
                       send: Callable[[Message, float], Awaitable[object]]) -> ReceivedMessage:
    """Send `msg` as a request with `send(msg, seconds)` and wait up to `timeout` seconds (the send included) for
    its reply. The brokers must know `client_id` as a producer's (a heartbeat) before: see Producer.request."""
    if timeout <= 0:
        raise InvalidArgumentError(f"timeout={timeout!r}: a request needs a positive timeout (seconds)")
    began = time.monotonic()
    correlation_id = str(uuid.uuid4())
    msg.properties[PROPERTY_CORRELATION_ID] = correlation_id
    msg.properties[PROPERTY_MESSAGE_REPLY_TO_CLIENT] = client_id
    msg.properties[PROPERTY_MESSAGE_TTL] = str(int(timeout * 1000))
    future = holder.expect(correlation_id)
    try:
        await send(msg, max(0.001, timeout - (time.monotonic() - began)))
        left = timeout - (time.monotonic() - began)
        try:
            return await asyncio.wait_for(asyncio.shield(future), max(0.0, left))
        except (asyncio.TimeoutError, TimeoutError):
            raise ReplyTimeoutError(msg.topic, timeout) from None
    finally:
        holder.discard(correlation_id)
