"""A broker's registration over TCP (broker/outer_api.py, 4.9.8's BrokerOuterAPI) with a name server on loopback:
routes, the master's addresses told to a slave, unregistration, the connection's close, an unreachable name
server said once."""

from __future__ import annotations

import asyncio
import logging

from rocketmq_emulator.broker.namesrv import NameServer
from rocketmq_emulator.broker.outer_api import Registration, RemoteNamesrvs
from rocketmq_emulator.protocol.admin_bodies import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from rocketmq_emulator.testing.ports import free_port


def registration(addr: str, broker_id: int = 0, ha: str = "") -> Registration:
    topics = TopicConfigSerializeWrapper(topic_config_table={"Orders": TopicConfig(topic_name="Orders",
                                                                                   read_queue_nums=2,
                                                                                   write_queue_nums=2, perm=6)},
                                         data_version=DataVersion(counter=3))
    return Registration("DefaultCluster", "broker-a", addr, broker_id, ha, topics)


def test_a_master_and_its_slave_register_and_the_slave_is_told_its_master():
    async def go() -> None:
        async with NameServer("127.0.0.1", 0) as ns:
            addr = f"127.0.0.1:{ns.port}"
            told: list[tuple[str | None, str | None]] = []
            master = RemoteNamesrvs((addr,), on_master=lambda m, ha: told.append(("master", m)))
            slave = RemoteNamesrvs((addr,), on_master=lambda m, ha: told.append((m, ha)))
            await master.register_now(registration("127.0.0.1:1", 0, "127.0.0.1:2"))
            await slave.register_now(registration("127.0.0.1:3", 1))
            route = ns.routes.pick_route("Orders")
            assert route is not None and route.broker_datas[0].broker_addrs == {0: "127.0.0.1:1", 1: "127.0.0.1:3"}
            assert told == [("master", None), ("127.0.0.1:1", "127.0.0.1:2")]  # a master is told nothing
            await master.unregister(registration("127.0.0.1:1", 0, "127.0.0.1:2"))
            assert ns.routes.broker_addr_table["broker-a"].broker_addrs == {1: "127.0.0.1:3"}
            await slave.close()  # its connection closes: the name server drops it at once
            for _ in range(100):
                if "broker-a" not in ns.routes.broker_addr_table:
                    break
                await asyncio.sleep(0.01)
            assert "broker-a" not in ns.routes.broker_addr_table
            await master.close()
    asyncio.run(go())


def test_an_unreachable_name_server_is_said_once(caplog):
    async def go() -> None:
        gone = RemoteNamesrvs((f"127.0.0.1:{free_port()}",))
        for _ in range(3):
            await gone.register_now(registration("127.0.0.1:1"))
        await gone.close()
    with caplog.at_level(logging.WARNING, logger="rocketmq_emulator.broker"):
        asyncio.run(go())
    said = [r.getMessage() for r in caplog.records if "REGISTER_BROKER failed" in r.getMessage()]
    assert len(said) == 1 and "retried every 30 s" in said[0]
