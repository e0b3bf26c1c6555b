"""The progress line of `rocketmq-emulator seed` (no pyspark): a thread in the Spark driver polls the topic's max
offsets with this project's Admin client and writes, every second on stderr, how many messages have landed of
the total, the time since the command started and what it is doing (starting Spark, writing, ...). On a
terminal the line is rewritten in place; otherwise each update is its own line.

    seed Orders: 120,000 / 1,000,000 messages (12.0%) after 31.0 s: writing
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import TextIO

from rocketmq_emulator.client import Admin

from .preflight import CHECK_TIMEOUT, SeedTarget, admin_config, landed_offsets

#: seconds between two progress updates
INTERVAL = 1.0
#: how long one count may take: longer than the line's interval, since a broker busy with the write answers late
POLL_TIMEOUT = 10.0


class Progress:
    """`with Progress(namesrv, target, total, t0) as p: p.phase = "writing"; ...` (`total` may be set later;
    `interval`: seconds between two lines, default INTERVAL)."""

    def __init__(self, namesrv: str, target: SeedTarget, total: int | None, started: float,
                 stream: TextIO, interval: float | None = None) -> None:
        self.namesrv, self.target, self.total, self.started = namesrv, target, total, started
        self.stream, self.interval = stream, INTERVAL if interval is None else interval
        self.phase = "starting"
        self.landed = 0
        self._tty = stream.isatty()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="seed-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def __enter__(self) -> Progress:
        self.start()
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.stop("done" if exc_type is None else "failed")

    def stop(self, phase: str = "done") -> None:
        """Poll once more, write the last line (`phase`) and end the thread."""
        if self._stop.is_set():
            return
        self.phase = phase
        self._stop.set()
        self._thread.join()

    def line(self) -> str:
        total = f"{self.total:,}" if self.total is not None else "?"
        share = f" ({100 * self.landed / self.total:.1f}%)" if self.total else ""
        return (f"seed {self.target.topic}: {self.landed:,} / {total} messages{share} after "
                f"{time.monotonic() - self.started:.1f} s: {self.phase}")

    def _write(self, final: bool = False) -> None:
        text = self.line()
        if self._tty:
            self.stream.write(f"\r{text}\x1b[K" + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    async def _poll(self, admin: Admin, timeout: float = POLL_TIMEOUT) -> None:
        try:
            status = await asyncio.wait_for(admin.topic_status(self.target.topic), timeout)
        except Exception:  # noqa: BLE001 - topic not routed yet, broker gone or busy: keep the last count
            return
        self.landed = max(self.landed, landed_offsets(status) - self.target.baseline)

    async def _keep_polling(self, admin: Admin) -> None:
        """Ask for the count again as soon as the last answer came (or timed out), at most once an interval."""
        while not self._stop.is_set():
            asked = time.monotonic()
            await self._poll(admin)
            await asyncio.sleep(max(0.0, asked + self.interval - time.monotonic()))

    async def _report(self, admin: Admin) -> None:
        """A line every interval with the latest count; a broker slow to answer (a loaded machine, a write
        flooding it) delays the count, never the lines. After the job: one more poll for the last count."""
        poller = asyncio.ensure_future(self._keep_polling(admin))
        try:
            tick = time.monotonic()
            while not self._stop.is_set():
                self._write()
                tick += self.interval
                while not self._stop.is_set() and time.monotonic() < tick:  # stop() is called from another thread
                    await asyncio.sleep(min(0.05, tick - time.monotonic()))
        finally:
            poller.cancel()
            await asyncio.gather(poller, return_exceptions=True)
        await self._poll(admin, POLL_TIMEOUT if self.phase == "done" else CHECK_TIMEOUT)  # a failure: say it soon
        self._write(final=True)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        admin = Admin(config=admin_config(self.namesrv, POLL_TIMEOUT), instance_name=f"seed-progress-{os.getpid()}")
        try:
            loop.run_until_complete(admin.start())
            loop.run_until_complete(self._report(admin))
        except Exception:  # noqa: BLE001 - progress is best effort: never a traceback from this thread
            pass
        finally:
            try:
                loop.run_until_complete(admin.stop())
            except Exception:  # noqa: BLE001
                pass
            loop.close()
