"""The broker and name server over raw TCP: long polling, name-server answers, the VIP port, bad input, and
shutdown of a real `rocketmq-emulator serve` process."""

from __future__ import annotations

import asyncio
import os
import signal
import struct
import subprocess
import time
from pathlib import Path


from integration_tests.cppclient import run_driver
from integration_tests.rawclient import RawClient, pull_request, send_request
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import ClusterInfo, TopicRouteData
from rocketmq_emulator.protocol.message import decode_messages
from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.emulator_thread import EmulatorThread
from rocketmq_emulator.testing.ports import free_broker_port, free_port

ROOT = Path(__file__).resolve().parents[1]


def run(emu: EmulatorThread, coro):
    """Run a client coroutine on a fresh loop in this thread (the emulator has its own)."""
    return asyncio.run(coro)


def test_long_poll_answers_within_100ms_of_arrival(emulator):
    async def scenario() -> tuple[float, RemotingCommand]:
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            assert (await c.request(send_request("LP"))).code == ResponseCode.SUCCESS
            first = await c.request(pull_request("LP", 0))
            assert first.code == ResponseCode.SUCCESS
            held = c.send(pull_request("LP", 1))
            await asyncio.sleep(0.5)
            assert not held.done(), "an empty queue must hold the pull"
            await c.request(send_request("LP", b"second"))
            arrived = time.monotonic()
            response = await asyncio.wait_for(held, 5)
            return time.monotonic() - arrived, response
    latency, response = run(emulator, scenario())
    assert response.code == ResponseCode.SUCCESS and response.remark == "FOUND"
    assert [m.body for m in decode_messages(response.body)] == [b"second"]
    assert latency < 0.1, f"held pull answered {latency * 1000:.0f} ms after the message arrived"


def test_held_pull_times_out_with_pull_not_found(emulator):
    async def scenario() -> RemotingCommand:
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            await c.request(send_request("LPT"))
            return await c.request(pull_request("LPT", 1, suspend_ms=300), timeout=5)
    response = run(emulator, scenario())
    assert response.code == ResponseCode.PULL_NOT_FOUND
    assert response.ext_fields["nextBeginOffset"] == "1" and response.ext_fields["maxOffset"] == "1"


def test_name_server_routes(emulator):
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.namesrv_port) as c:
            missing = await c.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"}))
            old = await c.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"},
                                                          version=333))
            new = await c.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"},
                                                          version=409))
            cluster = await c.request(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
            unknown = await c.request(RemotingCommand.request(4242))
            return missing, old, new, cluster, unknown
    missing, old, new, cluster, unknown = run(emulator, scenario())
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST and "Nope" in missing.remark
    addr = f"127.0.0.1:{emulator.broker_port}"
    assert f'{{0:"{addr}"}}'.encode() in old.body and f'{{"0":"{addr}"}}'.encode() in new.body
    route = TopicRouteData.decode(new.body)
    assert route.queue_datas[0].write_queue_nums == 8 and route.queue_datas[0].perm == 7
    assert ClusterInfo.decode(cluster.body).cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def test_auto_create_off_gives_topic_not_exist(emulator_factory):
    emu = emulator_factory(auto_create_topic_enable=False)

    async def scenario():
        async with await RawClient.connect("127.0.0.1", emu.namesrv_port) as ns, \
                await RawClient.connect("127.0.0.1", emu.broker_port) as b:
            tbw = await ns.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}))
            sent = await b.request(send_request("Fresh"))
            return tbw, sent
    tbw, sent = run(emu, scenario())
    assert tbw.code == ResponseCode.TOPIC_NOT_EXIST
    assert sent.code == ResponseCode.TOPIC_NOT_EXIST


def test_vip_port_serves_everything_but_pull(emulator):
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port - 2) as c:
            return await c.request(send_request("VIP")), await c.request(pull_request("VIP", 0))
    sent, pulled = run(emulator, scenario())
    assert sent.code == ResponseCode.SUCCESS
    assert pulled.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def _frame(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), len(header)) + header + body


def test_bad_input_then_the_cpp_client_still_works(emulator, cpp_home):
    async def scenario() -> dict[str, object]:
        out: dict[str, object] = {}
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as good:
            # malformed JSON header: that connection is closed, others are untouched
            async with await RawClient.connect("127.0.0.1", emulator.broker_port) as bad:
                bad.write_raw(_frame(b"{not json"))
                await asyncio.wait_for(bad.closed, 5)
            # a frame over the 16 MiB limit: closed from its length word alone
            async with await RawClient.connect("127.0.0.1", emulator.broker_port) as big:
                big.write_raw(struct.pack(">iI", 64 * 1024 * 1024, 10))
                await asyncio.wait_for(big.closed, 5)
            out["unknown"] = await good.request(RemotingCommand.request(7777))
            out["missing"] = await good.request(RemotingCommand.request(RequestCode.PULL_MESSAGE, {"topic": "T"}))
            out["invalid"] = await good.request(RemotingCommand.request(
                RequestCode.GET_MAX_OFFSET, {"topic": "T", "queueId": "zero"}))
            out["too_big"] = await good.request(send_request("Big", b"x" * (4 * 1024 * 1024 + 1)))
            out["bad_topic"] = await good.request(send_request("bad topic!"))
            out["reserved"] = await good.request(send_request("SCHEDULE_TOPIC_XXXX"))
            out["still_ok"] = await good.request(send_request("AfterBadInput"))
        return out
    out = run(emulator, scenario())
    assert out["unknown"].code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED  # type: ignore[union-attr]
    assert out["missing"].code == ResponseCode.SYSTEM_ERROR and "consumerGroup" in out["missing"].remark  # type: ignore[union-attr]
    assert out["invalid"].code == ResponseCode.SYSTEM_ERROR and "queueId" in out["invalid"].remark  # type: ignore[union-attr]
    assert out["too_big"].code == ResponseCode.MESSAGE_ILLEGAL  # type: ignore[union-attr]
    assert out["bad_topic"].code == ResponseCode.SYSTEM_ERROR and "illegal" in out["bad_topic"].remark  # type: ignore[union-attr]
    assert out["reserved"].code == ResponseCode.NO_PERMISSION  # type: ignore[union-attr]
    assert out["still_ok"].code == ResponseCode.SUCCESS  # type: ignore[union-attr]
    # and the real client is served as before
    sent = run_driver(["produce", "--namesrv", emulator.namesrv_addr, "--topic", "AfterBadInput", "--count", "5"],
                      timeout=60, home=cpp_home).events
    assert [e["status"] for e in sent if e["event"] == "sent"] == ["OK"] * 5
    got = run_driver(["push", "--namesrv", emulator.namesrv_addr, "--topic", "AfterBadInput", "--group", "BI",
                      "--expect", "6", "--duration", "30"], timeout=60, home=cpp_home).events
    assert got[-1]["event"] == "done" and got[-1]["expected_reached"]


def test_serve_process_ready_line_and_sigterm(tmp_path):
    ns_port, broker_port = free_port(), free_broker_port()
    env = {**os.environ, "ROCKETMQ_EMULATOR_BROKER_PORT": str(broker_port)}
    proc = subprocess.Popen([*COMMAND, "serve", "--namesrv-port", str(ns_port), "--store-dir", str(tmp_path / "store")],
                            cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if "ready:" in line:
                break
        ready = lines[-1]
        assert f"namesrv 127.0.0.1:{ns_port}" in ready and f"broker-a@127.0.0.1:{broker_port}" in ready, lines

        async def scenario():
            async with await RawClient.connect("127.0.0.1", broker_port) as c:
                assert (await c.request(send_request("Shutdown"))).code == ResponseCode.SUCCESS
                await c.request(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
                    "consumerGroup": "SG", "topic": "Shutdown", "queueId": "0", "commitOffset": "1"}))
                held = c.send(pull_request("Shutdown", 1, group="SG"))
                await asyncio.sleep(0.2)
                proc.send_signal(signal.SIGTERM)
                return await asyncio.wait_for(held, 5)
        answer = asyncio.run(scenario())
        assert answer.code == ResponseCode.PULL_NOT_FOUND  # the held pull is answered, not dropped
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    offsets = (tmp_path / "store" / "config" / "consumerOffset.json").read_text()
    assert '"Shutdown@SG":{0:1' in offsets.replace("\n", "").replace("\t", "")
    assert not (tmp_path / "store" / "abort").exists()
