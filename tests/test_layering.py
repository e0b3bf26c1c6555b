"""The package layering rules of the project, enforced on every module's imports.

Every package installs as `rocketmq_emulator.<folder>`; inside the project, imports name that package (or
are relative). The rules, lowest layer first: `protocol` (sans-IO codec; only `protocol.transport` may
import asyncio), `store` (no network), `broker`, `client` (protocol only), `spark_tools` (the only pyspark
user).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("broker", "client", "protocol", "store", "spark_tools")
IO = {"asyncio", "socket", "selectors", "uvloop", "aiofiles"}

# package -> what it must never import: project packages (by their folder name) and third-party modules
FORBIDDEN = {
    "protocol": IO | {"store", "broker", "client", "spark_tools", "pyspark"},
    "store": IO - {"aiofiles"} | {"broker", "client", "spark_tools", "pyspark"},
    "broker": {"client", "spark_tools", "pyspark"},
    "client": {"broker", "store", "spark_tools", "pyspark"},
}
#: the one asyncio module of protocol/: the transport that broker and client share (RocketMQ's remoting)
TRANSPORT_MODULES = {"protocol/transport.py"}


def imported_names(path: Path) -> set[str]:
    """Top-level modules imported, with the project's packages named by folder (`rocketmq_emulator.store` ->
    `store`; a relative import is resolved against the file's package)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = list(path.relative_to(ROOT).parent.parts)
    names: set[str] = set()

    def add(dotted: str) -> None:
        parts = dotted.split(".")
        if parts[0] == "rocketmq_emulator" and len(parts) > 1:
            names.add(parts[1])
        else:
            names.add(parts[0])

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                add(node.module)
            elif node.level:
                base = package[: len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
                if target:
                    names.add(target[0])
    return names


def project_files():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_respect_layers(package):
    offenders = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        forbidden = FORBIDDEN[package] - (IO if rel in TRANSPORT_MODULES else set())
        bad = imported_names(path) & forbidden
        if bad:
            offenders[rel] = sorted(bad)
    assert not offenders, f"layering violated: {offenders}"


def test_no_module_imports_a_top_level_project_name():
    """`import client` would load a second copy of the package beside `rocketmq_emulator.client`."""
    offenders = []
    for tree_root in (*PACKAGES, "tests", "integration_tests", "benchmarks"):
        for path in sorted((ROOT / tree_root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                        else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                        else [])
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {m}" for m in mods
                              if m.split(".")[0] in PACKAGES]
    assert not offenders, offenders


def test_only_spark_tools_imports_pyspark():
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("spark_tools", ".venv") or "site-packages" in rel.parts:
            continue
        assert "pyspark" not in imported_names(path), f"{rel} imports pyspark"


def test_importing_the_codec_loads_no_asyncio_or_socket():
    """Every protocol module but the transport is sans-IO, and loads nothing of the higher layers."""
    code = ("import sys, pkgutil, importlib, rocketmq_emulator.protocol as p\n"
            "for m in pkgutil.iter_modules(p.__path__):\n"
            "    if m.name != 'transport': importlib.import_module('rocketmq_emulator.protocol.' + m.name)\n"
            "print(sorted(m for m in ('asyncio', 'socket', 'selectors', 'rocketmq_emulator.store', "
            "'rocketmq_emulator.broker', 'rocketmq_emulator.client') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


#: the push consumer's collaborators take a ConsumerContext and callbacks, never the PushConsumer facade
CONSUMER_COLLABORATORS = ("client/rebalance.py", "client/pull_service.py", "client/pull_from_where.py",
                          "client/consume_service.py", "client/consume_orderly.py", "client/consume_iterator.py",
                          "client/remoting_processor.py", "client/consumer_context.py")


@pytest.mark.parametrize("rel", CONSUMER_COLLABORATORS)
def test_push_consumer_collaborators_do_not_know_the_facade(rel):
    tree = ast.parse((ROOT / rel).read_text())
    imports = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imports.add(node.module or "")
    assert not {m for m in imports if m.endswith("push_consumer")}, f"{rel} imports push_consumer"
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    annotations = {ast.unparse(n.annotation) for n in ast.walk(tree) if isinstance(n, ast.arg) and n.annotation}
    assert "PushConsumer" not in names and not any("PushConsumer" in a for a in annotations), rel
