"""The broadcast offset store's rules (broker/state/broadcast_offset.py), on a fake clock: which pull is a client's
first of a queue, where it resumes, what survives an expiry and what a clean stop records."""

from __future__ import annotations

from rocketmq_emulator.broker.state.broadcast_offset import BroadcastOffsetManager, session_of
from rocketmq_emulator.broker.state.consumer_offset import ConsumerOffsetManager

T, G, C = "Bc", "bcg", "10.0.0.1@DEFAULT"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def manager(tmp_path, online: set[str] | None = None, expire_s: float = 120.0):
    online = online if online is not None else set()
    clock = Clock()
    offsets = ConsumerOffsetManager(tmp_path, journal=False)
    m = BroadcastOffsetManager(offsets, lambda group, cid: cid in online, expire_s, clock=clock)
    return m, clock, offsets


def pull(m: BroadcastOffsetManager, session: int, queue: int, offset: int, queue_max: int,
         client: str = C) -> int:
    """One pull as the handler makes it: the offset it is moved to (or as asked), then recorded."""
    moved = m.init_offset(T, G, queue, client, session, offset, queue_max)
    at = moved if moved is not None else offset
    m.update_offset(T, G, queue, client, session, at, min(at + 1, queue_max) if at < queue_max else at)
    return at


def test_a_restarted_client_within_the_expiry_resumes_at_its_own_position(tmp_path):
    m, clock, _ = manager(tmp_path)
    assert pull(m, 1, 0, 4, 4) == 4 and pull(m, 1, 1, 3, 3) == 3  # caught up, its pulls held
    clock.now += 10  # it restarts without its offsets file; two messages arrive meanwhile
    assert pull(m, 2, 0, 5, 5) == 4 and pull(m, 2, 1, 4, 4) == 3
    assert pull(m, 2, 0, 5, 5) == 5  # its second pull of the queue in this session goes as asked


def test_a_client_that_goes_on_where_its_last_pull_ended_is_left_alone(tmp_path):
    m, clock, _ = manager(tmp_path)
    m.update_offset(T, G, 0, C, 1, 3, 5)  # asked 3, given 3 and 4: its next pull asks 5
    assert m.init_offset(T, G, 0, C, 2, 5, 5) is None  # reconnected, same position: nothing again
    assert m.init_offset(T, G, 0, C, 2, 6, 6) == 3  # restarted without its offsets, one more arrived


def test_a_pull_below_the_end_is_the_clients_own_offset(tmp_path):
    m, clock, _ = manager(tmp_path)
    assert pull(m, 1, 0, 4, 4) == 4
    assert m.init_offset(T, G, 0, C, 2, 2, 9) is None


def test_after_the_expiry_every_queue_resumes_at_the_clients_own_position(tmp_path):
    m, clock, offsets = manager(tmp_path, expire_s=30)
    other = "10.0.0.2@DEFAULT"
    for q in range(4):
        pull(m, 1, q, 2, 2)
        pull(m, 7, q, 1, 2, client=other)  # a slower member, still connected
    clock.now += 31
    m.is_online = lambda group, cid: cid == other
    m.scan()
    assert (T, G, C) in m.archive and offsets.query_offsets_of_group(G + "@broadcast", T) == {q: 1 for q in range(4)}
    assert [pull(m, 2, q, 5, 5) for q in range(4)] == [2, 2, 2, 2]  # its own, not the group's 1


def test_a_new_client_starts_from_the_groups_offset(tmp_path):
    m, clock, offsets = manager(tmp_path)
    pull(m, 1, 0, 3, 3)
    m.scan()
    assert offsets.query_offset(G + "@broadcast", T, 0) == 3
    assert pull(m, 2, 0, 6, 6, client="10.0.0.9@DEFAULT") == 3


def test_shutdown_records_the_latest_positions_without_expiring_anyone(tmp_path):
    m, clock, offsets = manager(tmp_path, expire_s=5)
    for q, at in enumerate([1, 0, 0, 0]):
        pull(m, 1, q, at, at)
    m.scan()
    for q, at in enumerate([3, 2, 2, 2]):
        pull(m, 1, q, at, at)
    clock.now += 6  # the connections are closed and the last pull is older than the expiry
    m.shutdown()
    assert offsets.query_offsets_of_group(G + "@broadcast", T) == {0: 3, 1: 2, 2: 2, 3: 2}


def test_a_reset_moves_a_returning_clients_position(tmp_path):
    m, clock, offsets = manager(tmp_path)
    m.update_offset(T, G, 0, C, 1, 3, 5)
    m.assign_reset(group=G, topic=T, queue_id=0, offset=1)
    assert m.take_reset(group=G, topic=T, queue_id=0, client_id=C) == 1
    assert m.init_offset(T, G, 0, C, 2, 5, 5) == 1  # not "where its last pull ended": that was before the reset


def test_each_connection_is_a_session():
    a: dict = {}
    b: dict = {}
    assert session_of(a) == session_of(a) != session_of(b)
