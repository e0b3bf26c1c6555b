"""The type checker: mypy (pinned in the `test` extra, configured in pyproject.toml's [tool.mypy]) finds no error
in the project's packages, strict on `protocol` and `store`, standard elsewhere; and every `# type: ignore` names
its error code and says why on the same line.

The packages import as `rocketmq_emulator.<folder>` through [tool.setuptools.package-dir]; mypy cannot follow the
editable install's import hook, so `link_tree()` links each top-level folder of that mapping under
.mypy_cache/src/rocketmq_emulator/ (the tree [tool.mypy] checks; a new package folder is checked as soon as it is
in the mapping). `python integration_tests/test_types.py` runs the same check by hand and prints mypy's report.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "rocketmq_emulator"


def package_folders() -> dict[str, Path]:
    """Top-level package name -> its folder, from [tool.setuptools.package-dir] (sub-packages come along)."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {name.split(".")[1]: ROOT / folder for name, folder in mapping.items() if name.count(".") == 1}


def link_tree() -> Path:
    """.mypy_cache/src/rocketmq_emulator/<name> -> <folder> for each package; stale links removed. Returns src."""
    src = ROOT / ".mypy_cache" / "src"
    tree = src / NAMESPACE
    tree.mkdir(parents=True, exist_ok=True)
    wanted = package_folders()
    for entry in tree.iterdir():
        stale = entry.name not in wanted or entry.resolve() != wanted[entry.name].resolve()
        if entry.is_symlink() and stale:
            entry.unlink()
    for name, folder in wanted.items():
        if not (tree / name).exists():
            try:
                os.symlink(folder, tree / name, target_is_directory=True)
            except FileExistsError:  # another run made it at the same moment
                pass
    return src


def run_mypy() -> tuple[int, str]:
    """mypy's exit code and report, the linked paths shown as the repository's own (broker/x.py, not
    .mypy_cache/src/rocketmq_emulator/broker/x.py)."""
    src = link_tree()
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = result.stdout + result.stderr
    for name, folder in package_folders().items():
        report = report.replace(f"{(src / NAMESPACE / name).relative_to(ROOT)}/", f"{folder.relative_to(ROOT)}/")
    return result.returncode, report


def test_mypy_finds_no_error():
    returncode, report = run_mypy()
    assert returncode == 0, "mypy (pyproject.toml [tool.mypy]) reports:\n" + report
    assert "Success: no issues found" in report, report


IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)$")


def test_every_type_ignore_names_its_code_and_reason():
    bad = []
    for folder in package_folders().values():
        for path in sorted(folder.rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                match = IGNORE.search(line)
                if match is None:
                    continue
                rest = match["rest"].strip()
                if not match["codes"] or not rest.startswith("#") or len(rest.lstrip("#").strip()) < 8:
                    bad.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not bad, "each `# type: ignore[code]` needs `  # why` after it:\n" + "\n".join(bad)


if __name__ == "__main__":
    code, text = run_mypy()
    sys.stdout.write(text)
    sys.exit(code)
