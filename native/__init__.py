"""The native lane: C twins of the send and pull paths' hottest steps (`_lane.c`) and the read lane that takes a
read's plain sends whole and reads its pulls' headers (`read_sends.c`), optional.

`lane` is the compiled module, or None when the Python path runs: the extension was not built (no C compiler
at install time: `pip install` then installs without it) or `ROCKETMQ_EMULATOR_NATIVE=0` is set. Every caller
keeps its Python twin, the reference implementation, and picks the twin once at import:

    scan = lane.scan_properties if lane is not None else _scan_properties

`PATH` names the path for the broker's start-up line ("native" or "python") and `WHY` says why the Python
path runs. This package imports nothing of the project, so every layer may use it.
"""

from __future__ import annotations

import os
from types import ModuleType


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get("ROCKETMQ_EMULATOR_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None, "ROCKETMQ_EMULATOR_NATIVE=0"
    try:
        from . import _lane
    except ImportError:
        return None, "the extension is not built: no C compiler when the package was installed"
    return _lane, ""


lane, WHY = _load()
PATH = "native" if lane is not None else "python"
