"""CONSUMER_SEND_MSG_BACK (broker/handlers/consumer_send_back.py) without sockets: a message a consumer failed
goes to `%RETRY%<group>` after a delay level, or to `%DLQ%<group>` once it was retried its maximum times."""

from __future__ import annotations

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import TopicConfigSerializeWrapper
from rocketmq_emulator.protocol.headers import ConsumerSendMsgBackRequestHeader, QueueRequestHeader
from rocketmq_emulator.protocol.message import decode_message_id, decode_messages
from rocketmq_emulator.protocol.topics import SCHEDULE_TOPIC
from rocketmq_emulator.testing.broker_harness import BrokerHarness

R = ResponseCode


async def stored_offset(broker, body=b"failed", tags="A") -> tuple[int, str]:
    """Send one message; its commitlog offset and message id (what a consumer sends back)."""
    r = await broker.send("Orders", body, tags=tags, keys="k1")
    msg_id = r.ext("msgId")
    return decode_message_id(msg_id)[2], msg_id


def back(offset, msg_id="", group="G", delay_level=0, max_reconsume_times=None):
    return ConsumerSendMsgBackRequestHeader(offset=offset, group=group, delay_level=delay_level,
                                            origin_msg_id=msg_id or None, origin_topic="Orders",
                                            max_reconsume_times=max_reconsume_times)


async def max_offset(broker, topic, queue_id=0) -> int:
    r = await broker.ask(RequestCode.GET_MAX_OFFSET, QueueRequestHeader(topic=topic, queue_id=queue_id))
    return int(r.ext("offset"))


async def test_a_first_failure_is_parked_for_its_retry_delay(harness):
    offset, msg_id = await stored_offset(harness)
    r = await harness.ask(RequestCode.CONSUMER_SEND_MSG_BACK, back(offset, msg_id))
    assert r.code == R.SUCCESS
    # delay level 0: the broker's own, 3 + reconsume times -> level 3, parked in SCHEDULE_TOPIC_XXXX queue 2
    parked = await harness.pull("schedule-reader", SCHEDULE_TOPIC, 2, 0)
    [msg] = decode_messages(parked.body)
    assert msg.body == b"failed" and msg.reconsume_times == 1
    assert msg.properties["REAL_TOPIC"] == "%RETRY%G" and msg.properties["DELAY"] == "3"
    assert msg.properties["ORIGIN_MESSAGE_ID"] == msg_id and msg.properties["RETRY_TOPIC"] == "Orders"
    topics = TopicConfigSerializeWrapper.decode((await harness.ask(RequestCode.GET_ALL_TOPIC_CONFIG)).body)
    assert "%RETRY%G" in topics.topic_config_table


async def test_after_max_reconsume_times_it_goes_to_the_dead_letter_queue(harness):
    offset, msg_id = await stored_offset(harness)
    r = await harness.ask(RequestCode.CONSUMER_SEND_MSG_BACK, back(offset, msg_id, max_reconsume_times=0))
    assert r.code == R.SUCCESS
    dlq = await harness.pull("dlq-reader", "%DLQ%G", 0, 0)
    [msg] = decode_messages(dlq.body)
    assert (msg.body, msg.tags, msg.keys) == (b"failed", "A", "k1")
    # as 4.9.8 stores it (parity corpus send_stored_messages): DELAY 0 and WAIT false kept in the record
    assert msg.properties["DELAY"] == "0" and msg.properties["WAIT"] == "false"
    assert msg.properties["ORIGIN_MESSAGE_ID"] == msg_id
    assert await max_offset(harness, SCHEDULE_TOPIC, 2) == 0  # not parked


async def test_a_negative_delay_level_sends_it_to_the_dead_letter_queue_at_once(harness):
    offset, _ = await stored_offset(harness)
    await harness.ask(RequestCode.CONSUMER_SEND_MSG_BACK, back(offset, delay_level=-1))
    assert await max_offset(harness, "%DLQ%G") == 1


async def test_an_unknown_group_is_refused(tmp_path):
    async with BrokerHarness(tmp_path, autoCreateSubscriptionGroup=False) as broker:
        offset, _ = await stored_offset(broker)
        r = await broker.ask(RequestCode.CONSUMER_SEND_MSG_BACK, back(offset, group="Nobody"))
    assert (r.code, r.remark) == (R.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group not exist, Nobody")


async def test_an_offset_with_no_message_is_refused(harness):
    await stored_offset(harness)
    r = await harness.ask(RequestCode.CONSUMER_SEND_MSG_BACK, back(123456))
    assert (r.code, r.remark) == (R.SYSTEM_ERROR, "look message by offset failed, 123456")


async def test_a_broker_without_write_permission_refuses(tmp_path):
    async with BrokerHarness(tmp_path, brokerPermission=4) as broker:  # read only
        r = await broker.ask(RequestCode.CONSUMER_SEND_MSG_BACK, back(0))
    assert r.code == R.NO_PERMISSION and r.remark == "the broker[127.0.0.1] sending message is forbidden"


async def test_origin_message_id_is_the_stored_messages_offset_id_not_the_clients_uniq_key(harness):
    """4.9.8 writes the offset msgId of the message it looked up (a Java client sends its UNIQ_KEY as the header's
    originMsgId; the parity client scenario java_retries_to_dlq saw the real broker ignore it)."""
    uniq = "FD00000000000000000000000000000246534E0E2F2A857E7ED40000"
    r = await harness.send("Orders", b"failed", tags="A", properties={"UNIQ_KEY": uniq})
    offset_id = r.ext("offsetMsgId") or r.ext("msgId")
    offset = decode_message_id(offset_id)[2]
    assert (await harness.ask(RequestCode.CONSUMER_SEND_MSG_BACK, back(offset, uniq, max_reconsume_times=0))).code == 0
    [msg] = decode_messages((await harness.pull("dlq-reader", "%DLQ%G", 0, 0)).body)
    assert msg.properties["ORIGIN_MESSAGE_ID"] == offset_id != uniq
