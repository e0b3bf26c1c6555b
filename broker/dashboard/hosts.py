"""The dashboard's Host check (README "Dashboard"), made before anything else: pages, static files, the JSON API
and the actions alike answer only a request whose Host header names this dashboard.

A page from another name that resolves to 127.0.0.1 (DNS rebinding) is, to the browser, the same origin as the
dashboard, so the Origin check of the actions cannot tell it; its Host header can, since it carries the
attacker's name. Allowed, with any port (a published port may differ from the bound one, `-p 18080:8080`; the
name is what a rebinding changes): an IP address (a rebinding needs a name), `localhost`, `*.localhost` and
`localhost.localdomain`, the name `--host` binds to and the advertised host, and the names the user configures
(`--dashboard-allowed-hosts`, `name` for any port or `name:port` for that port only). Anything else, or no Host
at all, is answered 421 Misdirected Request with one line, and logged once per host at WARNING.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from typing import Awaitable, Callable, Iterable

from aiohttp import web

log = logging.getLogger("rocketmq_emulator.dashboard")

#: names that are this machine whatever DNS says (RFC 6761: browsers resolve `*.localhost` to loopback themselves)
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})
#: distinct refused hosts logged at WARNING (the rest at DEBUG): a flood of made-up names cannot fill the log
MAX_LOGGED = 64
_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_.])?")


def split_host(text: str) -> tuple[str, int | None] | None:
    """A Host header (or a configured entry) as (name, port or None): the name in lower case without a trailing
    dot, an IPv6 address in brackets; None when it is not `name[:port]`."""
    text = text.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        name, rest = text[:end + 1], text[end + 1:]
        if end < 0 or not _is_ip(name):
            return None
    else:
        name, colon, port = text.partition(":")
        rest = colon + port
        if not _NAME.fullmatch(name):
            return None
        name = name.rstrip(".")
    if not rest:
        return name, None
    port = rest[1:]
    if not rest.startswith(":") or not port.isascii() or not port.isdigit() or not 0 < int(port) <= 65535:
        return None
    return name, int(port)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") else name)
    except ValueError:
        return False
    return True


class HostCheck:
    """Which Host headers this dashboard answers (`allows`); `refusal` is the one line a refused request gets."""

    def __init__(self, bound: str, advertised: str | None, configured: Iterable[str]) -> None:
        self.names: set[str] = set()  # any port
        self.name_ports: set[tuple[str, int]] = set()  # configured as name:port
        for entry in (bound, advertised or "", *configured):
            parsed = split_host(f"[{entry}]" if entry.count(":") > 1 and not entry.startswith("[") else entry)
            if parsed is None:
                continue
            name, port = parsed
            if port is None or entry in (bound, advertised):
                self.names.add(name)
            else:
                self.name_ports.add((name, port))
        self._logged: set[str] = set()

    def allows(self, header: str | None) -> bool:
        parsed = split_host(header) if header is not None else None
        if parsed is None:
            return False
        name, port = parsed
        return (_is_ip(name) or name in LOCAL_NAMES or name.endswith(".localhost") or name in self.names
                or (name, port) in self.name_ports)

    def refusal(self, header: str | None) -> str:
        """The answer's line; the first refusal of each host (up to MAX_LOGGED of them) is logged at WARNING."""
        shown = "no Host header" if header is None else f"Host {header[:100]!r}"
        line = (f"{shown} is not a name of this dashboard (a DNS rebinding guard): use its address or localhost, or "
                f"allow the name with --dashboard-allowed-hosts")
        key = "" if header is None else header[:100].lower()
        if key not in self._logged and len(self._logged) < MAX_LOGGED:
            self._logged.add(key)
            log.warning("dashboard: answered 421, %s (logged once per host)", line)
        else:
            log.debug("dashboard: answered 421 to %s", shown)
        return line


def host_middleware(check: HostCheck) -> Callable[..., Awaitable[web.StreamResponse]]:
    """The first middleware: a request for another Host gets 421 before any handler, static file or body read."""
    @web.middleware
    async def host(request: web.Request,
                   handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        headers = request.headers.getall("Host", [])
        header = headers[0] if len(headers) == 1 else None
        if header is not None and check.allows(header):
            return await handler(request)
        line = check.refusal(header if len(headers) < 2 else ", ".join(headers))
        if request.path.startswith("/api/"):
            return web.json_response({"error": line}, status=421)
        return web.Response(status=421, text=line + "\n")
    return host
