"""broker/settings.py, the one parser of the emulator's settings: every source (serve's flags, the environment, a
broker.conf, updateBrokerConfig, Python code) gives the same frozen config; a bad value is one error naming the
key; run-time facts (bound ports, the temporary store) live on the running objects, not in the config."""

from __future__ import annotations

import asyncio
import dataclasses
import os

import pytest

from rocketmq_emulator.broker.config import NewGroupOffset, OffsetDurability
from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.broker.core.runtime_config import BrokerConfiguration
from rocketmq_emulator.broker.settings import SettingError, emulator_config, read_broker_conf, updated
from rocketmq_emulator.cli.main import build_parser
from rocketmq_emulator.cli.serve import ConfigError, config_from_args
from rocketmq_emulator.protocol import BrokerError
from rocketmq_emulator.store.config import BrokerRole, FlushDiskType

#: settings every source can give: Java key -> (serve flag, text)
SAME = {"brokerName": ("--broker-name", "broker-x"), "brokerClusterName": ("--cluster-name", "C1"),
        "listenPort": ("--broker-port", "30911"), "brokerIP1": ("--advertised-host", "10.1.2.3"),
        "storePathRootDir": ("--store-dir", "/tmp/settings-store"), "newGroupOffset": ("--new-group-offset", "strict"),
        "offsetDurability": ("--offset-durability", "write-through"),
        "useServerSideResetOffset": ("--server-side-reset", "false"),
        "enableBroadcastOffsetStore": ("--broadcast-offset-store", "false")}


def from_cli(argv: list[str], environ: dict[str, str]):
    return config_from_args(build_parser().parse_args(["serve", *argv]), environ)


def env_name(flag: str) -> str:
    return "ROCKETMQ_EMULATOR_" + flag[2:].replace("-", "_").upper()


def test_every_source_gives_the_same_config(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("".join(f"{key}={text}\n" for key, (_, text) in SAME.items()))
    by_conf = from_cli(["--config", str(conf)], {}).broker
    by_env = from_cli([], {env_name(flag): text for flag, text in SAME.values()}).broker
    by_flags = from_cli([arg for flag, text in SAME.values() for arg in (flag, text)], {}).broker
    by_keys = emulator_config({key: text for key, (_, text) in SAME.items()}).broker
    by_fields = emulator_config(broker_name="broker-x", broker_cluster_name="C1", listen_port=30911,
                                broker_ip1="10.1.2.3", store_path_root_dir="/tmp/settings-store",
                                new_group_offset=NewGroupOffset.STRICT, offset_durability="write-through",
                                use_server_side_reset_offset=False, enable_broadcast_offset_store=False).broker
    at_run_time = updated(emulator_config().broker, {key: text for key, (_, text) in SAME.items()})
    assert by_conf == by_env == by_flags == by_keys == by_fields == at_run_time
    assert by_conf.new_group_offset is NewGroupOffset.STRICT  # enums are members, parsed once
    assert by_conf.offset_durability is OffsetDurability.WRITE_THROUGH
    assert (by_conf.listen_port, by_conf.store.store_path_root_dir) == (30911, "/tmp/settings-store")


def test_store_settings_live_in_the_store_config_with_javas_units(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("flushDiskType=SYNC_FLUSH\nmapedFileSizeConsumeQueue=6000001\nfileReservedTime=48\n"
                    "messageDelayLevel=1s 2s\nbrokerRole=SLAVE\nbrokerId=1\nhaListenPort=1\nsomethingNew=1\n")
    values, unknown = read_broker_conf(conf)
    assert unknown == ["somethingNew"]
    store = emulator_config(values).broker.store
    assert store.broker_role is BrokerRole.SLAVE
    assert store.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert store.mapped_file_size_consume_queue == 6000020  # bytes, whole 20-byte units as 4.9.8 rounds them
    assert (store.file_reserved_time, store.message_delay_level) == (48, "1s 2s")


@pytest.mark.parametrize("key,text,problem", [
    ("newGroupOffset", "sometimes", "'sometimes' is not one of legacy, strict"),
    ("flushDiskType", "FAST", "'FAST' is not one of ASYNC_FLUSH, SYNC_FLUSH"),
    ("offsetDurability", "later", "'later' is not one of write-behind, write-through"),
    ("listenPort", "70000", "70000 is out of range (0 to 65535)"),
    ("defaultTopicQueueNums", "abc", "'abc' is not an int"),
    ("longPollingEnable", "yes", "'yes' is not true or false"),
    ("messageDelayLevel", "1s 5x", "bad messageDelayLevel entry '5x'"),
])
def test_a_bad_value_is_one_error_naming_the_key_whatever_the_source(tmp_path, key, text, problem):
    expected = f"invalid value for {key}: {problem}"
    with pytest.raises(SettingError) as by_code:
        emulator_config({key: text})
    assert str(by_code.value).startswith(expected) and by_code.value.key == key
    conf = tmp_path / "broker.conf"
    conf.write_text(f"{key}={text}\n")
    with pytest.raises(ConfigError) as by_conf:
        from_cli(["--config", str(conf)], {})
    assert str(by_conf.value).startswith(f"{conf}: {expected}")
    configuration = BrokerConfiguration(emulator_config().broker, tmp_path / "config")
    with pytest.raises(BrokerError) as by_update:
        configuration.update(f"{key}={text}".encode())
    remark = by_update.value.remark
    assert remark.startswith(expected) and remark.endswith("; nothing of this update was applied")


def test_a_bad_environment_value_or_flag_names_the_variable_and_the_key(capsys):
    with pytest.raises(ConfigError, match="^ROCKETMQ_EMULATOR_NEW_GROUP_OFFSET='x': invalid value for "
                                          "newGroupOffset: 'x' is not one of legacy, strict$"):
        from_cli([], {"ROCKETMQ_EMULATOR_NEW_GROUP_OFFSET": "x"})
    with pytest.raises(SystemExit):
        from_cli(["--log-level", "LOUD"], {})
    assert "invalid value for logLevel: 'LOUD' is not one of DEBUG, INFO, WARNING, ERROR" in capsys.readouterr().err


def test_code_names_each_setting_once():
    with pytest.raises(ValueError, match="unknown setting 'broker_port'"):
        emulator_config(broker_port=0)  # the old name: listen_port (listenPort) now


def test_configs_are_frozen():
    config = emulator_config()
    for obj, name in ((config, "host"), (config.broker, "listen_port"), (config.broker.store, "flush_disk_type")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, None)


def test_several_brokers_are_derived_from_the_first():
    config = emulator_config(brokers=3, listen_port=20911, advertised_port=30911, store_path_root_dir="/data/s")
    assert [(b.broker_name, b.listen_port, b.advertised_port, b.store.store_path_root_dir) for b in config.brokers] \
        == [("broker-a", 20911, 30911, "/data/s"), ("broker-b", 20921, 30921, "/data/s-broker-b"),
            ("broker-c", 20931, 30931, "/data/s-broker-c")]


def test_run_time_facts_live_on_the_running_objects_and_updates_swap_the_config(tmp_path):
    config = emulator_config(namesrv_port=0, listen_port=0, ephemeral=True, brokers=2)

    async def scenario():
        async with Emulator(config) as emu:
            b = emu.broker
            assert config.broker.listen_port == 0 and b.listen_port > 0  # the bound port, never written back
            assert b.broker_addr == f"127.0.0.1:{b.listen_port}" and b.store.config.store_port == b.listen_port
            assert emu.store_root != config.broker.store.store_path_root_dir and os.path.isdir(emu.store_root)
            assert emu.brokers[1].config.store.store_path_root_dir == os.path.join(emu.store_root, "broker-b")
            before = b.config
            b.configuration.update(b"maxMessageSize=2048\nfileReservedTime=1\nautoCreateTopicEnable=false\n")
            assert before.store.max_message_size == 4 * 1024 * 1024  # the old config is unchanged
            assert b.config.store.max_message_size == b.store.config.max_message_size == 2048
            assert b.store.commitlog.max_message_size == 2048 and b.store.config.file_reserved_time == 1
            assert b.store.config.store_port == b.listen_port  # the store's run-time facts survive the swap
            assert b.topic_config_manager.auto_create_topic_enable is False
            return emu.store_root
    root = asyncio.run(scenario())
    assert not os.path.exists(root)  # the temporary store goes with the emulator


def test_the_grpc_port_comes_from_broker_conf_the_environment_or_a_flag(tmp_path, monkeypatch):
    """grpcServerPort, the one process setting a broker.conf may give (the 5.x proxy's key)."""
    conf = tmp_path / "broker.conf"
    conf.write_text("grpcServerPort=18081\nminInvisibleTimeMillsForRecv=500\n")
    values, unknown = read_broker_conf(conf)
    assert unknown == [] and emulator_config(values).grpc_server_port == 18081
    assert emulator_config(values).broker.min_invisible_time_mills_for_recv == 500
    assert emulator_config().grpc_server_port is None  # off unless asked for
    with pytest.raises(SettingError, match="grpcServerPort"):
        emulator_config(grpcServerPort="70000")
