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


def _recall_handle(value: Any, ctx: GrpcContext) -> Any:
    """base64 of "v1 TOPIC BROKER DELIVER_MS MESSAGE_ID": the delivery time made <time>, the rest kept."""
    if not isinstance(value, str) or not value:
        return value
    import base64
    try:
        parts = base64.b64decode(value + "=" * (-len(value) % 4)).decode().split(" ")
    except Exception:  # noqa: BLE001 - not a recall handle: compared as it is
        return value
    if len(parts) == 5 and parts[3].isdigit():
        parts[3] = "<time>"
        return "<recall-handle " + " ".join(parts) + ">"
    return value


_GENERATED_ID = re.compile(r"^[0-9A-F]{56}$")


def _generated_id(value: Any, ctx: GrpcContext) -> Any:
    return "<generated-message-id>" if isinstance(value, str) and _GENERATED_ID.match(value) else value


def _grpc_port(value: Any, ctx: GrpcContext) -> Any:
    return "<grpc-port>" if value == ctx.grpc_port else value


KEY_RULES: tuple[KeyRule, ...] = (
    KeyRule("receipt handle", "a receipt handle encodes the pop time, the invisible time, the revive queue and the "
            "checkpoint's offsets: times of the run; present or not is still compared", ("receiptHandle",),
            _non_empty("receipt-handle")),
    KeyRule("recall handle", "a delay message's recall handle (base64 of version, topic, broker, delivery time, "
            "message id) encodes its delivery time, a time of the run; the rest is compared", ("recallHandle",),
            _recall_handle),
    KeyRule("generated message id", "the id the proxy gives a batch of messages (MessageClientIDSetter, on an "
            "IPv6 host 56 hex digits): the machine's address, the pid, a class loader hash, the time and a counter; "
            "an id the client gave is compared", ("messageId",), _generated_id),
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
