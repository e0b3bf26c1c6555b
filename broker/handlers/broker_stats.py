"""The broker statistics requests: VIEW_BROKER_STATS_DATA (315, mqadmin statsAll), GET_BROKER_CONSUME_STATS (317,
mqadmin brokerConsumeStats), and the table GET_BROKER_RUNTIME_INFO answers (mqadmin brokerStatus, clusterList),
with the keys a 4.9.8 broker gives (AdminBrokerProcessor.prepareRuntimeInfo, DefaultMessageStore and
StoreStatsService.getRuntimeInfo)."""

from __future__ import annotations

import math
import os
import time
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import ConsumeStats, OffsetWrapper
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.fastjson import java_double
from rocketmq_emulator.protocol.headers import GetConsumeStatsInBrokerHeader, ViewBrokerStatsDataRequestHeader
from rocketmq_emulator.protocol.message import java_hash_set_order
from rocketmq_emulator.protocol.stats_bodies import BrokerStatsData, BrokerStatsItem, ConsumeStatsList
from rocketmq_emulator.protocol.topics import SCHEDULE_TOPIC
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

from ..config import Compat
from ..core.consume_stats import last_consumed_timestamp
from ..state.stats import DAY, HOUR, MINUTE, STORE_TPS_SPANS

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext

# BrokerConfig's thread-pool queue capacities (4.9.8 defaults). This broker has no such pools: requests run on
# the event loop in the order they are read, so it reports the queues as a real idle broker does (size 0, head
# wait 0 ms) with the capacities a 4.9.8 broker is configured with.
SEND_THREAD_POOL_QUEUE_CAPACITY = 10000
PULL_THREAD_POOL_QUEUE_CAPACITY = 100000
QUERY_THREAD_POOL_QUEUE_CAPACITY = 20000
END_TRANSACTION_POOL_QUEUE_CAPACITY = 100000
_JAVA_INT_MAX = 2 ** 31 - 1


#: the table size of 4.9.8's subscriptionGroupTable (`new ConcurrentHashMap<>(1024)` allocates 2048 bins): the
#: broker's consume stats list the groups in its iteration order
GROUP_TABLE_SIZE = 2048


class BrokerStatsProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.VIEW_BROKER_STATS_DATA, self.view_broker_stats_data)
        table.register(RequestCode.GET_BROKER_CONSUME_STATS, self.get_broker_consume_stats)

    def view_broker_stats_data(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = ViewBrokerStatsDataRequestHeader.from_ext(req.ext_fields)
        item = self.broker.stats.get_item(h.stats_name, h.stats_key)
        if item is None:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"The stats <{h.stats_name}> <{h.stats_key}> not exist")
        windows = [item.snapshot(w) for w in (MINUTE, HOUR, DAY)]
        minute, hour, day = (BrokerStatsItem(sum=s.sum, tps=s.tps, avgpt=s.avgpt) for s in windows)
        return RemotingCommand.response_to(req, body=BrokerStatsData(
            stats_minute=minute, stats_hour=hour, stats_day=day).encode())

    def get_broker_consume_stats(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """Every subscription group: per topic it has offsets for (and that it still subscribes to while online),
        per queue the max and committed offsets and the last consumed message's store time; the total lag."""
        b = self.broker
        h = GetConsumeStatsInBrokerHeader.from_ext(req.ext_fields)
        total_diff = 0
        out = []
        for group in java_hash_set_order(b.subscription_group_manager.table, table_size=GROUP_TABLE_SIZE):
            gi = b.consumer_manager.get(group)
            per_topic = []
            for topic in sorted(b.consumer_offset_manager.topics_of_group(group)):
                tc = b.topic_config_manager.get(topic)
                if tc is None or (h.is_order and not tc.order):
                    continue
                if gi is not None and gi.subscription_table and topic not in gi.subscription_table:
                    continue
                table = {}
                for q in range(tc.write_queue_nums):
                    broker_offset = max(0, b.store.get_max_offset_in_queue(topic, q))
                    consumer_offset = max(0, b.consumer_offset_manager.query_offset(group, topic, q))
                    unacked = b.pop_service.first_unacked(group, topic, q)
                    if unacked is not None:  # a POP group: popped and not acked is not consumed yet
                        consumer_offset = min(unacked, consumer_offset)
                    table[MessageQueue(topic, b.config.broker_name, q)] = OffsetWrapper(
                        broker_offset=broker_offset, consumer_offset=consumer_offset,
                        last_timestamp=last_consumed_timestamp(b.store, topic, q, consumer_offset))
                stats = ConsumeStats(consume_tps=b.stats.group_get_tps(group, topic), offset_table=table)
                total_diff += stats.total_diff()
                per_topic.append(stats)
            out.append({group: per_topic})
        return RemotingCommand.response_to(req, body=ConsumeStatsList(
            consume_stats_list=out, broker_addr=b.broker_addr, total_diff=total_diff).encode())


def _tps_text(value: float | None) -> str:
    return "" if value is None else java_double(value)


def _byte_count(n: int) -> str:
    """MixAll.humanReadableByteCount(n, false): `512 B`, `1.5 KiB`, `3.0 GiB`."""
    if n < 1024:
        return f"{n} B"
    exp = min(6, int(math.log(n) / math.log(1024)))
    return f"{n / 1024 ** exp:.1f} {'KMGTPE'[exp - 1]}iB"


def _disk_used_ratio(path: str) -> float:
    """UtilAll.getDiskPartitionSpaceUsedPercent: used / (used + usable), rounded up to a percent; -1 if the
    path does not exist."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    total, free, usable = st.f_blocks * st.f_frsize, st.f_bfree * st.f_frsize, st.f_bavail * st.f_frsize
    used = total - free
    entire = used + usable
    if total <= 0 or entire <= 0:
        return -1.0
    return (used * 100 // entire + (1 if used * 100 % entire else 0)) / 100.0


def _runtime(ms: int) -> str:
    s = ms // 1000
    return f"[ {s // 86400} days, {s % 86400 // 3600} hours, {s % 3600 // 60} minutes, {s % 60} seconds ]"


#: runtime info keys of this emulator's own (not in compat 4.9)
EMULATOR_RUNTIME_KEYS = ("clockOffsetMillis", "pullHeldCount", "topicCount", "consumerGroupCount")


def runtime_info(b: BrokerContext) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO: the 4.9.8 key set, plus this broker's EMULATOR_RUNTIME_KEYS and its name in
    brokerVersionDesc (neither with compat 4.9)."""
    st, store = b.stats, b.store
    cfg = store.config
    put_total, put_bytes = st.store_totals()
    times = put_total or 1
    info = {
        # StoreStatsService
        "bootTimestamp": str(st.boot_ms),
        # the emulator's fast-forward: how far the broker clock is ahead of real time
        "clockOffsetMillis": str(b.clock.offset_ms),
        "runtime": _runtime(int(time.time() * 1000) - st.boot_ms),
        "putMessageEntireTimeMax": str(st.put_max_ms),
        "putMessageTimesTotal": str(times),
        "putMessageFailedTimes": str(st.put_failed_times),
        "putMessageSizeTotal": str(put_bytes),
        "putMessageDistributeTime": st.latency_distribution() or "null",  # String.valueOf(null) in the 1st minute
        "putMessageAverageSize": java_double(put_bytes / times),
        # the store dispatches every message to its queue and index as it appends it: no reput buffer
        "dispatchMaxBuffer": "0",
        "getMessageEntireTimeMax": str(st.get_max_ms),
        "putTps": " ".join(_tps_text(st.store_tps("put", s)) for s in STORE_TPS_SPANS),
        "getFoundTps": " ".join(_tps_text(st.store_tps("found", s)) for s in STORE_TPS_SPANS),
        "getMissTps": " ".join(_tps_text(st.store_tps("miss", s)) for s in STORE_TPS_SPANS),
        "getTotalTps": " ".join(java_double((st.store_tps("found", s) or 0.0) + (st.store_tps("miss", s) or 0.0))
                                for s in STORE_TPS_SPANS),
        "getTransferedTps": " ".join(_tps_text(st.store_tps("transferred", s)) for s in STORE_TPS_SPANS),
        "putLatency99": f"{st.latency_percentile(0.99):.2f}",
        "putLatency999": f"{st.latency_percentile(0.999):.2f}",
        # DefaultMessageStore
        f"commitLogDiskRatio_{cfg.commit_log_dir}": java_double(_disk_used_ratio(cfg.commit_log_dir)),
        "commitLogDiskRatio": java_double(_disk_used_ratio(cfg.commit_log_dir)),
        "consumeQueueDiskRatio": java_double(_disk_used_ratio(cfg.consume_queue_dir)),
        "commitLogMinOffset": str(store.commitlog_min_offset),
        "commitLogMaxOffset": str(store.commitlog_max_offset),
        # AdminBrokerProcessor.prepareRuntimeInfo
        "brokerVersionDesc": "V4_9_8 (rocketmq-emulator)",
        "brokerVersion": "409",
        "msgPutTotalYesterdayMorning": str(st.put_total_yesterday_morning),
        "msgPutTotalTodayMorning": str(st.put_total_today_morning),
        "msgPutTotalTodayNow": str(put_total),
        "msgGetTotalYesterdayMorning": str(st.get_total_yesterday_morning),
        "msgGetTotalTodayMorning": str(st.get_total_today_morning),
        "msgGetTotalTodayNow": str(st.get_transferred),
        "sendThreadPoolQueueSize": "0",
        "sendThreadPoolQueueCapacity": str(SEND_THREAD_POOL_QUEUE_CAPACITY),
        "pullThreadPoolQueueSize": "0",
        "pullThreadPoolQueueCapacity": str(PULL_THREAD_POOL_QUEUE_CAPACITY),
        "queryThreadPoolQueueSize": "0",
        "queryThreadPoolQueueCapacity": str(QUERY_THREAD_POOL_QUEUE_CAPACITY),
        # no transactions here: the end-transaction queue is always empty
        "EndTransactionQueueSize": "0",
        "EndTransactionThreadPoolQueueCapacity": str(END_TRANSACTION_POOL_QUEUE_CAPACITY),
        "dispatchBehindBytes": "0",  # dispatched while appended (see dispatchMaxBuffer)
        # the put lock is held only inside a put, and this answer never runs during one
        "pageCacheLockTimeMills": "0",
        "sendThreadPoolQueueHeadWaitTimeMills": "0",
        "pullThreadPoolQueueHeadWaitTimeMills": "0",
        "queryThreadPoolQueueHeadWaitTimeMills": "0",
        "earliestMessageTimeStamp": str(store.get_commitlog_earliest_time()),
        "startAcceptSendRequestTimeStamp": "0",  # BrokerConfig default: sends accepted from the start
        "remainTransientStoreBufferNumbs": str(_JAVA_INT_MAX),  # transientStorePoolEnable is false
        "remainHowManyDataToFlush": _byte_count(sum(max(0, f.wrote_position - f.flushed_position)
                                                    for f in store.commitlog.queue.files)),
        # this broker's own
        "pullHeldCount": str(b.pull_hold_service.held_count()),
        "topicCount": str(len(b.topic_config_manager.table)),
        "consumerGroupCount": str(len(b.consumer_manager.groups)),
    }
    if b.config.compat is Compat.V4_9:  # 4.9.8's key set and version text only
        for key in EMULATOR_RUNTIME_KEYS:
            del info[key]
        info["brokerVersionDesc"] = "V4_9_8"
    for level, offset in sorted(b.schedule_service.offsets.items()):
        info[f"scheduleMessageOffset_{level}"] = \
            f"{offset},{max(0, store.get_max_offset_in_queue(SCHEDULE_TOPIC, level - 1))}"
    try:
        root = os.statvfs(cfg.store_path_root_dir)
        info["commitLogDirCapacity"] = (f"Total : {_byte_count(root.f_blocks * root.f_frsize)}, "
                                        f"Free : {_byte_count(root.f_bavail * root.f_frsize)}.")
    except OSError:
        pass
    return info
