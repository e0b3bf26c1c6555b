"""`ConsumerFilterManager` (4.9.8's): the SQL92 expressions of the consumers' subscriptions, compiled once per
(topic, group) and subscription version, fed by heartbeats; the pull path asks it for the compiled expression.

A subscription whose expression does not compile is remembered with its error: a pull of it answers
FILTER_DATA_NOT_EXIST (as upstream, whose manager keeps no data for it), and CHECK_CLIENT_CONFIG, which the
Java and this project's push consumers send at start, answers SYSTEM_ERROR with the parser's message. A pull
that carries its subscription (the lite pull consumer's) compiles the request's expression (kept in a small
cache by text).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from rocketmq_emulator.protocol.message import record_properties

if TYPE_CHECKING:
    from .sql92 import SQL92Error

log = logging.getLogger("rocketmq_emulator.filter")

SQL92 = "SQL92"


@dataclass
class ConsumerFilterData:
    group: str
    topic: str
    expression: str
    version: int  # the subscription's version (SubscriptionData.subVersion)
    record_filter: Callable[[bytes], bool] | None  # None when the expression did not compile
    error: str | None = None


def compile_record_filter(expression: str) -> Callable[[bytes], bool]:
    """The store's record filter for a SQL92 expression (SQL92Error if it does not compile)."""
    from .sql92 import compile_sql92  # the parser loads with the first SQL92 subscription
    matches = compile_sql92(expression).matches
    return lambda record: matches(record_properties(record))


def compile_problem(expression: str) -> SQL92Error | None:
    """None if the expression compiles, else the parser's error (its message, and 4.9.8's text as `.java`)."""
    from .sql92 import SQL92Error
    try:
        compile_record_filter(expression)
    except SQL92Error as exc:
        return exc
    return None


class ConsumerFilterManager:
    def __init__(self) -> None:
        self._table: dict[tuple[str, str], ConsumerFilterData] = {}
        self._adhoc: OrderedDict[str, Callable[[bytes], bool] | str] = OrderedDict()

    def register(self, group: str, topic: str, expression: str, version: int) -> ConsumerFilterData:
        """A heartbeat's SQL92 subscription: compiled when new, changed or of a newer version."""
        from .sql92 import SQL92Error
        key = (topic, group)
        old = self._table.get(key)
        if old is not None and old.expression == expression and old.version >= version:
            return old
        try:
            data = ConsumerFilterData(group, topic, expression, version, compile_record_filter(expression))
        except SQL92Error as exc:
            log.warning("group %s: the SQL92 subscription of %s does not compile: %s", group, topic, exc)
            data = ConsumerFilterData(group, topic, expression, version, None, str(exc))
        self._table[key] = data
        return data

    def get(self, topic: str, group: str) -> ConsumerFilterData | None:
        return self._table.get((topic, group))

    def build(self, expression: str) -> Callable[[bytes], bool] | str:
        """A pull's own expression compiled (cached by text): the record filter, or the error message."""
        from .sql92 import SQL92Error
        found = self._adhoc.get(expression)
        if found is None:
            try:
                found = compile_record_filter(expression)
            except SQL92Error as exc:
                found = str(exc)
            self._adhoc[expression] = found
            if len(self._adhoc) > 256:
                self._adhoc.popitem(last=False)
        else:
            self._adhoc.move_to_end(expression)
        return found
