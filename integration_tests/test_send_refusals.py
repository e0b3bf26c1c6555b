"""Sends the broker refuses get the same code and remark whether they arrive alone or read together with other
sends (one send path: SendMessageCore.send and send_run), and the plain sends between them are stored."""

from __future__ import annotations

import asyncio
import time

from integration_tests.rawclient import RawClient
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.frame import encode_command_bytes
from rocketmq_emulator.protocol.headers import SendMessageRequestHeader
from rocketmq_emulator.protocol.message import BatchItem, encode_batch, encode_properties


def send(topic: str, body: bytes = b"b", props: dict[str, str] | None = None, *, queue_id: int = 0,
         sys_flag: int = 0, batch: list[tuple[bytes, dict[str, str]]] | None = None) -> RemotingCommand:
    h = SendMessageRequestHeader(producer_group="PG", topic=topic, queue_id=queue_id,
                                 born_timestamp=int(time.time() * 1000), sys_flag=sys_flag,
                                 properties=encode_properties(props) if props else None, batch=batch is not None)
    if batch is not None:
        body = encode_batch([BatchItem(b, p) for b, p in batch])
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_v2().to_ext(), body)


def requests() -> list[RemotingCommand]:
    long_value = "x" * 32760
    return [send("Refusals", b"ok-1"),
            send("Refusals", props={"A": long_value}),  # properties over 32767 once CLUSTER is added
            send("Refusals", props={"A": long_value, "DELAY": "1"}),
            send("Refusals", batch=[(b"b", {"A": "x" * 32758})]),
            send("Refusals", b"x" * 1025),
            send("Refusals", b"x" * 1025, {"DELAY": "1"}),
            send("Refusals", batch=[(b"x" * 600, {}), (b"y" * 600, {})]),
            send("Refusals", props={"TRAN_MSG": "true", "PGROUP": "p"}, sys_flag=0x4),
            send("Refusals", batch=[(b"t", {})], sys_flag=0x4),
            send("%RETRY%G", batch=[(b"r", {})]),
            send("Refusals", queue_id=99),
            send("SCHEDULE_TOPIC_XXXX"),
            send("Refusals", b"ok-2")]


def test_refused_sends_are_answered_alike_alone_and_read_together(emulator_factory):
    emu = emulator_factory(max_message_size=1024, reject_transaction_message=True)

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emu.broker_port) as c:
            alone = [await c.request(r) for r in requests()]
            together = requests()
            futures = []
            for r in together:
                futures.append(asyncio.get_running_loop().create_future())
                c.pending[r.opaque] = futures[-1]
            c.write_raw(b"".join(encode_command_bytes(r) for r in together))  # one read: the run handler
            return alone, [await asyncio.wait_for(f, 5) for f in futures]

    alone, together = asyncio.run(scenario())
    assert [(a.code, a.remark) for a in alone] == [(a.code, a.remark) for a in together]
    illegal = ResponseCode.MESSAGE_ILLEGAL
    assert [(a.code, a.remark) for a in alone] == [
        (ResponseCode.SUCCESS, None),
        *[(illegal, "the message is illegal, maybe msg body or properties length not matched. msg body length limit "
                    "1024B, msg properties length limit 32KB.")] * 6,  # properties, delayed, batch item; bodies
        (ResponseCode.NO_PERMISSION, "the broker[127.0.0.1] sending transaction message is forbidden"),
        (illegal, "the message is illegal, maybe msg body or properties length not matched. msg body length limit "
                  "1024B, msg properties length limit 32KB."),  # a transactional batch, as 4.9.8's store refuses it
        (ResponseCode.SUCCESS, None),  # a batch to a retry topic is stored as any batch (4.9.8)
        (ResponseCode.SYSTEM_ERROR, "request queueId[99] is illegal, TopicConfig [topicName=Refusals, readQueueNums=4, "
                                    "writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false] Producer: "
                                    f"{alone[10].remark.rsplit(' ', 1)[-1]}"),
        (ResponseCode.NO_PERMISSION, "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."),
        (ResponseCode.SUCCESS, None)]
    assert alone[10].remark.rsplit(" ", 1)[-1].startswith("127.0.0.1:")
    offsets = [int(a.ext_fields["queueOffset"]) for a in alone + together if a.code == ResponseCode.SUCCESS]
    assert offsets == [0, 0, 1, 2, 1, 3]  # Refusals 0, %RETRY%G 0, Refusals 1; then 2, %RETRY%G 1, 3
