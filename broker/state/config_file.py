"""RocketMQ's config-file routine (reference §8.8): write `<file>.tmp`, keep the old content as
`<file>.bak`, replace `<file>`; on load, fall back to `.bak` when the file is missing, empty or broken."""

from __future__ import annotations

import logging
import os
import sqlite3
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


class ConfigFileError(Exception):
    """A damaged config file with no usable backup: starting without its data would lose it silently."""


def load_config_file(path: Path, parse: Callable[[bytes], T]) -> T | None:
    """Parse `path`, or its `.bak` if the file is missing, empty or unparsable; None when neither exists (a new
    store). ConfigFileError when a damaged file has no usable backup (one line naming both files)."""
    damaged: str | None = None
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
            damaged = damaged or f"{candidate} is damaged ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
    if damaged is not None:
        raise ConfigFileError(f"{damaged} and {path.name}.bak is missing or damaged too; starting without it "
                              f"would lose its data: restore it, or remove both files to start without them")
    return None


def open_database(path: Path, fsync: bool) -> sqlite3.Connection:
    """A broker's SQLite file (the offset journal, POP checkpoints) opened in WAL mode and checked
    (`PRAGMA quick_check`); ConfigFileError naming the file when it is damaged or not a database."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
        problems = [row[0] for row in db.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise sqlite3.DatabaseError("; ".join(problems[:3]))
    except sqlite3.DatabaseError as exc:
        db.close()
        raise ConfigFileError(f"{path}: damaged ({exc}); restore it from a backup, or remove it to start without "
                              f"its data") from None
    return db
