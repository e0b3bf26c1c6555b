"""SYNC_MASTER (brokerRole=SYNC_MASTER): a send is answered once a slave holds it, as 4.9.8's CommitLog.handleHA.

The send handlers of the broker's table are wrapped: a stored message (the answer is SUCCESS) whose producer waits
for the store (its property WAIT is not `false`, the default) is answered when a slave has acknowledged the
commitlog up to the end of the put; after `slaveTimeout` ms the answer is FLUSH_SLAVE_TIMEOUT, and with no slave
connected (or one further behind than haSlaveFallbehindMax) it is SLAVE_NOT_AVAILABLE at once. Both keep the
send's result (msgId, queue, offset): the message is stored on the master, as 4.9.8's sendOK is true for both.
The broker serves sends one request at a time on such a table (no native lane, no runs): the wait is per send.
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.transport import DispatchTable, Handler, RemotingConnection

SEND_CODES = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)
#: the producer does not wait for the store (Message.setWaitStoreMsgOK(false)): answered at once
_NO_WAIT = "WAIT\x01false"


class Replication(Protocol):
    def is_slave_ok(self, master_put_where: int) -> bool: ...

    async def wait_for_slave(self, offset: int, timeout_s: float) -> bool: ...


class PutEnd(Protocol):
    def __call__(self) -> int: ...


def per_request_sends(table: DispatchTable) -> None:
    """Sends one request at a time through their handlers: no native lane, no runs of sends."""
    for code in SEND_CODES:
        table.runs.pop(int(code), None)
    table.typed.clear()
    table.lane = None


def answer_when_replicated(table: DispatchTable, ha: Replication, put_end: PutEnd, timeout_ms: Any) -> None:
    """Wrap the send handlers; `put_end()`: the commitlog's end right after a put; `timeout_ms()`: slaveTimeout."""
    per_request_sends(table)
    table.wrap_handlers(lambda handler: _replicated(handler, ha, put_end, timeout_ms), only=SEND_CODES)


def _waits(request: RemotingCommand) -> bool:
    ext = request.ext_fields or {}
    props = ext.get("i") if request.code == RequestCode.SEND_MESSAGE_V2 else ext.get("properties")  # V2: "i"
    return not props or _NO_WAIT not in props


def _replicated(handler: Handler, ha: Replication, put_end: PutEnd, timeout_ms: Any) -> Handler:
    def handle(request: RemotingCommand, conn: RemotingConnection) -> Any:
        result = handler(request, conn)
        if inspect.isawaitable(result):
            return _after(result, request, ha, put_end, timeout_ms)
        if isinstance(result, RemotingCommand) and result.code == ResponseCode.SUCCESS and _waits(request):
            return _wait(result, ha, put_end(), timeout_ms())
        return result
    handle.__wrapped__ = handler  # type: ignore[attr-defined]  # a function attribute, which mypy does not model
    return handle


async def _after(result: Any, request: RemotingCommand, ha: Replication, put_end: PutEnd,
                 timeout_ms: Any) -> Any:
    answer = await result
    if isinstance(answer, RemotingCommand) and answer.code == ResponseCode.SUCCESS and _waits(request):
        return await _wait(answer, ha, put_end(), timeout_ms())
    return answer


async def _wait(answer: RemotingCommand, ha: Replication, end: int, timeout_ms: int) -> RemotingCommand:
    if not ha.is_slave_ok(end):
        answer.code = ResponseCode.SLAVE_NOT_AVAILABLE
    elif not await ha.wait_for_slave(end, timeout_ms / 1000):
        answer.code = ResponseCode.FLUSH_SLAVE_TIMEOUT
    return answer
