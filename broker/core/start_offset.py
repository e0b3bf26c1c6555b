"""Where a consumer group with no offset in a queue starts: the one rule QUERY_CONSUMER_OFFSET (remoting clients)
and POP (5.x clients, remoting and gRPC) share.

A 4.9.x broker tells such a group **0** as long as the queue's first message is still stored ("young" queue), and
"not found" once it is gone, so the client's consumeFromWhere decides (README "What a new group reads first"); 5.x's
POP does the same (`initPopOffsetByCheckMsgInMem`). `newGroupOffset=strict` (and a 5.x QUERY_CONSUMER_OFFSET with
`setZeroIfNotFound=false`) skips the young-queue rule: the client's own setting always decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import NewGroupOffset

if TYPE_CHECKING:
    from rocketmq_emulator.store.message_lookup import MessageLookup

    from ..config import BrokerConfig


def young_queue_offset(config: BrokerConfig, store: MessageLookup, topic: str, queue_id: int, *,
                       zero_if_not_found: bool = True) -> int | None:
    """0 for a group new to a young queue under the legacy rule; None when the client's setting decides."""
    if not zero_if_not_found or config.new_group_offset is NewGroupOffset.STRICT:
        return None
    if store.get_min_offset_in_queue(topic, queue_id) <= 0 and \
            not store.check_in_disk_by_consume_offset(topic, queue_id, 0):
        return 0
    return None
