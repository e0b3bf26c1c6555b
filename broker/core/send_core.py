"""The send path, one for every front (reference §9.1): a `SendMessageRequest` in, a `SendMessageResponse` out.

A front parses its request once into a SendMessageRequest and translates the SendMessageResponse back: the
remoting handler (broker/handlers/send_message.py: SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE), and
later the 5.x gRPC endpoint and transactions (half messages). Everything between is here and in send_inner.py,
as in RocketMQ's SendMessageProcessor:

* `msg_check` (msgCheck): the topic (created on send when allowed), the queue id, the write permission.
* the MessageExtBrokerInner(s) built from the request: send_inner.py (properties, retry/DLQ, delay levels,
  batches).
* the store's put: one message (`MessageStore.put_message`), a batch (`put_messages`), or the plain single
  messages of requests read together (`put_message_run`: one write; `send_run`).
* `handle_put_message_result` (handlePutMessageResult): every put's outcome, whatever it stored, goes through it:
  the store status mapped to a response code and remark, the statistics, the held pulls woken, one response per
  request.

A transactional (half) message goes the same way, to RMQ_SYS_TRANS_HALF_TOPIC (send_inner.py, transaction.py).
"""

from __future__ import annotations

import logging
import random
import time
from time import perf_counter_ns
from typing import TYPE_CHECKING, Sequence

from rocketmq_emulator.protocol import BrokerError, ResponseCode
from rocketmq_emulator.protocol.codes import MessageSysFlag
from rocketmq_emulator.protocol.headers import SendMessageRequestHeader
from rocketmq_emulator.protocol.topics import NOT_ALLOWED_SEND_TOPICS, RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner
from rocketmq_emulator.store.results import PUT_OK, STORED, PutMessageResult, PutMessageStatus

from ..state.topic_config import validate_topic
from .remarks import suggest_todo
from .send_inner import InnerMessageBuilder
from .send_request import SendMessageRequest, SendMessageResponse

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.admin_bodies import TopicConfig

    from .broker_state import BrokerState

log = logging.getLogger("rocketmq_emulator.send")
_MULTI_TAGS = int(MessageSysFlag.MULTI_TAGS)

#: handlePutMessageResult's mapping: store status -> response code and remark
PUT_STATUS_RESPONSES = {
    PutMessageStatus.PUT_OK: (ResponseCode.SUCCESS, None),
    PutMessageStatus.FLUSH_DISK_TIMEOUT: (ResponseCode.FLUSH_DISK_TIMEOUT, None),
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
    PutMessageStatus.SLAVE_NOT_AVAILABLE: (ResponseCode.SLAVE_NOT_AVAILABLE, None),
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: (ResponseCode.SYSTEM_ERROR,
                                               "create mapped file failed, server is busy or broken."),
    PutMessageStatus.MESSAGE_ILLEGAL: (ResponseCode.MESSAGE_ILLEGAL,
                                       "the message is illegal, maybe msg body or properties length not matched."),
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: (ResponseCode.MESSAGE_ILLEGAL,
                                                "the message is illegal, maybe msg properties length limit 32k."),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (ResponseCode.SERVICE_NOT_AVAILABLE, None),  # (with the disks' use)
    PutMessageStatus.OS_PAGECACHE_BUSY: (ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow "
                                                                     "control for a while"),
    PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
    PutMessageStatus.RUN_CROSSES_SEGMENT: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),  # (put one by one instead)
}
def service_not_available(disk_util: str) -> str:
    """4.9.8's remark of a send the store refused (disk full, a slave, stopped)."""
    return (f"service not available now. It may be caused by one of the following reasons: the broker's disk is full "
            f"[{disk_util}], messages are put to the slave, message store has been shut down, etc.")


#: the codes answered with the message's id, queue and offset (Java's sendOK); the statuses of stored messages,
#: counted and waking held pulls, are store.results.STORED
_SEND_OK = frozenset({ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.FLUSH_SLAVE_TIMEOUT,
                      ResponseCode.SLAVE_NOT_AVAILABLE})


class SendMessageCore:
    def __init__(self, broker: BrokerState) -> None:
        self.broker = broker
        self.inner = InnerMessageBuilder(broker)
        self._stats = broker.stats
        self.valid_topics: set[str] = set()  # topics that passed validation and exist
        self._failures: dict[PutMessageStatus, tuple[float, int]] = {}

    # -- requests ------------------------------------------------------------------------------------
    def send(self, request: SendMessageRequest) -> SendMessageResponse:
        """One request alone (a single message or a batch). Raises BrokerError when it is refused before the
        store."""
        self.msg_check(request)
        if request.header.batch:
            return self._put_batch(request)
        msg = self.inner.plain(request)
        return self._put_one(request, msg if msg is not None else self.inner.full(request))

    def send_run(self, requests: Sequence[SendMessageRequest]) -> list[SendMessageResponse | Exception | None]:
        """Requests read together, answered in order, each exactly as `send` would: the plain single messages
        among them are stored with one write (`put_message_run`); any other request is stored alone, in order
        (the run so far first). A refused request's entry is the exception `send` would raise."""
        out: list[SendMessageResponse | Exception | None] = [None] * len(requests)
        run_at: list[int] = []
        run: list[MessageExtBrokerInner] = []
        plain = self.inner.plain
        limit = self.broker.config.store.max_message_size  # once per read (updateBrokerConfig swaps the config)
        for i, request in enumerate(requests):
            try:
                self.msg_check(request)
                msg = None if request.header.batch else plain(request, limit)
                if msg is not None:
                    run.append(msg)
                    run_at.append(i)
                    continue
                if run:
                    self._put_run(run_at, run, out)
                    run_at, run = [], []
                out[i] = self._put_batch(request) if request.header.batch else \
                    self._put_one(request, self.inner.full(request))
            except Exception as exc:  # noqa: BLE001 - answered as `send` failing would be
                out[i] = exc
        if run:
            self._put_run(run_at, run, out)
        return out

    def put_plain(self, msgs: list[MessageExtBrokerInner]) -> tuple[PutMessageResult, list[SendMessageResponse] | None]:
        """Plain single messages already checked and built (the native read lane did `msg_check` and `plain` for
        them; broker/handlers/send_message.py), stored as `send_run` stores such a run. Returns the put's result
        and, unless it stored every message with SUCCESS (the answers are then made from the result), each
        message's response."""
        began = perf_counter_ns()
        store = self.broker.store
        result = store.put_message(msgs[0]) if len(msgs) == 1 else store.put_message_run(msgs)
        if result.status is PUT_OK:
            self._count(result, msgs, False, began)
            self._wake(result, msgs, False)
            return result, None
        if result.phy_offsets is None and len(msgs) > 1:  # nothing written: one by one, each its own status
            return result, [self.handle_put_message_result(store.put_message(m), (m.queue_id,), (m,),
                                                           perf_counter_ns(), False)[0] for m in msgs]
        return result, self.handle_put_message_result(result, [m.queue_id for m in msgs], msgs, began, False)

    def put_batch_messages(self, msgs: list[MessageExtBrokerInner]) -> SendMessageResponse:
        """A batch's messages already checked and built (the native read lane did `msg_check` and `batch`),
        stored and answered as `send` does a batch request."""
        began = perf_counter_ns()
        return self.handle_put_message_result(self.broker.store.put_messages(msgs), (msgs[0].queue_id,), msgs,
                                              began, True)[0]

    def _put_one(self, request: SendMessageRequest, msg: MessageExtBrokerInner) -> SendMessageResponse:
        began = perf_counter_ns()
        return self.handle_put_message_result(self.broker.store.put_message(msg), (request.queue_id,), (msg,), began,
                                              False)[0]

    def _put_batch(self, request: SendMessageRequest) -> SendMessageResponse:
        msgs = self.inner.batch(request)
        began = perf_counter_ns()
        return self.handle_put_message_result(self.broker.store.put_messages(msgs), (request.queue_id,), msgs, began,
                                              True)[0]

    def _put_run(self, run_at: list[int], run: list[MessageExtBrokerInner],
                 out: list[SendMessageResponse | Exception | None]) -> None:
        """The plain messages of a run, stored as the read lane's are (`put_plain`; each message's queue id is its
        request's)."""
        result, responses = self.put_plain(run)
        if responses is None:  # all stored with SUCCESS
            code, remark = PUT_STATUS_RESPONSES[PUT_OK]
            responses = [SendMessageResponse(code, remark, msg_id, m.queue_id, qo)
                         for m, msg_id, qo in zip(run, result.msg_ids, result.queue_offsets or ())]
        for i, answer in zip(run_at, responses):
            out[i] = answer

    # -- msgCheck ------------------------------------------------------------------------------------
    def msg_check(self, request: SendMessageRequest) -> None:
        """The checks every send passes first (topic, queue, permission); sets the request's queue id and sys
        flag. Raises BrokerError."""
        h = request.header
        topic = h.topic
        tc = self.broker.topic_config_manager.table.get(topic)
        if tc is None or topic not in self.valid_topics:
            validate_topic(topic)
            if topic in NOT_ALLOWED_SEND_TOPICS:
                raise BrokerError(ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
            tc = self._topic_config(h)
            self.valid_topics.add(topic)
        queue_id = h.queue_id
        if queue_id >= max(tc.write_queue_nums, tc.read_queue_nums):
            raise BrokerError(ResponseCode.SYSTEM_ERROR,
                              f"request queueId[{queue_id}] is illegal, {tc.java_string()} Producer: {request.producer}")
        if queue_id < 0:
            queue_id = random.randrange(max(1, tc.write_queue_nums))
        # a topic's own perm is not checked here: 4.9.8 and 5.x store a send to a read-only topic (clients skip
        # such queues through the route's perm)
        request.queue_id = queue_id
        request.sys_flag = h.sys_flag | _MULTI_TAGS if tc.topic_filter_type == 1 else h.sys_flag

    def _topic_config(self, h: SendMessageRequestHeader) -> TopicConfig:
        tcm = self.broker.topic_config_manager
        tc = tcm.get(h.topic)
        if tc is None:
            tc = tcm.create_in_send(h.topic, h.default_topic or "", h.default_topic_queue_nums,
                                    1 if h.unit_mode else 0)
            if tc is None and h.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                tc = tcm.create_without_template(h.topic, 1)
            if tc is None:
                raise BrokerError(ResponseCode.TOPIC_NOT_EXIST,
                                  suggest_todo(f"topic[{h.topic}] not exist, apply first please!"))
        return tc

    # -- handlePutMessageResult ----------------------------------------------------------------------
    def handle_put_message_result(self, result: PutMessageResult, queue_ids: Sequence[int],
                                  msgs: Sequence[MessageExtBrokerInner], began: int, batch: bool
                                  ) -> list[SendMessageResponse]:
        """The outcome of a put that began at perf_counter_ns `began`, one response per request (`queue_ids`: the
        queue each is answered with): one request of one message, one batch request (`msgs` its messages), or
        requests read together, one message each. Stored messages are counted in the statistics and wake the
        held pulls of their queues."""
        code, remark = PUT_STATUS_RESPONSES[result.status]
        if code == ResponseCode.SERVICE_NOT_AVAILABLE:
            remark = service_not_available(self.broker.store.disk_util())
        if code not in _SEND_OK:
            for _ in queue_ids:
                self._stats.put_failed()
                self._warn_failed(result.status)
            return [SendMessageResponse(code, remark) for _ in queue_ids]
        if result.status in STORED:
            self._count(result, msgs, batch, began)
            self._wake(result, msgs, batch)
        if len(queue_ids) == 1:  # one message, or a batch answered with all its ids
            return [SendMessageResponse(code, remark, result.msg_id, queue_ids[0], result.logics_offset)]
        return [SendMessageResponse(code, remark, msg_id, queue_id, queue_offset)
                for queue_id, msg_id, queue_offset in zip(queue_ids, result.msg_ids, result.queue_offsets or ())]

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """A message the broker puts itself (a consumer's send-back, a delayed message due): stored, it wakes
        the held pulls of its queue. The caller keeps its own statistics."""
        result = self.broker.store.put_message(msg)
        if result.status in STORED:
            self._wake(result, (msg,), False)
        return result

    def _wake(self, result: PutMessageResult, msgs: Sequence[MessageExtBrokerInner], batch: bool) -> None:
        """Stored messages wake the held pulls of their queues (a batch once, with no tags code to filter by)."""
        if batch:
            msg = msgs[0]
            self.broker.message_arrived(msg.topic, msg.queue_id, result.logics_offset + result.msg_num, None)
            return
        self.broker.messages_arrived(msgs, result.queue_offsets or ())

    def _count(self, result: PutMessageResult, msgs: Sequence[MessageExtBrokerInner], batch: bool, began: int) -> None:
        """The broker statistics of stored messages: one `put` per topic (nearly always one for the whole put; a
        batch is one request, of one topic)."""
        stats = self._stats
        topic = msgs[0].topic
        if not batch:
            for m in msgs:
                if m.topic != topic:  # requests read together for several topics: each message its own put
                    offsets = result.phy_offsets or []  # the records are contiguous: sizes from the offsets
                    ends = offsets[1:] + [offsets[0] + result.wrote_bytes]
                    for msg, start, end in zip(msgs, offsets, ends):
                        stats.put(msg.topic, 1, end - start, 1, began)
                    return
        stats.put(topic, result.msg_num, result.wrote_bytes, 1 if batch else len(msgs), began)
        if topic == SCHEDULE_TOPIC:  # a parked delayed message (always put alone): 4.9.8 counts its queue
            stats.queue_put(topic, msgs[0].queue_id, result.wrote_bytes)

    def _warn_failed(self, status: PutMessageStatus) -> None:
        """One line per failure kind every 10 s (a full disk fails every send: the log must stay readable)."""
        now = time.monotonic()
        last, suppressed = self._failures.get(status, (0.0, 0))
        if now - last >= 10.0:
            more = f" ({suppressed} more since the last report)" if suppressed else ""
            log.warning("sends are failing: %s%s", status.name, more)
            self._failures[status] = (now, 0)
        else:
            self._failures[status] = (last, suppressed + 1)
