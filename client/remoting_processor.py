"""`ClientRemotingProcessor` of a push consumer (Java `ClientRemotingProcessor`): what it does with the
requests its brokers send it (§3.1, §10.7).

* NOTIFY_CONSUMER_IDS_CHANGED: rebalance now.
* RESET_CONSUMER_CLIENT_OFFSET: `RebalanceImpl.reset_offset` (in the background; the request is oneway).
* GET_CONSUMER_STATUS_FROM_CLIENT: the in-memory offsets of the topic's queues.
* GET_CONSUMER_RUNNING_INFO: settings, subscriptions, process queues and counters (ConsumerRunningInfo).
* CONSUME_MESSAGE_DIRECTLY: run the handler on the message in the body, answer with the outcome.
"""

from __future__ import annotations

import logging
import time
from typing import Awaitable, Callable

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import GetConsumerStatusBody, ResetOffsetBody
from rocketmq_emulator.protocol.bodies import CMResult, ConsumeMessageDirectlyResult, MessageQueue
from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.headers import (ConsumeMessageDirectlyResultRequestHeader,
                                                GetConsumerStatusRequestHeader, ResetOffsetRequestHeader)
from rocketmq_emulator.protocol.topics import retry_topic

from .consume_service import ConsumeResult, ConsumeService
from .consumer_context import ConsumerContext
from .errors import ClientStateError
from .message import decode_received
from .rebalance import RebalanceImpl
from .running_info import RunningInfo, push_running_info

log = logging.getLogger("rocketmq_emulator.client.consumer")


class ClientRemotingProcessor:
    def __init__(self, ctx: ConsumerContext, rebalance: RebalanceImpl, service: ConsumeService) -> None:
        self.ctx = ctx
        self.rebalance = rebalance
        self.service = service
        #: request code -> handler, as the broker's dispatch table (the instance routes a group's requests here)
        self.table: dict[int, Callable[[RemotingCommand], Awaitable[RemotingCommand | None]]] = {
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: self._ids_changed,
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET: self._reset_requested,
            RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT: self._status,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self._running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self._consume_directly,
        }

    async def handle(self, cmd: RemotingCommand) -> RemotingCommand | None:
        handler = self.table.get(cmd.code)
        if handler is None:
            return RemotingCommand.response_to(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                               f" request type {cmd.code} not supported")
        return await handler(cmd)

    async def _ids_changed(self, cmd: RemotingCommand) -> None:
        self.rebalance.request()

    async def _reset_requested(self, cmd: RemotingCommand) -> None:
        try:
            h = ResetOffsetRequestHeader.from_ext(cmd.ext_fields)
            table = ResetOffsetBody.decode(cmd.body).offset_table if cmd.body else {}
        except ProtocolError as exc:
            log.warning("%s: ignoring a RESET_CONSUMER_CLIENT_OFFSET that cannot be read: %s", self.ctx.group, exc)
            return
        self.ctx.background.spawn(self.rebalance.reset_offset(h.topic, table))

    async def _status(self, cmd: RemotingCommand) -> RemotingCommand:
        topic = GetConsumerStatusRequestHeader.from_ext(cmd.ext_fields).topic
        body = GetConsumerStatusBody(message_queue_table=self.ctx.offset_store.clone_offset_table(topic))
        return RemotingCommand.response_to(cmd, body=body.encode())

    async def _running_info(self, cmd: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(cmd, body=self.running_info().encode())

    # -- admin requests -----------------------------------------------------------------------------
    def running_info(self) -> RunningInfo:
        return push_running_info(self.ctx, self.rebalance.process_queue_table)

    async def _consume_directly(self, cmd: RemotingCommand) -> RemotingCommand:
        c = self.ctx
        h = ConsumeMessageDirectlyResultRequestHeader.from_ext(cmd.ext_fields)
        msgs = decode_received(cmd.body, MessageQueue("", h.broker_name or "", 0), retry_topic(c.group))
        if not msgs:
            return RemotingCommand.response_to(cmd, ResponseCode.SYSTEM_ERROR, "no message in the request body")
        msg = msgs[0]
        msg.message_queue = MessageQueue(msg.topic, h.broker_name or "", msg.queue_id)
        t0 = time.perf_counter()
        try:
            status, exc = await self.service.consume_directly(msg)
        except ClientStateError as err:
            return RemotingCommand.response_to(cmd, ResponseCode.SYSTEM_ERROR, str(err))
        spent = int((time.perf_counter() - t0) * 1000)
        if exc is not None:
            result, remark = CMResult.CR_THROW_EXCEPTION, f"{type(exc).__name__}: {exc}"
        elif status is ConsumeResult.SUCCESS:
            result, remark = CMResult.CR_SUCCESS, None
        else:
            result, remark = CMResult.CR_LATER, None
        body = ConsumeMessageDirectlyResult(order=c.orderly, auto_commit=True, consume_result=result, remark=remark,
                                            spent_time_mills=spent)
        return RemotingCommand.response_to(cmd, body=body.encode())
