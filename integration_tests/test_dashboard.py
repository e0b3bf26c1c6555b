"""The dashboard (`serve --dashboard-port`) in a real browser: Debian's chromium driven by Playwright
(testing/browser.py: no browser download, no DNS, 127.0.0.1 only), against the emulator in a subprocess with real
clients producing and consuming. The page's numbers must equal `admin topicStatus/consumerProgress --json`; a
browse by key, a reset from the page that the live consumer follows and the offset history of that reset; bad
input shown in the page with a 4xx from the API; read-only mode."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from rocketmq_emulator.testing.browser import browser_page
from rocketmq_emulator.testing.command_line import run_cli
from rocketmq_emulator.testing.emulator_process import launch_emulator

from .cppclient import start_driver

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def dashboard(tmp_path: Path):
    broker = launch_emulator(tmp_path, "--topic", "Orders:4", dashboard=True)
    try:
        yield broker
    finally:
        broker.stop()


def produce(namesrv: str, topic: str, n: int) -> None:
    async def go() -> None:
        from rocketmq_emulator.client import Producer
        async with Producer("dash-producer", namesrv=namesrv) as p:
            for i in range(n):
                await p.send(topic, json.dumps({"order": i}).encode(), tags="TagA", keys=f"order-{i}")
    asyncio.run(go())


def cli_json(*args: str) -> object:
    done = run_cli("admin", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cells(page, table: str, column: str) -> list[str]:  # noqa: ANN001
    return [c.strip() for c in page.locator(f'[data-testid="{table}"] td[data-col="{column}"]').all_inner_texts()]


def rows(page, table: str) -> list[dict[str, str]]:  # noqa: ANN001
    """The table's rows (the totals row left out), each as {column: text}."""
    return page.eval_on_selector_all(
        f'[data-testid="{table}"] tbody tr:not(.total)',
        "trs => trs.map(tr => Object.fromEntries([...tr.cells].map(td => [td.dataset.col, td.innerText.trim()])))")


def shot(page, name: str) -> None:  # noqa: ANN001
    """The docs' pictures come from these tests: with ROCKETMQ_EMULATOR_SCREENSHOTS=DIR each test writes the page
    it has just checked to DIR/NAME.png (docs/dashboard/screenshots.py runs them with DIR docs/dashboard)."""
    import os
    where = os.environ.get("ROCKETMQ_EMULATOR_SCREENSHOTS")
    if where:
        page.screenshot(path=str(Path(where) / f"{name}.png"))


def numbers(texts: list[str]) -> list[int]:
    return [int(t.replace(",", "")) for t in texts if t.replace(",", "").isdigit()]


def post(url: str, body: dict, origin: str | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({"Origin": origin} if origin else {})}
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_topic_and_group_pages_show_the_admin_commands_numbers_and_a_reset_from_the_page_is_followed(
        dashboard, tmp_path):
    ns, url = dashboard.namesrv_addr, dashboard.dashboard_url
    produce(ns, "Orders", 12)
    consumer = start_driver(["push", "--namesrv", ns, "--topic", "Orders", "--group", "billing", "--expect", "24",
                             "--duration", "120"], timeout=150, home=tmp_path / "cpp")
    try:
        assert consumer.wait_for(lambda e: len(consumer.of("received")) >= 12, timeout=60), consumer.describe()
        time.sleep(6)  # the C++ client commits every 5 s
        status = cli_json("topicStatus", "-n", ns, "-t", "Orders")
        with browser_page() as page:
            page.goto(url + "#/topic/Orders")
            page.wait_for_selector('[data-testid="queues"]')
            max_offsets = numbers(cells(page, "queues", "maxOffset"))
            assert max_offsets == [q["maxOffset"] for q in sorted(status, key=lambda q: q["queueId"])], \
                (max_offsets, status)
            assert sum(max_offsets) == 12
            shot(page, "topic")

            progress = cli_json("consumerProgress", "-n", ns, "-g", "billing")
            page.goto(url + "#/group/billing")
            page.wait_for_selector('[data-testid="progress"]')
            page.wait_for_function("document.querySelector('[data-testid=group-state]').textContent === 'online'")
            # a queue with nothing committed reads "none yet" where the command prints 0
            shown = {(r["topic"], int(r["queueId"])): (int(r["consumerOffset"].replace(",", "").replace(
                "none yet", "0")), int(r["diff"])) for r in rows(page, "progress")}
            assert shown == {(o["topic"], o["queueId"]): (o["consumerOffset"], o["diff"]) for o in progress["offsets"]}
            assert numbers(cells(page, "progress", "diff"))[-1] == progress["diffTotal"] == 0  # the total row
            shot(page, "group")

            # browse by key, from the messages page
            page.goto(url + "#/topics")
            page.wait_for_selector('[data-testid="topics"] a[href="#/topic/Orders"]')
            shot(page, "topics")
            page.goto(url + "#/")
            page.wait_for_selector('[data-testid="brokers"]')
            page.wait_for_selector('[data-testid="chart-broker"] svg path[data-series="put"]')
            shot(page, "overview")
            page.goto(url + "#/messages?topic=Orders&key=order-7")
            page.wait_for_selector('[data-testid="messages"] td[data-col="keys"]')
            assert cells(page, "messages", "keys") == ["order-7"]
            shot(page, "messages")
            page.locator('[data-testid="messages"] a').first.click()
            page.wait_for_selector('[data-testid="body"]')
            assert json.loads(page.locator('[data-testid="body"]').inner_text()) == {"order": 7}
            assert page.locator('[data-testid="body-kind"]').inner_text() == "json"

            # reset to the earliest offsets from the page: preview, then apply
            page.goto(url + "#/group/billing")
            page.wait_for_selector("#reset")
            page.fill('#reset input[name="topic"]', "Orders")
            page.select_option('#reset select[name="mode"]', "earliest")
            page.click('#reset button[value="preview"]')
            page.wait_for_selector('[data-testid="reset-targets"]')
            assert set(numbers(cells(page, "reset-targets", "to"))) == {0}
            assert "preview" in page.locator("#preview").inner_text()
            page.click('#reset button[value="apply"]')
            page.wait_for_function("document.querySelector('#notice').textContent.includes('applied')")
            assert consumer.wait_for(lambda e: len(consumer.of("received")) >= 24, timeout=60), consumer.describe()
            page.wait_for_function("document.querySelector('[data-testid=history]') && "
                                   "document.querySelector('[data-testid=history]').textContent.includes('reset')")
            kinds = cells(page, "history", "kind")
            assert "reset" in kinds and "commit" in kinds, kinds
    finally:
        consumer.stop()
    bodies = [e["body"] for e in consumer.of("received")]
    assert sorted(set(bodies)) == sorted(json.dumps({"order": i}) for i in range(12))
    assert all(bodies.count(b) == 2 for b in set(bodies)), bodies  # each once more after the reset


def test_bad_input_is_a_message_in_the_page_and_a_4xx_from_the_api(dashboard):
    url = dashboard.dashboard_url
    with browser_page() as page:
        page.goto(url + "#/topics")
        page.wait_for_selector("#create-topic")
        page.fill('#create-topic input[name="topic"]', "bad topic!")
        page.click("#create-topic button")
        page.wait_for_selector("#notice.error")
        assert "illegal characters" in page.locator("#notice").inner_text()
        page.goto(url + "#/messages?topic=NoSuchTopic")
        page.wait_for_function("document.querySelector('#notice').textContent.includes('does not exist')")
    assert post(url + "api/topics", {"topic": "ok", "queues": -3})[0] == 400
    assert post(url + "api/groups/g/reset", {"topic": "Orders", "mode": "time", "time": "yesterday"})[0] == 400
    assert post(url + "api/groups/g/reset", {"topic": "Orders", "mode": "offset", "queueId": 0,
                                             "offset": -1})[0] == 400
    assert post(url + "api/send", {"topic": "Orders"}, origin="http://elsewhere.example")[0] == 403
    status, body = post(url + "api/topics/Nope/delete", {})
    assert status == 404 and "Nope" in body["error"]
    assert get_status(url + "api/topics/Orders/messages?count=abc") == 400
    assert get_status(url + "api/no/such/thing") == 404


def get_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_read_only_hides_and_refuses_the_actions(tmp_path):
    broker = launch_emulator(tmp_path, "--topic", "Orders:4", "--dashboard-read-only", "true", dashboard=True)
    try:
        url = broker.dashboard_url
        status, body = post(url + "api/topics", {"topic": "NewOne"})
        assert status == 403 and "read-only" in body["error"]
        with browser_page() as page:
            page.goto(url + "#/topics")
            page.wait_for_selector('[data-testid="topics"]')
            page.wait_for_function("document.body.classList.contains('read-only')")
            assert not page.locator("#create-topic").is_visible()
            assert cells(page, "topics", "topic") == ["Orders"]
    finally:
        broker.stop()


def test_the_topic_and_group_lists_group_resources_by_namespace(dashboard):
    """Topics and groups of a 4.x client's namespace (`MQ_INST_1_a%Orders`): a namespace column, rows grouped by
    namespace, and a namespace select that keeps one namespace's rows."""
    ns, url = dashboard.namesrv_addr, dashboard.dashboard_url
    for namespace in ("MQ_INST_1_a", "MQ_INST_1_b"):
        assert run_cli("admin", "updateTopic", "-n", ns, "--namespace", namespace, "-t", "Orders").returncode == 0
        assert run_cli("admin", "updateSubGroup", "-n", ns, "--namespace", namespace, "-g", "billing").returncode == 0
    with browser_page() as page:
        page.goto(url + "#/topics")
        page.wait_for_selector('[data-testid="topics"] td[data-col="namespace"]')
        assert cells(page, "topics", "namespace") == ["", "MQ_INST_1_a", "MQ_INST_1_b"]
        assert cells(page, "topics", "topic") == ["Orders", "MQ_INST_1_a%Orders", "MQ_INST_1_b%Orders"]
        page.select_option("#namespace", "MQ_INST_1_b")
        page.wait_for_function("document.querySelectorAll('[data-testid=topics] tbody tr').length === 1")
        assert cells(page, "topics", "topic") == ["MQ_INST_1_b%Orders"]
        page.goto(url + "#/groups")
        page.wait_for_selector('[data-testid="groups"] td[data-col="namespace"]')
        assert cells(page, "groups", "group") == ["MQ_INST_1_a%billing", "MQ_INST_1_b%billing"]
        page.select_option("#namespace", "MQ_INST_1_a")
        page.wait_for_function("document.querySelectorAll('[data-testid=groups] tbody tr').length === 1")
        assert cells(page, "groups", "namespace") == ["MQ_INST_1_a"]


def test_the_first_rounds_page_defects_are_gone(tmp_path):
    """The topic page's totals row (no NaN, the latest store time), a group page that asks for no DLQ it does not
    have (no 404 at each refresh), a JSON wire trace shown as readable text, and a POP group's page with its
    popped-and-not-acked messages and its retry topic's row."""
    from rocketmq_emulator.protocol import RemotingCommand, RequestCode
    from rocketmq_emulator.protocol.pop_headers import PopMessageRequestHeader
    from integration_tests.rawclient import RawClient
    trace = tmp_path / "trace.jsonl"
    broker = launch_emulator(tmp_path / "emu", "--topic", "Orders:2", "--trace", str(trace), "--trace-format",
                             "json", dashboard=True)
    try:
        ns, url = broker.namesrv_addr, broker.dashboard_url
        produce(ns, "Orders", 3)

        async def pop_and_revive() -> None:  # a POP group pops one message and lets its invisible time run out
            host, port = broker.broker_addr.rsplit(":", 1)
            c = await RawClient.connect(host, int(port))
            try:
                r = await c.request(RemotingCommand.request(RequestCode.POP_MESSAGE, PopMessageRequestHeader(
                    consumer_group="PopG", topic="Orders", queue_id=-1, max_msg_nums=1, invisible_time=60_000,
                    poll_time=0, born_time=int(time.time() * 1000), init_mode=0).to_ext()))
                assert r.code == 0, r.remark
            finally:
                c.close()
        asyncio.run(pop_and_revive())
        with browser_page() as page:
            not_found: list[str] = []
            page.on("response", lambda r: not_found.append(r.url) if r.status == 404 else None)
            page.goto(url + "#/topic/Orders")
            page.wait_for_selector('[data-testid="queues"] tr.total')
            total = page.inner_text('[data-testid="queues"] tr.total')
            assert "NaN" not in total and "never" not in total and "total" in total, total
            page.goto(url + "#/group/PopG")
            page.wait_for_selector('[data-testid="unacked"]')
            assert cells(page, "unacked", "topic") == ["Orders"]
            time.sleep(3)  # a refresh or two
            assert not [u for u in not_found if "%25DLQ%25" in u or "%DLQ%" in u], not_found
            page.goto(url + "#/trace")
            page.wait_for_function("document.querySelector('[data-testid=trace]').textContent.includes('<-')")
            text = page.inner_text('[data-testid="trace"]')
            assert not any(line.startswith("{") for line in text.splitlines()), text[:500]
            shot(page, "trace")
        assert run_cli("admin", "advanceTime", "-n", ns, "-s", "61").returncode == 0  # revived: in its retry topic
        with urllib.request.urlopen(url + "api/groups/PopG", timeout=10) as answer:
            detail = json.loads(answer.read())
        rows = {q["topic"]: q for q in detail["queues"]}
        assert rows["%RETRY%PopG_Orders"]["diff"] == 1, detail["queues"]  # the revived message, waiting
        assert detail["dlq"] is False
    finally:
        broker.stop()


def _last(page, chart: str, series: str) -> float | None:  # noqa: ANN001
    value = page.get_attribute(f'[data-testid="{chart}"] .key[data-series="{series}"]', "data-last")
    return float(value) if value else None


def _points(page, chart: str) -> int:  # noqa: ANN001
    return int(page.get_attribute(f'[data-testid="{chart}"]', "data-points") or 0)


def test_charts_move_a_stopped_consumers_lag_rises_and_a_reset_is_marked(tmp_path):
    """A producer sends all along and the project's own consumer (`consume`, a subprocess) takes them: the group
    page's charts gain points every sample; once the consumer stops, the messages behind rise on the chart; a reset
    (admin resetOffsetByTime) appears as an event, the consumer's leaving too; the topic and overview charts show
    the put rate."""
    import signal
    import subprocess
    import threading

    from rocketmq_emulator.testing.command_line import COMMAND
    broker = launch_emulator(tmp_path / "emu", "--topic", "Charts:2", "--dashboard-sample-seconds", "0.5",
                             dashboard=True)
    stop_producing = threading.Event()

    def producing() -> None:
        async def go() -> None:
            from rocketmq_emulator.client import Producer
            async with Producer("chart-producer", namesrv=ns) as p:
                i = 0
                while not stop_producing.is_set():
                    await p.send("Charts", f"m{i}", tags="TagA")
                    i += 1
                    await asyncio.sleep(0.02)
        asyncio.run(go())

    ns, url = broker.namesrv_addr, broker.dashboard_url
    producer = threading.Thread(target=producing, daemon=True)
    consumer = subprocess.Popen([*COMMAND, "consume", "-n", ns, "-t", "Charts", "-g", "ChartGroup", "--json"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        producer.start()
        with browser_page() as page:
            page.goto(url + "#/group/ChartGroup")
            page.wait_for_function("Number(document.querySelector('[data-testid=chart-lag]')?.dataset.points) >= 3",
                                   timeout=30_000)
            before = _points(page, "chart-lag")
            page.wait_for_function(f"Number(document.querySelector('[data-testid=chart-lag]')?.dataset.points) > "
                                   f"{before + 1}", timeout=30_000)  # the chart moves
            assert page.locator('[data-testid="chart-lag"] svg path[data-series="diff"]').count() == 1
            assert (_last(page, "chart-get", "get") or 0) > 0  # the consumer pulls
            behind_while_consuming = _last(page, "chart-lag", "diff") or 0

            consumer.send_signal(signal.SIGINT)
            consumer.wait(30)
            page.wait_for_function(  # the stopped consumer's lag rises
                f"Number(document.querySelector('[data-testid=chart-lag] .key[data-series=diff]')?.dataset.last) > "
                f"{behind_while_consuming + 30}", timeout=30_000)
            page.wait_for_selector('[data-testid="chart-lag"] g.event[data-kind="joined"]')
            page.wait_for_selector('[data-testid="chart-lag"] g.event[data-kind="left"], '
                                   '[data-testid="chart-lag"] g.event[data-kind="disconnected"]')

            assert run_cli("admin", "resetOffsetByTime", "-n", ns, "-g", "ChartGroup", "-t", "Charts", "-s",
                           "0").returncode == 0
            page.wait_for_selector('[data-testid="chart-lag"] g.event[data-kind="reset"]', timeout=30_000)
            title = page.text_content('[data-testid="chart-lag"] g.event[data-kind="reset"] title') or ""
            assert "reset: Charts queue" in title, title
            shot(page, "group-charts")

            page.goto(url + "#/topic/Charts")
            page.wait_for_function("Number(document.querySelector('[data-testid=chart-topic]')?.dataset.points) >= 2")
            page.wait_for_function("Number(document.querySelector('[data-testid=chart-topic] .key')?.dataset.last) > 0")
            page.goto(url + "#/")
            page.wait_for_selector('[data-testid="chart-broker"] svg path[data-series="put"]')
            shot(page, "overview-charts")
    finally:
        stop_producing.set()
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
        producer.join(10)
        broker.stop()


def test_the_pages_and_charts_work_with_1000_topics_and_1000_groups(tmp_path):
    """1,000 topics and 1,000 groups (an entities file): each list shows its first 100 with the count, the overview
    and a group's page draw their charts, and the charts' samples stay within their bound."""
    entities = tmp_path / "entities.json"
    entities.write_text(json.dumps({"topics": [{"name": f"many-topic-{i:04d}", "queues": 2} for i in range(1000)],
                                    "groups": [{"name": f"many-group-{i:04d}"} for i in range(1000)]}))
    broker = launch_emulator(tmp_path / "emu", "--entities", str(entities), "--dashboard-sample-seconds", "0.5",
                             dashboard=True)
    try:
        url = broker.dashboard_url
        produce(broker.namesrv_addr, "many-topic-0007", 5)
        with browser_page() as page:
            page.goto(url + "#/topics")
            page.wait_for_selector('[data-testid="shown"]')
            shown = page.inner_text('[data-testid="shown"]')
            assert shown.startswith("100 of 1000"), shown
            page.goto(url + "#/groups")
            page.wait_for_function("document.querySelector('[data-testid=shown]')?.textContent.includes('of 1000')")
            page.goto(url + "#/")
            page.wait_for_selector('[data-testid="chart-broker"] svg path[data-series="put"]', timeout=30_000)
            page.goto(url + "#/group/many-group-0999")
            page.wait_for_selector('[data-testid="chart-lag"] svg', timeout=30_000)
            page.goto(url + "#/topic/many-topic-0007")
            page.wait_for_function(
                "Number(document.querySelector('[data-testid=chart-topic] .key')?.dataset.last) >= 0", timeout=30_000)
        with urllib.request.urlopen(url + "api/series/groups/many-group-0500", timeout=10) as answer:
            group = json.loads(answer.read())
        assert group["tracked"] is True and len(group["t"]) >= 2 and group["keepSeconds"] == 360
    finally:
        broker.stop()


def test_the_story_of_a_message_retried_twice_then_consumed_lists_each_step_in_order(tmp_path):
    """A consumer (the project's asyncio client) answers RECONSUME_LATER twice, then consumes: the message's story
    page lists it sent, stored, delivered, then each retry (its copy in the retry topic) and its delivery, in order,
    with the offset commit that passed it; the message page links to it."""
    import threading

    from rocketmq_emulator.client import FIRST_OFFSET, ClientConfig, ConsumeResult, PushConsumer
    conf = tmp_path / "broker.conf"
    conf.write_text("messageDelayLevel=1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s\n")
    broker = launch_emulator(tmp_path / "emu", "--topic", "Stories:1", "--config", str(conf), dashboard=True)
    attempts: list[int] = []
    done = threading.Event()

    def consuming() -> None:
        async def go() -> None:
            consumer = PushConsumer("StoryGroup", consume_from=FIRST_OFFSET, config=ClientConfig(
                namesrv=broker.namesrv_addr, persist_consumer_offset_interval=0.5))
            consumer.subscribe("Stories", "*")

            def handle(msg):  # noqa: ANN001, ANN202
                attempts.append(msg.reconsume_times)
                if msg.reconsume_times < 2:
                    return ConsumeResult.RECONSUME_LATER
                done.set()
                return ConsumeResult.SUCCESS
            consumer.on_message(handle)
            await consumer.start()
            try:
                while not done.is_set():
                    await asyncio.sleep(0.1)
                await asyncio.sleep(1.2)  # the offsets committed (every 0.5 s here) before the consumer stops
            finally:
                await consumer.stop()
        try:
            asyncio.run(go())
        except Exception as exc:  # noqa: BLE001 - said by the assertion below, at once
            failed.append(exc)
            done.set()

    failed: list[BaseException] = []
    try:
        produce(broker.namesrv_addr, "Stories", 1)
        worker = threading.Thread(target=consuming, daemon=True)
        worker.start()
        assert done.wait(60) and not failed, f"consumed attempts {attempts}, {failed}"
        worker.join(30)
        assert attempts == [0, 1, 2]
        url = broker.dashboard_url
        with browser_page() as page:
            page.goto(url + "#/story")  # by its key: the messages with it, each with its story
            page.fill('#story input[name="topic"]', "Stories")
            page.fill('#story input[name="key"]', "order-0")
            page.click("#story button")
            page.wait_for_selector('[data-testid="messages"] a[href^="#/story/"]')
            assert cells(page, "messages", "keys") == ["order-0"]
            page.click('[data-testid="messages"] a[href^="#/story/"]')
            page.wait_for_selector('[data-testid="story"]')
            page.wait_for_function("document.querySelectorAll('[data-testid=story] td[data-col=what]').length >= 8")
            steps = rows(page, "story")
            whats = [s["what"] for s in steps]
            expected = ["sent", "stored", "delivered", "retry 1", "delivered", "retry 2", "delivered"]
            it = iter(whats)
            assert all(any(w == e for w in it) for e in expected), whats  # in this order
            assert "offset committed past it" in whats, whats
            assert whats.index("offset committed past it") > whats.index("delivered"), whats
            assert all(s["group"] == "StoryGroup" for s in steps if s["what"] not in ("sent", "stored")), steps
            delivered = [s["detail"] for s in steps if s["what"] == "delivered"]
            assert delivered[0].startswith("pull by ") and "attempt 2" in delivered[1] and "attempt 3" in delivered[2]
            times = [s["time"] for s in steps]
            assert times == sorted(times), times
            now = cells(page, "story-now", "detail")
            assert "consumed" in cells(page, "story-now", "where"), now
            assert not [d for d in now if "waiting for its retry" in d], now  # both retries were delivered
            shot(page, "story")
    finally:
        broker.stop()


def broker_ids(namesrv: str) -> list[int]:
    listed = cli_json("clusterList", "-n", namesrv)
    assert isinstance(listed, list)
    return sorted(b["brokerId"] for b in listed)


def test_the_controls_page_kills_pauses_and_starts_a_master_and_its_slave(tmp_path):
    """`serve --slaves 1` in one process: the controls page lists broker-a and its slave broker-a/1; killing the
    master leaves the slave serving every acknowledged message, a paused slave answers nothing until resumed, and
    the master starts again on its store and port."""
    broker = launch_emulator(tmp_path / "emu", "--topic", "Orders:2", dashboard=True, slaves=1)
    try:
        namesrv = broker.namesrv_addr
        produce(namesrv, "Orders", 4)  # SYNC_MASTER: each acknowledged once the slave has it
        with browser_page() as page:
            page.goto(broker.dashboard_url + "#/controls")
            page.wait_for_selector('[data-testid="cluster"]')
            assert [(r["key"], r["role"]) for r in rows(page, "cluster")] == [("broker-a", "SYNC_MASTER"),
                                                                               ("broker-a/1", "SLAVE")]
            slave_addr = rows(page, "cluster")[1]["addr"]
            shot(page, "controls-brokers")

            page.click('[data-broker="broker-a"][data-control="kill"]')
            page.wait_for_selector('[data-state="broker-a"]:text("stopped")')
            assert broker_ids(namesrv) == [1]
            got = run_cli("consume", "-n", namesrv, "-t", "Orders", "--from-beginning", "--max-messages", "4",
                          "--idle-timeout", "20", timeout=60)
            assert got.returncode == 0 and len(got.stdout.strip().splitlines()) == 4, got.stderr  # from the slave

            page.click('[data-broker="broker-a/1"][data-control="pause"]')
            page.wait_for_selector('[data-state="broker-a/1"]:text("paused")')
            silent = run_cli("admin", "brokerStatus", "-b", slave_addr, "--timeout", "1", timeout=30)
            assert silent.returncode != 0 and "no answer" in silent.stderr, silent.stderr
            page.click('[data-broker="broker-a/1"][data-control="resume"]')
            page.wait_for_selector('[data-state="broker-a/1"]:text("running")')
            assert run_cli("admin", "brokerStatus", "-b", slave_addr, timeout=30).returncode == 0

            page.click('[data-broker="broker-a"][data-control="start"]')
            page.wait_for_selector('[data-state="broker-a"]:text("running")')
            assert broker_ids(namesrv) == [0, 1]
    finally:
        broker.stop()
