"""RocketMQ's naming rules and delay levels, defined once (protocol/topics.py) and used by every layer."""

from __future__ import annotations

import pytest

from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.protocol.topics import (DEFAULT_MESSAGE_DELAY_LEVEL, dlq_topic, parse_delay_levels, retry_topic,
                                               topic_problem)
from rocketmq_emulator.store.config import MessageStoreConfig


def test_delay_levels():
    levels = parse_delay_levels(DEFAULT_MESSAGE_DELAY_LEVEL)
    assert len(levels) == 18 and levels[:4] == [1000, 5000, 10000, 30000] and levels[-1] == 7_200_000
    assert parse_delay_levels("2d 1h") == [172_800_000, 3_600_000]
    with pytest.raises(ValueError, match="'5x'"):
        parse_delay_levels("1s 5x")


def test_the_delay_levels_are_a_store_setting_the_broker_reads():
    assert MessageStoreConfig().message_delay_level == emulator_config().broker.store.message_delay_level
    custom = "1s 1s 2s"
    assert emulator_config(messageDelayLevel=custom).broker.store.message_delay_level == custom


def test_names():
    assert retry_topic("g") == "%RETRY%g" and dlq_topic("g") == "%DLQ%g"
    assert topic_problem("Orders") is None
    assert "illegal characters" in topic_problem("a b")
    assert "longer than" in topic_problem("x" * 128)
    assert "blank" in topic_problem(" ")
