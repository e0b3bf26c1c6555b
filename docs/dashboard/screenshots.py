"""Regenerate the dashboard pictures the docs show (docs/dashboard/*.png). They come from the browser tests
(integration_tests/test_dashboard.py): each test writes the page it has just checked when
ROCKETMQ_EMULATOR_SCREENSHOTS names a folder, so a picture shows what a test asserted (real clients producing and
consuming, Debian's chromium through testing/browser.py: no DNS, 127.0.0.1 only).

    .venv/bin/python docs/dashboard/screenshots.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def main() -> int:
    env = {**os.environ, "ROCKETMQ_EMULATOR_SCREENSHOTS": str(HERE)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "integration_tests/test_dashboard.py"], cwd=ROOT, env=env)
    if done.returncode == 0:
        print("\n".join(f"wrote {p}" for p in sorted(HERE.glob("*.png"))))
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
