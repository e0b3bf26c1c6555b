"""White remote addresses as 4.9.8 matches them (acl/plain/RemoteAddressStrategyFactory.java): blank matches
nothing, `*` (or `*.*.*.*`, `*:*:*:*:*:*:*:*`) everyone, `192.168.0.{1,2}` and `a,b` a set, `192.168.*.*` or
`192.168.1.1-20` a range of one part, anything else one address. IPv4 ranges and sets are 4.9.8's; IPv6
addresses are compared fully expanded."""

from __future__ import annotations

import ipaddress
from typing import Callable

from .permission import AclException

Match = Callable[[str], bool]


def _never(addr: str) -> bool:
    return False


def _always(addr: str) -> bool:
    return True


def _is_v4(addr: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(addr), ipaddress.IPv4Address)
    except ValueError:
        return False


def _is_v6(addr: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(addr), ipaddress.IPv6Address)
    except ValueError:
        return False


def _expand_v6(addr: str) -> str:
    return ipaddress.IPv6Address(addr).exploded.upper()


def _bad(pattern: str) -> AclException:
    return AclException(f"Netaddress examine Exception netaddress is {pattern}")


def address_matcher(pattern: str | None) -> Match:
    """The matcher of one white address pattern (an account's `whiteRemoteAddress` or one global entry); a
    pattern 4.9.8 refuses raises AclException."""
    text = "" if pattern is None else str(pattern)
    if not text.strip():
        return _never
    if text in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return _always
    if text.endswith("}"):
        head, brace, tail = text.rpartition("{")
        if not brace or (":" not in text and len([p for p in text.split(".") if p]) < 4):
            raise AclException(f"MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress {text}")
        return _one_of([head + part for part in tail[:-1].split(",") if part])
    if "," in text:
        return _one_of([part for part in text.split(",") if part])
    if "*" in text or "-" in text:
        return _range(text)
    if not (_is_v4(text) or _is_v6(text)):
        raise _bad(text)
    wanted = _expand_v6(text) if _is_v6(text) else text
    return lambda addr: (_expand_v6(addr) if _is_v6(addr) else addr) == wanted


def _one_of(addresses: list[str]) -> Match:
    members = set()
    for addr in addresses:
        if _is_v4(addr):
            members.add(addr)
        elif _is_v6(addr):
            members.add(_expand_v6(addr))
        else:
            raise _bad(addr)
    return lambda addr: (_expand_v6(addr) if _is_v6(addr) else addr) in members


def _range(text: str) -> Match:
    """One part of an IPv4 address given as `*` or `start-end`, the parts before it fixed (`10.1.*.*`,
    `10.1.2.1-20`); IPv6 the same by 16-bit groups."""
    v6 = ":" in text
    parts = [p for p in text.split(":" if v6 else ".") if p]
    base, top = (16, 0xFFFF) if v6 else (10, 255)
    for index in range(1, len(parts)):
        value = parts[index].strip()
        if value == "*":
            start, end = 0, top
        elif "-" in value:
            low, _, high = value.partition("-")
            try:
                start, end = int(low, base), int(high, base)
            except ValueError:
                raise _bad(text) from None
            if value.startswith("-") or not (0 <= start <= end <= top):
                raise AclException(f"RangeRemoteAddressStrategy netaddress examine scope Exception start is {start} "
                                   f", end is {end}")
        else:
            continue
        head = parts[:index]
        try:
            if any(not 0 <= int(p, base) <= top for p in head):
                raise _bad(text)
        except ValueError:
            raise _bad(text) from None
        return _range_matcher(head, index, start, end, v6)
    raise _bad(text)


def _range_matcher(head: list[str], index: int, start: int, end: int, v6: bool) -> Match:
    if v6:
        fixed = [int(p, 16) for p in head]

        def match6(addr: str) -> bool:
            if not _is_v6(addr):
                return False
            groups = [int(g, 16) for g in _expand_v6(addr).split(":")]
            return groups[:index] == fixed and start <= groups[index] <= end
        return match6
    prefix = [p.strip() for p in head]

    def match4(addr: str) -> bool:
        if not _is_v4(addr):
            return False
        octets = addr.split(".")
        return octets[:index] == prefix and start <= int(octets[index]) <= end
    return match4
