"""`Producer` (Java `DefaultMQProducer`, reference §10.8, §12.2): send, send_batch, send_oneway.

Queue choice is round robin over the topic's writable queues, or fixed by a sharding key (the same key always
goes to the same queue, which keeps its messages in order) or by an explicit queue. A send that fails with a
retriable error (connection lost, timeout, or one of Java's retriable response codes) is tried again, up to
`retry_times` more times within `send_timeout`, on a queue of another broker when there is one. A send with a
sharding key or an explicit queue is retried on that same queue only.
"""

from __future__ import annotations

import itertools
import random
import time
import zlib
from typing import Any, Iterable, Mapping

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.codes import MessageSysFlag
from rocketmq_emulator.protocol.message import (PROPERTY_TRANSACTION_PREPARED, PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
                                                BatchItem, MessageExt, encode_batch, encode_properties,
                                                java_string_hash)

from .lifecycle import InstanceUser
from .config import ClientConfig, build_client_id, validate_name, validate_topic
from .errors import (RETRIABLE_SEND_CODES, BrokerResponseError, BrokerUnreachableError, ClientStateError,
                     InvalidArgumentError, RequestTimeoutError)
from .instance import ClientInstance
from .message import Message, ReceivedMessage, encode_batch_columns, new_unique_id
from .request_reply import create_reply_message, is_reply, send_request
from .route import TopicPublishInfo
from .send_api import SendResult, SendStatus, send_header, send_to_queue

__all__ = ["Producer", "SendResult", "SendStatus", "select_queue_by_hash"]

_PREPARED = int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)  # a plain int (IntFlag arithmetic is slow)


def select_queue_by_hash(queues: list[MessageQueue], key: Any) -> MessageQueue:
    """Java `SelectMessageQueueByHash`: |hashCode(key) % n| with Java's String/Integer hash codes."""
    if isinstance(key, int) and not isinstance(key, bool):
        h = ((key + 0x80000000) & 0xFFFFFFFF) - 0x80000000
    else:
        h = java_string_hash(str(key))
    return queues[abs(h) % len(queues)]


class Producer(InstanceUser):
    """`async with Producer("my_group", namesrv="127.0.0.1:9876") as p: await p.send("T", b"hi")`."""

    def __init__(self, group: str = "DEFAULT_PRODUCER", *, namesrv: str | None = None,
                 instance_name: str | None = None, send_timeout: float = 3.0, retry_times: int = 2,
                 compress_over: int = 4096, compress_level: int = 5, max_message_size: int = 4 * 1024 * 1024,
                 config: ClientConfig | None = None) -> None:
        self.group = validate_name("producer group", group)
        self.config = config = ClientConfig.resolve(config, namesrv, instance_name)
        self.client_id = build_client_id(config)
        self.send_timeout = send_timeout
        self.retry_times = max(0, retry_times)
        self.compress_over = compress_over
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self._instance: ClientInstance | None = None
        self._rr: dict[str, itertools.count[int]] = {}

    # -- life cycle ---------------------------------------------------------------------------------
    async def start(self) -> Producer:
        if self._instance is not None:
            raise ClientStateError(f"producer {self.group!r} is already started")
        instance = await ClientInstance.acquire(self.client_id, self.config)
        try:
            instance.register_producer(self.group, self)
        except BaseException:
            await instance.release()
            raise
        self._instance = instance
        return self

    async def stop(self) -> None:
        instance, self._instance = self._instance, None
        if instance is None:
            return
        instance.unregister_producer(self.group)
        try:
            await instance.unregister_client(producer_group=self.group)
        finally:
            await instance.release()

    def _what(self) -> str:
        return f"producer {self.group!r}"

    # -- sending ------------------------------------------------------------------------------------
    async def send(self, topic: str, body: bytes | str, *, tags: str | None = None,
                   keys: str | Iterable[str] | None = None, properties: Mapping[str, str] | None = None,
                   delay_level: int = 0, sharding_key: Any = None, queue: MessageQueue | int | None = None,
                   timeout: float | None = None) -> SendResult:
        """Send one message and wait for the broker's answer. `queue`: a MessageQueue, or a queue id (the first
        broker's queue with that id); default: round robin (or by `sharding_key`)."""
        msg = Message(topic, body, tags=tags, keys=keys, properties=properties, delay_level=delay_level)
        return await self.send_message(msg, sharding_key=sharding_key, queue=queue, timeout=timeout)

    async def send_message(self, msg: Message, *, sharding_key: Any = None, queue: MessageQueue | int | None = None,
                           timeout: float | None = None) -> SendResult:
        validate_topic(msg.topic)
        uniq = new_unique_id()
        props = msg.properties
        props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = uniq
        body, sys_flag = self._body(msg.body)
        if props.get(PROPERTY_TRANSACTION_PREPARED) == "true":  # a half message (TransactionProducer), as Java
            sys_flag |= _PREPARED
        properties = encode_properties(props)
        reply = is_reply(msg)
        return await self._send(msg.topic, body, properties, sys_flag, msg.flag, uniq, batch=False,
                                sharding_key=sharding_key, queue=queue, timeout=timeout,
                                code=RequestCode.SEND_REPLY_MESSAGE_V2 if reply else None, retries=0 if reply else None)

    async def request(self, topic: str, body: bytes | str, *, tags: str | None = None,
                      keys: str | Iterable[str] | None = None, properties: Mapping[str, str] | None = None,
                      timeout: float = 3.0, sharding_key: Any = None) -> ReceivedMessage:
        """Send a request and wait for its reply (Java's `request(msg, timeout)`): `timeout` seconds for the send
        and the reply together; ReplyTimeoutError when no reply comes. A consumer of `topic` answers with
        `send_reply` (request_reply.py)."""
        if timeout <= 0:
            raise InvalidArgumentError(f"timeout={timeout!r}: a request needs a positive timeout (seconds)")
        msg = Message(topic, body, tags=tags, keys=keys, properties=properties)
        instance = self.instance
        known = topic in instance.routes
        await instance.publish_info(validate_topic(topic))
        if not known or not instance.replies.announced:  # brokers push replies only to producers they know
            await instance.send_heartbeat_to_all_brokers()
            instance.replies.announced = True
        return await send_request(instance.replies, self.client_id, msg, timeout,
                                  lambda m, left: self.send_message(m, sharding_key=sharding_key, timeout=left))

    async def send_reply(self, request: MessageExt, body: bytes | str, *, timeout: float | None = None) -> SendResult:
        """Answer a request message (one that `request` sent, received by a consumer): the reply goes to the
        requester through the broker (SEND_REPLY_MESSAGE_V2). Sent once: a requester that is gone is a
        BrokerResponseError (SYSTEM_ERROR "... channel of <id> not found."); the broker stores the reply anyway."""
        return await self.send_message(create_reply_message(request, body), timeout=timeout)

    async def send_batch(self, topic: str, messages: Iterable[Message | bytes | str], *,
                         sharding_key: Any = None, queue: MessageQueue | int | None = None,
                         timeout: float | None = None, born_timestamp: int | None = None) -> SendResult:
        """Send several messages of one topic in one request (SEND_BATCH_MESSAGE); they land in one queue with
        consecutive offsets. Items may be `Message`s (same topic, no delay) or plain bodies. The batch has one
        bornTimestamp (RocketMQ's batch format carries it once, in the request): now, or `born_timestamp` (ms)."""
        validate_topic(topic)
        items, ids = [], []
        size = 0
        for m in messages:
            if not isinstance(m, Message):
                m = Message(topic, m)
            if m.topic != topic:
                raise InvalidArgumentError(f"a batch holds messages of one topic: {m.topic!r} is not {topic!r}")
            if "DELAY" in m.properties:
                raise InvalidArgumentError("delayed messages cannot be sent in a batch; send them one by one")
            uniq = new_unique_id()
            m.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = uniq
            ids.append(uniq)
            item = BatchItem(m.body, flag=m.flag, properties_raw=encode_properties(m.properties).encode())
            size += len(m.body)
            items.append(item)
        if not items:
            raise InvalidArgumentError("send_batch needs at least one message")
        if size > self.max_message_size:
            raise InvalidArgumentError(f"batch bodies total {size} bytes, over the {self.max_message_size}-byte "
                                       f"limit; split the batch")
        return await self._send(topic, encode_batch(items), "", 0, 0, ",".join(ids), batch=True,
                                sharding_key=sharding_key, queue=queue, timeout=timeout, born_timestamp=born_timestamp)

    async def send_batch_columns(self, topic: str, bodies: list[Any], *, tags: list[Any] | None = None,
                                 keys: list[Any] | None = None, properties: list[Any] | None = None,
                                 queue: MessageQueue | int | None = None, timeout: float | None = None,
                                 born_timestamp: int | None = None) -> SendResult:
        """`send_batch` for rows given as columns (lists of equal length; a None entry means none), encoded
        without a `Message` per row: the bulk path of spark_tools' writer. The same checks, batch rules and
        retries as `send_batch`."""
        validate_topic(topic)
        if not bodies:
            raise InvalidArgumentError("send_batch needs at least one message")
        for name, column in (("tags", tags), ("keys", keys), ("properties", properties)):
            if column is not None and len(column) != len(bodies):
                raise InvalidArgumentError(f"{name} has {len(column)} entries for {len(bodies)} bodies")
        body, ids, size = encode_batch_columns(bodies, tags, keys, properties)
        if size > self.max_message_size:
            raise InvalidArgumentError(f"batch bodies total {size} bytes, over the {self.max_message_size}-byte "
                                       f"limit; split the batch")
        return await self._send(topic, body, "", 0, 0, ",".join(ids), batch=True, sharding_key=None, queue=queue,
                                timeout=timeout, born_timestamp=born_timestamp)

    async def send_oneway(self, topic: str, body: bytes | str, *, tags: str | None = None,
                          keys: str | Iterable[str] | None = None, properties: Mapping[str, str] | None = None,
                          delay_level: int = 0, sharding_key: Any = None, queue: MessageQueue | int | None = None) -> None:
        """Send without waiting for (or getting) an answer: fastest, no result, no retry, no delivery guarantee."""
        msg = Message(topic, body, tags=tags, keys=keys, properties=properties, delay_level=delay_level)
        validate_topic(topic)
        msg.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = new_unique_id()
        payload, sys_flag = self._body(msg.body)
        info = await self.instance.publish_info(topic)
        mq = self._choose(info, None, sharding_key, queue)
        addr = await self.instance.find_master(mq.broker_name, topic)
        ext = send_header(self.group, mq, encode_properties(msg.properties), sys_flag, msg.flag)
        await self.instance.api.oneway(addr, RequestCode.SEND_MESSAGE_V2, ext, payload)

    async def fetch_queues(self, topic: str) -> list[MessageQueue]:
        """The queues this producer would send `topic`'s messages to."""
        return list((await self.instance.publish_info(validate_topic(topic))).queues)

    # -- internals ----------------------------------------------------------------------------------
    def _body(self, body: bytes) -> tuple[bytes, int]:
        if len(body) > self.max_message_size:
            raise InvalidArgumentError(f"message body of {len(body)} bytes is over the {self.max_message_size}-byte "
                                       f"limit; split it or raise max_message_size (and the broker's maxMessageSize)")
        if len(body) >= self.compress_over:
            return zlib.compress(body, self.compress_level), int(MessageSysFlag.COMPRESSED)
        return body, 0

    def _choose(self, info: TopicPublishInfo, avoid_broker: str | None, sharding_key: Any,
                queue: MessageQueue | int | None) -> MessageQueue:
        if isinstance(queue, MessageQueue):
            return queue
        if queue is not None:  # a queue id: that queue of the first broker that has it
            if isinstance(queue, bool) or not isinstance(queue, int):
                raise InvalidArgumentError(f"queue={queue!r}: give a MessageQueue or a queue id (int)")
            for mq in info.queues:
                if mq.queue_id == queue:
                    return mq
            raise InvalidArgumentError(f"topic {info.topic!r} has no writable queue {queue} (queue ids: "
                                       f"{sorted({mq.queue_id for mq in info.queues})})")
        queues = info.queues
        if sharding_key is not None:
            return select_queue_by_hash(queues, sharding_key)
        counter = self._rr.get(info.topic)
        if counter is None:
            counter = self._rr[info.topic] = itertools.count(random.randrange(1 << 16))
        n = len(queues)
        if avoid_broker is not None:
            for _ in range(n):
                mq = queues[next(counter) % n]
                if mq.broker_name != avoid_broker:
                    return mq
        return queues[next(counter) % n]

    async def _send(self, topic: str, body: bytes, properties: str, sys_flag: int, flag: int, uniq: str, *,
                    batch: bool, sharding_key: Any, queue: MessageQueue | int | None,
                    timeout: float | None, born_timestamp: int | None = None, code: int | None = None,
                    retries: int | None = None) -> SendResult:
        instance = self.instance
        budget = self.send_timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        if code is None:
            code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
        attempts = 1 + (self.retry_times if retries is None else retries)
        avoid: str | None = None
        last_exc: Exception | None = None
        tried = 0
        for _ in range(attempts):
            info = await instance.publish_info(topic)
            mq = self._choose(info, avoid, sharding_key, queue)
            left = deadline - time.monotonic()
            if left <= 0:
                break
            tried += 1
            try:
                addr = await instance.find_master(mq.broker_name, topic)
                result = await send_to_queue(instance, addr, mq, self.group, body, properties, uniq, left, code=code,
                                             sys_flag=sys_flag, flag=flag, batch=batch, born_timestamp=born_timestamp)
            except (BrokerUnreachableError, RequestTimeoutError) as exc:
                last_exc = exc
                avoid = mq.broker_name
                instance.refresh_route_soon(topic)
                continue
            except BrokerResponseError as exc:
                if exc.code not in RETRIABLE_SEND_CODES:
                    raise
                last_exc = exc
                avoid = mq.broker_name
                if exc.code == ResponseCode.TOPIC_NOT_EXIST:
                    instance.publish.pop(topic, None)
                continue
            if info.from_default_topic:
                instance.refresh_route_soon(topic)
            return result
        if last_exc is None:
            last_exc = RequestTimeoutError(topic, f"send to topic {topic!r}", budget)
        last_exc.add_note(f"the send to topic {topic!r} was tried {tried} time(s) within {budget:g} s")
        raise last_exc

