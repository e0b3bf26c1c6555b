"""Command-line start-up cost: process start to exit of `rocketmq-emulator admin topicList` and `produce -c 1`
against a running broker, and `serve` from launch to its broker port accepting connections.

    .venv/bin/python -m benchmarks.cli_bench [--runs 9]

Run it on an idle machine: every figure is a median of --runs launches of the installed `rocketmq-emulator`
script (each a fresh interpreter), timed from just before the launch to the process's exit (or, for `serve`, to
the first accepted connection on its broker port). `serve` also prints the "started in" figure of its ready line,
and the run says whether the launches found the broker's modules compiled: with PYTHONDONTWRITEBYTECODE set and an
editable install, every launch compiles them again (about 12,000 lines for `serve`), which costs more than a
third of `serve`'s start-up on these machines (benchmarks/README.md, "Command line").
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.ports import free_broker_port, free_port

#: measure -> target in seconds (README "Performance")
TARGETS = {"admin topicList": 0.25, "produce -c 1": 0.30, "serve: launch to broker port accepting": 0.25}
TOPIC = "CliBench"


def command() -> list[str]:
    script = Path(sys.executable).with_name("rocketmq-emulator")
    return [str(script)] if script.exists() else COMMAND


def start_broker(store: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([*command(), "serve", "--namesrv-port", "0", "--broker-port", "0", "--store-dir", store],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"ready: namesrv (\S+)", line)
        if found:
            return proc, found.group(1)
    raise SystemExit(f"the broker did not start (exit {proc.wait()})")


def bytecode_state() -> str:
    """How many of the broker's modules (broker/, protocol/, store/) have compiled bytecode a launch can use, and
    whether a launch writes what is missing (the launches inherit this process's environment)."""
    root = Path(__file__).resolve().parent.parent
    sources = [p for folder in ("broker", "protocol", "store") for p in (root / folder).rglob("*.py")]
    cached = sum(Path(importlib.util.cache_from_source(str(p))).exists() for p in sources)
    writes = "not written (PYTHONDONTWRITEBYTECODE)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "written"
    return f"{cached} of {len(sources)} broker/protocol/store modules with compiled bytecode; missing bytecode {writes}"


def time_command(args: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([*command(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr.strip()}")
    return elapsed


def time_serve(store: str) -> tuple[float, float]:
    """(launch to the broker port accepting, the ready line's "started in" figure), in seconds."""
    namesrv_port, broker_port = free_port(), free_broker_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([*command(), "serve", "--namesrv-port", str(namesrv_port), "--broker-port",
                             str(broker_port), "--store-dir", store], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", broker_port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit(f"serve exited with {proc.returncode}: {proc.stderr.read()}") from None
                time.sleep(0.002)
        accepting = time.perf_counter() - t0
        assert proc.stderr is not None
        for line in proc.stderr:
            found = re.search(r"started in (\d+) ms", line)
            if found:
                return accepting, int(found.group(1)) / 1000
        raise SystemExit("serve printed no ready line")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="launches per measure (default 9)")
    runs = parser.parse_args().runs
    figures: dict[str, list[float]] = {name: [] for name in TARGETS}
    started_in: list[float] = []
    with tempfile.TemporaryDirectory(prefix="cli-bench-") as tmp:
        broker, namesrv = start_broker(os.path.join(tmp, "store"))
        try:
            time_command(["admin", "updateTopic", "-n", namesrv, "-t", TOPIC])
            for _ in range(runs):
                figures["admin topicList"].append(time_command(["admin", "topicList", "-n", namesrv]))
                figures["produce -c 1"].append(time_command(["produce", "-n", namesrv, "-t", TOPIC, "-c", "1"]))
        finally:
            broker.send_signal(signal.SIGTERM)
            broker.wait(10)
        for i in range(runs):
            accepting, ready = time_serve(os.path.join(tmp, f"serve-{i}"))
            figures["serve: launch to broker port accepting"].append(accepting)
            started_in.append(ready)
    print(f"process start to exit (or to accepting), median of {runs} runs (min-max); load average "
          f"{os.getloadavg()[0]:.2f}")
    for name, values in figures.items():
        median = statistics.median(values)
        verdict = "met" if median <= TARGETS[name] else "NOT met"
        print(f"  {name:40s} {median * 1000:6.0f} ms ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})   "
              f"target <= {TARGETS[name] * 1000:.0f} ms: {verdict}")
    print(f"  serve's ready line, 'started in'         {statistics.median(started_in) * 1000:6.0f} ms")
    print(f"  bytecode: {bytecode_state()}")


if __name__ == "__main__":
    main()
