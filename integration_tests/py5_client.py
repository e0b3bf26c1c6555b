"""The official RocketMQ 5.x Python client (PyPI `rocketmq-python-client==5.1.2`) for the tests, run through
`py5_driver.py` in a subprocess with a virtual environment of its own (its import name `rocketmq` is the C++
client's too, and its generated stubs cannot share a process with other copies of RocketMQ's protos).

    handle = start_py5(["simple", "--endpoint", ep, "--topic", "T", "--expect", "3"], home=tmp_path / "h")
    handle.wait(); handle.of("received")       # as cppclient.DriverHandle; describe() adds the client's log

The environment: testing/py5_env.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Sequence

from rocketmq_emulator.testing.py5_env import py5_python

from .cppclient import DriverHandle

DRIVER = Path(__file__).resolve().with_name("py5_driver.py")


class Py5Handle(DriverHandle):
    def client_log_complaints(self) -> list[str]:
        """The client's own log ($HOME/logs/rocketmq_python/), errors and warnings."""
        if self.home is None:
            return []
        out = []
        for log in sorted((self.home / "logs" / "rocketmq_python").glob("*.log")):
            with open(log, errors="replace") as f:
                out += [line.rstrip() for line in f if "[ERROR]" in line or "[WARNING]" in line]
        return out

    def describe(self) -> str:
        return super().describe().replace("C++ client log", "5.x client log")


def start_py5(args: Sequence[str], *, home: Path, timeout: float = 60,
              env: dict[str, str] | None = None) -> Py5Handle:
    """Start `py5_driver.py <args>` with HOME=`home` (and `env`); killed after `timeout` seconds."""
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **(env or {}), "HOME": str(home), "PYTHONUNBUFFERED": "1"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.Popen([str(py5_python()), str(DRIVER), *map(str, args)], cwd=home, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace")
    return Py5Handle(proc, timeout, home)


def run_py5(args: Sequence[str], *, home: Path, timeout: float = 60,
            env: dict[str, str] | None = None) -> Py5Handle:
    handle = start_py5(args, home=home, timeout=timeout, env=env)
    handle.wait()
    return handle
