"""`Admin` (Java `DefaultMQAdminExt`): topics, topic status, consumer connections and progress, reset of a
group's offsets by timestamp (reference §12.3, §12.4), message queries, cluster list."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import msgspec

from rocketmq_emulator.protocol import RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import (ConsumerOffsetSerializeWrapper, ConsumeStats, GetConsumerStatusBody,
                                                     OffsetWrapper, ResetOffsetBody, SubscriptionGroupConfig,
                                                     SubscriptionGroupWrapper, TopicConfig,
                                                     TopicConfigSerializeWrapper, TopicOffset, TopicStatsTable)
from rocketmq_emulator.protocol.bodies import (ClusterInfo, ConsumerConnection, KVTable, MessageQueue, TopicList,
                                               TopicRouteData)
from rocketmq_emulator.protocol.emulator_requests import (AdvanceTimeRequestHeader, AdvanceTimeResponseHeader,
                                                          BrokerLifecycleRequestHeader, DropConnectionsResponseHeader,
                                                          EmulatorRequestCode, ExpireFilesNowRequestHeader,
                                                          ExpireFilesNowResponseHeader)
from rocketmq_emulator.protocol.entities import KvSetting, entities_document
from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.headers import (CreateTopicRequestHeader, DeleteSubscriptionGroupRequestHeader,
                                                DeleteTopicFromNamesrvRequestHeader, GetConsumerStatusRequestHeader,
                                                GetConsumeStatsRequestHeader, GetKVListByNamespaceRequestHeader, QueryMessageRequestHeader,
                                                ResetOffsetRequestHeader, TopicRequestHeader, ViewMessageRequestHeader)
from rocketmq_emulator.protocol.message import decode_message_id
from rocketmq_emulator.protocol.topics import (BROADCAST_OFFSET_SUFFIX, DLQ_GROUP_TOPIC_PREFIX,
                                               RETRY_GROUP_TOPIC_PREFIX, TOOL_GROUPS, broker_system_topics,
                                               is_system_group, is_system_topic, parse_offset_key, retry_topic)

from .lifecycle import InstanceUser
from . import route as routing
from .config import ClientConfig, local_ip, validate_name, validate_topic
from .errors import (NAMESRV, BrokerResponseError, ConsumerNotOnlineError, InvalidArgumentError,
                     NoRouteError, response_error)
from .instance import ClientInstance, request
from .message import ReceivedMessage, decode_received

MAX_TIMESTAMP = 2 ** 63 - 1


@dataclass
class BrokerInfo:
    """One broker of `cluster_list()`; `runtime` is the broker's GET_BROKER_RUNTIME_INFO table (empty if it
    could not be read)."""

    cluster: str
    broker_name: str
    broker_id: int
    addr: str
    runtime: dict[str, str] = field(default_factory=dict)


@dataclass
class ResetOffsetRow:
    queue: MessageQueue
    offset: int  # the group's offset after the reset
    broker_offset: int | None = None  # old method only: max offset
    consumer_offset: int | None = None  # old method only: offset before the reset
    timestamp_offset: int | None = None  # old method only: offset found for the timestamp


@dataclass
class ResetOffsetResult:
    """`method`: "broker" (INVOKE_BROKER_TO_RESET_OFFSET; online consumers apply it) or "old" (offsets written
    straight to the brokers; only effective while no consumer of the group is online)."""

    method: str
    rows: list[ResetOffsetRow]


class Admin(InstanceUser):
    """`async with Admin(namesrv="127.0.0.1:9876") as admin: await admin.create_topic("T", 8, 8)`."""

    def __init__(self, namesrv: str | None = None, *, config: ClientConfig | None = None,
                 instance_name: str | None = None, timeout: float | None = None) -> None:
        config = config or ClientConfig()
        if namesrv is not None:
            config = config.with_(namesrv=namesrv)
        if timeout is not None:
            config = config.with_(request_timeout=timeout)
        name = instance_name or str(time.time_ns() // 1_000_000)
        self.config = config.with_(instance_name=name)
        self.client_id = f"{config.client_ip or local_ip(self.config.namesrv_addrs[0])}@{name}"
        self._instance: ClientInstance | None = None

    async def start(self) -> Admin:
        if self._instance is None:
            self._instance = await ClientInstance.acquire(self.client_id, self.config)
        return self

    async def stop(self) -> None:
        instance, self._instance = self._instance, None
        if instance is not None:
            await instance.release()

    def _what(self) -> str:
        return "the admin client"

    async def _namesrv(self, code: int, ext: dict[str, str] | None = None, *, operation: str,
                       timeout: float | None = None) -> Any:
        response = await self.instance.invoke_namesrv(request(code, ext), timeout)
        if response.code != ResponseCode.SUCCESS:
            raise response_error(response.code, response.remark, operation=operation, addr=NAMESRV)
        return response

    # -- cluster ------------------------------------------------------------------------------------
    async def cluster_info(self) -> ClusterInfo:
        response = await self._namesrv(RequestCode.GET_BROKER_CLUSTER_INFO, operation="cluster info")
        return ClusterInfo.decode(response.body)

    async def cluster_list(self) -> list[BrokerInfo]:
        info = await self.cluster_info()
        out = []
        for cluster, names in sorted(info.cluster_addr_table.items()):
            for name in sorted(names):
                bd = info.broker_addr_table.get(name)
                for bid, addr in sorted((bd.broker_addrs if bd else {}).items()):
                    out.append(BrokerInfo(cluster, name, bid, addr))
        runtimes = await asyncio.gather(*(self.broker_runtime_info(b.addr) for b in out), return_exceptions=True)
        for b, rt in zip(out, runtimes):
            if isinstance(rt, dict):
                b.runtime = rt
        return out

    async def broker_runtime_info(self, addr: str) -> dict[str, str]:
        response = await self.instance.api.call(addr, RequestCode.GET_BROKER_RUNTIME_INFO,
                                                operation="broker runtime info")
        return dict(KVTable.decode(response.body).table)

    async def _master_addrs(self, cluster: str | None = None) -> list[str]:
        info = await self.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            raise InvalidArgumentError(f"cluster {cluster!r} is unknown to the name server; known: "
                                       f"{sorted(info.cluster_addr_table)}")
        names = info.cluster_addr_table[cluster] if cluster else [n for ns in info.cluster_addr_table.values()
                                                                   for n in ns]
        addrs = [a for n in sorted(set(names)) if (bd := info.broker_addr_table.get(n))
                 and (a := bd.broker_addrs.get(routing.MASTER_ID))]
        if not addrs:
            raise NoRouteError(cluster or "*", f"no master broker registered in cluster {cluster or '(any)'}")
        return addrs

    # -- topics -------------------------------------------------------------------------------------
    async def create_topic(self, topic: str, read_queue_nums: int = 8, write_queue_nums: int = 8, *,
                           perm: int = 6, order: bool = False, cluster: str | None = None,
                           broker_addr: str | None = None, message_type: str | None = None) -> list[str]:
        """Create or update `topic` on one broker (`broker_addr`) or every master of `cluster` (default: of
        every cluster). `message_type`: the 5.x topic attribute message.type (NORMAL, FIFO, DELAY, TRANSACTION:
        what a 5.x producer may send to it), as `mqadmin updateTopic -a +message.type=FIFO`. Returns the broker
        addresses."""
        validate_topic(topic)
        addrs = [broker_addr] if broker_addr else await self._master_addrs(cluster)
        ext = CreateTopicRequestHeader(topic=topic, read_queue_nums=read_queue_nums, write_queue_nums=write_queue_nums,
                                       perm=perm, order=order, topic_sys_flag=0,
                                       attributes=f"+message.type={message_type}" if message_type else None).to_ext()
        for addr in addrs:
            await self.instance.api.call(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, ext,
                                         operation=f"create topic {topic!r}")
        self.instance.routes.pop(topic, None)
        return addrs

    update_topic = create_topic

    async def delete_topic(self, topic: str, *, cluster: str | None = None) -> list[str]:
        """Delete `topic` from the masters of `cluster` (default: every cluster) and from the name server."""
        validate_topic(topic)
        addrs = await self._master_addrs(cluster)
        for addr in addrs:
            await self.instance.api.call(addr, RequestCode.DELETE_TOPIC_IN_BROKER, TopicRequestHeader(topic=topic).to_ext(),
                                         operation=f"delete topic {topic!r}")
        ext = DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster).to_ext()
        await self._namesrv(RequestCode.DELETE_TOPIC_IN_NAMESRV, ext, operation=f"delete topic {topic!r}")
        self.instance.routes.pop(topic, None)
        return addrs

    async def topic_list(self) -> list[str]:
        response = await self._namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, operation="topic list")
        return sorted(TopicList.decode(response.body).topic_list)

    async def topic_route(self, topic: str) -> TopicRouteData:
        return await self.instance.topic_route(validate_topic(topic), refresh=True)

    async def topic_status(self, topic: str) -> dict[MessageQueue, TopicOffset]:
        """Per queue: min offset, max offset, store time of the last message."""
        route = await self.topic_route(topic)
        out: dict[MessageQueue, TopicOffset] = {}
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(routing.MASTER_ID)
            if addr is None:
                continue
            response = await self.instance.api.call(addr, RequestCode.GET_TOPIC_STATS_INFO,
                                                    TopicRequestHeader(topic=topic).to_ext(),
                                                    operation=f"status of topic {topic!r}")
            out.update(TopicStatsTable.decode(response.body).offset_table)
        return dict(sorted(out.items()))

    # -- consumers ----------------------------------------------------------------------------------
    async def _group_route(self, group: str) -> TopicRouteData:
        try:
            return await self.instance.topic_route(retry_topic(validate_name("group", group)), refresh=True)
        except NoRouteError:
            raise ConsumerNotOnlineError(ResponseCode.CONSUMER_NOT_ONLINE,
                                         f"consumer group {group!r} is unknown: its retry topic has no route",
                                         operation="consumer group lookup") from None

    async def consumer_connection(self, group: str) -> ConsumerConnection:
        """The group's online clients, their subscriptions, message model and ConsumeFromWhere."""
        route = await self._group_route(group)
        addrs = [a for bd in route.broker_datas if (a := bd.broker_addrs.get(routing.MASTER_ID))]
        response = await self.instance.api.call(addrs[0], RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                                {"consumerGroup": group},
                                                operation=f"connection list of group {group!r}")
        return ConsumerConnection.decode(response.body)

    async def consumer_progress(self, group: str, topic: str | None = None) -> ConsumeStats:
        """ConsumeStats merged over the brokers: per queue broker offset, consumer offset, last consume time;
        `total_diff()` is the lag. `ConsumerNotOnlineError` when no broker has progress for the group."""
        route = await self._group_route(group)
        merged = ConsumeStats(consume_tps=0.0, offset_table={})
        ext = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic).to_ext()
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(routing.MASTER_ID)
            if addr is None:
                continue
            response = await self.instance.api.call(addr, RequestCode.GET_CONSUME_STATS, ext,
                                                    operation=f"progress of group {group!r}",
                                                    timeout=3 * self.config.request_timeout)
            stats = ConsumeStats.decode(response.body)
            merged.consume_tps += stats.consume_tps
            merged.offset_table.update(stats.offset_table)
        if not merged.offset_table:
            raise ConsumerNotOnlineError(ResponseCode.CONSUMER_NOT_ONLINE,
                                         "Not found the consumer group consume stats, because return offset table "
                                         "is empty, maybe the consumer not consume any message",
                                         operation=f"progress of group {group!r}")
        merged.offset_table = dict(sorted(merged.offset_table.items()))
        return merged

    async def consumer_groups(self) -> list[str]:
        """Groups that have a retry topic at the name server (as mqadmin consumerProgress without -g)."""
        return sorted(t[len(RETRY_GROUP_TOPIC_PREFIX):] for t in await self.topic_list()
                      if t.startswith(RETRY_GROUP_TOPIC_PREFIX))

    async def delete_subscription_group(self, group: str, *, remove_offset: bool = True,
                                        cluster: str | None = None) -> list[str]:
        """DELETE_SUBSCRIPTIONGROUP on the masters of `cluster` (default: every cluster): the group's
        subscription config and, with `remove_offset`, its committed offsets. Returns the brokers asked."""
        addrs = await self._master_addrs(cluster)
        ext = DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=remove_offset).to_ext()
        for addr in addrs:
            await self.instance.api.call(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, ext,
                                         operation=f"delete subscription group {group!r}")
        return addrs

    async def update_subscription_group(self, group: str, *, retry_max_times: int | None = None,
                                        consume_message_orderly: bool | None = None, consume_enable: bool | None = None,
                                        cluster: str | None = None, broker_addr: str | None = None,
                                        **fields: Any) -> list[str]:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on one broker (`broker_addr`) or the masters of `cluster` (default:
        every cluster), as `mqadmin updateSubGroup`: the group's config is Java's defaults with the given fields
        changed (a field not given goes back to its default, as with mqadmin). `retry_max_times`: deliveries
        before the DLQ minus one; `consume_message_orderly`: a FIFO group for 5.x clients; `fields`: the other
        SubscriptionGroupConfig fields (consume_broadcast_enable, retry_queue_nums, ...). Returns the brokers."""
        validate_name("consumer group", group)
        known = set(SubscriptionGroupConfig.__struct_fields__) - {"group_name"}
        unknown = set(fields) - known
        if unknown:
            raise InvalidArgumentError(f"unknown subscription group field(s) {sorted(unknown)}; known: {sorted(known)}")
        changes = {k: v for k, v in (("retry_max_times", retry_max_times), ("consume_enable", consume_enable),
                                     ("consume_message_orderly", consume_message_orderly), *fields.items())
                   if v is not None}
        cfg = msgspec.structs.replace(SubscriptionGroupConfig(group_name=group), **changes)
        addrs = [broker_addr] if broker_addr else await self._master_addrs(cluster)
        for addr in addrs:
            await self.instance.api.call(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None,
                                         body=cfg.encode(), operation=f"update subscription group {group!r}")
        return addrs

    # -- entities -----------------------------------------------------------------------------------
    async def export_entities(self, cluster: str | None = None, kv_namespaces: Sequence[str] = ("ORDER_TOPIC_CONFIG",)
                              ) -> dict[str, Any]:
        """The user topics and consumer groups of the masters of `cluster` (default: every cluster) and the name
        server's KV settings of `kv_namespaces`, as an entities file's mapping (protocol/entities.py; RocketMQ's own
        topics and groups left out); what `serve --entities` reads back."""
        info = await self.cluster_info()
        addrs = await self._master_addrs(cluster)
        added = {t for name, bd in info.broker_addr_table.items() for t in broker_system_topics(bd.cluster, name)}
        topics: dict[str, TopicConfig] = {}
        groups: dict[str, SubscriptionGroupConfig] = {}
        for addr in addrs:
            response = await self.instance.api.call(addr, RequestCode.GET_ALL_TOPIC_CONFIG,
                                                    operation="export of the topics")
            for name, tc in TopicConfigSerializeWrapper.decode(response.body).topic_config_table.items():
                if not (is_system_topic(name, added) or name.startswith((RETRY_GROUP_TOPIC_PREFIX,
                                                                        DLQ_GROUP_TOPIC_PREFIX))):
                    topics.setdefault(name, tc)
            response = await self.instance.api.call(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
                                                    operation="export of the consumer groups")
            for name, g in SubscriptionGroupWrapper.decode(response.body).subscription_group_table.items():
                if not is_system_group(name) and name not in TOOL_GROUPS:
                    groups.setdefault(name, g)
        kv = []
        for namespace in kv_namespaces:
            ext = GetKVListByNamespaceRequestHeader(namespace=namespace).to_ext()
            response = await self.instance.invoke_namesrv(request(RequestCode.GET_KVLIST_BY_NAMESPACE, ext))
            if response.code == ResponseCode.SUCCESS:
                kv += [KvSetting(namespace, k, v) for k, v in sorted(KVTable.decode(response.body).table.items())]
            elif response.code != ResponseCode.QUERY_NOT_FOUND:  # QUERY_NOT_FOUND: an empty namespace
                raise response_error(response.code, response.remark, operation=f"KV list of {namespace}",
                                     addr=NAMESRV)
        return entities_document(list(topics.values()), list(groups.values()), kv)

    # -- reset offsets ------------------------------------------------------------------------------
    async def reset_offset_by_timestamp(self, group: str, topic: str, timestamp: int, *, force: bool = True,
                                        cpp: bool = False) -> ResetOffsetResult:
        """mqadmin resetOffsetByTime (§12.3). `timestamp` in ms, -1 = now (the max offset). With `force`
        False an offset only moves backwards. Asks every broker of the topic (INVOKE_BROKER_TO_RESET_OFFSET),
        which tells the group's online consumers (and, with server-side reset, applies it at their next pull);
        `cpp` asks for the C++ body form for every client (mqadmin -c). When a broker answers
        CONSUMER_NOT_ONLINE, falls back to the old method, as mqadmin does: the new offsets are written straight
        to the brokers. Any other error fails the call, e.g. a group the broker does not know (a typo: no
        subscription group, offset or consumer of it), which this emulator and 4.9.8 refuse."""
        validate_name("group", group)
        route = await self.topic_route(topic)
        rows: list[ResetOffsetRow] = []
        ext = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp, is_force=force).to_ext()
        for bd in sorted(route.broker_datas, key=lambda b: b.broker_name):
            addr = bd.broker_addrs.get(routing.MASTER_ID) or next(iter(bd.broker_addrs.values()), None)
            if addr is None:
                continue
            table = await self._invoke_reset(addr, group, ext, cpp)
            if table is None:  # CONSUMER_NOT_ONLINE: mqadmin's rule, only then the old method
                return ResetOffsetResult("old", await self._reset_old(group, topic, timestamp, force, route))
            rows.extend(ResetOffsetRow(mq, off) for mq, off in sorted(table.items()))
        return ResetOffsetResult("broker", rows)

    async def _invoke_reset(self, addr: str, group: str, ext: dict[str, str], cpp: bool = False
                            ) -> dict[MessageQueue, int] | None:
        """INVOKE_BROKER_TO_RESET_OFFSET: the broker's table, None for CONSUMER_NOT_ONLINE; any other error
        raises."""
        cmd = request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext)
        if cpp:
            cmd.language = "CPP"
        response = await self.instance.remoting.invoke(addr, cmd, self.config.request_timeout)
        if response.code == ResponseCode.CONSUMER_NOT_ONLINE:
            return None
        if response.code != ResponseCode.SUCCESS:
            raise response_error(response.code, response.remark, operation=f"reset offset of {group!r}", addr=addr)
        return ResetOffsetBody.decode(response.body).offset_table if response.body else {}

    async def reset_offset(self, group: str, topic: str, offset: int, *, queue_id: int | None = None
                           ) -> ResetOffsetResult:
        """Reset a group's offset of one queue (`queue_id`) or of every queue of the topic to `offset`, on every
        broker of the topic (INVOKE_BROKER_TO_RESET_OFFSET with an explicit offset, as 5.x's
        resetOffsetByQueueId). The broker checks the offset against each queue's [min, max]. With no consumer
        online and no server-side reset on the broker, the offsets are written straight to it."""
        validate_name("group", group)
        if offset < 0:
            raise InvalidArgumentError(f"offset {offset}: must be 0 or more")
        route = await self.topic_route(topic)
        rows: list[ResetOffsetRow] = []
        ext = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=-1, is_force=True, queue_id=queue_id,
                                       offset=offset).to_ext()
        for bd in sorted(route.broker_datas, key=lambda b: b.broker_name):
            addr = bd.broker_addrs.get(routing.MASTER_ID)
            if addr is None:
                continue
            table = await self._invoke_reset(addr, group, ext)
            if table is None:
                queues = [queue_id] if queue_id is not None else range(next(
                    (q.write_queue_nums for q in route.queue_datas if q.broker_name == bd.broker_name), 0))
                for q in queues:
                    mq = MessageQueue(topic, bd.broker_name, q)
                    await self.instance.api.update_consumer_offset(addr, group, mq, offset)
                    rows.append(ResetOffsetRow(mq, offset))
                continue
            rows.extend(ResetOffsetRow(mq, off) for mq, off in sorted(table.items()))
        return ResetOffsetResult("broker", rows)

    async def get_consumer_status(self, group: str, topic: str, client_id: str | None = None
                                  ) -> dict[str, dict[MessageQueue, int]]:
        """Each online client's in-memory offsets of the topic, by client id, merged over the topic's brokers
        (INVOKE_BROKER_TO_GET_CONSUMER_STATUS, relayed by each broker to the clients, as mqadmin's
        getConsumerStatus). Clients that do not answer (the C++ client never does) are left out."""
        route = await self.topic_route(topic)
        ext = GetConsumerStatusRequestHeader(topic=topic, group=group, client_addr=client_id).to_ext()
        merged: dict[str, dict[MessageQueue, int]] = {}
        for bd in sorted(route.broker_datas, key=lambda b: b.broker_name):
            addr = bd.broker_addrs.get(routing.MASTER_ID)
            if addr is None:
                continue
            response = await self.instance.api.call(addr, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, ext,
                                                    operation=f"status of group {group!r}",
                                                    timeout=self.config.request_timeout + 6)
            for cid, table in GetConsumerStatusBody.decode(response.body).consumer_table.items():
                merged.setdefault(cid, {}).update(table)
        return {cid: dict(sorted(t.items())) for cid, t in sorted(merged.items())}

    async def expire_now(self, topic: str | None = None) -> dict[str, int]:
        """Retention on demand (the emulator's EXPIRE_FILES_NOW): every broker (of `topic`, or of every
        cluster) closes its current commitlog segment and deletes all before it, so every message stored so
        far expires and each queue's min offset moves to its max. Returns broker address -> files deleted.
        A real broker answers REQUEST_CODE_NOT_SUPPORTED."""
        if topic is not None:
            route = await self.topic_route(topic)
            addrs = sorted(a for bd in route.broker_datas if (a := bd.broker_addrs.get(routing.MASTER_ID)))
        else:
            addrs = await self._master_addrs()
        ext = ExpireFilesNowRequestHeader(topic=topic).to_ext()
        out = {}
        for addr in addrs:
            response = await self.instance.api.call(addr, EmulatorRequestCode.EXPIRE_FILES_NOW, ext,
                                                    operation="expire files now")
            out[addr] = ExpireFilesNowResponseHeader.from_ext(response.ext_fields).deleted_files
        return out

    # -- offsets between brokers (consumerOffset.json's format) ---------------------------------------
    async def _the_broker(self, broker_addr: str | None) -> str:
        if broker_addr:
            return broker_addr
        addrs = await self._master_addrs()
        if len(addrs) > 1:
            raise InvalidArgumentError(f"several brokers ({', '.join(addrs)}): name one with -b; a consumerOffset.json "
                                       f"holds the offsets of one broker")
        return addrs[0]

    async def export_offsets(self, group: str, topic: str | None = None, broker_addr: str | None = None, *,
                             known: bool = False) -> ConsumerOffsetSerializeWrapper:
        """The group's committed offsets on one broker, as that broker's consumerOffset.json would hold them
        (GET_ALL_CONSUMER_OFFSET, filtered to `topic@group` keys, and `topic@group@broadcast` ones: a broadcasting
        group's offsets, as 5.x and this emulator keep them). With `known`, a group with no offsets and no retry
        topic is refused as unknown (ConsumerNotOnlineError, as `consumer_connection` and the others raise);
        without, its export is empty."""
        addr = await self._the_broker(broker_addr)
        response = await self.instance.api.call(addr, RequestCode.GET_ALL_CONSUMER_OFFSET,
                                                operation="read every consumer offset")
        table = ConsumerOffsetSerializeWrapper.decode(response.body).offset_table
        group = validate_name('consumer group', group)
        keys = [k for k in table if (parsed := parse_offset_key(k)) is not None and parsed[1] == group
                and (topic is None or parsed[0] == topic)]
        if known and not keys and group not in {p[1] for k in table if (p := parse_offset_key(k)) is not None}:
            await self._group_route(group)  # no offset at all: an unknown group is refused, as other commands do
        return ConsumerOffsetSerializeWrapper(offset_table={k: dict(sorted(table[k].items())) for k in sorted(keys)})

    async def import_offsets(self, offsets: ConsumerOffsetSerializeWrapper, group: str | None = None,
                             broker_addr: str | None = None) -> int:
        """Write the offsets of a consumerOffset.json (all its groups, or only `group`) to one broker with
        acknowledged UPDATE_CONSUMER_OFFSETs, as mqadmin's cloneGroupOffset does: stop the group's consumers
        first, or their next commit overwrites the imported offsets. A broadcasting group's `topic@group@broadcast`
        entry is written as the group `group@broadcast`, which stores it under the same key. Returns the number of
        queues written."""
        addr = await self._the_broker(broker_addr)
        written = 0
        for key, queues in sorted(offsets.offset_table.items()):
            parsed = parse_offset_key(key)
            if parsed is None or (group is not None and parsed[1] != group):
                continue  # not a topic@group key, or another group
            topic, key_group, broadcast = parsed
            stored_as = key_group + BROADCAST_OFFSET_SUFFIX if broadcast else key_group
            for queue_id, offset in sorted(queues.items()):
                await self.instance.api.update_consumer_offset(addr, stored_as, MessageQueue(topic, "", queue_id),
                                                               offset)
                written += 1
        return written

    async def drop_connections(self) -> dict[str, int]:
        """A network fault on demand (the emulator's DROP_CONNECTIONS): every broker closes all its client
        connections but this admin's; clients must reconnect. Returns broker address -> connections closed.
        A real broker answers REQUEST_CODE_NOT_SUPPORTED."""
        out = {}
        for addr in await self._master_addrs():
            response = await self.instance.api.call(addr, EmulatorRequestCode.DROP_CONNECTIONS,
                                                    operation="drop connections")
            out[addr] = DropConnectionsResponseHeader.from_ext(response.ext_fields).dropped_connections
        return out

    async def stop_broker(self, broker_name: str, route_delay: float = 0.0) -> str:
        """Take one broker of an emulator running several (`serve --brokers N`) away: a clean stop; the name server
        drops its routes at once or `route_delay` seconds later. Emulator only (a real name server answers
        REQUEST_CODE_NOT_SUPPORTED)."""
        ext = BrokerLifecycleRequestHeader(broker_name=broker_name,
                                           route_delay_millis=int(route_delay * 1000)).to_ext()
        response = await self._namesrv(EmulatorRequestCode.STOP_BROKER, ext, operation=f"stop broker {broker_name}")
        self.instance.routes.clear()
        return response.remark or f"{broker_name} stopped"

    async def kill_broker(self, broker_name: str) -> str:
        """As a crash: `broker-a` (a master) or `broker-a/1` (its slave) goes without a clean stop (with `serve
        --processes`: SIGKILL); its routes go at once. Emulator only; `start_broker` brings it back."""
        ext = BrokerLifecycleRequestHeader(broker_name=broker_name).to_ext()
        response = await self._namesrv(EmulatorRequestCode.KILL_BROKER, ext, operation=f"kill broker {broker_name}")
        self.instance.routes.clear()
        return response.remark or f"{broker_name} killed"

    async def pause_broker(self, broker_name: str, paused: bool = True) -> str:
        """As SIGSTOP (`paused`) or SIGCONT: its connections stay open, it answers nothing. Emulator only."""
        ext = BrokerLifecycleRequestHeader(broker_name=broker_name, paused=paused).to_ext()
        response = await self._namesrv(EmulatorRequestCode.PAUSE_BROKER, ext,
                                       operation=f"{'pause' if paused else 'resume'} broker {broker_name}")
        return response.remark or f"{broker_name} {'paused' if paused else 'resumed'}"

    async def advance_time(self, seconds: float) -> dict[str, int]:
        """Fast-forward the emulator's broker clock by `seconds`: what is due by then happens now (delayed
        messages and retries, POP invisible times, transaction check-backs, retention, held pulls). Emulator only.
        Returns how far ahead the clock is and what happened."""
        if seconds < 0:
            raise InvalidArgumentError(f"time only moves forward: cannot advance by {seconds} s")
        ext = AdvanceTimeRequestHeader(millis=int(round(seconds * 1000))).to_ext()
        response = await self._namesrv(EmulatorRequestCode.ADVANCE_TIME, ext, operation=f"advance time by {seconds} s")
        h = AdvanceTimeResponseHeader.from_ext(response.ext_fields)
        return {"offsetMillis": h.offset_millis, "delivered": h.delivered, "revived": h.revived,
                "pullsAnswered": h.pulls_answered, "filesDeleted": h.files_deleted}

    async def start_broker(self, broker_name: str) -> str:
        """Bring a broker taken away with `stop_broker` back (same store and ports)."""
        ext = BrokerLifecycleRequestHeader(broker_name=broker_name).to_ext()
        # (a broker process of `serve --processes` starts, recovers its store and registers: seconds, not the
        # request timeout's 3)
        response = await self._namesrv(EmulatorRequestCode.START_BROKER, ext, operation=f"start broker {broker_name}",
                                       timeout=max(60.0, self.instance.config.request_timeout))
        self.instance.routes.clear()
        return response.remark or f"{broker_name} started"

    async def _reset_old(self, group: str, topic: str, timestamp: int, force: bool,
                         route: TopicRouteData) -> list[ResetOffsetRow]:
        api = self.instance.api
        rows = []
        for bd in sorted(route.broker_datas, key=lambda b: b.broker_name):
            addr = bd.broker_addrs.get(routing.MASTER_ID)
            if addr is None:
                continue
            response = await api.call(addr, RequestCode.GET_CONSUME_STATS,
                                      GetConsumeStatsRequestHeader(consumer_group=group).to_ext(),
                                      operation=f"progress of group {group!r}")
            table = {mq: w for mq, w in ConsumeStats.decode(response.body).offset_table.items() if mq.topic == topic}
            if not table:
                response = await api.call(addr, RequestCode.GET_TOPIC_STATS_INFO, TopicRequestHeader(topic=topic).to_ext(),
                                          operation=f"status of topic {topic!r}")
                for mq, t in TopicStatsTable.decode(response.body).offset_table.items():
                    table[mq] = OffsetWrapper(broker_offset=t.max_offset, consumer_offset=0)
            for mq, w in sorted(table.items()):
                found = await (api.max_offset(addr, mq) if timestamp == -1 else api.search_offset(addr, mq, timestamp))
                target = found if force or found <= w.consumer_offset else w.consumer_offset
                await api.update_consumer_offset(addr, group, mq, target)
                rows.append(ResetOffsetRow(mq, target, w.broker_offset, w.consumer_offset, found))
        return rows

    # -- messages -----------------------------------------------------------------------------------
    async def query_message_by_id(self, msg_id: str, topic: str | None = None) -> ReceivedMessage:
        """A message by its offset id (the broker's msgId) or, with `topic`, by its unique id (UNIQ_KEY,
        what producers return as `msg_id`)."""
        if topic is not None:
            found = await self._query(topic, msg_id, 32, 0, MAX_TIMESTAMP, unique=True)
            for m in found:
                if m.msg_id == msg_id or m.offset_msg_id == msg_id:
                    return m
        try:
            ip, port, offset = decode_message_id(msg_id)
        except ProtocolError as exc:
            raise InvalidArgumentError(f"{msg_id!r} is not a message id: {exc}") from None
        addr = f"{ip}:{port}"
        info = await self.cluster_info()
        names = {a: bd.broker_name for bd in info.broker_addr_table.values() for a in bd.broker_addrs.values()}
        if addr not in names:
            hint = "" if topic else "; if it is a client id (UNIQ_KEY), pass its topic too"
            raise BrokerResponseError(ResponseCode.QUERY_NOT_FOUND,
                                      f"{msg_id} is not an offset message id of a known broker{hint}",
                                      operation="query message by id")
        response = await self.instance.api.call(addr, RequestCode.VIEW_MESSAGE_BY_ID,
                                                ViewMessageRequestHeader(offset=offset).to_ext(),
                                                operation=f"view message {msg_id}")
        msgs = decode_received(response.body, MessageQueue("", names[addr], 0))
        if not msgs:
            raise BrokerResponseError(ResponseCode.QUERY_NOT_FOUND, f"no message at {msg_id}",
                                      operation="query message by id", addr=addr)
        m = msgs[0]
        m.message_queue = MessageQueue(m.topic, names[addr], m.queue_id)
        return m

    async def query_message_by_key(self, topic: str, key: str, max_num: int = 64, begin: int = 0,
                                   end: int | None = None) -> list[ReceivedMessage]:
        """Messages of `topic` whose KEYS contain `key`, oldest first."""
        return await self._query(topic, key, max_num, begin, MAX_TIMESTAMP if end is None else end, unique=False)

    async def _query(self, topic: str, key: str, max_num: int, begin: int, end: int, *,
                     unique: bool) -> list[ReceivedMessage]:
        route = await self.topic_route(topic)
        out: list[ReceivedMessage] = []
        ext = QueryMessageRequestHeader(topic=topic, key=key, max_num=max_num, begin_timestamp=begin,
                                        end_timestamp=end, unique_key_query=True if unique else None).to_ext()
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(routing.MASTER_ID) or next(iter(bd.broker_addrs.values()), None)
            if addr is None:
                continue
            response = await self.instance.api.call(addr, RequestCode.QUERY_MESSAGE, ext,
                                                    operation=f"query messages of {topic!r} by key {key!r}",
                                                    ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND))
            if response.code != ResponseCode.SUCCESS:
                continue
            for m in decode_received(response.body, MessageQueue(topic, bd.broker_name, 0)):
                m.message_queue = MessageQueue(m.topic, bd.broker_name, m.queue_id)
                if unique or key in (m.keys or "").split(" "):
                    out.append(m)
        out.sort(key=lambda m: (m.store_timestamp, m.queue_offset))
        return out[:max_num]
