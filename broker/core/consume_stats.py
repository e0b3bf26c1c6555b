"""A group's consume stats (GET_CONSUME_STATS, consumerProgress; the dashboard's group page shows the same
numbers): per queue the max offset, the committed offset (a POP group's first un-acked message), what was pulled
(or popped) and the last consumed message's store time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_emulator.protocol.admin_bodies import ConsumeStats, OffsetWrapper
from rocketmq_emulator.protocol.bodies import MessageModel, MessageQueue
from rocketmq_emulator.protocol.topics import RETRY_GROUP_TOPIC_PREFIX, pop_retry_topic

from ..state.consumer_offset import BROADCAST_SUFFIX

if TYPE_CHECKING:
    from rocketmq_emulator.store.message_store import MessageStore

    from .broker_context import BrokerContext


def last_consumed_timestamp(store: MessageStore, topic: str, queue_id: int, consumer_offset: int) -> int:
    """The store time of the last message a group consumed in the queue (the one before its committed offset;
    0 when it consumed none): consume stats' lastTimestamp."""
    if consumer_offset < 1:
        return 0
    return max(0, store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1))


def consume_stats(b: BrokerContext, group: str, topic_filter: str | None = None,
                  subscribed: bool = True) -> ConsumeStats:
    """`group`'s stats for `topic_filter`, or for every topic it has offsets for or (online, with `subscribed`)
    subscribes to (4.9.8 lists the topics with offsets only)."""
    gi = b.consumer_manager.get(group)
    broadcasting = (gi.message_model == MessageModel.BROADCASTING) if gi is not None \
        else b.broadcast_offsets.knows_group(group)
    offsets = b.consumer_offset_manager
    stored_as = group + BROADCAST_SUFFIX if broadcasting else group
    topics = {topic_filter} if topic_filter else offsets.topics_of_group(stored_as)
    if not topic_filter and gi is not None and subscribed:  # an online group's topics before any commit
        topics |= set(gi.subscription_table)
    if broadcasting and not topic_filter:
        topics |= {t for t, g in b.broadcast_offsets.clients if g == group}
    if not topic_filter:  # a POP group's retry topics (where its revived messages wait), online or not; a group
        # that never popped has none (a topic that does not exist is left out below)
        topics |= {pop_retry_topic(group, t) for t in list(topics) if not t.startswith(RETRY_GROUP_TOPIC_PREFIX)}
    table = {}
    online = gi is not None and bool(gi.channels)
    consume_tps = 0.0
    for topic in sorted(topics):
        tc = b.topic_config_manager.get(topic)
        if tc is None:
            continue
        if gi is not None and gi.subscription_table and topic not in gi.subscription_table and \
                topic not in {pop_retry_topic(group, t) for t in gi.subscription_table}:
            continue  # (a POP group's retry topic of a subscribed topic stays: its pending retries)
        consume_tps += b.stats.group_get_tps(group, topic)  # messages pulled per second, last minute
        for q in range(tc.read_queue_nums):
            broker_offset = max(0, b.store.get_max_offset_in_queue(topic, q))
            if broadcasting and b.config.enable_broadcast_offset_store:  # else, as 4.9.8: the group's own offsets
                consumer_offset = max(0, b.broadcast_offsets.group_offset(topic, group, q))
                pulled = max([consumer_offset] + [c.offsets[q] for _, c in b.broadcast_offsets.live(topic, group)
                                                  if q in c.offsets and online])
            else:
                consumer_offset = max(0, offsets.query_offset(group, topic, q))
                # nothing is in flight without a consumer: what the last one pulled ahead of its commit is
                # delivered again from the committed offset to the next one
                pulled = max(consumer_offset, offsets.query_pull_offset(group, topic, q)) if online \
                    else consumer_offset
                unacked = b.pop_service.first_unacked(group, topic, q)
                if unacked is not None:  # a POP group: popped and not acked is in flight, from the first
                    pulled, consumer_offset = consumer_offset, min(unacked, consumer_offset)
            table[MessageQueue(topic, b.config.broker_name, q)] = OffsetWrapper(
                broker_offset=broker_offset, consumer_offset=consumer_offset,
                last_timestamp=last_consumed_timestamp(b.store, topic, q, consumer_offset),
                pull_offset=min(pulled, max(broker_offset, consumer_offset)))
    return ConsumeStats(consume_tps=consume_tps, offset_table=table)
