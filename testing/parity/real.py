"""The real Apache RocketMQ brokers of `../shared/realbroker` (4.9.8) and `../shared/realbroker5` (5.3.3 with its
gRPC proxy): built when missing, started on free 127.0.0.1 ports in a fresh directory, stopped.

The 4.9.8 broker runs with `-Dtls.server.mode=disabled`: plain TCP clients see no difference (its
HandshakeHandler passes non-TLS bytes through in both modes) and it starts in 5-8 s instead of 12-20 s.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    """`../shared` beside the checkout (CI lays it there too); RMQ_SHARED overrides."""
    env = os.environ.get("RMQ_SHARED")
    if env:
        return Path(env)
    for candidate in (ROOT.parent / "shared", ROOT.parent.parent / "shared", Path("/work/shared")):
        if (candidate / "realbroker").is_dir():
            return candidate
    raise FileNotFoundError("../shared/realbroker not found (set RMQ_SHARED to the folder holding it)")


@dataclass(frozen=True)
class Flavour:
    name: str           # what the snapshots say they were recorded with
    folder: str         # under shared/
    out: str            # build.sh's OUT

    def bin(self, tool: str) -> Path:
        return Path(self.out) / "bin" / tool


REAL_49 = Flavour("Apache RocketMQ 4.9.8 (shared/realbroker: upstream name server and broker)", "realbroker",
                  "/tmp/realrmq")
REAL_53 = Flavour("Apache RocketMQ 5.3.3 (shared/realbroker5: upstream broker with its gRPC proxy in local mode)",
                  "realbroker5", "/tmp/realrmq5")

_build_lock = threading.Lock()


def ensure_built(flavour: Flavour) -> None:
    with _build_lock:
        if flavour.bin("up").exists() and Path("/tmp/javarmq/bin/mqadmin").exists():
            return
        subprocess.run(["bash", str(shared_dir() / flavour.folder / "build.sh")], check=True,
                       env={**os.environ, "OUT": flavour.out}, stdout=subprocess.DEVNULL)


@dataclass
class RealBroker:
    """A running real name server + broker (+ proxy for 5.3.3); `env` is what `bin/up` wrote."""
    flavour: Flavour
    directory: Path
    env: dict[str, str]

    @property
    def namesrv(self) -> str:
        return self.env["NAMESRV"]

    @property
    def broker(self) -> str:
        return self.env["BROKER"]

    @property
    def grpc(self) -> str:
        return self.env["GRPC"]

    def stop(self) -> None:
        subprocess.run([str(self.flavour.bin("down")), str(self.directory)], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.directory, ignore_errors=True)


@contextlib.contextmanager
def start_namesrv(flavour: Flavour, directory: Path, timeout: float = 60) -> Iterator[str]:
    """A real name server alone (`bin/namesrv` on a free port) while the block runs; yields its address."""
    ensure_built(flavour)
    directory.mkdir(parents=True, exist_ok=True)
    log_path = directory / "namesrv.out"
    with open(log_path, "wb") as out:
        proc = subprocess.Popen([str(flavour.bin("namesrv")), "-d", str(directory / "ns")], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while b"boot success" not in log_path.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{flavour.name}'s name server did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.1)
        found = re.search(r"namesrv: (\S+) dir=", log_path.read_text())  # bin/namesrv's first line
        if found is None:
            raise RuntimeError(f"{flavour.name}'s name server did not say its address:\n{log_path.read_text()}")
        addr = found.group(1)
        yield addr
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start(flavour: Flavour, settings: dict[str, str] | None = None) -> RealBroker:
    """A fresh real broker with `settings` as extra broker.conf lines (raises with its log on failure)."""
    ensure_built(flavour)
    directory = Path(tempfile.mkdtemp(prefix="parity-real-"))
    args = [str(flavour.bin("up")), str(directory)] + [f"{k}={v}" for k, v in (settings or {}).items()]
    env = dict(os.environ)
    if flavour is REAL_49:
        env["RMQ_JAVA_OPTS"] = (env.get("RMQ_JAVA_OPTS", "") + " -Dtls.server.mode=disabled").strip()
    done = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        raise RuntimeError(f"{flavour.name} did not start:\n{done.stdout[-3000:]}")
    values = {}
    for line in (directory / "env").read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            values[k] = v
    return RealBroker(flavour, directory, values)
