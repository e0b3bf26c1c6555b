"""README's Docker examples run with the tools they name, against the Docker API that Podman serves
(`docker_api.service()`, docs/containers.md "A Docker API"): the Python testcontainers snippet and both
compose files (with `docker compose`), taken from README.md as written, with only the image name, the ports (a
compose variable) and compose's stand-in application filled in, so README cannot drift from what runs.

The project's image is built once per run (`podman.prepared_image()`, shared with test_container.py); the module
is skipped, with the reason, only where Podman or the base image cannot be had."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from integration_tests import docker_api, podman

pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parents[1]
DOCKER = (ROOT / "docs" / "user" / "docker.md").read_text()
README_IMAGE = "rocketmq-emulator"


def readme_block(lang: str, containing: str) -> str:
    blocks = [code for code in re.findall(rf"```{lang}\n(.*?)```", DOCKER, flags=re.S) if containing in code]
    assert len(blocks) == 1, f"README's Docker section should have one {lang} block with {containing!r}"
    return blocks[0]


@pytest.fixture(scope="module")
def api():
    tag, reason = podman.prepared_image()
    if reason is not None:
        pytest.skip(f"container tests need podman and a base image: {reason}")
    with docker_api.service() as env:
        yield tag, {**os.environ, **env}


def test_readme_testcontainers_snippet_then_the_client_through_the_mapped_ports(api, tmp_path):
    tag, env = api
    snippet = readme_block("python", "testcontainers")
    assert f'DockerContainer("{README_IMAGE}")' in snippet
    script = snippet.replace(f'DockerContainer("{README_IMAGE}")', f'DockerContainer("{tag}")')
    # inside README's `with` block: the project's client produces and consumes through the mapped ports
    indent = re.match(r"\s*", snippet.rstrip("\n").splitlines()[-1]).group(0)
    assert indent, "README's snippet should end inside its `with` block"
    script += "".join(f"{indent}{line}\n" for line in (
        "import asyncio, json", "from integration_tests.docker_api import round_trip",
        "print(json.dumps({'namesrv_addr': namesrv_addr, **asyncio.run(round_trip(namesrv_addr))}))"))
    (tmp_path / "snippet.py").write_text(script)
    before = set(podman.sh("podman", "ps", "-aq").stdout.split())
    proc = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, capture_output=True, text=True, timeout=180,
                          env={**env, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["namesrv_addr"].startswith("localhost:")
    assert result["brokers"] == ["broker-a"]
    assert result["received"] == sorted(f"host-{i}" for i in range(10))
    # the `with` block removed its container (Ryuk is off: nothing else would)
    assert set(podman.sh("podman", "ps", "-aq").stdout.split()) <= before


APP = """\
    image: {tag}
    # the stand-in application: the image's own command line, producing and then consuming between containers
    entrypoint: ["sh", "-c", "rocketmq-emulator produce -t orders -c 5 -m 'from-app-{{i}}'
      && rocketmq-emulator consume -t orders -g app_cg --from-beginning --max-messages 5"]
"""


def instant(text: str) -> datetime:
    """Podman's RFC 3339 times with nanoseconds (Go trims trailing zeros), e.g. 2026-11-24T21:58:35.6023546Z."""
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", text)
    assert match, f"not an RFC 3339 UTC time: {text!r}"
    return datetime.fromisoformat(match[1]).replace(microsecond=int(((match[2] or "") + "000000")[:6]))


def test_readme_compose_file_app_waits_for_healthy_broker_and_talks_to_it_between_containers(api, tmp_path):
    tag, env = api
    compose = readme_block("yaml", "NAMESRV_ADDR: rocketmq:9876")
    assert "    build: .  " in compose and "    image: my-app\n" in compose
    compose = re.sub(r"    build: \..*\n", f"    image: {tag}\n", compose)
    compose = compose.replace("    image: my-app\n", APP.format(tag=tag))
    (tmp_path / "compose.yaml").write_text(compose)
    project = f"rmqemu{uuid.uuid4().hex[:8]}"
    run = [*docker_api.compose(), "-p", project]
    try:
        # Podman has no systemd here to run the healthcheck every 2 s: the ticker does it in its place
        with docker_api.HealthTicker(project):
            up = subprocess.run([*run, "up", "--no-color", "--exit-code-from", "app"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=180)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        app_lines = [line for line in up.stdout.splitlines() if line.startswith("app-1 ")]
        assert sum("SEND_OK" in line for line in app_lines) == 5, up.stdout[-3000:]
        assert sorted(line.rsplit("| ", 1)[1] for line in app_lines if "| from-app-" in line) == \
            [f"from-app-{i}" for i in range(5)], up.stdout[-3000:]
        # the app started only after a passing healthcheck of the broker (depends_on: service_healthy)
        health = json.loads(podman.sh(*podman.PODMAN, "inspect", "--format", "{{json .State.Health}}",
                                      f"{project}-rocketmq-1").stdout)
        app_started = json.loads(podman.sh(*podman.PODMAN, "inspect", "--format", "{{json .State}}",
                                           f"{project}-app-1").stdout)["StartedAt"]
        passed = [instant(check["End"]) for check in health["Log"] if check["ExitCode"] == 0]
        assert health["Status"] == "healthy" and passed, health
        assert min(passed) < instant(app_started), (health, app_started)
    finally:
        subprocess.run([*run, "down", "-v"], cwd=tmp_path, env=env, capture_output=True, timeout=120)


async def test_readme_compose_file_for_host_clients_on_chosen_ports(api, tmp_path):
    from rocketmq_emulator.testing.ports import free_port
    tag, env = api
    compose = readme_block("yaml", "${BROKER_PORT")
    assert f"    image: {README_IMAGE}\n" in compose
    (tmp_path / "compose.yaml").write_text(compose.replace(f"    image: {README_IMAGE}\n", f"    image: {tag}\n"))
    ns_port, broker_port = free_port(), free_port()
    env = {**env, "NAMESRV_PORT": str(ns_port), "BROKER_PORT": str(broker_port)}
    project = f"rmqemu{uuid.uuid4().hex[:8]}"
    run = [*docker_api.compose(), "-p", project]
    try:
        up = subprocess.run([*run, "up", "-d"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        podman.wait_healthy(f"{project}-rocketmq-1")
        ports = podman.sh(*podman.PODMAN, "port", f"{project}-rocketmq-1").stdout.split("\n")
        assert sorted(filter(None, ports)) == [f"10911/tcp -> 127.0.0.1:{broker_port}",
                                                f"9876/tcp -> 127.0.0.1:{ns_port}"]
        result = await docker_api.round_trip(f"127.0.0.1:{ns_port}")
        assert result == {"brokers": ["broker-a"], "received": sorted(f"host-{i}" for i in range(10))}
    finally:
        subprocess.run([*run, "down", "-v"], cwd=tmp_path, env=env, capture_output=True, timeout=120)
