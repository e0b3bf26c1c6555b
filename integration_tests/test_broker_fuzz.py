"""Fuzz the live broker with well-formed frames carrying arbitrary codes, header fields and bodies: every
request gets an answer (or, for a malformed one, the connection is closed), nothing hangs, and the broker
keeps serving other clients."""

from __future__ import annotations

import asyncio
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from integration_tests.rawclient import RawClient, send_request
from rocketmq_emulator.testing.emulator_thread import EmulatorThread
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode

CODES = [int(c) for c in RequestCode] + [0, -1, 99999]
FIELDS = ["topic", "consumerGroup", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset",
          "suspendTimeoutMillis", "subscription", "subVersion", "expressionType", "producerGroup", "group",
          "offset", "timestamp", "key", "maxNum", "beginTimestamp", "endTimestamp", "isForce", "clientID",
          "delayLevel", "readQueueNums", "writeQueueNums", "perm", "topicFilterType", "batch", "properties",
          "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"]
VALUES = st.one_of(st.sampled_from(["", "0", "1", "-1", "3", "true", "false", "*", "TagA || TagB", "Fuzz",
                                    "%RETRY%fuzz", "SCHEDULE_TOPIC_XXXX", "9223372036854775807",
                                    "99999999999999999999", "1.5", "x" * 300, "TAGS\x01a\x02KEYS\x01k"]),
                   st.text(max_size=20))
REQUESTS = st.builds(
    lambda code, ext, body, oneway: RemotingCommand.request(code, ext, body, oneway=oneway),
    st.sampled_from(CODES), st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=8),
    st.one_of(st.just(b""), st.binary(max_size=200), st.sampled_from([b"{}", b"[]", b'{"clientID":1}', b"null"])),
    st.booleans())


class ErrorRecords(logging.Handler):
    """Unexpected exceptions in handlers are logged at ERROR (expected bad input only at INFO/WARNING)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def shared_emulator(tmp_path_factory):
    root = logging.getLogger("rocketmq_emulator")
    errors = ErrorRecords()
    root.addHandler(errors)
    root.setLevel(logging.ERROR)
    emu = EmulatorThread(tmp_path_factory.mktemp("fuzz") / "store").start()
    emu.errors = errors
    yield emu
    emu.close()
    root.removeHandler(errors)
    root.setLevel(logging.NOTSET)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(REQUESTS, min_size=1, max_size=6), st.sampled_from(["broker", "vip", "namesrv"]))
def test_arbitrary_requests_are_answered_and_the_broker_survives(shared_emulator, requests, listener):
    port = {"broker": shared_emulator.broker_port, "vip": shared_emulator.broker_port - 2,
            "namesrv": shared_emulator.namesrv_port}[listener]

    async def scenario() -> None:
        async with await RawClient.connect("127.0.0.1", port) as c:
            pending = []
            for req in requests:
                fut = c.send(req)
                if not req.is_oneway:
                    pending.append((req, fut))
            for req, fut in pending:
                try:
                    # held pulls answer at their suspend timeout at the latest (capped here by the test)
                    resp = await asyncio.wait_for(asyncio.shield(fut), 3)
                except asyncio.TimeoutError:
                    assert req.code == RequestCode.PULL_MESSAGE, f"no answer to {req!r}"
                    continue
                assert resp.opaque == req.opaque and resp.is_response
        async with await RawClient.connect("127.0.0.1", shared_emulator.broker_port) as other:
            assert (await other.request(send_request("FuzzCheck"))).code == ResponseCode.SUCCESS
    asyncio.run(scenario())
    bugs = [f"{r.getMessage()}: {r.exc_info[1]!r}" if r.exc_info else r.getMessage()
            for r in shared_emulator.errors.records]
    shared_emulator.errors.records.clear()
    assert not bugs, bugs
