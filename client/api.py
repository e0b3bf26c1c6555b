"""`BrokerAPI` (Java `MQClientAPIImpl`): one method per broker request the client makes, each turning a
non-success answer into a `BrokerResponseError` that names the operation, the address and the remark.

It is given the client instance's connections, client id and configuration, not the instance itself (which
owns it): `instance` imports this module, never the other way round."""

from __future__ import annotations

from typing import Iterable

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import (GetConsumerListByGroupResponseBody, LockBatchRequestBody,
                                               LockBatchResponseBody, MessageQueue, UnlockBatchRequestBody)
from rocketmq_emulator.protocol.headers import (ConsumerSendMsgBackRequestHeader, GetConsumerListByGroupRequestHeader,
                                                GetEarliestMsgStoretimeResponseHeader, OffsetResponseHeader,
                                                QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader,
                                                QueueRequestHeader, SearchOffsetRequestHeader,
                                                UnregisterClientRequestHeader, UpdateConsumerOffsetRequestHeader)

from .config import LANGUAGE, ClientConfig
from .errors import BrokerResponseError, response_error
from .remoting import RemotingClient

_OK = (ResponseCode.SUCCESS,)


def request(code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    """A request as this client writes it: language PYTHON, version 409 (4.9.8)."""
    return RemotingCommand.request(code, ext, body, language=LANGUAGE)


class BrokerAPI:
    def __init__(self, remoting: RemotingClient, client_id: str, config: ClientConfig) -> None:
        self.remoting = remoting
        self.client_id = client_id
        self.config = config

    @property
    def timeout(self) -> float:
        return self.config.request_timeout

    async def call(self, addr: str, code: int, ext: dict[str, str] | None = None, body: bytes = b"", *,
                   operation: str, timeout: float | None = None, ok: Iterable[int] = _OK) -> RemotingCommand:
        response = await self.remoting.invoke(addr, request(code, ext, body), timeout or self.timeout)
        if response.code not in ok:
            raise response_error(response.code, response.remark, operation=operation, addr=addr)
        return response

    async def oneway(self, addr: str, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> None:
        await self.remoting.invoke_oneway(addr, request(code, ext, body))

    # -- client management --------------------------------------------------------------------------
    async def heartbeat(self, addr: str, body: bytes) -> int:
        """HEART_BEAT; returns the broker's version (the response's `version`)."""
        response = await self.call(addr, RequestCode.HEART_BEAT, None, body, operation="heartbeat")
        return response.version

    async def unregister_client(self, addr: str, producer_group: str | None, consumer_group: str | None) -> None:
        ext = UnregisterClientRequestHeader(client_id=self.client_id, producer_group=producer_group,
                                            consumer_group=consumer_group).to_ext()
        await self.call(addr, RequestCode.UNREGISTER_CLIENT, ext, operation="unregister client")

    async def consumer_id_list(self, addr: str, group: str) -> list[str]:
        response = await self.call(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                   GetConsumerListByGroupRequestHeader(consumer_group=group).to_ext(),
                                   operation=f"consumer list of group {group!r}")
        return GetConsumerListByGroupResponseBody.decode(response.body).consumer_id_list

    async def check_client_config(self, addr: str, body: bytes) -> None:
        await self.call(addr, RequestCode.CHECK_CLIENT_CONFIG, None, body, operation="check client config")

    async def lock_batch_mq(self, addr: str, group: str, mqs: set[MessageQueue]) -> set[MessageQueue]:
        body = LockBatchRequestBody(consumer_group=group, client_id=self.client_id, mq_set=mqs).encode()
        response = await self.call(addr, RequestCode.LOCK_BATCH_MQ, None, body, operation="lock queues")
        return set(LockBatchResponseBody.decode(response.body).lock_ok_mq_set)

    async def unlock_batch_mq(self, addr: str, group: str, mqs: set[MessageQueue], oneway: bool = False) -> None:
        body = UnlockBatchRequestBody(consumer_group=group, client_id=self.client_id, mq_set=mqs).encode()
        if oneway:
            await self.oneway(addr, RequestCode.UNLOCK_BATCH_MQ, None, body)
        else:
            await self.call(addr, RequestCode.UNLOCK_BATCH_MQ, None, body, operation="unlock queues")

    # -- offsets ------------------------------------------------------------------------------------
    async def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int:
        ext = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id).to_ext()
        response = await self.call(addr, RequestCode.QUERY_CONSUMER_OFFSET, ext,
                                   operation=f"query offset of {group!r} on {_q(mq)}")
        return QueryConsumerOffsetResponseHeader.from_ext(response.ext_fields).offset

    async def update_consumer_offset(self, addr: str, group: str, mq: MessageQueue, offset: int,
                                     oneway: bool = False) -> None:
        ext = UpdateConsumerOffsetRequestHeader(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id,
                                                commit_offset=offset).to_ext()
        if oneway:
            await self.oneway(addr, RequestCode.UPDATE_CONSUMER_OFFSET, ext)
        else:
            await self.call(addr, RequestCode.UPDATE_CONSUMER_OFFSET, ext,
                            operation=f"commit offset {offset} of {group!r} on {_q(mq)}")

    async def _offset(self, addr: str, code: int, ext: dict[str, str], what: str) -> int:
        response = await self.call(addr, code, ext, operation=what)
        return OffsetResponseHeader.from_ext(response.ext_fields).offset

    async def max_offset(self, addr: str, mq: MessageQueue) -> int:
        return await self._offset(addr, RequestCode.GET_MAX_OFFSET,
                                  QueueRequestHeader(topic=mq.topic, queue_id=mq.queue_id).to_ext(),
                                  f"max offset of {_q(mq)}")

    async def min_offset(self, addr: str, mq: MessageQueue) -> int:
        return await self._offset(addr, RequestCode.GET_MIN_OFFSET,
                                  QueueRequestHeader(topic=mq.topic, queue_id=mq.queue_id).to_ext(),
                                  f"min offset of {_q(mq)}")

    async def search_offset(self, addr: str, mq: MessageQueue, timestamp: int) -> int:
        return await self._offset(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                                  SearchOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id,
                                                            timestamp=timestamp).to_ext(),
                                  f"offset search by time in {_q(mq)}")

    async def earliest_msg_store_time(self, addr: str, mq: MessageQueue) -> int:
        response = await self.call(addr, RequestCode.GET_EARLIEST_MSG_STORETIME,
                                   QueueRequestHeader(topic=mq.topic, queue_id=mq.queue_id).to_ext(),
                                   operation=f"earliest store time of {_q(mq)}")
        return GetEarliestMsgStoretimeResponseHeader.from_ext(response.ext_fields).timestamp

    # -- consumption --------------------------------------------------------------------------------
    async def send_back(self, addr: str, group: str, *, commit_log_offset: int, origin_msg_id: str,
                        origin_topic: str, delay_level: int, max_reconsume_times: int) -> None:
        ext = ConsumerSendMsgBackRequestHeader(offset=commit_log_offset, group=group, delay_level=delay_level,
                                               origin_msg_id=origin_msg_id, origin_topic=origin_topic,
                                               max_reconsume_times=max_reconsume_times).to_ext()
        await self.call(addr, RequestCode.CONSUMER_SEND_MSG_BACK, ext,
                        operation=f"send back of message {origin_msg_id} for group {group!r}")


async def committed_offset(api: BrokerAPI, addr: str, group: str, mq: MessageQueue) -> int:
    """`query_consumer_offset`, with -1 when the broker has no offset of the group (QUERY_NOT_FOUND): what
    the consumers' `committed(mq)` answer."""
    try:
        return await api.query_consumer_offset(addr, group, mq)
    except BrokerResponseError as exc:
        if exc.code == ResponseCode.QUERY_NOT_FOUND:
            return -1
        raise


def _q(mq: MessageQueue) -> str:
    return f"{mq.topic}@{mq.broker_name}:{mq.queue_id}"
