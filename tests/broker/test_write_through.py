"""broker/core/write_through.py: with write-through, a handler that wrote an offset is answered once the journal holds
the write; one that wrote none is answered at once; a failed journal write is a SYSTEM_ERROR answer."""

from __future__ import annotations

import asyncio

from rocketmq_emulator.broker.state.consumer_offset import ConsumerOffsetManager
from rocketmq_emulator.broker.core.write_through import answer_when_durable
from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection


def _table(offsets: ConsumerOffsetManager) -> DispatchTable:
    table = DispatchTable("test")

    def reset(req, conn):  # type: ignore[no-untyped-def]
        offsets.assign_reset(group="g", topic="T", queue_id=0, offset=3)
        return RemotingCommand.response_to(req)

    def refused_after_a_write(req, conn):  # type: ignore[no-untyped-def]
        offsets.remove_group("g")
        raise BrokerError(ResponseCode.SYSTEM_ERROR, "refused")

    async def clone(req, conn):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0)
        offsets.commit_offset("test", "g2", "T", 1, 7)
        return RemotingCommand.response_to(req)

    table.register(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset)
    table.register(RequestCode.CLONE_GROUP_OFFSET, clone)
    table.register(RequestCode.DELETE_SUBSCRIPTIONGROUP, refused_after_a_write)
    table.register(RequestCode.GET_MAX_OFFSET, lambda req, conn: RemotingCommand.response_to(req))
    table.register(RequestCode.PULL_MESSAGE, reset)
    answer_when_durable(table, offsets, skip=(RequestCode.PULL_MESSAGE,))
    return table


def _journaled(offsets: ConsumerOffsetManager) -> list[tuple[str, int, int | None, int]]:
    assert offsets.journal is not None
    return sorted(offsets.journal.read_all())


class Conn(RemotingConnection):
    """A connection that keeps what it is told to send."""

    def __init__(self) -> None:
        super().__init__(None, name="test")
        self.replies: list[RemotingCommand] = []

    def reply(self, request: RemotingCommand, response: RemotingCommand) -> None:
        self.replies.append(response)


def _call(table: DispatchTable, code: int, conn: Conn):  # type: ignore[no-untyped-def]
    return table.get(code)(RemotingCommand.request(code), conn)  # type: ignore[misc]


async def _next_iteration() -> None:
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def test_an_offset_write_is_answered_once_journaled(tmp_path):
    offsets = ConsumerOffsetManager(tmp_path)
    offsets.load()
    table, conn = _table(offsets), Conn()
    assert _call(table, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, conn) is None  # answered later
    assert conn.replies == [] and _journaled(offsets) == []
    await _next_iteration()
    assert [r.code for r in conn.replies] == [ResponseCode.SUCCESS] and _journaled(offsets) == [("T@g", 0, 3, 1)]
    # nothing written: answered at once; PULL_MESSAGE (its commit is never answered) is not wrapped
    assert _call(table, RequestCode.GET_MAX_OFFSET, conn).__class__ is RemotingCommand
    assert _call(table, RequestCode.PULL_MESSAGE, conn).__class__ is RemotingCommand
    # a handler that wrote, then failed: its failure is answered once the write is durable
    conn.replies.clear()
    assert _call(table, RequestCode.DELETE_SUBSCRIPTIONGROUP, conn) is None
    await _next_iteration()
    assert [(r.code, r.remark) for r in conn.replies] == [(ResponseCode.SYSTEM_ERROR, "refused")]
    assert _journaled(offsets) == [("T@g", 0, None, 3)]
    # an asynchronous handler that wrote: its answer waits for the journal too
    response = await _call(table, RequestCode.CLONE_GROUP_OFFSET, conn)
    assert response.code == ResponseCode.SUCCESS and ("T@g2", 1, 7, 4) in _journaled(offsets)
    await offsets.stop()


async def test_a_failed_journal_write_is_a_system_error_answer(tmp_path):
    offsets = ConsumerOffsetManager(tmp_path)
    offsets.load()
    table, conn = _table(offsets), Conn()

    def disk_full(batch):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")
    offsets.journal.write = disk_full  # type: ignore[union-attr,method-assign]
    _call(table, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, conn)
    await _next_iteration()
    [response] = conn.replies
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "the consumer offset could not be made durable" in response.remark and "No space left" in response.remark
    assert offsets.query_offset("g", "T", 0) == 3  # kept in memory, for consumerOffset.json
    offsets.close()
