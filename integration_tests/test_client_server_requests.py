"""Requests the broker sends to a client over the client's own connection (§3.1): NOTIFY_CONSUMER_IDS_CHANGED,
RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_STATUS_FROM_CLIENT, GET_CONSUMER_RUNNING_INFO and
CONSUME_MESSAGE_DIRECTLY, sent here through the broker's connection object exactly as the broker would."""

from __future__ import annotations

from rocketmq_emulator.client import FIRST_OFFSET, Admin, ConsumeResult, Producer, PushConsumer, RebalanceListener
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode, bodies
from rocketmq_emulator.protocol.admin_bodies import GetConsumerStatusBody, ResetOffsetBody
from rocketmq_emulator.protocol.bodies import CMResult, ConsumeMessageDirectlyResult, MessageQueue
from rocketmq_emulator.protocol.headers import ResetOffsetRequestHeader
from rocketmq_emulator.testing.emulator_thread import held_pulls
from rocketmq_emulator.testing.waits import wait_for

TOPIC = "SrvTopic"
GROUP = "srv_group"


def invoke_on_client(emu, group: str, cmd: RemotingCommand) -> RemotingCommand:
    """Send `cmd` from the broker to the (only) client of `group` and wait for the answer."""
    async def run() -> RemotingCommand:
        gi = emu.broker.consumer_manager.get(group)
        (conn,) = gi.channels
        return await conn.invoke(cmd, 5.0)
    return emu.run(run())


async def test_server_requests(emulator):
    ns = emulator.namesrv_addr
    async with Admin(ns) as admin:
        await admin.create_topic(TOPIC, 2, 2)
    async with Producer("srv_producer", namesrv=ns) as p:
        sent = [await p.send(TOPIC, f"s{i}", tags="TagS") for i in range(6)]
    consumed = []
    events: list[tuple[str, set]] = []

    class Listener(RebalanceListener):
        def on_queues_revoked(self, queues):
            events.append(("revoked", queues))

        async def on_queues_assigned(self, queues):
            events.append(("assigned", queues))

    consumer = PushConsumer(GROUP, namesrv=ns, consume_from=FIRST_OFFSET, rebalance_listener=Listener())
    consumer.subscribe(TOPIC, "TagS")

    @consumer.on_message
    def handle(msg):
        consumed.append(msg.text)
        return ConsumeResult.RECONSUME_LATER if msg.text == "later" else ConsumeResult.SUCCESS

    async with consumer:
        assert await wait_for(lambda: len(consumed) == 6, 20)
        await consumer.persist_consumer_offsets()

        # GET_CONSUMER_STATUS_FROM_CLIENT: the in-memory offsets of the topic's queues
        cmd = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, {"topic": TOPIC, "group": GROUP})
        response = await _to_thread(invoke_on_client, emulator, GROUP, cmd)
        assert response.code == ResponseCode.SUCCESS
        table = GetConsumerStatusBody.decode(response.body).message_queue_table
        assert table == {MessageQueue(TOPIC, "broker-a", q): 3 for q in range(2)}

        # GET_CONSUMER_RUNNING_INFO: fastjson with object-form queue keys
        cmd = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO,
                                      {"consumerGroup": GROUP, "clientId": consumer.client_id})
        response = await _to_thread(invoke_on_client, emulator, GROUP, cmd)
        info = bodies.loads(response.body)
        assert info["properties"]["PROP_CONSUMEORDERLY"] == "false"
        assert {mq for mq in info["mqTable"]} == consumer.assignment()
        assert info["mqTable"][MessageQueue(TOPIC, "broker-a", 0)]["commitOffset"] == 3
        assert {s["topic"] for s in info["subscriptionSet"]} == {TOPIC, "%RETRY%" + GROUP}

        # CONSUME_MESSAGE_DIRECTLY: the broker puts the message in the body
        record = emulator.call(lambda: bytes(emulator.broker.store.select_one_message_by_offset(
            int(sent[0].offset_msg_id[-16:], 16))))
        cmd = RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY,
                                      {"consumerGroup": GROUP, "clientId": consumer.client_id,
                                       "msgId": sent[0].offset_msg_id, "brokerName": "broker-a"}, record)
        response = await _to_thread(invoke_on_client, emulator, GROUP, cmd)
        result = ConsumeMessageDirectlyResult.decode(response.body)
        assert result.consume_result is CMResult.CR_SUCCESS and result.auto_commit and not result.order
        assert consumed[-1] == "s0"

        # an unknown request: REQUEST_CODE_NOT_SUPPORTED
        response = await _to_thread(invoke_on_client, emulator, GROUP, RemotingCommand.request(999))
        assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

        # RESET_CONSUMER_CLIENT_OFFSET (oneway): back to offset 1 of queue 0; the consumer re-consumes 2 messages
        before = len(consumed)
        assert await wait_for(lambda: held_pulls(emulator, TOPIC) >= 2, 20)
        header = ResetOffsetRequestHeader(topic=TOPIC, group=GROUP, timestamp=0, is_force=True).to_ext()
        body = ResetOffsetBody(offset_table={MessageQueue(TOPIC, "broker-a", 0): 1}).encode()

        def reset() -> None:
            (conn,) = emulator.broker.consumer_manager.get(GROUP).channels
            conn.invoke_oneway(RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header, body))
        emulator.call(reset)
        assert await wait_for(lambda: len(consumed) == before + 2, 20), consumed
        await consumer.persist_consumer_offsets()  # what the 5 s timer does
        assert await wait_for(lambda: emulator.call(lambda: emulator.broker.consumer_offset_manager.query_offset(
            GROUP, TOPIC, 0)) == 3, 10)

        # the listener has reported what the consumer owns (the retry topic's queue may come in a later round
        # than the topic's: its route can appear after the first rebalance), and nothing was revoked
        owned = consumer.assignment()
        assert {mq.topic for mq in owned} == {TOPIC, "%RETRY%" + GROUP}
        assert await wait_for(lambda: set().union(*(q for k, q in events if k == "assigned")) == owned, 10), events
        assert all(k == "assigned" for k, _ in events)
        seen = len(events)
        # NOTIFY_CONSUMER_IDS_CHANGED: a second member joins, the queues are split at once
        other = PushConsumer(GROUP, namesrv=ns)
        other.subscribe(TOPIC, "TagS")
        other.on_message(lambda m: None)
        async with other:
            # (both own some: before the other's first rebalance, an empty assignment is trivially disjoint)
            assert await wait_for(lambda: consumer.assignment() and other.assignment() and
                                  len(consumer.assignment() & other.assignment()) == 0 and
                                  len(consumer.assignment() | other.assignment()) == 3, 10)
        assert await wait_for(lambda: len(consumer.assignment()) == 3, 10)
        assert await wait_for(lambda: consumer.assignment() == owned, 10)
        later = events[seen:]
        revoked = set().union(*(q for k, q in later if k == "revoked"))
        reassigned = set().union(*(q for k, q in later if k == "assigned"))
        assert later and later[0][0] == "revoked", later  # the split is reported before anything comes back
        assert revoked and revoked < owned and reassigned == revoked, later  # and what came back is what left


async def _to_thread(fn, *args):
    import asyncio
    return await asyncio.to_thread(fn, *args)
