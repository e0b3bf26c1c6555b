"""The suite on the Python path: the unit tests of the send and pull paths and their tests through TCP run again with
ROCKETMQ_EMULATOR_NATIVE=0 (the reference implementation and the fallback where no C compiler was at install
time), in a pytest of their own, while the rest of the suite runs on the native lane. tests/test_native_lane.py
holds the two paths to byte-equal files and answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the unit tests of what the lane's steps touch (the store, the broker's handlers and cores, frames, transport,
#: messages, headers; the unit tier's others, such as the layering rules, the client's and the JSON fuzzers, do
#: not depend on the path), then the same through real sockets: sends, batches, refusals, pulls, malformed input
UNIT = ("tests/store", "tests/broker", "tests/test_frame.py", "tests/test_transport.py", "tests/test_message.py",
        "tests/test_typed_send_header.py", "tests/test_suite_tiers.py")
#: unit tests under those folders that no path touches: the HA network side (its store side, tests/store, runs),
#: the registration with name servers, the cluster's settings
NOT_ON_THE_PATH = ("tests/broker/test_ha.py", "tests/broker/test_outer_api.py", "tests/broker/test_cluster_settings.py")
MODULES = ("test_broker_fuzz.py", "test_broker_protocol.py", "test_send_run.py", "test_send_refusals.py",
           "test_client_pull.py")


def test_the_suite_passes_on_the_python_path(tmp_path):
    env = {**os.environ, "ROCKETMQ_EMULATOR_NATIVE": "0"}
    env.pop("PYTEST_XDIST_WORKER", None)
    check = subprocess.run([sys.executable, "-c", "from rocketmq_emulator import native; print(native.PATH)"],
                           env=env, capture_output=True, text=True, check=True)
    assert check.stdout.strip() == "python"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                           *UNIT, *(f"integration_tests/{m}" for m in MODULES),
                           *(f"--ignore={m}" for m in NOT_ON_THE_PATH)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary
