"""What every command of the command line shares (RocketMQ keeps this in its `srvutil` module): a parser whose
errors are one line (JSON with `--json`), checked argument types, and the exit statuses.

Every number and enum on the command line goes through one of these types, so a bad value ends the command
with one line on stderr and exit status 2, before anything is sent, never with a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, NoReturn

#: exit status of a usage error (argparse's), of a failed command, and of an interrupted one
EXIT_USAGE, EXIT_FAILURE = 2, 1


def wants_json(argv: list[str]) -> bool:
    return "--json" in argv


def report_error(message: str, code: str, *, as_json: bool) -> None:
    """One line on stderr: `error: ...`, or `{"error": ..., "code": ...}` for scripts that asked for JSON."""
    if as_json:
        sys.stderr.write(json.dumps({"error": message, "code": code}, ensure_ascii=False) + "\n")
    else:
        sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()


class OneLineParser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage dump); JSON when the command line has `--json`."""

    #: set by the program before parsing: the command line being parsed (for `--json`)
    argv: list[str] = []
    #: the innermost (sub)command parser that has parsed so far: argparse reports arguments no subcommand knows
    #: from the top parser, and the message then names that subcommand, not the program alone
    innermost: "OneLineParser | None" = None

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        OneLineParser.innermost = self  # a subcommand's parser runs inside its parent's, so the last one wins
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        parser = self
        if message.startswith("unrecognized arguments") and OneLineParser.innermost is not None:
            parser = OneLineParser.innermost
        report_error(f"{parser.prog}: {message} (see {parser.prog} -h)", "USAGE", as_json=wants_json(self.argv))
        sys.exit(EXIT_USAGE)


def int_range(low: int | None = None, high: int | None = None, *, what: str = "") -> Callable[[str], int]:
    """An argparse type: an integer in [low, high] (either bound may be open)."""
    def parse(text: str) -> int:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value} is out of range ({_bounds(low, high)}{what})")
        return value
    parse.__name__ = "integer"
    return parse


def float_range(low: float | None = None, high: float | None = None, *, what: str = "") -> Callable[[str], float]:
    """An argparse type: a finite number in [low, high]."""
    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{_number(value)} is out of range ({_bounds(low, high)}{what})")
        return value
    parse.__name__ = "number"
    return parse


def _number(value: float) -> str:
    """A number as a person writes it: whole numbers in full (315360000, not 3.1536e+08)."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e18 else f"{value:g}"


def _bounds(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"{_number(low)} to {_number(high)}"
    if low is not None:
        return f"at least {_number(low)}"
    return f"at most {_number(high)}"  # type: ignore[arg-type]  # (one of the two is set)


#: the highest TCP port number
MAX_PORT = 65535

#: a TCP port to listen on; 0 asks the system for a free one
port = int_range(0, MAX_PORT, what="; 0 picks a free port")


def address_problem(addr: str) -> str | None:
    """Why `addr` is not a `host:port` a client can connect to (port 1-65535), or None when it is."""
    host, sep, number = addr.strip().rpartition(":")
    if not sep or not host or not number.isdigit():
        return f"{addr!r} is not host:port"
    if not 1 <= int(number) <= MAX_PORT:
        return f"{addr!r}: port {int(number)} is out of range (1 to {MAX_PORT})"
    return None


def address(text: str) -> str:
    """An argparse type: one `host:port` to connect to."""
    problem = address_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text.strip()


def namesrv_list(text: str) -> str:
    """An argparse type: name server addresses, `host:port` separated by ';' (RocketMQ's namesrvAddr)."""
    addrs = [a for a in text.replace(",", ";").split(";") if a.strip()]
    if not addrs:
        raise argparse.ArgumentTypeError(f"{text!r}: give a name server as host:port")
    for addr in addrs:
        address(addr)
    return text


def choice(*names: str, case_insensitive: bool = True) -> Callable[[str], str]:
    """An argparse type for an enum given by name: returns the canonical spelling."""
    by_key = {(n.lower() if case_insensitive else n): n for n in names}

    def parse(text: str) -> str:
        key = text.strip().lower() if case_insensitive else text.strip()
        if key not in by_key:
            raise argparse.ArgumentTypeError(f"{text!r}: use one of {', '.join(names)}")
        return by_key[key]
    parse.__name__ = "choice"
    return parse


def boolean(text: str) -> bool:
    """mqadmin's true/false (also 1/0, yes/no)."""
    key = text.strip().lower()
    if key in ("true", "1", "yes"):
        return True
    if key in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r}: use true or false")
