"""The dashboard's charts (broker/dashboard/series.py) on a running emulator, read through its JSON API as the pages
read them: a topic's put rate follows what a producer sends, a group's lag (behind, ready, in flight) is the group
table's, a reset and a consumer joining are marked, an hour is kept and no more, and bad names are 404s."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from rocketmq_emulator.broker.dashboard import series as series_module
from rocketmq_emulator.broker.dashboard.series import KEEP, BrokerSeries
from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.client import Admin, Producer, PushConsumer


@pytest.fixture
async def emu(tmp_path):
    cfg = emulator_config(namesrv_port=0, listen_port=0, dashboard_port=0, dashboard_sample_seconds=0.2,
                          topics="Charted:2", groups="ChartGroup", store_path_root_dir=str(tmp_path / "store"))
    async with Emulator(cfg) as emulator:
        yield emulator


async def get(http: aiohttp.ClientSession, path: str, status: int = 200) -> dict:
    async with http.get(path) as r:
        assert r.status == status, await r.text()
        return await r.json()


async def test_rates_lag_and_events_reach_the_api(emu: Emulator) -> None:
    base = f"http://127.0.0.1:{emu.dashboard.port}"
    async with aiohttp.ClientSession(base) as http, \
            Producer("chart-producer", namesrv=emu.namesrv_addr) as producer, \
            Admin(emu.namesrv_addr) as admin:
        for i in range(40):
            await producer.send("Charted", f"m{i}")
        await asyncio.sleep(0.7)  # a few samples, with the 40 among them
        topic = await get(http, "/api/series/topics/Charted")
        assert topic["sampleSeconds"] == 0.2 and topic["tracked"] is True
        assert len(topic["t"]) >= 3 and topic["t"] == sorted(topic["t"])
        assert len(topic["series"]["put"]) == len(topic["t"])
        rates = [v for v in topic["series"]["put"] if v]
        assert rates, topic  # the 40 show as a rate ...
        seconds = [(b - a) / 1000 for a, b in zip(topic["t"], topic["t"][1:])]
        assert 39 <= round(sum(v * s for v, s in zip(topic["series"]["put"][1:], seconds) if v)) <= 41  # ... of 40
        overview = await get(http, "/api/series/overview")
        assert any(v for v in overview["series"]["put"] if v)

        # a group behind by what was stored (committed 0 by a reset) and the reset marked
        await admin.reset_offset("ChartGroup", "Charted", 0)
        await asyncio.sleep(0.5)
        group = await get(http, "/api/series/groups/ChartGroup")
        detail = await get(http, "/api/groups/ChartGroup")
        assert group["series"]["diff"][-1] == detail["totals"]["diff"] == 40
        assert group["series"]["ready"][-1] == detail["totals"]["ready"]
        assert group["series"]["inflight"][-1] == detail["totals"]["inflight"]
        kinds = [e["kind"] for e in group["events"]]
        assert "reset" in kinds, group["events"]
        assert all(group["t"][0] <= e["t"] for e in group["events"])

        # bad names are 404s, with the reason
        missing = await get(http, "/api/series/topics/NoSuchTopic", 404)
        assert "NoSuchTopic" in missing["error"]
        await get(http, "/api/series/groups/NoSuchGroup", 404)
        await get(http, "/api/series/overview?broker=nope", 404)


async def test_a_consumer_joining_and_a_clock_advance_are_events(emu: Emulator) -> None:


    base = f"http://127.0.0.1:{emu.dashboard.port}"
    async with aiohttp.ClientSession(base) as http, Admin(emu.namesrv_addr) as admin:
        consumer = PushConsumer("ChartGroup", namesrv=emu.namesrv_addr)
        consumer.subscribe("Charted", "*")
        consumer.on_message(lambda msg: None)
        await consumer.start()
        try:
            await admin.advance_time(60)
            await asyncio.sleep(0.5)
            group = await get(http, "/api/series/groups/ChartGroup")
        finally:
            await consumer.stop()
    kinds = {e["kind"] for e in group["events"]}
    assert {"joined", "advance"} <= kinds, group["events"]
    assert any("clock advanced 60 s" == e["text"] for e in group["events"])


def test_an_hour_is_kept_and_no_more(emu: Emulator) -> None:
    """KEEP samples (an hour at 5 s), oldest dropped first; each series one fixed array of 4-byte floats."""
    series = BrokerSeries()
    model = emu.read_model()
    start = time.time() * 1000
    for i in range(KEEP + 50):
        series.sample(model, start + i * 5000)
    window = series.window()
    assert len(window) == KEEP and window[0] == int(start + 50 * 5000) and window == sorted(window)
    assert series.broker["put"].itemsize == 4 and len(series.broker["put"]) == KEEP


def test_series_beyond_the_bound_are_answered_untracked(emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(series_module, "MAX_TOPICS", 0)
    series = BrokerSeries()
    series.sample(emu.read_model())
    assert series.topic(emu.read_model(), "Charted")["tracked"] is False
