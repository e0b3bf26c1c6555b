"""The native lane under garbage: every C function fed arbitrary bytes, numbers and objects returns a value or
raises a Python exception; none crashes the process (a crash here kills the test run). What the broker does
with malformed frames end to end, on both paths, is integration_tests/test_broker_fuzz.py's (run on the Python
path too by integration_tests/test_python_path.py)."""

from __future__ import annotations

import mmap
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emulator import native
from rocketmq_emulator.protocol.admin_bodies import TopicConfig
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner

lane = native.lane
pytestmark = pytest.mark.skipif(lane is None, reason=f"the native lane does not run: {native.WHY}")
anything = st.one_of(st.none(), st.integers(), st.binary(max_size=30), st.text(max_size=5), st.floats(),
                     st.lists(st.integers(), max_size=3))
big_ints = st.integers(-2**70, 2**70)


def survives(fn, *args):  # type: ignore[no-untyped-def]
    try:
        fn(*args)
    except (TypeError, ValueError, OverflowError, AttributeError, UnicodeDecodeError, SystemError) as exc:
        assert not isinstance(exc, SystemError), exc  # a C-level misuse surfacing as SystemError is a bug


@settings(max_examples=400, deadline=None)
@given(buf=st.binary(max_size=200), pos=big_ints, max_len=big_ints)
def test_split_frames(buf: bytes, pos: int, max_len: int) -> None:
    survives(lane.split_frames, buf, pos, max_len)
    survives(lane.split_frames, bytearray(buf), pos % 300, 64)


@settings(max_examples=400, deadline=None)
@given(raw=anything, suffix=anything)
def test_property_functions(raw: object, suffix: object) -> None:
    survives(lane.scan_properties, raw)
    survives(lane.plain_properties, raw, suffix)


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=120), fields=st.lists(anything, min_size=6, max_size=6))
def test_batch_messages(body: bytes, fields: list[object]) -> None:
    survives(lane.batch_messages, MessageExtBrokerInner, body, b"\x02CLUSTER\x01c", *fields)
    survives(lane.batch_messages, tuple, body, b"", *fields)


@settings(max_examples=300, deadline=None)
@given(msgs=st.lists(st.one_of(anything, st.builds(MessageExtBrokerInner, st.text(max_size=3), big_ints,
                                                    st.binary(max_size=8))), max_size=3),
       qos=st.lists(anything, max_size=3), numbers=st.lists(st.one_of(big_ints, anything), min_size=4, max_size=4),
       host=anything)
def test_pack_records(msgs: list[object], qos: list[object], numbers: list[object], host: object) -> None:
    phy, ts, port, max_body = numbers
    survives(lane.pack_records, msgs, qos, phy, ts, host, port, max_body, zlib.crc32)


class Segment:
    def __init__(self, data: bytes, wrote: int, start: int) -> None:
        self.mm = mmap.mmap(-1, max(1, len(data)))
        self.mm[:len(data)] = data
        self.wrote_position = wrote
        self.file_from_offset = start


@settings(max_examples=300, deadline=None)
@given(units=st.binary(max_size=200), pos=st.integers(-40, 220), end=st.integers(-40, 260),
       segments=st.lists(st.tuples(st.binary(max_size=64), st.integers(-10, 100), st.integers(-100, 300)),
                         max_size=3),
       file_size=st.integers(-5, 128), tags=st.one_of(st.none(), st.sets(st.integers(-5, 5)), anything),
       limits=st.tuples(big_ints, st.integers(-5, 40), st.integers(-5, 40)))
def test_scan_units(units: bytes, pos: int, end: int, segments, file_size: int, tags, limits) -> None:  # type: ignore[no-untyped-def]
    cq = mmap.mmap(-1, max(1, len(units)))
    cq[:len(units)] = units
    files = [Segment(*s) for s in segments]
    offset, max_nums, max_count = limits
    survives(lane.scan_units, cq, pos, end, offset, max_nums, tags, files, file_size, 1 << 20, max_count)
    survives(lane.scan_units, cq, pos, end, offset, max_nums, tags, [object()], 64, 1 << 20, max_count)
    survives(lane.scan_units, cq, pos, end, offset, max_nums, tags, files, file_size, 1 << 20, max_count, True)


@settings(max_examples=200, deadline=None)
@given(segments=st.one_of(st.tuples(*[st.binary(max_size=5)] * 5), anything), values=st.lists(anything, min_size=4,
                                                                                              max_size=4))
def test_success_frame(segments: object, values: list[object]) -> None:
    survives(lane.success_frame, segments, *values)


# -- the read lane (native/read_sends.c) ---------------------------------------------------------------------
def _send_frame(header: bytes, body: bytes) -> bytes:
    return (len(header) + len(body) + 4).to_bytes(4, "big") + len(header).to_bytes(4, "big") + header + body


pull_like = st.builds(lambda tail: _send_frame(b'{"code":11,' + tail, b""), st.one_of(st.binary(max_size=80), st.sampled_from([
    b'"extFields":{"consumerGroup":"g","topic":"T","queueId":"0","queueOffset":"0","maxMsgNums":"32","sysFlag":"4"},'
    b'"flag":0}',
    b'"extFields":{"consumerGroup":"g","topic":"T","queueId":99999999999999999999,"queueOffset":"0"},"flag":0}',
    b'"extFields":{"consumerGroup":"g\\u00', b'"flag":0,"extFields":{}}'])))
send_like = st.builds(lambda tail, body: _send_frame(b'{"code":310,' + tail, body),
                      st.one_of(st.binary(max_size=80), st.sampled_from([
                          b'"extFields":{"a":"g","b":"T","e":"0","g":"1"},"flag":0}',
                          b'"extFields":{"a":"g","b":"T","e":"0","g":"1","i":"\\u0001\\u0002WAIT\\u0001"},"flag":0}',
                          b'"extFields":{"a":"g","b":"T","e":"99999999999","g":"1"},"flag":0}',
                          b'"extFields":{"a":"g","b":"T","e":"0","g":"1","i":"\\u00', b'"flag":0}'])),
                      st.binary(max_size=20))


@settings(max_examples=400, deadline=None)
@given(frames=st.lists(st.one_of(send_like, pull_like, st.binary(max_size=40)), max_size=5), pos=big_ints,
       max_len=big_ints,
       ctx=st.lists(anything, min_size=7, max_size=7), good_ctx=st.booleans(), limit=big_ints)
def test_read_sends(frames: list[bytes], pos: int, max_len: int, ctx: list[object], good_ctx: bool,
                    limit: int) -> None:
    buf = b"".join(frames)
    table = {"T": TopicConfig(topic_name="T", read_queue_nums=2, write_queue_nums=2),
             "U": TopicConfig(topic_name="U", read_queue_nums=1, write_queue_nums=1)}
    good = (table, {"T", "U", "V"}, MessageExtBrokerInner, b"\x02CLUSTER\x01c", limit, b"\x7f\0\0\x01", 1)
    survives(lane.read_sends, buf, pos % 100, 1 << 20, good if good_ctx else tuple(ctx))
    survives(lane.read_sends, bytearray(buf), pos, max_len, good)
    survives(lane.read_sends, buf, 0, 1 << 20, (table, {"T"}, tuple, b"", 10, b"", 0))  # a class that refuses
    for frame in frames:
        survives(lane.send_header, frame[8:])
        survives(lane.pull_header, frame[8:])


@settings(max_examples=300, deadline=None)
@given(segments=st.one_of(anything, st.lists(st.binary(max_size=5), min_size=5, max_size=5).map(tuple)),
       host=anything, lists=st.lists(st.lists(st.one_of(big_ints, anything), max_size=3), min_size=4, max_size=4))
def test_success_frames(segments: object, host: object, lists: list[list[object]]) -> None:
    msgs = [MessageExtBrokerInner("T", q if isinstance(q, int) else 0, b"") for q in lists[0]]
    survives(lane.success_frames, segments, host, msgs, *lists[1:])
    survives(lane.success_frames, segments, "AB", lists[0], *lists[1:])


@settings(max_examples=300, deadline=None)
@given(numbers=st.lists(st.one_of(big_ints, st.integers(-3, 200)), min_size=7, max_size=7),
       pend=st.lists(st.one_of(anything, st.tuples(st.one_of(st.text(max_size=3), anything),
                                                   st.one_of(st.lists(st.text(max_size=3), max_size=3), anything),
                                                   st.one_of(big_ints, anything), st.one_of(big_ints, anything))),
                     max_size=5),
       i=big_ints, size=st.sampled_from([0, 40, 200, 4096]), mapped=st.booleans())
def test_index_drain(numbers: list[object], pend: list[object], i: int, size: int, mapped: bool) -> None:
    first, limit, slot_num, at, allocated, last_phy, begin_ts = numbers
    mm: object = mmap.mmap(-1, size) if mapped and size else bytearray(size)
    survives(lane.index_drain, mm, first, limit, slot_num, at, allocated, last_phy, begin_ts, pend, i % 7)
    survives(lane.index_drain, b"read-only" * 50, 1, 9, 3, 52, 10_000, -1, 0, pend, 0)
    survives(lane.index_drain, mm, 1, 9, 3, 52, allocated, -1, 0, pend, 0)


class _Thing:
    """An object with whatever attributes a test gives it."""

    def __init__(self, **attrs: object) -> None:
        self.__dict__.update(attrs)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.one_of(big_ints, anything), min_size=9, max_size=9), n=st.integers(0, 3),
       lists=st.lists(st.lists(st.one_of(big_ints, anything), max_size=3), min_size=3, max_size=3))
def test_dispatch_functions(values: list[object], n: int, lists: list[list[object]]) -> None:
    topic, queue_id, sys_flag, tags, max_offset, max_phy, file_size, pos, allocated = values
    segment = _Thing(mm=mmap.mmap(-1, 4096), wrote_position=pos, allocated=allocated)
    cq = _Thing(max_offset_in_queue=max_offset, max_physic_offset=max_phy, file_size=file_size,
                queue=_Thing(files=[segment]), dirty=False)
    msgs = [_Thing(topic=topic, queue_id=queue_id, sys_flag=sys_flag, tags_code=tags) for _ in range(n)]
    hashable = isinstance(topic, (str, int)) and isinstance(queue_id, (str, int))
    survives(lane.run_queue_offsets, msgs, {(topic, queue_id): cq} if hashable else {})
    survives(lane.run_queue_offsets, lists[0], {})
    survives(lane.put_units, [cq] * n, *lists[:2], msgs, lists[2])
    survives(lane.put_units, [cq, None, 3][:n], [1] * n, [20] * n, msgs, [max_offset] * n)
    survives(lane.put_units, [_Thing()] * n, [1] * n, [20] * n, msgs, [0] * n)
    keyed = [_Thing(topic=topic, keys=v, index_keys=lambda v=v: v) for v in values[:n]]
    survives(lane.msg_ids, topic, lists[0])
    survives(lane.msg_ids, "\u00e9" * n, [1] * n)
    survives(lane.index_pending, [], keyed, lists[0], tags)
    survives(lane.index_pending, [], msgs, lists[1], tags)  # no `keys` at all
    survives(lane.index_pending, [], [_Thing(keys=None, index_keys=lambda: int("not a number"))] * n, [1] * n, 0)  # its error propagates
