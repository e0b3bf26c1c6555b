"""broker/core/runtime_config.py without a network: the properties text, checked updates, the config file and what a
restart takes back from it (the same code answers mqadmin getBrokerConfig / updateBrokerConfig /
getNamesrvConfig / updateNamesrvConfig, see integration_tests/test_mqadmin_admin.py)."""

from __future__ import annotations

import pytest

from rocketmq_emulator.broker.config import BrokerConfig, parse_properties
from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.broker.core.runtime_config import BrokerConfiguration, NamesrvConfiguration
from rocketmq_emulator.protocol import BrokerError, ResponseCode


def config(tmp_path, **kw) -> BrokerConfig:
    return emulator_config(store_path_root_dir=str(tmp_path / "store"), listen_port=20911, **kw).broker


def test_properties_text_has_every_key_with_the_running_value(tmp_path):
    cfg = config(tmp_path, auto_create_topic_enable=False, flush_consumer_offset_interval=250)
    conf = BrokerConfiguration(cfg, tmp_path / "config", namesrv_addr=lambda: "127.0.0.1:20876")
    props = parse_properties(conf.properties_text())
    assert props["brokerName"] == "broker-a" and props["listenPort"] == "20911" and props["haListenPort"] == "20912"
    assert props["namesrvAddr"] == "127.0.0.1:20876"
    assert props["autoCreateTopicEnable"] == "false" and props["flushConsumerOffsetInterval"] == "250"
    assert props["mappedFileSizeConsumeQueue"] == "6000000" and props["fileReservedTime"] == "72"
    assert props["brokerPermission"] == "6" and props["brokerRole"] == "ASYNC_MASTER"
    assert props["sendThreadPoolQueueCapacity"] == "10000"  # a 4.9.8 key only reported
    assert len(props) > 160


def test_an_update_applies_all_of_its_keys_or_none(tmp_path):
    cfg = config(tmp_path)
    conf = BrokerConfiguration(cfg, tmp_path / "config")
    with pytest.raises(BrokerError) as bad:
        conf.update(b"autoCreateTopicEnable=false\ndefaultTopicQueueNums=abc\n")
    assert bad.value.code == ResponseCode.SYSTEM_ERROR
    assert bad.value.remark == ("invalid value for defaultTopicQueueNums: 'abc' is not an int; nothing of this "
                                "update was applied")
    assert conf.config is cfg and not conf.path.exists()
    for body, problem in ((b"brokerPermission=99999999999", "out of range for an int"),
                          (b"longPollingEnable=yes", "'yes' is not true or false"),
                          (b"newGroupOffset=latest", "'latest' is not one of legacy, strict")):
        with pytest.raises(BrokerError, match=problem):
            conf.update(body)
    with pytest.raises(BrokerError) as black:
        conf.update(b"brokerConfigPath=/etc/passwd\n")
    assert black.value.code == ResponseCode.NO_PERMISSION
    assert black.value.remark == "Can not update config in black list."

    assert conf.update(b"noSuchKey=1\nautoCreateTopicEnable=false\n") == ["autoCreateTopicEnable"]
    assert conf.config.auto_create_topic_enable is False and "noSuchKey" not in conf.properties()
    assert cfg.auto_create_topic_enable is True  # configs are frozen: the update swapped in a new one
    assert conf.data_version.counter == 1


def test_updated_keys_come_back_at_the_next_start_and_nothing_else(tmp_path):
    conf = BrokerConfiguration(config(tmp_path), tmp_path / "config")
    conf.update(b"autoCreateTopicEnable=false")
    conf.update(b"sendMessageThreadPoolNums=7")
    conf.update(b"flushDiskType=SYNC_FLUSH")  # 4.9.8 never changes an enum field at run time
    text = conf.path.read_text()
    assert text.startswith("#updated at run time: autoCreateTopicEnable,sendMessageThreadPoolNums\n")
    assert "flushDiskType=ASYNC_FLUSH\n" in text and "deleteWhen=04\n" in text  # the whole configuration

    # the next start: different start-up settings for keys not changed at run time win over the file's copy
    cfg = config(tmp_path, delete_when="02", broker_name="broker-z")
    again = BrokerConfiguration(cfg, tmp_path / "config")
    again.load_updates()
    assert again.config.auto_create_topic_enable is False
    assert again.properties()["sendMessageThreadPoolNums"] == "7"
    assert again.config.store.delete_when == "02" and again.config.broker_name == "broker-z"


def test_name_server_order_message_enable(tmp_path):
    conf = NamesrvConfiguration(tmp_path / "namesrv", lambda: 9876)
    props = conf.properties()
    assert props["orderMessageEnable"] == "false" and props["listenPort"] == "9876"
    assert props["configStorePath"].endswith("namesrv/namesrv.properties")
    with pytest.raises(BrokerError, match="black list"):
        conf.update(b"kvConfigPath=/tmp/x")
    conf.update(b"orderMessageEnable=true")
    assert conf.order_message_enable is True
    again = NamesrvConfiguration(tmp_path / "namesrv", lambda: 9876)
    again.load_updates()
    assert again.order_message_enable is True
