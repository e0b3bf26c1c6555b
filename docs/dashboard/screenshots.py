"""Regenerate the dashboard screenshots README shows (docs/dashboard/*.png): an emulator with the dashboard on free
ports, real clients producing and consuming (this project's asyncio client), then each main page in Debian's
chromium (testing/browser.py: no DNS, 127.0.0.1 only).

    .venv/bin/python docs/dashboard/screenshots.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))


async def traffic(namesrv: str) -> None:
    from rocketmq_emulator.client import Admin, FIRST_OFFSET, Producer, PushConsumer
    async with Admin(namesrv) as admin:
        await admin.create_topic("Payments", 2, 2)
    async with Producer("shop", namesrv=namesrv) as p:
        for i in range(40):
            await p.send("Orders", json.dumps({"order": f"order-{i}", "amount": 10 + i}).encode(), tags="paid",
                         keys=f"order-{i}", properties={"region": "eu" if i % 2 else "us"})
        for i in range(5):
            await p.send("Payments", f"payment {i}".encode(), tags="card", keys=f"pay-{i}")
    got = asyncio.Event()
    seen = 0
    consumer = PushConsumer("billing", namesrv=namesrv, consume_from=FIRST_OFFSET)
    consumer.subscribe("Orders")

    @consumer.on_message
    def handle(msg: object) -> None:
        nonlocal seen
        seen += 1
        if seen >= 30:
            got.set()
    async with consumer:
        await asyncio.wait_for(got.wait(), 60)
        await asyncio.sleep(6)  # commits


def main() -> None:
    from rocketmq_emulator.testing.browser import browser_page
    from rocketmq_emulator.testing.emulator_process import launch_emulator
    with tempfile.TemporaryDirectory() as tmp:
        broker = launch_emulator(Path(tmp), "--topic", "Orders:4", "--trace", str(Path(tmp) / "trace.log"),
                                 dashboard=True)
        try:
            asyncio.run(traffic(broker.namesrv_addr))
            url = broker.dashboard_url
            assert url is not None
            shots = {"overview": "#/", "topics": "#/topics", "topic": "#/topic/Orders",
                     "messages": "#/messages?topic=Orders&count=12", "group": "#/group/billing",
                     "trace": "#/trace"}
            with browser_page(1280, 860) as page:
                for name, route in shots.items():
                    page.goto(url + route)
                    page.wait_for_load_state("networkidle")
                    time.sleep(1.2)  # one live refresh
                    page.screenshot(path=str(HERE / f"{name}.png"), full_page=False)
                    print(f"wrote {HERE / f'{name}.png'}")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
