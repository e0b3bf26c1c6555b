"""`ClientRemotingProcessor` of a push consumer (Java `ClientRemotingProcessor` + `MQClientInstance.resetOffset`):
what it does with the requests its brokers send it (§3.1, §10.7), and the correction of an illegal offset
(§10.5, seed 000).

* NOTIFY_CONSUMER_IDS_CHANGED: rebalance now.
* RESET_CONSUMER_CLIENT_OFFSET: pause, drop the owned queues of the topic named in the table, wait for their
  running handlers (instead of Java's fixed 10 s sleep), store, persist and forget the new offsets, resume and
  rebalance at once, which takes the queues again from the new offsets (broadcasting: memory, then the file).
* GET_CONSUMER_STATUS_FROM_CLIENT: the in-memory offsets of the topic's queues.
* GET_CONSUMER_RUNNING_INFO: settings, subscriptions, process queues and counters (ConsumerRunningInfo).
* CONSUME_MESSAGE_DIRECTLY: run the handler on the message in the body, answer with the outcome.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode, fastjson
from rocketmq_emulator.protocol.admin_bodies import GetConsumerStatusBody, ResetOffsetBody
from rocketmq_emulator.protocol.bodies import CMResult, ConsumeMessageDirectlyResult, MessageQueue
from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.headers import (ConsumeMessageDirectlyResultRequestHeader,
                                                GetConsumerStatusRequestHeader, ResetOffsetRequestHeader)
from rocketmq_emulator.protocol.topics import retry_topic

from . import route as routing
from .consume_service import ConsumeResult
from .errors import ClientError, ClientStateError
from .message import decode_received
from .process_queue import ProcessQueue

if TYPE_CHECKING:
    from .push_consumer import PushConsumer

log = logging.getLogger("rocketmq_emulator.client.consumer")


class ClientRemotingProcessor:
    def __init__(self, consumer: PushConsumer) -> None:
        self.consumer = consumer
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
        self.consumer.rebalance_now()

    async def _reset_requested(self, cmd: RemotingCommand) -> None:
        try:
            h = ResetOffsetRequestHeader.from_ext(cmd.ext_fields)
            table = ResetOffsetBody.decode(cmd.body).offset_table if cmd.body else {}
        except ProtocolError as exc:
            log.warning("%s: ignoring a RESET_CONSUMER_CLIENT_OFFSET that cannot be read: %s", self.consumer.group,
                        exc)
            return
        self.consumer.side_task(self.reset_offset(h.topic, table))

    async def _status(self, cmd: RemotingCommand) -> RemotingCommand:
        topic = GetConsumerStatusRequestHeader.from_ext(cmd.ext_fields).topic
        body = GetConsumerStatusBody(message_queue_table=self.consumer.offset_store.clone_offset_table(topic))
        return RemotingCommand.response_to(cmd, body=body.encode())

    async def _running_info(self, cmd: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(cmd, body=self.running_info().encode())

    # -- reset and correction of offsets ------------------------------------------------------------
    async def reset_offset(self, topic: str, table: dict[MessageQueue, int]) -> None:
        consumer = self.consumer
        log.info("%s: resetting the offsets of %s: %s", consumer.group, topic,
                 {f"{m.broker_name}:{m.queue_id}": o for m, o in sorted(table.items()) if m.topic == topic})
        consumer.suspend(True)
        try:
            async with consumer.rebalance.lock_table:
                await self._reset_owned(topic, table)
        finally:
            consumer.suspend(False)
        consumer.rebalance_now()

    async def _reset_owned(self, topic: str, table: dict[MessageQueue, int]) -> None:
        consumer = self.consumer
        rebalance = consumer.rebalance
        pqs = {mq: pq for mq, pq in rebalance.process_queue_table.items() if mq.topic == topic and mq in table}
        for pq in pqs.values():
            pq.drop()
            pq.retired = True  # late completions must not move the offset again
            pq.clear()
            consumer.stop_pulling(pq)
        for pq in pqs.values():
            await pq.wait_idle(consumer.settings.await_termination_timeout)
        store = consumer.offset_store
        for mq, pq in pqs.items():
            store.update_offset(mq, table[mq], False)
            try:
                await store.persist(mq)
            except ClientError as exc:
                log.warning("%s: persisting the reset offset of %s failed: %s", consumer.group, mq, exc)
            store.remove_offset(mq)
            if rebalance.needs_locks:
                await rebalance.unlock(mq, oneway=True)
            if rebalance.process_queue_table.get(mq) is pq:
                del rebalance.process_queue_table[mq]
                rebalance.readding.add(mq)

    async def correct_offset(self, pq: ProcessQueue, next_offset: int) -> None:
        """OFFSET_ILLEGAL: once the queue's handlers are done, store the broker's offset durably, forget the
        queue, and rebalance at once so it is taken again from that offset (Java waits 10 s and then up to
        20 s for the next rebalance)."""
        consumer = self.consumer
        await pq.wait_idle(consumer.settings.drain_timeout)
        mq = pq.mq
        table = consumer.rebalance.process_queue_table
        if table.get(mq) is not pq:
            return
        del table[mq]
        consumer.rebalance.readding.add(mq)
        pq.retired = True
        consumer.stop_pulling(pq)
        store = consumer.offset_store
        store.update_offset(mq, next_offset, False)
        try:
            await store.persist(mq)
        except ClientError as exc:
            log.debug("%s: persisting the corrected offset of %s failed: %s", consumer.group, mq, exc)
        if mq not in table:
            store.remove_offset(mq)
        consumer.rebalance_now()

    # -- admin requests -----------------------------------------------------------------------------
    def running_info(self) -> RunningInfo:
        c = self.consumer
        s = c.settings
        props = {"consumerGroup": c.group, "messageModel": c.message_model.name,
                 "consumeFromWhere": c.consume_from.name, "consumeTimestamp": str(c.consume_timestamp_ms),
                 "pullBatchSize": str(s.pull_batch_size), "pullThresholdForQueue": str(s.pull_threshold_for_queue),
                 "consumeMessageBatchMaxSize": str(s.consume_batch_size),
                 "maxReconsumeTimes": str(c.max_reconsume_times()),
                 "PROP_CONSUMEORDERLY": str(c.orderly).lower(), "PROP_THREADPOOL_CORE_SIZE": str(s.consume_concurrency),
                 "PROP_CONSUMER_START_TIMESTAMP": str(c.started_at), "PROP_NAMESERVER_ADDR": c.config.namesrv,
                 "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY", "PROP_CLIENT_VERSION": "V4_9_8"}
        mq_table = {mq: pq.info(c.committed(mq)) for mq, pq in sorted(c.rebalance.process_queue_table.items())}
        stats = c.service.stats.status() if c.service is not None else {}
        return RunningInfo({"properties": props, "subscriptionSet": list(c.subscriptions.values()),
                            "mqTable": mq_table, "statusTable": {t: stats for t in sorted(c.subscriptions)}})

    async def _consume_directly(self, cmd: RemotingCommand) -> RemotingCommand:
        c = self.consumer
        h = ConsumeMessageDirectlyResultRequestHeader.from_ext(cmd.ext_fields)
        msgs = decode_received(cmd.body, MessageQueue("", h.broker_name or "", 0), retry_topic(c.group))
        if not msgs:
            return RemotingCommand.response_to(cmd, ResponseCode.SYSTEM_ERROR, "no message in the request body")
        msg = msgs[0]
        msg.message_queue = MessageQueue(msg.topic, h.broker_name or "", msg.queue_id)
        t0 = time.perf_counter()
        try:
            status, exc = await c.service.consume_directly(msg)
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


class RunningInfo:
    """ConsumerRunningInfo (§6.3), written with fastjson's object-form MessageQueue keys."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def encode(self) -> bytes:
        return fastjson.dumps(self.data).encode()

    def __getitem__(self, key: str) -> Any:
        return self.data[key]
