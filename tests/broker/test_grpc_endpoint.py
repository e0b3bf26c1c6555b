"""The gRPC endpoint (broker/grpc/) in process, through grpc.aio with the emulator's own message classes: the
answers a 5.x client gets to bad requests (statuses, never a broken stream or a crash), routes that advertise
the address the client used, the settings reply, and the one store shared with the remoting side."""

from __future__ import annotations

import grpc
import pytest

from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.protocol.grpc_v2 import SERVICE, method_callable, v2

C = v2.Code
MD = (("x-mq-client-id", "test-client"),)


@pytest.fixture
async def endpoint(tmp_path):
    cfg = emulator_config(namesrv_port=0, listen_port=0, grpc_server_port=0, topics="T:2",
                          store_path_root_dir=str(tmp_path / "store"), min_invisible_time_mills_for_recv=1000,
                          auto_create_subscription_group=False, groups="G")
    async with Emulator(cfg) as emu:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{emu.grpc.port}") as channel:
            yield emu, channel


call = method_callable


def message(topic="T", body=b"hello", tag="A", message_id="01ABC"):  # noqa: ANN001, ANN201
    m = v2.Message(body=body)
    m.topic.name = topic
    m.system_properties.tag = tag
    m.system_properties.message_id = message_id
    return m


def receive_request(group="G", topic="T", invisible_ms=5000, poll_ms=300):  # noqa: ANN001, ANN201
    r = v2.ReceiveMessageRequest(batch_size=8)
    r.group.name = group
    r.message_queue.topic.name = topic
    r.message_queue.broker.name = "broker-a"
    r.filter_expression.type = v2.FilterType.TAG
    r.filter_expression.expression = "*"
    r.invisible_duration.FromMilliseconds(invisible_ms)
    r.long_polling_timeout.FromMilliseconds(poll_ms)
    return r


async def receive(channel, request):  # noqa: ANN001, ANN201
    """The stream's responses but the delivery timestamp the proxy (and so the emulator) always ends it with."""
    got = [r async for r in call(channel, "ReceiveMessage")(request, metadata=MD, timeout=10)]
    assert got[-1].HasField("delivery_timestamp")
    return got[:-1]


async def test_send_receive_ack_round_trip_and_the_store_is_the_remoting_sides(endpoint):
    emu, channel = endpoint
    sent = await call(channel, "SendMessage")(v2.SendMessageRequest(messages=[message()]), metadata=MD)
    assert sent.status.code == C.OK and sent.entries[0].message_id == "01ABC"
    assert emu.broker.store.get_max_offset_in_queue("T", 0) + emu.broker.store.get_max_offset_in_queue("T", 1) == 1
    answers = await receive(channel, receive_request())
    assert answers[0].status.code == C.OK
    [msg] = [a.message for a in answers if a.HasField("message")]
    assert msg.body == b"hello" and msg.system_properties.delivery_attempt == 1
    assert msg.system_properties.body_encoding == v2.Encoding.IDENTITY and msg.system_properties.body_digest.checksum
    ack = v2.AckMessageRequest()
    ack.group.name, ack.topic.name = "G", "T"
    ack.entries.add(message_id=msg.system_properties.message_id, receipt_handle=msg.system_properties.receipt_handle)
    assert (await call(channel, "AckMessage")(ack, metadata=MD)).status.code == C.OK
    empty = await receive(channel, receive_request())
    assert [a.status.code for a in empty] == [C.MESSAGE_NOT_FOUND]


async def test_bad_requests_get_the_codes_5x_clients_expect(endpoint):
    emu, channel = endpoint
    no_id = await call(channel, "QueryRoute")(v2.QueryRouteRequest(topic=v2.Resource(name="T")))
    assert no_id.status.code == C.CLIENT_ID_REQUIRED
    nope = await call(channel, "QueryRoute")(v2.QueryRouteRequest(topic=v2.Resource(name="Nope")), metadata=MD)
    assert nope.status.code == C.TOPIC_NOT_FOUND
    big = message(body=b"x" * (emu.broker.config.store.max_message_size + 1))
    too_big = await call(channel, "SendMessage")(v2.SendMessageRequest(messages=[big]), metadata=MD)
    assert too_big.status.code == C.MESSAGE_BODY_TOO_LARGE
    bad_tag = await call(channel, "SendMessage")(v2.SendMessageRequest(messages=[message(tag="a|b")]), metadata=MD)
    assert bad_tag.status.code == C.ILLEGAL_MESSAGE_TAG
    short = await receive(channel, receive_request(invisible_ms=10))
    assert [a.status.code for a in short] == [C.ILLEGAL_INVISIBLE_TIME]
    unknown_group = await receive(channel, receive_request(group="NoSuchGroup"))
    assert [a.status.code for a in unknown_group] == [C.CONSUMER_GROUP_NOT_FOUND]
    bad_sql = receive_request()
    bad_sql.filter_expression.type = v2.FilterType.SQL
    bad_sql.filter_expression.expression = "a >"
    # 5.3.3's proxy: the broker refuses the subscription, the proxy answers INTERNAL_SERVER_ERROR
    assert [a.status.code for a in await receive(channel, bad_sql)] == [C.INTERNAL_SERVER_ERROR]
    ack = v2.AckMessageRequest()
    ack.group.name, ack.topic.name = "G", "T"
    ack.entries.add(message_id="x", receipt_handle="not a handle")
    acked = await call(channel, "AckMessage")(ack, metadata=MD)  # 5.3.3: ReceiptHandle.decode's exception
    assert acked.status.code == C.INTERNAL_SERVER_ERROR and "Parse failed, dataList size 3" in \
        acked.entries[0].status.message
    change = v2.ChangeInvisibleDurationRequest(receipt_handle="1 2 3 0 0 broker-a 0 0")
    change.group.name, change.topic.name = "G", "T"
    change.invisible_duration.FromMilliseconds(1000)
    assert (await call(channel, "ChangeInvisibleDuration")(change, metadata=MD)).status.code == \
        C.INVALID_RECEIPT_HANDLE
    end = v2.EndTransactionRequest(transaction_id="zz", resolution=v2.TransactionResolution.COMMIT)
    end.topic.name = "T"
    ended = await call(channel, "EndTransaction")(end, metadata=MD)  # 5.3.3: no transaction data for the id
    assert ended.status.code == C.INTERNAL_SERVER_ERROR and "cannot found transaction data" in ended.status.message


async def test_rpcs_not_served_answer_unimplemented_and_garbage_is_refused(endpoint):
    emu, channel = endpoint
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(channel, "UpdateOffset")(v2.UpdateOffsetRequest(), metadata=MD)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    raw = channel.unary_unary(f"/{SERVICE}/QueryRoute", response_deserializer=v2.QueryRouteResponse.FromString)
    refused = await raw(b"\xff\xff\xff garbage", metadata=MD)
    assert refused.status.code == C.BAD_REQUEST and "malformed" in refused.status.message
    ok = await call(channel, "QueryRoute")(v2.QueryRouteRequest(topic=v2.Resource(name="T")), metadata=MD)
    assert ok.status.code == C.OK  # still serving


async def test_routes_advertise_the_endpoints_the_client_used_else_the_emulators_own(endpoint):
    emu, channel = endpoint
    given = v2.QueryRouteRequest(topic=v2.Resource(name="T"))
    given.endpoints.scheme = v2.AddressScheme.IPv4
    given.endpoints.addresses.add(host="127.0.0.1", port=18081)  # e.g. a published Docker port
    route = await call(channel, "QueryRoute")(given, metadata=MD)
    assert [q.broker.endpoints.addresses[0].port for q in route.message_queues] == [18081, 18081]
    assert list(route.message_queues[0].accept_message_types) == [v2.MessageType.NORMAL]  # no message.type: NORMAL
    own = await call(channel, "QueryRoute")(v2.QueryRouteRequest(topic=v2.Resource(name="T")), metadata=MD)
    assert own.message_queues[0].broker.endpoints.addresses[0].port == emu.grpc.port


async def test_the_settings_reply_carries_the_proxys_defaults(endpoint):
    emu, channel = endpoint
    settings = v2.Settings(client_type=v2.ClientType.SIMPLE_CONSUMER)
    settings.subscription.group.name = "G"
    stream = channel.stream_stream(f"/{SERVICE}/Telemetry", request_serializer=v2.TelemetryCommand.SerializeToString,
                                   response_deserializer=v2.TelemetryCommand.FromString)
    call_ = stream(metadata=MD)
    await call_.write(v2.TelemetryCommand(settings=settings))
    reply = await call_.read()
    assert reply.status.code == C.OK
    s = reply.settings
    assert s.backoff_policy.max_attempts == 17 and len(s.backoff_policy.customized_backoff.next) == 18
    assert s.subscription.receive_batch_size == 32 and s.subscription.long_polling_timeout.seconds == 20
    assert not s.subscription.fifo and not s.metric.on
    call_.cancel()




async def test_a_5x_consumer_is_in_the_brokers_table_until_its_silence_expires_it(endpoint):
    """Its settings register it (the broker's consumer table: consumerConnection); a client that goes away without
    NotifyClientTermination is dropped when it has been silent for channelExpiredTimeout (120 s), by the broker's
    own scan, as a 4.x client is; its messages are then no longer renewed."""
    import time

    emu, channel = endpoint
    settings = v2.Settings(client_type=v2.ClientType.SIMPLE_CONSUMER)
    settings.subscription.group.name = "G"
    entry = settings.subscription.subscriptions.add()
    entry.topic.name = "T"
    entry.expression.type = v2.FilterType.TAG
    entry.expression.expression = "A || B"
    stream = channel.stream_stream(f"/{SERVICE}/Telemetry", request_serializer=v2.TelemetryCommand.SerializeToString,
                                   response_deserializer=v2.TelemetryCommand.FromString)
    call_ = stream(metadata=MD + (("x-mq-language", "JAVA"),))
    await call_.write(v2.TelemetryCommand(settings=settings))
    assert (await call_.read()).status.code == C.OK
    manager = emu.broker.consumer_manager
    gi = manager.get("G")
    assert gi is not None and gi.client_ids() == ["test-client"]
    sub = gi.subscription_table["T"]
    assert sub.sub_string == "A || B" and sub.tags_set == ["A", "B"] and sub.expression_type == "TAG"
    [info] = gi.channels.values()
    assert (info.language, info.version) == ("JAVA", 479)
    call_.cancel()  # gone without NotifyClientTermination
    expired = manager.scan_not_active_channels(time.monotonic() + 121)
    assert len(expired) == 1 and manager.get("G") is None


async def test_a_groups_5x_retry_policy_is_its_consumers_backoff(tmp_path):
    """A group's groupRetryPolicy (from the entities file, or a 5.x mqadmin's updateSubGroup body) is what the
    settings reply gives its 5.x consumers, as the proxy's GrpcClientSettingsManager builds it."""
    import json

    entities = tmp_path / "entities.json"
    entities.write_text(json.dumps({"groups": [
        {"name": "Exp", "groupRetryPolicy": {"type": "EXPONENTIAL",
                                             "exponentialRetryPolicy": {"initial": 2000, "max": 60000,
                                                                        "multiplier": 3}}},
        {"name": "Custom", "retryMaxTimes": 2,
         "groupRetryPolicy": {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, 4000]}}}]}))
    cfg = emulator_config(namesrv_port=0, listen_port=0, grpc_server_port=0, store_path_root_dir=str(tmp_path / "s"),
                          entities_file=str(entities))
    async with Emulator(cfg) as emu:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{emu.grpc.port}") as channel:
            async def settings_of(group: str) -> v2.Settings:
                settings = v2.Settings(client_type=v2.ClientType.PUSH_CONSUMER)
                settings.subscription.group.name = group
                stream = channel.stream_stream(f"/{SERVICE}/Telemetry",
                                               request_serializer=v2.TelemetryCommand.SerializeToString,
                                               response_deserializer=v2.TelemetryCommand.FromString)
                call_ = stream(metadata=((("x-mq-client-id", f"c-{group}"),)))
                await call_.write(v2.TelemetryCommand(settings=settings))
                reply = await call_.read()
                call_.cancel()
                return reply.settings
            exp = (await settings_of("Exp")).backoff_policy
            assert exp.WhichOneof("strategy") == "exponential_backoff"
            assert (exp.exponential_backoff.initial.seconds, exp.exponential_backoff.max.seconds,
                    exp.exponential_backoff.multiplier) == (2, 60, 3.0)
            custom = (await settings_of("Custom")).backoff_policy
            assert custom.max_attempts == 3
            assert [d.seconds for d in custom.customized_backoff.next] == [1, 4]
        stored = (tmp_path / "s" / "config" / "subscriptionGroup.json").read_text()
        assert '"groupRetryPolicy"' in stored and '"EXPONENTIAL"' in stored
