"""The cluster's settings (README "A cluster"): roles, broker ids and roles, slaves' ports and stores, and the
broker.conf a broker process of `serve --processes` is given, read back to the same configuration."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rocketmq_emulator.broker.config import BrokerConfig, ServeRole
from rocketmq_emulator.broker.settings import (SettingError, broker_key, emulator_config, read_broker_conf,
                                               slave_of)
from rocketmq_emulator.cli.cluster import broker_conf_text
from rocketmq_emulator.store.config import BrokerRole, FlushDiskType


def test_a_broker_process_needs_name_servers_and_takes_several():
    with pytest.raises(SettingError, match="role: broker needs the name servers"):
        emulator_config(role="broker")
    config = emulator_config(role="broker", namesrv_addr="10.0.0.1:9876; 10.0.0.2:9876")
    assert config.role is ServeRole.BROKER and config.namesrv_addr == ("10.0.0.1:9876", "10.0.0.2:9876")
    for bad in ("nohost", "h:0", "h:x", ":9876", ";"):
        with pytest.raises(SettingError, match="namesrvAddr"):
            emulator_config(role="broker", namesrv_addr=bad)


def test_a_slave_has_an_id_and_a_master_has_none():
    slave = emulator_config(broker_role="SLAVE", broker_id=1).broker
    assert (slave.broker_id, slave.store.broker_role) == (1, BrokerRole.SLAVE)
    with pytest.raises(SettingError, match="a SLAVE needs brokerId 1 or more"):
        emulator_config(broker_role="SLAVE")
    with pytest.raises(SettingError, match="is a slave's id: give brokerRole SLAVE too"):
        emulator_config(broker_id=2)


def test_processes_and_slaves_go_with_what_they_need():
    with pytest.raises(SettingError, match="not with role namesrv"):
        emulator_config(role="namesrv", processes=True)
    with pytest.raises(SettingError, match="not with --dashboard-port yet"):
        emulator_config(processes=True, dashboard_port=0)
    with pytest.raises(SettingError, match="the brokers themselves are masters"):
        emulator_config(slaves=1, broker_role="SLAVE", broker_id=1)
    assert emulator_config(slaves=1).slaves == 1  # in one process too


def test_a_slave_listens_five_ports_above_its_master_with_a_store_of_its_own():
    master = replace(BrokerConfig(listen_port=20911), store=replace(BrokerConfig().store,
                                                                    store_path_root_dir="/data/a"))
    s = slave_of(master)
    assert (s.broker_name, s.broker_id, s.listen_port, s.store.broker_role) == ("broker-a", 1, 20916,
                                                                                BrokerRole.SLAVE)
    assert s.store.store_path_root_dir == "/data/a-slave-1"
    assert slave_of(master, 1, nested=True).store.store_path_root_dir == "/data/a/slave-1"
    assert slave_of(replace(master, listen_port=0)).listen_port == 0  # a free one, as its master's
    assert (broker_key(master), broker_key(s)) == ("broker-a", "broker-a/1")


def test_the_broker_conf_of_a_broker_process_gives_back_its_configuration(tmp_path):
    config = emulator_config(broker_name="broker-c", listen_port=0, store_path_root_dir=str(tmp_path / "c"),
                             flush_disk_type="SYNC_FLUSH", broker_role="SLAVE", broker_id=1,
                             slave_read_enable=True, message_delay_level="1s 5s", compat="4.9",
                             register_name_server_period=1000, transaction_check_interval=500).broker
    conf = tmp_path / "broker.conf"
    conf.write_text(broker_conf_text(config))
    values, unknown = read_broker_conf(conf)
    assert unknown == []
    again = emulator_config(values).broker
    assert again == config
    assert again.store.flush_disk_type is FlushDiskType.SYNC_FLUSH
