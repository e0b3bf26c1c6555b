"""The client's one table of the requests brokers send it (`ClientRemotingProcessor`), without sockets: each
request goes through the client instance's own dispatch table on a connection fed frames by hand, and the
answers are read back from what the connection writes."""

from __future__ import annotations

import asyncio

import pytest

from rocketmq_emulator.client.config import ClientConfig
from rocketmq_emulator.client.consumer_requests import PullConsumerRequests
from rocketmq_emulator.client.instance import ClientInstance
from rocketmq_emulator.client.remoting_processor import ClientRemotingProcessor
from rocketmq_emulator.protocol import FrameDecoder, RemotingCommand, RequestCode, ResponseCode, bodies
from rocketmq_emulator.protocol.admin_bodies import GetConsumerStatusBody, ResetOffsetBody
from rocketmq_emulator.protocol.bodies import CMResult, ConsumeMessageDirectlyResult, MessageQueue
from rocketmq_emulator.protocol.frame import encode_command_bytes
from rocketmq_emulator.protocol.headers import (CheckTransactionStateRequestHeader,
                                                ConsumeMessageDirectlyResultRequestHeader, ReplyMessageRequestHeader,
                                                GetConsumerRunningInfoRequestHeader, GetConsumerStatusRequestHeader,
                                                NotifyConsumerIdsChangedRequestHeader, ResetOffsetRequestHeader)
from rocketmq_emulator.protocol.message import MessageExt
from rocketmq_emulator.protocol.transport import RemotingConnection

CLIENT_ID = "127.0.0.1@processor-test"


class FakeConsumer:
    """A registered consumer whose answers name its group, and which records what it was asked."""

    def __init__(self, group: str, *, started: bool = True) -> None:
        self.group = group
        self.started = started
        self.calls: list[tuple] = []

    def server_requests(self) -> FakeConsumer | None:
        return self if self.started else None

    def rebalance_now(self) -> None:
        self.calls.append(("rebalance",))

    def reset_offset(self, topic: str, offset_table: dict[MessageQueue, int]) -> None:
        self.calls.append(("reset", topic, offset_table))

    def consumer_status(self, topic: str) -> dict[MessageQueue, int]:
        return {MessageQueue(topic, self.group, 0): 7}

    def running_info(self) -> ConsumeMessageDirectlyResult:  # any body with encode()
        return ConsumeMessageDirectlyResult(remark=f"running info of {self.group}")

    async def consume_message_directly(self, msg) -> ConsumeMessageDirectlyResult:
        self.calls.append(("consume", msg.topic, msg.body, msg.message_queue))
        return ConsumeMessageDirectlyResult(consume_result=CMResult.CR_SUCCESS, remark=self.group)


class FakeTransport:
    def __init__(self) -> None:
        self.written = bytearray()

    def get_extra_info(self, name: str, default=None):
        return default

    def write(self, data: bytes) -> None:
        self.written += data

    def writelines(self, segments) -> None:
        for s in segments:
            self.written += s

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


class Wire:
    """One client connection of `instance`, as if a broker were at the other end."""

    def __init__(self, instance: ClientInstance) -> None:
        self.conn = RemotingConnection(instance.remoting.table, name="client", addr="127.0.0.1:10911")
        self.transport = FakeTransport()
        self.conn.connection_made(self.transport)  # type: ignore[arg-type]

    async def ask(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"", *,
                  oneway: bool = False) -> RemotingCommand | None:
        """Send a request; its answer, or None when none comes."""
        cmd = RemotingCommand.request(code, ext, body, oneway=oneway)
        self.transport.written.clear()
        self.conn.data_received(encode_command_bytes(cmd))
        for _ in range(50):
            if self.transport.written:
                break
            await asyncio.sleep(0.001)
        decoder = FrameDecoder()
        decoder.feed(bytes(self.transport.written))
        answers = list(decoder)
        assert len(answers) <= 1 and all(a.is_response and a.opaque == cmd.opaque for a in answers), answers
        return answers[0] if answers else None


@pytest.fixture
async def world():
    instance = ClientInstance(CLIENT_ID, ClientConfig(namesrv="127.0.0.1:1"))
    consumers = {g: FakeConsumer(g) for g in ("A", "B")}
    for group, consumer in consumers.items():
        instance.register_consumer(group, consumer)  # type: ignore[arg-type]
    yield instance, consumers, Wire(instance)
    instance.remoting.close()


def test_one_table_with_the_java_header_classes():
    table = ClientRemotingProcessor(CLIENT_ID, {}).table
    assert {code: header for code, (header, _) in table.items()} == {
        RequestCode.CHECK_TRANSACTION_STATE: CheckTransactionStateRequestHeader,
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: NotifyConsumerIdsChangedRequestHeader,
        RequestCode.RESET_CONSUMER_CLIENT_OFFSET: ResetOffsetRequestHeader,
        RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT: GetConsumerStatusRequestHeader,
        RequestCode.GET_CONSUMER_RUNNING_INFO: GetConsumerRunningInfoRequestHeader,
        RequestCode.CONSUME_MESSAGE_DIRECTLY: ConsumeMessageDirectlyResultRequestHeader,
        RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT: ReplyMessageRequestHeader,
    }


async def test_the_group_is_the_typed_header_field(world):
    """`group` for status and reset, `consumerGroup` for the others, whatever else the header carries."""
    instance, consumers, wire = world
    both = {"consumerGroup": "A", "group": "B"}
    status = await wire.ask(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, {"topic": "T", **both})
    assert status is not None and status.code == ResponseCode.SUCCESS, status
    assert GetConsumerStatusBody.decode(status.body).message_queue_table == {MessageQueue("T", "B", 0): 7}

    info = await wire.ask(RequestCode.GET_CONSUMER_RUNNING_INFO, {"clientId": CLIENT_ID, **both})
    assert info is not None and bodies.loads(info.body)["remark"] == "running info of A"

    table = {MessageQueue("T", "broker-a", 1): 5}
    reset = await wire.ask(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, {"topic": "T", "timestamp": "0", **both},
                           ResetOffsetBody(offset_table=table).encode(), oneway=True)
    assert reset is None  # oneway: never answered
    assert consumers["B"].calls == [("reset", "T", table)] and consumers["A"].calls == []

    assert await wire.ask(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, both, oneway=True) is None
    assert consumers["A"].calls == [("rebalance",)] and consumers["B"].calls == [("reset", "T", table)]


async def test_consume_message_directly_decodes_the_stored_message(world):
    _, consumers, wire = world
    record = MessageExt(topic="T", body=b"hello", queue_id=3, properties={"TAGS": "x"}).encode()
    answer = await wire.ask(RequestCode.CONSUME_MESSAGE_DIRECTLY,
                            {"consumerGroup": "A", "clientId": CLIENT_ID, "msgId": "00", "brokerName": "bk"}, record)
    assert answer is not None and answer.code == ResponseCode.SUCCESS, answer
    result = ConsumeMessageDirectlyResult.decode(answer.body)
    assert (result.consume_result, result.remark) == (CMResult.CR_SUCCESS, "A")
    assert consumers["A"].calls == [("consume", "T", b"hello", MessageQueue("T", "bk", 3))]

    empty = await wire.ask(RequestCode.CONSUME_MESSAGE_DIRECTLY, {"consumerGroup": "A"})
    assert empty is not None and (empty.code, empty.remark) == (ResponseCode.SYSTEM_ERROR,
                                                                "no message in the request body")


async def test_unknown_group_and_consumer_not_started(world):
    instance, _, wire = world
    for code, ext in ((RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "Z", "clientId": CLIENT_ID}),
                      (RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, {"group": "Z", "topic": "T"}),
                      (RequestCode.CONSUME_MESSAGE_DIRECTLY, {"consumerGroup": "Z"}),
                      (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "Z"})):
        answer = await wire.ask(code, ext)
        assert answer is not None and answer.code == ResponseCode.SYSTEM_ERROR, (code, answer)
        assert answer.remark == "The Consumer Group <Z> not exist in this consumer"
    instance.register_consumer("S", FakeConsumer("S", started=False))  # type: ignore[arg-type]
    answer = await wire.ask(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "S", "clientId": CLIENT_ID})
    assert answer is not None and (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR,
                                                                   "consumer 'S' is not started")


async def test_unknown_code_and_malformed_headers_get_clear_answers(world, caplog):
    _, consumers, wire = world
    unknown = await wire.ask(999, {"consumerGroup": "A"})
    assert unknown is not None and unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert unknown.remark == " request type 999 not supported"
    # a broker's request that only brokers answer (PULL_MESSAGE) is not a client's
    pull = await wire.ask(RequestCode.PULL_MESSAGE, {})
    assert pull is not None and pull.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

    cases = [
        (RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "A"}, "GET_CONSUMER_RUNNING_INFO", "`clientId`"),
        (RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, {"consumerGroup": "A", "topic": "T"},
         "GET_CONSUMER_STATUS_FROM_CLIENT", "`group`"),
        (RequestCode.RESET_CONSUMER_CLIENT_OFFSET, {"group": "A", "topic": "T", "timestamp": "soon"},
         "RESET_CONSUMER_CLIENT_OFFSET", "'soon'"),
        (RequestCode.CONSUME_MESSAGE_DIRECTLY, None, "CONSUME_MESSAGE_DIRECTLY", "`consumerGroup`"),
        (RequestCode.CHECK_TRANSACTION_STATE, {"commitLogOffset": "x"}, "CHECK_TRANSACTION_STATE", "Offset"),
        (RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, {}, "PUSH_REPLY_MESSAGE_TO_CLIENT", "`producerGroup`"),
    ]
    for code, ext, name, field in cases:
        answer = await wire.ask(code, ext)
        assert answer is not None and answer.code == ResponseCode.SYSTEM_ERROR, (code, answer)
        assert answer.remark.startswith(f"bad {name} request: ") and field in answer.remark, answer.remark
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    assert all(c.calls == [] for c in consumers.values())


async def test_a_reset_body_that_cannot_be_read_is_ignored(world, caplog):
    _, consumers, wire = world
    answer = await wire.ask(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, {"group": "A", "topic": "T", "timestamp": "0"},
                            b"{not json", oneway=True)
    assert answer is None and consumers["A"].calls == []
    assert any("cannot be read" in r.getMessage() for r in caplog.records)


async def test_check_transaction_state_is_not_answered(world):
    _, _, wire = world
    ext = {"tranStateTableOffset": "1", "commitLogOffset": "2", "msgId": "AB"}
    assert await wire.ask(RequestCode.CHECK_TRANSACTION_STATE, ext) is None


async def test_pull_consumer_answers():
    processor = ClientRemotingProcessor(CLIENT_ID, {"P": _Pull(PullConsumerRequests("P", "127.0.0.1:9876", 42))})
    status = await processor.process(RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
                                                             {"group": "P", "topic": "T"}))
    assert status is not None and GetConsumerStatusBody.decode(status.body).message_queue_table == {}
    info = await processor.process(RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO,
                                                           {"consumerGroup": "P", "clientId": CLIENT_ID}))
    assert info is not None and info.code == ResponseCode.SUCCESS
    props = bodies.loads(info.body)["properties"]
    assert (props["PROP_CONSUME_TYPE"], props["PROP_CONSUMER_START_TIMESTAMP"]) == ("CONSUME_ACTIVELY", "42")
    record = MessageExt(topic="T", body=b"x").encode()
    direct = await processor.process(RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY,
                                                             {"consumerGroup": "P"}, record))
    assert direct is not None and (direct.code, direct.remark) == (
        ResponseCode.SYSTEM_ERROR, "P is a pull consumer: it has nothing to say to that")
    for code, ext in ((RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "P"}),
                      (RequestCode.RESET_CONSUMER_CLIENT_OFFSET, {"group": "P", "topic": "T", "timestamp": "0"})):
        assert await processor.process(RemotingCommand.request(code, ext)) is None


class _Pull:
    def __init__(self, requests: PullConsumerRequests) -> None:
        self.requests = requests

    def server_requests(self) -> PullConsumerRequests:
        return self.requests
