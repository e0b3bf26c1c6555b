"""The installed version of rocketmq-emulator (`--version`, and `serve`'s first log line)."""

from __future__ import annotations

import os
import sys


def package_version() -> str:
    """The installed version. Read from the dist-info folder on sys.path when there is one: importing
    importlib.metadata alone costs `serve` ~30 ms of start-up."""
    for entry in sys.path:
        try:
            names = [e.name for e in os.scandir(entry or ".") if e.name.startswith("rocketmq_emulator-")
                     and e.name.endswith(".dist-info")]
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(entry or ".", name, "METADATA"), encoding="utf-8") as f:
                    for line in f:
                        if line.startswith("Version:"):
                            return line.partition(":")[2].strip()
                        if not line.strip():
                            break
            except OSError:
                pass
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("rocketmq-emulator")
    except PackageNotFoundError:
        return "0+unknown"
