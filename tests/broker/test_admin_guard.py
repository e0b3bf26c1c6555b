"""Admin protection without ACL (`adminAllowedAddresses`, `serve --admin-allow`): destructive and emulator-only
requests from an address not allowed are answered NO_PERMISSION and change nothing; everything else, and
everything by default, works as before. Real TCP on 127.0.0.1: "not allowed" is a list that leaves loopback out."""

from __future__ import annotations

import logging

import pytest

from rocketmq_emulator.broker.core.admin_guard import ADMIN_REQUEST_CODES, AdminGuard
from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.broker.settings import SettingError, emulator_config, parse_value
from rocketmq_emulator.client import Admin, Producer
from rocketmq_emulator.client.errors import BrokerResponseError
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.emulator_requests import EmulatorRequestCode


def _config(tmp_path, allowed):
    return emulator_config(namesrv_port=0, listen_port=0, topics="Orders:2", groups="G",
                           store_path_root_dir=str(tmp_path / "store"), admin_allowed_addresses=allowed)


def test_the_setting_takes_addresses_networks_or_everyone():
    assert parse_value("adminAllowedAddresses", "127.0.0.1, 10.0.0.0/8,::1") == ("127.0.0.1/32", "10.0.0.0/8",
                                                                               "::1/128")
    assert parse_value("adminAllowedAddresses", "*") is None
    for bad in ("localhost", "10.0.0.0/33", ","):
        with pytest.raises(SettingError, match="invalid value for adminAllowedAddresses") as info:
            parse_value("adminAllowedAddresses", bad)
        assert "\n" not in str(info.value)


def test_the_guard_allows_by_address_and_names_the_request_it_refuses():
    guard = AdminGuard(("10.0.0.0/8", "::1"))
    delete = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER)
    assert guard.refusal(delete, "10.1.2.3") is None and guard.refusal(delete, "::1") is None
    why = guard.refusal(delete, "127.0.0.1")
    assert why is not None and "DELETE_TOPIC_IN_BROKER (215)" in why and "127.0.0.1" in why and "10.0.0.0/8" in why
    assert guard.refusal(delete, "") is not None  # an unknown peer is not allowed
    assert AdminGuard(None).active is False
    admin_only = AdminGuard(None, is_admin=lambda req, ip: (req.ext_fields or {}).get("AccessKey") == "root")
    assert "needs an admin account" in admin_only.refusal(delete, "127.0.0.1")
    signed = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"AccessKey": "root"})
    assert admin_only.refusal(signed, "127.0.0.1") is None


def test_the_guarded_codes_are_the_destructive_and_emulator_only_ones():
    for code in (RequestCode.DELETE_TOPIC_IN_BROKER, RequestCode.DELETE_TOPIC_IN_NAMESRV,
                 RequestCode.DELETE_SUBSCRIPTIONGROUP, RequestCode.UPDATE_BROKER_CONFIG,
                 RequestCode.UPDATE_NAMESRV_CONFIG, RequestCode.WIPE_WRITE_PERM_OF_BROKER, *EmulatorRequestCode):
        assert int(code) in ADMIN_REQUEST_CODES
    for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.PULL_MESSAGE, RequestCode.UPDATE_AND_CREATE_TOPIC,
                 RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.HEART_BEAT,
                 RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, RequestCode.GET_BROKER_CONFIG):
        assert int(code) not in ADMIN_REQUEST_CODES


async def _refused(call) -> BrokerResponseError:  # noqa: ANN001
    with pytest.raises(BrokerResponseError) as info:
        await call
    assert info.value.code == ResponseCode.NO_PERMISSION, info.value
    return info.value


async def test_a_client_from_an_address_not_allowed_cannot_destroy_or_control(tmp_path, caplog):
    async with Emulator(_config(tmp_path, ("10.0.0.0/8",))) as emu, Admin(namesrv=emu.namesrv_addr) as admin:
        broker = emu.broker.broker_addr
        with caplog.at_level(logging.WARNING, logger="rocketmq_emulator.broker"):
            err = await _refused(admin.delete_topic("Orders"))
            assert "adminAllowedAddresses" in str(err)
            await _refused(admin.delete_subscription_group("G"))
            await _refused(admin.expire_now())
            await _refused(admin.advance_time(3600))
            await _refused(admin.stop_broker(emu.broker.config.broker_name))
            await _refused(admin.drop_connections())
        assert len([r for r in caplog.records if "refused" in r.getMessage()]) == 1  # once per address
        # nothing changed: the topic and group are there, the clock did not move, the broker runs
        assert "Orders" in await admin.topic_list()
        assert emu.broker.subscription_group_manager.find("G") is not None
        assert emu.clock.offset_ms == 0 and not emu.stopped
        assert (await admin.topic_route("Orders")).broker_datas[0].broker_addrs[0] == broker
        # what producers, consumers and the usual admin commands do still works
        await admin.create_topic("Payments", 2, 2)
        async with Producer(namesrv=emu.namesrv_addr, group="P") as producer:
            assert (await producer.send("Payments", b"x")).msg_id


async def test_the_allowed_addresses_and_the_default_may(tmp_path):
    for allowed in (("127.0.0.1",), None):
        root = tmp_path / str(allowed)
        async with Emulator(_config(root, allowed)) as emu, Admin(namesrv=emu.namesrv_addr) as admin:
            await admin.delete_topic("Orders")
            assert "Orders" not in await admin.topic_list()
            await admin.advance_time(60)
            assert emu.clock.offset_ms == 60_000


async def test_the_dashboards_destructive_actions_follow_the_same_rule(tmp_path):
    import aiohttp

    cfg = emulator_config(namesrv_port=0, listen_port=0, dashboard_port=0, topics="Orders:2",
                          store_path_root_dir=str(tmp_path / "store"), admin_allowed_addresses=("10.0.0.0/8",))
    async with Emulator(cfg) as emu, aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http:
        for path, body in (("/api/topics/Orders/delete", {}), ("/api/controls/advance", {"seconds": 60}),
                           ("/api/controls/expire", {}), ("/api/controls/drop-connections", {})):
            async with http.post(path, json=body) as resp:
                assert resp.status == 403, path
                assert "adminAllowedAddresses" in (await resp.json())["error"]
        assert emu.clock.offset_ms == 0 and emu.read_model().topic("Orders") is not None
        async with http.post("/api/topics", json={"topic": "Payments", "queues": 2}) as resp:  # not destructive
            assert resp.status == 200, await resp.text()


def test_a_broker_conf_may_set_the_allowed_addresses(tmp_path):
    from rocketmq_emulator.broker.settings import read_broker_conf

    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-a\nadminAllowedAddresses=127.0.0.1,10.0.0.0/8\n")
    values, unknown = read_broker_conf(conf)
    assert unknown == []
    assert emulator_config(values).admin_allowed_addresses == ("127.0.0.1/32", "10.0.0.0/8")


ACL_FILE = """\
accounts:
  - accessKey: tester01
    secretKey: user-secret
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
  - accessKey: admin001
    secretKey: root-secret
    admin: true
"""


async def test_with_acl_on_the_admin_requests_need_an_admin_account(tmp_path):
    import asyncio

    from rocketmq_emulator.broker.core.acl.signature import signed_fields
    from rocketmq_emulator.protocol.emulator_requests import AdvanceTimeRequestHeader
    from rocketmq_emulator.protocol.transport import RemotingConnection

    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL_FILE)
    cfg = emulator_config(namesrv_port=0, listen_port=0, store_path_root_dir=str(tmp_path / "store"),
                          acl_enable=True, acl_plain_file=str(acl), dashboard_port=0)
    loop = asyncio.get_running_loop()
    async with Emulator(cfg) as emu:
        _, namesrv = await loop.create_connection(lambda: RemotingConnection(None, name="t"), "127.0.0.1",
                                                  emu.namesrv.port)
        _, broker = await loop.create_connection(lambda: RemotingConnection(None, name="t"), "127.0.0.1",
                                                 emu.broker.server.port)
        advance = AdvanceTimeRequestHeader(millis=60_000).to_ext()
        for conn, code, ext in ((namesrv, EmulatorRequestCode.ADVANCE_TIME, advance),
                                (broker, EmulatorRequestCode.DROP_CONNECTIONS, {})):
            r = await conn.invoke(RemotingCommand.request(code, signed_fields(ext, b"", "tester01", "user-secret")), 10)
            assert r.code == ResponseCode.NO_PERMISSION and "needs an admin account" in r.remark, r
            forged = await conn.invoke(RemotingCommand.request(code, signed_fields(ext, b"", "admin001", "wrong!!!")), 10)
            assert forged.code != ResponseCode.SUCCESS, forged  # the broker's ACL refuses it first (bad signature)
            assert emu.clock.offset_ms == (60_000 if code == EmulatorRequestCode.DROP_CONNECTIONS else 0)
            if code == EmulatorRequestCode.ADVANCE_TIME:
                r = await conn.invoke(RemotingCommand.request(code, signed_fields(ext, b"", "admin001", "root-secret")), 10)
                assert r.code == ResponseCode.SUCCESS and emu.clock.offset_ms == 60_000
        namesrv.close()
        broker.close()
        import aiohttp

        async with aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http, \
                http.post("/api/controls/expire", json={}) as resp:
            assert resp.status == 403 and "needs an admin account" in (await resp.json())["error"]
