"""Master-slave replication, the store's side (store/replication.py): a SLAVE store fed the master's commitlog bytes
ends up with the same commitlog files, the same consume-queue units and a key index that finds the same messages;
it refuses puts; a late slave starts from the master's last segment; a cut record waits; restarts (clean and
crash) go on from the copy's end. The transfers are made here in-process, as broker/ha/ makes them over TCP."""

from __future__ import annotations

from pathlib import Path

import pytest

from store_testlib import make_msg, small_config
from rocketmq_emulator.testing.store_copies import commitlog_files, units
from rocketmq_emulator.store import MessageStore, PutMessageStatus
from rocketmq_emulator.store.config import BrokerRole
from rocketmq_emulator.store.results import ReplicaAppendStatus

SEG = 4096


def _store(root: Path, clock, role: BrokerRole = BrokerRole.ASYNC_MASTER, **kw) -> MessageStore:
    return MessageStore(small_config(root, broker_role=role, **kw), clock=clock).start()


@pytest.fixture
def pair(tmp_path, clock):
    master = _store(tmp_path / "master", clock)
    slave = _store(tmp_path / "slave", clock, BrokerRole.SLAVE)
    made = [master, slave]
    yield master, slave
    for store in made:
        store.stop()


class Link:
    """One master -> slave connection as HAConnection runs it: the start is decided once, when the slave first
    reports its offset; then transfers of at most `chunk` bytes."""

    def __init__(self, master: MessageStore, slave: MessageStore) -> None:
        self.master, self.slave = master, slave
        self.offset = master.replication_start_offset(slave.replica_max_offset())

    def sync(self, chunk: int = 32768) -> int:
        n = 0
        while True:
            data = self.master.read_for_replication(self.offset, chunk)
            if not data:
                return n
            result = self.slave.append_replicated(self.offset, data)
            assert result.status is ReplicaAppendStatus.APPENDED, result
            self.offset += len(data)
            assert result.max_offset == self.offset
            n += 1


def put_mix(store: MessageStore, clock, rounds: int = 6) -> None:
    for i in range(rounds):
        clock.advance(3)
        assert store.put_message(make_msg("Orders", i % 3, b"order %d" % i * (1 + i % 4), tags=f"t{i % 2}",
                                          keys=f"order-{i} shared", uniq=f"U{i:04d}")).is_ok()
        assert store.put_message(make_msg("Audit", 0, b"a" * 300, tags="audit")).is_ok()
        batch = [make_msg("Bulk", 1, b"b%d" % j, keys=f"bulk-{i}-{j}") for j in range(5)]
        assert store.put_messages(batch).is_ok()
        assert store.put_message(make_msg("SCHEDULE_TOPIC_XXXX", 2, b"later", tags="d",
                                          props={"DELAY": "3", "REAL_TOPIC": "Orders", "REAL_QID": "0"},
                                          tags_code=clock.now + 10_000)).is_ok()  # the broker's: due time
        prepared = make_msg("Tx", 0, b"half", keys=f"tx-{i}", sys_flag=0x4)
        assert store.put_message(prepared).is_ok()






def assert_same(master: MessageStore, slave: MessageStore, *, from_segment: str | None = None) -> None:
    assert slave.commitlog.max_offset == master.commitlog.max_offset
    mine, theirs = commitlog_files(master), commitlog_files(slave)
    if from_segment is not None:
        mine = {k: v for k, v in mine.items() if k >= from_segment}
    assert list(theirs) == list(mine)
    for name in mine:
        assert theirs[name] == mine[name], name
    if from_segment is None:
        assert units(slave) == units(master)


@pytest.mark.parametrize("chunk", [32768, 1000, 97])
def test_the_slave_gets_the_same_files_queues_and_index(pair, clock, chunk):
    master, slave = pair
    link = Link(master, slave)  # connected before the master stores anything: from offset 0
    put_mix(master, clock)
    assert len(master.commitlog.queue.files) >= 3  # rolled: BLANK fillers crossed
    link.sync(chunk)
    assert_same(master, slave)
    assert slave.replica_max_offset() == master.commitlog.max_offset
    for key in ("order-3", "shared", "U0004", "bulk-2-3"):
        topic = "Bulk" if key.startswith("bulk") else "Orders"
        assert slave.query_message(topic, key).phy_offsets == master.query_message(topic, key).phy_offsets != []
    assert slave.query_message("Tx", "tx-1").phy_offsets == master.query_message("Tx", "tx-1").phy_offsets
    got = slave.get_message("g", "Orders", 0, 0, 32)
    want = master.get_message("g", "Orders", 0, 0, 32)
    assert got is not None and want is not None and got.body() == want.body() and got.message_count == 2
    # later puts arrive incrementally
    put_mix(master, clock, 2)
    link.sync(chunk)
    assert_same(master, slave)


def test_a_slave_refuses_puts_whatever_the_role_was(tmp_path, clock):
    store = _store(tmp_path / "s", clock, BrokerRole.SLAVE)
    try:
        for put in (lambda: store.put_message(make_msg()), lambda: store.put_messages([make_msg()]),
                    lambda: store.put_message_run([make_msg(), make_msg()])):
            assert put().status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.commitlog.max_offset == 0
        store.reconfigure(small_config(tmp_path / "s", broker_role=BrokerRole.ASYNC_MASTER))
        assert store.put_message(make_msg()).is_ok()
        store.reconfigure(small_config(tmp_path / "s", broker_role=BrokerRole.SLAVE))
        assert store.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        store.writable = True  # the disk guard's recheck does not let a slave write either
        assert store.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    finally:
        store.stop()


def test_a_master_refuses_replicated_bytes(pair, clock):
    master, slave = pair
    put_mix(master, clock, 1)
    data = master.read_for_replication(0, 1000)
    before = master.commitlog.max_offset
    assert master.append_replicated(before, data).status is ReplicaAppendStatus.SERVICE_NOT_AVAILABLE
    assert master.commitlog.max_offset == before


def test_reads_for_transfer_stay_within_a_segment(pair, clock):
    master, _slave = pair
    assert master.read_for_replication(0, 100) == b""
    put_mix(master, clock)
    first = master.commitlog.queue.files[0]
    assert master.read_for_replication(0, 10**6) == first.mm[:SEG]  # the full segment, filler and zeros included
    assert master.read_for_replication(SEG - 10, 100) == first.mm[SEG - 10:SEG]
    assert master.read_for_replication(master.commitlog.max_offset, 100) == b""
    assert len(master.read_for_replication(SEG, 50)) == 50


def test_a_slave_reporting_0_starts_at_the_masters_last_segment(pair, clock):
    master, slave = pair
    put_mix(master, clock)
    last = master.commitlog.queue.files[-1].file_from_offset
    assert last > 0
    assert master.replication_start_offset(0) == last
    assert master.replication_start_offset(123) == 123
    link = Link(master, slave)
    link.sync(500)
    assert slave.commitlog.min_offset == last
    assert_same(master, slave, from_segment=f"{last:020d}")
    # every queue unit the slave has is the master's unit at the same queue offset
    for (topic, qid), got in units(slave).items():
        cq = slave.find_consume_queue(topic, qid)
        assert cq is not None
        for qo, unit in zip(range(cq.min_offset_in_queue, cq.max_offset_in_queue), got):
            master_cq = master.find_consume_queue(topic, qid)
            assert master_cq is not None and unit == master_cq.get_unit(qo)
    put_mix(master, clock, 2)
    link.sync(500)
    assert_same(master, slave, from_segment=f"{last:020d}")


def test_a_cut_record_waits_for_its_rest(pair, clock):
    master, slave = pair
    assert master.put_message(make_msg("T", 0, b"x" * 200, keys="k1")).is_ok()
    data = master.read_for_replication(0, 10**6)
    first = slave.append_replicated(0, data[:50])
    assert first.status is ReplicaAppendStatus.APPENDED and first.max_offset == 50 and first.dispatched == 0
    assert slave.commitlog.max_offset == 0 and slave.get_max_offset_in_queue("T", 0) == 0
    rest = slave.append_replicated(50, data[50:])
    assert rest.dispatched == 1 and rest.arrived == {("T", 0): 1} and rest.max_offset == len(data)
    assert slave.commitlog.max_offset == len(data) and slave.query_message("T", "k1").phy_offsets == [0]


def test_a_wrong_offset_or_bad_bytes_write_nothing(pair, clock):
    master, slave = pair
    put_mix(master, clock, 1)
    data = master.read_for_replication(0, 10**6)
    assert slave.append_replicated(0, data[:100]).is_ok()
    wrong = slave.append_replicated(0, data)
    assert wrong.status is ReplicaAppendStatus.OFFSET_MISMATCH and wrong.max_offset == 100
    # an empty slave takes only a segment start
    other = _store(slave.config.store_path_root_dir + "-2", clock, BrokerRole.SLAVE)
    try:
        assert other.append_replicated(17, data).status is ReplicaAppendStatus.OFFSET_MISMATCH
        assert other.append_replicated(0, b"\x00\x00\x01\x00" + b"\xff" * 300).status is ReplicaAppendStatus.BAD_DATA
        assert other.commitlog.max_offset == 0 and other.replica_max_offset() == 0
        assert other.append_replicated(0, data).is_ok()  # the master resends: all good
        assert other.commitlog.max_offset == len(data)
        end = len(data)
        crossing = other.append_replicated(end, b"\x00" * (SEG - end + 8))
        assert crossing.status is ReplicaAppendStatus.BAD_DATA and other.commitlog.max_offset == end
    finally:
        other.stop()
    # a heartbeat (no bytes) at the right offset is fine
    assert slave.append_replicated(100, b"").status is ReplicaAppendStatus.APPENDED


@pytest.mark.parametrize("clean", [True, False])
def test_a_restarted_slave_goes_on_from_its_end_without_duplicates(tmp_path, clock, clean):
    master = _store(tmp_path / "master", clock)
    slave = _store(tmp_path / "slave", clock, BrokerRole.SLAVE)
    try:
        link = Link(master, slave)
        put_mix(master, clock, 3)
        link.sync(333)
        put_mix(master, clock, 2)
        offset = slave.replica_max_offset()
        data = master.read_for_replication(offset, 150)
        assert slave.append_replicated(offset, data).is_ok()  # a record cut: it waits beyond the log's end
        boundary = slave.commitlog.max_offset
        assert slave.replica_max_offset() == offset + len(data) > boundary
        slave.flush()
        slave.stop(clean=clean)
        slave = _store(tmp_path / "slave", clock, BrokerRole.SLAVE)
        assert slave.recovery is not None and slave.recovery.mode == ("normal" if clean else "abnormal")
        assert slave.replica_max_offset() == slave.commitlog.max_offset == boundary
        Link(master, slave).sync(333)
        assert_same(master, slave)
    finally:
        master.stop()
        slave.stop()
