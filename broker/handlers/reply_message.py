"""SEND_REPLY_MESSAGE (324, long names) and SEND_REPLY_MESSAGE_V2 (325, letters): request-reply's replies
(RocketMQ 4.6+, ReplyMessageProcessor).

A replier (a consumer that got a request message) sends the reply to `<cluster>_REPLY_TOPIC` with the request's
CORRELATION_ID, REPLY_TO_CLIENT (the requester's client id) and TTL. The broker:

* checks it as any send (`SendMessageCore.msg_check`: topic, queue, permission);
* pushes it to the requester: PUSH_REPLY_MESSAGE_TO_CLIENT (ReplyMessageRequestHeader, the reply's body) on the
  connection of the producer whose client id is REPLY_TO_CLIENT (producers are known by their heartbeats), and
  waits for its answer (10 s, as upstream);
* stores it in the reply topic when `storeReplyMessageEnable` (default true), so a reply is never lost, even
  when the requester is gone.

The answer follows upstream: SUCCESS when the push succeeded (with the stored message's id, queue and offset),
SYSTEM_ERROR with upstream's remark when it did not ("push reply message fail, channel of <id> not found."),
the reply stored all the same. A requester that is gone is logged once per client id (a Java replier retries a
SYSTEM_ERROR twice: three copies are stored, as with a real broker, and one log line).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, ProtocolError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.headers import ReplyMessageRequestHeader, SendMessageResponseHeader, decode_send_header
from rocketmq_emulator.protocol.message import (PROPERTY_MESSAGE_REPLY_TO_CLIENT, PROPERTY_PUSH_REPLY_TIME,
                                                decode_properties, encode_properties, pack_host)
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection
from rocketmq_emulator.store.results import STORED

from ..core.send_request import SendMessageRequest

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext

log = logging.getLogger("rocketmq_emulator.reply")

#: how long the broker waits for the requester's answer to a pushed reply (Broker2Client.callClient)
PUSH_REPLY_TIMEOUT_S = 10.0
#: a requester that is gone is logged once per this many seconds per client id
_GONE_LOG_INTERVAL_S = 60.0


class ReplyMessageProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker
        self._gone_logged: dict[str, float] = {}

    def register(self, table: DispatchTable) -> None:
        table.register([RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2], self.send_reply_message)

    async def send_reply_message(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        b = self.broker
        header = decode_send_header(req.code, req.ext_fields)
        born = pack_host(conn.remote_ip or "127.0.0.1")
        request = SendMessageRequest(header, req.body, born, conn.remote_port, conn.peer, req.version)
        core = b.send_core
        core.msg_check(request)  # BrokerError: answered by the transport like any refused send
        pushed, remark = await self._push(request, conn)
        ext = {"MSG_REGION": b.config.region_id, "TRACE_ON": "true" if b.config.trace_on else "false"}
        msg_id, queue_offset = "0", 0  # upstream answers these when the reply is not stored
        if b.config.store_reply_message_enable:
            msg = core.inner.plain(request) or core.inner.full(request)
            result = core.put_message(msg)
            if result.status in STORED:
                b.stats.put(msg.topic, 1, result.wrote_bytes, 1, time.perf_counter_ns())
                msg_id, queue_offset = result.msg_id, result.logics_offset
            else:
                log.warning("reply to %s not stored: %s", header.topic, result.status.name)
        ext.update(SendMessageResponseHeader.fast_ext(msg_id, request.queue_id, queue_offset))
        if not pushed:
            return RemotingCommand.response_to(req, ResponseCode.SYSTEM_ERROR, remark, ext)
        return RemotingCommand.response_to(req, ResponseCode.SUCCESS, None, ext)

    async def _push(self, request: SendMessageRequest, conn: RemotingConnection) -> tuple[bool, str | None]:
        """PUSH_REPLY_MESSAGE_TO_CLIENT to the requester: (pushed, the remark when not)."""
        h = request.header
        props = decode_properties(h.properties or "")
        client_id = props.get(PROPERTY_MESSAGE_REPLY_TO_CLIENT)
        if client_id is None:
            log.warning("a reply without %s cannot be pushed (from %s)", PROPERTY_MESSAGE_REPLY_TO_CLIENT, conn.peer)
            return False, f"reply message properties[{PROPERTY_MESSAGE_REPLY_TO_CLIENT}] is null"
        info = self.broker.producer_manager.find_channel(client_id)
        if info is None:
            remark = f"push reply message fail, channel of <{client_id}> not found."
            self._log_gone(client_id, remark)
            return False, remark
        props[PROPERTY_PUSH_REPLY_TIME] = str(time.time_ns() // 1_000_000)
        b = self.broker
        push = ReplyMessageRequestHeader(
            producer_group=h.producer_group, topic=h.topic, default_topic=h.default_topic,
            default_topic_queue_nums=h.default_topic_queue_nums, queue_id=h.queue_id, sys_flag=h.sys_flag,
            born_timestamp=h.born_timestamp, flag=h.flag, properties=encode_properties(props),
            reconsume_times=h.reconsume_times, unit_mode=h.unit_mode, born_host=conn.peer,
            store_host=f"{b.config.broker_ip1}:{b.listen_port}", store_timestamp=time.time_ns() // 1_000_000)
        try:
            answer = await b.broker2client.push_reply(info, push.to_ext(), request.body, PUSH_REPLY_TIMEOUT_S)
        except (asyncio.TimeoutError, TimeoutError, ConnectionError, ProtocolError, BrokerError) as exc:
            log.warning("push reply message to <%s> failed: %s", client_id, type(exc).__name__)
            return False, f"push reply message to {client_id}fail."
        if answer.code != ResponseCode.SUCCESS:
            log.warning("push reply message to <%s> answered %d: %s", client_id, answer.code, answer.remark)
            return False, f"push reply message to {client_id}fail."
        return True, None

    def _log_gone(self, client_id: str, remark: str) -> None:
        now = time.monotonic()
        if now - self._gone_logged.get(client_id, -_GONE_LOG_INTERVAL_S) >= _GONE_LOG_INTERVAL_S:
            self._gone_logged[client_id] = now
            if len(self._gone_logged) > 1000:
                self._gone_logged.clear()
            log.warning("%s (the reply is %s)", remark, "stored" if self.broker.config.store_reply_message_enable
                        else "dropped: storeReplyMessageEnable is false")
