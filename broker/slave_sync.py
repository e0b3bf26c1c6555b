"""A slave's copy of its master's configuration (4.9.8's SlaveSynchronize): every 10 s (`slaveSynchronizePeriod`,
the emulator's own setting; first as soon as a registration tells it its master) the slave asks its master
for all topic configs, consumer offsets, delay-level offsets and subscription groups. Topic configs and groups
replace the slave's when the master's data version differs; the master's offsets are merged over the slave's (a
commit a consumer sent to the slave while the master was away stays until the master has one for that queue);
the delay offsets are kept as the master's. A slave never writes any of them on its own."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from rocketmq_emulator.protocol import RequestCode
from rocketmq_emulator.protocol.admin_bodies import (ConsumerOffsetSerializeWrapper, DataVersion,
                                                     SubscriptionGroupWrapper, TopicConfigSerializeWrapper)

from .outer_api import MasterLink
from .state.consumer_offset import ConsumerOffsetManager
from .state.subscription_group import SubscriptionGroupManager
from .state.topic_config import TopicConfigManager

log = logging.getLogger("rocketmq_emulator.broker")

class DelayOffsets(Protocol):
    def take_master_offsets(self, body: bytes) -> None: ...


class SlaveSynchronize:
    def __init__(self, link: MasterLink, topics: TopicConfigManager, groups: SubscriptionGroupManager,
                 offsets: ConsumerOffsetManager, delays: DelayOffsets) -> None:
        self.link = link
        self.topics, self.groups, self.offsets, self.delays = topics, groups, offsets, delays
        self.synced = 0  #: rounds that reached the master (tests wait for it)

    async def sync_all(self) -> None:
        if self.link.addr is None:
            return
        got = [await self.link.get(code) for code in (RequestCode.GET_ALL_TOPIC_CONFIG,
                                                      RequestCode.GET_ALL_CONSUMER_OFFSET,
                                                      RequestCode.GET_ALL_DELAY_OFFSET,
                                                      RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)]
        topics, offsets, delays, groups = got
        if topics is not None:
            w = TopicConfigSerializeWrapper.decode(topics)
            if _take(self.topics, w.topic_config_table, w.data_version):
                log.info("slave: %d topic config(s) taken from the master", len(w.topic_config_table))
        if offsets is not None:
            self.offsets.take_master_offsets(ConsumerOffsetSerializeWrapper.decode(offsets).offset_table)
        if delays is not None:
            self.delays.take_master_offsets(delays)
        if groups is not None:
            g = SubscriptionGroupWrapper.decode(groups)
            _take(self.groups, g.subscription_group_table, g.data_version)
        if all(x is not None for x in got):
            self.synced += 1


class _Versioned(Protocol):
    table: Any
    data_version: DataVersion

    def persist(self) -> None: ...


def _take(manager: _Versioned, table: dict[str, Any], version: DataVersion) -> bool:
    """The master's table replaces the slave's when its data version differs (4.9.8); True when it did."""
    if version == manager.data_version:
        return False
    manager.table = dict(table)
    manager.data_version = version
    manager.persist()
    return True
