"""`ClientRemotingProcessor` (Java's, one per client instance): the requests brokers send this client over
its own connections (§3.1, §10.7), in one table: request code -> (typed header class, handler).

Each request's header is decoded once, with its typed header class from `protocol.headers`, and the handler
gets the request and that header. A consumer request names its group in the header field its Java header
class has (`consumerGroup`; `group` for RESET_CONSUMER_CLIENT_OFFSET and GET_CONSUMER_STATUS_FROM_CLIENT) and
is answered by that group's consumer (its `ConsumerRequests`, see `consumer_requests`):

* NOTIFY_CONSUMER_IDS_CHANGED: rebalance now.
* RESET_CONSUMER_CLIENT_OFFSET: move to the offsets of the body (in the background; the request is oneway).
* GET_CONSUMER_STATUS_FROM_CLIENT: the in-memory offsets of the topic's queues.
* GET_CONSUMER_RUNNING_INFO: settings, subscriptions, process queues and counters (ConsumerRunningInfo).
* CONSUME_MESSAGE_DIRECTLY: run the handler on the message of the body, answer with the outcome.
* CHECK_TRANSACTION_STATE: the transactional producer of the message's group (PGROUP) checks its local
  transaction and answers END_TRANSACTION (transaction_producer.py); nothing when the group has none here.
* PUSH_REPLY_MESSAGE_TO_CLIENT: a reply to one of this client's requests (request_reply.py), answered SUCCESS.

Answers when something is wrong: a code not in the table, REQUEST_CODE_NOT_SUPPORTED; a group with no
consumer in this client, SYSTEM_ERROR "The Consumer Group <G> not exist in this consumer" (Java's words);
a consumer still starting, SYSTEM_ERROR "consumer 'G' is not started"; a header that does not decode,
SYSTEM_ERROR naming the request and the field. A oneway request is never answered (the transport's rule).
Adding a request is one line of the table.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Mapping, Protocol

from rocketmq_emulator.protocol import BrokerError, ProtocolError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import GetConsumerStatusBody, ResetOffsetBody
from rocketmq_emulator.protocol.bodies import ConsumeMessageDirectlyResult, MessageQueue
from rocketmq_emulator.protocol.codes import request_code_name
from rocketmq_emulator.protocol.headers import (CheckTransactionStateRequestHeader, CommandHeader,
                                                ConsumeMessageDirectlyResultRequestHeader, ReplyMessageRequestHeader,
                                                GetConsumerRunningInfoRequestHeader, GetConsumerStatusRequestHeader,
                                                NotifyConsumerIdsChangedRequestHeader, ResetOffsetRequestHeader)
from rocketmq_emulator.protocol.topics import retry_topic
from rocketmq_emulator.protocol.message import PROPERTY_PRODUCER_GROUP
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

from .errors import ClientError
from .message import ReceivedMessage, decode_received
from .request_reply import RequestFutureHolder

log = logging.getLogger("rocketmq_emulator.client")


class EncodableBody(Protocol):
    def encode(self) -> bytes: ...


class ConsumerRequests(Protocol):
    """What one consumer answers (Java `MQConsumerInner`'s part of it); a `ClientError` it raises becomes a
    SYSTEM_ERROR answer carrying its text."""

    def rebalance_now(self) -> None: ...

    def reset_offset(self, topic: str, offset_table: dict[MessageQueue, int]) -> None: ...

    def consumer_status(self, topic: str) -> dict[MessageQueue, int]: ...

    def running_info(self) -> EncodableBody: ...

    async def consume_message_directly(self, msg: ReceivedMessage) -> ConsumeMessageDirectlyResult: ...


class ServedConsumer(Protocol):
    """A consumer registered with the client instance, as this processor sees it."""

    def server_requests(self) -> ConsumerRequests | None:
        """Its answers; None while it is not started."""


#: (request, its decoded header, the connection it came on) -> answer
Handler = Callable[[RemotingCommand, Any, "RemotingConnection | None"], Awaitable["RemotingCommand | None"]]


class ClientRemotingProcessor:
    def __init__(self, client_id: str, consumers: Mapping[str, ServedConsumer],
                 replies: RequestFutureHolder | None = None, producers: Mapping[str, object] | None = None) -> None:
        self.client_id = client_id
        self.consumers = consumers
        self.producers: Mapping[str, object] = {} if producers is None else producers
        self.replies = RequestFutureHolder() if replies is None else replies
        #: the one table of the requests a broker sends a client: code -> (typed header class, handler)
        self.table: dict[int, tuple[type[CommandHeader], Handler]] = {
            RequestCode.CHECK_TRANSACTION_STATE: (CheckTransactionStateRequestHeader, self.check_transaction_state),
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: (NotifyConsumerIdsChangedRequestHeader, self.ids_changed),
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET: (ResetOffsetRequestHeader, self.reset_offset),
            RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT: (GetConsumerStatusRequestHeader, self.consumer_status),
            RequestCode.GET_CONSUMER_RUNNING_INFO: (GetConsumerRunningInfoRequestHeader, self.running_info),
            RequestCode.CONSUME_MESSAGE_DIRECTLY: (ConsumeMessageDirectlyResultRequestHeader, self.consume_directly),
            RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT: (ReplyMessageRequestHeader, self.replies.receive_reply),
        }

    def dispatch_table(self) -> DispatchTable:
        """The transport's table for the client's connections: every code of `table` to `process`."""
        table = DispatchTable(f"client {self.client_id}")
        table.register(self.table, self.process)
        return table

    async def process(self, cmd: RemotingCommand, conn: RemotingConnection | None = None) -> RemotingCommand | None:
        """The answer to one request (None: no answer), never an exception for bad input."""
        entry = self.table.get(cmd.code)
        if entry is None:
            return RemotingCommand.not_supported(cmd)
        header_class, handler = entry
        try:
            header = header_class.from_ext(cmd.ext_fields)
            return await handler(cmd, header, conn)
        except ProtocolError as exc:
            log.info("%s: bad %s request: %s", self.client_id, request_code_name(cmd.code), exc)
            return RemotingCommand.response_to(cmd, ResponseCode.SYSTEM_ERROR,
                                               f"bad {request_code_name(cmd.code)} request: {exc}")
        except BrokerError as exc:
            return RemotingCommand.response_to(cmd, exc.code, exc.remark)
        except ClientError as exc:
            return RemotingCommand.response_to(cmd, ResponseCode.SYSTEM_ERROR, str(exc))

    def consumer(self, group: str, cmd: RemotingCommand) -> ConsumerRequests:
        """The answers of `group`'s consumer, or the error answer (raised as a `BrokerError`)."""
        consumer = self.consumers.get(group)
        if consumer is None:
            log.debug("%s: %s for unknown group %r ignored", self.client_id, request_code_name(cmd.code), group)
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer")
        requests = consumer.server_requests()
        if requests is None:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"consumer {group!r} is not started")
        return requests

    # -- the handlers: (request, decoded header) -> answer --------------------------------------------
    async def check_transaction_state(self, cmd: RemotingCommand, h: CheckTransactionStateRequestHeader,
                                      conn: RemotingConnection | None = None) -> None:
        """Java's checkTransactionState: the producer of the message's PGROUP group checks its local transaction
        and answers END_TRANSACTION on this connection (in the background: the request is oneway)."""
        msgs = decode_received(cmd.body or b"", MessageQueue("", "", 0))
        if not msgs:
            log.warning("%s: CHECK_TRANSACTION_STATE without a readable message (%s)", self.client_id, h.msg_id)
            return
        msg = msgs[0]
        msg.message_queue = MessageQueue(msg.topic, "", msg.queue_id)
        group = msg.properties.get(PROPERTY_PRODUCER_GROUP)
        producer = self.producers.get(group or "")
        checker = getattr(producer, "check_transaction_state", None)
        if checker is None or conn is None:
            log.debug("%s: CHECK_TRANSACTION_STATE for message %s of group %s: no transactional producer of the "
                      "group here", self.client_id, h.msg_id, group)
            return
        checker(msg, h, conn)

    async def ids_changed(self, cmd: RemotingCommand, h: NotifyConsumerIdsChangedRequestHeader,
                          conn: RemotingConnection | None = None) -> None:
        self.consumer(h.consumer_group, cmd).rebalance_now()

    async def reset_offset(self, cmd: RemotingCommand, h: ResetOffsetRequestHeader,
                          conn: RemotingConnection | None = None) -> None:
        consumer = self.consumer(h.group, cmd)
        try:
            table = ResetOffsetBody.decode(cmd.body).offset_table if cmd.body else {}
        except ProtocolError as exc:
            log.warning("%s: ignoring a RESET_CONSUMER_CLIENT_OFFSET that cannot be read: %s", h.group, exc)
            return
        consumer.reset_offset(h.topic, table)

    async def consumer_status(self, cmd: RemotingCommand, h: GetConsumerStatusRequestHeader,
                              conn: RemotingConnection | None = None) -> RemotingCommand:
        table = self.consumer(h.group, cmd).consumer_status(h.topic)
        return RemotingCommand.response_to(cmd, body=GetConsumerStatusBody(message_queue_table=table).encode())

    async def running_info(self, cmd: RemotingCommand, h: GetConsumerRunningInfoRequestHeader,
                           conn: RemotingConnection | None = None) -> RemotingCommand:
        return RemotingCommand.response_to(cmd, body=self.consumer(h.consumer_group, cmd).running_info().encode())

    async def consume_directly(self, cmd: RemotingCommand,
                               h: ConsumeMessageDirectlyResultRequestHeader, conn: RemotingConnection | None = None) -> RemotingCommand:
        consumer = self.consumer(h.consumer_group, cmd)
        broker = h.broker_name or ""
        msgs = decode_received(cmd.body, MessageQueue("", broker, 0), retry_topic(h.consumer_group))
        if not msgs:
            return RemotingCommand.response_to(cmd, ResponseCode.SYSTEM_ERROR, "no message in the request body")
        msg = msgs[0]
        msg.message_queue = MessageQueue(msg.topic, broker, msg.queue_id)
        result = await consumer.consume_message_directly(msg)
        return RemotingCommand.response_to(cmd, body=result.encode())
