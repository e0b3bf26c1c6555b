"""A full disk: appends fail with SERVICE_NOT_AVAILABLE (never a crash), acknowledged data stays readable, and
appends work again once space is freed. Uses a real 32 MiB tmpfs (the `tiny_fs` fixture) (needs root, which these machines and CI have)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_disk_full_is_an_error_status_not_a_crash(tiny_fs):
    ballast = tiny_fs / "ballast"
    ballast.write_bytes(b"\1" * (12 * 1024 * 1024))  # freed later to show recovery from a full disk
    out = subprocess.run([sys.executable, str(HERE / "disk_full_writer.py"), str(tiny_fs / "store"), str(ballast)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]  # a SIGBUS would show up here as -7
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["statuses"].get("SERVICE_NOT_AVAILABLE", 0) >= 1, report
    assert report["acked"] > 1000 and report["readable"], report
    assert report["after"] == "PUT_OK", report
    assert report["max_offset_after_restart"] == report["acked"] + 1, report
    # the 64 MiB segment was never reserved whole: files are sparse, blocks reserved in chunks as written
    assert (tiny_fs / "store" / "commitlog" / "00000000000000000000").stat().st_size == 64 * 1024 * 1024
