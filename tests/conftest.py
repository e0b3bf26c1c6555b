"""The unit tier: `pytest tests` starts no process (no subprocess, JVM, container or browser) and runs in under
a minute; what needs a process lives in integration_tests/ (README "Testing"). This guard makes a unit test that
starts one fail with that message instead of slowing the tier down unnoticed."""

from __future__ import annotations

import subprocess

import pytest


@pytest.fixture(autouse=True)
def _the_unit_tier_starts_no_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: subprocess.Popen, args: object, *rest: object, **kw: object) -> None:
        raise AssertionError(f"the unit tier (tests/) starts no process, and this test started {args!r}: "
                             f"move it to integration_tests/")
    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
