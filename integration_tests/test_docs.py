"""The documentation site builds with no warning (`mkdocs build --strict`: every link and anchor valid), and its
command-line page, generated from the argument parser by docs/hooks/cli_reference.py, lists every command and
subcommand."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from rocketmq_emulator.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]


def _hook():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "docs" / "hooks" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs-material) is not installed")
    site_dir = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return site_dir


def test_the_site_builds_strictly(site):
    for page in ("index.html", "getting-started/index.html", "user/offsets/index.html", "reference/cli/index.html",
                 "contributing/layout/index.html", "contributing/testing/index.html"):
        assert (site / page).is_file(), page


def test_the_cli_page_lists_every_subcommand(site):
    html = (site / "reference" / "cli" / "index.html").read_text()
    names = _hook().subcommand_names(build_parser())
    assert {"serve", "admin", "produce", "consume", "health", "trace", "seed"} <= set(names)
    assert "updateTopic" in names and "resetOffsetByTime" in names
    missing = [name for name in names if name not in html]
    assert not missing, f"the CLI page lacks: {missing}"
    # each one's usage, as argparse prints it, is on the page
    for sub, _ in _hook().commands(build_parser()):
        assert f"rocketmq-emulator {' '.join(sub.prog.split()[1:])}" in html, sub.prog
