"""The job behind `rocketmq-emulator seed` (cli/seed.py reads its command line): check the name server, the
topic's route and its brokers with this project's client (failing in a second or two, before Spark starts), then
generate the messages (or read a file's rows) and write them to the topic with Spark, showing every second on
stderr how many messages have landed of the total (progress.py).

pyspark is imported only once the checks passed, so a wrong address or topic costs no JVM.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from rocketmq_emulator.protocol.extras import install_hint

if TYPE_CHECKING:
    from .seed import SeedReport

#: the Spark driver's log4j2 configuration: errors only, and the same level for PySpark's gateway logger, so that
#: Spark prints neither its default-profile notice nor "Setting default log level" while it starts
_QUIET_LOG4J2 = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""


class SeedJobError(Exception):
    """The job failed: `message` says why in one line, `code` names the step (PREFLIGHT, SETUP, SPARK, SEED, or
    the class of an error Spark raised)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class SeedOutcome:
    """What the job wrote (`report`) and how long Spark took to start."""

    report: SeedReport
    spark_seconds: float


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def run_seed_job(namesrv: str, topic: str, *, messages: int | None, source: str | None, queues: int | None,
                 body_size: tuple[int, int], keys: int | str | None, tags: str | None, time_span_s: float,
                 seed: int, partitions: int | None, master: str, started: float,
                 stream: TextIO | None = None, progress_interval: float | None = None) -> SeedOutcome:
    """Generate `messages` (or write the rows of `source`) to `topic`; progress lines on `stream` (stderr), timed
    from `started` (time.monotonic()). SeedJobError when a step fails (the progress line says `failed` first)."""
    from .preflight import PreflightError, check_target  # the project's client only: no pyspark, no JVM yet
    try:
        target = check_target(namesrv, topic, queues)
    except PreflightError as exc:
        raise SeedJobError(str(exc), "PREFLIGHT") from None
    try:
        from .seed import SeedError, generate, read_file, session, write_topic
    except ImportError as exc:
        raise SeedJobError(f"seed needs pyspark (and pyarrow): {install_hint('spark')} ({exc})",
                           "SETUP") from None
    from .progress import Progress
    progress = Progress(namesrv, target, messages, started, stream or sys.stderr, interval=progress_interval)
    progress.phase = f"starting Spark ({master})"
    progress.start()

    def failed(message: str, code: str) -> SeedJobError:
        progress.stop("failed")
        return SeedJobError(message, code)
    try:
        spark_started = time.monotonic()
        try:
            with tempfile.TemporaryDirectory(prefix="rocketmq-seed-") as tmp:  # read once, when the JVM starts
                log_conf = os.path.join(tmp, "log4j2.properties")
                with open(log_conf, "w", encoding="utf-8") as f:
                    f.write(_QUIET_LOG4J2)
                spark = session(master, "rocketmq-emulator seed", log_level="OFF", progress_bar=False, **{
                    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log_conf}"})
        except Exception as exc:  # noqa: BLE001 - no JVM, bad master: one line
            raise failed(f"cannot start Spark ({master}): {_first_line(exc)}", "SPARK") from None
        spark_seconds = time.monotonic() - spark_started
        try:
            if source is None:
                assert messages is not None
                df = generate(spark, messages, body_size=body_size, keys=keys, tags=tags, time_span_s=time_span_s,
                              seed=seed, partitions=partitions, brokers=len(target.brokers))
            else:
                progress.phase = f"counting the rows of {source}"
                df = read_file(spark, source)
                progress.total = df.count()
                if partitions is not None:  # as read otherwise: a shuffle costs more than it evens out
                    df = df.repartition(partitions)
            progress.phase = "writing"
            report = write_topic(df, topic, namesrv)
            progress.stop("done")
        except SeedError as exc:
            raise failed(str(exc), "SEED") from None
        except Exception as exc:  # noqa: BLE001 - a file Spark cannot read, ...: one line
            raise failed(f"seeding topic {topic!r} failed: {_first_line(exc)}", type(exc).__name__) from None
        finally:
            spark.stop()
    finally:
        progress.stop("failed")  # a no-op once stopped
    return SeedOutcome(report, spark_seconds)
