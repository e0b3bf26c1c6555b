"""The send path's request and outcome (broker/core/send_core.py), apart from the path itself so that the modules
building messages from a request (send_inner.py) and the fronts translating it (handlers/send_message.py) name
them without importing the path."""

from __future__ import annotations

import time

import msgspec

from rocketmq_emulator.protocol.codes import CURRENT_VERSION
from rocketmq_emulator.protocol.headers import SendMessageRequestHeader
from rocketmq_emulator.protocol.message import encode_properties, pack_host


class SendMessageRequest(msgspec.Struct, gc=False):  # no reference cycles: untracked, cheaper to make
    """One send request, parsed once, whatever front it came by: the SendMessageRequestHeader, the body (one
    message, or a batch's encoded messages) and who sent it. `msg_check` sets `queue_id` (the queue the message
    goes to and is answered with; a DLQ-bound message's is 0) and `sys_flag` (MULTI_TAGS added per topic)."""

    header: SendMessageRequestHeader
    body: bytes
    born_host: bytes  # the producer's address, packed (4 or 16 bytes)
    born_port: int
    producer: str  # "ip:port", for remarks
    version: int  # the client's protocol version (maxReconsumeTimes is read from 121 on)
    queue_id: int = -1
    sys_flag: int = 0

    @classmethod
    def of(cls, producer_group: str, topic: str, body: bytes, props: dict[str, str], *, queue_id: int = -1,
           sys_flag: int = 0, flag: int = 0, born_ms: int | None = None,
           peer: tuple[str, int] = ("127.0.0.1", 0)) -> SendMessageRequest:
        """A send that does not come as a remoting frame (the gRPC endpoint, the dashboard): the same request."""
        header = SendMessageRequestHeader(
            producer_group=producer_group, topic=topic, queue_id=queue_id, sys_flag=sys_flag, flag=flag,
            born_timestamp=time.time_ns() // 1_000_000 if born_ms is None else born_ms,
            properties=encode_properties(props), reconsume_times=0)
        return cls(header, body, pack_host(peer[0]), peer[1], f"{peer[0]}:{peer[1]}", CURRENT_VERSION)


class SendMessageResponse(msgspec.Struct, gc=False):
    """The outcome of one SendMessageRequest (the SendMessageResponseHeader and the response code and remark):
    `msg_id` is None unless the code is one answered with the message's id, queue and offset."""

    code: int
    remark: str | None = None
    msg_id: str | None = None
    queue_id: int = 0
    queue_offset: int = 0
