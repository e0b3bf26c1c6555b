"""One import name: the project installs as `rocketmq_emulator.*` and claims no other top-level name.

Each test installs the project into a fresh venv (`pip install .` and `pip install -e .`) from a copy of the
tracked files, runs Python outside the repository, and checks what a user would: `rocketmq_emulator.client`
imports, the `rocketmq-emulator` script runs, and no folder's own name (`client`, `store`, `protocol`, `broker`,
`spark_tools`, `cli`, `testing`) is importable. Dependencies come from this venv through a `.pth` line, so the
test installs only the project itself.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("native", "broker", "client", "protocol", "store", "spark_tools", "cli", "testing")

CHECK = """
import importlib.util, sys
import rocketmq_emulator.client, rocketmq_emulator.broker.emulator, rocketmq_emulator.store
from rocketmq_emulator.client import Producer
print(sorted(n for n in %r if importlib.util.find_spec(n) is not None))
""" % (PACKAGES,)


def test_pyproject_lists_every_package_folder():
    import tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = sorted(str(p.parent.relative_to(ROOT)) for name in PACKAGES for p in (ROOT / name).rglob("__init__.py"))
    assert sorted(config["package-dir"].values()) == folders
    assert sorted(config["packages"]) == sorted("rocketmq_emulator." + f.replace("/", ".") for f in folders)


def test_the_dockerfile_copies_every_package_folder():
    """The image installs from the folders the Dockerfile copies: a new top-level package left out there breaks
    `docker build` ("package directory ... does not exist")."""
    copied = {line.split()[1] for line in (ROOT / "Dockerfile").read_text().splitlines()
              if line.startswith("COPY ") and "--from=" not in line}
    assert set(PACKAGES) <= copied, f"Dockerfile does not COPY {sorted(set(PACKAGES) - copied)}"


@pytest.mark.parametrize("editable", [False, True], ids=["pip-install", "pip-install-e"])
def test_installs_under_one_import_name(tmp_path, editable):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout to copy the tracked files")
    src = tmp_path / "src"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # the dependencies (msgspec, uvloop, ...) from this environment, appended after the venv's own paths
    (Path(site) / "deps-from-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = [str(py), "-m", "pip", "install", "-q", "--no-deps", *(["-e"] if editable else []), str(src)]
    result = subprocess.run(install, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    out = subprocess.run([str(py), "-c", CHECK], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"top-level names claimed: {out.stdout}"
    cli = subprocess.run([str(venv / "bin" / "rocketmq-emulator"), "serve", "--help"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert cli.returncode == 0 and "--namesrv-port" in cli.stdout, cli.stderr
