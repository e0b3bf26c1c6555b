"""What a consumer answers GET_CONSUMER_RUNNING_INFO with (Java `ConsumerRunningInfo`, which mqadmin
`consumerStatus` prints and compares across a group's members):

* properties: the consumer's settings under the Java consumer's field names (`DefaultMQPushConsumer`, or
  `DefaultMQPullConsumer` for the pull consumer), plus PROP_NAMESERVER_ADDR, PROP_CONSUME_TYPE,
  PROP_CLIENT_VERSION, PROP_CONSUMER_START_TIMESTAMP, PROP_CONSUMEORDERLY and PROP_THREADPOOL_CORE_SIZE;
* subscriptionSet: the subscriptions (the retry topic's included, as the Java client's);
* mqTable: a `ProcessQueueInfo` per owned queue, with the offset the next commit sends;
* statusTable: a `ConsumeStatus` per subscribed topic (pull and consume RT/TPS, see `consumer_stats`).

The body is fastjson text with MessageQueue objects as map keys, as the Java client writes it.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from rocketmq_emulator.protocol import fastjson
from rocketmq_emulator.protocol.bodies import MessageQueue, SubscriptionData

if TYPE_CHECKING:
    from .consumer_context import ConsumerContext
    from .process_queue import ProcessQueue

#: MQVersion.getVersionDesc of the version this client announces (409)
CLIENT_VERSION_DESC = "V4_9_8"
ALLOCATE_CLASS = {"AVG": "AllocateMessageQueueAveragely", "AVG_BY_CIRCLE": "AllocateMessageQueueAveragelyByCircle"}


class RunningInfo:
    """ConsumerRunningInfo (§6.3), written with fastjson's object-form MessageQueue keys."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def encode(self) -> bytes:
        return fastjson.dumps(self.data).encode()

    def __getitem__(self, key: str) -> Any:
        return self.data[key]


def _namesrv_prop(namesrv: str) -> str:
    """Java joins the name server list with a ';' after each address."""
    return "".join(f"{a};" for a in namesrv.replace(",", ";").split(";") if a.strip())


def common_props(namesrv: str, consume_type: str, started_at_ms: int) -> dict[str, str]:
    return {"PROP_NAMESERVER_ADDR": _namesrv_prop(namesrv), "PROP_CONSUME_TYPE": consume_type,
            "PROP_CLIENT_VERSION": CLIENT_VERSION_DESC, "PROP_CONSUMER_START_TIMESTAMP": str(started_at_ms)}


def push_running_info(ctx: ConsumerContext, process_queues: Mapping[MessageQueue, ProcessQueue]) -> RunningInfo:
    s = ctx.settings
    when = _dt.datetime.fromtimestamp(ctx.consume_timestamp_ms / 1000).strftime("%Y%m%d%H%M%S")
    props = {
        "consumerGroup": ctx.group, "messageModel": ctx.message_model.name,
        "consumeFromWhere": ctx.consume_from.name, "consumeTimestamp": when,
        "allocateMessageQueueStrategy": ALLOCATE_CLASS.get(ctx.allocate_strategy.name, ctx.allocate_strategy.name),
        "consumeThreadMin": str(s.consume_concurrency), "consumeThreadMax": str(s.consume_concurrency),
        "consumeConcurrentlyMaxSpan": str(s.consume_concurrently_max_span),
        "pullThresholdForQueue": str(s.pull_threshold_for_queue),
        "pullThresholdSizeForQueue": str(s.pull_threshold_size_for_queue // (1024 * 1024)),
        "pullThresholdForTopic": "-1", "pullThresholdSizeForTopic": "-1", "pullInterval": "0",
        "consumeMessageBatchMaxSize": str(s.consume_batch_size), "pullBatchSize": str(s.pull_batch_size),
        "postSubscriptionWhenPull": str(s.post_subscription_when_pull).lower(), "unitMode": "false",
        "maxReconsumeTimes": str(s.max_reconsume_times),
        "suspendCurrentQueueTimeMillis": str(int(s.suspend_current_queue_time * 1000)),
        "awaitTerminationMillisWhenShutdown": str(int(s.await_termination_timeout * 1000)),
        **common_props(ctx.instance.config.namesrv, "CONSUME_PASSIVELY", ctx.started_at),
        "PROP_CONSUMEORDERLY": str(ctx.orderly).lower(), "PROP_THREADPOOL_CORE_SIZE": str(s.consume_concurrency),
    }
    mq_table = {mq: pq.info(ctx.committed(mq)) for mq, pq in sorted(process_queues.items())}
    subs = list(ctx.subscriptions.values())
    return RunningInfo({"properties": props, "subscriptionSet": subs, "mqTable": mq_table,
                        "statusTable": {sub.topic: ctx.stats.status(sub.topic) for sub in subs}})


def pull_running_info(group: str, namesrv: str, started_at_ms: int, subscriptions: Iterable[SubscriptionData] = ()
                      ) -> RunningInfo:
    """A pull consumer (Java `DefaultMQPullConsumerImpl.consumerRunningInfo`): its settings, no process
    queues (the application pulls), no counters."""
    props = {"consumerGroup": group, "messageModel": "CLUSTERING", "unitMode": "false", "maxReconsumeTimes": "16",
             **common_props(namesrv, "CONSUME_ACTIVELY", started_at_ms)}
    return RunningInfo({"properties": props, "subscriptionSet": list(subscriptions), "mqTable": {},
                        "statusTable": {}})
