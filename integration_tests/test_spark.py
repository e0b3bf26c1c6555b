"""spark_tools with a real local Spark session (one per module) against the emulator in a subprocess with two
brokers: seeding generated rows (each task to one broker, both brokers' queues evenly) and a Parquet file (rows
placed by queueId and brokerName), reading back with the `rocketmq` data source (offset ranges included), a
consumer of this project's client receiving seeded messages, and `seed --from` a file written by the session.
(The seed command's own runs, a broker killed mid-write included: test_spark_seed_command.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark", reason="the spark extra (pyspark) is part of the test extra")

from rocketmq_emulator.client import FIRST_OFFSET, PushConsumer  # noqa: E402
from rocketmq_emulator.spark_tools import generate, read_topic, seed_topic, session  # noqa: E402
from rocketmq_emulator.testing.command_line import COMMAND  # noqa: E402
from rocketmq_emulator.testing.emulator_process import launch_emulator  # noqa: E402
from rocketmq_emulator.testing.waits import wait_for  # noqa: E402

pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def spark():
    s = session("local[2]", "rocketmq-emulator tests")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = launch_emulator(tmp_path_factory.mktemp("spark-broker"), brokers=2)
    yield b
    b.stop()


def test_seed_100k_generated_messages_and_read_them_back(spark, broker):
    report = seed_topic(spark, "Seeded", namesrv=broker.namesrv_addr, messages=100_000, queues=8, keys=5000,
                        tags="TagA:3,TagB:1", seed=11, time_span_s=3600)
    assert report.messages == 100_000 and sum(report.queues.values()) == 100_000 and len(report.queues) == 16
    # 2 brokers x 2 cores = 4 partitions; each task wrote to one broker, partition p to broker p mod 2, so the
    # two brokers got the same number of messages and every queue about as many (batches round robin)
    assert [(t["partition"], list(t["brokers"])) for t in report.tasks] == \
        [(0, ["broker-a"]), (1, ["broker-b"]), (2, ["broker-a"]), (3, ["broker-b"])], report.tasks
    assert report.brokers == {"broker-a": 50_000, "broker-b": 50_000}, report.brokers
    assert all(5_500 <= n <= 7_000 for n in report.queues.values()), report.queues
    df = read_topic(spark, "Seeded", namesrv=broker.namesrv_addr).cache()
    assert df.count() == 100_000
    got = df.selectExpr("cast(body as string) as body", "tags", "keys")
    expected = generate(spark, 100_000, keys=5000, tags="TagA:3,TagB:1", seed=11).select("body", "tags", "keys")
    assert got.exceptAll(expected).count() == 0 and expected.exceptAll(got).count() == 0  # every body, tag, key
    df.createOrReplaceTempView("seeded")
    per_queue = {(r["brokerName"], r["queueId"]): (r["lo"], r["hi"], r["n"]) for r in spark.sql(
        "SELECT brokerName, queueId, min(queueOffset) AS lo, max(queueOffset) AS hi, count(*) AS n FROM seeded "
        "GROUP BY brokerName, queueId").collect()}
    assert sorted(per_queue) == [(b, q) for b in ("broker-a", "broker-b") for q in range(8)]
    for q, (lo, hi, n) in per_queue.items():
        assert lo == 0 and hi == n - 1 and n == report.queues[f"Seeded/{q[0]}/{q[1]}"], (q, lo, hi, n)  # 0..n-1
    assert df.select("brokerName", "queueId", "queueOffset").distinct().count() == 100_000
    tags = {r["tags"]: r["count"] for r in df.groupBy("tags").count().collect()}
    assert set(tags) == {"TagA", "TagB"} and 2.5 < tags["TagA"] / tags["TagB"] < 3.5
    span = df.selectExpr("max(bornTimestamp) - min(bornTimestamp) as span").first()["span"]
    assert 3000 < span.total_seconds() <= 3600
    df.unpersist()


def test_a_consumer_receives_seeded_messages(spark, broker):
    seed_topic(spark, "ForConsumer", namesrv=broker.namesrv_addr, messages=3000, queues=4, seed=3)
    expected = {r["body"] for r in generate(spark, 3000, seed=3).collect()}

    async def consume() -> set[str]:
        got: set[str] = set()
        consumer = PushConsumer("spark_seeded_reader", namesrv=broker.namesrv_addr, consume_from=FIRST_OFFSET)
        consumer.subscribe("ForConsumer")
        consumer.on_message(lambda m: got.add(m.text))
        async with consumer:
            assert await wait_for(lambda: len(got) >= 3000, 60), len(got)
        return got
    assert asyncio.run(consume()) == expected


def test_starting_and_ending_offsets_select_exactly_the_ranges(spark, broker):
    rows = spark.range(400).selectExpr("concat('r', id) as body", "cast(id % 4 as int) as queueId")
    seed_topic(spark, "Ranges", namesrv=broker.namesrv_addr, source=rows, queues=4)  # 100 per queue

    def offsets(start: str, end: str) -> dict[int, list[int]]:
        df = read_topic(spark, "Ranges", namesrv=broker.namesrv_addr, starting_offsets=start, ending_offsets=end)
        out: dict[int, list[int]] = {}
        for r in df.select("queueId", "queueOffset").collect():
            out.setdefault(r["queueId"], []).append(r["queueOffset"])
        return {q: sorted(v) for q, v in out.items()}
    every = offsets("earliest", "latest")
    assert {q: len(v) for q, v in every.items()} == {0: 100, 1: 100, 2: 100, 3: 100}
    ranged = offsets(json.dumps({"Ranges": {"0": 10, "broker-a:1": 95, "2": -1}}),
                     json.dumps({"Ranges": {"0": 20, "3": 5}}))
    assert ranged == {0: list(range(10, 20)), 1: list(range(95, 100)), 3: list(range(0, 5))}  # queue 2: latest..latest
    assert offsets("latest", "latest") == {}
    with pytest.raises(Exception, match="startingOffsets"):
        offsets("yesterday", "latest")


def test_seed_from_a_parquet_file(spark, broker, tmp_path):
    """Rows placed by a queueId alone (that queue of the first broker, broker-a) or with a brokerName."""
    rows = [(f"order-{i}", "TagP" if i % 2 else "TagQ", f"k{i}", {"region": "eu" if i % 3 else "us"}, i % 2,
             "broker-b" if i % 5 == 0 else None) for i in range(500)]
    path = str(tmp_path / "orders.parquet")
    spark.createDataFrame(rows, "body string, tags string, keys string, properties map<string,string>, "
                                "queueId int, brokerName string").write.parquet(path)
    report = seed_topic(spark, "FromParquet", namesrv=broker.namesrv_addr, source=path, queues=2)
    assert report.messages == 500 and report.brokers == {"broker-a": 400, "broker-b": 100}, report.queues
    back = read_topic(spark, "FromParquet", namesrv=broker.namesrv_addr)
    got = {(bytes(r["body"]).decode(), r["tags"], r["keys"], r["properties"]["region"], r["queueId"], r["brokerName"])
           for r in back.collect()}
    assert got == {(b, t, k, p["region"], q, n or "broker-a") for b, t, k, p, q, n in rows}


def test_the_seed_command_from_a_file_counts_its_rows_and_prints_a_json_summary(spark, broker, tmp_path):
    path = str(tmp_path / "rows.parquet")
    spark.range(2500).selectExpr("concat('row-', id) as body").write.parquet(path)
    proc = subprocess.run([*COMMAND, "seed", "-n", broker.namesrv_addr,
                           "-t", "FromFileCli", "--from", path, "--queues", "2", "--master", "local[1]", "--json"],
                          cwd=ROOT, env={**os.environ, "PYSPARK_PYTHON": sys.executable}, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("seed FromFileCli: ")]
    assert lines[0].startswith("seed FromFileCli: 0 / ? messages after ")  # the total is not known yet
    assert any(line.endswith(f": counting the rows of {path}") for line in lines), lines
    assert lines[-1].startswith("seed FromFileCli: 2,500 / 2,500 messages (100.0%) after ") \
        and lines[-1].endswith(": done"), lines
    summary = json.loads(proc.stdout)
    assert summary["messages"] == 2500 and sum(summary["queues"].values()) == 2500
    assert summary["seconds"] > summary["sparkStartSeconds"] + summary["writeSeconds"] > 0, summary


