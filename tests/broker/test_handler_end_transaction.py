"""END_TRANSACTION (broker/handlers/end_transaction.py, broker/core/transaction.py) without sockets: a half message is
stored out of consumers' sight, a decision that names it exactly commits or rolls it back, and one that does not
gets upstream's remark."""

from __future__ import annotations

import asyncio

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.headers import EndTransactionRequestHeader, QueueRequestHeader
from rocketmq_emulator.protocol.message import decode_message_id, decode_messages
from rocketmq_emulator.protocol.topics import TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC

R = ResponseCode
COMMIT, ROLLBACK = 8, 12


async def half(broker, body=b"order"):
    r = await broker.send("Orders", body, tags="A", properties={"TRAN_MSG": "true", "PGROUP": "PG"})
    assert r.code == R.SUCCESS
    return r, decode_message_id(r.ext("msgId"))[2], int(r.ext("queueOffset"))


async def max_offset(broker, topic, queue_id=0) -> int:
    r = await broker.ask(RequestCode.GET_MAX_OFFSET, QueueRequestHeader(topic=topic, queue_id=queue_id))
    return int(r.ext("offset"))


def end(offset, queue_offset, state, group="PG"):
    return EndTransactionRequestHeader(producer_group=group, tran_state_table_offset=queue_offset,
                                       commit_log_offset=offset, commit_or_rollback=state, msg_id="m")


async def test_a_half_message_is_out_of_sight_until_committed(harness):
    _, offset, queue_offset = await half(harness)
    assert await max_offset(harness, "Orders") == 0
    assert await max_offset(harness, TRANS_HALF_TOPIC) == 1
    r = await harness.ask(RequestCode.END_TRANSACTION, end(offset, queue_offset, COMMIT))
    assert r.code == R.SUCCESS
    assert await max_offset(harness, "Orders") == 1 and await max_offset(harness, TRANS_OP_HALF_TOPIC) == 1
    [msg] = decode_messages((await harness.pull("g", "Orders", 0, 0)).body)
    assert msg.body == b"order" and msg.sys_flag & 0xC == COMMIT and msg.prepared_transaction_offset == offset
    # the half's properties are kept, as 4.9.8 stores a committed message (parity corpus txn_commit_rollback_check)
    assert (msg.properties["REAL_TOPIC"], msg.properties["TRAN_MSG"]) == ("Orders", "true")


async def test_rollback_stores_only_the_op_record(harness):
    _, offset, queue_offset = await half(harness)
    r = await harness.ask(RequestCode.END_TRANSACTION, end(offset, queue_offset, ROLLBACK))
    assert r.code == R.SUCCESS
    assert await max_offset(harness, "Orders") == 0 and await max_offset(harness, TRANS_OP_HALF_TOPIC) == 1


async def test_a_decision_that_does_not_name_the_half_message_exactly_is_refused(harness):
    _, offset, queue_offset = await half(harness)
    cases = [(end(offset, queue_offset, COMMIT, group="other"), "The producer group wrong"),
             (end(offset, queue_offset + 5, COMMIT), "The transaction state table offset wrong"),
             (end(offset + 10_000, queue_offset, COMMIT), "Find prepared transaction message failed")]
    for header, remark in cases:
        r = await harness.ask(RequestCode.END_TRANSACTION, header)
        assert (r.code, r.remark) == (R.SYSTEM_ERROR, remark)
    assert await max_offset(harness, "Orders") == 0


async def test_an_unknown_state_is_not_answered_and_changes_nothing(harness):
    _, offset, queue_offset = await half(harness)
    reply = harness.connect("p2").submit(RemotingCommand.request(RequestCode.END_TRANSACTION,
                                                                 end(offset, queue_offset, 0).to_ext()))
    await asyncio.sleep(0.05)
    assert not reply.done()  # UNKNOW: nothing to answer (the check-back decides later)
    assert await max_offset(harness, "Orders") == 0 and await max_offset(harness, TRANS_OP_HALF_TOPIC) == 0
