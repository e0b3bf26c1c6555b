"""One PULL_MESSAGE (Java `PullAPIWrapper`, reference §4.2, §5.1, §10.5): the request, the broker a queue
is pulled from (the one it suggested last time), and the result: a status plus the decoded messages, already
re-filtered by tag string and with the topic of retried messages restored."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from rocketmq_emulator.protocol import PullSysFlag, RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import MessageQueue, SubscriptionData
from rocketmq_emulator.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_emulator.protocol.topics import retry_topic

from .errors import NoRouteError, response_error
from .instance import ClientInstance, request
from .message import ReceivedMessage, decode_received
from .route import MASTER_ID
from .subscription import tag_filter


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_STATUS: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND, ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL}


@dataclass
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[ReceivedMessage] = field(default_factory=list)

    def __repr__(self) -> str:
        return (f"PullResult(status={self.status.name}, next_begin_offset={self.next_begin_offset}, "
                f"min_offset={self.min_offset}, max_offset={self.max_offset}, messages={len(self.messages)})")


class PullAPI:
    def __init__(self, instance: ClientInstance, group: str) -> None:
        self.instance = instance
        self.group = group
        self.retry_topic = retry_topic(group)
        self.suggested: dict[MessageQueue, int] = {}  # queue -> broker id suggested by the last answer

    async def pull(self, mq: MessageQueue, sub: SubscriptionData, offset: int, max_nums: int, *,
                   commit_offset: int = 0, suspend_timeout: float = 0.0, timeout: float = 10.0,
                   post_subscription: bool = True) -> PullResult:
        instance = self.instance
        broker_id = self.suggested.get(mq, MASTER_ID)
        addr = instance.subscribe_addr(mq.broker_name, broker_id)
        if addr is None:
            await instance.topic_route(mq.topic, refresh=True)
            addr = instance.subscribe_addr(mq.broker_name, broker_id)
            if addr is None:
                raise NoRouteError(mq.topic, f"broker {mq.broker_name!r} of topic {mq.topic!r} is not in its route")
        sys_flag = 0
        if commit_offset > 0 and broker_id == MASTER_ID:
            sys_flag |= PullSysFlag.COMMIT_OFFSET
        if suspend_timeout > 0:
            sys_flag |= PullSysFlag.SUSPEND
        if post_subscription:
            sys_flag |= PullSysFlag.SUBSCRIPTION
        ext = PullMessageRequestHeader(
            consumer_group=self.group, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset,
            max_msg_nums=max_nums, sys_flag=int(sys_flag), commit_offset=commit_offset,
            suspend_timeout_millis=int(suspend_timeout * 1000), sub_version=sub.sub_version,
            expression_type=sub.expression_type or "TAG",
            subscription=sub.sub_string if post_subscription else None).to_ext()
        response = await instance.remoting.invoke(addr, request(RequestCode.PULL_MESSAGE, ext), timeout)
        status = _STATUS.get(response.code)
        if status is None:
            raise response_error(response.code, response.remark, operation=f"pull from {mq.topic}:{mq.queue_id}",
                                 addr=addr)
        h = PullMessageResponseHeader.from_ext(response.ext_fields)
        self.suggested[mq] = h.suggest_which_broker_id
        result = PullResult(status, h.next_begin_offset, h.min_offset, h.max_offset)
        if status is PullStatus.FOUND:
            msgs = decode_received(response.body, mq, self.retry_topic)
            tags = tag_filter(sub)
            if tags is not None:
                msgs = [m for m in msgs if m.tags in tags]
            result.messages = msgs
        return result
