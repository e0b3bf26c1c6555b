"""The gRPC endpoint's calls in the wire trace (`serve --trace`, docs/user/running.md "Wire trace"), in the
remoting records' shape so that one renderer, one set of filters and `rocketmq-emulator trace` serve both:

    12:00:01.234 [grpc] 127.0.0.1:50412 client-1 PYTHON/5.0.1 <- SendMessage(310) opaque=7 flag=0 {rpc=SendMessage, topic=T, messages=1}
    12:00:01.236 [grpc] 127.0.0.1:50412 client-1 PYTHON/5.0.1 -> answer to SendMessage: OK(20000) opaque=7 flag=1 {rpc=SendMessage, status=OK}

Each call gets an opaque of its own; its code is the remoting request it stands for (SendMessage is
SEND_MESSAGE_V2, ReceiveMessage POP_MESSAGE, ...; 0 for a call with none), so `--trace-codes SEND_MESSAGE_V2`
traces the 5.x sends too; the header is the request's fields, flattened (a resource by its name, a list by its
length), with `topic` and `group` where the request names them (for `--trace-topic` / `--trace-group`). An answer
is the status (code and name; its message as the remark); a ReceiveMessage stream is one answer with the number of
messages; each Telemetry command is a one-way request in its direction.
"""

from __future__ import annotations

import itertools
from typing import Any, AsyncIterator, Callable

from google.protobuf.json_format import MessageToDict

from rocketmq_emulator.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.protocol.command import ONEWAY_FLAG, RESPONSE_FLAG
from rocketmq_emulator.protocol.grpc_v2 import v2
from rocketmq_emulator.protocol.trace import GRPC_PORT

from .clients import peer_address

#: the remoting request each call stands for
EQUIVALENT: dict[str, int] = {
    "QueryRoute": RequestCode.GET_ROUTEINFO_BY_TOPIC, "Heartbeat": RequestCode.HEART_BEAT,
    "SendMessage": RequestCode.SEND_MESSAGE_V2, "ReceiveMessage": RequestCode.POP_MESSAGE,
    "AckMessage": RequestCode.ACK_MESSAGE, "ChangeInvisibleDuration": RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
    "ForwardMessageToDeadLetterQueue": RequestCode.CONSUMER_SEND_MSG_BACK, "PullMessage": RequestCode.PULL_MESSAGE,
    "UpdateOffset": RequestCode.UPDATE_CONSUMER_OFFSET, "GetOffset": RequestCode.QUERY_CONSUMER_OFFSET,
    "QueryOffset": RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, "EndTransaction": RequestCode.END_TRANSACTION,
    "NotifyClientTermination": RequestCode.UNREGISTER_CLIENT,
    "QueryAssignment": RequestCode.GET_CONSUMER_LIST_BY_GROUP,
}
_ids = itertools.count(1)
#: a status code's name (v2.Code: name -> number)
_CODE_NAMES = {number: name for name, number in vars(v2.Code).items()}


class _Call:
    """What the tracer reads of a connection, for one call: its port name, peer and per-call state."""

    __slots__ = ("name", "peer", "attributes")

    def __init__(self, context: Any) -> None:
        md = dict(context.invocation_metadata() or ())
        self.name = GRPC_PORT
        self.peer = peer_address(context)
        self.attributes: dict[str, Any] = {"client_id": md.get("x-mq-client-id"),
                                           "language": md.get("x-mq-language"),
                                           "version": md.get("x-mq-client-version")}


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("name", value)) if set(value) <= {"name", "resourceNamespace"} else str(value)
    if isinstance(value, list):
        return str(len(value))
    return str(value)


def request_fields(rpc: str, message: Any) -> dict[str, str]:
    """The trace header of a request: its fields flattened, `topic` and `group` where it names them."""
    data = MessageToDict(message)
    out = {"rpc": rpc}
    for key, value in data.items():
        if key == "messages":
            out["messages"] = str(len(value))
            topics = {m.get("topic", {}).get("name") for m in value}
            if len(topics) == 1:
                out["topic"] = str(topics.pop())
        elif key == "messageQueue" and isinstance(value, dict):
            out["topic"] = value.get("topic", {}).get("name", "")
            out["queueId"] = str(value.get("id", 0))
        elif key == "entries":
            out["entries"] = str(len(value))
        elif key == "endpoints":
            continue
        else:
            out[key] = _flat(value)
    return out


class GrpcTrace:
    """Wraps the endpoint's methods so that each call feeds `tracer` (broker/trace.py's Tracer)."""

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer

    def _request(self, call: _Call, rpc: str, message: Any, opaque: int, *, direction: str = "in",
                 oneway: bool = False) -> None:
        try:
            ext = request_fields(rpc, message)
        except Exception:  # noqa: BLE001 - the trace never fails a call
            ext = {"rpc": rpc}
        cmd = RemotingCommand(EQUIVALENT.get(rpc, 0), "OTHER", 0, opaque, ONEWAY_FLAG if oneway else 0, None, ext)
        self.tracer.inbound(call, cmd) if direction == "in" else self.tracer.outbound(call, cmd)

    def _answer(self, call: _Call, rpc: str, code: int, name: str, message: str, opaque: int,
                extra: dict[str, str] | None = None) -> None:
        cmd = RemotingCommand(code, "JAVA", 0, opaque, RESPONSE_FLAG, message or None,
                              {"rpc": rpc, "status": name, **(extra or {})})
        self.tracer.outbound(call, cmd)

    def wrap(self, rpc: str, fn: Callable[..., Any], client_streaming: bool, server_streaming: bool
             ) -> Callable[..., Any]:
        if client_streaming:  # Telemetry: each command, both ways
            async def streaming(request_iterator: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
                call = _Call(context)

                async def inbound() -> AsyncIterator[Any]:
                    async for command in request_iterator:
                        self._request(call, rpc, command, next(_ids), oneway=True)
                        yield command
                async for item in fn(inbound(), context):
                    self._request(call, rpc, item, next(_ids), direction="out", oneway=True)
                    yield item
            return streaming
        if server_streaming:  # ReceiveMessage: one answer, with the count of messages
            async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
                call, opaque = _Call(context), next(_ids)
                self._request(call, rpc, request, opaque)
                code, name, text, messages = 0, "", "", 0
                async for item in fn(request, context):
                    if item.HasField("status"):
                        code, name, text = _status(item.status)
                    elif item.HasField("message"):
                        messages += 1
                    yield item
                self._answer(call, rpc, code, name, text, opaque, {"messages": str(messages)})
            return stream

        async def unary(request: Any, context: Any) -> Any:
            call, opaque = _Call(context), next(_ids)
            self._request(call, rpc, request, opaque)
            answer = await fn(request, context)
            if answer is not None and answer.HasField("status"):
                self._answer(call, rpc, *_status(answer.status), opaque)
            return answer
        return unary


def _status(s: Any) -> tuple[int, str, str]:
    return int(s.code), _CODE_NAMES.get(s.code, str(s.code)), s.message
