"""Scenario files: a scenario is a TOML file of steps, each a request (or a wait for a request the broker pushes),
with placeholders filled in at run time. The format is described in tests/parity/README.md.

Placeholders in header values, bodies and texts: `${name}` is a value saved by an earlier step (`save`), or
`now` (the wall clock in ms when the step runs), `broker` / `namesrv` (the addresses under test), `brokerPort`;
`${name+N}` / `${name-N}` add or subtract an integer. A string that is only one placeholder keeps the value's
type in a JSON body (`"${offset}"` becomes a number when the saved value is one).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, TypeVar

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)\s*(?:([+-])\s*(\d+))?\}")

#: the step keys a request step may have (anything else in a step is an error: a typo must not be ignored)
REQUEST_KEYS = frozenset({
    "name", "to", "conn", "code", "header", "body", "body_size", "body_json", "body_hex", "batch", "oneway", "language",
    "version", "serialize", "timeout", "save", "save_time", "until", "body_as", "flag", "background",
})
OTHER_KEYS = frozenset({"name", "expect_push", "sleep", "close", "reply", "answer_pushes", "await", "timeout"})


class _Step(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...


S = TypeVar("S", bound=_Step)


class CorpusError(ValueError):
    """A scenario file that cannot be run as written (named with the file and the step)."""


@dataclass(frozen=True)
class Step:
    index: int
    name: str
    spec: dict[str, Any]

    @property
    def kind(self) -> str:
        for kind in ("code", "expect_push", "sleep", "close", "answer_pushes", "await"):
            if kind in self.spec:
                return "request" if kind == "code" else kind
        raise CorpusError(f"step {self.index} ({self.name}) is neither a request, expect_push, answer_pushes, "
                          "await, sleep nor close")

    @property
    def records(self) -> bool:
        return self.kind in ("request", "expect_push")


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    description: str
    families: tuple[str, ...]
    settings: dict[str, str]
    steps: tuple[Step, ...]
    protocol: str = "remoting"
    extra: dict[str, Any] = field(default_factory=dict)

    def request_count(self) -> int:
        return sum(1 for s in self.steps if s.kind == "request")


def read_scenario_file(path: Path) -> dict[str, Any]:
    """A scenario file's TOML (every protocol's), or CorpusError naming the file."""
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise CorpusError(f"{path.name}: {exc}") from None


def read_steps(path: Path, specs: list[dict[str, Any]], allowed: Callable[[dict[str, Any]], frozenset[str]],
               make: Callable[[int, str, dict[str, Any]], S]) -> tuple[S, ...]:
    """The steps of a scenario file (every protocol's): each named (or "step N"), with no key `allowed(spec)`
    does not list, validated by `.kind`, and the names unique."""
    steps = []
    for i, spec in enumerate(specs, 1):
        name = spec.get("name") or f"step {i}"
        unknown = set(spec) - allowed(spec)
        if unknown:
            raise CorpusError(f"{path.name}: step {i} ({name}): unknown keys {sorted(unknown)}")
        step = make(i, name, spec)
        step.kind  # noqa: B018 - validates
        steps.append(step)
    names = [s.name for s in steps]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise CorpusError(f"{path.name}: step names must be unique, repeated: {sorted(dup)}")
    return tuple(steps)


def settings_text(values: dict[str, Any]) -> dict[str, str]:
    """A scenario's broker settings as broker.conf text (true/false for booleans)."""
    return {k: _text(v) for k, v in values.items()}


def load_scenario(path: Path) -> Scenario:
    data = read_scenario_file(path)
    steps = read_steps(path, data.pop("step", []), lambda spec: REQUEST_KEYS if "code" in spec else OTHER_KEYS,
                       Step)
    return Scenario(name=path.stem, path=path, description=data.pop("description", ""),
                    families=tuple(data.pop("families", ())), settings=settings_text(data.pop("settings", {})),
                    steps=steps, protocol=data.pop("protocol", "remoting"), extra=data)


def load_corpus(directory: Path, only: list[str] | None = None) -> list[Scenario]:
    scenarios = [load_scenario(p) for p in sorted(directory.glob("*.toml"))]
    if only:
        missing = set(only) - {s.name for s in scenarios}
        if missing:
            raise CorpusError(f"no such scenario: {', '.join(sorted(missing))}")
        scenarios = [s for s in scenarios if s.name in only]
    return scenarios


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def substitute(value: Any, names: dict[str, Any]) -> Any:
    """`value` with its placeholders filled from `names` (recursively through lists and tables)."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole is not None:
            return _resolve(whole, names)
        return _PLACEHOLDER.sub(lambda m: _text(_resolve(m, names)), value)
    if isinstance(value, list):
        return [substitute(v, names) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, names) for k, v in value.items()}
    return value


def _resolve(m: re.Match[str], names: dict[str, Any]) -> Any:
    name, sign, amount = m.group(1), m.group(2), m.group(3)
    if name not in names:
        raise CorpusError(f"placeholder ${{{name}}} has no value (saved names: {sorted(names)})")
    value = names[name]
    if sign is None:
        return value
    number = int(value) + (int(amount) if sign == "+" else -int(amount))
    return number if isinstance(value, int) else str(number)
