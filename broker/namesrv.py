"""The name server (reference §11): route registry plus its request handlers.

Brokers in this process register by calling `RouteInfoManager.register_broker` directly, so one name server
can serve several brokers (broker-a, broker-b). An external broker may also register over TCP with
REGISTER_BROKER; such a registration expires after 120 s without renewal, like the real name server's.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path


from rocketmq_emulator.protocol import BrokerError, PermName, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import (DataVersion, RegisterBrokerBody, TopicConfig,
                                                     TopicConfigSerializeWrapper)
from rocketmq_emulator.protocol.bodies import (BrokerData, ClusterInfo, KVTable, QueueData, TopicList,
                                               TopicRouteData)
from rocketmq_emulator.protocol.transport import PortUnavailable
from rocketmq_emulator.protocol.headers import (BrokerIdentityHeader, BrokerNameRequestHeader,
                                                DeleteTopicFromNamesrvRequestHeader, GetKVListByNamespaceRequestHeader,
                                                GetRouteInfoRequestHeader, GetTopicsByClusterRequestHeader,
                                                KVConfigRequestHeader, PutKVConfigRequestHeader,
                                                RegisterBrokerRequestHeader, GetKVConfigResponseHeader,
                                                QueryDataVersionResponseHeader, WipeWritePermOfBrokerResponseHeader,
                                                AddWritePermOfBrokerResponseHeader, RegisterBrokerResponseHeader)
from rocketmq_emulator.protocol.message import java_hash_set_order
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection, RemotingServer

from .core.remarks import FAQ_SUFFIX
from .core.runtime_config import NamesrvConfiguration
from .namesrv_config import NamesrvConfigProcessor, load_kv_config, persist_kv_config


log = logging.getLogger("rocketmq_emulator.namesrv")

BROKER_CHANNEL_EXPIRED_S = 120.0
#: the initial size of 4.9.8's RouteInfoManager.topicQueueTable (a HashMap): topic lists are built in its order
TOPIC_TABLE_CAPACITY = 1024


@dataclass
class BrokerLiveInfo:
    last_update: float
    data_version: DataVersion
    connection: RemotingConnection | None = None  # None: a broker living in this process
    ha_server_addr: str = ""


@dataclass
class RouteInfoManager:
    topic_queue_table: dict[str, dict[str, QueueData]] = field(default_factory=dict)
    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)
    broker_live_table: dict[str, BrokerLiveInfo] = field(default_factory=dict)
    kv_config: dict[str, dict[str, str]] = field(default_factory=dict)

    def register_broker(self, cluster: str, broker_name: str, broker_addr: str, broker_id: int,
                        topics: dict[str, TopicConfig], data_version: DataVersion,
                        connection: RemotingConnection | None = None, ha_server_addr: str = "") -> None:
        self.cluster_addr_table.setdefault(cluster, set()).add(broker_name)
        data = self.broker_addr_table.get(broker_name)
        first = data is None
        if data is None:
            data = self.broker_addr_table[broker_name] = BrokerData(cluster=cluster, broker_name=broker_name)
        for bid, addr in list(data.broker_addrs.items()):
            if addr == broker_addr and bid != broker_id:
                del data.broker_addrs[bid]
        first = first or broker_addr not in data.broker_addrs.values()
        data.broker_addrs[broker_id] = broker_addr
        previous = self.broker_live_table.get(broker_addr)
        changed = first or previous is None or previous.data_version != data_version
        self.broker_live_table[broker_addr] = BrokerLiveInfo(time.monotonic(), data_version, connection, ha_server_addr)
        if broker_id == 0 and changed:
            for name, tc in topics.items():
                self.topic_queue_table.setdefault(name, {})[broker_name] = QueueData(
                    broker_name=broker_name, read_queue_nums=tc.read_queue_nums,
                    write_queue_nums=tc.write_queue_nums, perm=tc.perm, topic_sys_flag=tc.topic_sys_flag)
            # 4.9.8 (and 5.x by default) keep the routes of topics a registration no longer lists: a topic deleted
            # on the broker stays routed until DELETE_TOPIC_IN_NAMESRV (mqadmin deleteTopic sends both)

    def master_of(self, broker_name: str, broker_id: int) -> tuple[str | None, str | None]:
        """What a registration's answer tells a slave (4.9.8): its master's address and HA address, when the
        master is registered; a master is told nothing."""
        data = self.broker_addr_table.get(broker_name)
        master = data.broker_addrs.get(0) if data is not None and broker_id != 0 else None
        live = self.broker_live_table.get(master) if master else None
        if live is None:
            return None, None
        return master, live.ha_server_addr or None

    def _remove_queue_data(self, topic: str, broker_name: str) -> None:
        queues = self.topic_queue_table.get(topic)
        if queues is not None:
            queues.pop(broker_name, None)
            if not queues:
                del self.topic_queue_table[topic]

    def unregister_broker(self, cluster: str, broker_name: str, broker_addr: str, broker_id: int) -> None:
        self.broker_live_table.pop(broker_addr, None)
        data = self.broker_addr_table.get(broker_name)
        if data is not None:
            if data.broker_addrs.get(broker_id) == broker_addr:
                del data.broker_addrs[broker_id]
            if not data.broker_addrs:
                del self.broker_addr_table[broker_name]
                names = self.cluster_addr_table.get(cluster)
                if names is not None:
                    names.discard(broker_name)
                    if not names:
                        del self.cluster_addr_table[cluster]
                for topic in [t for t, qd in self.topic_queue_table.items() if broker_name in qd]:
                    self._remove_queue_data(topic, broker_name)

    def pick_route(self, topic: str) -> TopicRouteData | None:
        queues = self.topic_queue_table.get(topic)
        if not queues:
            return None
        brokers = [self.broker_addr_table[b] for b in sorted(queues) if b in self.broker_addr_table]
        if not brokers:
            return None
        return TopicRouteData(
            queue_datas=[queues[b.broker_name] for b in brokers],
            broker_datas=[BrokerData(cluster=b.cluster, broker_name=b.broker_name, broker_addrs=dict(b.broker_addrs))
                          for b in brokers])

    def scan_not_active_brokers(self, now: float | None = None) -> list[str]:
        """Drop TCP-registered brokers silent for 120 s; in-process brokers never expire."""
        now = time.monotonic() if now is None else now
        gone = []
        for addr, info in list(self.broker_live_table.items()):
            if info.connection is not None and now - info.last_update > BROKER_CHANNEL_EXPIRED_S:
                gone.append(addr)
                self._forget_address(addr)
        return gone

    def connection_closed(self, conn: RemotingConnection) -> list[str]:
        """A broker's connection closed (its process ended): its routes go at once, as 4.9.8's onChannelDestroy."""
        gone = [addr for addr, info in self.broker_live_table.items() if info.connection is conn]
        for addr in gone:
            self._forget_address(addr)
        return gone

    def _forget_address(self, addr: str) -> None:
        for name, data in list(self.broker_addr_table.items()):
            for bid, a in list(data.broker_addrs.items()):
                if a == addr:
                    self.unregister_broker(data.cluster, name, addr, bid)
        self.broker_live_table.pop(addr, None)

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(broker_addr_table=dict(self.broker_addr_table),
                           cluster_addr_table={c: java_hash_set_order(sorted(n))  # a HashSet<String> on 4.9.8
                                               for c, n in self.cluster_addr_table.items()})

    def set_broker_write_perm(self, broker_name: str, writable: bool) -> int:
        count = 0
        for queues in self.topic_queue_table.values():
            qd = queues.get(broker_name)
            if qd is not None:
                qd.perm = int(qd.perm | PermName.WRITE) if writable else int(qd.perm & ~PermName.WRITE)
                count += 1
        return count


class NameServer:
    """The name-server listener and its dispatch table."""

    def __init__(self, host: str = "127.0.0.1", port: int = 9876, config_dir: Path | None = None) -> None:
        """`config_dir`: where getNamesrvConfig/updateNamesrvConfig keep `namesrv.properties` (None: in memory)."""
        self.routes = RouteInfoManager()
        self.configuration = NamesrvConfiguration(config_dir, lambda: self.port)
        self.configuration.load_updates()
        self.routes.kv_config.update(load_kv_config(config_dir))
        self.table = self._build_table()
        NamesrvConfigProcessor(self.configuration).register(self.table)
        self.server = RemotingServer("namesrv", self.table, host, port)
        self.server.on_connection_lost.append(self._connection_closed)
        self._scan_task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        try:
            await self.server.start()
        except socket.gaierror:  # --host names no address here: the command line says so
            raise
        except OSError as exc:
            raise PortUnavailable("namesrv", "the name server", self.server.host, self.server.port, exc) from None
        self._scan_task = asyncio.get_running_loop().create_task(self._scan_loop())

    async def stop(self) -> None:
        if self._scan_task is not None:
            self._scan_task.cancel()
        await self.server.stop()

    async def __aenter__(self) -> NameServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _connection_closed(self, conn: RemotingConnection) -> None:
        for addr in self.routes.connection_closed(conn):
            log.info("broker %s: its connection closed; its routes are removed", addr)

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(10)
            for addr in self.routes.scan_not_active_brokers():
                log.warning("broker %s expired: no registration for %.0f s", addr, BROKER_CHANNEL_EXPIRED_S)

    # -- handlers -----------------------------------------------------------------------------------
    def _build_table(self) -> DispatchTable:
        t = DispatchTable("namesrv")
        t.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, self.get_route_info)
        t.register(RequestCode.GET_BROKER_CLUSTER_INFO, self.get_cluster_info)
        t.register(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, self.get_all_topics)
        t.register(RequestCode.GET_TOPICS_BY_CLUSTER, self.get_topics_by_cluster)
        t.register(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, self.get_system_topic_list)
        t.register([RequestCode.GET_UNIT_TOPIC_LIST,
                    RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST],
                   self.get_empty_topic_list)
        t.register(RequestCode.DELETE_TOPIC_IN_NAMESRV, self.delete_topic)
        t.register(RequestCode.PUT_KV_CONFIG, self.put_kv)
        t.register(RequestCode.GET_KV_CONFIG, self.get_kv)
        t.register(RequestCode.DELETE_KV_CONFIG, self.delete_kv)
        t.register(RequestCode.GET_KVLIST_BY_NAMESPACE, self.get_kv_list)
        t.register(RequestCode.REGISTER_BROKER, self.register_broker)
        t.register(RequestCode.UNREGISTER_BROKER, self.unregister_broker)
        t.register(RequestCode.QUERY_DATA_VERSION, self.query_data_version)
        t.register(RequestCode.WIPE_WRITE_PERM_OF_BROKER, self.wipe_write_perm)
        t.register(RequestCode.ADD_WRITE_PERM_OF_BROKER, self.add_write_perm)
        return t

    def get_route_info(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = GetRouteInfoRequestHeader.from_ext(req.ext_fields)
        route = self.routes.pick_route(h.topic) if h.topic is not None else None
        if route is None:
            return RemotingCommand.response_to(
                req, ResponseCode.TOPIC_NOT_EXIST, "No topic route info in name server for the topic: "
                f"{'null' if h.topic is None else h.topic}" + FAQ_SUFFIX)
        orders = self.routes.kv_config.get("ORDER_TOPIC_CONFIG", {})
        if h.topic in orders and self.configuration.order_message_enable:  # 4.9.8: only with orderMessageEnable
            route.order_topic_conf = orders[h.topic]
        standard = req.version >= 401 or bool(h.accept_standard_json_only)
        return RemotingCommand.response_to(req, body=route.encode(standard_json=standard))

    def get_cluster_info(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        return RemotingCommand.response_to(req, body=self.routes.cluster_info().encode())

    def get_all_topics(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        topics = java_hash_set_order(self.routes.topic_queue_table, TOPIC_TABLE_CAPACITY)
        return RemotingCommand.response_to(req, body=TopicList(topic_list=topics).encode())

    def get_topics_by_cluster(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        cluster = GetTopicsByClusterRequestHeader.from_ext(req.ext_fields).cluster
        names = self.routes.cluster_addr_table.get(cluster, set())
        topics = java_hash_set_order((t for t, qd in self.routes.topic_queue_table.items() if names & set(qd)),
                                     TOPIC_TABLE_CAPACITY)
        return RemotingCommand.response_to(req, body=TopicList(topic_list=topics).encode())

    def get_system_topic_list(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """4.9.8's "system topics" of the name server: each cluster's name and its brokers' names, and the address
        of a broker (the first of the first cluster)."""
        names: list[str] = []
        addr = None
        for cluster, brokers in self.routes.cluster_addr_table.items():
            names.append(cluster)
            for name in brokers:
                names.append(name)
                data = self.routes.broker_addr_table.get(name)
                if addr is None and data is not None and data.broker_addrs:
                    addr = next(iter(data.broker_addrs.values()))
        return RemotingCommand.response_to(req, body=TopicList(topic_list=java_hash_set_order(names),
                                                               broker_addr=addr).encode())

    def get_empty_topic_list(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        return RemotingCommand.response_to(req, body=TopicList().encode())

    def delete_topic(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = DeleteTopicFromNamesrvRequestHeader.from_ext(req.ext_fields)
        if h.cluster_name:
            for name in self.routes.cluster_addr_table.get(h.cluster_name, set()):
                self.routes._remove_queue_data(h.topic, name)
        else:
            self.routes.topic_queue_table.pop(h.topic, None)
        return RemotingCommand.response_to(req)

    def put_kv(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = PutKVConfigRequestHeader.from_ext(req.ext_fields)
        self.set_kv(h.namespace, h.key, h.value)
        return RemotingCommand.response_to(req)

    def set_kv(self, namespace: str, key: str, value: str) -> bool:
        """PUT_KV_CONFIG's effect (also the entities file's KV settings); False when it was set so already."""
        table = self.routes.kv_config.setdefault(namespace, {})
        if table.get(key) == value:
            return False
        table[key] = value
        persist_kv_config(self.configuration.config_dir, self.routes.kv_config)
        return True

    def get_kv(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = KVConfigRequestHeader.from_ext(req.ext_fields)
        value = self.routes.kv_config.get(h.namespace, {}).get(h.key)
        if value is None:
            return RemotingCommand.response_to(req, ResponseCode.QUERY_NOT_FOUND,
                                               f"No config item, Namespace: {h.namespace} Key: {h.key}")
        return RemotingCommand.response_to(req, ext_fields=GetKVConfigResponseHeader(value=value).to_ext())

    def delete_kv(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = KVConfigRequestHeader.from_ext(req.ext_fields)
        if self.routes.kv_config.get(h.namespace, {}).pop(h.key, None) is not None:
            persist_kv_config(self.configuration.config_dir, self.routes.kv_config)
        return RemotingCommand.response_to(req)

    def get_kv_list(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        ns = GetKVListByNamespaceRequestHeader.from_ext(req.ext_fields).namespace
        table = self.routes.kv_config.get(ns)
        if not table:
            return RemotingCommand.response_to(req, ResponseCode.QUERY_NOT_FOUND,
                                               f"No config item, Namespace: {ns}")
        return RemotingCommand.response_to(req, body=KVTable(table=dict(table)).encode())

    def register_broker(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = RegisterBrokerRequestHeader.from_ext(req.ext_fields)
        if h.body_crc32 and (zlib.crc32(req.body) & 0x7FFFFFFF) != h.body_crc32:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        if h.compressed:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "compressed REGISTER_BROKER bodies are not supported; "
                                                         "set compressedRegister=false on the broker")
        wrapper = RegisterBrokerBody.decode(req.body).topic_config_serialize_wrapper if req.body \
            else TopicConfigSerializeWrapper()
        if h.broker_addr not in self.routes.broker_live_table:
            log.info("broker %s (id %d) of cluster %s registered from %s", h.broker_name, h.broker_id,
                     h.cluster_name, h.broker_addr)
        self.routes.register_broker(h.cluster_name, h.broker_name, h.broker_addr, h.broker_id,
                                    wrapper.topic_config_table, wrapper.data_version, conn, h.ha_server_addr)
        master, ha_addr = self.routes.master_of(h.broker_name, h.broker_id)  # a slave is told its master
        ext = RegisterBrokerResponseHeader(ha_server_addr=ha_addr, master_addr=master).to_ext()
        orders = self.routes.kv_config.get("ORDER_TOPIC_CONFIG")  # no body while the namespace does not exist
        return RemotingCommand.response_to(req, ext_fields=ext,
                                           body=KVTable(table=dict(orders)).encode() if orders is not None else b"")

    def unregister_broker(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = BrokerIdentityHeader.from_ext(req.ext_fields)
        self.routes.unregister_broker(h.cluster_name, h.broker_name, h.broker_addr, h.broker_id)
        return RemotingCommand.response_to(req)

    def query_data_version(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = BrokerIdentityHeader.from_ext(req.ext_fields)
        info = self.routes.broker_live_table.get(h.broker_addr)
        version = DataVersion.decode(req.body) if req.body else None
        changed = info is None or version is None or info.data_version != version
        if info is not None:
            info.last_update = time.monotonic()
        return RemotingCommand.response_to(req, ext_fields=QueryDataVersionResponseHeader(changed=changed).to_ext(),
                                           body=info.data_version.encode() if info is not None else b"")

    def wipe_write_perm(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        name = BrokerNameRequestHeader.from_ext(req.ext_fields).broker_name
        count = self.routes.set_broker_write_perm(name, False)
        return RemotingCommand.response_to(req, ext_fields=WipeWritePermOfBrokerResponseHeader(
            wipe_topic_count=count).to_ext())

    def add_write_perm(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        name = BrokerNameRequestHeader.from_ext(req.ext_fields).broker_name
        count = self.routes.set_broker_write_perm(name, True)
        return RemotingCommand.response_to(req, ext_fields=AddWritePermOfBrokerResponseHeader(
            add_topic_count=count).to_ext())
