"""A thousand topics or groups at once (an entities file, --topic lists): one version step, one write of the file,
one re-registration with the name server, one log line; and what was written reads back whole."""

from __future__ import annotations

import logging

from rocketmq_emulator.broker.state.subscription_group import SubscriptionGroupManager
from rocketmq_emulator.broker.state.topic_config import TopicConfigManager
from rocketmq_emulator.protocol.admin_bodies import SubscriptionGroupConfig, TopicConfig


def _topics(config_dir):
    return TopicConfigManager(config_dir, broker_name="broker-a", cluster_name="DefaultCluster",
                              auto_create_topic_enable=True, default_topic_queue_nums=4)


def test_a_thousand_topics_are_one_change_and_read_back_whole(tmp_path, caplog):
    tcm = _topics(tmp_path)
    registrations = []
    tcm.on_change.append(lambda: registrations.append(tcm.data_version.counter))
    before = tcm.data_version.counter
    batch = [TopicConfig(topic_name=f"t-{i:04d}", read_queue_nums=2, write_queue_nums=2) for i in range(1000)]
    with caplog.at_level(logging.INFO, logger="rocketmq_emulator.topics"):
        tcm.update_many(batch)
    assert tcm.data_version.counter == before + 1
    assert registrations == [before + 1]  # the name server hears of it once
    lines = [r.getMessage() for r in caplog.records if r.name == "rocketmq_emulator.topics"]
    assert lines == ["1000 topics created or changed (t-0000 ... t-0999)"]
    reread = _topics(tmp_path)
    reread.load()
    assert all(reread.get(tc.topic_name) == tc for tc in batch)


def test_a_few_topics_are_still_logged_one_by_one(tmp_path, caplog):
    tcm = _topics(tmp_path)
    with caplog.at_level(logging.INFO, logger="rocketmq_emulator.topics"):
        tcm.update_many([TopicConfig(topic_name=n, read_queue_nums=3, write_queue_nums=3) for n in ("a", "b")])
        tcm.update_many([])  # nothing to do: no version step
    assert [r.getMessage() for r in caplog.records] == ["topic a: 3 read / 3 write queues, perm 6",
                                                         "topic b: 3 read / 3 write queues, perm 6"]


def test_a_thousand_groups_are_one_change_and_read_back_whole(tmp_path):
    sgm = SubscriptionGroupManager(tmp_path, auto_create=True)
    before = sgm.data_version.counter
    sgm.update_many([SubscriptionGroupConfig(group_name=f"g-{i:04d}") for i in range(1000)])
    assert sgm.data_version.counter == before + 1
    reread = SubscriptionGroupManager(tmp_path, auto_create=True)
    reread.load()
    assert {f"g-{i:04d}" for i in range(1000)} <= set(reread.table)
