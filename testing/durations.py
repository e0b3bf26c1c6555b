"""Refresh integration_tests/durations.json, the estimates the suite's scheduler (the root conftest.py) uses to
send the longest tests out first: each test's setup + call + teardown seconds, from a pytest run's
`--durations=N` report, for tests of at least 4 s.

    .venv/bin/python -m pytest -n 4 --durations=200 | tee /tmp/run.txt
    .venv/bin/python -m rocketmq_emulator.testing.durations /tmp/run.txt > integration_tests/durations.json
"""

from __future__ import annotations

import json
import re
import sys

_LINE = re.compile(r"([\d.]+)s (?:setup|call|teardown)\s+(\S+)")


def estimates(report: str, floor: float = 4.0) -> dict[str, int]:
    seconds: dict[str, float] = {}
    for line in report.splitlines():
        m = _LINE.match(line)
        if m:
            seconds[m.group(2)] = seconds.get(m.group(2), 0.0) + float(m.group(1))
    return {k: round(v) for k, v in sorted(seconds.items(), key=lambda kv: -kv[1]) if v >= floor}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m rocketmq_emulator.testing.durations PYTEST_OUTPUT", file=sys.stderr)
        return 2
    with open(argv[0], errors="replace") as f:
        print(json.dumps(estimates(f.read()), indent=0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
