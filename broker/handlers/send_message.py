"""SEND_MESSAGE (10, long names), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320), reference §9.1: the
remoting front of the send path (broker/core/send_core.py). It only translates: the header and body into a
SendMessageRequest, the SendMessageResponse back into a response with the SendMessageResponseHeader's fields.

Batch or not is decided by the header's `batch` flag (C++ sends batches as 310 with `m=true`).

With the native lane, `SendLane` is the table's read lane (`DispatchTable.lane`): once per read the C function
`read_sends` takes the plain single sends (SEND_MESSAGE_V2, SEND_MESSAGE) and the batches whole (header,
msgCheck and the messages built, in C), the core stores each run of single sends with one write
(`SendMessageCore.put_plain`: statistics and pull wake-ups once per run) and `success_frames` writes all their
answers as one piece; a batch is stored as one (`put_batch_messages`) and answered from the SUCCESS template. It
also reads each PULL_MESSAGE's header: `pull_request` makes the request with its header read
(`RemotingCommand.header`), which the table's pull handler answers as any other. Every frame it does not take comes
here as a command, in order, exactly as without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocketmq_emulator.native import lane as native
from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.codes import SerializeType
from rocketmq_emulator.protocol.codes import CURRENT_VERSION
from rocketmq_emulator.protocol.headers import (SEND_V2_TYPED, PullMessageRequestHeader, SendMessageResponseHeader,
                                                decode_send_header)
from rocketmq_emulator.protocol.message import pack_host
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner

from ..core.send_request import SendMessageRequest, SendMessageResponse

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext

_SUCCESS = ResponseCode.SUCCESS
_JSON = SerializeType.JSON


class SendMessageProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.core = broker.send_core
        self.response_extra = {"MSG_REGION": broker.config.region_id,
                                "TRACE_ON": "true" if broker.config.trace_on else "false"}
        self._success_frame = SendMessageResponseHeader.success_frame_encoder(self.response_extra)
        self._broker = broker

    def register(self, table: DispatchTable) -> None:
        codes = [RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE]
        table.register(codes, self.send_message)
        table.register_run(codes, self.send_messages, typed=SEND_V2_TYPED)
        if native is not None:
            table.lane = SendLane(self, self._broker)

    def send_message(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        header = req.header if req.header is not None else decode_send_header(req.code, req.ext_fields)
        request = SendMessageRequest(header, req.body, *self._producer(conn), req.version)
        try:
            return self._response(req, self.core.send(request))
        except BrokerError as exc:
            return self._refusal(req, exc)

    def send_messages(self, reqs: list[RemotingCommand], conn: RemotingConnection
                      ) -> list[RemotingCommand | BaseException | bytes | None]:
        """Consecutive sends of one read, handed to the core together (`SendMessageCore.send_run`: the plain
        messages among them are stored with one write); a JSON request's success is answered from a pre-encoded
        frame."""
        answers: list[RemotingCommand | BaseException | bytes | None] = [None] * len(reqs)
        requests: list[SendMessageRequest] = []
        at: list[int] = []
        born, port, peer = self._producer(conn)
        for i, req in enumerate(reqs):
            try:
                header = req.header  # read straight from the JSON (FrameDecoder.typed), or from extFields
                requests.append(SendMessageRequest(header if header is not None else
                                                   decode_send_header(req.code, req.ext_fields), req.body, born, port,
                                                   peer, req.version))
                at.append(i)
            except Exception as exc:  # noqa: BLE001 - a bad header: answered as the single handler's would be
                answers[i] = exc
        encode = self._success_frame
        for i, outcome in zip(at, self.core.send_run(requests)):
            req = reqs[i]
            if isinstance(outcome, BrokerError):
                answers[i] = self._refusal(req, outcome)
            elif not isinstance(outcome, SendMessageResponse):
                answers[i] = outcome
            elif outcome.code == _SUCCESS and outcome.msg_id is not None and req.serialize_type == _JSON:
                answers[i] = encode(outcome.msg_id, outcome.queue_id, outcome.queue_offset, req.opaque)
            else:
                answers[i] = self._response(req, outcome)
        return answers

    @staticmethod
    def _producer(conn: RemotingConnection) -> tuple[bytes, int, str]:
        """The producer's packed address (kept on the connection), port and "ip:port"."""
        born = conn.attributes.get("born_host")
        if born is None:
            born = conn.attributes["born_host"] = pack_host(conn.remote_ip or "127.0.0.1")
        return born, conn.remote_port, conn.peer

    def _refusal(self, req: RemotingCommand, exc: BrokerError) -> RemotingCommand:
        """A send the core refused: with MSG_REGION and TRACE_ON, as 4.9.8 answers every refusal after the header
        was read (a header it cannot read is answered without them, by the transport)."""
        return RemotingCommand.response_to(req, exc.code, exc.remark, dict(self.response_extra))

    def _response(self, req: RemotingCommand, outcome: SendMessageResponse) -> RemotingCommand:
        ext = {} if outcome.msg_id is None else \
            SendMessageResponseHeader.fast_ext(outcome.msg_id, outcome.queue_id, outcome.queue_offset)
        ext.update(self.response_extra)  # extFields beside the header, as the Java broker adds
        return RemotingCommand.response_to(req, outcome.code, outcome.remark, ext)


def pull_request(fields: tuple[Any, ...], opaque: int) -> RemotingCommand:
    """The PULL_MESSAGE request of a pull the read lane took: its header already read (`RemotingCommand.header`,
    as `FrameDecoder.typed` leaves it), answered by the table's handler as any other request."""
    (group, topic, queue_id, queue_offset, max_nums, sys_flag, commit_offset, suspend_ms, subscription, sub_version,
     expression_type, bname) = fields
    return RemotingCommand(RequestCode.PULL_MESSAGE, "JAVA", CURRENT_VERSION, opaque, 0, None, None, b"", 0,
                           PullMessageRequestHeader(
                               consumer_group=group, topic=topic, queue_id=queue_id, queue_offset=queue_offset,
                               max_msg_nums=max_nums, sys_flag=sys_flag, commit_offset=commit_offset,
                               suspend_timeout_millis=suspend_ms, subscription=subscription, sub_version=sub_version,
                               expression_type=expression_type, bname=bname))


class SendLane:
    """The native read lane of SEND_MESSAGE_V2 (`protocol.dispatch.ReadLane`; see the module's docstring)."""

    code: int = RequestCode.SEND_MESSAGE_V2

    def __init__(self, processor: SendMessageProcessor, broker: BrokerContext) -> None:
        assert native is not None
        self.read = native.read_sends
        self._success_frames = native.success_frames
        self._processor = processor
        self._broker = broker
        self._core = broker.send_core
        self._suffix = broker.send_core.inner.cluster_suffix
        self._segments = SendMessageResponseHeader.success_frame_segments(processor.response_extra)

    def context(self, conn: RemotingConnection) -> tuple[object, ...]:
        born, port, _ = self._processor._producer(conn)
        b = self._broker
        return (b.topic_config_manager.table, self._core.valid_topics, MessageExtBrokerInner, self._suffix,
                b.config.store.max_message_size, born, port)

    def handle(self, taken: list[Any], conn: RemotingConnection) -> None:
        """`taken` is what `read_sends` made of a run of single sends, [messages, their requests' opaques, end],
        of one batch, [its messages, the request's opaque, end, True], or of one pull, [the fields of its header,
        its opaque, end, False]."""
        if len(taken) == 4:
            if taken[3]:
                self._batch(taken[0], taken[1], conn)
            else:
                conn.request_received(pull_request(taken[0], taken[1]))
            return
        msgs: list[MessageExtBrokerInner] = taken[0]
        opaques: list[int] = taken[1]
        result, responses = self._core.put_plain(msgs)
        if responses is None:
            conn.send_frame(self._success_frames(self._segments, self._broker.store.msg_id_host_hex, msgs,
                                                 result.phy_offsets,
                                                 result.queue_offsets, opaques))
            return
        processor = self._processor
        for opaque, outcome in zip(opaques, responses):
            request = RemotingCommand(self.code, opaque=opaque)
            conn.reply(request, processor._response(request, outcome))

    def _batch(self, msgs: list[MessageExtBrokerInner], opaque: int, conn: RemotingConnection) -> None:
        outcome = self._core.put_batch_messages(msgs)
        request = RemotingCommand(RequestCode.SEND_BATCH_MESSAGE, opaque=opaque)
        if outcome.code == _SUCCESS and outcome.msg_id is not None:
            conn.send_frame(self._processor._success_frame(outcome.msg_id, outcome.queue_id, outcome.queue_offset,
                                                           opaque))
        else:
            conn.reply(request, self._processor._response(request, outcome))
