"""The package layering rules of the project, enforced on every module's imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# package -> top-level modules it must never import
FORBIDDEN = {
    "protocol": {"asyncio", "socket", "selectors", "uvloop", "aiofiles", "store", "broker", "client", "spark_tools",
                 "pyspark"},
    "store": {"asyncio", "socket", "selectors", "uvloop", "broker", "client", "spark_tools", "pyspark"},
    "broker": {"client", "spark_tools", "pyspark"},
    "client": {"broker", "store", "spark_tools", "pyspark"},
}


def imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_respect_layers(package):
    offenders = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = imported_top_levels(path) & FORBIDDEN[package]
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert not offenders, f"layering violated: {offenders}"


def test_only_spark_tools_imports_pyspark():
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("spark_tools", ".venv") or "site-packages" in rel.parts:
            continue
        assert "pyspark" not in imported_top_levels(path), f"{rel} imports pyspark"


def test_importing_protocol_loads_no_asyncio_or_socket():
    code = ("import sys, pkgutil, importlib, protocol\n"
            "for m in pkgutil.iter_modules(protocol.__path__): importlib.import_module('protocol.' + m.name)\n"
            "print(sorted(m for m in ('asyncio', 'socket', 'selectors', 'store', 'broker', 'client') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
