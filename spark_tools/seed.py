"""Seeding topics with Spark: generated rows (Spark SQL expressions, no Python row loops) or a Parquet / JSON /
CSV file, written through the `rocketmq` data source; and reading a topic back as a DataFrame.

    from rocketmq_emulator.spark_tools import seed_topic, read_topic
    report = seed_topic(spark, "Orders", namesrv="127.0.0.1:9876", messages=1_000_000, body_size=(80, 120),
                        keys=10_000, tags={"TagA": 3, "TagB": 1}, time_span_s=3600, seed=7)
    df = read_topic(spark, "Orders", namesrv="127.0.0.1:9876")

Generated rows are deterministic for a `seed`: row `id`'s body is `"<id>:"` and 32 hex digits of xxhash64s of
(seed, id), repeated to its size; its size (fixed, or in [low, high]), key and tag come from xxhash64 of
(seed, salt, id) too. Spark SQL builds them (no Python row loop).

Across brokers: the writer sends each task's rows to one broker, by partition id (placement.py), so a seeding
needs at least as many partitions as brokers x cores to keep every broker and core busy, and a multiple of that
to give each broker as many rows and leave no core idle in the last wave of tasks. Generated rows get such a
partition count for free (placement.py `partitions_for`); rows
from a file or a DataFrame keep their partitions (each task still writes to one broker): `seed --partitions N`
repartitions them round robin (a shuffle, which cost 20 % of the write rate on 2 cores).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from .datasource import RocketMQDataSource
from .placement import brokers_of, partitions_for
from .source_check import SourceProblem, source_kind


class SeedError(Exception):
    """The seeding job failed; the message says why in one line."""


@dataclass
class SeedReport:
    messages: int
    body_bytes: int
    seconds: float
    queues: dict[str, int]
    #: per task: {"partition": Spark's partition id, "brokers": {broker name: messages}}
    tasks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def brokers(self) -> dict[str, int]:
        """Messages per broker."""
        return brokers_of(self.queues)

    @property
    def msg_per_s(self) -> float:
        return self.messages / self.seconds if self.seconds else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.body_bytes / 1e6 / self.seconds if self.seconds else 0.0


def register(spark: SparkSession) -> None:
    """Make `format("rocketmq")` available in `spark` (idempotent)."""
    spark.dataSource.register(RocketMQDataSource)


def session(master: str = "local[*]", app_name: str = "rocketmq-emulator", log_level: str = "ERROR",
            progress_bar: bool = True, **conf: str) -> SparkSession:
    """A SparkSession whose Python workers run this interpreter (so they import this package), with the
    `rocketmq` format registered and Spark's console progress bar on (unless `progress_bar` is False; the seed
    command shows its own). A local master binds to 127.0.0.1."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.showConsoleProgress", str(progress_bar).lower()).config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    register(spark)
    return spark


# -- generation -------------------------------------------------------------------------------------
def _tag_weights(tags: str | dict[str, int] | list[str] | None) -> dict[str, int]:
    if tags is None:
        return {}
    if isinstance(tags, dict):
        weights = {str(k): int(v) for k, v in tags.items()}
    elif isinstance(tags, str):
        weights = {}
        for item in (t.strip() for t in tags.split(",")):
            if not item:
                continue
            name, sep, weight_text = item.partition(":")
            try:
                weights[name.strip()] = int(weight_text) if sep else 1
            except ValueError:
                raise SeedError(f"tag weight {weight_text!r} of {name!r} is not a whole number (use TagA:3,TagB:1)") \
                    from None
    else:
        weights = {str(t): 1 for t in tags}
    for name, weight in weights.items():
        if not re.fullmatch(r"[^|\s]+", name) or weight < 1:
            raise SeedError(f"tag {name!r} (weight {weight}): tags are non-empty without '|' or spaces, weights >= 1")
    return weights


def broker_count(namesrv: str, topic: str) -> int:
    """How many brokers have writable queues of `topic` (TBW102's when the broker creates it on send); 1 when that
    cannot be known (the write then fails with its own words)."""
    from rocketmq_emulator.client import Producer

    async def count() -> int:
        async with Producer("rocketmq_emulator_spark_seed", namesrv=namesrv) as producer:
            return len({mq.broker_name for mq in await producer.fetch_queues(topic)})
    try:
        return asyncio.run(count())
    except Exception:  # noqa: BLE001 - no route (yet): the write then says what is wrong in its own words
        return 1


def generate(spark: SparkSession, messages: int, *, body_size: int | tuple[int, int] = 100,
             keys: int | str | None = None, tags: str | dict[str, int] | list[str] | None = None,
             time_span_s: float = 0.0, seed: int = 0, partitions: int | None = None,
             start_ms: int | None = None, brokers: int = 1) -> DataFrame:
    """Rows (body, keys, tags, bornTimestamp) for the `rocketmq` writer, built with Spark SQL expressions.

    `body_size`: bytes, or (low, high). `keys`: a cardinality (`key-<0..n-1>`), or a pattern where `{id}` is
    the row number. `tags`: "TagA:3,TagB:1", a weight dict or a list. `time_span_s`: bornTimestamps spread
    evenly from `start_ms` (default: now - span) over that many seconds. `partitions`: default
    `partitions_for(messages, Spark's default parallelism, brokers)`."""
    if messages < 1:
        raise SeedError("messages must be at least 1")
    low, high = (body_size, body_size) if isinstance(body_size, int) else body_size
    if not 1 <= low <= high <= 4 * 1024 * 1024:
        raise SeedError(f"body size {body_size!r}: use 1 to 4194304 bytes, low <= high")
    if partitions is None:
        partitions = partitions_for(messages, spark.sparkContext.defaultParallelism, brokers)
    df = spark.range(0, messages, numPartitions=partitions)
    h = f"xxhash64({int(seed)}L, {{salt}}, id)"
    size = str(low) if low == high else f"{low} + pmod({h.format(salt=1)}, {high - low + 1})"
    filler = f"lower(concat(hex({h.format(salt=4)}), hex({h.format(salt=5)})))"  # 32 hex digits, cheap
    cols = [f"rpad(concat(cast(id as string), ':', {filler}), cast({size} as int), {filler}) as body"]
    if isinstance(keys, int):
        if keys < 1:
            raise SeedError("keys (a cardinality) must be at least 1")
        cols.append(f"concat('key-', cast(pmod({h.format(salt=2)}, {keys}) as string)) as keys")
    elif keys:
        pattern = keys.replace("'", "\\'")
        cols.append(f"replace('{pattern}', '{{id}}', cast(id as string)) as keys")
    weights = _tag_weights(tags)
    if weights:
        total = sum(weights.values())
        cases, upto = [], 0
        for name, weight in weights.items():
            upto += weight
            cases.append(f"WHEN pmod({h.format(salt=3)}, {total}) < {upto} THEN '{name}'")
        cols.append(f"CASE {' '.join(cases)} END as tags")
    if time_span_s > 0:
        span_ms = int(time_span_s * 1000)
        start = start_ms if start_ms is not None else int(time.time() * 1000) - span_ms
        cols.append(f"{start}L + cast(floor(id * {span_ms}.0 / {messages}) as bigint) as bornTimestamp")
    return df.selectExpr(*cols)


def read_file(spark: SparkSession, path: str) -> DataFrame:
    """A Parquet, JSON (lines) or CSV (with a header) file or directory, by its extension."""
    try:
        kind = source_kind(path)
    except SourceProblem as exc:
        raise SeedError(str(exc)) from None
    if kind == "parquet":
        return spark.read.parquet(path)
    if kind == "json":
        return spark.read.json(path)
    return spark.read.option("header", "true").csv(path)


# -- seeding and reading ----------------------------------------------------------------------------
def _create_topic(namesrv: str, topic: str, queues: int) -> None:
    from rocketmq_emulator.client import Admin

    async def create() -> None:
        async with Admin(namesrv) as admin:
            await admin.create_topic(topic, queues, queues)
    asyncio.run(create())


def _first_error_line(exc: BaseException) -> str:
    text = str(exc)
    for pattern in (r"RocketMQSourceError: ([^\n]+)", r"SeedError: ([^\n]+)", r"(ClientError[^\n]*)"):
        m = re.search(pattern, text)
        if m:
            return m.group(1).strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    return first[:500]


def write_topic(df: DataFrame, topic: str, namesrv: str, **options: Any) -> SeedReport:
    """Write `df` (a body column, optional tags/keys/properties/queueId/bornTimestamp/topic) to `topic`."""
    with tempfile.TemporaryDirectory(prefix="rocketmq-seed-") as tmp:
        report_path = os.path.join(tmp, "report.json")
        writer = df.write.format("rocketmq").option("nameServer", namesrv).option("topic", topic) \
            .option("reportPath", report_path).mode("append")
        for key, value in options.items():
            writer = writer.option(key, str(value))
        t0 = time.perf_counter()
        try:
            writer.save()
        except Exception as exc:  # noqa: BLE001 - Py4J wraps the task's error: one clear line instead
            raise SeedError(f"writing to topic {topic!r} failed: {_first_error_line(exc)}") from None
        seconds = time.perf_counter() - t0
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
    return SeedReport(report["messages"], report.get("bytes", 0), seconds, report["queues"], report.get("tasks", []))


def seed_topic(spark: SparkSession, topic: str, *, namesrv: str, messages: int | None = None,
               source: str | DataFrame | None = None, queues: int | None = None, **generate_args: Any) -> SeedReport:
    """Generate `messages` rows (see `generate`) or take them from `source` (a DataFrame or a file path), and
    write them to `topic`. `queues`: create (or resize) the topic with that many queues first. Generated rows get
    at least brokers x cores partitions; a source keeps its own (see the module docstring)."""
    register(spark)
    if queues is not None:
        _create_topic(namesrv, topic, queues)
    brokers = broker_count(namesrv, topic)
    if source is None:
        if messages is None:
            raise SeedError("give messages (to generate) or source (a DataFrame or a file)")
        df = generate(spark, messages, **{"brokers": brokers, **generate_args})
    else:
        df = read_file(spark, source) if isinstance(source, str) else source
    return write_topic(df, topic, namesrv)


def read_topic(spark: SparkSession, topic: str, *, namesrv: str, starting_offsets: str = "earliest",
               ending_offsets: str = "latest", group: str | None = None) -> DataFrame:
    """The topic's messages as a DataFrame (see the data source's read options)."""
    register(spark)
    reader = spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", topic) \
        .option("startingOffsets", starting_offsets).option("endingOffsets", ending_offsets)
    if group:
        reader = reader.option("group", group)
    return reader.load()
