"""TAG subscriptions: `A || B`, `*`, empty."""

from __future__ import annotations

from rocketmq_emulator.protocol.message import java_string_hash


def parse_tag_expression(expression: str | None) -> frozenset[int] | None:
    """A TAG subscription's hash codes; None means "every message" (null, empty or `*`)."""
    if expression is None:
        return None
    expression = expression.strip()
    if not expression or expression == "*":
        return None
    tags = [t.strip() for t in expression.split("||")]
    codes = frozenset(java_string_hash(t) for t in tags if t)
    return codes or None
