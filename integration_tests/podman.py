"""Podman, a local base image and the project's image, as `docs/containers.md` describes: used by
`test_container.py` and `benchmarks/container_bench.py`.

`prepare()` installs Podman (apt, as root) when it is missing and builds the local stand-in base image
(Debian bookworm with Python, by debootstrap) when no registry base can be pulled; it returns the reason
when either cannot be done, and the test module skips with that reason. `ROCKETMQ_EMULATOR_BASE_IMAGE`
names another base image (e.g. python:3.11-slim where a registry is reachable).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCAL_BASE = "localhost/pybase:bookworm"
IMAGE = "localhost/rocketmq-emulator:test"
#: `--runtime runc` and both ulimits are needed on these machines (crun fails on their hybrid cgroups)
PODMAN = ("podman", "--runtime", "runc")
RUN_FLAGS = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=1000:1000"]


def sh(*args: str, timeout: float = 300, check: bool = True, **kw) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, **kw)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])}... exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc


def _install_podman() -> str | None:
    if shutil.which("podman") and shutil.which("runc"):
        return None
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "podman is not installed and cannot be installed here (needs root and apt-get)"
    try:
        sh("apt-get", "update", "-qq", timeout=300)
        sh("apt-get", "install", "-y", "-qq", "podman", "runc", "debootstrap", timeout=600,
           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        return f"installing podman failed: {exc}"
    return None


def base_image() -> str:
    return os.environ.get("ROCKETMQ_EMULATOR_BASE_IMAGE", LOCAL_BASE)


def _ensure_base() -> str | None:
    base = base_image()
    if sh("podman", "image", "exists", base, check=False).returncode == 0:
        return None
    if base != LOCAL_BASE:
        pulled = sh("podman", "pull", base, check=False, timeout=600)
        return None if pulled.returncode == 0 else f"base image {base} cannot be pulled: {pulled.stderr.strip()}"
    if not shutil.which("debootstrap"):
        return "debootstrap is missing: the local base image cannot be built"
    with tempfile.TemporaryDirectory() as tmp:
        rootfs = Path(tmp) / "rootfs"
        mirror = sh("apt-get", "indextargets", "--format", "$(REPO_URI)").stdout.split()
        if not mirror:
            return "no Debian mirror known to apt: the local base image cannot be built"
        try:
            sh("debootstrap", "--variant=minbase", "--include=python3,python3-venv,python3-pip,ca-certificates",
               "bookworm", str(rootfs), mirror[0], timeout=900)
            tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
            sh("podman", "import", "-", LOCAL_BASE, stdin=tar.stdout, timeout=600)
            tar.wait()
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            return f"building the local base image failed: {exc}"
    return None


def prepare() -> str | None:
    """None when podman and the base image are ready, else why not."""
    return _install_podman() or _ensure_base()


_built: dict[str, str | None | Exception] = {}


def prepared_image() -> tuple[str, str | None]:
    """`prepare()` and `build()` once per process (the test modules share the build, and a failed build is
    not tried again): (IMAGE, None), or (IMAGE, why podman or the base image cannot be had)."""
    if IMAGE not in _built:
        try:
            reason = prepare()
            if reason is None:
                build()
            _built[IMAGE] = reason
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            _built[IMAGE] = exc
    outcome = _built[IMAGE]
    if isinstance(outcome, Exception):
        raise outcome
    return IMAGE, outcome


def build(tag: str = IMAGE) -> float:
    """Build the project's Dockerfile; returns the seconds it took."""
    t0 = time.perf_counter()
    args = ["podman", "build", "--format", "docker", "--isolation=chroot", "--network=host",
            "--build-arg", f"BASE_IMAGE={base_image()}", "-t", tag]
    ca = "/etc/ssl/certs/ca-certificates.crt"
    if os.path.exists(ca):
        args += ["-v", f"{ca}:{ca}:ro"]
    sh(*args, str(ROOT), timeout=900)
    return time.perf_counter() - t0


def image_size(tag: str = IMAGE) -> int:
    return int(sh("podman", "image", "inspect", "--format", "{{.Size}}", tag).stdout.strip())


def run(name: str, *args: str, tag: str = IMAGE) -> None:
    """`podman run -d --name NAME ARGS... IMAGE` (not removed at exit: its exit code is read by `stop`)."""
    sh(*PODMAN, "rm", "-f", "-v", name, check=False)
    sh(*PODMAN, "run", *RUN_FLAGS, "-d", "--name", name, *args, tag)


def healthy(name: str) -> bool:
    return sh(*PODMAN, "healthcheck", "run", name, check=False, timeout=60).returncode == 0


def wait_healthy(name: str, timeout: float = 60) -> float:
    """Seconds until the image's HEALTHCHECK passes; raises after `timeout`."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if healthy(name):
            return time.perf_counter() - t0
        time.sleep(0.1)
    raise TimeoutError(f"container {name} not healthy after {timeout} s:\n{logs(name)}")


def logs(name: str) -> str:
    proc = sh(*PODMAN, "logs", name, check=False)
    return proc.stdout + proc.stderr


def stop(name: str, grace: int = 2) -> int:
    """SIGTERM, then SIGKILL after `grace` s (podman stop -t); returns the container's exit code (137: killed)."""
    sh(*PODMAN, "stop", "-t", str(grace), name, timeout=grace + 60)
    return int(sh(*PODMAN, "inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip())


def remove(name: str) -> None:
    sh(*PODMAN, "rm", "-f", "-v", name, check=False)


def remove_volume(name: str) -> None:
    sh(*PODMAN, "volume", "rm", "-f", name, check=False)
