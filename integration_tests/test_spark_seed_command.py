"""The `rocketmq-emulator seed` command against the emulator in a subprocess, each run starting its own Spark:
progress every second and both times, a broker killed mid-write failing the job, the checks that fail before
Spark starts, and progress on a terminal. (The data source in a shared Spark session: test_spark.py.)"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the spark extra (pyspark) is part of the test extra")

from rocketmq_emulator.client import Admin, Producer  # noqa: E402
from rocketmq_emulator.testing.command_line import COMMAND  # noqa: E402
from rocketmq_emulator.testing.emulator_process import launch_emulator  # noqa: E402
from rocketmq_emulator.testing.ports import free_port  # noqa: E402

pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[1]


# -- the seed command: checks before Spark starts, progress, summary ---------------------------------------------
_NO_SPARK_PROBE = ("import atexit, json, sys\n"
                   "atexit.register(lambda: open(sys.argv[1], 'w').write(json.dumps(sorted(\n"
                   "    m for m in sys.modules if m == 'pyspark' or m.startswith(('pyspark.', 'py4j'))))))\n"
                   "from rocketmq_emulator.cli.main import main\n"
                   "sys.exit(main(sys.argv[2:]))\n")


_PROGRESS = re.compile(r"seed Progress: ([\d,]+) / ([\d,]+) messages \(([\d.]+)%\) after ([\d.]+) s: (.+)")
_SUMMARY = re.compile(r"wrote 200,000 messages \(20\.0 MB of bodies\) to topic Progress over 4 queue\(s\) in "
                      r"([\d.]+) s \(Spark start-up ([\d.]+) s; write phase ([\d.]+) s: [\d,]+ msg/s, [\d.]+ MB/s\)")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = launch_emulator(tmp_path_factory.mktemp("seed-broker"))
    yield b
    b.stop()


def test_a_broker_killed_mid_write_fails_the_seed_command(tmp_path):
    b = launch_emulator(tmp_path / "victim")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.Popen([*COMMAND, "seed", "-n", b.namesrv_addr,
                             "-t", "Doomed", "--messages", "3000000", "--master", "local[2]"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # wait until messages are arriving
            if b.store_dir and any((b.store_dir / "consumequeue" / "Doomed").glob("*/*")):
                break
            time.sleep(0.2)
        else:
            pytest.fail("the seed job never started writing")
        time.sleep(1.0)
        b.kill()
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
        b.stop()
    assert proc.returncode == 1, (out, err)
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: writing to topic 'Doomed' failed: sending a batch of"), err[-3000:]
    assert "Traceback" not in last and "wrote" not in out


def _seed_without_spark(tmp_path: Path, *args: str) -> tuple[int, str, str, list[str], float]:
    """Run `rocketmq-emulator seed ARGS`; returns exit status, stdout, stderr, the pyspark / py4j modules it
    imported, and its wall time."""
    probe = tmp_path / "modules.json"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _NO_SPARK_PROBE, str(probe), "seed", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr, json.loads(probe.read_text()), time.monotonic() - t0


def test_seed_without_a_name_server_fails_before_spark_starts(tmp_path):
    ns = f"127.0.0.1:{free_port()}"  # nothing listens there
    rc, out, err, spark_modules, wall = _seed_without_spark(tmp_path, "-n", ns, "-t", "Nowhere", "--messages", "1000",
                                                            "--master", "local[1]")
    assert rc == 1 and out == "", (rc, out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: name server {ns} is unreachable: cannot connect"), err
    assert spark_modules == [], spark_modules  # neither pyspark nor a JVM was started
    assert wall < 10, wall  # generous: the old code failed after Spark's start-up and the writer's retries


def test_seed_to_a_missing_topic_without_auto_creation_fails_before_spark_starts(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("autoCreateTopicEnable=false\n")
    b = launch_emulator(tmp_path / "no-auto-create", "--config", str(conf))
    try:
        args = ("-n", b.namesrv_addr, "-t", "NotThere", "--messages", "1000", "--master", "local[1]")
        rc, out, err, spark_modules, _ = _seed_without_spark(tmp_path, *args)
        assert rc == 1 and out == "" and spark_modules == [], (rc, out, err, spark_modules)
        assert err == ("error: topic 'NotThere' does not exist and the broker does not create topics on send "
                       "(no TBW102 route): pass --queues N to create it\n"), err
    finally:
        b.stop()


def test_the_seed_command_shows_messages_landed_at_each_interval_and_both_times(broker):
    # --progress-interval 0.1: the 200,000 messages land within a second or two at the end of the write phase
    # (its first seconds are Spark planning and starting its Python workers), which lines a second apart can
    # miss entirely; ten a second cannot.
    proc = subprocess.run([*COMMAND, "seed", "-n", broker.namesrv_addr, "-t", "Progress", "--messages", "200000",
                           "--queues", "4", "--master", "local[2]", "--progress-interval", "0.1"],
                          cwd=ROOT, env={**os.environ, "PYSPARK_PYTHON": sys.executable}, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    progress = [_PROGRESS.fullmatch(line) for line in proc.stderr.splitlines() if line.startswith("seed Progress")]
    assert progress and all(progress), proc.stderr[-3000:]
    counts = [int(m.group(1).replace(",", "")) for m in progress]
    elapsed = [float(m.group(4)) for m in progress]
    lines = "\n".join(m.group(0) for m in progress)
    assert {m.group(2) for m in progress} == {"200,000"}
    assert counts == sorted(counts) and counts[-1] == 200_000, lines  # never backwards, ends at the total
    assert any(0 < c < 200_000 for c in counts), lines  # seen while the write runs
    assert progress[0].group(5) == "starting Spark (local[2])" and progress[-1].group(5) == "done"
    assert "writing" in {m.group(5) for m in progress}
    assert max(b - a for a, b in zip(elapsed, elapsed[1:])) < 1.5, lines  # a line each 0.1 s (some slack)
    assert len(progress) > 3 * elapsed[-1], lines  # (at 1 s, the default, it would be one a second)
    assert "[Stage" not in proc.stderr  # Spark's own console progress bar is off
    summary = _SUMMARY.fullmatch(proc.stdout.strip())
    assert summary, proc.stdout
    total, start_up, write = (float(g) for g in summary.groups())
    assert total >= elapsed[-1] and total > start_up + write and write > 0, (total, start_up, write)

    async def landed() -> int:
        async with Admin(broker.namesrv_addr) as admin:
            return sum(o.max_offset for o in (await admin.topic_status("Progress")).values())
    assert asyncio.run(landed()) == 200_000


def test_progress_rewrites_one_line_on_a_terminal(broker):
    from rocketmq_emulator.spark_tools.preflight import check_target
    from rocketmq_emulator.spark_tools.progress import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True
    target = check_target(broker.namesrv_addr, "OnATerminal", queues=1)
    assert (target.queues, target.baseline, target.auto_create) == (1, 0, False)
    out = Terminal()
    with Progress(broker.namesrv_addr, target, 10, time.monotonic(), out, interval=0.2) as progress:
        progress.phase = "writing"
        time.sleep(0.5)  # a line or two before the first message

        async def send() -> None:
            async with Producer("on_a_terminal", namesrv=broker.namesrv_addr) as producer:
                for i in range(10):
                    await producer.send("OnATerminal", f"m{i}")
        asyncio.run(send())
        time.sleep(0.5)
    text = out.getvalue()
    assert text.startswith("\rseed OnATerminal: 0 / 10 messages (0.0%) after "), text
    assert text.endswith(": done\x1b[K\n"), text
    assert text.count("\n") == 1 and text.count("\r") >= 3, text  # rewritten in place, one newline at the end
    assert "\rseed OnATerminal: 10 / 10 messages (100.0%) after " in text, text


def test_a_name_server_that_does_not_answer_delays_the_count_never_the_lines(broker):
    """A broker flooded by the write (or a loaded machine) answers the count late: the line still comes every
    interval, with the last count, and a failed job's last line does not wait out the long count timeout."""
    import socket

    from rocketmq_emulator.spark_tools.preflight import check_target
    from rocketmq_emulator.spark_tools.progress import POLL_TIMEOUT, Progress
    target = check_target(broker.namesrv_addr, "SilentNameServer", queues=1)
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        out = io.StringIO()
        progress = Progress(f"127.0.0.1:{silent.getsockname()[1]}", target, 10, time.monotonic(), out,
                            interval=0.2)
        progress.phase = "writing"
        progress.start()
        time.sleep(1.5)
        stopping = time.monotonic()
        progress.stop("failed")
        stopped_after = time.monotonic() - stopping
    lines = out.getvalue().splitlines()
    assert len(lines) >= 5, lines  # ~7 lines in 1.5 s although no count ever came
    assert all(line.startswith("seed SilentNameServer: 0 / 10 messages (0.0%) after ") for line in lines), lines
    assert lines[-1].endswith(": failed") and all(line.endswith(": writing") for line in lines[:-1]), lines
    assert stopped_after < POLL_TIMEOUT / 2, stopped_after


@pytest.mark.parametrize("args, name, content, expected", [
    (("-t", "Bad Topic", "--messages", "5"), None, None,
     "error: topic 'Bad Topic' is invalid: use letters, digits and the characters % | _ -"),
    (("-t", "T",), "rows.csv", "id,text\n1,hello\n",
     "error: --from {path}: no body column (it has: id, text); every row needs a body (optional columns: "
     "bornTimestamp, brokerName, keys, properties, queueId, tags, topic)"),
    (("-t", "T",), "rows.jsonl", '{"body": "a"}\n{"body": "b", "price": 3}\n',
     "error: --from {path}: unknown column(s) price: seed takes body and bornTimestamp, brokerName, keys, properties, "
     "queueId, tags, topic (rename or drop the others)"),
    (("-t", "T",), "rows.jsonl", '{"body": "a"}\n[1, 2]\n',
     "error: --from {path}, line 2: a JSON list, not an object (seed reads one JSON object per line)"),
    (("-t", "T",), "rows.txt", "body\n",
     "error: --from {path}: seed from a .parquet, .json/.jsonl or .csv file (or a Parquet directory)"),
    (("-t", "T",), "rows.parquet", "not parquet",
     "error: --from {path}: not a readable Parquet file"),
], ids=["bad topic", "csv without body", "json with an unknown column", "json not an object", "unknown kind",
        "not parquet"])
def test_a_bad_topic_or_file_fails_before_spark_starts(tmp_path, args, name, content, expected):
    """What can be known from the command line and the file's header is checked before Spark (whose start-up takes
    most of a minute here); no name server is needed to say it."""
    extra: tuple[str, ...] = ()
    if name is not None:
        path = tmp_path / name
        path.write_text(content)
        extra = ("--from", str(path))
        expected = expected.format(path=path)
    rc, out, err, spark_modules, _ = _seed_without_spark(tmp_path, "-n", "127.0.0.1:1", *args, *extra)
    assert rc == 2 and out == "" and spark_modules == [], (rc, out, err, spark_modules)
    [line] = err.strip().splitlines()
    assert line.startswith(expected), line


def test_a_parquet_file_with_a_body_passes_the_checks_before_spark(tmp_path):
    """The other side of the checks: a good Parquet file is not refused (the run then stops at the missing name
    server, still before Spark)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"body": ["a", "b"], "tags": ["x", "y"]}), path)
    rc, out, err, spark_modules, _ = _seed_without_spark(tmp_path, "-n", "127.0.0.1:1", "-t", "T", "--from", str(path))
    assert rc == 1 and spark_modules == [], (rc, err)
    assert err.startswith("error: name server 127.0.0.1:1 is unreachable"), err
