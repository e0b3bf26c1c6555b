"""The pytest plugin from the outside: README's complete test file, run by pytest in a subprocess (pytester)
with only the plugin's fixtures: its own emulator (round trip, expire_now, restart(clean=False), drop and
pause), then `--rocketmq-namesrv` pointing at a separately started emulator, and `--rocketmq-keep-store`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

pytestmark = pytest.mark.timeout(600)


def readme_example() -> str:
    text = README.read_text()
    block = text.split("<!-- pytest-example:start -->", 1)[1].split("<!-- pytest-example:end -->", 1)[0]
    return block.split("```python\n", 1)[1].rsplit("```", 1)[0]


def project(pytester: pytest.Pytester, **files: str) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(**files)


def test_the_readme_test_file_passes_against_its_own_emulator(pytester):
    project(pytester, test_orders=readme_example())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=4)


def test_rocketmq_namesrv_runs_the_same_tests_against_another_broker(pytester, emulator):
    project(pytester, test_orders=readme_example())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", "--rocketmq-namesrv",
                                           emulator.namesrv_addr)
    # round trip and expiry run against the emulator started here; restart and pause need the plugin's own
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["*restart() needs the broker this plugin starts*",
                                 "*pause() needs the broker this plugin starts*"])
    assert emulator.broker.store.get_max_offset_in_queue  # the topics were made on this broker:
    assert any(t.startswith("t_test_round_trip") for t in emulator.broker.topic_config_manager.table)


def test_keep_store_keeps_the_store_of_a_failed_session_only(pytester):
    project(pytester, test_store="""
def test_passes(rocketmq_broker):
    print("STORE", rocketmq_broker.store_dir)
    assert rocketmq_broker.store_dir.is_dir()
""")
    passed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", "--rocketmq-keep-store")
    passed.assert_outcomes(passed=1)
    store = Path(re.search(r"STORE (\S+)", passed.stdout.str()).group(1))
    assert not store.exists()  # nothing failed: removed

    project(pytester, test_store="def test_fails(rocketmq_broker):\n    assert False\n")
    failed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rocketmq-keep-store")
    failed.assert_outcomes(failed=1)
    kept = Path(re.search(r"store kept at (\S+)", failed.stdout.str()).group(1))
    try:
        assert (kept / "config" / "consumerOffset.json").is_file() and (kept.parent / "emulator.log").is_file()
    finally:
        shutil.rmtree(kept.parent, ignore_errors=True)
