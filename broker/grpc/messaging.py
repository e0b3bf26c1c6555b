"""RocketMQ 5.x's MessagingService on the emulator's brokers: what the 5.x proxy does, translated to the cores
the remoting front uses (the send path, the POP core, transactions). Nothing here stores or pops by itself.

Every RPC answers with a `status` (the 5.x clients read it, not the gRPC status); a refusal of a core
(BrokerError) becomes the proxy's code for it (converter.STATUS_OF). PullMessage, the offset RPCs, RecallMessage
and SyncLiteSubscription are not served: gRPC answers UNIMPLEMENTED. The clients' sessions, Telemetry and settings
are clients.py's; the routes and the broker a send goes to, routes.py's.
"""

from __future__ import annotations

import itertools
import logging
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Iterable

from rocketmq_emulator.protocol import BrokerError, ResponseCode
from rocketmq_emulator.protocol.codes import MessageSysFlag
from rocketmq_emulator.protocol.grpc_v2 import v2
from rocketmq_emulator.protocol.headers import EndTransactionRequestHeader
from rocketmq_emulator.protocol.message import PROPERTY_PRODUCER_GROUP, decode_message_id
from rocketmq_emulator.protocol.topics import is_system_topic

from ..core.pop.checkpoint import ReceiptHandle
from ..core.pop.service import PopRequest
from ..core.read_model import BrokerFront
from ..core.send_request import SendMessageRequest
from . import converter as cv
from . import routes
from .answers import (DEFAULT_LONG_POLLING_MS, FAQ, MAX_LONG_POLLING_MS, MIN_LONG_POLLING_MS, NO_TOPIC_ON_RECEIVE,
                      NO_TRANSACTION_DATA, handle_parse_failure, named, new_message_id, recall_handle)
from .clients import GRPC_PRODUCER_GROUP, ClientSession, ClientSessions
from .renewal import Held
from .validate import (Failure, check_message_type, fifo_queue, validate_group, validate_invisible_time,
                       validate_message, validate_topic)

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.grpc_v2 import types as pb

log = logging.getLogger("rocketmq_emulator.grpc")
C = v2.Code
T = v2.MessageType
PROPERTY_TRANSACTION_ID = "__transactionId__"
PROPERTY_BORN_HOST = cv.PROPERTY_BORN_HOST
#: the receive of an auto-renewing (push) consumer: the proxy's default invisible time
AUTO_RENEW_INVISIBLE_MS = 60_000
#: transaction data kept for EndTransaction (a half message's check-back adds it again)
MAX_TRANSACTION_DATA = 100_000
ENDED_TRANSACTION = {v2.TransactionResolution.COMMIT: MessageSysFlag.TRANSACTION_COMMIT_TYPE,
                     v2.TransactionResolution.ROLLBACK: MessageSysFlag.TRANSACTION_ROLLBACK_TYPE}


def _status_of(exc: Exception) -> pb.Status:
    if isinstance(exc, Failure):
        return cv.status(exc.code, exc.message)
    if isinstance(exc, BrokerError):
        return cv.status_of_remoting(exc.code, exc.remark)
    log.error("gRPC request failed", exc_info=exc)
    return cv.status(C.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")


class MessagingService(ClientSessions):
    """`brokers()`: the running brokers (each one's read model and write cores); `endpoint()`: the (host, port)
    routes advertise when a client sent no endpoints of its own."""

    def __init__(self, brokers: Callable[[], Iterable[BrokerFront]], endpoint: Callable[[], tuple[str, int]]) -> None:
        super().__init__(brokers)
        self.endpoint = endpoint
        self._round_robin = itertools.count()

    # -- helpers ------------------------------------------------------------------------------------
    def is_system_topic(self, topic: str) -> bool:
        """TopicValidator.isSystemTopic in the proxy's JVM, where each broker added its own names to the set."""
        return is_system_topic(topic, {t for f in self.brokers() for t in f.read.system_topic_names})

    def validate_topic(self, topic: str) -> None:
        validate_topic(topic, self.is_system_topic)

    def _latest_handle(self, s: ClientSession, group: str, message_id: str, given: str) -> str:
        """The receipt handle to act on: a renewed message's latest (its consumer still holds the one it received,
        as with the proxy); its renewal stops."""
        held = self.renewal.take(s.client_id, group, message_id)
        return held.handle if held is not None else given

    def broker_named(self, name: str) -> BrokerFront:
        for f in self.brokers():
            if f.name == name:
                return f
        raise Failure(C.NOT_FOUND, f"broker {name!r} is not in this emulator")

    def brokers_of(self, topic: str) -> list[BrokerFront]:
        found = [f for f in self.brokers() if f.read.topic(topic) is not None]
        if not found:
            raise Failure(C.TOPIC_NOT_FOUND, f"CODE: 17  DESC: No topic route info in name server for the topic: "
                                             f"{topic}{FAQ}")
        return found

    def group_config(self, f: BrokerFront, group: str) -> Any:
        if not group:
            raise Failure(C.ILLEGAL_CONSUMER_GROUP, "the consumer group is empty")
        cfg = f.read.group_config(group)
        if cfg is None:
            raise Failure(C.CONSUMER_GROUP_NOT_FOUND, f"consumer group {group!r} not found (autoCreateSubscriptionGroup"
                                                      " is off)")
        return cfg

    def endpoints(self, given: pb.Endpoints | None = None) -> pb.Endpoints:
        """The route's endpoints: the ones the client reached us by (a published Docker port works), else ours."""
        out = v2.Endpoints()
        if given is not None and len(given.addresses):
            out.CopyFrom(given)
            return out
        host, port = self.endpoint()
        out.scheme = v2.AddressScheme.IPv4 if host.replace(".", "").isdigit() else v2.AddressScheme.DOMAIN_NAME
        out.addresses.add(host=host, port=port)
        return out

    # -- unary RPCs ---------------------------------------------------------------------------------
    async def QueryRoute(self, request: pb.QueryRouteRequest, context: Any) -> pb.QueryRouteResponse:
        try:
            self.session(context)
            self.validate_topic(request.topic.name)
            endpoints = self.endpoints(request.endpoints)
            queues = routes.message_queues(self.brokers_of(request.topic.name), request.topic, endpoints)
            return v2.QueryRouteResponse(status=named(C.OK), message_queues=queues)
        except Exception as exc:  # noqa: BLE001 - every failure is a status
            return v2.QueryRouteResponse(status=_status_of(exc))

    async def Heartbeat(self, request: pb.HeartbeatRequest, context: Any) -> pb.HeartbeatResponse:
        try:
            s = self.session(context)
            if not s.has_settings:
                raise Failure(C.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client")
            s.client_type = request.client_type or s.client_type
            if request.HasField("group") and request.group.name:
                s.group = request.group.name
                for b in self.brokers():
                    self.group_config(b, s.group)
                if s.client_type in (v2.ClientType.PUSH_CONSUMER, v2.ClientType.SIMPLE_CONSUMER):
                    self.consumer_seen(s.group)
            self.register(s)
            return v2.HeartbeatResponse(status=named(C.OK))
        except Exception as exc:  # noqa: BLE001
            return v2.HeartbeatResponse(status=_status_of(exc))

    async def QueryAssignment(self, request: pb.QueryAssignmentRequest, context: Any
                              ) -> pb.QueryAssignmentResponse:
        try:
            self.session(context)
            topic = request.topic.name
            self.validate_topic(topic)
            validate_group(request.group.name)
            endpoints = self.endpoints(request.endpoints)
            out = routes.assignments(self.brokers_of(topic), request.topic, request.group.name, endpoints)
            if not out:
                return v2.QueryAssignmentResponse(status=cv.status(C.FORBIDDEN, "no readable queue"))
            return v2.QueryAssignmentResponse(status=named(C.OK), assignments=out)
        except Exception as exc:  # noqa: BLE001
            return v2.QueryAssignmentResponse(status=_status_of(exc))

    # -- send ---------------------------------------------------------------------------------------
    async def SendMessage(self, request: pb.SendMessageRequest, context: Any) -> pb.SendMessageResponse:
        """SendMessageActivity + ProducerProcessor: every check first (one refused message refuses the request),
        the topic's message type, then the queue: a single message's group by consistent hashing, else the next
        queue. Several messages go as one batch: one entry, with an id of the batch's own."""
        try:
            self.session(context)
            messages = request.messages
            if not len(messages):
                raise Failure(C.MESSAGE_CORRUPTED, "no message to send")
            topic = messages[0].topic.name
            self.validate_topic(topic)
            now = int(time.time() * 1000)
            for m in messages:
                if m.topic != messages[0].topic:
                    raise Failure(C.MESSAGE_CORRUPTED, "topic in message is not same")
            b_any = next(iter(self.brokers()), None)
            limit = b_any.read.config.store.max_message_size if b_any is not None else 4 * 1024 * 1024
            for m in messages:
                validate_message(m, limit, now)
            peer = _peer(context)
            props = [self._properties(m, peer) for m in messages]
            owners = [r for f in self.brokers() if (r := f.read.route(topic)) is not None]
            if b_any is not None and b_any.read.config.enable_topic_message_type_check:
                check_message_type(owners[0].message_type if owners else "UNSPECIFIED", props[0])
            b, route = routes.writable(self.brokers_of(topic), topic)
            queues = route.write_queues
            group = messages[0].system_properties.message_group if len(messages) == 1 else ""
            queue_id = fifo_queue(group, queues) if group else next(self._round_robin) % queues
            results = [self._store(b, topic, m, p, queue_id, peer) for m, p in zip(messages, props)]
        except Exception as exc:  # noqa: BLE001
            return v2.SendMessageResponse(status=_status_of(exc))
        first = messages[0].system_properties
        entry = v2.SendResultEntry(status=named(C.OK), message_id=first.message_id if len(messages) == 1 else
                                   new_message_id(), transaction_id=first.message_id, offset=results[0].queue_offset)
        if first.HasField("delivery_timestamp") and len(messages) == 1:
            entry.recall_handle = recall_handle(topic, b.name, first.delivery_timestamp.ToMilliseconds(),
                                                first.message_id)
        return v2.SendMessageResponse(status=named(C.OK), entries=[entry])

    @staticmethod
    def _properties(m: pb.Message, peer: tuple[str, int]) -> dict[str, str]:
        props = cv.properties_of(m)
        if PROPERTY_BORN_HOST not in props:
            props[PROPERTY_BORN_HOST] = f"{peer[0]}:{peer[1]}"
        if m.system_properties.message_type == T.TRANSACTION:
            props[PROPERTY_PRODUCER_GROUP] = GRPC_PRODUCER_GROUP
            props[PROPERTY_TRANSACTION_ID] = m.system_properties.message_id
        return props

    def _store(self, b: BrokerFront, topic: str, m: pb.Message, props: dict[str, str], queue_id: int,
               peer: tuple[str, int]) -> Any:
        transactional = m.system_properties.message_type == T.TRANSACTION
        result = b.write.send_core.send(SendMessageRequest.of(
            GRPC_PRODUCER_GROUP, topic, bytes(m.body), props, queue_id=queue_id, born_ms=cv.born_ms(m),
            sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE if transactional else 0,
            peer=peer))
        if result.msg_id is None:
            raise BrokerError(result.code, result.remark)
        if transactional:
            _, _, commit_log_offset = decode_message_id(result.msg_id)
            self.transactions[(topic, m.system_properties.message_id)] = (b.name, commit_log_offset)
            if len(self.transactions) > MAX_TRANSACTION_DATA:  # never ended nor checked: the oldest go
                del self.transactions[next(iter(self.transactions))]
        return result

    async def EndTransaction(self, request: pb.EndTransactionRequest, context: Any) -> pb.EndTransactionResponse:
        """EndTransactionActivity: the transaction data the send (or a check-back) left, keyed by the topic (the
        proxy's producer group) and the transaction id (the message id); used once."""
        try:
            self.session(context)
            self.validate_topic(request.topic.name)
            data = self.transactions.pop((request.topic.name, request.transaction_id), None)
            if data is None:
                raise Failure(C.INTERNAL_SERVER_ERROR, NO_TRANSACTION_DATA)
            broker_name, commit_log_offset = data
            resolution = ENDED_TRANSACTION.get(request.resolution)
            if resolution is None:
                raise Failure(C.BAD_REQUEST, "the resolution must be COMMIT or ROLLBACK")
            b = self.broker_named(broker_name)
            half = b.read.message_at(commit_log_offset)
            if half is None:
                raise Failure(C.INTERNAL_SERVER_ERROR, NO_TRANSACTION_DATA)
            header = EndTransactionRequestHeader(
                producer_group=half.properties.get(PROPERTY_PRODUCER_GROUP, ""),
                tran_state_table_offset=half.queue_offset, commit_log_offset=commit_log_offset,
                commit_or_rollback=resolution,
                from_transaction_check=request.source == v2.TransactionSource.SOURCE_SERVER_CHECK,
                msg_id=request.message_id, transaction_id=request.transaction_id)
            outcome = b.write.transactions.end_transaction(header, "grpc")
            if outcome is not None and outcome[0] != ResponseCode.SUCCESS:
                raise BrokerError(outcome[0], outcome[1])
            return v2.EndTransactionResponse(status=named(C.OK))
        except Exception as exc:  # noqa: BLE001
            return v2.EndTransactionResponse(status=_status_of(exc))

    # -- consume ------------------------------------------------------------------------------------
    async def ReceiveMessage(self, request: pb.ReceiveMessageRequest, context: Any
                             ) -> AsyncIterator[pb.ReceiveMessageResponse]:
        """ReceiveMessageActivity: a status, the messages, and always the delivery timestamp last."""
        try:
            s = self.session(context)
            pop_request, b = self._pop_request(request, context, s.client_id)
            result = await b.write.pop_service.pop(pop_request) if pop_request.max_msgs > 0 else None
        except Exception as exc:  # noqa: BLE001
            yield v2.ReceiveMessageResponse(status=_status_of(exc))
            yield v2.ReceiveMessageResponse(delivery_timestamp=cv.timestamp(int(time.time() * 1000)))
            return
        if result is None or not result.messages:
            yield v2.ReceiveMessageResponse(status=cv.status(C.MESSAGE_NOT_FOUND, "no new message"))
            yield v2.ReceiveMessageResponse(delivery_timestamp=cv.timestamp(int(time.time() * 1000)))
            return
        yield v2.ReceiveMessageResponse(status=named(C.OK))
        group, topic = request.group.name, request.message_queue.topic.name
        for popped in result.messages:
            message = cv.to_v2(popped.message, receipt_handle=popped.handle.encode(), attempt=popped.attempt,
                               topic=topic)
            if request.auto_renew:  # a push consumer: renewed while it consumes (renewal.py)
                handle = popped.handle
                self.renewal.add(s.client_id, group, message.system_properties.message_id, Held(
                    b, group, topic, handle.encode(), handle.pop_time, handle.pop_time + handle.invisible_time,
                    popped.attempt - 1))
            yield v2.ReceiveMessageResponse(message=message)
        yield v2.ReceiveMessageResponse(delivery_timestamp=cv.timestamp(result.pop_time))

    def _pop_request(self, request: pb.ReceiveMessageRequest, context: Any, client: str
                     ) -> tuple[PopRequest, BrokerFront]:
        poll = cv.duration_ms(request.long_polling_timeout) if request.HasField("long_polling_timeout") \
            else DEFAULT_LONG_POLLING_MS
        poll = min(max(poll, MIN_LONG_POLLING_MS), MAX_LONG_POLLING_MS)
        remaining = context.time_remaining()
        if remaining is not None and poll > remaining * 1000:
            if remaining * 1000 < MIN_LONG_POLLING_MS:
                # clients before 5.0.3 know no ILLEGAL_POLLING_TIME (the proxy compares the version as a string)
                version = dict(context.invocation_metadata() or ()).get("x-mq-client-version")
                raise Failure(C.BAD_REQUEST if version is None or version < "5.0.3" else C.ILLEGAL_POLLING_TIME,
                              "The deadline time remaining is not enough for polling, please check network condition")
            poll = max(0, int(remaining * 1000) - 1000)  # answer before the client's deadline
        topic = request.message_queue.topic.name
        group = request.group.name
        self.validate_topic(topic)
        validate_group(group)
        b = next((x for x in self.brokers() if x.name == request.message_queue.broker.name), None) \
            or next(iter(self.brokers()))
        if request.auto_renew:
            invisible = AUTO_RENEW_INVISIBLE_MS
        else:
            invisible = cv.duration_ms(request.invisible_duration)
            validate_invisible_time(invisible, b.read.config.min_invisible_time_mills_for_recv)
        expression = request.filter_expression
        kind = "SQL92" if expression.type == v2.FilterType.SQL else "TAG"
        if b.read.topic(topic) is None:
            raise Failure(C.INTERNAL_SERVER_ERROR, NO_TOPIC_ON_RECEIVE)
        cfg = self.group_config(b, group)
        try:
            tags, record_filter = b.write.consume_core.filters(kind, expression.expression or "*")
        except BrokerError:
            raise Failure(C.INTERNAL_SERVER_ERROR, "org.apache.rocketmq.proxy.common.ProxyException: parse the "
                                                   "consumer's subscription failed") from None
        batch = min(request.batch_size, 32)
        # the proxy pops every queue of the broker the request names, whatever its queue id (a SimpleConsumer
        # names a queue of the route)
        return PopRequest(group, topic, invisible, -1, batch, poll, 1, tags, record_filter,
                          bool(getattr(cfg, "consume_message_orderly", False)), client), b

    def _handle(self, text: str) -> tuple[ReceiptHandle, BrokerFront]:
        if len(text.split(" ")) < 8:
            raise handle_parse_failure(text)
        handle = ReceiptHandle.parse(text)
        if handle is None:
            raise Failure(C.INVALID_RECEIPT_HANDLE, f"invalid receipt handle {text!r}")
        return handle, self.broker_named(handle.broker_name)

    async def AckMessage(self, request: pb.AckMessageRequest, context: Any) -> pb.AckMessageResponse:
        try:
            s = self.session(context)
            self.validate_topic(request.topic.name)
            validate_group(request.group.name)
            if not len(request.entries):
                raise Failure(C.INTERNAL_SERVER_ERROR, "ack message result is empty")
            entries = []
            for e in request.entries:
                try:
                    handle = self._latest_handle(s, request.group.name, e.message_id, e.receipt_handle)
                    _, b = self._handle(handle)
                    b.write.pop_service.ack(request.group.name, request.topic.name, handle, s.client_id)
                    st = named(C.OK)
                except Exception as exc:  # noqa: BLE001
                    st = _status_of(exc)
                entries.append(v2.AckMessageResultEntry(message_id=e.message_id, receipt_handle=e.receipt_handle,
                                                        status=st))
        except Exception as exc:  # noqa: BLE001
            return v2.AckMessageResponse(status=_status_of(exc))
        codes = {e.status.code for e in entries}
        overall = named(codes.pop()) if len(codes) == 1 else named(C.MULTIPLE_RESULTS) if codes else named(C.OK)
        return v2.AckMessageResponse(status=overall, entries=entries)

    async def ChangeInvisibleDuration(self, request: pb.ChangeInvisibleDurationRequest, context: Any
                                      ) -> pb.ChangeInvisibleDurationResponse:
        try:
            s = self.session(context)
            self.validate_topic(request.topic.name)
            validate_group(request.group.name)
            invisible = cv.duration_ms(request.invisible_duration)
            validate_invisible_time(invisible)
            handle = self._latest_handle(s, request.group.name, request.message_id, request.receipt_handle)
            _, b = self._handle(handle)
            new = b.write.pop_service.change_invisible(request.group.name, request.topic.name, handle, invisible)
            return v2.ChangeInvisibleDurationResponse(status=named(C.OK), receipt_handle=new.encode())
        except Exception as exc:  # noqa: BLE001
            return v2.ChangeInvisibleDurationResponse(status=_status_of(exc))

    async def ForwardMessageToDeadLetterQueue(self, request: pb.ForwardMessageToDeadLetterQueueRequest,
                                              context: Any) -> pb.ForwardMessageToDeadLetterQueueResponse:
        """The proxy answers with the broker's response code and remark: "0" on success."""
        try:
            s = self.session(context)
            self.validate_topic(request.topic.name)
            validate_group(request.group.name)
            handle = self._latest_handle(s, request.group.name, request.message_id, request.receipt_handle)
            _, b = self._handle(handle)
            b.write.pop_service.forward_to_dlq(request.group.name, request.topic.name, handle)
            return v2.ForwardMessageToDeadLetterQueueResponse(status=cv.status(C.OK, "0"))
        except Exception as exc:  # noqa: BLE001
            return v2.ForwardMessageToDeadLetterQueueResponse(status=_status_of(exc))


def _peer(context: Any) -> tuple[str, int]:
    """("ip", port) of the caller (gRPC's peer is "ipv4:1.2.3.4:5678" or "ipv6:[::1]:5678")."""
    kind, _, rest = (context.peer() or "").partition(":")
    host, _, port = rest.rpartition(":")
    # born host is packed as IPv4 here: an IPv6 peer (or a Unix socket) is recorded as 127.0.0.1
    return (host if kind == "ipv4" else "127.0.0.1"), int(port) if port.isdigit() else 0
