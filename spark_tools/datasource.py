"""The `rocketmq` Spark data source (PySpark 4's Python Data Source API), on `client/`'s batch producer and pull
consumer. README "Spark".

    from rocketmq_emulator.spark_tools import register
    register(spark)
    df.write.format("rocketmq").option("nameServer", "127.0.0.1:9876").option("topic", "Orders").mode("append").save()
    spark.read.format("rocketmq").option("nameServer", "127.0.0.1:9876").option("topic", "Orders").load()

Write: columns `body` (binary or string, required) and optionally `topic`, `tags`, `keys`, `properties`
(map<string,string>), `queueId`, `brokerName`, `bornTimestamp` (timestamp or ms). Every task sends its rows with
SEND_BATCH_MESSAGE, batched by `batchSize` messages / `batchBytes` bytes per (topic, queue), `inFlight` batches
at a time; a failed batch is retried `maxRetries` times, then the task fails naming the batch and the cause.
Placement (placement.py): a task sends the rows that say nothing about their queue to ONE broker, its home
broker -- slot (partition id mod the number of writable queues) of the topic's queues interleaved across brokers
(`a0 b0 a1 b1 ...`), i.e. broker (partition id mod brokers) when every broker has as many queues -- round robin
over that broker's queues, so tasks write to different brokers in parallel and each talks to one; a failed batch
tries the next broker on retry. A `queueId` alone is that queue of the first broker (by name) that has it, a
`brokerName` with a `queueId` that broker's queue, a `brokerName` alone round robin over that broker's queues.
A batch lands in one queue with one bornTimestamp (RocketMQ's batch format carries it once): its first row's.
Rows of a failed task that were sent before the failure stay on the broker (at least once, as Spark's Kafka
sink). The commit logs the count per queue and per task's brokers, and writes them as JSON to `reportPath`
when given (`{"messages", "bytes", "queues": {"topic/broker/queueId": n}, "tasks": [{"partition", "brokers":
{"broker": n}}]}`).

Read: one partition per queue, or per `maxOffsetsPerPartition` offsets of a big queue; `startingOffsets` /
`endingOffsets` as Spark's Kafka source: `earliest`, `latest`, or JSON per queue
(`{"Orders": {"0": 10, "broker-b:1": -2}}`, -2 earliest, -1 latest; a queue id alone means every broker's
queue with that id). Offsets are read once, when the query is planned. Nothing is committed unless `group`
is given: then each partition commits its end offset for that group.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import logging
import os
import random
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterator, overload

from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceReader, InputPartition,
                                    WriterCommitMessage)
from pyspark.sql.types import StructType

from .placement import PlacementError, TaskPlacement, brokers_of
from .source_check import WRITE_COLUMNS

log = logging.getLogger("rocketmq_emulator.spark")

READ_SCHEMA = ("topic string, queueId int, queueOffset long, body binary, tags string, keys string, "
               "properties map<string,string>, bornTimestamp timestamp, storeTimestamp timestamp, msgId string, "
               "brokerName string")
EARLIEST, LATEST = -2, -1


class RocketMQSourceError(Exception):
    """A bad option, or the broker refused or lost a write."""


@overload
def _option(options: Any, name: str) -> str | None: ...
@overload
def _option(options: Any, name: str, default: str) -> str: ...
def _option(options: Any, name: str, default: str | None = None) -> str | None:
    """Spark's option names are case-insensitive (it hands them over lower-cased)."""
    value = options.get(name.lower())
    return default if value is None or value == "" else str(value)


def _lower(options: Any) -> dict[str, str]:
    return {str(k).lower(): v for k, v in dict(options).items()}


def _int_option(options: Any, name: str, default: int, low: int = 1) -> int:
    text = _option(options, name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise RocketMQSourceError(f"option {name}={text!r} is not a whole number") from None
    if value < low:
        raise RocketMQSourceError(f"option {name}={value} must be at least {low}")
    return value


def _name_server(options: Any) -> str:
    ns = _option(options, "nameServer") or os.environ.get("NAMESRV_ADDR")
    if not ns:
        raise RocketMQSourceError("option nameServer is required (host:port of the name server)")
    return ns


class RocketMQDataSource(DataSource):
    """`format("rocketmq")`: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> str:
        return READ_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return RocketMQReader(_lower(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        if overwrite:
            raise RocketMQSourceError("a topic can only be appended to: use mode(\"append\")")
        names = set(schema.names)
        if "body" not in names:
            raise RocketMQSourceError(f"the DataFrame needs a body column (binary or string); it has {sorted(names)}")
        unknown = names - WRITE_COLUMNS
        if unknown:
            raise RocketMQSourceError(f"unknown column(s) {sorted(unknown)}: the writer takes {sorted(WRITE_COLUMNS)}")
        options = _lower(self.options)
        if "topic" not in names and not _option(options, "topic"):
            raise RocketMQSourceError("give the topic: option topic, or a topic column")
        return RocketMQWriter(options)


# -- write ------------------------------------------------------------------------------------------
@dataclass
class QueueCounts(WriterCommitMessage):
    """What one task sent: "topic/brokerName/queueId" -> messages."""

    counts: dict[str, int] = field(default_factory=dict)
    bytes: int = 0  #: body bytes sent
    partition: int | None = None  #: Spark's partition id of the task


class RocketMQWriter(DataSourceArrowWriter):
    def __init__(self, options: dict[str, str]) -> None:
        self.namesrv = _name_server(options)
        self.topic = _option(options, "topic")
        self.group = _option(options, "producerGroup", "rocketmq_emulator_spark_writer")
        self.batch_size = _int_option(options, "batchSize", 500)
        self.batch_bytes = _int_option(options, "batchBytes", 1024 * 1024)
        self.in_flight = _int_option(options, "inFlight", 4)
        self.max_retries = _int_option(options, "maxRetries", 3, low=0)
        self.report_path = _option(options, "reportPath")

    def write(self, iterator: Iterator[Any]) -> QueueCounts:
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context is not None else None
        return asyncio.run(self._write(iterator, partition))

    async def _write(self, iterator: Iterator[Any], partition: int | None = None) -> QueueCounts:
        from rocketmq_emulator.client import Producer

        counts: dict[str, int] = defaultdict(int)
        sent_bytes = [0]
        placements: dict[str, TaskPlacement] = {}
        # outside a Spark task (no partition id): a home broker at random rather than always the first
        slot = partition if partition is not None else random.randrange(1 << 16)
        lookup = asyncio.Lock()  # the first batches in flight wait for one route lookup (one round robin)

        async def placement(topic: str, refresh: bool) -> TaskPlacement:
            async with lookup:
                known = placements.get(topic)
                if known is None or refresh:  # (a retry sees the route as it is now)
                    known = placements[topic] = _renew(known, topic, await producer.fetch_queues(topic), slot)
                return known
        async with Producer(self.group, namesrv=self.namesrv, instance_name=f"spark-{uuid.uuid4().hex[:8]}") \
                as producer:
            window = asyncio.Semaphore(self.in_flight)
            pending: set[asyncio.Task[None]] = set()
            failure: list[BaseException] = []

            async def send(batch: _Batch) -> None:
                try:
                    result = await self._send_with_retries(producer, batch, placement)
                    mq = result.queue
                    counts[f"{mq.topic}/{mq.broker_name}/{mq.queue_id}"] += len(batch.bodies)
                    sent_bytes[0] += batch.size
                except BaseException as exc:  # noqa: BLE001 - the first failure fails the task below
                    failure.append(exc)
                finally:
                    window.release()

            for batch in self._batches(iterator):
                if failure:
                    break
                await window.acquire()
                task = asyncio.ensure_future(send(batch))
                pending.add(task)
                task.add_done_callback(pending.discard)
            if pending:
                await asyncio.gather(*pending)
            if failure:
                raise failure[0]
        return QueueCounts(dict(counts), sent_bytes[0], partition)

    async def _send_with_retries(self, producer: Any, batch: _Batch,
                                 placement_of: Callable[[str, bool], Awaitable[TaskPlacement]]) -> Any:
        from rocketmq_emulator.client.errors import ClientError

        delay = 0.2
        for attempt in range(self.max_retries + 1):
            try:
                queue: Any = batch.queue  # a queue id alone: the producer's rule (the first broker that has it)
                if batch.broker is not None or queue is None:
                    placement = await placement_of(batch.topic, attempt > 0)
                    if batch.broker is None:
                        queue = placement.home_queue(attempt)
                    elif queue is None:
                        queue = placement.broker_queue(batch.broker)
                    else:
                        queue = placement.pinned(batch.broker, queue)
                return await producer.send_batch_columns(
                    batch.topic, batch.bodies, tags=batch.tags, keys=batch.keys, properties=batch.properties,
                    queue=queue, born_timestamp=batch.born)
            except PlacementError as exc:
                raise RocketMQSourceError(f"{exc}: the row(s) of a batch of {len(batch.bodies)} name it") from None
            except ClientError as exc:
                if attempt == self.max_retries:
                    raise RocketMQSourceError(
                        f"sending a batch of {len(batch.bodies)} message(s) to topic {batch.topic!r} through "
                        f"{self.namesrv} failed after {attempt + 1} attempt(s): {exc}") from None
                log.debug("rocketmq: batch to %s failed (%s); retrying in %.1f s", batch.topic, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")

    def _batches(self, iterator: Iterator[Any]) -> Iterator[_Batch]:
        """Full batches per (topic, brokerName, queue id) as rows arrive, then the partial ones."""
        open_batches: dict[tuple[str, str | None, int | None], _Batch] = {}
        for record_batch in iterator:
            cols = {name: record_batch.column(name).to_pylist() for name in record_batch.schema.names}
            bodies = cols["body"]
            topics, queues, borns = cols.get("topic"), cols.get("queueId"), cols.get("bornTimestamp")
            brokers = cols.get("brokerName")
            extra = [(name, cols.get(name)) for name in ("tags", "keys", "properties")]
            for i in range(record_batch.num_rows):
                topic = (topics[i] if topics is not None else None) or self.topic
                if topic is None:
                    raise RocketMQSourceError("row with a null topic and no topic option: give the option topic")
                body = bodies[i]
                if body is None:
                    raise RocketMQSourceError(f"row with a null body (topic {topic!r}): every row needs a body")
                queue = queues[i] if queues is not None else None
                broker = (brokers[i] or None) if brokers is not None else None
                key = (topic, broker, queue)
                batch = open_batches.get(key)
                if batch is None:
                    batch = open_batches[key] = _Batch(topic, broker, queue,
                                                       _millis(borns[i]) if borns is not None else None,
                                                       {name for name, col in extra if col is not None})
                batch.bodies.append(body)
                batch.size += len(body)
                for name, col in extra:
                    if col is not None:
                        getattr(batch, name).append(col[i])
                if len(batch.bodies) >= self.batch_size or batch.size >= self.batch_bytes:
                    del open_batches[key]
                    yield batch
        yield from open_batches.values()

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        total: dict[str, int] = defaultdict(int)
        body_bytes = 0
        tasks: list[tuple[int | None, dict[str, int]]] = []
        for m in messages:
            if isinstance(m, QueueCounts):
                body_bytes += m.bytes
                for k, v in m.counts.items():
                    total[k] += v
                tasks.append((m.partition, dict(sorted(brokers_of(m.counts).items()))))
        tasks.sort(key=lambda t: (t[0] is None, t[0] or 0))
        report = dict(sorted(total.items()))
        several = sum(len(brokers) > 1 for _, brokers in tasks)
        log.info("rocketmq: wrote %d message(s) in %d task(s) (%d of them to several brokers): %s",
                 sum(report.values()), len(tasks), several, ", ".join(f"{k}={v}" for k, v in report.items()))
        if self.report_path:
            with open(self.report_path, "w", encoding="utf-8") as f:
                json.dump({"messages": sum(report.values()), "bytes": body_bytes, "queues": report,
                           "tasks": [{"partition": p, "brokers": brokers} for p, brokers in tasks]}, f)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        sent = sum(sum(m.counts.values()) for m in messages if isinstance(m, QueueCounts))
        log.warning("rocketmq: the write failed; %d message(s) of the finished tasks stay on the broker", sent)


class _Batch:
    """Columns of one batch: the rows of one (topic, brokerName, queueId) with the first row's bornTimestamp."""

    __slots__ = ("topic", "broker", "queue", "born", "bodies", "size", "tags", "keys", "properties")

    def __init__(self, topic: str, broker: str | None, queue: int | None, born: int | None,
                 columns: set[str]) -> None:
        self.topic, self.broker, self.queue, self.born = topic, broker, queue, born
        self.bodies: list[Any] = []
        self.size = 0
        self.tags: list[Any] | None = [] if "tags" in columns else None
        self.keys: list[Any] | None = [] if "keys" in columns else None
        self.properties: list[Any] | None = [] if "properties" in columns else None


def _renew(old: TaskPlacement | None, topic: str, queues: list[Any], slot: int) -> TaskPlacement:
    """The task's placement for `topic`, kept (with its round robin) while the writable queues stay the same."""
    if old is not None and old.queues == queues:
        return old
    return TaskPlacement(topic, queues, slot)


def _millis(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            return int(value.timestamp() * 1000)
        return int(value.astimezone(_dt.timezone.utc).timestamp() * 1000)
    return int(value)


# -- read -------------------------------------------------------------------------------------------
class QueueRange(InputPartition):
    """Offsets [start, end) of one queue."""

    def __init__(self, topic: str, broker_name: str, queue_id: int, start: int, end: int) -> None:
        super().__init__((topic, broker_name, queue_id, start, end))
        self.topic, self.broker_name, self.queue_id, self.start, self.end = topic, broker_name, queue_id, start, end


def _offset_spec(text: str, name: str) -> str | dict[str, dict[str, int]]:
    if text in ("earliest", "latest"):
        return text
    try:
        spec = json.loads(text)
        if not isinstance(spec, dict) or not all(isinstance(v, dict) for v in spec.values()):
            raise ValueError("not an object of objects")
        return {t: {str(q): int(o) for q, o in v.items()} for t, v in spec.items()}
    except (ValueError, TypeError) as exc:
        raise RocketMQSourceError(f"{name}={text!r}: use earliest, latest, or JSON like "
                                  f"{{\"Topic\": {{\"0\": 10, \"broker-a:1\": -2}}}} ({exc})") from None


def _resolve(spec: str | dict[str, dict[str, int]], topic: str, broker: str, queue_id: int, low: int, high: int,
             default: str) -> int:
    if isinstance(spec, str):
        value = EARLIEST if spec == "earliest" else LATEST
    else:
        per_queue = spec.get(topic, {})
        raw = per_queue.get(f"{broker}:{queue_id}", per_queue.get(str(queue_id)))
        value = raw if raw is not None else (EARLIEST if default == "earliest" else LATEST)
    if value == EARLIEST:
        return low
    if value == LATEST:
        return high
    return max(low, min(high, value))


class RocketMQReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.namesrv = _name_server(options)
        topic = _option(options, "topic")
        if not topic:
            raise RocketMQSourceError("option topic is required to read")
        self.topics = [t.strip() for t in topic.split(",") if t.strip()]
        self.starting = _offset_spec(_option(options, "startingOffsets", "earliest") or "earliest", "startingOffsets")
        self.ending = _offset_spec(_option(options, "endingOffsets", "latest") or "latest", "endingOffsets")
        self.per_partition = _int_option(options, "maxOffsetsPerPartition", 1_000_000)
        self.group = _option(options, "group")

    def partitions(self) -> list[QueueRange]:
        return asyncio.run(self._partitions())

    async def _partitions(self) -> list[QueueRange]:
        from rocketmq_emulator.client import PullConsumer

        out: list[QueueRange] = []
        async with PullConsumer(self.group or "rocketmq_emulator_spark_reader", namesrv=self.namesrv,
                                instance_name=f"spark-{uuid.uuid4().hex[:8]}") as consumer:
            for topic in self.topics:
                for mq in sorted(await consumer.fetch_message_queues(topic)):
                    low, high = await consumer.min_offset(mq), await consumer.max_offset(mq)
                    start = _resolve(self.starting, topic, mq.broker_name, mq.queue_id, low, high, "earliest")
                    end = _resolve(self.ending, topic, mq.broker_name, mq.queue_id, low, high, "latest")
                    for s in range(start, end, self.per_partition):
                        out.append(QueueRange(topic, mq.broker_name, mq.queue_id, s, min(end, s + self.per_partition)))
        return out

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        value = partition.value
        if value is None:  # no queue has anything in range: Spark still runs one empty partition
            return iter(())
        p = partition if isinstance(partition, QueueRange) else QueueRange(*value)
        rows: list[tuple[Any, ...]] = asyncio.run(self._read(p))
        return iter(rows)

    async def _read(self, p: QueueRange) -> list[tuple[Any, ...]]:
        from rocketmq_emulator.client import PullConsumer
        from rocketmq_emulator.client.pull_api import PullStatus
        from rocketmq_emulator.protocol.bodies import MessageQueue

        mq = MessageQueue(p.topic, p.broker_name, p.queue_id)
        rows: list[tuple[Any, ...]] = []
        offset = p.start
        utc = _dt.timezone.utc
        async with PullConsumer(self.group or "rocketmq_emulator_spark_reader", namesrv=self.namesrv,
                                instance_name=f"spark-{uuid.uuid4().hex[:8]}") as consumer:
            while offset < p.end:
                result = await consumer.pull(mq, offset, 32)
                if result.status is PullStatus.OFFSET_ILLEGAL:
                    if result.next_begin_offset <= offset:
                        raise RocketMQSourceError(f"{mq}: offset {offset} is no longer readable (expired?)")
                    offset = result.next_begin_offset  # expired messages: go on from the first stored one
                    continue
                if result.status is not PullStatus.FOUND or not result.messages:
                    if result.next_begin_offset > offset:
                        offset = result.next_begin_offset
                        continue
                    break  # nothing more before `end` (the queue shrank meanwhile)
                for m in result.messages:
                    if m.queue_offset >= p.end:
                        break
                    rows.append((m.topic, m.queue_id, m.queue_offset, m.body, m.tags, m.keys, dict(m.properties),
                                 _dt.datetime.fromtimestamp(m.born_timestamp / 1000, utc),
                                 _dt.datetime.fromtimestamp(m.store_timestamp / 1000, utc), m.msg_id, p.broker_name))
                offset = max(offset + 1, min(result.next_begin_offset, p.end))
            if self.group:
                await consumer.commit(mq, p.end)
        return rows
