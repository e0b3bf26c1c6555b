"""`PushConsumer` (Java `DefaultMQPushConsumer`, reference §10.2-§10.7, §12.1).

    async with PushConsumer("my_group", namesrv="127.0.0.1:9876") as consumer:
        consumer.subscribe("TopicTest", "TagA || TagB")
        ...

Two ways to consume. A handler: `consumer.on_message(fn)` (or `on_batch`), called with at most
`consume_concurrency` in flight (or per queue in order with `orderly=True`); it returns
`ConsumeResult.SUCCESS` / `None` / `True`, or `ConsumeResult.RECONSUME_LATER` / `False` / raises. Or async
iteration: `async for msg in consumer` / `await consumer.getmany(...)`, then `consumer.ack(msg)` or
`consumer.nack(msg)`. Subscribe and choose the style before `start()`; the first `async for` without a
handler selects iteration.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import logging
import time
from typing import Any, AsyncIterator

from rocketmq_emulator.protocol.bodies import (CheckClientRequestBody, ConsumeFromWhere, ConsumerData, ConsumeType,
                                               MessageModel, MessageQueue, SubscriptionData)
from rocketmq_emulator.protocol.topics import retry_topic

from .lifecycle import InstanceUser
from .allocate import AllocateStrategy, strategy
from .config import ClientConfig, ConsumerSettings, build_client_id, validate_name, validate_topic
from .consume_iterator import IteratorConsumeService
from .consume_orderly import OrderlyConsumeService
from .consume_service import ConcurrentConsumeService, ConsumeService, Handler
from .consumer_context import BackgroundTasks, ConsumerContext, FlowSwitch
from .errors import ClientError, ClientStateError, InvalidArgumentError, NoRouteError
from .instance import ClientInstance
from .message import ReceivedMessage, timestamp_ms
from .offset_store import LocalFileOffsetStore, OffsetStore, RemoteBrokerOffsetStore
from .process_queue import ProcessQueue
from .pull_api import PullAPI
from .pull_service import PullMessageService
from .rebalance import RebalanceImpl
from .consumer_requests import PushConsumerRequests
from .subscription import build_subscription

log = logging.getLogger("rocketmq_emulator.client.consumer")

CLUSTERING = MessageModel.CLUSTERING
BROADCASTING = MessageModel.BROADCASTING
LAST_OFFSET = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
FIRST_OFFSET = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
TIMESTAMP = ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
_MODELS = {"clustering": CLUSTERING, "broadcasting": BROADCASTING}
_FROM = {"last_offset": LAST_OFFSET, "first_offset": FIRST_OFFSET, "timestamp": TIMESTAMP, "last": LAST_OFFSET,
         "first": FIRST_OFFSET}


class RebalanceListener:
    """Override either method (plain or async); both get the set of queues of one rebalance round."""

    def on_queues_revoked(self, queues: set[MessageQueue]) -> Any: ...

    def on_queues_assigned(self, queues: set[MessageQueue]) -> Any: ...


class PushConsumer(InstanceUser):
    def __init__(self, group: str, *, namesrv: str | None = None, message_model: MessageModel | str = CLUSTERING,
                 consume_from: ConsumeFromWhere | str = LAST_OFFSET, consume_timestamp: Any = None,
                 allocate_strategy: str | AllocateStrategy = "averagely", orderly: bool = False,
                 instance_name: str | None = None, offset_store_dir: str | None = None,
                 rebalance_listener: Any = None, config: ClientConfig | None = None,
                 settings: ConsumerSettings | None = None, **tuning: Any) -> None:
        self.group = validate_name("consumer group", group)
        self.config = config = ClientConfig.resolve(config, namesrv, instance_name)
        model = _MODELS.get(message_model.lower(), None) if isinstance(message_model, str) \
            else MessageModel(message_model)
        if model is None:
            raise InvalidArgumentError(f"message_model {message_model!r}: use CLUSTERING or BROADCASTING")
        self.message_model: MessageModel = model
        start = _FROM.get(consume_from.lower()) if isinstance(consume_from, str) else ConsumeFromWhere(consume_from)
        if start is None:
            raise InvalidArgumentError(f"consume_from {consume_from!r}: use LAST_OFFSET, FIRST_OFFSET or TIMESTAMP")
        self.consume_from: ConsumeFromWhere = start
        if consume_timestamp is None:
            consume_timestamp = _dt.datetime.now() - _dt.timedelta(minutes=30)
        self.consume_timestamp_ms = timestamp_ms(consume_timestamp)
        self.allocate_strategy = strategy(allocate_strategy)
        self.orderly = orderly
        self.offset_store_dir = offset_store_dir
        self.rebalance_listener = rebalance_listener
        self.settings = dataclasses.replace(settings) if settings is not None else ConsumerSettings()
        for key, value in tuning.items():
            if not hasattr(self.settings, key):
                raise InvalidArgumentError(f"unknown consumer setting {key!r}")
            setattr(self.settings, key, value)
        self.client_id = build_client_id(config, broadcasting=self.message_model == BROADCASTING)
        self.subscriptions: dict[str, SubscriptionData] = {}
        self._handler: Handler | None = None
        self._batch = False
        self._instance: ClientInstance | None = None
        self._flow = FlowSwitch()  # pause()/resume() work before start too
        self._background = BackgroundTasks(group)
        # the collaborators, made by start(): they share `_ctx` and never see this object
        self._ctx: ConsumerContext | None = None
        self.rebalance: RebalanceImpl | None = None
        self.pulls: PullMessageService | None = None
        self.service: ConsumeService | None = None  # handler, orderly or iteration
        self.requests: PushConsumerRequests | None = None  # what it answers its brokers
        self._tasks: list[asyncio.Task[None]] = []
        self._running = False
        self._stopping: asyncio.Future[None] | None = None

    # -- configuration ------------------------------------------------------------------------------
    def subscribe(self, topic: str, expression: str = "*", expression_type: str = "TAG") -> None:
        """Consume `topic`'s messages whose tag matches `expression` (`*`, `TagA`, `TagA || TagB`)."""
        validate_topic(topic)
        self.subscriptions[topic] = build_subscription(topic, expression, expression_type)
        if self._running:
            self._after_subscription_change()

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)
        if self._running:
            self._after_subscription_change()

    def on_message(self, handler: Handler) -> Handler:
        """Consume with `handler(msg)` (plain or async). Usable as a decorator."""
        self._set_handler(handler, batch=False)
        return handler

    def on_batch(self, handler: Handler, max_size: int = 32) -> Handler:
        """Consume with `handler(list_of_msgs)`, at most `max_size` messages of one queue per call."""
        self.settings.consume_batch_size = max(1, max_size)
        self._set_handler(handler, batch=True)
        return handler

    def _set_handler(self, handler: Handler, *, batch: bool) -> None:
        if self._running:
            raise ClientStateError("set the handler before start()")
        if not callable(handler):
            raise InvalidArgumentError("the handler must be callable")
        self._handler, self._batch = handler, batch

    # -- life cycle ---------------------------------------------------------------------------------
    async def start(self) -> PushConsumer:
        if self._running or self._instance is not None:
            raise ClientStateError(f"consumer {self.group!r} is already started")
        if self.orderly and self._handler is None:
            raise ClientStateError("an orderly consumer needs a handler (on_message / on_batch); iteration is "
                                   "for concurrent consumers")
        instance = await ClientInstance.acquire(self.client_id, self.config)
        self._instance = instance
        try:
            self._assemble(instance)
            instance.register_consumer(self.group, self)
        except BaseException:
            self._instance = None
            self._disassemble()
            await instance.release()
            raise
        try:
            await self._start(instance)
        except BaseException:
            await self.stop()
            raise
        return self

    def _assemble(self, instance: ClientInstance) -> None:
        """Make the collaborators; each gets the shared context and the callbacks it needs."""
        if self.message_model == CLUSTERING:
            store: OffsetStore = RemoteBrokerOffsetStore(instance, self.group)
            retry = retry_topic(self.group)
            self.subscriptions.setdefault(retry, build_subscription(retry))
        else:
            store = LocalFileOffsetStore(self.offset_store_dir, self.client_id, self.group)
        ctx = self._ctx = ConsumerContext(
            group=self.group, client_id=self.client_id, instance=instance, offset_store=store,
            message_model=self.message_model, consume_from=self.consume_from,
            consume_timestamp_ms=self.consume_timestamp_ms, orderly=self.orderly,
            allocate_strategy=self.allocate_strategy, settings=self.settings, subscriptions=self.subscriptions,
            flow=self._flow, background=self._background)
        self.pulls = PullMessageService(ctx, PullAPI(instance, self.group), dispatch=self._dispatch,
                                        offset_illegal=self._offset_illegal)
        self.rebalance = rebalance = RebalanceImpl(ctx, self.pulls, self.rebalance_listener)
        if self._handler is None:
            self.service = IteratorConsumeService(ctx)
        elif self.orderly:
            self.service = OrderlyConsumeService(ctx, self._handler, batch=self._batch, lock=rebalance.lock)
        else:
            self.service = ConcurrentConsumeService(ctx, self._handler, batch=self._batch)
        self.requests = PushConsumerRequests(ctx, rebalance, self.service)

    def _disassemble(self) -> None:
        self._ctx = self.rebalance = self.pulls = self.service = self.requests = None

    def _dispatch(self, pq: ProcessQueue, msgs: list[ReceivedMessage]) -> None:
        assert self.service is not None
        self.service.submit(pq, msgs)

    def _offset_illegal(self, pq: ProcessQueue, next_offset: int) -> None:
        assert self.rebalance is not None
        self._background.spawn(self.rebalance.correct_offset(pq, next_offset))

    async def _start(self, instance: ClientInstance) -> None:
        ctx, rebalance, service = self._ctx, self.rebalance, self.service
        assert ctx is not None and rebalance is not None and service is not None
        await ctx.offset_store.load()
        missing = []
        for topic in list(self.subscriptions):
            try:
                await instance.topic_route(topic, refresh=True)
            except NoRouteError:
                missing.append(topic)
        for sub in self.subscriptions.values():
            if sub.expression_type != "TAG":
                body = CheckClientRequestBody(client_id=self.client_id, group=self.group, subscription_data=sub)
                for addr in instance.broker_addrs():
                    await instance.api.check_client_config(addr, body.encode())
        await instance.send_heartbeat_to_all_brokers()
        for topic in missing:  # the broker creates the retry topic on the first heartbeat
            try:
                await instance.topic_route(topic, refresh=True)
            except NoRouteError:
                log.debug("%s: topic %s has no route yet; the rebalance retries", self.group, topic)
        service.start()
        self._running = True
        ctx.started_at = int(time.time() * 1000)
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(rebalance.run()))
        if ctx.needs_locks:
            self._tasks.append(loop.create_task(rebalance.lock_loop()))
        log.info("%s: consumer %s started (%s, %s)", self.group, self.client_id, self.message_model.name,
                 "orderly" if self.orderly else "concurrently")

    async def stop(self) -> None:
        """Stop pulling, let running handlers finish (up to `await_termination_timeout`), commit the offsets,
        release queue locks, unregister from the brokers."""
        instance = self._instance
        if instance is None:
            return
        if self._stopping is not None:
            await asyncio.shield(self._stopping)
            return
        self._stopping = asyncio.get_running_loop().create_future()
        try:
            await self._stop(instance)
        finally:
            self._stopping.set_result(None)
            self._stopping = None

    async def _stop(self, instance: ClientInstance) -> None:
        self._running = False
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        ctx, rebalance, pulls, service = self._ctx, self.rebalance, self.pulls, self.service
        owned: list[MessageQueue] = []
        if ctx is not None and rebalance is not None and pulls is not None and service is not None:
            table = rebalance.process_queue_table
            for pq in list(table.values()):
                pq.drop()
            await pulls.stop()
            timeout = self.settings.await_termination_timeout
            await service.stop(timeout)
            self._background.cancel()
            await rebalance.drain_retiring(timeout)
            owned = list(table)
            try:
                await ctx.offset_store.persist_all(owned, wait=True)
            except ClientError as exc:
                log.warning("%s: committing offsets at stop failed: %s", self.group, exc)
            if rebalance.needs_locks and owned:
                await rebalance.unlock_all(owned)
            table.clear()
        instance.unregister_consumer(self.group)
        try:
            await instance.unregister_client(consumer_group=self.group)
        finally:
            self._instance = None
            await instance.release()
        log.info("%s: consumer %s stopped", self.group, self.client_id)

    def _what(self) -> str:
        return f"consumer {self.group!r}"

    # -- iteration ----------------------------------------------------------------------------------
    def _iterator_service(self) -> IteratorConsumeService:
        if not isinstance(self.service, IteratorConsumeService):
            if self.service is None:
                raise ClientStateError(f"consumer {self.group!r} is not started")
            raise ClientStateError("this consumer has a handler; iteration and ack/nack need a consumer without one")
        return self.service

    def __aiter__(self) -> AsyncIterator[ReceivedMessage]:
        return self

    async def __anext__(self) -> ReceivedMessage:
        msg = await self._iterator_service().get()
        assert msg is not None
        return msg

    async def getone(self, timeout: float | None = None) -> ReceivedMessage | None:
        """The next message, or None after `timeout` seconds."""
        try:
            return await self._iterator_service().get(timeout)
        except StopAsyncIteration:
            return None

    async def getmany(self, timeout: float = 0.0, max_records: int = 32) -> dict[MessageQueue, list[ReceivedMessage]]:
        """Up to `max_records` messages ready now (waiting up to `timeout` s for the first), by queue."""
        return await self._iterator_service().getmany(timeout, max_records)

    def ack(self, *msgs: ReceivedMessage) -> None:
        """The messages are consumed: their offsets may be committed."""
        service = self._iterator_service()
        for m in msgs:
            service.ack(m)

    def nack(self, msg: ReceivedMessage, delay_level: int = 0) -> None:
        """Consume `msg` again later: it goes back to the broker (retry topic, DLQ after the max)."""
        self._iterator_service().nack(msg, delay_level)

    # -- flow control -------------------------------------------------------------------------------
    def pause(self, *queues: MessageQueue) -> None:
        """Stop pulling (all queues, or the given ones) until `resume`; pulls waiting at the broker are
        abandoned. Messages already pulled are still delivered."""
        self._flow.pause(queues)
        if self.rebalance is not None and self.pulls is not None:
            for mq, pq in self.rebalance.process_queue_table.items():
                if self._flow.is_paused(mq):
                    self.pulls.stop_pulling(pq)

    def resume(self, *queues: MessageQueue) -> None:
        self._flow.resume(queues)
        if self._running and self.rebalance is not None and self.pulls is not None:
            for mq, pq in self.rebalance.process_queue_table.items():
                if not pq.dropped and not self.pulls.is_pulling(pq) and not self._flow.is_paused(mq):
                    self.pulls.start_pulling(pq)

    @property
    def paused(self) -> bool:
        return self._flow.paused

    def is_paused(self, mq: MessageQueue) -> bool:
        return self._flow.is_paused(mq)

    def assignment(self) -> set[MessageQueue]:
        """The queues this consumer owns now (the retry topic's included)."""
        return set(self.rebalance.process_queue_table) if self.rebalance is not None else set()

    @property
    def offset_store(self) -> OffsetStore | None:
        """The offset store of the running consumer (Java `getOffsetStore`): the broker's in clustering mode,
        the local file in broadcasting mode; None before start."""
        return self._ctx.offset_store if self._ctx is not None else None

    def consumed_offset(self, mq: MessageQueue) -> int:
        """The in-memory offset of `mq` (-1 if none): how far consumption got here, what the next commit sends."""
        return self._ctx.committed(mq) if self._ctx is not None else -1

    async def committed(self, mq: MessageQueue) -> int:
        """The group's committed offset of `mq`: the one its store holds (the broker's in clustering mode, the
        offsets file's in broadcasting mode; -1 if none), as `PullConsumer.committed`. `consumed_offset(mq)` is
        the offset in memory."""
        if self._ctx is None:
            raise ClientStateError(f"{self._what()} is not started; use `async with` or await start()")
        return await self._ctx.offset_store.stored_offset(mq)

    # -- what the instance asks -------------------------------------------------------------------------
    def consumer_data(self) -> ConsumerData:
        return ConsumerData(group_name=self.group, consume_type=ConsumeType.CONSUME_PASSIVELY,
                            message_model=self.message_model, consume_from_where=self.consume_from,
                            subscription_data_set=list(self.subscriptions.values()), unit_mode=False)

    def subscribed_topics(self) -> set[str]:
        return set(self.subscriptions)

    async def persist_consumer_offsets(self) -> None:
        if self._running and self._ctx is not None and self.rebalance is not None:
            await self._ctx.offset_store.persist_all([*self.rebalance.process_queue_table,
                                                     *self.rebalance.retiring_queues])

    def server_requests(self) -> PushConsumerRequests | None:
        return self.requests

    # -- subscription changes while running ---------------------------------------------------------
    def _after_subscription_change(self) -> None:
        async def run() -> None:
            for topic in self.subscriptions:
                try:
                    await self.instance.topic_route(topic)
                except NoRouteError:
                    pass
            await self.instance.send_heartbeat_to_all_brokers()
            if self.rebalance is not None:
                self.rebalance.request()
        self._background.spawn(run())
