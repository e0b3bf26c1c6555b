"""RocketMQ 5.x's MessagingService on the emulator's brokers: what the 5.x proxy does, translated to the cores
the remoting front uses (the send path, the POP core, transactions). Nothing here stores or pops by itself.

Every RPC answers with a `status` (the 5.x clients read it, not the gRPC status); a refusal of a core
(BrokerError) becomes the proxy's code for it (converter.STATUS_OF). PullMessage, the offset RPCs, RecallMessage
and SyncLiteSubscription are not served: gRPC answers UNIMPLEMENTED.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Iterable

from rocketmq_emulator.protocol import BrokerError, PermName, ResponseCode
from rocketmq_emulator.protocol.codes import MessageSysFlag
from rocketmq_emulator.protocol.grpc_v2 import v2
from rocketmq_emulator.protocol.headers import EndTransactionRequestHeader
from rocketmq_emulator.protocol.message import (PROPERTY_PRODUCER_GROUP, PROPERTY_TIMER_DELIVER_MS, decode_message_id,
                                                java_string_hash)
from rocketmq_emulator.protocol.topics import parse_delay_levels

from ..broker_context import BrokerContext
from ..pop.checkpoint import ReceiptHandle
from ..pop.service import PopRequest
from ..send_request import SendMessageRequest
from ..timer import MAX_DELAY_MS
from . import converter as cv

log = logging.getLogger("rocketmq_emulator.grpc")
C = v2.Code
T = v2.MessageType
#: the producer group of messages sent through gRPC (5.x producers have none): transaction check-backs go to a
#: 5.x producer publishing the message's topic
GRPC_PRODUCER_GROUP = "rmq-emulator-grpc-producer"
ACCEPTED_TYPES = (T.NORMAL, T.FIFO, T.DELAY, T.TRANSACTION)  # topics made the 4.x way are MIXED
MAX_INVISIBLE_MS = 12 * 3600 * 1000
#: the receive of an auto-renewing (push) consumer: the proxy's default invisible time
AUTO_RENEW_INVISIBLE_MS = 60_000
DEFAULT_LONG_POLLING_MS = 20_000
ENDED_TRANSACTION = {v2.TransactionResolution.COMMIT: MessageSysFlag.TRANSACTION_COMMIT_TYPE,
                     v2.TransactionResolution.ROLLBACK: MessageSysFlag.TRANSACTION_ROLLBACK_TYPE}


@dataclass(slots=True)
class ClientSession:
    client_id: str
    client_type: int = 0
    group: str = ""
    topics: set[str] = field(default_factory=set)
    #: server-to-client telemetry commands (transaction checks); None while no Telemetry stream is open
    outbox: asyncio.Queue[Any] | None = None
    last_seen: float = field(default_factory=time.monotonic)


class Failure(Exception):
    """An RPC refused with a status code of the 5.x protocol."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _status_of(exc: Exception) -> Any:
    if isinstance(exc, Failure):
        return cv.status(exc.code, exc.message)
    if isinstance(exc, BrokerError):
        return cv.status_of_remoting(exc.code, exc.remark)
    log.error("gRPC request failed", exc_info=exc)
    return cv.status(C.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")


class MessagingService:
    """`brokers()`: the running brokers; `endpoint()`: the (host, port) routes advertise when a client sent no
    endpoints of its own."""

    def __init__(self, brokers: Callable[[], Iterable[BrokerContext]], endpoint: Callable[[], tuple[str, int]]) -> None:
        self.brokers = brokers
        self.endpoint = endpoint
        self.sessions: dict[str, ClientSession] = {}
        self._round_robin = itertools.count()

    # -- helpers ------------------------------------------------------------------------------------
    def session(self, context: Any) -> ClientSession:
        md = dict(context.invocation_metadata() or ())
        client_id = md.get("x-mq-client-id")
        if not client_id:
            raise Failure(C.CLIENT_ID_REQUIRED, "x-mq-client-id is required")
        now = time.monotonic()
        s = self.sessions.get(client_id)
        if s is None:
            self._forget_silent(now)
            s = self.sessions[client_id] = ClientSession(client_id)
        s.last_seen = now
        return s

    def _forget_silent(self, now: float) -> None:
        """Clients gone without NotifyClientTermination (killed): heard of nothing for 2 minutes (they heartbeat
        every 10 s) and no Telemetry stream open."""
        for client_id in [c for c, s in self.sessions.items() if s.outbox is None and now - s.last_seen > 120]:
            del self.sessions[client_id]

    def broker_named(self, name: str) -> BrokerContext:
        for b in self.brokers():
            if b.config.broker_name == name:
                return b
        raise Failure(C.NOT_FOUND, f"broker {name!r} is not in this emulator")

    def brokers_of(self, topic: str) -> list[BrokerContext]:
        found = [b for b in self.brokers() if b.topic_config_manager.get(topic) is not None]
        if not found:
            raise Failure(C.TOPIC_NOT_FOUND, f"topic {topic!r} not found")
        return found

    def group_config(self, b: BrokerContext, group: str) -> Any:
        if not group:
            raise Failure(C.ILLEGAL_CONSUMER_GROUP, "the consumer group is empty")
        cfg = b.subscription_group_manager.find(group)
        if cfg is None:
            raise Failure(C.CONSUMER_GROUP_NOT_FOUND, f"consumer group {group!r} not found (autoCreateSubscriptionGroup"
                                                      " is off)")
        return cfg

    def endpoints(self, given: Any = None) -> Any:
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
    async def QueryRoute(self, request: Any, context: Any) -> Any:
        try:
            self.session(context)
            topic = request.topic.name
            endpoints = self.endpoints(request.endpoints)
            queues = []
            for b in self.brokers_of(topic):
                tc = b.topic_config_manager.get(topic)
                assert tc is not None
                broker = v2.Broker(name=b.config.broker_name, id=0, endpoints=endpoints)
                for qid in range(max(tc.read_queue_nums, tc.write_queue_nums)):
                    read = qid < tc.read_queue_nums and tc.perm & PermName.READ
                    write = qid < tc.write_queue_nums and tc.perm & PermName.WRITE
                    perm = v2.Permission.READ_WRITE if read and write else v2.Permission.READ if read else \
                        v2.Permission.WRITE if write else v2.Permission.NONE
                    mq = v2.MessageQueue(id=qid, permission=perm, broker=broker, accept_message_types=ACCEPTED_TYPES)
                    mq.topic.CopyFrom(request.topic)
                    queues.append(mq)
            return v2.QueryRouteResponse(status=cv.status(), message_queues=queues)
        except Exception as exc:  # noqa: BLE001 - every failure is a status
            return v2.QueryRouteResponse(status=_status_of(exc))

    async def Heartbeat(self, request: Any, context: Any) -> Any:
        try:
            s = self.session(context)
            s.client_type = request.client_type or s.client_type
            if request.HasField("group") and request.group.name:
                s.group = request.group.name
                for b in self.brokers():
                    self.group_config(b, s.group)
            return v2.HeartbeatResponse(status=cv.status())
        except Exception as exc:  # noqa: BLE001
            return v2.HeartbeatResponse(status=_status_of(exc))

    async def NotifyClientTermination(self, request: Any, context: Any) -> Any:
        md = dict(context.invocation_metadata() or ())
        s = self.sessions.pop(md.get("x-mq-client-id", ""), None)
        if s is not None and s.outbox is not None:
            s.outbox.put_nowait(None)
        return v2.NotifyClientTerminationResponse(status=cv.status())

    async def QueryAssignment(self, request: Any, context: Any) -> Any:
        try:
            self.session(context)
            topic = request.topic.name
            endpoints = self.endpoints(request.endpoints)
            out = []
            for b in self.brokers_of(topic):
                self.group_config(b, request.group.name)
                mq = v2.MessageQueue(id=-1, permission=v2.Permission.READ_WRITE, accept_message_types=ACCEPTED_TYPES,
                                     broker=v2.Broker(name=b.config.broker_name, id=0, endpoints=endpoints))
                mq.topic.CopyFrom(request.topic)
                out.append(v2.Assignment(message_queue=mq))
            return v2.QueryAssignmentResponse(status=cv.status(), assignments=out)
        except Exception as exc:  # noqa: BLE001
            return v2.QueryAssignmentResponse(status=_status_of(exc))

    # -- send ---------------------------------------------------------------------------------------
    async def SendMessage(self, request: Any, context: Any) -> Any:
        try:
            self.session(context)
            if not len(request.messages):
                raise Failure(C.BAD_REQUEST, "no message to send")
            peer = _peer(context)
            entries = [self._send_one(m, peer) for m in request.messages]
        except Exception as exc:  # noqa: BLE001
            return v2.SendMessageResponse(status=_status_of(exc))
        codes = {e.status.code for e in entries}
        overall = entries[0].status if len(codes) == 1 else cv.status(C.MULTIPLE_RESULTS, "multiple results")
        return v2.SendMessageResponse(status=overall, entries=entries)

    def _send_one(self, m: Any, peer: tuple[str, int]) -> Any:
        sp = m.system_properties
        try:
            topic = m.topic.name
            b = self.brokers_of(topic)[0]
            limit = b.config.store.max_message_size
            if len(m.body) > limit:
                raise Failure(C.MESSAGE_BODY_TOO_LARGE, f"message body of {len(m.body)} bytes is over {limit}")
            if sp.HasField("tag") and ("|" in sp.tag or not sp.tag.strip()):
                raise Failure(C.ILLEGAL_MESSAGE_TAG, f"illegal tag {sp.tag!r}")
            props = cv.properties_of(m)
            transactional = sp.message_type == T.TRANSACTION
            if transactional:
                props[PROPERTY_PRODUCER_GROUP] = GRPC_PRODUCER_GROUP
            deliver = props.get(PROPERTY_TIMER_DELIVER_MS)
            if deliver is not None and int(deliver) - time.time() * 1000 > MAX_DELAY_MS:
                raise Failure(C.ILLEGAL_DELIVERY_TIME, f"the delivery time is more than {MAX_DELAY_MS // 3600000} "
                                                       "hours ahead")
            tc = b.topic_config_manager.get(topic)
            assert tc is not None
            queues = max(1, tc.write_queue_nums)
            group = props.get(cv.PROPERTY_SHARDING_KEY)
            queue_id = abs(java_string_hash(group)) % queues if group else next(self._round_robin) % queues
            result = b.send_core.send(SendMessageRequest.of(
                GRPC_PRODUCER_GROUP, topic, bytes(m.body), props, queue_id=queue_id, born_ms=cv.born_ms(m),
                sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE if transactional else 0, peer=peer))
            if result.msg_id is None:
                raise BrokerError(result.code, result.remark)
            return v2.SendResultEntry(status=cv.status_of_remoting(result.code, result.remark or "OK"),
                                      message_id=sp.message_id, offset=result.queue_offset,
                                      transaction_id=result.msg_id if transactional else "")
        except Exception as exc:  # noqa: BLE001 - one entry's failure
            return v2.SendResultEntry(status=_status_of(exc), message_id=sp.message_id)

    async def EndTransaction(self, request: Any, context: Any) -> Any:
        try:
            self.session(context)
            resolution = ENDED_TRANSACTION.get(request.resolution)
            if resolution is None:
                raise Failure(C.BAD_REQUEST, "the resolution must be COMMIT or ROLLBACK")
            try:
                _, _, commit_log_offset = decode_message_id(request.transaction_id)
            except Exception:  # noqa: BLE001 - any malformed id
                raise Failure(C.INVALID_TRANSACTION_ID, f"invalid transaction id {request.transaction_id!r}") from None
            for b in self.brokers_of(request.topic.name):
                half = b.store.look_message_by_offset(commit_log_offset)
                if half is None:
                    continue
                header = EndTransactionRequestHeader(
                    producer_group=half.properties.get(PROPERTY_PRODUCER_GROUP, ""),
                    tran_state_table_offset=half.queue_offset, commit_log_offset=commit_log_offset,
                    commit_or_rollback=resolution,
                    from_transaction_check=request.source == v2.TransactionSource.SOURCE_SERVER_CHECK,
                    msg_id=request.message_id, transaction_id=request.transaction_id)
                outcome = b.transactions.end_transaction(header, "grpc")
                if outcome is not None and outcome[0] != ResponseCode.SUCCESS:
                    raise BrokerError(outcome[0], outcome[1])
                return v2.EndTransactionResponse(status=cv.status())
            raise Failure(C.INVALID_TRANSACTION_ID, f"no prepared message for transaction {request.transaction_id!r}")
        except Exception as exc:  # noqa: BLE001
            return v2.EndTransactionResponse(status=_status_of(exc))

    # -- consume ------------------------------------------------------------------------------------
    async def ReceiveMessage(self, request: Any, context: Any) -> AsyncIterator[Any]:
        try:
            self.session(context)
            pop_request, b = self._pop_request(request, context)
            result = await b.pop_service.pop(pop_request)
        except Exception as exc:  # noqa: BLE001
            yield v2.ReceiveMessageResponse(status=_status_of(exc))
            return
        if not result.messages:
            yield v2.ReceiveMessageResponse(status=cv.status(C.MESSAGE_NOT_FOUND, "no new message"))
            return
        yield v2.ReceiveMessageResponse(status=cv.status())
        for popped in result.messages:
            yield v2.ReceiveMessageResponse(message=cv.to_v2(
                popped.message, receipt_handle=popped.handle.encode(), attempt=popped.attempt,
                invisible_ms=result.invisible_ms, topic=request.message_queue.topic.name))
        yield v2.ReceiveMessageResponse(delivery_timestamp=cv.timestamp(result.pop_time))

    def _pop_request(self, request: Any, context: Any) -> tuple[PopRequest, BrokerContext]:
        topic = request.message_queue.topic.name
        group = request.group.name
        name = request.message_queue.broker.name
        b = self.broker_named(name) if name else self.brokers_of(topic)[0]
        cfg = self.group_config(b, group)
        if request.auto_renew or not request.HasField("invisible_duration"):
            invisible = AUTO_RENEW_INVISIBLE_MS
        else:
            invisible = cv.duration_ms(request.invisible_duration)
            low = b.config.min_invisible_time_mills_for_recv
            if not low <= invisible <= MAX_INVISIBLE_MS:
                raise Failure(C.ILLEGAL_INVISIBLE_TIME, f"the invisible time {invisible} ms is out of range "
                                                        f"[{low}, {MAX_INVISIBLE_MS}] ms")
        batch = request.batch_size or 32
        if not 0 < batch <= 32:
            raise Failure(C.BAD_REQUEST, f"batch size {batch} is out of range [1, 32]")
        poll = cv.duration_ms(request.long_polling_timeout) if request.HasField("long_polling_timeout") \
            else DEFAULT_LONG_POLLING_MS
        remaining = context.time_remaining()
        if remaining is not None:  # answer before the client's deadline
            poll = max(0, min(poll, int(remaining * 1000) - 1000))
        expression = request.filter_expression
        kind = "SQL92" if expression.type == v2.FilterType.SQL else "TAG"
        try:
            tags, record_filter = b.pop_service.filters(kind, expression.expression or "*")
        except BrokerError as exc:
            raise Failure(C.ILLEGAL_FILTER_EXPRESSION, exc.remark or "illegal filter expression") from None
        # the proxy pops every queue of the broker the request names, whatever its queue id (a SimpleConsumer
        # names a queue of the route)
        return PopRequest(group, topic, invisible, -1, batch, poll, 1, tags, record_filter,
                          bool(getattr(cfg, "consume_message_orderly", False))), b

    def _handle(self, text: str) -> tuple[ReceiptHandle, BrokerContext]:
        handle = ReceiptHandle.parse(text)
        if handle is None:
            raise Failure(C.INVALID_RECEIPT_HANDLE, f"invalid receipt handle {text!r}")
        return handle, self.broker_named(handle.broker_name)

    async def AckMessage(self, request: Any, context: Any) -> Any:
        try:
            self.session(context)
            entries = []
            for e in request.entries:
                try:
                    _, b = self._handle(e.receipt_handle)
                    b.pop_service.ack(request.group.name, request.topic.name, e.receipt_handle)
                    st = cv.status()
                except Exception as exc:  # noqa: BLE001
                    st = _status_of(exc)
                entries.append(v2.AckMessageResultEntry(message_id=e.message_id, receipt_handle=e.receipt_handle,
                                                        status=st))
        except Exception as exc:  # noqa: BLE001
            return v2.AckMessageResponse(status=_status_of(exc))
        codes = {e.status.code for e in entries}
        overall = entries[0].status if len(codes) == 1 else cv.status(C.MULTIPLE_RESULTS, "multiple results")
        return v2.AckMessageResponse(status=overall if entries else cv.status(), entries=entries)

    async def ChangeInvisibleDuration(self, request: Any, context: Any) -> Any:
        try:
            self.session(context)
            _, b = self._handle(request.receipt_handle)
            invisible = cv.duration_ms(request.invisible_duration)
            if not 0 <= invisible <= MAX_INVISIBLE_MS:
                raise Failure(C.ILLEGAL_INVISIBLE_TIME, f"the invisible time {invisible} ms is out of range")
            new = b.pop_service.change_invisible(request.group.name, request.topic.name, request.receipt_handle,
                                                 invisible)
            return v2.ChangeInvisibleDurationResponse(status=cv.status(), receipt_handle=new.encode())
        except Exception as exc:  # noqa: BLE001
            return v2.ChangeInvisibleDurationResponse(status=_status_of(exc))

    async def ForwardMessageToDeadLetterQueue(self, request: Any, context: Any) -> Any:
        try:
            self.session(context)
            _, b = self._handle(request.receipt_handle)
            b.pop_service.forward_to_dlq(request.group.name, request.topic.name, request.receipt_handle)
            return v2.ForwardMessageToDeadLetterQueueResponse(status=cv.status())
        except Exception as exc:  # noqa: BLE001
            return v2.ForwardMessageToDeadLetterQueueResponse(status=_status_of(exc))

    # -- telemetry ----------------------------------------------------------------------------------
    async def Telemetry(self, request_iterator: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        try:
            s = self.session(context)
        except Failure as exc:
            yield v2.TelemetryCommand(status=cv.status(exc.code, exc.message))
            return
        outbox: asyncio.Queue[Any] = asyncio.Queue()
        s.outbox = outbox

        async def read() -> None:
            try:
                async for command in request_iterator:
                    if command is None:  # malformed: nothing to answer on this stream
                        continue
                    if command.HasField("settings"):
                        outbox.put_nowait(v2.TelemetryCommand(status=cv.status(),
                                                              settings=self.settings(s, command.settings)))
            except Exception as exc:  # noqa: BLE001 - the stream ended or broke
                log.debug("telemetry of %s ended: %s", s.client_id, exc)
            outbox.put_nowait(None)

        reader = asyncio.ensure_future(read())
        try:
            while True:
                item = await outbox.get()
                if item is None:
                    return
                yield item
        finally:
            reader.cancel()
            if s.outbox is outbox:
                s.outbox = None

    def settings(self, s: ClientSession, given: Any) -> Any:
        """The client's settings merged with the server's (the proxy's GrpcClientSettingsManager)."""
        out = v2.Settings()
        out.CopyFrom(given)
        b = next(iter(self.brokers()), None)
        if given.HasField("client_type"):
            s.client_type = given.client_type
        if given.WhichOneof("pub_sub") == "publishing":
            s.topics = {t.name for t in given.publishing.topics}
            policy = out.backoff_policy
            policy.Clear()
            policy.max_attempts = 3
            policy.exponential_backoff.initial.CopyFrom(cv.duration(10))
            policy.exponential_backoff.max.CopyFrom(cv.duration(1000))
            policy.exponential_backoff.multiplier = 2.0
            out.publishing.max_body_size = b.config.store.max_message_size if b is not None else 4 * 1024 * 1024
            out.publishing.validate_message_type = True
        elif given.WhichOneof("pub_sub") == "subscription":
            s.group = given.subscription.group.name
            cfg = b.subscription_group_manager.find(s.group) if b is not None else None
            policy = out.backoff_policy
            policy.Clear()
            policy.max_attempts = (cfg.retry_max_times if cfg is not None else 16) + 1
            levels = parse_delay_levels(b.config.store.message_delay_level) if b is not None else [1000]
            policy.customized_backoff.next.extend(cv.duration(ms) for ms in levels)
            out.subscription.fifo = bool(getattr(cfg, "consume_message_orderly", False))
            out.subscription.receive_batch_size = 32
            out.subscription.long_polling_timeout.CopyFrom(cv.duration(DEFAULT_LONG_POLLING_MS))
        out.metric.on = False
        out.metric.endpoints.CopyFrom(self.endpoints())
        return out

    def check_transaction(self, half: Any) -> bool:
        """A half message's check-back to a 5.x producer of its topic (RecoverOrphanedTransactionCommand); False
        when none has a Telemetry stream open."""
        if half.properties.get(PROPERTY_PRODUCER_GROUP) != GRPC_PRODUCER_GROUP:
            return False
        for s in self.sessions.values():
            if s.outbox is not None and half.topic in s.topics:
                command = v2.TelemetryCommand()
                command.recover_orphaned_transaction_command.message.CopyFrom(cv.to_v2(half))
                command.recover_orphaned_transaction_command.transaction_id = half.offset_msg_id
                s.outbox.put_nowait(command)
                return True
        return False


def _peer(context: Any) -> tuple[str, int]:
    """("ip", port) of the caller (gRPC's peer is "ipv4:1.2.3.4:5678" or "ipv6:[::1]:5678")."""
    kind, _, rest = (context.peer() or "").partition(":")
    host, _, port = rest.rpartition(":")
    # born host is packed as IPv4 here: an IPv6 peer (or a Unix socket) is recorded as 127.0.0.1
    return (host if kind == "ipv4" else "127.0.0.1"), int(port) if port.isdigit() else 0
