"""What a consumer answers the requests its brokers send it; the client instance's one table
(`remoting_processor.ClientRemotingProcessor`) decodes each request and asks the group's consumer:

* `PushConsumerRequests`: a push consumer's rebalance, offset store, process queues and consume service.
* `PullConsumerRequests`: a pull consumer owns no queues (the application pulls), so it has little to say.
"""

from __future__ import annotations

import time

from rocketmq_emulator.protocol.bodies import CMResult, ConsumeMessageDirectlyResult, MessageQueue

from .consume_service import ConsumeResult, ConsumeService
from .consumer_context import ConsumerContext
from .errors import ClientStateError
from .message import ReceivedMessage
from .rebalance import RebalanceImpl
from .running_info import RunningInfo, pull_running_info, push_running_info


class PushConsumerRequests:
    def __init__(self, ctx: ConsumerContext, rebalance: RebalanceImpl, service: ConsumeService) -> None:
        self.ctx = ctx
        self.rebalance = rebalance
        self.service = service

    def rebalance_now(self) -> None:
        self.rebalance.request()

    def reset_offset(self, topic: str, offset_table: dict[MessageQueue, int]) -> None:
        """`RebalanceImpl.reset_offset`, in the background (the request is oneway)."""
        self.ctx.background.spawn(self.rebalance.reset_offset(topic, offset_table))

    def consumer_status(self, topic: str) -> dict[MessageQueue, int]:
        return self.ctx.offset_store.clone_offset_table(topic)

    def running_info(self) -> RunningInfo:
        return push_running_info(self.ctx, self.rebalance.process_queue_table)

    async def consume_message_directly(self, msg: ReceivedMessage) -> ConsumeMessageDirectlyResult:
        """Run the handler on `msg` and say how it went (a handler's exception is the remark)."""
        t0 = time.perf_counter()
        status, exc = await self.service.consume_directly(msg)
        spent = int((time.perf_counter() - t0) * 1000)
        if exc is not None:
            result, remark = CMResult.CR_THROW_EXCEPTION, f"{type(exc).__name__}: {exc}"
        elif status is ConsumeResult.SUCCESS:
            result, remark = CMResult.CR_SUCCESS, None
        else:
            result, remark = CMResult.CR_LATER, None
        return ConsumeMessageDirectlyResult(order=self.ctx.orderly, auto_commit=True, consume_result=result,
                                            remark=remark, spent_time_mills=spent)


class PullConsumerRequests:
    def __init__(self, group: str, namesrv: str, started_at_ms: int) -> None:
        self.group = group
        self.namesrv = namesrv
        self.started_at_ms = started_at_ms

    def rebalance_now(self) -> None:
        """Nothing to rebalance: the application chooses the queues."""

    def reset_offset(self, topic: str, offset_table: dict[MessageQueue, int]) -> None:
        """Nothing to move: the application keeps its own positions."""

    def consumer_status(self, topic: str) -> dict[MessageQueue, int]:
        return {}

    def running_info(self) -> RunningInfo:
        return pull_running_info(self.group, self.namesrv, self.started_at_ms)

    async def consume_message_directly(self, msg: ReceivedMessage) -> ConsumeMessageDirectlyResult:
        raise ClientStateError(f"{self.group} is a pull consumer: it has nothing to say to that")
