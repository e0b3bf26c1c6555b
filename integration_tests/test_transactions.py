"""Transactional messages through the emulator: the project's TransactionProducer and the official Java 4.9.8
TransactionMQProducer; commit, rollback, check-backs, a producer that restarted, the check limit, a broker
restart and a kill -9 in the middle of transactions."""

from __future__ import annotations

import asyncio
import random
import re
import subprocess
import sys
import time

import pytest

from rocketmq_emulator.client import (FIRST_OFFSET, LocalTransactionState, Message, PushConsumer,
                                      TransactionProducer)
from rocketmq_emulator.protocol.topics import TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC
from rocketmq_emulator.testing.emulator_process import launch_emulator
from rocketmq_emulator.testing.emulator_thread import EmulatorThread

TOPIC = "Orders"
COMMIT, ROLLBACK, UNKNOW = (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE,
                            LocalTransactionState.UNKNOW)
FAST = {"transactionCheckInterval": 300, "transactionTimeOut": 600}  # check-backs within about a second


def by_parity(msg) -> LocalTransactionState:
    """A check-back answer that any process can give: even "tx-<i>" committed, odd rolled back."""
    return COMMIT if int(msg.text.rsplit("-", 1)[1]) % 2 == 0 else ROLLBACK


async def consumed(ns: str, group: str, expected: int, *, settle: float = 1.5, limit: float = 20
                   ) -> list[tuple[str, str]]:
    """(body, msg_id) of every message of TOPIC a new group reads, waiting for `expected` then `settle` more."""
    got: list[tuple[str, str]] = []
    consumer = PushConsumer(group, namesrv=ns, consume_from=FIRST_OFFSET)
    consumer.subscribe(TOPIC, "*")
    consumer.on_message(lambda m: got.append((m.text, m.msg_id)))
    async with consumer:
        deadline = time.monotonic() + limit
        while len(got) < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(settle)
    return sorted(got)


@pytest.fixture
def emu(tmp_path):
    e = EmulatorThread(tmp_path / "store", topics=[(TOPIC, 4)], **FAST).start()
    yield e
    e.close()


def test_commit_rollback_and_check_backs_with_the_project_client(emu):
    async def main():
        decided = {}
        async with TransactionProducer("tx-orders", namesrv=emu.namesrv_addr,
                                       check_local_transaction=lambda m: decided.get(m.text, UNKNOW)) as producer:
            results = {}
            for body, state in [("tx-0", COMMIT), ("tx-1", ROLLBACK), ("tx-2", UNKNOW), ("tx-3", None),
                                ("tx-4", "raise")]:
                def local(msg, arg):
                    if arg == "raise":
                        raise RuntimeError("the local transaction failed")
                    return arg
                results[body] = await producer.send_message_in_transaction(Message(TOPIC, body), local, arg=state)
            # committed at once; the undecided three wait for the check-back, which decides them now
            first = await consumed(emu.namesrv_addr, "g-first", 1, settle=0.2)
            decided.update({"tx-2": COMMIT, "tx-3": ROLLBACK, "tx-4": COMMIT})
            later = await consumed(emu.namesrv_addr, "g-later", 3)
        return results, first, later
    results, first, later = asyncio.run(main())
    assert [r.local_transaction_state for r in results.values()] == [COMMIT, ROLLBACK, UNKNOW, UNKNOW, UNKNOW]
    assert first == [("tx-0", results["tx-0"].msg_id)]  # consumable at once, with the send result's msg id
    assert later == sorted([("tx-0", results["tx-0"].msg_id), ("tx-2", results["tx-2"].msg_id),
                            ("tx-4", results["tx-4"].msg_id)])


_RAISING_LOCAL_TRANSACTION = """
import asyncio, sys
from rocketmq_emulator.client import Message, TransactionProducer

def local(msg, arg):
    raise RuntimeError("the order table is locked")

async def main():
    async with TransactionProducer("tx-raise", namesrv=sys.argv[1]) as producer:
        result = await producer.send_message_in_transaction(Message("Orders", "tx-r"), local)
    print(result.local_transaction_state.name, repr(result.local_transaction_error))

asyncio.run(main())
"""


def test_a_raising_local_transaction_is_seen_without_logging_set_up(emu):
    """A program that set up no logging (the client's logger has only a NullHandler) still sees on stderr that its
    local transaction raised, with the traceback, and the result carries the exception next to UNKNOW."""
    proc = subprocess.run([sys.executable, "-c", _RAISING_LOCAL_TRANSACTION, emu.namesrv_addr],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "UNKNOW RuntimeError('the order table is locked')\n"
    assert "tx-raise: the local transaction of message " in proc.stderr, proc.stderr
    assert "raised RuntimeError('the order table is locked'): state UNKNOW, left to the broker's check-back" \
        in proc.stderr
    assert "Traceback (most recent call last)" in proc.stderr
    assert "in local\nRuntimeError: the order table is locked\n" in proc.stderr, proc.stderr


def test_a_check_back_reaches_a_producer_that_restarted(emu):
    async def main():
        async with TransactionProducer("tx-restart", namesrv=emu.namesrv_addr) as first:
            for i in range(4):
                await first.send_message_in_transaction(Message(TOPIC, f"tx-{i}"), lambda m, a: UNKNOW)
        # the first producer is gone with every transaction undecided; a new one of the group answers
        async with TransactionProducer("tx-restart", namesrv=emu.namesrv_addr, instance_name="second",
                                       check_local_transaction=by_parity):
            return await consumed(emu.namesrv_addr, "g", 2)
    assert [body for body, _ in asyncio.run(main())] == ["tx-0", "tx-2"]


def test_a_half_message_checked_too_often_is_discarded(tmp_path):
    emu = EmulatorThread(tmp_path / "store", topics=[(TOPIC, 4)], transactionCheckMax=3, **FAST).start()
    try:
        async def main():
            async with TransactionProducer("tx-limit", namesrv=emu.namesrv_addr) as producer:  # always UNKNOW
                await producer.send_message_in_transaction(Message(TOPIC, "tx-0"), lambda m, a: UNKNOW)
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    if emu.call(lambda: emu.broker.store.get_max_offset_in_queue(TRANS_CHECK_MAX_TIME_TOPIC, 0)):
                        break
                    await asyncio.sleep(0.1)
            return await consumed(emu.namesrv_addr, "g", 0, settle=1.0)
        assert asyncio.run(main()) == []
        assert emu.call(lambda: emu.broker.store.get_max_offset_in_queue(TRANS_CHECK_MAX_TIME_TOPIC, 0)) == 1
        # the original and one copy per check (3): the check stops there
        assert emu.call(lambda: emu.broker.store.get_max_offset_in_queue(TRANS_HALF_TOPIC, 0)) == 4
    finally:
        emu.close()


def test_undecided_transactions_survive_a_broker_restart(emu):
    async def main():
        async with TransactionProducer("tx-survive", namesrv=emu.namesrv_addr) as producer:
            for i in range(4):
                await producer.send_message_in_transaction(Message(TOPIC, f"tx-{i}"), lambda m, a: UNKNOW)
        emu.restart()
        async with TransactionProducer("tx-survive", namesrv=emu.namesrv_addr, check_local_transaction=by_parity):
            return await consumed(emu.namesrv_addr, "g", 2)
    assert [body for body, _ in asyncio.run(main())] == ["tx-0", "tx-2"]


def test_kill_9_in_the_middle_of_transactions_loses_no_decided_transaction(tmp_path):
    """A producer runs transactions (even bodies commit, odd roll back; the check-back answers the same) while
    the broker is killed with SIGKILL and started again. Every transaction whose half message was acknowledged is
    consumed once decided commit, and no rolled-back one ever is."""
    broker = launch_emulator(tmp_path, "--transaction-check-interval", "300", "--transaction-timeout", "600",
                             "--topic", f"{TOPIC}:4")
    acked: list[str] = []

    async def main():
        async with TransactionProducer("tx-crash", namesrv=broker.namesrv_addr, check_local_transaction=by_parity,
                                       send_timeout=2.0) as producer:
            async def run(first: int, count: int) -> None:
                for i in range(first, first + count):
                    body = f"tx-{i}"
                    try:
                        await producer.send_message_in_transaction(Message(TOPIC, body),
                                                                   lambda m, a: by_parity(_Text(m)))
                        acked.append(body)
                    except Exception:  # noqa: BLE001 - refused or cut by the kill: not acknowledged
                        pass
            sender = asyncio.create_task(run(0, 30))
            await asyncio.sleep(random.uniform(0.2, 0.6))
            await asyncio.to_thread(broker.kill)
            await sender
            await asyncio.to_thread(broker.start)
            await run(100, 10)  # and after the restart
            committed = [b for b in acked if int(b.rsplit("-", 1)[1]) % 2 == 0]
            return committed, await consumed(broker.namesrv_addr, "g-after", len(committed), settle=2.0, limit=30)
    try:
        committed, got = asyncio.run(main())
    finally:
        broker.stop()
    bodies = [body for body, _ in got]
    assert sorted(set(bodies)) == sorted(committed), (acked, bodies)
    assert not [b for b in bodies if int(b.rsplit("-", 1)[1]) % 2], "a rolled-back transaction was delivered"
    assert len(bodies) == len(set(bodies)), "a committed transaction was delivered twice"


class _Text:
    """A sent Message seen as by_parity sees a received one."""

    def __init__(self, msg: Message) -> None:
        self.text = msg.body.decode()


# -- the official Java client ------------------------------------------------------------------------------
def java_sent(handle) -> dict[str, dict]:
    return {e["body"]: e for e in handle.of("sent")}


def test_java_commit_and_rollback(emu, java_clients, tmp_path):
    handle = java_clients.run("TxProduce", emu.namesrv_addr, TOPIC, "PID_tx_java", 6, "alternate", "unknown",
                              timeout=60, home=tmp_path / "p")
    sent = java_sent(handle)
    assert [e["localState"] for e in sent.values()] == ["COMMIT_MESSAGE", "ROLLBACK_MESSAGE"] * 3, handle.describe()
    got = asyncio.run(consumed(emu.namesrv_addr, "g", 3))
    assert got == sorted((b, sent[b]["msgId"]) for b in ("tx-0", "tx-2", "tx-4"))


def test_java_check_backs_commit_and_roll_back(emu, java_clients, tmp_path):
    handle = java_clients.start("TxProduce", emu.namesrv_addr, TOPIC, "PID_tx_check", 4, "unknown", "alternate", 20,
                                timeout=60, home=tmp_path / "p")
    try:
        got = asyncio.run(consumed(emu.namesrv_addr, "g", 2))
        checked = handle.of("checked")
    finally:
        handle.kill()
    sent = java_sent(handle)
    assert got == sorted((b, sent[b]["msgId"]) for b in ("tx-0", "tx-2"))
    assert {e["body"] for e in checked} >= {"tx-0", "tx-1", "tx-2", "tx-3"}
    assert {e["topic"] for e in checked} == {TOPIC}  # the check-back carries the real topic


def test_java_check_back_to_a_producer_that_restarted(emu, java_clients, tmp_path):
    first = java_clients.run("TxProduce", emu.namesrv_addr, TOPIC, "PID_tx_restart", 4, "unknown", "unknown",
                             timeout=60, home=tmp_path / "p1")
    assert len(first.of("sent")) == 4, first.describe()
    second = java_clients.start("TxProduce", emu.namesrv_addr, TOPIC, "PID_tx_restart", 0, "unknown", "alternate",
                                20, timeout=60, home=tmp_path / "p2")
    try:
        got = asyncio.run(consumed(emu.namesrv_addr, "g", 2))
    finally:
        second.kill()
    sent = java_sent(first)
    assert got == sorted((b, sent[b]["msgId"]) for b in ("tx-0", "tx-2"))
    assert {e["body"] for e in second.of("checked")} >= {"tx-0", "tx-1", "tx-2", "tx-3"}


def test_mqadmin_finds_a_committed_transactional_message(emu, java_clients, tmp_path):
    """queryMsgByUniqueKey with the producer's msgId finds the committed message in its real topic (the half
    message is in RMQ_SYS_TRANS_HALF_TOPIC); queryMsgById with the committed message's own offsetMsgId (what a
    consumer sees) shows it, without the half message's transaction properties."""
    handle = java_clients.run("TxProduce", emu.namesrv_addr, TOPIC, "PID_tx_admin", 1, "commit", "unknown",
                              timeout=60, home=tmp_path / "p")
    sent = java_sent(handle)["tx-0"]

    async def offset_msg_id() -> str:
        got: list[str] = []
        consumer = PushConsumer("g", namesrv=emu.namesrv_addr, consume_from=FIRST_OFFSET)
        consumer.subscribe(TOPIC, "*")
        consumer.on_message(lambda m: got.append(m.offset_msg_id))
        async with consumer:
            while not got:
                await asyncio.sleep(0.05)
        return got[0]
    committed_id = asyncio.run(asyncio.wait_for(offset_msg_id(), 20))
    by_key, by_id = java_clients.mqadmin_batch([
        ["queryMsgByUniqueKey", "-n", emu.namesrv_addr, "-i", sent["msgId"], "-t", TOPIC],
        ["queryMsgById", "-n", emu.namesrv_addr, "-i", committed_id]])
    for out in (by_key, by_id):
        assert out is not None and re.search(rf"Topic:\s+{TOPIC}\b", out), out
        assert re.search(r"Keys:\s+\[key-0\]", out) and re.search(r"System Flag:\s+8\b", out), out  # COMMIT
        # the committed message keeps its half's properties, as 4.9.8 stores it (parity corpus)
        assert re.search(r"REAL_TOPIC=" + TOPIC, out) and "TRAN_MSG=true" in out, out
