"""Fixtures shared by tests/ and integration_tests/."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

#: integration_tests/test_pytest_plugin.py runs test projects with pytester
pytest_plugins = ["pytester"]


@pytest.fixture
def tiny_fs(tmp_path: Path):
    """A real 32 MiB tmpfs, for disk-full tests (mounting needs root, which these machines and CI have)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "tiny"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
