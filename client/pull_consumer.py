"""`PullConsumer` (lite): the application chooses the queues and the offsets (Java `DefaultMQPullConsumer`).

    async with PullConsumer("my_group", namesrv="127.0.0.1:9876") as consumer:
        for mq in await consumer.fetch_message_queues("TopicTest"):
            await consumer.seek_to_timestamp(mq, ts_ms)
            result = await consumer.pull(mq)          # from the position, which then advances
            ...
            await consumer.commit(mq)                 # the position becomes the group's offset on the broker

`pull(mq, offset, max_nums)` with an explicit offset leaves the position alone.
"""

from __future__ import annotations

import logging
import time

from rocketmq_emulator.protocol.bodies import ConsumeFromWhere, ConsumerData, ConsumeType, MessageModel, MessageQueue

from .lifecycle import InstanceUser
from . import route as routing
from .config import ClientConfig, build_client_id, validate_name, validate_topic
from .api import committed_offset
from .consumer_requests import PullConsumerRequests
from .errors import ClientStateError
from .instance import ClientInstance
from .pull_api import PullAPI, PullResult
from .subscription import build_subscription

log = logging.getLogger("rocketmq_emulator.client.pull")


class PullConsumer(InstanceUser):
    def __init__(self, group: str, *, namesrv: str | None = None, instance_name: str | None = None,
                 config: ClientConfig | None = None) -> None:
        self.group = validate_name("consumer group", group)
        self.config = config = ClientConfig.resolve(config, namesrv, instance_name)
        self.client_id = build_client_id(config)
        self._instance: ClientInstance | None = None
        self._api: PullAPI | None = None
        self._positions: dict[MessageQueue, int] = {}
        self._started_at = 0  #: ms since the epoch

    async def start(self) -> PullConsumer:
        if self._instance is not None:
            raise ClientStateError(f"pull consumer {self.group!r} is already started")
        instance = await ClientInstance.acquire(self.client_id, self.config)
        try:
            instance.register_consumer(self.group, self)
        except BaseException:
            await instance.release()
            raise
        self._instance = instance
        self._api = PullAPI(instance, self.group)
        self._started_at = int(time.time() * 1000)
        return self

    async def stop(self) -> None:
        instance, self._instance = self._instance, None
        if instance is None:
            return
        instance.unregister_consumer(self.group)
        try:
            await instance.unregister_client(consumer_group=self.group)
        finally:
            await instance.release()

    def _what(self) -> str:
        return f"pull consumer {self.group!r}"

    # -- queues and offsets -------------------------------------------------------------------------
    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of `topic`, sorted (`NoRouteError` if the topic is unknown)."""
        route = await self.instance.topic_route(validate_topic(topic), refresh=True)
        return routing.subscribe_queues(topic, route)

    async def _addr(self, mq: MessageQueue) -> str:
        return await self.instance.find_master(mq.broker_name, mq.topic)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self.instance.api.min_offset(await self._addr(mq), mq)

    async def max_offset(self, mq: MessageQueue) -> int:
        """The offset the next message of `mq` will get (one past the last one)."""
        return await self.instance.api.max_offset(await self._addr(mq), mq)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the message stored closest to `timestamp_ms` (the broker's SEARCH_OFFSET rule)."""
        return await self.instance.api.search_offset(await self._addr(mq), mq, int(timestamp_ms))

    async def earliest_msg_store_time(self, mq: MessageQueue) -> int:
        return await self.instance.api.earliest_msg_store_time(await self._addr(mq), mq)

    # -- positions ----------------------------------------------------------------------------------
    def seek(self, mq: MessageQueue, offset: int) -> None:
        self._positions[mq] = int(offset)

    def position(self, mq: MessageQueue) -> int | None:
        return self._positions.get(mq)

    async def seek_to_begin(self, mq: MessageQueue) -> int:
        offset = await self.min_offset(mq)
        self.seek(mq, offset)
        return offset

    async def seek_to_end(self, mq: MessageQueue) -> int:
        offset = await self.max_offset(mq)
        self.seek(mq, offset)
        return offset

    async def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        offset = await self.search_offset(mq, timestamp_ms)
        self.seek(mq, offset)
        return offset

    async def seek_to_committed(self, mq: MessageQueue) -> int:
        """Position at the group's offset on the broker (-1 and no change if it has none)."""
        offset = await self.committed(mq)
        if offset >= 0:
            self.seek(mq, offset)
        return offset

    # -- pulling and committing ---------------------------------------------------------------------
    async def pull(self, mq: MessageQueue, offset: int | None = None, max_nums: int = 32, *,
                   expression: str = "*", expression_type: str = "TAG", block: float = 0.0,
                   timeout: float | None = None) -> PullResult:
        """Pull up to `max_nums` messages of `mq` from `offset` (default: the position, which then advances to
        the result's next offset). `expression`: tags (`TagA || TagB`), or with `expression_type="SQL92"` a SQL92
        property filter (the broker needs enablePropertyFilter). `block` > 0: the broker holds the request up to
        that long when there is nothing new. Status FOUND, NO_NEW_MSG, NO_MATCHED_MSG or OFFSET_ILLEGAL."""
        api = self._api
        if api is None:
            raise ClientStateError(f"pull consumer {self.group!r} is not started")
        use_position = offset is None
        if offset is None:
            offset = self._positions.get(mq)
            if offset is None:
                raise ClientStateError(f"no position for {mq}; pass an offset or seek first")
        sub = build_subscription(mq.topic, expression, expression_type, sub_version=0)
        wait = timeout if timeout is not None else self.config.request_timeout + block
        result = await api.pull(mq, sub, offset, max_nums, suspend_timeout=block, timeout=wait)
        if use_position:
            self._positions[mq] = result.next_begin_offset
        return result

    async def commit(self, mq: MessageQueue, offset: int | None = None) -> None:
        """Store the group's offset of `mq` on its broker (default: the position)."""
        if offset is None:
            offset = self._positions.get(mq)
            if offset is None:
                raise ClientStateError(f"no position for {mq} to commit; pass an offset")
        await self.instance.api.update_consumer_offset(await self._addr(mq), self.group, mq, offset)

    async def committed(self, mq: MessageQueue) -> int:
        """The group's offset of `mq` on its broker (what the last `commit` stored); -1 when it has none. The
        read position is `position(mq)`."""
        return await committed_offset(self.instance.api, await self._addr(mq), self.group, mq)

    # -- what the instance asks -------------------------------------------------------------------------
    def consumer_data(self) -> ConsumerData:
        return ConsumerData(group_name=self.group, consume_type=ConsumeType.CONSUME_ACTIVELY,
                            message_model=MessageModel.CLUSTERING,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, subscription_data_set=[])

    def subscribed_topics(self) -> set[str]:
        return set()

    async def persist_consumer_offsets(self) -> None:
        return None

    def server_requests(self) -> PullConsumerRequests:
        return PullConsumerRequests(self.group, self.config.namesrv, self._started_at)

