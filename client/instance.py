"""`ClientInstance` (Java `MQClientInstance`): what producers, consumers and the admin client of one process
and client id share: connections, route data (refreshed every 30 s and on error), heartbeats (every 30 s,
and at once when a broker shows up), offset persistence (every 5 s) and the one table of the requests its
brokers send it (`remoting_processor`).

Instances are kept per (event loop, client id, name server list) and counted: the first `acquire` starts
one, the last `release` stops it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any, Awaitable, Protocol

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import (ConsumerData, HeartbeatData, MessageQueue, ProducerData, TopicRouteData)
from rocketmq_emulator.protocol.headers import GetRouteInfoRequestHeader
from rocketmq_emulator.protocol.topics import AUTO_CREATE_TOPIC_KEY
from rocketmq_emulator.protocol.transport import PeriodicTasks

from . import route as routing
from .api import BrokerAPI, request
from .config import LANGUAGE, ClientConfig
from .errors import (NAMESRV, BrokerUnreachableError, ClientError, ClientStateError, NoRouteError,
                     RequestTimeoutError, response_error)
from .message import set_unique_id_ip
from .remoting import RemotingClient
from .remoting_processor import ClientRemotingProcessor, ServedConsumer
from .request_reply import RequestFutureHolder


log = logging.getLogger("rocketmq_emulator.client")
log.addHandler(logging.NullHandler())

CLIENT_INNER_PRODUCER = "CLIENT_INNER_PRODUCER"


class RegisteredConsumer(ServedConsumer, Protocol):
    """What a consumer offers its instance (push consumers, pull consumers): its heartbeat data, topics and
    offsets, and (`server_requests`) its answers to its brokers' requests."""

    group: str

    def consumer_data(self) -> ConsumerData: ...

    def subscribed_topics(self) -> set[str]: ...

    async def persist_consumer_offsets(self) -> None: ...


class ClientInstance:
    _registry: dict[tuple[Any, str, str], ClientInstance] = {}

    def __init__(self, client_id: str, config: ClientConfig) -> None:
        self.client_id = client_id
        self.config = config
        self.producers: dict[str, object] = {}
        self.consumers: dict[str, RegisteredConsumer] = {}
        #: this client's requests waiting for their replies (request-reply)
        self.replies = RequestFutureHolder()
        self.processor = ClientRemotingProcessor(client_id, self.consumers, self.replies, self.producers)
        self.remoting = RemotingClient(self.processor.dispatch_table(), connect_timeout=config.connect_timeout,
                                       backoff_max=config.reconnect_backoff_max)
        self.routes: dict[str, TopicRouteData] = {}
        self.publish: dict[str, routing.TopicPublishInfo] = {}
        #: broker name -> {broker id: address}, merged from every route seen
        self.brokers: dict[str, dict[int, str]] = {}
        self._namesrv = config.namesrv_addrs
        self._namesrv_index = random.randrange(len(self._namesrv))
        self._refs = 0
        self.timers = PeriodicTasks(self._periodic_failed)
        self._background: set[asyncio.Task[Any]] = set()
        self._route_locks: dict[str, asyncio.Lock] = {}
        self._refreshed: dict[str, float] = {}
        self._heartbeat_lock = asyncio.Lock()
        self.started = False
        self.api = BrokerAPI(self.remoting, client_id, config)
        set_unique_id_ip(client_id.partition("@")[0])

    # -- registry -----------------------------------------------------------------------------------
    @classmethod
    async def acquire(cls, client_id: str, config: ClientConfig) -> ClientInstance:
        key = (asyncio.get_running_loop(), client_id, ";".join(config.namesrv_addrs))
        inst = cls._registry.get(key)
        if inst is None:
            inst = cls._registry[key] = ClientInstance(client_id, config)
            inst._start()
        inst._refs += 1
        return inst

    async def release(self) -> None:
        self._refs -= 1
        if self._refs > 0:
            return
        for key, inst in list(self._registry.items()):
            if inst is self:
                del self._registry[key]
        await self._stop()

    def _start(self) -> None:
        self.started = True
        self.timers.every(self.config.poll_name_server_interval, self.refresh_routes)
        self.timers.every(self.config.heartbeat_broker_interval, self.send_heartbeat_to_all_brokers)
        self.timers.every(self.config.persist_consumer_offset_interval, self._persist_all_offsets)

    async def _stop(self) -> None:
        self.started = False
        await self.timers.stop()
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background.clear()
        self.remoting.close()

    def _periodic_failed(self, name: str, exc: BaseException) -> None:
        if isinstance(exc, ClientError):  # a broker away for a while: said once per round, quietly
            log.debug("%s: periodic %s failed: %s", self.client_id, name, exc)
        else:
            log.error("%s: periodic %s failed", self.client_id, name, exc_info=exc)

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """Run `coro` in the background; cancelled when the instance stops; failures are logged."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background_done)
        return task

    def _background_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            if isinstance(exc, ClientError):
                log.debug("%s: background task failed: %s", self.client_id, exc)
            else:
                log.error("%s: background task failed", self.client_id, exc_info=exc)

    # -- producers and consumers --------------------------------------------------------------------
    def register_producer(self, group: str, producer: object) -> None:
        if group in self.producers:
            raise ClientStateError(f"producer group {group!r} is already started in client {self.client_id}; "
                                   f"use another group or instance_name")
        self.producers[group] = producer

    def unregister_producer(self, group: str) -> None:
        self.producers.pop(group, None)

    def register_consumer(self, group: str, consumer: RegisteredConsumer) -> None:
        if group in self.consumers:
            raise ClientStateError(f"consumer group {group!r} is already started in client {self.client_id}; "
                                   f"use another group or instance_name")
        self.consumers[group] = consumer

    def unregister_consumer(self, group: str) -> None:
        self.consumers.pop(group, None)

    async def unregister_client(self, *, producer_group: str | None = None,
                                consumer_group: str | None = None) -> None:
        """UNREGISTER_CLIENT to every known broker (best effort, bounded by the request timeout)."""
        addrs = self.broker_addrs(masters_only=False)
        await asyncio.gather(*(self.api.unregister_client(a, producer_group, consumer_group) for a in addrs),
                             return_exceptions=True)

    # -- name server --------------------------------------------------------------------------------
    async def invoke_namesrv(self, cmd: RemotingCommand, timeout: float | None = None) -> RemotingCommand:
        """Send to a name server; on a connection failure or timeout try the next one."""
        timeout = timeout or self.config.request_timeout
        last: Exception | None = None
        for i in range(len(self._namesrv)):
            addr = self._namesrv[(self._namesrv_index + i) % len(self._namesrv)]
            try:
                response = await self.remoting.invoke(addr, cmd, timeout)
            except (BrokerUnreachableError, RequestTimeoutError) as exc:
                last = exc
                cmd = RemotingCommand.request(cmd.code, cmd.ext_fields, cmd.body, language=LANGUAGE)
                continue
            self._namesrv_index = (self._namesrv_index + i) % len(self._namesrv)
            return response
        assert last is not None
        raise last

    async def fetch_route(self, topic: str) -> TopicRouteData:
        """GET_ROUTEINFO_BY_TOPIC; `NoRouteError` if the name server does not know the topic."""
        cmd = request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic).to_ext())
        response = await self.invoke_namesrv(cmd)
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            raise NoRouteError(topic)
        if response.code != ResponseCode.SUCCESS:
            raise response_error(response.code, response.remark, operation=f"route lookup of {topic!r}",
                                 addr=NAMESRV)
        route = TopicRouteData.decode(response.body)
        self._remember_route(topic, route)
        return route

    def _remember_route(self, topic: str, route: TopicRouteData) -> None:
        self.routes[topic] = route
        new_broker = False
        for bd in route.broker_datas:
            known = self.brokers.get(bd.broker_name)
            if known != bd.broker_addrs:
                new_broker = new_broker or known is None or bool(set(bd.broker_addrs.values()) - set(known.values()))
                self.brokers[bd.broker_name] = dict(bd.broker_addrs)
        if topic in self.publish or self.producers:
            info = routing.publish_info(topic, route)
            if info.ok:
                self.publish[topic] = info
        if new_broker and (self.producers or self.consumers) and self.started:
            self.spawn(self.send_heartbeat_to_all_brokers())

    async def topic_route(self, topic: str, *, refresh: bool = False) -> TopicRouteData:
        route = self.routes.get(topic)
        if route is not None and not refresh:
            return route
        lock = self._route_locks.setdefault(topic, asyncio.Lock())
        async with lock:
            route = self.routes.get(topic)
            if route is not None and not refresh:
                return route
            return await self.fetch_route(topic)

    async def publish_info(self, topic: str) -> routing.TopicPublishInfo:
        """Where to send `topic`: its route, or (topic unknown) TBW102's queues so the broker creates it."""
        info = self.publish.get(topic)
        if info is not None and info.ok:
            return info
        try:
            route = await self.topic_route(topic, refresh=True)
        except NoRouteError:
            try:
                default = await self.topic_route(AUTO_CREATE_TOPIC_KEY, refresh=True)
            except NoRouteError:
                raise NoRouteError(topic, f"no route info of topic {topic!r} at the name server, and topic "
                                          f"auto-creation is disabled (no {AUTO_CREATE_TOPIC_KEY} route)") \
                    from None
            info = routing.publish_info(topic, default, from_default_topic=True)
            if not info.ok:
                raise NoRouteError(topic) from None
            self.publish[topic] = info
            return info
        info = routing.publish_info(topic, route)
        if not info.ok:
            raise NoRouteError(topic, f"topic {topic!r} has no writable queue on a broker with a master")
        self.publish[topic] = info
        return info

    async def refresh_routes(self) -> None:
        topics = set(self.routes) | set(self.publish)
        for consumer in self.consumers.values():
            topics |= consumer.subscribed_topics()
        for topic in sorted(topics):
            try:
                await self.topic_route(topic, refresh=True)
            except NoRouteError:
                pass  # keep what we had (Java does too); the broker may not have created it yet
            except ClientError as exc:
                log.debug("%s: route refresh of %s failed: %s", self.client_id, topic, exc)

    def refresh_route_soon(self, topic: str) -> None:
        """Refresh a route after an error (at most once a second per topic)."""
        now = time.monotonic()
        if self.started and now - self._refreshed.get(topic, 0.0) >= 1.0:
            self._refreshed[topic] = now
            self.spawn(self._refresh_quietly(topic))

    async def _refresh_quietly(self, topic: str) -> None:
        try:
            await self.topic_route(topic, refresh=True)
        except ClientError:
            pass

    # -- broker addresses ---------------------------------------------------------------------------
    def broker_addrs(self, *, masters_only: bool = True) -> list[str]:
        out = []
        for addrs in self.brokers.values():
            for bid, addr in sorted(addrs.items()):
                if bid == routing.MASTER_ID or not masters_only:
                    out.append(addr)
        return sorted(set(out))

    def master_addr(self, broker_name: str) -> str | None:
        addrs = self.brokers.get(broker_name)
        return addrs.get(routing.MASTER_ID) if addrs else None

    async def find_master(self, broker_name: str, topic: str | None = None) -> str:
        addr = self.master_addr(broker_name)
        if addr is None and topic is not None:
            try:
                await self.topic_route(topic, refresh=True)
            except ClientError:
                pass
            addr = self.master_addr(broker_name)
        if addr is None:
            raise NoRouteError(topic or broker_name, f"no master address known for broker {broker_name!r}")
        return addr

    async def find_admin(self, broker_name: str, topic: str | None = None) -> str:
        """The master of `broker_name`, else its slave (4.9.8's findBrokerAddressInAdmin): where a consumer reads
        and commits its offsets, so that it goes on from a slave while the master is away."""
        addrs = self.brokers.get(broker_name)
        if not addrs and topic is not None:
            try:
                await self.topic_route(topic, refresh=True)
            except ClientError:
                pass
            addrs = self.brokers.get(broker_name)
        if not addrs:
            raise NoRouteError(topic or broker_name, f"no address known for broker {broker_name!r}")
        return addrs[min(addrs)]

    def subscribe_addr(self, broker_name: str, broker_id: int = routing.MASTER_ID) -> str | None:
        addrs = self.brokers.get(broker_name)
        if not addrs:
            return None
        return addrs.get(broker_id) or addrs.get(routing.MASTER_ID) or addrs[min(addrs)]

    # -- heartbeats ---------------------------------------------------------------------------------
    def heartbeat_data(self) -> HeartbeatData:
        producers = [ProducerData(group_name=g) for g in sorted(self.producers)]
        consumers = [c.consumer_data() for _, c in sorted(self.consumers.items())]
        if consumers and CLIENT_INNER_PRODUCER not in self.producers:
            producers.append(ProducerData(group_name=CLIENT_INNER_PRODUCER))
        return HeartbeatData(client_id=self.client_id, producer_data_set=producers, consumer_data_set=consumers)

    async def send_heartbeat_to_all_brokers(self) -> None:
        """HEART_BEAT to every master (and slaves when consumers exist); failures are logged, not raised."""
        if not self.producers and not self.consumers:
            return
        async with self._heartbeat_lock:
            body = self.heartbeat_data().encode()
            addrs = self.broker_addrs(masters_only=not self.consumers)
            results = await asyncio.gather(*(self.api.heartbeat(a, body) for a in addrs), return_exceptions=True)
            for addr, result in zip(addrs, results):
                if isinstance(result, BaseException):
                    log.debug("%s: heartbeat to %s failed: %s", self.client_id, addr, result)

    async def _persist_all_offsets(self) -> None:
        for consumer in list(self.consumers.values()):
            try:
                await consumer.persist_consumer_offsets()
            except ClientError as exc:
                log.debug("%s: persisting offsets of %s failed: %s", self.client_id, consumer.group, exc)


__all__ = ["ClientInstance", "request", "MessageQueue", "CLIENT_INNER_PRODUCER"]
