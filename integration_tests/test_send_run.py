"""Sends that arrive in one read (a pipelining producer) are stored together: every request is answered as if
it had been sent alone, and each queue keeps the order the requests were written in."""

from __future__ import annotations

import asyncio
import time

from integration_tests.rawclient import RawClient
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketmq_emulator.protocol.frame import encode_command_bytes
from rocketmq_emulator.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeader
from rocketmq_emulator.protocol.message import BatchItem, create_message_id, decode_messages, encode_batch, encode_properties


def send(topic: str, queue_id: int, body: bytes, *, batch: list[bytes] | None = None, **props: str) -> RemotingCommand:
    h = SendMessageRequestHeader(producer_group="PG", topic=topic, queue_id=queue_id,
                                 born_timestamp=int(time.time() * 1000),
                                 properties=encode_properties({"TAGS": "TagA", **props}), batch=batch is not None)
    if batch is not None:
        body = encode_batch([BatchItem(b, {"TAGS": "TagB"}) for b in batch])
        return RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, h.to_v2().to_ext(), body)
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_v2().to_ext(), body)


def pull(topic: str, queue_id: int) -> RemotingCommand:
    h = PullMessageRequestHeader(consumer_group="G", topic=topic, queue_id=queue_id, queue_offset=0, max_msg_nums=64,
                                 sys_flag=0x4, subscription="*")
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext())


def test_sends_read_together_are_answered_one_by_one_and_stored_in_order(emulator):
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            alone = await c.request(send("Run", 0, b"first"))  # creates the topic; answered by the run of one
            assert alone.code == ResponseCode.SUCCESS, alone.remark
            binary = send("Run", 0, b"q0-c")
            binary.serialize_type = SerializeType.ROCKETMQ
            oneway = send("Run", 1, b"q1-oneway")
            oneway.flag |= 2
            reqs = [send("Run", 0, b"q0-a"), send("Run", 1, b"q1-a"),
                    send("Run", 0, b"delayed", DELAY="1"),
                    send("Run", 1, b"", batch=[b"q1-b1", b"q1-b2", b"q1-b3"]),
                    send("Run", 99, b"bad queue"),
                    send("Run", 0, b"q0-b", WAIT="true", KEYS="k1 k2"),
                    oneway, binary,
                    send("SCHEDULE_TOPIC_XXXX", 0, b"forbidden"),
                    send("Run", 1, b"q1-c")]
            loop = asyncio.get_running_loop()
            futures = []
            for r in reqs:
                futures.append(loop.create_future())
                c.pending[r.opaque] = futures[-1]
            c.write_raw(b"".join(encode_command_bytes(r) for r in reqs))  # one write: the broker reads them together
            answers = {r.opaque: await asyncio.wait_for(f, 5) for r, f in zip(reqs, futures) if not r.flag & 2}
            await c.request(send("Run", 2, b"after"))  # one round trip later, the oneway request is still unanswered
            assert not futures[reqs.index(oneway)].done()
            pulled = {q: await c.request(pull("Run", q)) for q in (0, 1)}
            return alone, reqs, answers, pulled

    alone, reqs, answers, pulled = asyncio.run(scenario())
    codes = [answers[r.opaque].code if r.opaque in answers else None for r in reqs]
    assert codes == [ResponseCode.SUCCESS, ResponseCode.SUCCESS, ResponseCode.SUCCESS, ResponseCode.SUCCESS,
                     ResponseCode.SYSTEM_ERROR, ResponseCode.SUCCESS, None, ResponseCode.SUCCESS,
                     ResponseCode.NO_PERMISSION, ResponseCode.SUCCESS]
    assert "queueId[99] is illegal" in answers[reqs[4].opaque].remark
    # a message stored in a run is answered exactly as one sent alone: same fields, its own offsets and msgId
    for r in (reqs[0], reqs[1], reqs[5], reqs[9]):
        a = answers[r.opaque]
        assert a.is_response and a.serialize_type == SerializeType.JSON and a.language == "JAVA"
        assert set(a.ext_fields) == set(alone.ext_fields) == {"msgId", "queueId", "queueOffset", "MSG_REGION",
                                                              "TRACE_ON"}
    assert answers[reqs[7].opaque].serialize_type == SerializeType.ROCKETMQ  # answered in the request's form
    # each queue holds its messages in the order they were written
    bodies = {q: [m.body for m in decode_messages(p.body)] for q, p in pulled.items()}
    assert bodies[0] == [b"first", b"q0-a", b"q0-b", b"q0-c"]
    assert bodies[1] == [b"q1-a", b"q1-b1", b"q1-b2", b"q1-b3", b"q1-oneway", b"q1-c"]
    by_body = {m.body: m for q in (0, 1) for m in decode_messages(pulled[q].body)}
    for r, body in ((reqs[0], b"q0-a"), (reqs[5], b"q0-b"), (reqs[9], b"q1-c"), (reqs[7], b"q0-c")):
        a, m = answers[r.opaque], by_body[body]
        assert int(a.ext_fields["queueOffset"]) == m.queue_offset
        assert a.ext_fields["msgId"] == create_message_id(m.store_host, m.store_port, m.commit_log_offset)
    assert by_body[b"q0-b"].keys == "k1 k2" and "WAIT" not in by_body[b"q0-b"].properties
    assert by_body[b"q0-b"].properties["CLUSTER"] == "DefaultCluster"
