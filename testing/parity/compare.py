"""Two normalised recordings of one scenario -> their differences, readable: step, request, field, real value,
emulator value. And the deliberate differences of the default mode (tests/parity/deliberate.toml): each one
names a scenario, a step and a field pattern, with its reason and the switch that removes it.

One difference is accepted everywhere: where the real broker leaves a request unanswered (an unknown request
code at the name server, ...), the emulator answers (README, "Parity with Apache RocketMQ").
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MISSING = "<absent>"


@dataclass(frozen=True)
class Difference:
    scenario: str
    step: str
    request: str
    path: str
    real: Any
    emulator: Any

    def __str__(self) -> str:
        return (f"{self.scenario} / {self.step} [{self.request}]\n"
                f"    {self.path}: real {_show(self.real)}, emulator {_show(self.emulator)}")


def _show(value: Any) -> str:
    if value is _MISSING or value == _MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 400 else text[:400] + "..."


def request_summary(record: dict[str, Any]) -> str:
    req = record.get("request")
    if req is None:
        push = record.get("push") or {}
        return f"push {push.get('code', '(none)')}"
    header = req.get("header", {})
    interesting = ", ".join(f"{k}={v}" for k, v in list(header.items())[:6])
    return f"{req['code']} to {req['to']}" + (f" ({interesting})" if interesting else "")


def diff_records(scenario: str, real: list[dict[str, Any]], emulator: list[dict[str, Any]]) -> list[Difference]:
    out: list[Difference] = []
    by_step = {r["step"]: r for r in emulator}
    for rec in real:
        other = by_step.get(rec["step"])
        summary = request_summary(rec)
        if other is None:
            out.append(Difference(scenario, rec["step"], summary, "(step)", "recorded", _MISSING))
            continue
        if rec.get("answer", {}).get("no_answer") and not other.get("answer", {}).get("no_answer"):
            continue  # the real broker did not answer; the emulator does (the one kept exception)
        for key in ("answer", "push"):
            if key in rec or key in other:
                _diff(rec.get(key, _MISSING), other.get(key, _MISSING), key, scenario, rec["step"], summary, out)
    for rec in emulator:
        if not any(r["step"] == rec["step"] for r in real):
            out.append(Difference(scenario, rec["step"], request_summary(rec), "(step)", _MISSING, "recorded"))
    return out


def _diff(a: Any, b: Any, path: str, scenario: str, step: str, summary: str, out: list[Difference]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            _diff(a.get(k, _MISSING), b.get(k, _MISSING), f"{path}.{k}", scenario, step, summary, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}.{i}", scenario, step, summary, out)
    elif a != b:
        out.append(Difference(scenario, step, summary, path, a, b))


@dataclass(frozen=True)
class Deliberate:
    scenario: str
    step: str
    path: str
    reason: str
    switch: str
    #: open.toml entries: the mode the difference shows in ("both", "4.9" or "default")
    mode: str = "both"

    def covers(self, d: Difference) -> bool:
        return (fnmatch.fnmatchcase(d.scenario, self.scenario) and fnmatch.fnmatchcase(d.step, self.step)
                and fnmatch.fnmatchcase(d.path, self.path))


def load_deliberate(path: Path) -> list[Deliberate]:
    if not path.exists():
        return []
    data = tomllib.loads(path.read_text())
    return [Deliberate(d["scenario"], d.get("step", "*"), d["path"], d["reason"], d.get("switch", "--compat 4.9"),
                       d.get("mode", "both")) for d in data.get("difference", [])]


def split_deliberate(diffs: list[Difference], deliberate: list[Deliberate]) -> tuple[list[Difference], set[int]]:
    """(differences no deliberate entry covers, indexes of the entries that covered something)."""
    unexplained, used = [], set()
    for d in diffs:
        hits = [i for i, e in enumerate(deliberate) if e.covers(d)]
        if hits:
            used.update(hits)
        else:
            unexplained.append(d)
    return unexplained, used


def report(diffs: list[Difference], limit: int = 40) -> str:
    lines = [str(d) for d in diffs[:limit]]
    if len(diffs) > limit:
        lines.append(f"... and {len(diffs) - limit} more")
    return "\n".join(lines)
