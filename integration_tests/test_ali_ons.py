"""ali-ons 3.12.0 (npm `ali-ons`, Alibaba's pure-JavaScript RocketMQ 4 client) against the emulator: the drivers
in integration_tests/node/ (`ons_consumer.js`, `ons_producer.js`; the package pinned by package.json and
package-lock.json) run with the machine's node, installed once a session by `npm ci` into a cache outside the
repository (~/.cache/rocketmq-emulator-tests/, or $ROCKETMQ_EMULATOR_TEST_CACHE). Missing node/npm or a failed
install fails the tests (nothing is skipped).

What ali-ons does that the other clients do not: it reports language JAVA, version 121, in every request (its
heartbeats included) but never answers the broker's requests: it ignores RESET_CONSUMER_CLIENT_OFFSET (and
GET_CONSUMER_RUNNING_INFO, ...). After a reset it goes on pulling from its old offsets; it moves only when a pull
is answered PULL_OFFSET_MOVED (its OFFSET_ILLEGAL: it pulls from the answer's nextBeginOffset and stores it as
its offset). So a reset reaches it only through the broker's server-side reset at its next pull.

Select them with `-k ali_ons` (a `node` marker is set too; it is not registered in pyproject.toml yet).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from filelock import FileLock

from integration_tests.cppclient import DriverHandle
from rocketmq_emulator.client import Admin
from rocketmq_emulator.testing.command_line import run_cli
from rocketmq_emulator.testing.emulator_thread import held_pulls
from rocketmq_emulator.testing.waits import wait_until

pytestmark = [pytest.mark.node, pytest.mark.timeout(300)]

NODE_DIR = Path(__file__).resolve().with_name("node")
ALI_ONS_VERSION = "3.12.0"
#: the files copied next to the installed node_modules (the scripts are copied each session: cheap, always fresh)
DRIVER_FILES = ("package.json", "package-lock.json", "ons_consumer.js", "ons_producer.js")
COUNT = 10


# ----------------------------------------------------------------------------------------------------------
# the ali-ons install (once a session, cached across sessions by the lock file's hash)
# ----------------------------------------------------------------------------------------------------------
def _cache_root() -> Path:
    explicit = os.environ.get("ROCKETMQ_EMULATOR_TEST_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rocketmq-emulator-tests"


def _installed(folder: Path) -> bool:
    try:
        meta = json.loads((folder / "node_modules" / "ali-ons" / "package.json").read_text())
    except (OSError, ValueError):
        return False
    return meta.get("version") == ALI_ONS_VERSION


@pytest.fixture(scope="session")
def ali_ons() -> Path:
    """The folder holding ali-ons 3.12.0's node_modules and the driver scripts; fails (never skips) when node or
    npm is missing or `npm ci` fails."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail(f"the ali-ons tests need node and npm on PATH (node: {node}, npm: {npm}); install Node.js "
                    f"(>= 8) or deselect them with -k 'not ali_ons'", pytrace=False)
    lock = (NODE_DIR / "package-lock.json").read_bytes() + (NODE_DIR / "package.json").read_bytes()
    folder = _cache_root() / f"ali-ons-{ALI_ONS_VERSION}-{hashlib.sha256(lock).hexdigest()[:12]}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder.with_name(folder.name + ".lock")), timeout=900):  # parallel workers install once
        _install(npm, folder)
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"ali-ons {ALI_ONS_VERSION} in {folder}, node {version}")
    return folder


def _install(npm: str, folder: Path) -> None:
    """`npm ci` of ali-ons into `folder` when it is not there yet, and the driver scripts copied in."""
    if not _installed(folder):
        staging = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(NODE_DIR / name, staging / name)
        try:
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=staging,
                                  capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"npm ci of ali-ons {ALI_ONS_VERSION} in {staging} took over 600 s: {e}", pytrace=False)
        if done.returncode != 0 or not _installed(staging):
            pytest.fail(f"npm ci of ali-ons {ALI_ONS_VERSION} in {staging} failed (exit {done.returncode}):\n"
                        f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}", pytrace=False)
        shutil.rmtree(folder, ignore_errors=True)
        try:
            staging.rename(folder)
        except OSError:  # another session installed it meanwhile
            shutil.rmtree(staging, ignore_errors=True)
        if not _installed(folder):
            pytest.fail(f"ali-ons {ALI_ONS_VERSION} is not in {folder} after npm ci", pytrace=False)
    for name in DRIVER_FILES:
        if not (folder / name).exists() or (folder / name).read_bytes() != (NODE_DIR / name).read_bytes():
            shutil.copy2(NODE_DIR / name, folder / name)


# ----------------------------------------------------------------------------------------------------------
# drivers
# ----------------------------------------------------------------------------------------------------------
def start_node(folder: Path, script: str, *args: str, timeout: float) -> DriverHandle:
    """`node <script> <args>` in the install folder; its JSON lines become `events` (killed after `timeout`)."""
    proc = subprocess.Popen(["node", script, *map(str, args)], cwd=folder, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    return DriverHandle(proc, timeout)


def ons_consumer(folder: Path, emu, topic: str, group: str, *, tag: str = "*", duration: int = 120) -> DriverHandle:
    handle = start_node(folder, "ons_consumer.js", "--namesrv", emu.namesrv_addr, "--topic", topic, "--group",
                        group, "--tag", tag, "--timeout", duration, timeout=duration + 30)
    assert handle.wait_for("started", 30), "ali-ons consumer did not start:\n" + handle.describe()
    return handle


def ons_produce(folder: Path, emu, topic: str, count: int = COUNT, *, prefix: str = "m-") -> list[dict]:
    handle = start_node(folder, "ons_producer.js", "--namesrv", emu.namesrv_addr, "--topic", topic, "--count",
                        count, "--prefix", prefix, timeout=60)
    handle.wait()
    sent = handle.of("sent")
    assert handle.returncode == 0 and len(sent) == count and all(e["sendStatus"] == "SEND_OK" for e in sent), \
        "ali-ons producer:\n" + handle.describe()
    return sent


def received_bodies(handle: DriverHandle, since_ms: float = 0) -> list[str]:
    return sorted(e["body"] for e in handle.of("received") if e["ts"] >= since_ms)


def pull_log(handle: DriverHandle, since_ms: float, topic: str) -> list[str]:
    """ali-ons's log lines of its pull results on `topic` from `since_ms` on (what it asked and was answered)."""
    out = []
    for line in handle.stderr.splitlines():
        stamp, _, text = line.partition(" ")
        if stamp.isdigit() and int(stamp) >= since_ms and "pull message result" in text and f'"{topic}"' in text:
            out.append(f"+{(int(stamp) - since_ms) / 1000:.1f}s {text}")
    return out


def create_topic(emu, topic: str, queues: int = 4) -> None:
    async def go():
        async with Admin(emu.namesrv_addr) as admin:
            await admin.create_topic(topic, queues, queues)
    emu.run(go(), timeout=60)


def progress(emu, group: str, topic: str) -> dict[int, tuple[int, int]]:
    """Per queue id of `topic`: (the broker's max offset, the group's committed offset), as consumerProgress."""
    async def go():
        async with Admin(emu.namesrv_addr) as admin:
            return await admin.consumer_progress(group, topic)
    stats = emu.run(go(), timeout=60)
    return {mq.queue_id: (w.broker_offset, w.consumer_offset) for mq, w in stats.offset_table.items()
            if mq.topic == topic}


def committed_to_the_end(emu, group: str, topic: str, queues: int) -> bool:
    try:
        table = progress(emu, group, topic)
    except Exception:  # no progress yet (CONSUMER_NOT_ONLINE)
        return False
    return len(table) == queues and all(committed == end for end, committed in table.values())


def consume_all(folder: Path, emu, topic: str, group: str, queues: int = 4) -> tuple[DriverHandle, list[dict]]:
    """An ali-ons consumer of `group` pulling every queue of `topic`, then COUNT messages sent with ali-ons's
    producer and all received."""
    consumer = ons_consumer(folder, emu, topic, group)
    try:
        assert wait_until(lambda: held_pulls(emu, topic) >= queues, 30), \
            f"ali-ons is not pulling the {queues} queues of {topic}:\n" + consumer.describe()
        sent = ons_produce(folder, emu, topic)
        expected = sorted(e["body"] for e in sent)
        assert wait_until(lambda: received_bodies(consumer) == expected, 30), \
            f"ali-ons received {received_bodies(consumer)}, expected {expected}:\n" + consumer.describe()
    except BaseException:
        consumer.kill()
        raise
    return consumer, sent


# ----------------------------------------------------------------------------------------------------------
# tests
# ----------------------------------------------------------------------------------------------------------
def test_ali_ons_produces_consumes_and_commits_offsets(emulator, ali_ons):
    """Smoke: ali-ons's producer sends 10 messages, its clustering consumer receives each once, and its
    periodic commit (every 5 s) brings the group's committed offsets to the ends of the queues."""
    topic, group = "OnsSmoke", "ons-smoke"
    create_topic(emulator, topic)
    consumer, sent = consume_all(ali_ons, emulator, topic, group)
    try:
        assert len({e["msgId"] for e in sent}) == COUNT
        received = consumer.of("received")
        assert sorted(e["msgId"] for e in received) == sorted(e["msgId"] for e in sent)
        assert {(e["queueId"], e["queueOffset"]) for e in received} == \
            {(e["queueId"], e["queueOffset"]) for e in sent}
        assert all(e["reconsumeTimes"] == 0 for e in received)
        assert wait_until(lambda: committed_to_the_end(emulator, group, topic, 4), 20, interval=0.5), \
            f"committed offsets of {group}: {progress(emulator, group, topic)}\n" + consumer.describe()
    finally:
        consumer.stop()
    assert consumer.returncode == 0 and consumer.of("closed"), consumer.describe()
    assert sorted(e["body"] for e in consumer.of("received")) == sorted(e["body"] for e in sent)  # no repeats
    table = progress(emulator, group, topic)
    assert sum(end for end, _ in table.values()) == COUNT and all(c == end for end, c in table.values()), table


def test_ali_ons_consumer_receives_everything_again_after_a_forced_reset_by_time(emulator, ali_ons):
    """`admin resetOffsetByTime -f true` to before the first message, while an ali-ons consumer of the group is
    live and has consumed (and committed) all 10 messages: it must receive all 10 again within 20 s.

    ali-ons never applies the RESET_CONSUMER_CLIENT_OFFSET it is sent and goes on pulling from its old offsets,
    so only the broker can move it (PULL_OFFSET_MOVED at its next pull). A broker that waits for a client
    reporting JAVA to apply the reset itself (as it must for the Java client) never moves ali-ons's pulls in
    that time: it re-receives nothing."""
    topic, group = "OnsReset", "ons-reset"
    create_topic(emulator, topic)
    before_first = int(time.time() * 1000) - 1000
    consumer, sent = consume_all(ali_ons, emulator, topic, group)
    try:
        expected = sorted(e["body"] for e in sent)
        assert wait_until(lambda: committed_to_the_end(emulator, group, topic, 4), 20, interval=0.5), \
            f"committed offsets of {group}: {progress(emulator, group, topic)}\n" + consumer.describe()

        reset_at = time.time() * 1000
        done = run_cli("admin", "resetOffsetByTime", "-n", emulator.namesrv_addr, "-g", group, "-t", topic,
                       "-s", str(before_first), "-f", "true", "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        result = json.loads(done.stdout)
        assert result["method"] == "broker" and sorted(o["offset"] for o in result["offsets"]) == [0, 0, 0, 0], \
            result  # the consumer is online: the broker reset it, to the first message of every queue

        wait_until(lambda: set(received_bodies(consumer, reset_at)) >= set(expected), 20, interval=0.2)
        again = [e for e in consumer.of("received") if e["ts"] >= reset_at]
        when = ", ".join(f"{e['body']}@+{(e['ts'] - reset_at) / 1000:.1f}s" for e in again) or "none"
        pulls = "\n".join(pull_log(consumer, reset_at, topic)[:40])
        assert {e["body"] for e in again} == set(expected), (
            f"after resetOffsetByTime -f true to before the first message, ali-ons re-received "
            f"{len({e['body'] for e in again})} of {COUNT} within 20 s ({when}); "
            f"committed offsets now {progress(emulator, group, topic)}\n"
            f"ali-ons's pulls since the reset (+seconds since the reset, queue, requestOffset, nextBeginOffset):\n"
            f"{pulls}")
        time.sleep(1.0)  # a second delivery of the reset would come right after the first
        twice = sorted(b for b in set(expected) if received_bodies(consumer, reset_at).count(b) > 1)
        assert not twice, f"received more than once after the reset: {twice} ({when})\n" + consumer.describe()
        assert wait_until(lambda: committed_to_the_end(emulator, group, topic, 4), 20, interval=0.5), \
            f"committed offsets of {group} after the re-consumption: {progress(emulator, group, topic)}"
    finally:
        consumer.stop()
