"""Master-slave replication over real loopback TCP (broker/ha/): an HAServer on a master store, an HAClient on a SLAVE
store, both with real mmap files in the test's directory. The slave ends with the master's commitlog bytes and
consume-queue units; SYNC_MASTER's wait; a late slave; restarts; a master that goes away; garbage from either side."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from pathlib import Path
from typing import Awaitable, Callable

import pytest

from rocketmq_emulator.testing.store_copies import commitlog_files, units
from rocketmq_emulator.broker.ha import HAClient, HAServer
from rocketmq_emulator.protocol.message import PROPERTY_KEYS, PROPERTY_TAGS
from rocketmq_emulator.store import MessageExtBrokerInner, MessageStore, MessageStoreConfig
from rocketmq_emulator.store.config import BrokerRole

SEG = 4096


def config(root: Path, role: BrokerRole = BrokerRole.ASYNC_MASTER, **kw: object) -> MessageStoreConfig:
    base: dict[str, object] = dict(store_path_root_dir=str(root), mapped_file_size_commit_log=SEG,
                                   mapped_file_size_consume_queue=20 * 16, max_hash_slot_num=64, max_index_num=256,
                                   preallocate_mapped_file=False, broker_role=role,
                                   ha_send_heartbeat_interval=200, ha_housekeeping_interval=1500)
    base.update(kw)
    return MessageStoreConfig(**base)  # type: ignore[arg-type]


def msg(topic: str, qid: int, body: bytes, tags: str = "", keys: str = "") -> MessageExtBrokerInner:
    props = {}
    if tags:
        props[PROPERTY_TAGS] = tags
    if keys:
        props[PROPERTY_KEYS] = keys
    return MessageExtBrokerInner.build(topic, qid, body, props)


def put_some(master: MessageStore, server: HAServer | None, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        assert master.put_message(msg(f"T{i % 3}", i % 2, b"body-%d " % i * (1 + i % 5), tags=f"tag{i % 4}",
                                      keys=f"key-{i}")).is_ok()
        if i % 7 == 0:
            assert master.put_messages([msg("Batch", 0, b"b%d" % j, keys=f"bk-{i}-{j}") for j in range(4)]).is_ok()
        if server is not None:
            server.notify()


async def until(check: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def caught_up(master: MessageStore, slave: MessageStore) -> Callable[[], bool]:
    return lambda: slave.commitlog.max_offset == master.commitlog.max_offset > 0






@pytest.fixture
def stores(tmp_path):
    opened: list[MessageStore] = []

    def open_(name: str, role: BrokerRole = BrokerRole.ASYNC_MASTER, **kw: object) -> MessageStore:
        store = MessageStore(config(tmp_path / name, role, **kw)).start()
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.stop()


async def test_a_slave_replicates_everything_the_master_stores(stores):
    master, slave = stores("master"), stores("slave", BrokerRole.SLAVE)
    async with HAServer(master) as server, HAClient(slave, f"127.0.0.1:{server.port}") as client:
        arrived: list[dict[tuple[str, int], int]] = []
        client.on_dispatched.append(arrived.append)
        await until(lambda: server.connection_count == 1 and client.connected, what="the slave's connection")
        put_some(master, server, 60)
        assert len(master.commitlog.queue.files) >= 3
        await until(caught_up(master, slave), what="the slave to catch up")
        assert commitlog_files(slave) == commitlog_files(master)
        assert units(slave) == units(master)
        assert slave.query_message("T1", "key-4").phy_offsets == master.query_message("T1", "key-4").phy_offsets != []
        assert slave.query_message("Batch", "bk-14-2").phy_offsets == master.query_message("Batch", "bk-14-2").phy_offsets
        latest: dict[tuple[str, int], int] = {}
        for update in arrived:
            latest.update(update)
        assert latest == {key: len(v) for key, v in units(master).items()}
        await until(lambda: server.push_to_slave_max_offset == master.commitlog.max_offset, what="the ack")
        assert server.is_slave_ok(master.commitlog.max_offset)
        assert slave.put_message(msg("T0", 0, b"x")).status.name == "SERVICE_NOT_AVAILABLE"


async def test_wait_for_slave_is_true_once_acked_and_false_after_the_timeout(stores):
    master, slave = stores("master"), stores("slave", BrokerRole.SLAVE)
    async with HAServer(master) as server:
        assert not server.is_slave_ok(0)  # no slave
        put_some(master, server, 1)
        started = time.monotonic()
        assert await server.wait_for_slave(master.commitlog.max_offset, 0.3) is False
        assert 0.25 < time.monotonic() - started < 2
        async with HAClient(slave, f"127.0.0.1:{server.port}"):
            await until(lambda: server.connection_count == 1)
            put_some(master, server, 3, 1)
            assert await server.wait_for_slave(master.commitlog.max_offset, 5) is True
            assert slave.commitlog.max_offset == master.commitlog.max_offset
            # waits of many puts at once resolve on one ack
            ends = []
            for i in range(5):
                put_some(master, server, 1, 10 + i)
                ends.append(master.commitlog.max_offset)
            assert await asyncio.gather(*(server.wait_for_slave(e, 5) for e in ends)) == [True] * 5
        await until(lambda: server.connection_count == 0, what="the slave's disconnection")
        assert not server.is_slave_ok(master.commitlog.max_offset)


async def test_a_late_slave_starts_at_the_masters_last_segment(stores):
    master, slave = stores("master"), stores("slave", BrokerRole.SLAVE)
    put_some(master, None, 60)
    last = master.commitlog.queue.files[-1].file_from_offset
    assert last > 0
    async with HAServer(master) as server, HAClient(slave, f"127.0.0.1:{server.port}"):
        await until(caught_up(master, slave))
        assert slave.commitlog.min_offset == last
        mine = commitlog_files(master)
        assert commitlog_files(slave) == {k: v for k, v in mine.items() if int(k) >= last}
        for (topic, qid), got in units(slave).items():
            cq, mcq = slave.find_consume_queue(topic, qid), master.find_consume_queue(topic, qid)
            assert cq is not None and mcq is not None and cq.max_offset_in_queue == mcq.max_offset_in_queue
            assert got == [mcq.get_unit(i) for i in range(cq.min_offset_in_queue, cq.max_offset_in_queue)]


@pytest.mark.parametrize("clean", [True, False])
async def test_a_restarted_slave_continues_without_duplicates(stores, tmp_path, clean):
    master = stores("master")
    slave = MessageStore(config(tmp_path / "slave", BrokerRole.SLAVE)).start()
    async with HAServer(master) as server:
        client = await HAClient(slave, f"127.0.0.1:{server.port}").start()
        await until(lambda: client.connected)
        put_some(master, server, 30)
        await until(caught_up(master, slave))
        await client.stop()
        slave.stop(clean=clean)  # clean=False: the files as a killed process leaves them
        put_some(master, server, 30, 30)
        slave = MessageStore(config(tmp_path / "slave", BrokerRole.SLAVE)).start()
        try:
            async with HAClient(slave, f"127.0.0.1:{server.port}"):
                await until(caught_up(master, slave))
                assert commitlog_files(slave) == commitlog_files(master)
                assert units(slave) == units(master)
        finally:
            slave.stop()


async def test_the_slave_reconnects_when_the_master_comes_back(stores, caplog):
    caplog.set_level(logging.INFO, logger="rocketmq_emulator.ha")
    master, slave = stores("master"), stores("slave", BrokerRole.SLAVE)
    server = await HAServer(master).start()
    port = server.port
    async with HAClient(slave, f"127.0.0.1:{port}") as client:
        await until(lambda: client.connected)
        put_some(master, server, 10)
        await until(caught_up(master, slave))
        await server.stop()
        await until(lambda: not client.connected, what="the client to notice")
        await asyncio.sleep(2.5)  # a few attempts while the master is away
        away = [r for r in caplog.records if "cannot be reached" in r.getMessage()]
        assert len(away) == 1, [r.getMessage() for r in caplog.records]
        put_some(master, None, 10, 10)
        server = await HAServer(master, "127.0.0.1", port).start()
        try:
            await until(lambda: client.connected, what="the reconnection")
            await until(caught_up(master, slave))
            assert commitlog_files(slave) == commitlog_files(master)
            assert any("is back" in r.getMessage() for r in caplog.records)
        finally:
            await server.stop()


async def test_a_new_master_address_moves_the_client(stores):
    master, slave = stores("master"), stores("slave", BrokerRole.SLAVE)
    async with HAServer(master) as server, HAClient(slave, None) as client:
        await asyncio.sleep(0.1)
        assert not client.connected and client.master_addr is None
        put_some(master, server, 5)
        client.update_master_address(f"127.0.0.1:{server.port}")
        await until(caught_up(master, slave))
        client.update_master_address("")
        await until(lambda: not client.connected and server.connection_count == 0)


async def _fake_master(send: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
                       ) -> tuple[asyncio.AbstractServer, int, list[int]]:
    sessions: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sessions.append(struct.unpack(">q", await reader.readexactly(8))[0])
        try:
            await send(reader, writer)
        finally:
            writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    return srv, srv.sockets[0].getsockname()[1], sessions


@pytest.mark.parametrize("frame", [
    struct.pack(">qi", 0, -5),                                    # a negative body size
    struct.pack(">qi", -1, 10) + b"x" * 10,                       # a negative offset
    struct.pack(">qi", 0, 1 << 30),                               # a body no slave could take
    struct.pack(">qi", 0, 200) + b"\0\0\0\xc8" + b"\xee" * 196,  # whole bytes that are no record
    struct.pack(">qi", 0, 100) + b"x" * 10,                       # truncated: the master goes away mid-frame
    struct.pack(">qi", 777, 0),                                   # a heartbeat at an offset this slave is not at
    b"\x01\x02\x03",                                              # half a header
])
async def test_garbage_from_a_master_closes_that_connection_only(stores, frame, caplog):
    slave = stores("slave", BrokerRole.SLAVE)

    async def send(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(frame)
        await w.drain()
        await asyncio.sleep(0.05)

    srv, port, sessions = await _fake_master(send)
    try:
        async with HAClient(slave, f"127.0.0.1:{port}"):
            await until(lambda: len(sessions) >= 2, what="a second connection")
        assert sessions[:2] == [0, 0]
        assert slave.commitlog.max_offset == 0 and slave.replica_max_offset() == 0
        assert any(r.levelno == logging.WARNING and "HA:" in r.getMessage() for r in caplog.records)
    finally:
        srv.close()
        await srv.wait_closed()


async def test_garbage_from_a_slave_closes_that_connection_only(stores):
    master, slave = stores("master", ha_housekeeping_interval=500), stores("slave", BrokerRole.SLAVE)
    put_some(master, None, 3)
    async with HAServer(master) as server:
        loop = asyncio.get_running_loop()

        async def raw(data: bytes, then_read: bool = True) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(data)
            await writer.drain()
            got = b""
            if then_read:
                got = await asyncio.wait_for(reader.read(), 5)  # until the master closes
            writer.close()
            return got

        assert await raw(struct.pack(">q", -3)) == b""  # a negative offset: closed before any transfer
        # a report beyond the master's log after the first one: closed (4.9.8's check)
        got = await raw(struct.pack(">q", 8) + struct.pack(">q", 10**9))
        assert len(got) <= 12 + master.commitlog.max_offset
        await raw(b"\x00\x00\x00", then_read=False)  # half a report, then gone
        # a slave that reports once and then keeps silent is dropped after haHousekeepingInterval, having got
        # its data and the heartbeats at its end
        started = loop.time()
        got = await raw(struct.pack(">q", master.commitlog.max_offset))
        assert 0.4 < loop.time() - started < 3
        end = master.commitlog.max_offset
        assert len(got) >= 12 and len(got) % 12 == 0 and set(got[i:i + 12] for i in range(0, len(got), 12)) == \
            {struct.pack(">qi", end, 0)}
        await until(lambda: server.connection_count == 0)
        async with HAClient(slave, f"127.0.0.1:{server.port}"):  # the master still serves a good slave
            await until(caught_up(master, slave))
        assert commitlog_files(slave) == commitlog_files(master)


async def test_the_listener_binds_only_its_host(stores):
    master = stores("master")
    async with HAServer(master, "127.0.0.1", 0) as server:
        names = [s.getsockname()[0] for s in server._server.sockets] if server._server else []
        assert names == ["127.0.0.1"]
        with socket.create_connection(("127.0.0.1", server.port), timeout=2):
            pass
