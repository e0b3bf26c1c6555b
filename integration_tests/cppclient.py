"""Run `cpp_driver.py` (the official C++ client) in a subprocess and collect its JSON-line events.

    handle = start_driver(["push", "--namesrv", addr, "--topic", "T", "--group", "G"], timeout=30, home=tmp_path)
    handle.wait_for("started", timeout=10)
    ... produce ...
    handle.wait()                      # returns the events; the watchdog kills the driver after `timeout`
    handle.stop()                      # or: SIGTERM, a push driver then shuts down cleanly; then wait()
    assert not handle.timed_out and handle.returncode == 0
    handle.of("received")              # the events named "received"

    result = run_driver(["produce", ...], timeout=20, home=tmp_path)   # start + wait
    sent = produce(emu, tmp_path, 10, topic="T")   # the C++ client sends 10 messages (asserted OK)

The C++ client can hang forever on a broker bug, hence the watchdog: after `timeout` seconds from start the
process is killed and `timed_out` is set. `HOME` is the given folder (the library writes its log under
$HOME/logs/rocketmq-cpp and broadcasting offsets under $HOME/.rocketmq_offsets); the driver also runs there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

DRIVER = Path(__file__).resolve().with_name("cpp_driver.py")


class DriverHandle:
    """A running driver: `events` fills in as lines arrive (non-JSON stdout lines go to `noise`)."""

    def __init__(self, proc: subprocess.Popen, timeout: float, home: Path | None = None) -> None:
        self.proc = proc
        self.home = home
        self.events: list[dict] = []
        self.noise: list[str] = []
        self.timed_out = False
        self._stderr: list[str] = []
        self._cond = threading.Condition()
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for t in self._readers:
            t.start()
        self._watchdog = threading.Timer(timeout, self._on_timeout)
        self._watchdog.daemon = True
        self._watchdog.start()

    # -- readers ------------------------------------------------------------------------------------
    def _read_stdout(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            with self._cond:
                if isinstance(event, dict):
                    self.events.append(event)
                else:
                    self.noise.append(line)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self._stderr.append(line)

    def _on_timeout(self) -> None:
        if self.proc.poll() is None:
            self.timed_out = True
            self.proc.kill()

    # -- API ----------------------------------------------------------------------------------------
    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    def of(self, name: str) -> list[dict]:
        with self._cond:
            return [e for e in self.events if e.get("event") == name]

    def wait_for(self, name_or_pred: str | Callable[[dict], bool], timeout: float) -> dict | None:
        """The first event matching (an event name or a predicate), waiting up to `timeout`; None if none."""
        pred = name_or_pred if callable(name_or_pred) else (lambda e: e.get("event") == name_or_pred)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events:
                    if pred(event):
                        return event
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._readers[0].is_alive()):
                    return None
                self._cond.wait(min(left, 0.2))

    def wait(self) -> list[dict]:
        """Wait for the process to end (the watchdog bounds this) and for all its output; return the events."""
        self.proc.wait()
        for t in self._readers:
            t.join()
        self._watchdog.cancel()
        return self.events

    def stop(self) -> list[dict]:
        """Ask the driver to finish now (SIGTERM: the push scenario shuts down cleanly), then `wait`."""
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.wait()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.wait()

    def describe(self) -> str:
        """For assertion messages: exit status, events and stderr."""
        lines = [f"returncode={self.returncode} timed_out={self.timed_out}"]
        lines += [json.dumps(e) for e in self.events] + self.noise
        if self.stderr:
            lines.append("stderr:\n" + self.stderr[-4000:])
        complaints = self.client_log_complaints()
        if complaints:
            lines.append("C++ client log (warnings and errors):\n" + "\n".join(complaints[-40:]))
        return "\n".join(lines)

    def client_log_complaints(self) -> list[str]:
        """The (warning) and (error) lines of this process's own C++ client log ($HOME/logs/rocketmq-cpp)."""
        if self.home is None:
            return []
        out = []
        for log in sorted((self.home / "logs" / "rocketmq-cpp").glob(f"{self.proc.pid}_*")):
            with open(log, errors="replace") as f:
                out += [line.rstrip() for line in f if "](error)" in line or "](warning)" in line]
        return out

    def __enter__(self) -> DriverHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.kill()


def start_driver(args: Sequence[str], *, timeout: float, home: str | os.PathLike,
                 env: dict[str, str] | None = None, python: str | None = None) -> DriverHandle:
    """Start `cpp_driver.py <args>` with HOME=`home` (created if missing); killed after `timeout` seconds."""
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {}), "HOME": str(home), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([python or sys.executable, str(DRIVER), *map(str, args)], cwd=home, env=full_env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors="replace")
    return DriverHandle(proc, timeout, home)


def run_driver(args: Sequence[str], *, timeout: float, home: str | os.PathLike,
               env: dict[str, str] | None = None) -> DriverHandle:
    """`start_driver` then `wait`: the finished handle (check `timed_out`, `returncode`, `events`)."""
    handle = start_driver(args, timeout=timeout, home=home, env=env)
    handle.wait()
    return handle


def produce(emu: Any, home: str | os.PathLike, count: int, *, topic: str, prefix: str = "m-",
            group: str = "PG") -> list[dict]:
    """Send `count` messages to `topic` with the C++ client (bodies `prefix` + number, tags Tag<i>, keys
    `key<i> k`) through `emu`'s name server; returns the `sent` events, all of them OK (asserted)."""
    result = run_driver(["produce", "--namesrv", emu.namesrv_addr, "--topic", topic, "--group", group,
                         "--count", str(count), "--tags", "Tag{i}", "--keys", "key{i} k", "--body-prefix", prefix],
                        timeout=120, home=home).events
    sent = [e for e in result if e["event"] == "sent"]
    assert len(sent) == count and all(e["status"] == "OK" for e in sent), \
        [e for e in result if e["event"] != "sent"] or result[-3:]
    return sent
