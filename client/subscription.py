"""Subscriptions: a topic plus a tag expression (`*`, `TagA`, `TagA || TagB`), as `SubscriptionData`
(reference §6.3), and the client-side re-filter by tag string (§9.5: the broker filters by hash only)."""

from __future__ import annotations

import time

from rocketmq_emulator.protocol.bodies import SubscriptionData
from rocketmq_emulator.protocol.message import java_string_hash

from .errors import InvalidArgumentError

SUB_ALL = "*"


def build_subscription(topic: str, expression: str | None = SUB_ALL, expression_type: str = "TAG",
                       sub_version: int | None = None) -> SubscriptionData:
    if expression_type == "SQL92" and not (expression or "").strip():  # as Java's FilterAPI.build
        raise InvalidArgumentError("a SQL92 expression cannot be empty (to take every message, subscribe with the "
                                   "tag expression '*')")
    expression = (expression or SUB_ALL).strip() or SUB_ALL
    tags: list[str] = []
    if expression_type == "TAG":
        if expression != SUB_ALL:
            tags = [t.strip() for t in expression.split("||") if t.strip()]
            if not tags:
                raise InvalidArgumentError(f"tag expression {expression!r} names no tag; use '*' or 'TagA || TagB'")
    elif expression_type != "SQL92":
        raise InvalidArgumentError(f"expression type {expression_type!r}: use 'TAG' or 'SQL92'")
    return SubscriptionData(topic=topic, sub_string=expression, tags_set=tags,
                            code_set=[java_string_hash(t) for t in tags],
                            sub_version=sub_version if sub_version is not None else time.time_ns() // 1_000_000,
                            expression_type=expression_type)


def tag_filter(sub: SubscriptionData) -> frozenset[str] | None:
    """The tags a pulled message must carry, None when every message matches."""
    if sub.expression_type != "TAG" or not sub.tags_set:
        return None
    return frozenset(sub.tags_set)
