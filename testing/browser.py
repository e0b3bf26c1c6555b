"""A real browser for the dashboard's tests and screenshots: Debian's `chromium` driven by Playwright for Python
through `executable_path` (Playwright downloads no browser). The browser resolves no names at all
(`--host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"`) and is only pointed at 127.0.0.1 pages.

`chromium_path()` installs the apt package when it is missing (CI machines are root, as the project's are)."""

from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import contextmanager
from typing import Any, Iterator

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--no-sandbox", "--disable-gpu",
        "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-dev-shm-usage"]


def chromium_path() -> str:
    if os.path.exists(CHROMIUM):
        return CHROMIUM
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError("chromium is not installed and cannot be installed here (needs root and apt-get): "
                           "apt-get install chromium")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for args in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {done.stderr[-2000:]}")
    return CHROMIUM


@contextmanager
def browser_page(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A Playwright page of a fresh headless chromium (sync API: use it from plain test functions)."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            yield page
        finally:
            browser.close()
