"""Every ```python block of README.md runs as written, each in a fresh interpreter as a user would run it
(user-facing examples must not rot)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_readme_has_examples():
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(index):
    proc = subprocess.run([sys.executable, "-c", BLOCKS[index]], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"README python block {index} failed:\n{proc.stderr[-3000:]}"
