"""The broker statistics seen through the official mqadmin 4.9.8 (`java_clients`) and this project's CLI: one
broker with traffic (20,000 messages produced, a consumer reading them at up to 200 a second), the
commands run in one mqadmin JVM while the consumer reads, then the group's progress once the consumer has left.

clusterList and brokerStatus read GET_BROKER_RUNTIME_INFO, statsAll VIEW_BROKER_STATS_DATA, brokerConsumeStats
GET_BROKER_CONSUME_STATS, consumerProgress GET_CONSUME_STATS (its consume TPS: messages pulled per second over
the last minute). The statistics are sampled every 10 s, so the scenario waits for the first sampling.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from rocketmq_emulator.broker.state.stats import MINUTE
from rocketmq_emulator.client import FIRST_OFFSET, Admin, Message, Producer, PushConsumer
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import KVTable
from rocketmq_emulator.protocol.frame import encode_command_bytes
from rocketmq_emulator.protocol.headers import SendMessageRequestHeader, ViewBrokerStatsDataRequestHeader
from rocketmq_emulator.protocol.message import BatchItem, encode_batch, encode_properties
from rocketmq_emulator.protocol.stats_bodies import BrokerStatsData
from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.emulator_thread import EmulatorThread

from .rawclient import RawClient

ROOT = Path(__file__).resolve().parents[1]
TOPIC = "StatsOrders"
GROUP = "stats_billing"
COUNT = 20_000
#: the keys a 4.9.8 broker answers GET_BROKER_RUNTIME_INFO with (brokerStatus prints them all)
RUNTIME_KEYS_498 = (
    "bootTimestamp", "runtime", "putMessageEntireTimeMax", "putMessageTimesTotal", "putMessageFailedTimes",
    "putMessageSizeTotal", "putMessageDistributeTime", "putMessageAverageSize", "dispatchMaxBuffer",
    "getMessageEntireTimeMax", "putTps", "getFoundTps", "getMissTps", "getTotalTps", "getTransferedTps",
    "putLatency99", "putLatency999", "commitLogDiskRatio", "consumeQueueDiskRatio", "commitLogMinOffset",
    "commitLogMaxOffset", "brokerVersionDesc", "brokerVersion", "msgPutTotalYesterdayMorning",
    "msgPutTotalTodayMorning", "msgPutTotalTodayNow", "msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning",
    "msgGetTotalTodayNow", "sendThreadPoolQueueSize", "sendThreadPoolQueueCapacity", "pullThreadPoolQueueSize",
    "pullThreadPoolQueueCapacity", "queryThreadPoolQueueSize", "queryThreadPoolQueueCapacity",
    "EndTransactionQueueSize", "EndTransactionThreadPoolQueueCapacity", "dispatchBehindBytes",
    "pageCacheLockTimeMills", "sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills",
    "queryThreadPoolQueueHeadWaitTimeMills", "earliestMessageTimeStamp", "startAcceptSendRequestTimeStamp",
    "remainTransientStoreBufferNumbs", "remainHowManyDataToFlush", "commitLogDirCapacity")


def cli_json(ns: str, *args: str):
    """This project's `rocketmq-emulator admin ... --json`, as a user runs it."""
    proc = subprocess.run([*COMMAND, "admin", *args, "-n", ns, "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ, "NAMESRV_ADDR": ""})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def seen(java_clients, tmp_path_factory):
    """Run the scenario; what mqadmin printed (by command) and this CLI's progress while online and after."""
    tmp = tmp_path_factory.mktemp("stats")
    emu = EmulatorThread(tmp / "store").start()
    ns, addr = emu.namesrv_addr, emu.broker.broker_addr

    async def scenario() -> dict:
        async with Producer("stats_producer", namesrv=ns) as producer:
            for i in range(COUNT // 100):
                await producer.send_batch(TOPIC, [Message(TOPIC, f"order {i}-{k}") for k in range(100)])
        consumer = PushConsumer(GROUP, namesrv=ns, consume_from=FIRST_OFFSET, consume_concurrency=2)
        consumer.subscribe(TOPIC)
        consumed = []

        @consumer.on_message
        async def handle(msg):
            await asyncio.sleep(0.01)  # at most 200 messages a second: still reading while mqadmin runs
            consumed.append(msg.queue_offset)

        async with consumer, Admin(ns) as admin:
            deadline = time.monotonic() + 40
            while True:  # the first 10 s sampling after the reading began, a commit on every queue, and the
                # broker's first 10 s rates (runtime info)
                stats = await admin.consumer_progress(GROUP)
                committed = [w.consumer_offset for mq, w in stats.offset_table.items() if mq.topic == TOPIC]
                rates = (await admin.broker_runtime_info(addr))["getTransferedTps"].split()
                if stats.consume_tps > 0 and len(committed) == 4 and min(committed) > 0 and rates:
                    break
                assert time.monotonic() < deadline, "no consume TPS within 40 s"
                await asyncio.sleep(0.5)
            commands = {"clusterList": ["clusterList", "-n", ns], "clusterList -m": ["clusterList", "-n", ns, "-m"],
                        "brokerStatus": ["brokerStatus", "-n", ns, "-b", addr], "statsAll": ["statsAll", "-n", ns],
                        "brokerConsumeStats": ["brokerConsumeStats", "-n", ns, "-b", addr],
                        "consumerProgress": ["consumerProgress", "-n", ns, "-g", GROUP]}
            outputs = await asyncio.to_thread(java_clients.mqadmin_batch, list(commands.values()), 300, tmp / "home")
            online = await asyncio.to_thread(cli_json, ns, "consumerProgress", "-g", GROUP)
            still_reading = len(consumed) < COUNT
        after = await asyncio.to_thread(cli_json, ns, "consumerProgress", "-g", GROUP)
        return {**dict(zip(commands, outputs)), "online": online, "after": after, "still_reading": still_reading}

    try:
        yield asyncio.run(scenario())
    finally:
        emu.close()


def test_cluster_list_prints_the_broker_without_exception(seen):
    out = seen["clusterList"]
    assert "Exception" not in out, out
    row = next(line for line in out.splitlines() if "broker-a" in line)
    # InTPS/OutTPS come from putTps/getTransferedTps, the queue figures from the thread-pool keys
    assert re.search(r"V4_9_8.*\s\d+\.\d\d\(0,0ms\)\s+\d+\.\d\d\(0,0ms\)\s+0\s+\d+\.\d\d\s+\d\.\d{4}$", row), row
    more = seen["clusterList -m"]
    assert "Exception" not in more, more
    in_yest, out_yest, in_today, out_today = map(int, next(
        line for line in more.splitlines() if "broker-a" in line).split()[2:])
    assert (in_yest, out_yest) == (0, 0) and in_today == COUNT and 0 < out_today <= COUNT


def test_broker_status_shows_every_key_of_a_4_9_8_broker(seen):
    out = seen["brokerStatus"]
    assert "Exception" not in out, out
    table = dict(m.groups() for m in map(re.compile(r"(\S+?)\s*: (.*)$").match, out.splitlines()) if m)
    missing = [k for k in RUNTIME_KEYS_498 if k not in table]
    assert not missing, out
    assert table["msgPutTotalTodayNow"] == table["putMessageTimesTotal"] == str(COUNT)
    assert 0 < int(table["msgGetTotalTodayNow"]) <= COUNT
    assert table["sendThreadPoolQueueSize"] == table["pullThreadPoolQueueSize"] == "0"
    assert float(table["getTotalTps"].split()[0]) > 0  # pulls in the last 10 s
    assert float(table["getTransferedTps"].split()[0]) > 0
    assert any(k.startswith("commitLogDiskRatio_") for k in table)


def test_stats_all_shows_the_topic_with_its_tps_and_day_figures(seen):
    out = seen["statsAll"]
    assert "Exception" not in out, out
    row = next(line.split() for line in out.splitlines() if line.startswith(TOPIC + " "))
    topic, group, accumulation, in_tps, out_tps, in_today, out_today = row
    assert (topic, group) == (TOPIC, GROUP)
    assert int(accumulation) > 0 and float(in_tps) > 0 and float(out_tps) > 0
    assert int(in_today) == COUNT and 0 < int(out_today) <= COUNT


def test_broker_consume_stats_shows_the_groups_queues(seen):
    out = seen["brokerConsumeStats"]
    assert "Exception" not in out, out
    rows = [line.split() for line in out.splitlines() if line.startswith(TOPIC + " ")]
    assert sorted(int(r[3]) for r in rows) == [0, 1, 2, 3] and {r[1] for r in rows} == {GROUP}
    assert all(int(r[4]) == COUNT // 4 and int(r[6]) == int(r[4]) - int(r[5]) for r in rows), out
    total = int(re.search(r"Diff Total: (\d+)", out).group(1))
    assert total == sum(int(r[6]) for r in rows) > 0


def test_consumer_progress_shows_the_consume_tps_while_the_consumer_reads(seen):
    out = seen["consumerProgress"]
    assert "Exception" not in out, out
    assert float(re.search(r"Consume TPS: ([\d.]+)", out).group(1)) > 0, out
    assert seen["online"]["consumeTps"] > 0 and seen["still_reading"]
    # pulled ahead of its commits while online: something is in flight
    assert sum(o["inflight"] for o in seen["online"]["offsets"]) > 0, seen["online"]


def test_after_the_last_consumer_leaves_nothing_is_in_flight(seen):
    rows = [o for o in seen["after"]["offsets"] if o["topic"] == TOPIC]
    assert len(rows) == 4 and sum(o["diff"] for o in rows) > 0  # it left messages unread
    assert all(o["inflight"] == 0 and o["ready"] == o["diff"] for o in rows), rows


def test_view_broker_stats_data_of_an_unknown_item_or_without_its_name(emulator):
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            unknown = await c.request(RemotingCommand.request(
                RequestCode.VIEW_BROKER_STATS_DATA,
                ViewBrokerStatsDataRequestHeader(stats_name="TOPIC_PUT_NUMS", stats_key="NoSuchTopic").to_ext()))
            nameless = await c.request(RemotingCommand.request(RequestCode.VIEW_BROKER_STATS_DATA,
                                                               {"statsKey": "NoSuchTopic"}))
            return unknown, nameless
    unknown, nameless = asyncio.run(scenario())
    assert unknown.code == ResponseCode.SYSTEM_ERROR
    assert unknown.remark == "The stats <TOPIC_PUT_NUMS> <NoSuchTopic> not exist"
    assert nameless.code != ResponseCode.SUCCESS and "statsName" in nameless.remark


def _send(topic: str, body: bytes, batch: list[bytes] | None = None, **props: str) -> RemotingCommand:
    h = SendMessageRequestHeader(producer_group="PG", topic=topic, queue_id=0, born_timestamp=int(time.time() * 1000),
                                 properties=encode_properties({"TAGS": "T", **props}), batch=batch is not None)
    if batch is not None:
        return RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, h.to_v2().to_ext(),
                                       encode_batch([BatchItem(b, {}) for b in batch]))
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_v2().to_ext(), body)


def _view(name: str, key: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.VIEW_BROKER_STATS_DATA,
                                   ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key).to_ext())


def test_each_topic_is_counted_in_a_run_of_sends_to_several_topics(emulator):
    """Sends read together (one write) to two topics, a batch and a delayed message: each topic gets its
    messages and bytes, and the bytes add up to the store's putMessageSizeTotal."""
    async def scenario():
        async with await RawClient.connect("127.0.0.1", emulator.broker_port) as c:
            for topic in ("StatsA", "StatsB"):  # created by a first send each
                assert (await c.request(_send(topic, b"first"))).code == ResponseCode.SUCCESS
            reqs = [_send("StatsA", b"a1"), _send("StatsB", b"b-1" * 50), _send("StatsA", b"a2", KEYS="k1 k2"),
                    _send("StatsB", b"", batch=[b"b2", b"b3", b"b4"]), _send("StatsA", b"late", DELAY="2"),
                    _send("StatsA", b"a3")]
            loop = asyncio.get_running_loop()
            futures = [c.pending.setdefault(r.opaque, loop.create_future()) for r in reqs]
            c.write_raw(b"".join(encode_command_bytes(r) for r in reqs))
            answers = [await asyncio.wait_for(f, 5) for f in futures]
            assert all(a.code == ResponseCode.SUCCESS for a in answers), answers
            emulator.call(lambda: emulator.broker.stats.sample(MINUTE))  # the 10 s sampling, now
            views = {}
            for name in ("TOPIC_PUT_NUMS", "TOPIC_PUT_SIZE"):
                for key in ("StatsA", "StatsB", "SCHEDULE_TOPIC_XXXX"):
                    answer = await c.request(_view(name, key))
                    views[name, key] = BrokerStatsData.decode(answer.body).stats_minute
            runtime = KVTable.decode((await c.request(
                RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO))).body).table
            return views, runtime
    views, runtime = asyncio.run(scenario())
    nums = {k: views[("TOPIC_PUT_NUMS", k)] for k in ("StatsA", "StatsB", "SCHEDULE_TOPIC_XXXX")}
    assert {k: (v.sum, v.avgpt) for k, v in nums.items()} == {
        "StatsA": (4, 1.0), "StatsB": (5, 5 / 3), "SCHEDULE_TOPIC_XXXX": (1, 1.0)}  # the batch: 3 in 1 request
    sizes = {k: views[("TOPIC_PUT_SIZE", k)].sum for k in nums}
    assert sizes["StatsB"] > sizes["StatsA"]  # b-1 * 50 is the largest body
    assert sum(sizes.values()) == int(runtime["putMessageSizeTotal"])
    assert runtime["putMessageTimesTotal"] == runtime["msgPutTotalTodayNow"] == "10"
