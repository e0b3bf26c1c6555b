"""The official RocketMQ 5.x Python client (PyPI `rocketmq-python-client==5.1.2`) for the tests, run through
`py5_driver.py` in a subprocess with a virtual environment of its own (its import name `rocketmq` is the C++
client's too, and its generated stubs cannot share a process with other copies of RocketMQ's protos).

    handle = start_py5(["simple", "--endpoint", ep, "--topic", "T", "--expect", "3"], home=tmp_path / "h")
    handle.wait(); handle.of("received")       # as cppclient.DriverHandle; describe() adds the client's log

The environment is made once, in `.cache/py5-client` of the checkout (or $ROCKETMQ_PY5_VENV), with pip from the
same index as the project's own dependencies.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from .cppclient import DriverHandle

CLIENT = "rocketmq-python-client==5.1.2"
DRIVER = Path(__file__).resolve().with_name("py5_driver.py")
VENV = Path(os.environ.get("ROCKETMQ_PY5_VENV") or Path(__file__).resolve().parent.parent / ".cache" / "py5-client")


def py5_python() -> Path:
    """The interpreter of the 5.x client's environment, made (once) if missing."""
    python = VENV / "bin" / "python"
    marker = VENV / ".installed"
    if marker.exists() and marker.read_text() == CLIENT:
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", CLIENT], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pip install {CLIENT} failed:\n{done.stderr[-3000:]}")
    marker.write_text(CLIENT)
    return python


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
