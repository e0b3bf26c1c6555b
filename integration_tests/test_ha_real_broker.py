"""The emulator's replication against the real Apache RocketMQ 4.9.8 broker (../shared/realbroker, built by its
build.sh when missing): an emulator SLAVE store with its HAClient replicates from a real 4.9.8 master's HA port
(listenPort + 1). Messages sent to the real master with the project's client end up in the slave's consume queues
at the offsets the master answered, its key index finds them, and its commitlog files are byte-equal to the real
master's (a segment rolled included: the real BLANK filler and the zeros after it). Mark `parity-record` (it runs
the real brokers: deselect it with `-m "not parity-record"` where they cannot run)."""

from __future__ import annotations

import asyncio
import os
import struct
import time
from pathlib import Path

import pytest

from rocketmq_emulator.broker.ha import HAClient
from rocketmq_emulator.client import Message, Producer
from rocketmq_emulator.store import MessageStore, MessageStoreConfig
from rocketmq_emulator.store.config import BrokerRole
from rocketmq_emulator.testing.parity.real import REAL_49, RealBroker, shared_dir, start

pytestmark = pytest.mark.timeout(600)

SEG = 128 * 1024  # both sides' mappedFileSizeCommitLog: a few hundred messages roll a segment
TOPIC = "HaTopic"


@pytest.fixture
def real_master():
    try:
        shared_dir()
    except FileNotFoundError as e:
        pytest.fail(f"the real brokers are not here: {e}", pytrace=False)
    broker = start(REAL_49, {"mappedFileSizeCommitLog": str(SEG)})
    try:
        yield broker
    finally:
        broker.stop()


def _real_store(broker: RealBroker) -> Path:
    return broker.directory / "broker" / "store"


def _segments(commitlog: Path) -> dict[str, bytes]:
    """The segments holding data: 4.9.8 creates the next segment ahead of need (AllocateMappedFileService), so
    the real master's directory ends with an empty one."""
    out = {n: (commitlog / n).read_bytes() for n in sorted(os.listdir(commitlog)) if n.isdigit()}
    while out and not any(out[list(out)[-1]]):
        out.pop(list(out)[-1])
    return out


def _end(segments: dict[str, bytes]) -> int:
    """Where a commitlog's data ends: the last segment's last non-zero byte, rounded up to a record (the files hold
    whole records, and no record ends in a zero byte: its last field is the properties or the topic)."""
    name = list(segments)[-1]
    data = segments[name]
    return int(name) + len(data.rstrip(b"\0"))


async def _until(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_an_emulator_slave_replicates_a_real_4_9_8_master(real_master, tmp_path):
    host, port = real_master.broker.rsplit(":", 1)
    ha_addr = f"{host}:{int(port) + 1}"
    slave = MessageStore(MessageStoreConfig(store_path_root_dir=str(tmp_path / "slave"), broker_role=BrokerRole.SLAVE,
                                            mapped_file_size_commit_log=SEG, preallocate_mapped_file=False)).start()
    try:
        async with HAClient(slave, ha_addr) as client:
            await _until(lambda: client.connected, 30, "the connection to the real master's HA port")
            sent: list[tuple[int, int, str]] = []  # (queue id, queue offset, key)
            async with Producer("ha_producer", namesrv=real_master.namesrv) as producer:
                for i in range(300):
                    key = f"ha-key-{i}"
                    r = await producer.send(TOPIC, b"payload %05d " % i + b"x" * 500, tags=f"tag{i % 3}", keys=key)
                    assert r.status.name == "SEND_OK", r
                    sent.append((r.queue_id, r.queue_offset, key))
                batch = await producer.send_batch(TOPIC, [Message(TOPIC, f"batch {j}", tags="bulk", keys=f"hb-{j}")
                                                          for j in range(10)], queue=0)
                for j in range(10):
                    sent.append((batch.queue_id, batch.queue_offset + j, f"hb-{j}"))
            want: dict[int, int] = {}
            for qid, offset, _key in sent:
                want[qid] = max(want.get(qid, 0), offset + 1)
            await _until(lambda: all(slave.get_max_offset_in_queue(TOPIC, q) == n for q, n in want.items()), 60,
                         "the slave's consume queues to hold every message")

            real_commitlog = _real_store(real_master) / "commitlog"
            real = _segments(real_commitlog)
            assert len(real) >= 2, "the real master rolled a segment"
            await _until(lambda: slave.commitlog.max_offset == _end(_segments(real_commitlog)), 30,
                         "the slave to reach the real master's end")
            real = _segments(real_commitlog)
            mine = _segments(Path(slave.config.commit_log_dir))
            assert list(mine) == list(real)
            for name in real:
                assert mine[name] == real[name], f"commitlog segment {name} differs"
            # the consume queues: the real master's units, byte for byte
            for qid, n in want.items():
                cq = slave.find_consume_queue(TOPIC, qid)
                assert cq is not None
                real_cq = (_real_store(real_master) / "consumequeue" / TOPIC / str(qid) /
                           "00000000000000000000").read_bytes()
                units = b"".join(struct.pack(">qiq", *cq.get_unit(i)) for i in range(n))  # type: ignore[misc]
                assert units == real_cq[:20 * n], f"queue {qid}"
            # what a consumer of the slave reads
            for qid, offset, key in sent[::37] + sent[-3:]:
                found = slave.query_message(TOPIC, key)
                assert len(found.phy_offsets) == 1, key
                unit = slave.find_consume_queue(TOPIC, qid).get_unit(offset)  # type: ignore[union-attr]
                assert unit is not None and unit[0] == found.phy_offsets[0]
            got = slave.get_message("g", TOPIC, 0, 0, 32)
            assert got is not None and got.message_count > 0
    finally:
        slave.stop()
