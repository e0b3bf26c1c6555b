"""The release: `python -m build` makes an sdist and a wheel (the wheel is built from the sdist, so the sdist
builds); the wheel installs in a clean virtual environment with the runtime extras and passes the release smoke
test there (serve, produce, consume, export, the dashboard and gRPC, a clean stop: integration_tests/
release_smoke.py). The dependencies come from the package index (pip's cache holds them after the suite's own
install). The release workflow also installs the sdist, and each extra alone, in clean venvs; a missing extra's
message is tested in test_cli_ports.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "integration_tests" / "release_smoke.py"
#: the folders that make up the import package (pyproject's package-dir)
PACKAGE_DIRS = ("broker", "cli", "client", "native", "protocol", "spark_tools", "store", "testing")

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sdist and wheel of the tracked files (what a clean checkout builds: no stray build output of this one)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout to copy the tracked files")
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(src)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def _install(python: Path, target: str) -> None:
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check",
                           target],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def _smoke(python: Path, *flags: str) -> str:
    done = subprocess.run([str(python), str(SMOKE), *flags], capture_output=True, text=True, timeout=300,
                          cwd=python.parents[1])
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_build_makes_an_sdist_and_a_wheel_with_every_package(dist):
    [sdist] = dist.glob("rocketmq_emulator-*.tar.gz")
    [wheel] = dist.glob("rocketmq_emulator-*.whl")
    with tarfile.open(sdist) as tar:
        top = {Path(n).parts[1] for n in tar.getnames() if len(Path(n).parts) > 1}
    assert set(PACKAGE_DIRS) | {"pyproject.toml", "setup.py", "README.md"} <= top
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {f"rocketmq_emulator/{d}/__init__.py" for d in PACKAGE_DIRS} <= set(names)
    assert "rocketmq_emulator/broker/dashboard/static/index.html" in names
    for extra in ("grpc", "dashboard", "acl", "spark", "pytest"):
        assert f"Provides-Extra: {extra}" in metadata
    assert "License-Expression: Apache-2.0" in metadata
    # built where a C compiler is: the native lane is in the wheel; where none is, the wheel has no lane (it is
    # still tagged abi3-linux, setup.py declaring an optional extension) and installs to run the Python path
    lane = any(n.startswith("rocketmq_emulator/native/_lane") and n.endswith(".so") for n in names)
    assert lane == (_c_compiler() is not None), (wheel.name, _c_compiler())


def _c_compiler() -> str | None:
    """The C compiler setuptools would run for this interpreter (sysconfig's CC), if it is on PATH."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    return shutil.which(cc[0]) if cc else None


def test_the_wheel_with_the_runtime_extras_passes_the_smoke_test_in_a_clean_venv(dist, tmp_path):
    [wheel] = dist.glob("rocketmq_emulator-*.whl")
    python = _venv(tmp_path / "venv")
    _install(python, f"{wheel}[grpc,dashboard,acl,pytest]")
    out = _smoke(python, "--grpc", "--dashboard")
    assert "ok   a 5.x route query over gRPC" in out and "ok   the dashboard's API answers" in out


def test_the_release_workflow_checks_what_this_test_checks():
    """The workflow (.github/workflows/release.yml) builds with the same command, runs the same smoke script, and
    installs every runtime extra of pyproject.toml in its own clean venv."""
    import tomllib

    import yaml
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    steps = [s.get("run", "") for job in workflow["jobs"].values() for s in job.get("steps", [])]
    assert any("python -m build --outdir dist ." in run for run in steps)
    assert any("integration_tests/release_smoke.py" in run for run in steps)
    matrix = workflow["jobs"]["smoke"]["strategy"]["matrix"]["include"]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    runtime = set(extras) - {"test", "docs"}
    assert runtime <= {e["extras"].strip("[]") for e in matrix}, "an extra without a clean install in the workflow"
    assert {"wheel", "sdist"} == {e["install"] for e in matrix}
    assert workflow["jobs"]["publish"]["needs"] == ["smoke", "image"]
