"""What the dashboard costs the broker, and how fast its pages show a big broker.

    .venv/bin/python -m benchmarks.dashboard_bench            # 100,000 sends per round, 6 rounds per case
    .venv/bin/python -m benchmarks.dashboard_bench --quick    # 20,000, 1 round

* send throughput (SEND_MESSAGE_V2, 100 B, 64 in flight on one connection: broker_bench's driver, which saturates
  the broker) with no page open and with a topic's page
  open in chromium, refreshing every second; the cases alternate (A B B A ...), medians compared (target ≥ 0.95×);
* the control: the browser busy on a blank page that asks the broker nothing (the cores' sharing alone);
* the broker's own cost of an open page without a browser competing for the 2 cores: the topic page's requests
  replayed (its data each second, its chart's series each sample), broker CPU per refresh and per message;
* the broker's idle CPU with 1,000 topics and 1,000 groups while the dashboard samples for its charts;
* each page's first paint with 1,000 topics and 1,000 groups: from navigation start to its data table in the
  page (`performance.now()` when the table appears), in Debian's chromium (testing/browser.py); target ≤ 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))



async def send_rate(broker_addr: str, topic: str, n: int) -> float:
    """SEND_MESSAGE_V2 of 100 B pipelined on one connection, 64 in flight (broker_bench's driver: the broker, not
    a client, is the limit)."""
    from benchmarks.broker_bench import drive, send_frames
    elapsed, ok, failed = await drive(int(broker_addr.rsplit(":", 1)[1]), send_frames(topic, 100), n)
    if failed:
        raise RuntimeError(f"{failed} sends failed")
    return ok / elapsed


async def populate(namesrv: str, topics: int, groups: int) -> None:
    from rocketmq_emulator.client import Admin
    async with Admin(namesrv) as admin:
        for i in range(topics):
            await admin.create_topic(f"bench-topic-{i:04d}", 4, 4)
        for i in range(groups):
            await admin.update_subscription_group(f"bench-group-{i:04d}")


def run(coro):  # noqa: ANN001, ANN201
    """A coroutine run to its end on a thread of its own (Playwright's sync API holds this thread's loop)."""
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def first_paint(page, url: str, route: str, selector: str) -> float:  # noqa: ANN001
    page.goto("about:blank")
    page.goto(url + route)
    page.wait_for_selector(selector, timeout=30_000)
    return float(page.evaluate("performance.now()"))


def main() -> None:
    from rocketmq_emulator.testing.browser import browser_page
    from rocketmq_emulator.testing.emulator_process import launch_emulator
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n, rounds = (20000, 1) if args.quick else (100000, 6)  # (a round is half a second: its CPU per message
    # varies by about ±15 % between rounds on this 2-core machine, so 6 of each case)
    with tempfile.TemporaryDirectory() as tmp:
        broker = launch_emulator(Path(tmp), "--topic", "Bench:4", dashboard=True)
        try:
            url = broker.dashboard_url
            assert url is not None
            ns, addr = broker.namesrv_addr, broker.broker_addr
            run(send_rate(addr, "Bench", 5000))  # warm-up
            from benchmarks.grpc_bench import cpu_s
            closed, open_ = [], []
            cpu: dict[bool, list[float]] = {False: [], True: []}
            with browser_page() as page:
                for i in range(2 * rounds):  # A B B A A B ...: the order's own effect cancels out
                    with_page = i % 4 in (1, 2)
                    if with_page:
                        page.goto(url + "#/topic/Bench")
                        page.wait_for_selector('[data-testid="queues"]')
                    else:
                        page.goto("about:blank")
                    before = cpu_s(broker.pid)
                    (open_ if with_page else closed).append(run(send_rate(addr, "Bench", n)))
                    cpu[with_page].append((cpu_s(broker.pid) - before) / n * 1e6)
                closed_m, open_m = statistics.median(closed), statistics.median(open_)
                print(f"send 100 B, 64 in flight: no page {closed_m:,.0f} msg/s, topic page open and refreshing "
                      f"{open_m:,.0f} msg/s = {open_m / closed_m:.2f}x (rounds: {[round(x) for x in closed]} / "
                      f"{[round(x) for x in open_]})")
                without, with_ = statistics.median(cpu[False]), statistics.median(cpu[True])
                spread = {k: f"{min(v):.1f}-{max(v):.1f}" for k, v in cpu.items()}
                print(f"broker CPU per message: no page {without:.1f} us (rounds {spread[False]}), page open "
                      f"{with_:.1f} us (rounds {spread[True]}) = {with_ / without:.2f}x")
                # the control: the browser busy (a blank page burning about as much CPU as drawing the topic page)
                # and asking the broker nothing, so only the sharing of the 2 cores moves the broker's figure
                page.goto("about:blank")
                page.evaluate("setInterval(() => { const t = performance.now(); while (performance.now() - t < 40) {} }"
                              ", 100)")
                busy = []
                for _ in range(rounds):
                    before = cpu_s(broker.pid)
                    run(send_rate(addr, "Bench", n))
                    busy.append((cpu_s(broker.pid) - before) / n * 1e6)
                page.goto("about:blank")
                busy_m = statistics.median(busy)
                print(f"broker CPU per message with the browser busy on a blank page (no request to the broker): "
                      f"{busy_m:.1f} us (rounds {min(busy):.1f}-{max(busy):.1f}) = {busy_m / without:.2f}x of no page")
                # the broker's own cost of an open page, without a browser competing for the cores: the topic
                # page's requests (its data every second, its chart's series every sample), replayed
                import urllib.request
                refreshes = 200
                before = cpu_s(broker.pid)
                for i in range(refreshes):
                    for path in ("api/topics/Bench",) + (("api/series/topics/Bench",) if i % 5 == 0 else ()):
                        with urllib.request.urlopen(url + path, timeout=10) as answer:
                            answer.read()
                per_refresh_ms = (cpu_s(broker.pid) - before) / refreshes * 1000
                share = per_refresh_ms / 1000 / open_m * 1e6  # µs per message at the open-page rate, 1 refresh/s
                print(f"broker CPU per page refresh (the topic page's requests replayed, no browser): "
                      f"{per_refresh_ms:.2f} ms = {share:.4f} us per message at {open_m:,.0f} msg/s "
                      f"({share / without * 100:.2f} % of the broker's {without:.1f} us)")
                run(populate(ns, 1000, 1000))
                time.sleep(1)
                before, began = cpu_s(broker.pid), time.perf_counter()
                time.sleep(10)  # idle with 1,000 topics and 1,000 groups: the charts' sampling is what runs
                idle = (cpu_s(broker.pid) - before) / (time.perf_counter() - began) * 100
                print(f"broker CPU idle with 1,000 topics and 1,000 groups, the dashboard sampling every 5 s: "
                      f"{idle:.1f} % of a core")
                pages = {"overview": ("#/", '[data-testid="brokers"]'),
                         "topics": ("#/topics", '[data-testid="topics"]'),
                         "topic": ("#/topic/bench-topic-0500", '[data-testid="queues"]'),
                         "messages": ("#/messages?topic=Bench&count=50", '[data-testid="messages"]'),
                         "groups": ("#/groups", '[data-testid="groups"]'),
                         "group": ("#/group/bench-group-0500", '[data-testid="progress"]')}
                for name, (route, selector) in pages.items():
                    times = [first_paint(page, url, route, selector) for _ in range(3)]
                    print(f"first paint, 1,000 topics and 1,000 groups, {name:9}: {statistics.median(times):.0f} ms "
                          f"(runs {[round(t) for t in times]})")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
