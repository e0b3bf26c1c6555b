"""The value parsers of the emulator's settings (broker/settings.py holds the keys): each turns a text or a
value into what a setting holds, or raises `Problem` with the reason, which `parse_value` words as one line
naming the key."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, Callable

from rocketmq_emulator.protocol.topics import parse_delay_levels

from .config import parse_group_list, parse_host_list, parse_topic_list
from .config_keys import value_problem


class Problem(Exception):
    pass


Parse = Callable[[Any], Any]


def number(java: str, low: int, high: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, str):
            problem = value_problem(java, value)  # Java's own rule for the type: 'abc' is not an int
            if problem is not None:
                raise Problem(problem)
            number = int(value.strip())
        elif isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            raise Problem(f"{value!r} is not a{'n' if java == 'int' else ''} {java}")
        if not low <= number <= high:
            raise Problem(f"{number} is out of range ({low} to {high})")
        return number
    return parse


def double_in(low: float, high: float) -> Callable[[Any], float]:
    """A positive number (`double`) from `low` to `high`."""
    def parse(value: Any) -> float:
        number = double(value)
        if not low <= number <= high:
            raise Problem(f"{number:g} is out of range ({low:g} to {high:g})")
        return number
    return parse


def double(value: Any) -> float:
    if isinstance(value, str):
        problem = value_problem("double", value)
        if problem is not None:
            raise Problem(problem)
        value = float(value)
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Problem(f"{value!r} is not a number")
    if not 0 < value < float("inf"):
        raise Problem(f"{value} is not a positive number")
    return float(value)


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value_problem("bool", value) is None:
        return value.strip().lower() == "true"
    raise Problem(f"{value!r} is not true or false")


def delete_when(value: Any) -> str:
    """`deleteWhen`: the hours (00-23) when expired files are deleted, `;`-separated ("04", "01;13")."""
    text = string(value)
    hours = text.split(";")
    if not text or not all(h.strip().isdigit() and 0 <= int(h) <= 23 for h in hours):
        raise Problem(f"{text!r} is not hours of the day (00-23) separated by ';', e.g. 04 or 01;13")
    return text


def string(value: Any) -> str:
    if not isinstance(value, (str, Path)):
        raise Problem(f"{value!r} is not text")
    return str(value).strip()


def optional(parse: Parse) -> Parse:
    """None (or empty text) leaves the setting unset."""
    return lambda value: None if value is None or value == "" else parse(value)


def enum_of(cls: type[enum.Enum]) -> Parse:
    by_text = {m.value.lower(): m for m in cls}

    def parse(value: Any) -> enum.Enum:
        if isinstance(value, cls):
            return value
        member = by_text.get(str(value).strip().lower()) if isinstance(value, str) else None
        if member is None:
            raise Problem(f"{value!r} is not one of {', '.join(m.value for m in cls)}")
        return member
    return parse


def topics(value: Any) -> tuple[tuple[str, int], ...]:
    """`orders:8,payments` or, from code, [("orders", 8), ...]: checked by the one topic-list rule."""
    text = value if isinstance(value, str) else ",".join(f"{name}:{queues}" for name, queues in value)
    try:
        return tuple(parse_topic_list(text))
    except ValueError as exc:
        raise Problem(str(exc)) from None


def groups(value: Any) -> tuple[str, ...]:
    try:
        return tuple(parse_group_list(value if isinstance(value, str) else ",".join(value)))
    except ValueError as exc:
        raise Problem(str(exc)) from None


def codes(value: Any) -> frozenset[int] | None:
    if value is None or isinstance(value, frozenset):
        return value
    from rocketmq_emulator.protocol.trace import parse_codes  # the trace's code names: only when given
    try:
        return parse_codes(value) if isinstance(value, str) else frozenset(int(c) for c in value)
    except (ValueError, TypeError) as exc:
        raise Problem(str(exc)) from None


def networks(value: Any) -> tuple[str, ...] | None:
    """`*` (everyone) or addresses and networks, comma-separated: 127.0.0.1,10.0.0.0/8,::1."""
    if value is None or isinstance(value, tuple):
        return value
    if not isinstance(value, str):
        raise Problem(f"{value!r} is not text")
    if value.strip() == "*":
        return None
    import ipaddress  # only when the setting is given
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise Problem("no address given (use * for everyone)")
    try:
        return tuple(str(ipaddress.ip_network(v, strict=False)) for v in items)
    except ValueError as exc:
        raise Problem(f"{exc} (addresses or networks, comma-separated, or *)") from None


def hosts(value: Any) -> tuple[str, ...]:
    try:
        return tuple(parse_host_list(value if isinstance(value, str) else ",".join(value)))
    except TypeError:
        raise Problem(f"{value!r} is not host names") from None
    except ValueError as exc:
        raise Problem(str(exc)) from None


def addresses(value: Any) -> tuple[str, ...]:
    """4.9.8's namesrvAddr: `host:port;host:port` (from code: a list); each port 1-65535."""
    if isinstance(value, (tuple, list)):
        value = ";".join(value)
    if not isinstance(value, str):
        raise Problem(f"{value!r} is not text")
    out = []
    for item in (v.strip() for v in value.split(";")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not (port.isascii() and port.isdigit() and 0 < int(port) <= 65535):
            raise Problem(f"{item!r} is not HOST:PORT (name servers: HOST:PORT;HOST:PORT)")
        out.append(item)
    if not out:
        raise Problem("no address given (HOST:PORT;HOST:PORT)")
    return tuple(out)


def consume_queue_size(value: Any) -> int:
    """Bytes, rounded up to whole 20-byte units as 4.9.8's getMappedFileSizeConsumeQueue does."""
    size = number("int", 20, INT32)(value)
    return -(-size // 20) * 20


def delay_levels(value: Any) -> str:
    text = " ".join(string(value).split())
    try:
        if not parse_delay_levels(text):
            raise ValueError("no level given")
    except ValueError as exc:
        raise Problem(str(exc)) from None
    return text


INT32 = 2**31 - 1
PORT = number("int", 0, 65535)
INT = number("int", -2**31, INT32)
