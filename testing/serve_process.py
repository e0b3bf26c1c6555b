"""`rocketmq-emulator serve ARGS` in a subprocess with its ready file, as a user or a script runs it, for tests of
the roles and processes (integration_tests/test_cluster.py, test_failover.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from .command_line import COMMAND, run_cli
from .waits import wait_until


class Serve:
    """`rocketmq-emulator serve ARGS --ready-file F` in a subprocess; `info` is its ready file."""

    def __init__(self, tmp: Path, name: str, *args: str) -> None:
        self.ready = tmp / f"{name}.ready.json"
        self.log = tmp / f"{name}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETMQ_EMULATOR_")}
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([*COMMAND, "serve", *args, "--ready-file", str(self.ready)], stdout=out,
                                         stderr=subprocess.STDOUT, env=env)
        if not wait_until(lambda: self.ready.exists() or self.proc.poll() is not None, 30):
            self.stop()
            raise AssertionError(f"serve {args} was not ready in 30 s: {self.text()}")
        assert self.proc.poll() is None, self.text()
        self.info: dict[str, Any] = json.loads(self.ready.read_text())

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(20)


def cluster_list(namesrv: str) -> list[list[str]]:
    proc = run_cli("admin", "clusterList", "-n", namesrv)
    assert proc.returncode == 0, proc.stderr
    return [line.split() for line in proc.stdout.strip().splitlines()[1:]]
