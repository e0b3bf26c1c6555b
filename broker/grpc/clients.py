"""The 5.x clients of the gRPC endpoint as the proxy keeps them (GrpcClientSettingsManager, the Telemetry
stream): a session per client id, the settings it sent merged with the server's, NotifyClientTermination, and
the server-to-client commands (a half message's transaction check-back to a producer of its topic).
MessagingService (messaging.py) is one of these, with the RPCs of messages on top."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Iterable

import grpc

from rocketmq_emulator.protocol.admin_bodies import ExponentialRetryPolicy
from rocketmq_emulator.protocol.bodies import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from rocketmq_emulator.protocol.codes import GRPC_CLIENT_VERSION, LANGUAGE_BY_NAME
from rocketmq_emulator.protocol.grpc_v2 import v2
from rocketmq_emulator.protocol.message import (PROPERTY_PRODUCER_GROUP, PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
                                                java_string_hash)
from rocketmq_emulator.protocol.topics import parse_delay_levels

from rocketmq_emulator.protocol.transport import RemotingConnection

from ..core.read_model import BrokerFront
from ..state.client_manager import ClientChannelInfo
from . import converter as cv
from .answers import DEFAULT_LONG_POLLING_MS, named
from .limits import Outbox
from .renewal import ReceiptRenewal
from .validate import Failure

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.grpc_v2 import types as pb

log = logging.getLogger("rocketmq_emulator.grpc")
C = v2.Code
#: the producer group of messages sent through gRPC (5.x producers have none): transaction check-backs go to a
#: 5.x producer publishing the message's topic
GRPC_PRODUCER_GROUP = "rmq-emulator-grpc-producer"
#: a client heard of nothing for this long (and no Telemetry stream open) is gone (the proxy's channel expiry)
SILENT_S = 120.0


def peer_address(context: Any) -> str:
    """The caller's address as the remoting side writes one ("127.0.0.1:5678"; gRPC's peer is
    "ipv4:127.0.0.1:5678" or "ipv6:[::1]:5678")."""
    peer = context.peer() or ""
    return peer.split(":", 1)[1] if peer.startswith(("ipv4:", "ipv6:")) else peer


class GrpcClientChannel(RemotingConnection):
    """A 5.x client as the broker's consumer and producer tables hold it (the proxy's GrpcClientChannel): its
    address for `consumerConnection` and the dashboard; remoting requests to clients (NOTIFY_CONSUMER_IDS_CHANGED,
    a reset's RESET_CONSUMER_CLIENT_OFFSET, ...) do not reach it: a 5.x client rebalances and resets through the
    proxy, and hears from it over Telemetry."""

    def __init__(self, peer: str) -> None:
        super().__init__(None, name="grpc", addr=peer)

    def send(self, cmd: Any) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


@dataclass(slots=True)
class ClientSession:
    client_id: str
    client_type: int = 0
    group: str = ""
    topics: set[str] = field(default_factory=set)
    #: the client as the brokers' client tables hold it, and what they show of it
    channel: GrpcClientChannel | None = None
    language: str = "JAVA"
    #: its subscriptions (settings), for the brokers' consumer tables
    subscriptions: list[SubscriptionData] = field(default_factory=list)
    #: server-to-client telemetry commands (settings replies, transaction checks); None while no Telemetry stream
    #: is open
    outbox: Outbox | None = None
    last_seen: float = field(default_factory=time.monotonic)
    #: the settings the client sent over Telemetry (the proxy's GrpcClientSettingsManager); None before, and after
    #: NotifyClientTermination
    has_settings: bool = False


def subscription_data(entry: Any) -> SubscriptionData:
    """A 5.x SubscriptionEntry as the broker's consumer table keeps it (the proxy's buildSubscriptionData): a tag
    expression split into its tags and their hash codes, or a SQL92 expression."""
    expression = entry.expression.expression or "*"
    sql = entry.expression.type == v2.FilterType.SQL
    tags = [] if sql or expression.strip() == "*" else [t.strip() for t in expression.split("||") if t.strip()]
    return SubscriptionData(topic=entry.topic.name, sub_string=expression, tags_set=tags,
                            code_set=[java_string_hash(t) for t in tags], sub_version=int(time.time() * 1000),
                            expression_type="SQL92" if sql else "TAG")


class ClientSessions:
    """`brokers()`: the running brokers (each one's read model and write cores)."""

    def __init__(self, brokers: Callable[[], Iterable[BrokerFront]]) -> None:
        self.brokers = brokers
        self.sessions: dict[str, ClientSession] = {}
        #: push consumers' receipt handles, renewed while they consume (renewal.py)
        self.renewal = ReceiptRenewal(self.is_alive)
        #: the proxy's TransactionService: (topic, transaction id) -> (broker name, commit log offset) of the half
        self.transactions: dict[tuple[str, str], tuple[str, int]] = {}

    def session(self, context: Any) -> ClientSession:
        md = dict(context.invocation_metadata() or ())
        client_id = md.get("x-mq-client-id")
        if not client_id:
            raise Failure(C.CLIENT_ID_REQUIRED, "client id cannot be empty")
        now = time.monotonic()
        s = self.sessions.get(client_id)
        if s is None:
            self._forget_silent(now)
            language = str(md.get("x-mq-language") or "JAVA").upper()
            s = self.sessions[client_id] = ClientSession(
                client_id, channel=GrpcClientChannel(peer_address(context)),
                language=language if language in LANGUAGE_BY_NAME else "OTHER")
        s.last_seen = now
        return s

    def is_alive(self, client_id: str) -> bool:
        """The client has a session and was heard of lately (a Telemetry stream open, or a call within the
        proxy's channel expiry of 120 s)."""
        s = self.sessions.get(client_id)
        return s is not None and (s.outbox is not None or time.monotonic() - s.last_seen <= SILENT_S)

    def _forget_silent(self, now: float) -> None:
        """Clients gone without NotifyClientTermination (killed): heard of nothing for 2 minutes (they heartbeat
        every 10 s) and no Telemetry stream open."""
        for client_id in [c for c, s in self.sessions.items() if s.outbox is None and now - s.last_seen > SILENT_S]:
            del self.sessions[client_id]

    async def NotifyClientTermination(self, request: pb.NotifyClientTerminationRequest, context: Any
                                      ) -> pb.NotifyClientTerminationResponse:
        md = dict(context.invocation_metadata() or ())
        s = self.sessions.pop(md.get("x-mq-client-id", ""), None)
        if s is not None and s.outbox is not None:
            s.outbox.close()
        if s is not None:
            self.client_gone(s)
            self.renewal.release(s.client_id)
        return v2.NotifyClientTerminationResponse(status=named(C.OK))

    # -- telemetry ----------------------------------------------------------------------------------
    async def Telemetry(self, request_iterator: AsyncIterator[pb.TelemetryCommand], context: Any
                        ) -> AsyncIterator[pb.TelemetryCommand]:
        try:
            s = self.session(context)
        except Failure as exc:
            yield v2.TelemetryCommand(status=cv.status(exc.code, exc.message))
            return
        outbox = Outbox()
        s.outbox = outbox

        async def read() -> None:
            try:
                async for command in request_iterator:
                    if command is None:  # malformed: nothing to answer on this stream
                        continue
                    if command.HasField("settings"):
                        reply = v2.TelemetryCommand(status=cv.status(), settings=self.settings(s, command.settings))
                        if not outbox.offer(reply):
                            if not outbox.closed:  # closed: the client ended its session, or the server stops
                                await self._overflowed(s, outbox, context)
                            return
            except grpc.aio.AbortError:
                pass
            except Exception as exc:  # noqa: BLE001 - the stream ended or broke
                log.debug("telemetry of %s ended: %s", s.client_id, exc)
            outbox.close()

        reader = asyncio.ensure_future(read())
        try:
            while True:
                item = await outbox.get()
                if item is None:
                    return
                yield item
        except asyncio.CancelledError:  # the client went away (or the server stops): nothing to tell
            log.debug("telemetry of %s cancelled", s.client_id)
            raise
        finally:
            reader.cancel()
            if s.outbox is outbox:
                s.outbox = None

    @staticmethod
    async def _overflowed(s: ClientSession, outbox: Outbox, context: Any) -> None:
        """A client that sends and does not read its replies: its stream is closed with RESOURCE_EXHAUSTED (the
        status follows the replies it has not read), one line logged."""
        log.warning("Telemetry stream of client %s closed (RESOURCE_EXHAUSTED): %d commands (%d bytes) are waiting "
                    "for it to read them; it keeps sending without reading", s.client_id, len(outbox), outbox.bytes)
        outbox.close(drop=True)
        await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                            f"the client does not read its Telemetry stream: more than {outbox.max_commands} commands"
                            f" or {outbox.max_bytes} bytes waiting")

    def register(self, s: ClientSession) -> None:
        """A Heartbeat: the client in each broker's consumer table (its group, CLUSTERING, its subscriptions) or
        producer table (a producer group per topic it publishes), as the 5.3.3 proxy registers it (ClientActivity):
        `consumerConnection`, the Admin API and the dashboard list it, and a client that stops heartbeating
        expires from them after channelExpiredTimeout (120 s), as a 4.x client does."""
        channel = s.channel
        if channel is None:
            return

        def info_of() -> ClientChannelInfo:
            return ClientChannelInfo(channel, s.client_id, s.language, GRPC_CLIENT_VERSION)
        consume_type = {v2.ClientType.SIMPLE_CONSUMER: ConsumeType.CONSUME_ACTIVELY,
                        v2.ClientType.PUSH_CONSUMER: ConsumeType.CONSUME_PASSIVELY}.get(s.client_type)
        for f in self.brokers():
            if consume_type is not None and s.group:
                notify = f.write.config.notify_consumer_ids_changed_enable
                f.write.consumer_manager.register(s.group, info_of(), consume_type, MessageModel.CLUSTERING,
                                                  ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, list(s.subscriptions),
                                                  notify)
            elif s.client_type == v2.ClientType.PRODUCER:
                for topic in s.topics:  # the proxy uses the topic as the producer group
                    f.write.producer_manager.register(topic, info_of())

    def client_gone(self, s: ClientSession) -> None:
        """NotifyClientTermination: out of every broker's client tables at once."""
        if s.channel is None:
            return
        for f in self.brokers():
            notify = f.write.config.notify_consumer_ids_changed_enable
            f.write.consumer_manager.channel_closed(s.channel, notify)
            f.write.producer_manager.channel_closed(s.channel)
        s.channel.close()

    def consumer_seen(self, group: str) -> None:
        """A 5.x consumer of `group` announced itself (its settings, then every Heartbeat): as the proxy's
        heartbeat to each broker, the group is made (when auto-created) with its retry topic and route, so admin
        tools find it as they find a 4.x group."""
        if not group:
            return
        for f in self.brokers():
            cfg = f.read.group_config(group)
            if cfg is not None:
                f.write.topic_config_manager.ensure_group_retry_topic(group, cfg.retry_queue_nums)

    def settings(self, s: ClientSession, given: pb.Settings) -> pb.Settings:
        """The client's settings merged with the server's (the proxy's GrpcClientSettingsManager)."""
        out = v2.Settings()
        out.CopyFrom(given)
        first = next(iter(self.brokers()), None)
        b = first.read if first is not None else None
        s.has_settings = True
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
            s.subscriptions = [subscription_data(entry) for entry in given.subscription.subscriptions]
            self.consumer_seen(s.group)
            cfg = b.group_config(s.group) if b is not None else None
            policy = out.backoff_policy
            policy.Clear()
            policy.max_attempts = (cfg.retry_max_times if cfg is not None else 16) + 1
            retry = getattr(cfg, "group_retry_policy", None)
            if retry is not None and retry.type == "EXPONENTIAL":  # the group's 5.x retry policy
                exp = retry.exponential_retry_policy or ExponentialRetryPolicy()
                policy.exponential_backoff.initial.CopyFrom(cv.duration(exp.initial))
                policy.exponential_backoff.max.CopyFrom(cv.duration(exp.max))
                policy.exponential_backoff.multiplier = float(exp.multiplier)
            elif retry is not None and retry.customized_retry_policy is not None:
                policy.customized_backoff.next.extend(cv.duration(ms) for ms in retry.customized_retry_policy.next)
            else:
                levels = parse_delay_levels(b.config.store.message_delay_level) if b is not None else [1000]
                policy.customized_backoff.next.extend(cv.duration(ms) for ms in levels)
            out.subscription.fifo = bool(getattr(cfg, "consume_message_orderly", False))
            out.subscription.receive_batch_size = 32
            out.subscription.long_polling_timeout.CopyFrom(cv.duration(DEFAULT_LONG_POLLING_MS))
        out.metric.SetInParent()  # the proxy sends an empty Metric: off, no endpoints
        self.register(s)  # as the proxy's processAndWriteClientSettings: known before its first Heartbeat
        return out

    def check_transaction(self, half: Any) -> bool:
        """A half message's check-back to a 5.x producer of its topic (RecoverOrphanedTransactionCommand); False
        when none has a Telemetry stream open with room in its outbox (checked again at the next check)."""
        if half.properties.get(PROPERTY_PRODUCER_GROUP) != GRPC_PRODUCER_GROUP:
            return False
        for s in self.sessions.values():
            if s.outbox is not None and half.topic in s.topics:
                command = v2.TelemetryCommand()
                command.recover_orphaned_transaction_command.message.CopyFrom(cv.to_v2(half))
                transaction_id = half.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or half.offset_msg_id
                command.recover_orphaned_transaction_command.transaction_id = transaction_id
                if not s.outbox.offer(command):  # its outbox is full: another producer, or the next check
                    continue
                name = next((f.name for f in self.brokers()), "")
                for f in self.brokers():
                    if f.read.message_at(half.commit_log_offset) is not None:
                        name = f.name
                        break
                self.transactions[(half.topic, transaction_id)] = (name, half.commit_log_offset)
                return True
        return False
