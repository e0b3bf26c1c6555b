"""The `rocketmq-emulator` command line in a subprocess, as a user runs it: `COMMAND` is what the installed
script runs (a fresh interpreter, no shared state with the test), `run_cli()` runs one command to its end."""

from __future__ import annotations

import os
import subprocess
import sys

#: `rocketmq-emulator` without depending on where the script was installed
COMMAND = [sys.executable, "-m", "rocketmq_emulator.cli"]


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `rocketmq-emulator ARGS...` to its end; its output as text. `$NAMESRV_ADDR` is cleared (so `-n`
    decides) unless `env` sets it."""
    return subprocess.run([*COMMAND, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "NAMESRV_ADDR": "", **(env or {})})
