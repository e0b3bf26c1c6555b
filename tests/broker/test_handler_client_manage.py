"""HEART_BEAT, UNREGISTER_CLIENT, the group's connections and queue locks (broker/handlers/client_manage.py)
without sockets."""

from __future__ import annotations

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import TopicConfigSerializeWrapper
from rocketmq_emulator.protocol.bodies import (CheckClientRequestBody, ConsumerConnection,
                                               GetConsumerListByGroupResponseBody, LockBatchRequestBody,
                                               LockBatchResponseBody, MessageModel, MessageQueue, ProducerConnection,
                                               SubscriptionData, UnlockBatchRequestBody)
from rocketmq_emulator.protocol.headers import (GetProducerConnectionListRequestHeader, GroupRequestHeader,
                                                UnregisterClientRequestHeader)

R = ResponseCode


async def consumer_ids(broker, group="G"):
    r = await broker.ask(RequestCode.GET_CONSUMER_LIST_BY_GROUP, GroupRequestHeader(consumer_group=group))
    return sorted(GetConsumerListByGroupResponseBody.decode(r.body).consumer_id_list) if r.code == R.SUCCESS \
        else (r.code, r.remark)


async def test_a_heartbeat_registers_the_group_its_subscription_and_its_retry_topic(harness):
    assert await consumer_ids(harness) == (R.SYSTEM_ERROR, "no consumer for this group, G")
    assert (await harness.heartbeat("G", "Orders", sub_string="A || B")).code == R.SUCCESS
    assert await consumer_ids(harness) == [harness.client.client_id]
    r = await harness.ask(RequestCode.GET_CONSUMER_CONNECTION_LIST, GroupRequestHeader(consumer_group="G"))
    connection = ConsumerConnection.decode(r.body)
    assert connection.message_model == MessageModel.CLUSTERING
    assert connection.subscription_table["Orders"].sub_string == "A || B"
    [conn] = connection.connection_set
    assert (conn.client_id, conn.client_addr) == (harness.client.client_id, harness.client.addr)
    topics = TopicConfigSerializeWrapper.decode((await harness.ask(RequestCode.GET_ALL_TOPIC_CONFIG)).body)
    assert topics.topic_config_table["%RETRY%G"].read_queue_nums == 1


async def test_a_second_member_makes_the_broker_notify_the_first(harness):
    await harness.heartbeat("G", "Orders")
    other = harness.connect("127.0.0.2@other")
    await harness.heartbeat("G", "Orders", channel=other)
    assert await consumer_ids(harness) == sorted([harness.client.client_id, "127.0.0.2@other"])
    notified = [c for c in harness.client.requests if c.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED]
    assert notified and notified[-1].ext("consumerGroup") == "G" and notified[-1].is_oneway


async def test_unregister_removes_the_member(harness):
    await harness.heartbeat("G", "Orders", producer_group="P")
    r = await harness.ask(RequestCode.UNREGISTER_CLIENT, UnregisterClientRequestHeader(
        client_id=harness.client.client_id, consumer_group="G", producer_group="P"))
    assert r.code == R.SUCCESS
    assert await consumer_ids(harness) == (R.SYSTEM_ERROR, "no consumer for this group, G")
    producers = await harness.ask(RequestCode.GET_PRODUCER_CONNECTION_LIST,
                                  GetProducerConnectionListRequestHeader(producer_group="P"))
    assert (producers.code, producers.remark) == (R.SYSTEM_ERROR, "the producer group[P] not exist")


async def test_a_closed_connection_takes_its_member_away(harness):
    leaving = harness.connect("127.0.0.3@leaving")
    await harness.heartbeat("G", "Orders", channel=leaving)
    await harness.heartbeat("G", "Orders")
    leaving.close()
    assert await consumer_ids(harness) == [harness.client.client_id]
    offline = await harness.ask(RequestCode.GET_CONSUMER_CONNECTION_LIST, GroupRequestHeader(consumer_group="H"))
    assert (offline.code, offline.remark) == (R.CONSUMER_NOT_ONLINE, "the consumer group[H] not online")


async def test_a_producer_heartbeat_lists_its_connection(harness):
    await harness.heartbeat("", producer_group="P")
    r = await harness.ask(RequestCode.GET_PRODUCER_CONNECTION_LIST,
                          GetProducerConnectionListRequestHeader(producer_group="P"))
    [conn] = ProducerConnection.decode(r.body).connection_set
    assert conn.client_id == harness.client.client_id


async def test_a_sql_filter_is_refused_by_the_client_config_check(harness):
    body = CheckClientRequestBody(client_id="c", group="G", subscription_data=SubscriptionData(
        topic="Orders", sub_string="a > 1", expression_type="SQL92"))
    r = await harness.ask(RequestCode.CHECK_CLIENT_CONFIG, body=body.encode())
    assert r.code == R.SYSTEM_ERROR and r.remark == "The broker does not support consumer to filter message by SQL92"
    tag = CheckClientRequestBody(client_id="c", group="G", subscription_data=SubscriptionData(topic="Orders",
                                                                                             sub_string="A"))
    assert (await harness.ask(RequestCode.CHECK_CLIENT_CONFIG, body=tag.encode())).code == R.SUCCESS


async def test_a_locked_queue_is_not_granted_to_another_client_until_unlocked(harness):
    q0, q1 = MessageQueue("Orders", "broker-a", 0), MessageQueue("Orders", "broker-a", 1)

    async def lock(client_id, *queues):
        r = await harness.ask(RequestCode.LOCK_BATCH_MQ, body=LockBatchRequestBody(
            consumer_group="G", client_id=client_id, mq_set=set(queues)).encode())
        return LockBatchResponseBody.decode(r.body).lock_ok_mq_set

    assert await lock("a", q0) == {q0}
    assert await lock("b", q0, q1) == {q1}
    r = await harness.ask(RequestCode.UNLOCK_BATCH_MQ, body=UnlockBatchRequestBody(
        consumer_group="G", client_id="a", mq_set={q0}).encode())
    assert r.code == R.SUCCESS
    assert await lock("b", q0) == {q0}
