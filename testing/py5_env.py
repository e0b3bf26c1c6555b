"""The official RocketMQ 5.x Python client (PyPI `rocketmq-python-client==5.1.2`) in a virtual environment of its
own, for the tests and benchmarks that drive it in a subprocess: its import name `rocketmq` is also the 4.x C++
client's, and its generated stubs cannot share a process with other copies of RocketMQ's protos.

The environment is made once per machine, in `~/.cache/rocketmq-emulator/py5-client` (or `$ROCKETMQ_PY5_VENV`),
with pip from the same index as the project's own dependencies (about 30 s the first time), under a file lock so
that parallel test workers (pytest-xdist) make it once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLIENT = "rocketmq-python-client==5.1.2"
VENV = Path(os.environ.get("ROCKETMQ_PY5_VENV") or Path.home() / ".cache" / "rocketmq-emulator" / "py5-client")


def py5_python() -> Path:
    """The interpreter of the 5.x client's environment, made (once) if missing."""
    from filelock import FileLock  # (the test extra's; only tests and benchmarks call this)
    python = VENV / "bin" / "python"
    marker = VENV / ".installed"
    if marker.exists() and marker.read_text() == CLIENT:
        return python
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(VENV.with_name(VENV.name + ".lock")), timeout=900):
        if marker.exists() and marker.read_text() == CLIENT:
            return python  # another worker made it while this one waited
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", CLIENT], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"pip install {CLIENT} failed:\n{done.stderr[-3000:]}")
        marker.write_text(CLIENT)
    return python
