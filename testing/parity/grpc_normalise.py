"""Normalisation of gRPC recordings: normalise.py's value rules (wall-clock times in ms, ports in "host:port" texts,
offset message ids) plus what differs between two fresh real 5.3.3 proxies in the gRPC answers, each rule with its
reason. Nothing else is touched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable

from .grpc_runner import GrpcRun, GrpcTarget
from .normalise import DAY_MS, Context, _scalar


@dataclass(frozen=True)
class KeyRule:
    """A rule for the values of one protobuf JSON field name (wherever it occurs)."""
    name: str
    reason: str
    keys: tuple[str, ...]
    apply: Callable[[Any, "GrpcContext"], Any]


@dataclass(frozen=True)
class GrpcContext:
    base: Context
    grpc_port: int


_RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def _timestamp(value: Any, ctx: GrpcContext) -> Any:
    """A protobuf Timestamp in JSON ("2026-11-26T22:01:02.345Z") within the run's window -> <time>."""
    if isinstance(value, str) and _RFC3339.match(value):
        ms = int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        if ctx.base.started_ms - 3 * DAY_MS <= ms <= ctx.base.ended_ms + DAY_MS:
            return "<time>"
    return value


def _non_empty(token: str) -> Callable[[Any, GrpcContext], Any]:
    def apply(value: Any, ctx: GrpcContext) -> Any:
        return f"<{token}>" if isinstance(value, str) and value else value
    return apply


def _grpc_port(value: Any, ctx: GrpcContext) -> Any:
    return "<grpc-port>" if value == ctx.grpc_port else value


KEY_RULES: tuple[KeyRule, ...] = (
    KeyRule("receipt handle", "a receipt handle encodes the pop time, the invisible time, the revive queue and the "
            "checkpoint's offsets: times of the run; present or not is still compared", ("receiptHandle",),
            _non_empty("receipt-handle")),
    KeyRule("recall handle", "a delay message's recall handle encodes its delivery time (a time of the run); "
            "present or not is still compared", ("recallHandle",), _non_empty("recall-handle")),
    KeyRule("grpc port", "the port of the gRPC endpoint in routes and settings: each proxy listens on a free "
            "port", ("port",), _grpc_port),
)
KEYS = {k: rule for rule in KEY_RULES for k in rule.keys}


def context_of(run: GrpcRun) -> GrpcContext:
    t: GrpcTarget = run.target
    return GrpcContext(Context(t.port(t.namesrv), t.port(t.broker), run.started_ms, run.ended_ms), t.port(t.grpc))


def normalise_grpc_run(run: GrpcRun) -> list[dict[str, Any]]:
    ctx = context_of(run)
    return [_walk(record, None, ctx) for record in run.records]


def _walk(value: Any, key: str | None, ctx: GrpcContext) -> Any:
    if key in KEYS:
        new = KEYS[key].apply(value, ctx)
        if new is not value:
            return new
    if isinstance(value, dict):
        return {k: _walk(v, k, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, key, ctx) for v in value]
    new = _timestamp(value, ctx)
    if new is not value:
        return new
    return _scalar(value, ctx.base)
