"""Offset writes other than commits follow the offset durability mode (README "Offset durability"): a reset
(by offset, by time, of one queue, of a broadcasting group) and a group deletion with removeOffset, sent over
the wire to a broker in its own process, which is killed (SIGKILL) the moment each answer arrives, then
restarted on the same store.

Each request goes over a blocking socket, so the kill follows the answer's last byte by microseconds.

Then resets of a group the broker does not know (a typo) with this project's CLI and the official mqadmin."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from dataclasses import dataclass

import pytest

from rocketmq_emulator.client import Admin, Producer
from rocketmq_emulator.testing.emulator_process import launch_emulator
from rocketmq_emulator.protocol import FrameDecoder, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import ConsumerOffsetSerializeWrapper
from rocketmq_emulator.protocol.frame import encode_command_bytes
from rocketmq_emulator.protocol.headers import (DeleteSubscriptionGroupRequestHeader, ResetOffsetRequestHeader,
                                                UpdateConsumerOffsetRequestHeader)
from rocketmq_emulator.testing.command_line import COMMAND

TOPIC = "ResetCrash"
GROUP = "reset_crash"
QUEUES = 4
PER_QUEUE = 10  # messages per queue: offsets 0..10 are legal reset targets
BROADCAST_GROUP = "reset_crash_bc"  # known as broadcasting by its offsets under `topic@group@broadcast` (5.x's key)


class Wire:
    """One blocking connection to the broker."""

    def __init__(self, addr: str) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.decoder = FrameDecoder()

    def call(self, code: int, header, body: bytes = b"") -> RemotingCommand:  # type: ignore[no-untyped-def]
        request = RemotingCommand.request(code, header.to_ext() if header is not None else {}, body)
        self.sock.sendall(encode_command_bytes(request))
        while True:
            for cmd in self.decoder:
                if cmd.is_response and cmd.opaque == request.opaque:
                    return cmd
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the broker closed the connection")
            self.decoder.feed(data)

    def close(self) -> None:
        self.sock.close()


@dataclass
class Step:
    """What one run sends, and the offsets `key` must hold afterwards (None: no entry)."""
    name: str
    code: int
    header: object
    expected: dict[int, int] | None
    committer: str = GROUP  # the group whose commits make `key`
    key: str = f"{TOPIC}@{GROUP}"


def _step(run: int, before: dict[int, int]) -> Step:
    kind = run % 5
    if kind == 0:  # every queue to an explicit offset
        target = 1 + run % 7
        return Step("resetOffset", RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetRequestHeader(
            topic=TOPIC, group=GROUP, timestamp=-1, is_force=True, offset=target), {q: target for q in before})
    if kind == 1:  # by time: 0 is before the first message
        return Step("resetOffsetByTime", RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetRequestHeader(
            topic=TOPIC, group=GROUP, timestamp=0, is_force=True), {q: 0 for q in before})
    if kind == 2:  # one queue
        return Step("resetOffset -q 2", RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetRequestHeader(
            topic=TOPIC, group=GROUP, timestamp=-1, is_force=True, queue_id=2, offset=3), {**before, 2: 3})
    if kind == 3:  # a broadcasting group: the broker's own offsets of it move
        return Step("resetOffset (broadcasting)", RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetRequestHeader(
            topic=TOPIC, group=BROADCAST_GROUP, timestamp=-1, is_force=True, offset=2), {q: 2 for q in before},
            committer=f"{BROADCAST_GROUP}@broadcast", key=f"{TOPIC}@{BROADCAST_GROUP}@broadcast")
    return Step("deleteSubGroup -r", RequestCode.DELETE_SUBSCRIPTIONGROUP,
                DeleteSubscriptionGroupRequestHeader(group_name=GROUP, remove_offset=True), None)


def _stored(addr: str, key: str) -> dict[int, int] | None:
    wire = Wire(addr)
    try:
        answer = wire.call(RequestCode.GET_ALL_CONSUMER_OFFSET, None)
    finally:
        wire.close()
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    table = ConsumerOffsetSerializeWrapper.decode(answer.body).offset_table
    return dict(table[key]) if key in table else None


def _commit(addr: str, group: str, offsets: dict[int, int]) -> None:
    """Acknowledged commits (write-through: durable when answered) to start each run from."""
    wire = Wire(addr)
    try:
        for q, offset in offsets.items():
            answer = wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, UpdateConsumerOffsetRequestHeader(
                consumer_group=group, topic=TOPIC, queue_id=q, commit_offset=offset))
            assert answer.code == ResponseCode.SUCCESS, answer.remark
    finally:
        wire.close()


def _launch(tmp_path, mode: str):  # type: ignore[no-untyped-def]
    broker = launch_emulator(tmp_path, "--offset-durability", mode, "--topic", f"{TOPIC}:{QUEUES}")

    async def produce() -> None:
        async with Producer("reset_crash_p", namesrv=broker.namesrv_addr) as p:
            for mq in await p.fetch_queues(TOPIC):
                await p.send_batch(TOPIC, [f"{mq.queue_id}-{i}" for i in range(PER_QUEUE)], queue=mq)
    asyncio.run(produce())
    return broker


def _crash_runs(tmp_path, mode: str, runs: int, wait_s: float) -> list[str]:  # type: ignore[no-untyped-def]
    """`runs` rounds of: commit the run's starting offsets, send the run's request, SIGKILL `wait_s` after its
    answer (0: at once), restart, read the offsets back. Returns what went wrong, one line per run."""
    broker = _launch(tmp_path, mode)
    lost = []
    try:
        for run in range(runs):
            before = {q: PER_QUEUE - (run + q) % 3 for q in range(QUEUES)}  # 8..10, never a target below
            step = _step(run, before)
            _commit(broker.broker_addr, step.committer, before)
            wire = Wire(broker.broker_addr)
            answer = wire.call(step.code, step.header)
            if wait_s:
                time.sleep(wait_s)
            broker.kill()
            wire.close()
            assert answer.code == ResponseCode.SUCCESS, f"{step.name}: {answer.remark}"
            broker.start()
            after = _stored(broker.broker_addr, step.key)
            if after != step.expected:
                lost.append(f"run {run} {step.name}: expected {step.expected}, after the restart {after}")
    finally:
        broker.stop()
    return lost


def test_write_through_answers_no_reset_or_removal_before_it_is_durable(tmp_path):
    # the suite: each of the 5 kinds twice; the performance table's figure: RESET_CRASH_RUNS=20
    assert _crash_runs(tmp_path, "write-through", runs=int(os.environ.get("RESET_CRASH_RUNS", "10")), wait_s=0) == []


def test_write_behind_keeps_a_reset_answered_one_flush_interval_before_the_kill(tmp_path):
    assert _crash_runs(tmp_path, "write-behind", runs=5, wait_s=0.1) == []


# -- a reset of a group the broker does not know --------------------------------------------------------------
# A group with no subscription group config, no stored offset and no consumer online is a typo: the reset is
# refused with 4.9.8's answer and nothing is stored. A group created ahead of its consumers (updateSubGroup,
# `serve --group`; with autoCreateSubscriptionGroup on, also its first heartbeat or pull) is known.

TYPO_TOPIC = "TypoTopic"


def _topic_with_messages(emu) -> None:  # type: ignore[no-untyped-def]
    async def setup() -> None:
        async with Admin(emu.namesrv_addr) as admin:
            await admin.create_topic(TYPO_TOPIC, 4, 4)
        async with Producer("typo_p", namesrv=emu.namesrv_addr) as p:
            await p.send_batch(TYPO_TOPIC, [f"m{i}" for i in range(8)])
    emu.run(setup())


def _exported(emu, group: str) -> dict[str, dict[int, int]]:  # type: ignore[no-untyped-def]
    async def export() -> dict[str, dict[int, int]]:
        async with Admin(emu.namesrv_addr) as admin:
            return (await admin.export_offsets(group)).offset_table
    return emu.run(export())


def _cli(ns: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, "admin", *args, "-n", ns],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("server_side", [True, False], ids=["server-side-reset", "4.9.x-reset"])
def test_the_cli_refuses_to_reset_a_group_the_broker_does_not_know(emulator_factory, server_side):
    emu = emulator_factory(use_server_side_reset_offset=server_side, groups=["planned"])
    _topic_with_messages(emu)
    for command in (["resetOffsetByTime", "-s", "now"], ["resetOffset", "-o", "0"]):
        proc = _cli(emu.namesrv_addr, command[0], "-g", "nobody-here", "-t", TYPO_TOPIC, *command[1:])
        assert proc.returncode == 1, proc.stdout
        [line] = proc.stderr.strip().splitlines()
        assert "THe consumer group <nobody-here> not exist" in line and "Traceback" not in proc.stderr
    assert _exported(emu, "nobody-here") == {}
    # a group created ahead of its consumers: 5.x's server-side reset records it; 4.9.x has no offset to
    # move ("not exist", as 4.9.8 says of any group without an offset in the queue)
    proc = _cli(emu.namesrv_addr, "resetOffsetByTime", "-g", "planned", "-t", TYPO_TOPIC, "-s", "now")
    if server_side:
        assert proc.returncode == 0, proc.stderr
        assert sum(_exported(emu, "planned")[f"{TYPO_TOPIC}@planned"].values()) == 8
    else:
        assert proc.returncode == 1 and "THe consumer group <planned> not exist" in proc.stderr


def test_mqadmin_reset_of_a_typo_group_fails_naming_it_and_stores_nothing(emulator_factory, java_clients):
    emu = emulator_factory(groups=["planned"])
    _topic_with_messages(emu)
    out = java_clients.mqadmin("resetOffsetByTime", "-n", emu.namesrv_addr, "-g", "nobody-here", "-t", TYPO_TOPIC,
                               "-s", "now")
    assert "ResetOffsetByTimeCommand command failed" in out and "THe consumer group <nobody-here> not exist" in out
    assert "rollback consumer offset" not in out  # nor did it fall back to writing the offsets itself
    assert _exported(emu, "nobody-here") == {}
    out = java_clients.mqadmin("resetOffsetByTime", "-n", emu.namesrv_addr, "-g", "planned", "-t", TYPO_TOPIC,
                               "-s", "now")
    assert "rollback consumer offset by specified group[planned]" in out and "Exception" not in out
    assert sum(_exported(emu, "planned")[f"{TYPO_TOPIC}@planned"].values()) == 8
