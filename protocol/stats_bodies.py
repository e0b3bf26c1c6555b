"""JSON bodies of the broker statistics requests: VIEW_BROKER_STATS_DATA (315, `BrokerStatsData`) and
GET_BROKER_CONSUME_STATS (317, `ConsumeStatsList`)."""

from __future__ import annotations

import msgspec

from .admin_bodies import ConsumeStats
from .bodies import Body

__all__ = ["BrokerStatsItem", "BrokerStatsData", "ConsumeStatsList"]


class BrokerStatsItem(Body):
    """One window of a stats item: its sum, per second, and sum per request (avgpt)."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


class BrokerStatsData(Body):
    stats_minute: BrokerStatsItem = msgspec.field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = msgspec.field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = msgspec.field(default_factory=BrokerStatsItem)


class ConsumeStatsList(Body):
    """Every subscription group of a broker: one `{group: [ConsumeStats per topic]}` map per group."""

    consume_stats_list: list[dict[str, list[ConsumeStats]]] = msgspec.field(default_factory=list)
    broker_addr: str | None = None
    total_diff: int = 0
