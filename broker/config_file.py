"""RocketMQ's config-file routine (reference §8.8): write `<file>.tmp`, keep the old content as
`<file>.bak`, replace `<file>`; on load, fall back to `.bak` when the file is missing, empty or broken."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable, TypeVar

log = logging.getLogger("rocketmq_emulator.config_file")
T = TypeVar("T")


def write_config_file(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(content)
        f.flush()
        os.fsync(f.fileno())
    if path.exists():
        bak = path.with_name(path.name + ".bak")
        bak_tmp = path.with_name(path.name + ".bak.tmp")
        with open(path, "rb") as src, open(bak_tmp, "wb") as dst:
            dst.write(src.read())
            dst.flush()
            os.fsync(dst.fileno())
        os.replace(bak_tmp, bak)
    os.replace(tmp, path)  # atomic: a reader sees the old or the new file, never a torn one
    try:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def write_config_files(jobs: list[tuple[Path, bytes]]) -> None:
    for path, content in jobs:
        write_config_file(path, content)


def load_config_file(path: Path, parse: Callable[[bytes], T]) -> T | None:
    """Parse `path`, or its `.bak` if the file is missing, empty or unparsable; None if neither works."""
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            data = candidate.read_bytes()
        except FileNotFoundError:
            continue
        if not data.strip():
            continue
        try:
            return parse(data)
        except Exception as exc:  # noqa: BLE001 - a corrupt file falls back to the backup
            log.warning("%s is unreadable (%s); trying the backup", candidate, exc)
    return None
