"""Fixtures shared by tests/ and integration_tests/."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

#: integration_tests/test_pytest_plugin.py runs test projects with pytester
pytest_plugins = ["pytester"]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`--dist loadgroup` (pyproject's addopts): the tests of a module with a costly shared set-up, or whose tests
    each fill the cores (integration_tests/conftest.py SHARED_SETUP), go to one worker together, one after the
    other; every other test is scheduled on its own; and the units go out longest first, as
    integration_tests/durations.json estimates them (a test it does not name counts half a second), so that no long
    test starts last while the other workers sit idle. (pytest-xdist's own loadgroup reads `xdist_group` marks
    through a node id suffix that pytest 9 no longer lets it set, so it would spread those modules and repeat their
    set-up.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    import json

    from xdist.scheduler import LoadScopeScheduling

    from integration_tests.conftest import worker_group
    durations: dict[str, float] = json.loads((Path(__file__).parent / "integration_tests" / "durations.json")
                                             .read_text())

    class SharedSetupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            group = worker_group(nodeid)
            return nodeid if group is None else f"group:{group}"

        def _assign_work_unit(self, node: object) -> None:
            if not getattr(self, "_ordered", False):  # the queue is whole: the first unit is about to go
                self._ordered = True
                cost = {scope: sum(durations.get(nodeid, 0.5) for nodeid in unit)
                        for scope, unit in self.workqueue.items()}
                for scope in sorted(cost, key=cost.__getitem__, reverse=True):
                    self.workqueue.move_to_end(scope)
            super()._assign_work_unit(node)  # type: ignore[arg-type]  # node: xdist's WorkerController

    return SharedSetupScheduling(config, log)


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
