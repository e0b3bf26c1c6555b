"""Offset stores (seed 004): update (increase-only or not), read types, persist/persist_all/remove, the local
file's place, format, backup and atomic write, and the remote store's answers (-1 no offset, -2 unreachable)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocketmq_emulator.client.errors import BrokerResponseError, BrokerUnreachableError
from rocketmq_emulator.client.offset_store import (LocalFileOffsetStore, ReadOffsetType, RemoteBrokerOffsetStore,
                                                   read_cpp_offsets)
from rocketmq_emulator.protocol.admin_bodies import OffsetSerializeWrapper
from rocketmq_emulator.protocol.bodies import MessageQueue

Q0, Q1, Q2, Q3 = (MessageQueue("T", "broker-a", i) for i in range(4))


def test_update_increase_only_or_not(tmp_path):
    store = LocalFileOffsetStore(tmp_path, "10.0.0.5@DEFAULT", "g")
    store.update_offset(Q0, 10, True)
    store.update_offset(Q0, 5, True)
    assert store.offset_table[Q0] == 10
    store.update_offset(Q0, 5, False)
    assert store.offset_table[Q0] == 5


async def test_local_file_place_format_and_backup(tmp_path):
    store = LocalFileOffsetStore(tmp_path, "10.0.0.5@DEFAULT", "g")
    assert store.path == tmp_path / ".rocketmq_offsets" / "10.0.0.5@DEFAULT" / "g" / "offsets.json"
    store.update_offset(Q0, 7, False)
    store.update_offset(Q1, 9, False)
    await store.persist_all([Q0, Q1])
    text = store.path.read_text()
    assert text == ('{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":0,\n\t\t\t"topic":"T"\n'
                    '\t\t}:7,{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":1,\n\t\t\t"topic":"T"\n\t\t}:9\n\t}\n}')
    assert not store.path.with_name("offsets.json.bak").exists()
    store.update_offset(Q0, 8, False)
    await store.persist(Q0)  # works (seed 000 fix 2) and keeps Q1's entry
    assert OffsetSerializeWrapper.decode(store.path.read_bytes()).offset_table == {Q0: 8, Q1: 9}
    assert OffsetSerializeWrapper.decode(store.path.with_name("offsets.json.bak").read_bytes()).offset_table == \
        {Q0: 7, Q1: 9}
    assert not store.path.with_name("offsets.json.tmp").exists()

    store.path.write_text("{ broken")  # a torn or corrupt file: the backup is read instead
    fresh = LocalFileOffsetStore(tmp_path, "10.0.0.5@DEFAULT", "g")
    await fresh.load()
    assert fresh.offset_table == {Q0: 7, Q1: 9}


async def test_local_read_types_and_remove(tmp_path):
    store = LocalFileOffsetStore(tmp_path, "c", "g")
    store.update_offset(Q0, 3, False)
    await store.persist(Q0)
    store.update_offset(Q0, 4, False)
    assert await store.read_offset(Q0, ReadOffsetType.READ_FROM_MEMORY) == 4
    assert await store.read_offset(Q0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 4
    assert await store.read_offset(Q0, ReadOffsetType.READ_FROM_STORE) == 3  # and caches it
    assert store.offset_table[Q0] == 3
    store.remove_offset(Q0)
    assert await store.read_offset(Q0, ReadOffsetType.READ_FROM_MEMORY) == -1
    assert await store.read_offset(Q0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 3
    assert await store.read_offset(Q2, ReadOffsetType.READ_FROM_STORE) == -1
    assert store.clone_offset_table("T") == {Q0: 3} and store.clone_offset_table("U") == {}


class FakeAPI:
    def __init__(self) -> None:
        self.answers: dict[MessageQueue, object] = {}
        self.updates: list[tuple[MessageQueue, int, bool]] = []

    async def query_consumer_offset(self, addr, group, mq):
        answer = self.answers[mq]
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def update_consumer_offset(self, addr, group, mq, offset, oneway=False):
        self.updates.append((mq, offset, oneway))


class FakeInstance:
    def __init__(self) -> None:
        self.api = FakeAPI()

    async def find_master(self, broker_name, topic=None):
        return "127.0.0.1:10911"

    async def find_admin(self, broker_name, topic=None):  # the master, or its slave while it is away
        return "127.0.0.1:10911"


async def test_remote_read_maps_answers():
    inst = FakeInstance()
    store = RemoteBrokerOffsetStore(inst, "g")  # type: ignore[arg-type]
    inst.api.answers = {Q0: 12, Q1: BrokerResponseError(22, "Not found"),
                        Q2: BrokerUnreachableError("127.0.0.1:10911", "connection refused")}
    assert await store.read_offset(Q0, ReadOffsetType.READ_FROM_STORE) == 12
    assert store.offset_table == {Q0: 12}
    assert await store.read_offset(Q1, ReadOffsetType.READ_FROM_STORE) == -1  # any error code: no offset
    assert await store.read_offset(Q2, ReadOffsetType.READ_FROM_STORE) == -2  # could not ask: skip the queue


async def test_remote_stored_offset_raises_what_read_offset_maps():
    inst = FakeInstance()
    store = RemoteBrokerOffsetStore(inst, "g")  # type: ignore[arg-type]
    store.update_offset(Q0, 20, False)
    inst.api.answers = {Q0: 12, Q1: BrokerResponseError(22, "Not found"), Q2: BrokerResponseError(1, "broken"),
                        Q3: BrokerUnreachableError("127.0.0.1:10911", "connection refused")}
    assert await store.stored_offset(Q0) == 12 and store.offset_table == {Q0: 20}  # memory left alone
    assert await store.stored_offset(Q1) == -1  # QUERY_NOT_FOUND: no offset
    with pytest.raises(BrokerResponseError, match="broken"):
        await store.stored_offset(Q2)
    with pytest.raises(BrokerUnreachableError):
        await store.stored_offset(Q3)


async def test_remote_persist_all_sends_owned_and_forgets_the_rest():
    inst = FakeInstance()
    store = RemoteBrokerOffsetStore(inst, "g")  # type: ignore[arg-type]
    store.update_offset(Q0, 5, False)
    store.update_offset(Q1, 6, False)
    await store.persist_all([Q0, Q2])
    assert inst.api.updates == [(Q0, 5, True)]  # oneway, as Java's 5 s timer
    assert store.offset_table == {Q0: 5}
    await store.persist_all([Q0], wait=True)
    assert inst.api.updates[-1] == (Q0, 5, False)
    await store.persist(Q1)  # nothing in memory for it: nothing sent
    assert len(inst.api.updates) == 2


@pytest.mark.parametrize("content", [b"", b"   ", None])
async def test_missing_or_empty_file_falls_back_to_backup(tmp_path, content):
    store = LocalFileOffsetStore(tmp_path, "c", "g")
    store.path.parent.mkdir(parents=True)
    store.path.with_name("offsets.json.bak").write_bytes(OffsetSerializeWrapper(offset_table={Q1: 2}).encode())
    if content is not None:
        store.path.write_bytes(content)
    assert store.read_file() == {Q1: 2}


# offsets.Json as the stock C++ client (rocketmq==0.4.4) wrote it for a broadcasting consumer of topic BcT
CPP_FILE = Path(__file__).resolve().parents[1] / "golden" / "cpp_broadcast_offsets.Json"


def test_the_cpp_clients_broadcasting_file_reads():
    assert read_cpp_offsets(CPP_FILE) == {MessageQueue("BcT", "broker-a", 0): 0, MessageQueue("BcT", "broker-a", 1): 1,
                                          MessageQueue("BcT", "broker-a", 2): 1, MessageQueue("BcT", "broker-a", 3): 1}


async def test_a_broadcasting_store_without_its_own_file_starts_from_the_cpp_clients(tmp_path):
    store = LocalFileOffsetStore(tmp_path, "127.0.0.1@DEFAULT", "bcg")
    store.path.parent.mkdir(parents=True)
    shutil.copy(CPP_FILE, store.path.with_name("offsets.Json"))
    await store.load()
    assert store.offset_table[MessageQueue("BcT", "broker-a", 3)] == 1
    store.update_offset(MessageQueue("BcT", "broker-a", 3), 5, False)
    await store.persist_all(list(store.offset_table))
    again = LocalFileOffsetStore(tmp_path, "127.0.0.1@DEFAULT", "bcg")
    await again.load()  # its own offsets.json now wins
    assert again.offset_table[MessageQueue("BcT", "broker-a", 3)] == 5


def test_a_file_that_is_no_archive_is_refused(tmp_path):
    bad = tmp_path / "offsets.Json"
    bad.write_text('{"offsetTable":{}}')
    with pytest.raises(ValueError):
        read_cpp_offsets(bad)
