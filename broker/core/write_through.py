"""`--offset-durability write-through` (README "Offset durability"): no request that writes a consumer offset is
answered before that write is in the durable tier (`config/consumerOffset.db`, `offset_journal.py`).

Rather than each handler knowing which of its paths write offsets (a commit, a reset by time or offset, the
broker's pending reset, a broadcasting group's reset, a group deleted with removeOffset, a topic deleted, and
whatever comes next), every handler of the broker's dispatch table is wrapped: when the handler moved the
offset manager's sequence number (every write takes the next one), its answer waits for the journal
transaction holding that write, which ends the event-loop iteration. Handlers that wrote nothing answer as
before. A failed journal write is answered SYSTEM_ERROR; the offsets stay in memory and reach
`consumerOffset.json` at the next flush.

PULL_MESSAGE is left out: its piggybacked commit offset is journaled the same way, but the client never sees
it answered, and a pull must not wait for a disk write. Writes the broker makes on its own (a broadcasting
group's periodic minimum) are answered to nobody.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Awaitable, Iterable

from rocketmq_emulator.protocol import RemotingCommand, ResponseCode
from rocketmq_emulator.protocol.transport import DispatchTable, Handler, RemotingConnection

from ..state.consumer_offset import ConsumerOffsetManager


def answer_when_durable(table: DispatchTable, offsets: ConsumerOffsetManager, *, skip: Iterable[int] = ()) -> None:
    """Wrap every handler of `table` but those of `skip`, those of request families loaded later included (run
    handlers are left alone: sends write no offsets)."""
    table.wrap_handlers(lambda handler: _durable(handler, offsets), skip=skip)


def not_durable(request: RemotingCommand, exc: BaseException) -> RemotingCommand:
    return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR,
                                       f"the consumer offset could not be made durable: {exc}")


def _durable(handler: Handler, offsets: ConsumerOffsetManager) -> Handler:
    def handle(request: RemotingCommand, conn: RemotingConnection) -> Any:
        seq = offsets.seq
        try:
            result = handler(request, conn)
        except Exception as exc:  # noqa: BLE001 - answered as the handler's failure, once what it wrote is durable
            if offsets.seq == seq or offsets.writer is None:
                raise
            return _reply_when_durable(offsets, request, conn, exc)
        if result.__class__ is RemotingCommand:  # the common case first (an ABC check costs a commit 0.3 µs)
            if offsets.seq == seq or offsets.writer is None:
                return result
            return _reply_when_durable(offsets, request, conn, result)
        if result is not None and inspect.isawaitable(result):
            return _awaited(result, offsets, seq, request)
        return result
    handle.__wrapped__ = handler  # type: ignore[attr-defined]  # a function attribute, which mypy does not model
    return handle


def _reply_when_durable(offsets: ConsumerOffsetManager, request: RemotingCommand, conn: RemotingConnection,
                        outcome: RemotingCommand | BaseException) -> None:
    """Answer once the journal holds everything written so far, from a callback (no task, no future of our own:
    this is the path of every commit); None tells the transport the answer comes later."""
    assert offsets.writer is not None

    def flushed(fut: asyncio.Future[None]) -> None:
        exc = fut.exception()
        if exc is not None:
            conn.reply(request, not_durable(request, exc))
        elif isinstance(outcome, BaseException):
            conn.reply(request, conn.error_response(request, outcome))
        else:
            conn.reply(request, outcome)
    offsets.writer.flushed().add_done_callback(flushed)


async def _awaited(result: Awaitable[RemotingCommand | None], offsets: ConsumerOffsetManager, seq: int,
                   request: RemotingCommand) -> RemotingCommand | None:
    """An asynchronous handler: awaited, then the same rule (a write made by anyone meanwhile is waited for too,
    which costs at most one loop iteration)."""
    try:
        response = await result
    except Exception:  # noqa: BLE001
        if offsets.seq != seq and offsets.writer is not None:
            await _settled(offsets.writer.flushed())
        raise
    if offsets.seq == seq or offsets.writer is None or response is None:
        return response
    try:
        await asyncio.shield(offsets.writer.flushed())
    except Exception as exc:  # noqa: BLE001
        return not_durable(request, exc)
    return response


async def _settled(fut: asyncio.Future[None]) -> None:
    try:
        await asyncio.shield(fut)
    except Exception:  # noqa: BLE001 - the handler's own failure is the answer
        pass
