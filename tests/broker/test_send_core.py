"""The send path's core (broker/core/send_core.py) without a socket: SendMessageRequests in, SendMessageResponses out,
on a real store and the broker's real topic, group and statistics managers, as a second front (gRPC,
transactions) would call it. Every outcome goes through handle_put_message_result: the answer, the statistics
and the held pulls woken."""

from __future__ import annotations

import types

import pytest

from rocketmq_emulator.broker.clock import BrokerClock
from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.broker.core.schedule import ScheduleMessageService
from rocketmq_emulator.broker.core.send_core import SendMessageCore
from rocketmq_emulator.broker.core.send_request import SendMessageRequest
from rocketmq_emulator.broker.state.stats import QUEUE_PUT_NUMS, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, BrokerStatsManager
from rocketmq_emulator.broker.state.subscription_group import SubscriptionGroupManager
from rocketmq_emulator.broker.state.topic_config import TopicConfigManager
from rocketmq_emulator.protocol import BrokerError, ResponseCode
from rocketmq_emulator.protocol.headers import SendMessageRequestHeader
from rocketmq_emulator.protocol.message import (BatchItem, MessageExt, create_message_id, encode_batch,
                                                encode_properties, pack_host, tag_hash_code)
from rocketmq_emulator.protocol.topics import SCHEDULE_TOPIC
from rocketmq_emulator.store import MessageStore, MessageStoreConfig

BORN = 1_700_000_000_000


@pytest.fixture
def broker(tmp_path):
    """What the core uses of a BrokerController: config, store, managers, statistics, message_arrived."""
    config = emulator_config(max_message_size=1024).broker
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    store = MessageStore(MessageStoreConfig(store_path_root_dir=str(tmp_path / "store"), store_host="10.0.0.7",
                                            store_port=10911, preallocate_mapped_file=False)).start()
    b = types.SimpleNamespace(config=config, store=store, arrived=[], clock=BrokerClock())
    b.topic_config_manager = TopicConfigManager(config_dir, broker_name="broker-a", cluster_name="DefaultCluster",
                                                auto_create_topic_enable=True, default_topic_queue_nums=4)
    b.subscription_group_manager = SubscriptionGroupManager(config_dir, auto_create=True)
    b.stats = BrokerStatsManager("DefaultCluster", lambda: (store.put_count, store.put_bytes))
    b.schedule_service = ScheduleMessageService(b, config_dir)
    b.message_arrived = lambda *args: b.arrived.append(args)
    # (messages stored together: the controller's `messages_arrived`, as when a pull is held on every queue)
    b.messages_arrived = lambda msgs, offsets: b.arrived.extend(
        (m.topic, m.queue_id, qo + 1, m.tags_code) for m, qo in zip(msgs, offsets))
    yield b
    store.stop()


@pytest.fixture
def core(broker):
    return SendMessageCore(broker)


def request(topic="Orders", queue_id=0, body=b"hello", props=None, *, batch=None, reconsume=None, version=400):
    h = SendMessageRequestHeader(producer_group="PG", topic=topic, queue_id=queue_id, born_timestamp=BORN,
                                 properties=encode_properties(props) if props else None, batch=batch is not None,
                                 reconsume_times=reconsume)
    if batch is not None:
        body = encode_batch([BatchItem(b, p) for b, p in batch])
    return SendMessageRequest(h, body, pack_host("192.168.1.2"), 5555, "192.168.1.2:5555", version)


def stored(broker, topic, queue_id):
    result = broker.store.get_message("G", topic, queue_id, 0, 32)
    return [MessageExt.decode(r) for r in result.messages]


def test_one_request_is_stored_answered_counted_and_wakes_its_queue(broker, core):
    r = core.send(request(props={"TAGS": "TagA", "KEYS": "k1", "WAIT": "true"}))
    assert (r.code, r.remark, r.queue_id, r.queue_offset) == (ResponseCode.SUCCESS, None, 0, 0)
    [m] = stored(broker, "Orders", 0)
    assert r.msg_id == create_message_id("10.0.0.7", 10911, m.commit_log_offset)
    assert m.properties == {"TAGS": "TagA", "KEYS": "k1", "CLUSTER": "DefaultCluster"}  # WAIT dropped
    assert (m.born_host, m.born_port, m.born_timestamp) == ("192.168.1.2", 5555, BORN)
    assert broker.arrived == [("Orders", 0, 1, tag_hash_code("TagA"))]
    assert broker.stats.get_item(TOPIC_PUT_NUMS, "Orders").counts() == (1, 1)
    assert broker.stats.get_item(TOPIC_PUT_SIZE, "Orders").counts() == (1, m.store_size)


def test_requests_read_together_are_answered_as_each_alone(broker, core):
    reqs = [request(body=b"a", props={"TAGS": "A"}), request("Other", 1, b"b"),
            request(body=b"", batch=[(b"c1", {}), (b"c2", {"TAGS": "C"})]), request("SCHEDULE_TOPIC_XXXX"),
            request(queue_id=99), request(body=b"d", props={"DELAY": "2"}), request(body=b"e")]
    out = core.send_run(reqs)
    assert [o.code if not isinstance(o, Exception) else o.code for o in out] == [
        ResponseCode.SUCCESS, ResponseCode.SUCCESS, ResponseCode.SUCCESS, ResponseCode.NO_PERMISSION,
        ResponseCode.SYSTEM_ERROR, ResponseCode.SUCCESS, ResponseCode.SUCCESS]
    assert isinstance(out[3], BrokerError) and "forbidden" in out[3].remark
    assert [(o.queue_id, o.queue_offset) for o in (out[0], out[1], out[2], out[6])] == [(0, 0), (1, 0), (0, 1), (0, 3)]
    assert out[2].msg_id.count(",") == 1  # a batch is answered with all its ids
    assert out[5].queue_id == 0 and out[5].queue_offset == 0  # parked: its level's queue offset, its own queue
    assert [m.body for m in stored(broker, "Orders", 0)] == [b"a", b"c1", b"c2", b"e"]
    level_queue = 1  # DELAY=2 is parked in queue 2 - 1
    assert [m.body for m in stored(broker, SCHEDULE_TOPIC, level_queue)] == [b"d"]
    assert broker.arrived[:3] == [("Orders", 0, 1, tag_hash_code("A")), ("Other", 1, 1, 0), ("Orders", 0, 3, None)]
    assert broker.arrived[3][:3] == (SCHEDULE_TOPIC, level_queue, 1) and broker.arrived[4] == ("Orders", 0, 4, 0)
    assert broker.stats.get_item(TOPIC_PUT_NUMS, "Orders").counts() == (3, 4)  # 3 requests, 4 messages
    assert broker.stats.get_item(QUEUE_PUT_NUMS, f"{SCHEDULE_TOPIC}@{level_queue}").counts() == (1, 1)


def test_a_store_that_refuses_answers_every_request_with_the_mapped_status(broker, core):
    broker.store.stop()
    out = core.send_run([request(body=b"a"), request(body=b"b"), request(batch=[(b"c", {})])])
    assert [(o.code, o.msg_id) for o in out] == [(ResponseCode.SERVICE_NOT_AVAILABLE, None)] * 3
    assert out[0].remark.startswith("service not available now")
    assert broker.stats.put_failed_times == 3 and broker.arrived == []


def test_a_flush_timeout_is_answered_with_the_offsets_and_still_wakes_pulls(broker, core):
    broker.store.commitlog.sync_flush = True
    broker.store.commitlog._flush_sync = lambda: False  # the disk did not confirm in time
    out = core.send_run([request(body=b"a"), request(body=b"b")])
    assert [(o.code, o.queue_offset) for o in out] == [(ResponseCode.FLUSH_DISK_TIMEOUT, 0),
                                                       (ResponseCode.FLUSH_DISK_TIMEOUT, 1)]
    assert all(o.msg_id for o in out) and [a[2] for a in broker.arrived] == [1, 2]


def test_the_size_rules_are_the_same_for_every_kind_of_message(core):
    """Properties over 32767 bytes and bodies over maxMessageSize: 4.9.8's one remark (the parity corpus)."""
    remark = ("the message is illegal, maybe msg body or properties length not matched. msg body length limit 1024B, "
              "msg properties length limit 32KB.")
    too_long = {"A": "x" * 32760}
    for req in (request(props=too_long), request(props={**too_long, "DELAY": "1"}),
                request(batch=[(b"b", {"A": "x" * 32758})]), request(body=b"x" * 1025),
                request(body=b"x" * 1025, props={"DELAY": "1"}), request(batch=[(b"x" * 600, {}), (b"y" * 600, {})])):
        with pytest.raises(BrokerError) as refused:
            core.send(req)
        assert (refused.value.code, refused.value.remark) == (ResponseCode.MESSAGE_ILLEGAL, remark)


def test_a_retry_topic_message_over_its_max_reconsume_times_goes_to_the_dlq_on_queue_0(broker, core):
    r = core.send(request("%RETRY%G1", 0, b"r", {"TAGS": "T", "DELAY": "3"}, reconsume=16))
    assert (r.code, r.queue_id, r.queue_offset) == (ResponseCode.SUCCESS, 0, 0)
    [m] = stored(broker, "%DLQ%G1", 0)
    assert m.reconsume_times == 16 and m.body == b"r"  # stored in the DLQ at once: its delay level not applied
    assert broker.store.get_max_offset_in_queue(SCHEDULE_TOPIC, 2) == 0
    assert broker.arrived == [("%DLQ%G1", 0, 1, tag_hash_code("T"))]


def test_a_put_the_broker_makes_itself_wakes_held_pulls_only_when_stored(broker, core):
    from rocketmq_emulator.store import MessageExtBrokerInner
    result = core.put_message(MessageExtBrokerInner.build("Orders", 2, b"back", {"TAGS": "T"}))
    assert result.is_ok() and broker.arrived == [("Orders", 2, 1, tag_hash_code("T"))]
    broker.store.stop()
    assert not core.put_message(MessageExtBrokerInner.build("Orders", 2, b"lost")).is_ok()
    assert len(broker.arrived) == 1
