"""Consumer and producer bookkeeping (reference §9.8, §9.9): who is connected, in which group, with which
subscriptions; NOTIFY_CONSUMER_IDS_CHANGED when a group's membership or subscriptions change."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from collections import deque
from typing import Callable, NamedTuple

from rocketmq_emulator.protocol.bodies import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from rocketmq_emulator.protocol.transport import RemotingConnection


log = logging.getLogger("rocketmq_emulator.clients")


@dataclass
class ClientChannelInfo:
    connection: RemotingConnection
    client_id: str
    language: str
    version: int
    last_update: float = field(default_factory=time.monotonic)


@dataclass
class ConsumerGroupInfo:
    group_name: str
    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    channels: dict[RemotingConnection, ClientChannelInfo] = field(default_factory=dict)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    last_update: float = field(default_factory=time.monotonic)

    def update_channel(self, info: ClientChannelInfo, consume_type: ConsumeType, model: MessageModel,
                       cfw: ConsumeFromWhere) -> bool:
        self.consume_type, self.message_model, self.consume_from_where = consume_type, model, cfw
        self.last_update = time.monotonic()
        old = self.channels.get(info.connection)
        if old is None:
            self.channels[info.connection] = info
            return True
        if old.client_id != info.client_id:
            self.channels[info.connection] = info  # replaced without "changed", as upstream
        else:
            old.last_update = info.last_update
        return False

    def update_subscriptions(self, subs: list[SubscriptionData]) -> bool:
        changed = False
        topics = set()
        for sub in subs:
            topics.add(sub.topic)
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                changed = True
            elif sub.sub_version > old.sub_version:
                self.subscription_table[sub.topic] = sub
        for topic in [t for t in self.subscription_table if t not in topics]:
            del self.subscription_table[topic]
            changed = True
        return changed

    def client_ids(self) -> list[str]:
        return [c.client_id for c in self.channels.values()]

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        for info in self.channels.values():
            if info.client_id == client_id:
                return info
        return None


class ClientEvent(NamedTuple):
    """A consumer joining or leaving a group (the dashboard marks them on its charts)."""

    time_ms: int
    group: str
    client_id: str
    kind: str  # joined, left (unregistered), disconnected


class ConsumerManager:
    def __init__(self, channel_expired_timeout_s: float = 120.0) -> None:
        self.groups: dict[str, ConsumerGroupInfo] = {}
        #: the last 1,000 joins and leaves, oldest first
        self.events: deque[ClientEvent] = deque(maxlen=1000)
        self.channel_expired_timeout_s = channel_expired_timeout_s
        self.on_change: list[Callable[[str, ConsumerGroupInfo], None]] = []

    def get(self, group: str) -> ConsumerGroupInfo | None:
        return self.groups.get(group)

    def register(self, group: str, info: ClientChannelInfo, consume_type: ConsumeType, model: MessageModel,
                 cfw: ConsumeFromWhere, subs: list[SubscriptionData], notify: bool) -> bool:
        gi = self.groups.get(group)
        if gi is None:
            gi = self.groups[group] = ConsumerGroupInfo(group)
        changed = gi.update_channel(info, consume_type, model, cfw)
        if changed:
            log.info("consumer %s joined group %s from %s", info.client_id, group, info.connection.peer)
            self._event(group, info.client_id, "joined")
        changed = gi.update_subscriptions(subs) or changed
        if changed and notify:
            self.notify(group)
        return changed

    def unregister(self, group: str, conn: RemotingConnection, notify: bool) -> None:
        gi = self.groups.get(group)
        if gi is None:
            return
        info = gi.channels.pop(conn, None)
        if info is not None:
            log.info("consumer %s left group %s", info.client_id, group)
            self._event(group, info.client_id, "left")
        if not gi.channels:
            del self.groups[group]
        elif info is not None and notify:
            self.notify(group)

    def channel_closed(self, conn: RemotingConnection, notify: bool) -> None:
        for group, gi in list(self.groups.items()):
            info = gi.channels.pop(conn, None)
            if info is None:
                continue
            log.info("consumer %s of group %s disconnected", info.client_id, group)
            self._event(group, info.client_id, "disconnected")
            if not gi.channels:
                del self.groups[group]
            elif notify:
                self.notify(group)

    def _event(self, group: str, client_id: str, kind: str) -> None:
        self.events.append(ClientEvent(time.time_ns() // 1_000_000, group, client_id, kind))

    def scan_not_active_channels(self, now: float | None = None) -> list[RemotingConnection]:
        """Close channels silent for longer than the expiry (120 s); no notification, as upstream."""
        now = time.monotonic() if now is None else now
        expired = []
        for group, gi in list(self.groups.items()):
            for conn, info in list(gi.channels.items()):
                if now - info.last_update > self.channel_expired_timeout_s:
                    log.warning("consumer %s of group %s expired: no heartbeat for %.0f s", info.client_id, group,
                                now - info.last_update)
                    del gi.channels[conn]
                    expired.append(conn)
            if not gi.channels:
                del self.groups[group]
        return expired

    def notify(self, group: str) -> None:
        gi = self.groups.get(group)
        if gi is None:
            return
        for callback in self.on_change:  # the dashboard's events, then Broker2Client tells the members
            callback(group, gi)

    def groups_subscribing(self, topic: str) -> set[str]:
        return {g for g, gi in self.groups.items() if topic in gi.subscription_table}


class ProducerManager:
    def __init__(self, channel_expired_timeout_s: float = 120.0) -> None:
        self.groups: dict[str, dict[RemotingConnection, ClientChannelInfo]] = {}
        self.channel_expired_timeout_s = channel_expired_timeout_s

    def register(self, group: str, info: ClientChannelInfo) -> None:
        channels = self.groups.setdefault(group, {})
        old = channels.get(info.connection)
        if old is None:
            channels[info.connection] = info
        else:
            old.last_update = info.last_update

    def unregister(self, group: str, conn: RemotingConnection) -> None:
        channels = self.groups.get(group)
        if channels is not None:
            channels.pop(conn, None)
            if not channels:
                del self.groups[group]

    def channel_closed(self, conn: RemotingConnection) -> None:
        for group in list(self.groups):
            self.unregister(group, conn)

    def scan_not_active_channels(self, now: float | None = None) -> list[RemotingConnection]:
        now = time.monotonic() if now is None else now
        expired = []
        for group, channels in list(self.groups.items()):
            for conn, info in list(channels.items()):
                if now - info.last_update > self.channel_expired_timeout_s:
                    del channels[conn]
                    expired.append(conn)
            if not channels:
                del self.groups[group]
        return expired

    def any_channel(self, group: str) -> ClientChannelInfo | None:
        channels = self.groups.get(group)
        return next(iter(channels.values()), None) if channels else None

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        """The connection of a producer by its client id (request-reply pushes replies to it); the most recently
        heard of when a client has several."""
        found = None
        for channels in self.groups.values():
            for info in channels.values():
                if info.client_id == client_id and (found is None or info.last_update > found.last_update):
                    found = info
        return found
