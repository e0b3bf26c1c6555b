"""The store's format version, so that an emulator never reads a store written in a format it does not know.

`storeFormat.json` in the store's root holds `{"formatVersion": N}`: written when a store is created, read at every
start. A store without it (made before the file existed) is version 1, and gets the file. A store of a newer
version than `STORE_FORMAT_VERSION` is refused (StoreLoadError, one line naming both versions): an older emulator
would take the newer records for a torn tail. Raise the version with every change to what the files hold.
"""

from __future__ import annotations

import json
import os

from .mapped_file import StoreLoadError, fsync_dir

#: the format this code writes and reads (1: the commitlog, consume queue and index formats of RocketMQ 4.9)
STORE_FORMAT_VERSION = 1


def check_store_format(path: str, root: str) -> int:
    """The store's format version (written now when the file is missing); StoreLoadError when it is newer than
    this emulator's or the file is unreadable."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"formatVersion": STORE_FORMAT_VERSION}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(root)
        return STORE_FORMAT_VERSION
    try:
        version = json.loads(raw.decode("utf-8"))["formatVersion"]
        if type(version) is not int or version < 1:
            raise ValueError(version)
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise StoreLoadError(f"{path}: not a store format file ({type(exc).__name__}: {exc}); expected "
                             f'{{"formatVersion": {STORE_FORMAT_VERSION}}}') from None
    if version > STORE_FORMAT_VERSION:
        raise StoreLoadError(f"{root}: the store is format version {version}, this rocketmq-emulator reads version "
                             f"{STORE_FORMAT_VERSION} and older: use the release that wrote it (or newer)")
    return version
