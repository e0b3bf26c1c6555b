"""The 5.3.3 proxy's rules the gRPC endpoint follows (broker/grpc/validate.py, topic attributes): the queue of a
message group (Guava's consistent hashing, checked against the real proxy's choices), the topic message type
check, and the `message.type` attribute as UPDATE_AND_CREATE_TOPIC's `attributes` header sets it."""

from __future__ import annotations

import pytest

from rocketmq_emulator.broker.grpc.validate import Failure, check_message_type, fifo_queue
from rocketmq_emulator.broker.state.topic_config import alter_attributes, topic_message_type
from rocketmq_emulator.protocol import BrokerError
from rocketmq_emulator.protocol.admin_bodies import TopicConfig


def test_a_message_group_lands_on_the_queue_the_real_proxy_picked():
    # seen on the real 5.3.3 proxy with 8 write queues (tests/parity/snapshots_grpc/fifo.json and send.json)
    seen = {"g-1": 3, "g-2": 5, "g-3": 5, "g-4": 1, "g-5": 5, "g-6": 0, "g-7": 6, "g-8": 2, "order-1": 3,
            "order-5": 1, "a-very-long-message-group-name-0123456789": 1}
    assert {g: fifo_queue(g, 8) for g in seen} == seen
    assert {fifo_queue(g, 1) for g in seen} == {0}


def test_the_message_type_must_be_the_topics_and_mixed_takes_all():
    check_message_type("NORMAL", {})
    check_message_type("FIFO", {"__SHARDINGKEY": "g"})
    check_message_type("MIXED", {"TIMER_DELIVER_MS": "1"})
    with pytest.raises(Failure) as caught:
        check_message_type("NORMAL", {"TIMER_DELIVER_MS": "1", "__SHARDINGKEY": "g"})
    assert caught.value.message.endswith("the expected type is NORMAL, but actual type is DELAY")
    with pytest.raises(Failure, match="expected type is UNSPECIFIED, but actual type is TRANSACTION"):
        check_message_type(topic_message_type(None), {"TRAN_MSG": "true"})


def test_the_message_type_attribute_is_set_kept_removed_and_mixed_is_refused():
    assert topic_message_type(TopicConfig(topic_name="T")) == "NORMAL"
    attrs = alter_attributes(None, "+message.type=FIFO")
    assert topic_message_type(TopicConfig(topic_name="T", attributes=attrs)) == "FIFO"
    assert alter_attributes(attrs, None) == attrs  # an update without the header keeps them
    assert alter_attributes(attrs, "-message.type") is None
    with pytest.raises(BrokerError, match="MIXED message type is not supported."):
        alter_attributes(None, "+message.type=MIXED")
    with pytest.raises(BrokerError, match="unsupported key"):
        alter_attributes(None, "+colour=red")


async def test_update_and_create_topic_takes_5x_attributes_and_keeps_them_on_a_plain_update(tmp_path):
    from rocketmq_emulator.protocol import RequestCode, ResponseCode
    from rocketmq_emulator.testing.broker_harness import BrokerHarness

    def header(attributes: str | None = None) -> dict[str, str]:
        ext = {"topic": "Typed", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"}
        return {**ext, "attributes": attributes} if attributes is not None else ext

    async with BrokerHarness(tmp_path / "store") as harness:
        tcm = harness.broker.topic_config_manager
        made = await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, header("+message.type=DELAY"))
        assert made.code == ResponseCode.SUCCESS and topic_message_type(tcm.get("Typed")) == "DELAY"
        again = await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, header())  # a 4.x mqadmin's update
        assert again.code == ResponseCode.SUCCESS and topic_message_type(tcm.get("Typed")) == "DELAY"
        mixed = await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, header("+message.type=MIXED"))
        assert (mixed.code, mixed.remark) == (ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
        assert b'"attributes":{"message.type":"DELAY"}' in (tmp_path / "store" / "config" / "topics.json").read_bytes() \
            .replace(b" ", b"").replace(b"\n", b"").replace(b"\t", b"")


async def test_a_remoting_send_to_a_typed_topic_is_stored_whatever_its_type(tmp_path):
    """The type check is the proxy's (gRPC); a 5.x broker's remoting port stores any message. Asked of the real
    5.3.3 broker on 2026-11-27 (topics made with +message.type=FIFO / DELAY / TRANSACTION, then a plain
    SEND_MESSAGE_V2 to each, and a delayed one to the FIFO topic): SEND_OK every time."""
    from rocketmq_emulator.protocol import RequestCode, ResponseCode
    from rocketmq_emulator.testing.broker_harness import BrokerHarness
    async with BrokerHarness(tmp_path / "store") as harness:
        for topic, kind in (("TypedFifo", "FIFO"), ("TypedDelay", "DELAY"), ("TypedTx", "TRANSACTION")):
            made = await harness.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, {
                "topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6",
                "attributes": f"+message.type={kind}"})
            assert made.code == ResponseCode.SUCCESS
            assert (await harness.send(topic, b"normal")).code == ResponseCode.SUCCESS
        delayed = await harness.send("TypedFifo", b"delayed", properties={"DELAY": "2"})
        assert delayed.code == ResponseCode.SUCCESS
