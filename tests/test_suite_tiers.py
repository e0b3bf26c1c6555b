"""The suite's tiers (README "Testing"): tests/ is the unit tier and starts no process; every integration module
says what it needs (integration_tests/conftest.py NEEDS), with marks pyproject.toml registers, so a machine
without a JDK, Podman or a browser can deselect what it cannot run."""

from __future__ import annotations

import ast
import os
import re
import shutil
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INTEGRATION = ROOT / "integration_tests"

#: what a module's source shows it uses -> the mark it must carry
USES = {
    "java": re.compile(r"\bjava_clients\b|\bjava_world\b|\bJavaClients\b"),
    "cpp": re.compile(r"\brun_driver\b|\bstart_driver\b|\bfrom rocketmq\.client import\b|\bcpp_produce\b"),
    "go": re.compile(r"\bgo_binary\b|rmq-go"),
    "node": re.compile(r"\bali_ons\b"),
    "grpc5": re.compile(r"\brun_py5\b|\bstart_py5\b|\bpy5_python\b"),
    "browser": re.compile(r"\bbrowser_page\b|\bplaywright\b"),
    "container": re.compile(r"\bpodman\b|\bdocker_api\b"),
    "parity-record": re.compile(r"^from rocketmq_emulator\.testing\.parity\.real import", re.M),  # (module level)
    "spark": re.compile(r"^\s*(from rocketmq_emulator\.spark_tools|import pyspark|from pyspark)", re.M),
}


def needs() -> dict[str, tuple[str, ...]]:
    tree = ast.parse((INTEGRATION / "conftest.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "NEEDS":
            return ast.literal_eval(node.value)  # type: ignore[arg-type]  # (NEEDS always has a value)
    raise AssertionError("integration_tests/conftest.py has no NEEDS table")


def registered_marks() -> set[str]:
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    return {m.split(":")[0].strip() for m in ini["markers"]}


def test_every_integration_module_says_what_it_needs():
    table = needs()
    modules = {p.relative_to(INTEGRATION).as_posix() for p in INTEGRATION.rglob("test_*.py")}
    assert sorted(modules - set(table)) == [], "integration modules missing from NEEDS"
    assert sorted(set(table) - modules) == [], "NEEDS lists modules that do not exist"
    unknown = {m for marks in table.values() for m in marks} - registered_marks()
    assert not unknown, f"marks not registered in pyproject.toml: {unknown}"
    for module, marks in table.items():
        source = (INTEGRATION / module).read_text()
        missing = [mark for mark, pattern in USES.items() if pattern.search(source) and mark not in marks]
        assert not missing, f"{module} uses what {missing} mark but NEEDS does not say so"


def test_the_unit_tier_starts_no_process():
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.parent == ROOT / "tests" and path.name in ("conftest.py", "test_suite_tiers.py"):
            continue  # the guard that refuses processes, and this check's own patterns
        text = path.read_text()
        if re.search(r"^\s*(import subprocess|from subprocess import)|create_subprocess_|os\.fork\(|os\.system\(",
                     text, re.M):
            offenders.append(path.relative_to(ROOT).as_posix())
    assert not offenders, f"unit-tier modules that start processes (move them to integration_tests/): {offenders}"


def test_ci_runs_the_readmes_second_set_up_command_in_parallel():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Set-up", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2, commands  # one installs and starts the broker, one installs and runs the suite
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("python3 -m venv")]
    assert ci == [commands[1]]
    assert " -n " in commands[1]  # the whole suite in parallel workers


def test_the_native_lane_is_built_wherever_a_c_compiler_is():
    """The native lane is optional (README "Performance"), but not silently missing: where a C compiler is, the
    install built it and it runs unless ROCKETMQ_EMULATOR_NATIVE=0 turns it off; where none is, the Python path
    runs and says why."""
    from rocketmq_emulator import native

    if os.environ.get("ROCKETMQ_EMULATOR_NATIVE", "1") == "0":
        assert native.lane is None and native.PATH == "python" and "ROCKETMQ_EMULATOR_NATIVE=0" in native.WHY
    elif shutil.which("cc") or shutil.which("gcc"):
        assert native.lane is not None, f"a C compiler is here but the lane did not load: {native.WHY}"
        assert native.PATH == "native"
    else:
        assert native.lane is None and "not built" in native.WHY
