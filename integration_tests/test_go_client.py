"""The official Apache RocketMQ Go client (rocketmq-client-go v2.1.2, vendored in integration_tests/go/) against
the emulator over loopback TCP: produce, push consumers (clustering and broadcasting), pull, and a reset of a
group's offsets by time while its consumer is online. The driver (`rmq-go`, integration_tests/go/README.md) runs
the client and prints what it saw, one JSON object per line; the tests check that, and what the broker shows
through the admin API: stored messages, committed offsets, the reset's table."""

from __future__ import annotations

import asyncio
import json
import platform
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Awaitable, Callable, TypeVar

import pytest

from integration_tests.cppclient import DriverHandle
from rocketmq_emulator.client import Admin
from rocketmq_emulator.client.errors import ConsumerNotOnlineError
from rocketmq_emulator.testing.emulator_thread import EmulatorThread
from rocketmq_emulator.testing.waits import wait_until

pytestmark = pytest.mark.go

RMQ_GO = Path(__file__).resolve().with_name("go") / "rmq-go"
T = TypeVar("T")

if not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")):
    pytest.skip("integration_tests/go/rmq-go is a Linux x86-64 executable", allow_module_level=True)


# -- helpers ---------------------------------------------------------------------------------------------------
def fresh(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def start_go(emu: EmulatorThread, scenario: str, home: Path, *args: str, timeout: float = 150) -> DriverHandle:
    """Start `rmq-go SCENARIO` against `emu`; `home` is its HOME, client log and broadcasting offset store. The
    handle's watchdog kills it after `timeout` s (the driver's own watchdog fires first: --timeout + 15 s)."""
    assert RMQ_GO.exists(), f"{RMQ_GO} is missing (see integration_tests/go/README.md)"
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([str(RMQ_GO), scenario, "--namesrv", emu.namesrv_addr, "--home", str(home), *args],
                            cwd=home, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors="replace")
    return DriverHandle(proc, timeout, None)


def describe(handle: DriverHandle, home: Path) -> str:
    """For assertion messages: the driver's output and the warnings and errors of the client's own log."""
    text = handle.describe()
    log = home / "rocketmq-client.log"
    if log.exists():
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if " level=info " not in ln]
        text += "\nclient log (not info):\n" + "\n".join(lines[-40:])
    return text


def finished(handle: DriverHandle, home: Path) -> dict[str, Any]:
    """Wait for the driver; its result line, which must say the client saw the expected outcome."""
    handle.wait()
    results = handle.of("result")
    assert not handle.timed_out and results, describe(handle, home)
    assert results[-1]["ok"] is True and handle.returncode == 0, describe(handle, home)
    return results[-1]


def admin(emu: EmulatorThread, fn: Callable[[Admin], Awaitable[T]]) -> T:
    """Run `fn(admin)` with the project's asyncio Admin client connected to `emu`'s name server."""
    async def go() -> T:
        async with Admin(emu.namesrv_addr, timeout=10) as a:
            return await fn(a)
    return asyncio.run(go())


def create_topic(emu: EmulatorThread, topic: str, queues: int = 4) -> None:
    """The Go push and pull consumers refuse to start on a topic without a route: create it first."""
    admin(emu, lambda a: a.create_topic(topic, queues, queues))


def max_offsets(emu: EmulatorThread, topic: str) -> dict[int, int]:
    status = admin(emu, lambda a: a.topic_status(topic))
    return {mq.queue_id: off.max_offset for mq, off in status.items()}


def committed_offsets(emu: EmulatorThread, group: str, topic: str) -> dict[int, tuple[int, int]]:
    """Per queue (consumer offset, broker max offset) as the admin API's consumer progress shows them; empty
    while the group has committed nothing."""
    try:
        stats = admin(emu, lambda a: a.consumer_progress(group, topic))
    except ConsumerNotOnlineError:
        return {}
    return {mq.queue_id: (w.consumer_offset, w.broker_offset) for mq, w in stats.offset_table.items()}


def sent_by_queue(sent: list[dict[str, Any]]) -> dict[int, int]:
    return dict(Counter(e["queueId"] for e in sent))


def mine(handle: DriverHandle, phase: int = 1) -> list[dict[str, Any]]:
    return [e for e in handle.of("consumed") if e["mine"] and e["phase"] == phase]


# -- tests -----------------------------------------------------------------------------------------------------
def test_produce_stores_every_message_with_its_tag_and_keys(emulator, tmp_path):
    topic, keys, count = fresh("GoProduce"), fresh("kgo"), 8
    home = tmp_path / "produce"
    handle = start_go(emulator, "produce", home, "--topic", topic, "--count", str(count), "--tag", "TagGo",
                      "--keys", keys, "--timeout", "60")
    result = finished(handle, home)
    sent = handle.of("sent")
    assert result["sent_ok"] == count and result["send_failed"] == 0
    assert [e["status"] for e in sent] == ["OK"] * count, describe(handle, home)

    # the producer created the topic and spread the messages over its queues; the broker holds each of them
    maxes = max_offsets(emulator, topic)
    assert {q: n for q, n in maxes.items() if n} == sent_by_queue(sent)
    assert sorted((e["queueId"], e["offset"]) for e in sent) == sorted(
        (q, o) for q, n in maxes.items() for o in range(n))
    # by key, as `mqadmin queryMsgByKey` finds them
    by_key = admin(emulator, lambda a: a.query_message_by_key(topic, keys))
    assert sorted(m.text for m in by_key) == sorted(e["body"] for e in sent)
    assert {(m.tags, m.keys) for m in by_key} == {("TagGo", keys)}
    # by the offset message id each send returned
    for e in sent:
        m = admin(emulator, lambda a: a.query_message_by_id(e["offsetMsgId"], topic))
        assert (m.text, m.queue_id, m.queue_offset, m.tags) == (e["body"], e["queueId"], e["offset"], "TagGo")


def test_push_clustering_consumes_every_message_once_and_commits_the_offsets(emulator, tmp_path):
    topic, group, count = fresh("GoPush"), fresh("GID_go_push"), 12
    create_topic(emulator, topic)
    home = tmp_path / "push"
    # --linger 1: the driver counts a message in the listener; the client moves its offset after the listener
    # returns, so a shutdown at once could commit the last queue one short (client-side)
    handle = start_go(emulator, "push-clustering", home, "--topic", topic, "--group", group, "--count", str(count),
                      "--tag", "TagPush", "--keys", "kpush", "--settle", "2", "--linger", "1", "--timeout", "60")
    result = finished(handle, home)
    sent = handle.of("sent")
    consumed = mine(handle)
    assert result["sent_ok"] == count and len(sent) == count
    assert Counter(e["body"] for e in consumed) == Counter(e["body"] for e in sent), describe(handle, home)
    assert result["duplicate_deliveries"] == 0 and result["consumed_total"] == count
    assert {(e["topic"], e["tags"], e["keys"], e["reconsumeTimes"]) for e in consumed} == {
        (topic, "TagPush", "kpush", 0)}
    assert sorted((e["queueId"], e["queueOffset"]) for e in consumed) == sorted(
        (e["queueId"], e["offset"]) for e in sent)

    # the group's offsets, committed by the client, are on the broker: each queue consumed to its end
    expected = {q: (n, n) for q, n in max_offsets(emulator, topic).items()}
    assert sum(n for n, _ in expected.values()) == count
    seen: dict[int, tuple[int, int]] = {}

    def caught_up() -> bool:
        seen.update(committed_offsets(emulator, group, topic))
        return seen == expected
    assert wait_until(caught_up, 30, interval=0.5), f"committed {seen}, expected {expected}"


def test_push_broadcasting_consumes_everything_and_keeps_its_offsets_in_the_client(emulator, tmp_path):
    topic, group, count = fresh("GoBroadcast"), fresh("GID_go_bc"), 12
    create_topic(emulator, topic)
    home = tmp_path / "broadcast"
    handle = start_go(emulator, "push-broadcasting", home, "--topic", topic, "--group", group,
                      "--count", str(count), "--tag", "TagBc", "--keys", "kbc", "--settle", "2", "--linger", "1",
                      "--timeout", "60")
    result = finished(handle, home)
    sent = handle.of("sent")
    consumed = mine(handle)
    assert result["sent_ok"] == count and len(sent) == count
    assert Counter(e["body"] for e in consumed) == Counter(e["body"] for e in sent), describe(handle, home)
    assert {(e["tags"], e["keys"]) for e in consumed} == {("TagBc", "kbc")}

    # no committed offsets on the broker for a broadcasting group ...
    exported = admin(emulator, lambda a: a.export_offsets(group, topic)).offset_table
    assert f"{topic}@{group}" not in exported, exported
    assert emulator.call(lambda: [emulator.broker.consumer_offset_manager.query_offset(group, topic, q)
                                  for q in range(4)]) == [-1] * 4
    # ... the client keeps them in its local store (under the driver's home): each queue at its end
    files = list((home / "offsets" / group).glob("*/offset.json"))
    assert len(files) == 1, f"local offset store: {list((home / 'offsets').rglob('*'))}"
    table = json.loads(files[0].read_text())["offsetTable"]
    local = {json.loads(k)["queueId"]: v for k, v in table.items() if json.loads(k)["topic"] == topic}
    assert local == max_offsets(emulator, topic)


def test_pull_consumer_finds_every_message(emulator, tmp_path):
    topic, group, count = fresh("GoPull"), fresh("GID_go_pull"), 12
    home = tmp_path / "pull"
    # the driver sends first (which creates the topic: 4 queues), then pulls every queue from offset 0; with
    # 3 messages a queue no pull reaches an empty queue end (held 20 s by long polling)
    handle = start_go(emulator, "pull", home, "--topic", topic, "--group", group, "--count", str(count),
                      "--tag", "TagPull", "--keys", "kpull", "--timeout", "60")
    result = finished(handle, home)
    sent = handle.of("sent")
    pulled = [e for e in mine(handle) if e["via"] == "pull"]
    assert result["sent_ok"] == count
    assert Counter(e["body"] for e in pulled) == Counter(e["body"] for e in sent), describe(handle, home)
    assert sorted((e["queueId"], e["queueOffset"], e["body"]) for e in pulled) == sorted(
        (e["queueId"], e["offset"], e["body"]) for e in sent)
    assert {(e["tags"], e["keys"]) for e in pulled} == {("TagPull", "kpull")}

    # it saw the topic's queues and pulled each to the broker's max offset
    maxes = max_offsets(emulator, topic)
    queues = handle.of("queues")
    assert queues and sorted(q["queueId"] for q in queues[0]["queues"]) == sorted(maxes)
    last: dict[int, dict[str, Any]] = {}
    for e in handle.of("pull_status"):
        last[e["queueId"]] = e
    assert {q: (e["status"], e["nextBeginOffset"], e["maxOffset"]) for q, e in last.items()} == {
        q: ("FOUND", n, n) for q, n in maxes.items()}, describe(handle, home)


def test_reset_by_time_with_a_live_consumer_redelivers_every_message_once(emulator, tmp_path):
    topic, group, count = fresh("GoReset"), fresh("GID_go_reset"), 8
    create_topic(emulator, topic)
    home = tmp_path / "reset"
    # --commit-wait 0: the test itself waits until the broker shows the committed offsets. --linger 11: the Go
    # client applies a reset itself 10 s after the broker's RESET_CONSUMER_CLIENT_OFFSET; the driver keeps
    # consuming that long after the redeliveries, so a second redelivery would be seen and the offsets it
    # commits at shutdown are the final ones
    handle = start_go(emulator, "reset-check", home, "--topic", topic, "--group", group, "--count", str(count),
                      "--tag", "TagReset", "--keys", "kreset", "--settle", "2", "--commit-wait", "0",
                      "--reset-wait", "60", "--linger", "11", "--timeout", "60", timeout=200)
    try:
        awaiting = handle.wait_for("awaiting_reset", 90)
        assert awaiting is not None, describe(handle, home)
        sent = handle.of("sent")
        # the driver prints a message's "consumed" line after it has counted it (outside its lock), so the last
        # line can come just after "awaiting_reset": wait a moment for it
        deadline = time.monotonic() + 5
        while Counter(e["body"] for e in mine(handle)) != Counter(e["body"] for e in sent) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(sent) == count and Counter(e["body"] for e in mine(handle)) == Counter(e["body"] for e in sent)

        # the client commits what it consumed (it persists every 5 s): the group is caught up on the broker
        expected = {q: (n, n) for q, n in max_offsets(emulator, topic).items()}
        seen: dict[int, tuple[int, int]] = {}

        def caught_up() -> bool:
            seen.update(committed_offsets(emulator, group, topic))
            return seen == expected
        assert wait_until(caught_up, 30, interval=0.5), f"committed {seen}, expected {expected}"

        # reset by time (as `mqadmin resetOffsetByTime`) to just before the first send, the consumer online:
        # the broker resets the group's offsets of every queue to 0 and tells the client
        reset = admin(emulator, lambda a: a.reset_offset_by_timestamp(group, topic, awaiting["timestamp"]))
        assert reset.method == "broker"
        assert {r.queue.queue_id: r.offset for r in reset.rows} == {q: 0 for q in expected}
    except BaseException:
        handle.kill()
        raise

    result = finished(handle, home)
    again = mine(handle, phase=2)
    assert result["redelivered_counts"] == {str(i): 1 for i in range(count)}, describe(handle, home)
    assert sorted((e["queueId"], e["queueOffset"], e["body"]) for e in again) == sorted(
        (e["queueId"], e["offset"], e["body"]) for e in sent)
    # consumed again to the end: the committed offsets are back at each queue's max offset
    seen.clear()
    assert wait_until(caught_up, 30, interval=0.5), f"committed after the reset {seen}, expected {expected}"
