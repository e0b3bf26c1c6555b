"""testing/durations.py: the suite's scheduling estimates read from a pytest --durations report."""

from __future__ import annotations

import json

from rocketmq_emulator.testing.durations import estimates, main

REPORT = """============================ slowest 5 durations =============================
56.32s setup    integration_tests/test_a.py::test_x[p1]
3.00s call     integration_tests/test_a.py::test_x[p1]
2.50s call     integration_tests/test_b.py::test_y
2.00s setup    integration_tests/test_b.py::test_y
1.00s call     tests/test_c.py::test_z
"""


def test_setup_call_and_teardown_add_up_per_test_and_short_ones_are_left_out():
    assert estimates(REPORT) == {"integration_tests/test_a.py::test_x[p1]": 59,
                                 "integration_tests/test_b.py::test_y": 4}


def test_the_command_prints_json_and_refuses_a_missing_argument(tmp_path, capsys):
    report = tmp_path / "run.txt"
    report.write_text(REPORT)
    assert main([str(report)]) == 0
    assert json.loads(capsys.readouterr().out)["integration_tests/test_b.py::test_y"] == 4
    assert main([]) == 2
    assert "usage:" in capsys.readouterr().err
