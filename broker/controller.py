"""`BrokerController`: one broker (store, managers, request processors, listeners) registered with a name
server living in the same process. Several controllers can share one name server (broker-a, broker-b)."""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import socket
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import msgspec

from rocketmq_emulator.protocol import RequestCode
from rocketmq_emulator.protocol.admin_bodies import SubscriptionGroupConfig, TopicConfig
from rocketmq_emulator.protocol.entities import Entities
from rocketmq_emulator.protocol.message import pack_host
from rocketmq_emulator.protocol.topics import SCHEDULE_TOPIC, TIMER_TOPIC
from rocketmq_emulator.protocol.transport import DispatchTable, PeriodicTasks, RemotingConnection, RemotingServer
from rocketmq_emulator.protocol.transport import PortUnavailable
from rocketmq_emulator.store.config import BrokerRole, FlushDiskType, MessageStoreConfig
from rocketmq_emulator.store.message_store import MessageStore, execute_flush_plan

from .clock import BrokerClock
from .config import VIP_PORT_OFFSET, BrokerConfig, Compat, OffsetDurability, ip_of
from .core.admin_guard import AdminGuard
from .core.broker2client import Broker2Client
from .core.consume_core import ConsumeCore
from .core.fast_forward import run_due_work
from .core.filter.consumer_filter import ConsumerFilterManager
from .core.long_polling import PullRequestHoldService
from .core.pop.service import PopService
from .core.runtime_config import LIVE_HOOKS, BrokerConfiguration, registered_perm
from .state.delivery_log import DeliveryLog
from .core.schedule import ScheduleMessageService
from .core.send_core import SendMessageCore
from .core.timer import TimerMessageService
from .core.transaction import TransactionalMessageService
from .core.transaction_check import TransactionalMessageCheckService
from .core.write_through import answer_when_durable
from .handlers.client_manage import ClientManageProcessor
from .handlers.consumer_manage import ConsumerManageProcessor
from .handlers.consumer_send_back import ConsumerSendBackProcessor
from .handlers.pop_message import PopMessageProcessor
from .handlers.pull_message import PullMessageProcessor
from .handlers.send_message import SendMessageProcessor
from .ha.sync_master import answer_when_replicated, per_request_sends
from .namesrv import RouteInfoManager
from .outer_api import LocalNamesrv, MasterLink, NamesrvLink, Registration
from .slave_sync import SlaveSynchronize
from .state.broadcast_offset import BroadcastOffsetManager
from .state.client_manager import ConsumerManager, ProducerManager
from .state.config_file import write_config_files
from .state.consumer_offset import ConsumerOffsetManager
from .state.lock_manager import RebalanceLockManager
from .state.stats import BrokerStatsManager
from .state.subscription_group import SubscriptionGroupManager
from .state.topic_config import MANY_LOGGED_ONE_BY_ONE, PERM_READ, PERM_WRITE, TopicConfigManager

if TYPE_CHECKING:
    from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner

    from .ha.client import HAClient
    from .ha.server import HAServer

    from .core.acl.validator import PlainAccessValidator

log = logging.getLogger("rocketmq_emulator.broker")
#: the topics whose stored messages are parked ones (delay levels, timer messages): told when they arrive
_PARKING_TOPICS = frozenset({SCHEDULE_TOPIC, TIMER_TOPIC})

#: request families imported on their first request ("module:processor class" in broker/handlers/): the
#: administration requests (mqadmin, the admin client, the emulator's own) that producers and consumers never
#: send, request-reply's replies and transactions' decisions (few applications use them), so that the broker
#: starts accepting without importing them (README "Performance")
DEFERRED_PROCESSORS = ("admin_broker:AdminBrokerProcessor", "broker_config:BrokerConfigProcessor",
                       "broker_stats:BrokerStatsProcessor", "consumer_admin:ConsumerAdminProcessor",
                       "offset_admin:OffsetAdminProcessor", "query_message:QueryMessageProcessor",
                       "reply_message:ReplyMessageProcessor", "end_transaction:EndTransactionProcessor",
                       "admin_queries:AdminQueryProcessor")


class BrokerController:
    """One broker. `host`: the address to listen on (the process's); `vip_channel`: False keeps the VIP port
    closed whatever the config says (a broker started again that had none the first time); `namesrv_addr`: the
    name server's address, reported by getBrokerConfig; `admin_guard`: who may send admin requests."""

    def __init__(self, config: BrokerConfig, namesrv: RouteInfoManager | NamesrvLink | None = None, *,
                 host: str = "127.0.0.1", vip_channel: bool = True, namesrv_addr: Callable[[], str] = lambda: "",
                 clock: BrokerClock | None = None, admin_guard: AdminGuard | None = None) -> None:
        if isinstance(namesrv, RouteInfoManager):
            namesrv = LocalNamesrv(namesrv)
        #: how it registers: with the name server of this process, or over TCP (`serve --role broker`)
        self.namesrv: NamesrvLink | None = namesrv
        if namesrv is not None:
            namesrv.on_master = self.master_told
        #: the in-process name server's routes (None when registering over TCP, or with none)
        self.routes = namesrv.routes if isinstance(namesrv, LocalNamesrv) else None
        #: now, for every broker-side timer (the Emulator's brokers share one; tests advance it)
        self.clock = clock or BrokerClock()
        root = Path(config.store.store_path_root_dir)
        config_dir = root / "config"
        #: getBrokerConfig / updateBrokerConfig, and the holder of the current config (`self.config`); first: a
        #: previous run's updates apply before anything reads the config
        self.configuration = BrokerConfiguration(config, config_dir, namesrv_addr, lambda: self.listen_port)
        self.configuration.load_updates()
        config = self.config
        self.store: MessageStore = None  # type: ignore[assignment]  # opened in start(), once the port is known
        self.store_host_packed = pack_host(ip_of(config.broker_ip1))
        self.topic_config_manager = TopicConfigManager(
            config_dir, broker_name=config.broker_name, cluster_name=config.broker_cluster_name,
            auto_create_topic_enable=config.auto_create_topic_enable,
            default_topic_queue_nums=config.default_topic_queue_nums)
        self.subscription_group_manager = SubscriptionGroupManager(
            config_dir, auto_create=config.auto_create_subscription_group)
        self.consumer_offset_manager = ConsumerOffsetManager(
            config_dir, fsync=config.store.flush_disk_type is FlushDiskType.SYNC_FLUSH)
        self.consumer_manager = ConsumerManager(config.channel_expired_timeout_second)
        #: deliveries for the dashboard's message story: made by the Emulator when the dashboard runs
        self.delivery_log: DeliveryLog | None = None
        self.producer_manager = ProducerManager(config.channel_expired_timeout_second)
        self.lock_manager = RebalanceLockManager()
        self.consumer_filter_manager = ConsumerFilterManager()  # SQL92 subscriptions, compiled once per version
        self.schedule_service = ScheduleMessageService(self, config_dir)
        self.timer_service = TimerMessageService(self)  # 5.x delivery times
        self.broadcast_offsets = BroadcastOffsetManager(
            self.consumer_offset_manager, self._client_online, config.broadcast_offset_expire_second,
            clock=self.clock.monotonic)
        self.broker2client = Broker2Client(self)  # every request the broker sends a client
        self.consumer_manager.on_change.append(self.broker2client.notify_consumer_ids_changed)
        self.stats = BrokerStatsManager(config.broker_cluster_name,
                                        lambda: (self.store.put_count, self.store.put_bytes))
        self.send_core = SendMessageCore(self)  # the send path of every front, send-backs and delayed deliveries
        self.consume_core = ConsumeCore(self, self.broker2client.first_pull_since_told,  # the read path of every front
                                        self.broker2client.settling)
        self.transactions = TransactionalMessageService(self)  # half messages, END_TRANSACTION
        self.transaction_check = TransactionalMessageCheckService(self, self.broker2client.check_transaction_state)
        self.pop_service = PopService(self, config_dir, fsync=config.store.flush_disk_type is FlushDiskType.SYNC_FLUSH)

        self.pull_processor = PullMessageProcessor(self)
        self.pull_hold_service = PullRequestHoldService(self.pull_processor.rerun)
        table = DispatchTable(f"broker {config.broker_name}")
        for processor in (SendMessageProcessor(self), self.pull_processor, ConsumerManageProcessor(self),
                          ClientManageProcessor(self), ConsumerSendBackProcessor(self), PopMessageProcessor(self)):
            processor.register(table)
        table.defer(self._register_deferred_processors)
        #: master-slave (README "Master and slave"): a master serves its slaves on its HA port (the broker port
        #: + 1, started in start()); a SLAVE replicates its master's commitlog and copies its configuration
        self.ha_server: HAServer | None = None
        self.ha_client: HAClient | None = None
        self.master_link: MasterLink | None = None
        self.slave_sync: SlaveSynchronize | None = None
        self._host = host
        role = config.store.broker_role
        if role is BrokerRole.SLAVE:  # its store refuses every put: sends one by one, answered so
            per_request_sends(table)
            self.master_link = MasterLink()
            self.slave_sync = SlaveSynchronize(self.master_link, self.topic_config_manager,
                                               self.subscription_group_manager, self.consumer_offset_manager,
                                               self.schedule_service)
        elif role is BrokerRole.SYNC_MASTER:
            answer_when_replicated(table, self, lambda: self.store.commitlog.max_offset,
                                   lambda: self.config.store.slave_timeout)
        if config.offset_durability is OffsetDurability.WRITE_THROUGH:  # no offset write answered before durable
            answer_when_durable(table, self.consumer_offset_manager, skip=(RequestCode.PULL_MESSAGE,))
        if admin_guard is not None:  # before the VIP table is derived from it
            admin_guard.protect(table)
        #: 4.9.8's ACL (aclEnable): every request of both tables checked against the plain ACL file; None when off
        self.acl: PlainAccessValidator | None = None
        if config.acl_enable:  # imported only then: ACL off costs start-up nothing
            from .core.acl import plain_acl_path
            from .core.acl.validator import PlainAccessValidator
            self.acl = PlainAccessValidator(plain_acl_path(config))
            AdminGuard(None, is_admin=self.acl.is_admin).protect(table)  # admin requests: admin accounts only
            self.acl.protect(table)  # outermost: checked before any other wrapper runs
            table.defer(self._register_acl_admin)  # after the deferred families: replaces ACL-off answers
        self.table = table
        self.configuration.on_change = self.config_changed
        java_remarks = config.compat is Compat.V4_9  # 4.9.8's Java exception texts as remarks (java_texts)
        self.server = RemotingServer(f"broker {config.broker_name}", table, host, config.listen_port,
                                     java_remarks=java_remarks)
        self.server.on_connection_lost.append(self._channel_closed)
        self.vip_server: RemotingServer | None = None
        if vip_channel and config.vip_channel_enabled and config.listen_port >= VIP_PORT_OFFSET:
            self.vip_server = RemotingServer(f"broker {config.broker_name} (vip)",
                                             table.without(RequestCode.PULL_MESSAGE, name="vip"),
                                             host, config.listen_port - VIP_PORT_OFFSET, java_remarks=java_remarks)
            self.vip_server.on_connection_lost.append(self._channel_closed)
        self.topic_config_manager.on_change.append(self.register_with_namesrv)
        self.timers = PeriodicTasks()
        self._background: set[asyncio.Future[object]] = set()  # worker-thread writes under way
        self.started_at = 0.0

    # -- configuration and run-time facts -----------------------------------------------------------
    @property
    def config(self) -> BrokerConfig:
        """The current configuration (frozen; updateBrokerConfig swaps in a new one: read it on each use)."""
        return self.configuration.config

    @property
    def listen_port(self) -> int:
        """The port the broker listens on: the configured one, or the one bound when that was 0."""
        return self.server.port or self.config.listen_port

    @property
    def broker_addr(self) -> str:
        """The address clients are told to use (route data, offset msgIds)."""
        return f"{self.config.broker_ip1}:{self.config.advertised_port or self.listen_port}"

    def store_config(self) -> MessageStoreConfig:
        """The store's settings with this broker's address written into its records (known once bound)."""
        c = self.config
        return replace(c.store, store_host=ip_of(c.broker_ip1), store_port=c.advertised_port or self.listen_port)

    def config_changed(self, old: BrokerConfig, keys: list[str]) -> None:
        """updateBrokerConfig swapped the config: the store takes its new settings, collaborators keeping their
        own copy of a key are told."""
        if self.store is not None and self.config.store != old.store:
            self.store.reconfigure(self.store_config())
        for key in keys:
            hook = LIVE_HOOKS.get(key)
            if hook is not None:
                hook(self)

    # -- life cycle ---------------------------------------------------------------------------------
    async def start(self, topics: Iterable[tuple[str, int]] = (), groups: Iterable[str] = (),
                    entities: Entities | None = None) -> None:
        """Bind, open the store, load, create the process's configured `topics` and `groups` and apply its
        `entities` (the entities file), then serve."""
        try:
            await self.server.start(serving=False)
        except socket.gaierror:  # --host names no address here: the command line says so
            raise
        except OSError as exc:
            raise PortUnavailable("broker", f"broker {self.config.broker_name}", self.server.host, self.server.port,
                                  exc) from None
        if self.config.listen_port == 0:  # a free port was asked for (listen_port is the bound one): no VIP port
            self.vip_server = None
        if self.vip_server is not None:
            try:
                await self.vip_server.start(serving=False)
            except OSError as exc:
                log.warning("VIP port %d unavailable (%s); clients must disable the VIP channel",
                            self.vip_server.port, exc)
                self.vip_server = None
        try:
            self.open_store()
        except BaseException:
            await self.server.stop()
            if self.vip_server is not None:
                await self.vip_server.stop()
            raise
        self.load(topics, groups)
        if entities is not None:
            self.apply_entities(entities)
        await self.server.start_serving()
        if self.vip_server is not None:
            await self.vip_server.start_serving()
        await self._start_replication()
        if self.namesrv is not None:  # registered before start() returns, as 4.9.8's first registerBrokerAll
            await self.namesrv.register_now(self.registration())
        slave = self.slave_sync is not None
        if not slave:  # a slave delivers nothing of its own: its master does, and it replicates the result
            await self.schedule_service.start()
            await self.timer_service.start()
        every = self.timers.every
        every(0.1, self._flush)
        every(lambda: self.config.flush_consumer_offset_interval / 1000, self._persist_offsets)  # updatable
        every(min(10.0, self.config.channel_expired_timeout_second / 4), self._scan_channels)
        every(10.0, self._clean_files)
        every(self.broadcast_offsets.scan_interval_s, self.broadcast_offsets.scan)
        every(lambda: self.config.register_name_server_period / 1000, self._register_periodically)
        if slave:
            assert self.slave_sync is not None
            every(lambda: self.config.slave_synchronize_period / 1000, self.slave_sync.sync_all)
        else:
            every(lambda: self.config.transaction_check_interval / 1000, self.transaction_check.check)  # updatable
            every(0.2, self.pop_service.revive)
        self.stats.start(every)
        self.started_at = time.time()

    async def _start_replication(self) -> None:
        """A master listens on its HA port (the broker port + 1, as 4.9.8's BrokerStartup sets it; a free one when
        the broker port was 0; not available: a WARNING, slaves cannot follow); a slave starts its HA client,
        which connects once a registration tells it its master."""
        if self.slave_sync is not None:
            from .ha.client import HAClient
            self.ha_client = HAClient(self.store)
            self.ha_client.on_dispatched.append(self._replicated)
            await self.ha_client.start()
            return
        from .ha.server import HAServer
        port = self.config.store.ha_listen_port
        if port is None:
            port = self.config.listen_port + 1 if self.config.listen_port else 0
        server = HAServer(self.store, self._host, port)
        try:
            await server.start()
        except OSError as exc:
            log.warning("%s: HA port %d unavailable (%s); slaves cannot replicate this broker",
                        self.config.broker_name, port, exc.strerror or exc)
            return
        self.ha_server = server

    def _replicated(self, arrived: dict[tuple[str, int], int]) -> None:
        """A slave dispatched replicated messages: held pulls of their queues are answered."""
        for (topic, queue_id), max_offset in arrived.items():
            self.message_arrived(topic, queue_id, max_offset, None)

    def is_slave_ok(self, master_put_where: int) -> bool:
        return self.ha_server is not None and self.ha_server.is_slave_ok(master_put_where)

    async def wait_for_slave(self, offset: int, timeout_s: float) -> bool:
        return self.ha_server is not None and await self.ha_server.wait_for_slave(offset, timeout_s)

    def open_store(self) -> None:
        """Open the message store (recovering it after a crash); start() does it once the port is bound."""
        os.makedirs(self.config.store.store_path_root_dir, exist_ok=True)
        self.store = MessageStore(self.store_config())
        self.store.start()
        self._log_recovery()

    def load(self, topics: Iterable[tuple[str, int]] = (), groups: Iterable[str] = ()) -> None:
        """After open_store: read the topic, group, offset and delay-level files and create `topics` and `groups`.
        The broker then answers requests, with or without a socket (testing/broker_harness.py runs its handlers
        so, never calling start())."""
        self.topic_config_manager.load()
        self.subscription_group_manager.load()
        self.create_topics_and_groups(topics, groups)
        self.consumer_offset_manager.load()
        self.schedule_service.load()
        self.pop_service.load()
        self.timer_service.load()

    def apply_entities(self, entities: Entities) -> tuple[int, int]:
        """The entities file's topics and groups: each created, or changed to what the file says (the file wins
        at every start; what it does not name is left alone). Returns (created, changed)."""
        tcm, sgm = self.topic_config_manager, self.subscription_group_manager
        topics = [tc for tc in entities.topics if tcm.get(tc.topic_name) != tc]
        groups = [g for g in entities.groups if sgm.table.get(g.group_name) != g]
        created = (sum(tcm.get(tc.topic_name) is None for tc in topics)
                   + sum(g.group_name not in sgm.table for g in groups))
        changed = len(topics) + len(groups) - created
        tcm.update_many(topics)  # one write of each file, one re-registration
        sgm.update_many(groups)
        if entities.accounts:
            if self.acl is None:
                log.warning("the entities declare %d ACL account(s), but ACL is off (aclEnable=false): not applied",
                            len(entities.accounts))
            else:
                self.acl.apply_accounts(entities.accounts)
        return created, changed

    def create_topics_and_groups(self, topics: Iterable[tuple[str, int]], groups: Iterable[str]) -> None:
        """`--topic` / `--group` (ROCKETMQ_EMULATOR_TOPICS / _GROUPS): created, or given the configured queue
        count, before the first client connects."""
        tcm = self.topic_config_manager
        changed_topics = []
        for name, queues in topics:
            tc = tcm.get(name)
            if tc is None or tc.read_queue_nums != queues or tc.write_queue_nums != queues:
                changed_topics.append(TopicConfig(topic_name=name, read_queue_nums=queues, write_queue_nums=queues,
                                                  perm=PERM_READ | PERM_WRITE))
        tcm.update_many(changed_topics)
        sgm = self.subscription_group_manager
        new_groups = [SubscriptionGroupConfig(group_name=g) for g in dict.fromkeys(groups) if g not in sgm.table]
        sgm.update_many(new_groups)
        for cfg in new_groups[:MANY_LOGGED_ONE_BY_ONE]:
            log.info("consumer group %s created (configured at start)", cfg.group_name)
        if len(new_groups) > MANY_LOGGED_ONE_BY_ONE:
            log.info("... and %d more consumer groups created", len(new_groups) - MANY_LOGGED_ONE_BY_ONE)

    async def stop(self, unregister: bool = True, clean: bool = True) -> None:
        """Stop accepting, answer held pulls, stop timers, persist offsets and configs, close the store; then
        (unless told not to) remove the broker's routes from the in-process name server."""
        self.server.stop_accepting()
        if self.vip_server is not None:
            self.vip_server.stop_accepting()
        self.pull_hold_service.wake_all()
        await self.timers.stop()
        self.pop_service.stop()  # held pops answer "nothing"; the checkpoints stay on disk
        await asyncio.gather(*self._background, return_exceptions=True)  # writes already under way finish first
        await self.schedule_service.stop()
        await self.timer_service.stop()
        if self.ha_client is not None:
            await self.ha_client.stop()
        if self.ha_server is not None:
            await self.ha_server.stop()
        if self.master_link is not None:
            self.master_link.close()
        self.store.stop(clean)
        await self.server.stop()
        if self.vip_server is not None:
            await self.vip_server.stop()
        self.broadcast_offsets.shutdown()  # broadcasting clients' latest positions, before the final write
        await self.consumer_offset_manager.stop()  # no connection is left to commit: flush both tiers
        if unregister and self.namesrv is not None:
            await self.namesrv.unregister(self.registration())
        if self.namesrv is not None and not isinstance(self.namesrv, LocalNamesrv):
            await self.namesrv.close()

    def unregister_from_namesrv(self) -> None:
        if self.namesrv is not None:
            self.namesrv.unregister_now(self.registration())

    def _register_deferred_processors(self, table: DispatchTable) -> None:
        for entry in DEFERRED_PROCESSORS:
            module, _, name = entry.partition(":")
            processor = getattr(importlib.import_module(f".handlers.{module}", __package__), name)
            processor(self).register(table)

    def _register_acl_admin(self, table: DispatchTable) -> None:
        from .handlers.acl_admin import AclAdminProcessor
        assert self.acl is not None
        AclAdminProcessor(self, self.acl).register(table)

    def _log_recovery(self) -> None:
        rec = self.store.recovery
        if rec is not None and rec.mode == "abnormal":
            queues = self.store.consume_queues()
            kept = sum(cq.max_offset_in_queue - cq.min_offset_in_queue for cq in queues)
            log.warning("%s: %s", self.config.broker_name, rec.summary(kept, len(queues)))

    async def __aenter__(self) -> BrokerController:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- periodic work ------------------------------------------------------------------------------
    async def _flush(self) -> None:
        """Commitlog every flushIntervalCommitLog, queues, index and checkpoint every second; the fsyncs run in a
        worker thread so that appends go on meanwhile (msync on the loop stalled requests for up to 20 ms)."""
        plan = self.store.plan_flush()
        if plan is None:
            return
        await self._in_worker(execute_flush_plan, plan)
        self.store.commit_flush_plan(plan)

    async def _in_worker(self, fn: Callable[..., object], *args: object) -> None:
        """Run blocking I/O in a worker thread; stop() waits for it (cancelling the caller does not stop it)."""
        fut = asyncio.get_running_loop().run_in_executor(None, fn, *args)
        self._background.add(fut)
        fut.add_done_callback(self._background.discard)
        await asyncio.shield(fut)

    async def _persist_offsets(self) -> None:
        """consumerOffset.json and delayOffset.json every `flushConsumerOffsetInterval` (100 ms) when changed:
        encoded here (a consistent snapshot), written and fsynced in a worker thread so the event loop never
        waits on the disk."""
        offsets = self.consumer_offset_manager
        dirty = offsets.take_dirty()
        delays = (self.schedule_service.path, self.schedule_service.take_changed())
        jobs = [(p, data) for p, data in ((offsets.path, dirty[0] if dirty else None), delays) if data is not None]
        if jobs:
            await self._in_worker(write_config_files, jobs)
        if dirty is not None:
            offsets.written(dirty[1])

    def _scan_channels(self) -> None:
        for conn in self.consumer_manager.scan_not_active_channels() + self.producer_manager.scan_not_active_channels():
            conn.close()

    def _clean_files(self) -> None:
        self.store.clean_expired_files(self.clock.now_ms())

    # -- fast-forward ---------------------------------------------------------------------------------
    def run_due_work(self) -> dict[str, int]:
        """After the clock moved: everything now due happens at once (core/fast_forward.py)."""
        return run_due_work(self.clock, self.store, self.config.store.file_reserved_time,
                            schedule=self.schedule_service, timer=self.timer_service, pop=self.pop_service,
                            transaction_check=self.transaction_check, broadcast_offsets=self.broadcast_offsets,
                            held_pulls=self.pull_hold_service)

    def _register_periodically(self) -> None:
        self.register_with_namesrv()

    # -- shared operations --------------------------------------------------------------------------
    def registration(self) -> Registration:
        """What this broker tells its name servers: its address, id, HA address and topics (with brokerPermission
        set, the routes carry it as every topic's perm)."""
        w = self.topic_config_manager.wrapper()
        if self.config.broker_permission != PERM_READ | PERM_WRITE:
            w = msgspec.structs.replace(w, topic_config_table={
                n: msgspec.structs.replace(tc, perm=registered_perm(self.config, tc.perm))
                for n, tc in w.topic_config_table.items()})
        return Registration(self.config.broker_cluster_name, self.config.broker_name, self.broker_addr,
                            self.config.broker_id, self.ha_server_addr, w)

    @property
    def ha_server_addr(self) -> str:
        """Where this broker's slaves replicate from (empty while it serves no HA port)."""
        return f"{self.config.broker_ip1}:{self.ha_server.port}" if self.ha_server is not None else ""

    def register_with_namesrv(self) -> None:
        if self.namesrv is not None:
            self.namesrv.register(self.registration())

    def master_told(self, master_addr: str | None, ha_addr: str | None) -> None:
        """A registration's answer: a slave's master and its HA address (None: none registered)."""
        if self.slave_sync is None or self.master_link is None:
            return
        new = master_addr != self.master_link.addr
        self.master_link.set_master(master_addr)
        if self.ha_client is not None:
            self.ha_client.update_master_address(ha_addr)
        if new and master_addr is not None:  # the first copy of the master's configuration at once
            task: asyncio.Future[object] = asyncio.ensure_future(self.slave_sync.sync_all())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _channel_closed(self, conn: RemotingConnection) -> None:
        self.consumer_manager.channel_closed(conn, self.config.notify_consumer_ids_changed_enable)
        self.producer_manager.channel_closed(conn)
        self.pull_hold_service.channel_closed(conn)

    def message_arrived(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None) -> None:
        """A message was stored: wake held pulls of that queue, or its delay level if it was parked."""
        if self.ha_server is not None:
            self.ha_server.notify()
        if topic == SCHEDULE_TOPIC:
            self.schedule_service.message_parked(queue_id)
        elif topic == TIMER_TOPIC:
            self.timer_service.message_parked(max_offset - 1, tags_code or 0)
        else:
            self.pull_hold_service.notify_message_arriving(topic, queue_id, max_offset, tags_code)
            if self.pop_service.waiting:
                self.pop_service.notify(topic)

    def messages_arrived(self, msgs: Sequence[MessageExtBrokerInner], queue_offsets: Sequence[int]) -> None:
        """Messages stored together (the single sends of one read): `message_arrived` for each, once per read
        deciding whether any can do something. With no pull held and no POP waiting, only a parked message
        (SCHEDULE_TOPIC_XXXX, the timer's topic) has anyone to tell."""
        if self.ha_server is not None:
            self.ha_server.notify()
        if self.pull_hold_service.table or self.pop_service.waiting:
            for msg, queue_offset in zip(msgs, queue_offsets):
                self.message_arrived(msg.topic, msg.queue_id, queue_offset + 1, msg.tags_code)
            return
        for msg, queue_offset in zip(msgs, queue_offsets):
            if msg.topic in _PARKING_TOPICS:
                self.message_arrived(msg.topic, msg.queue_id, queue_offset + 1, msg.tags_code)

    def _client_online(self, group: str, client_id: str) -> bool:
        gi = self.consumer_manager.get(group)
        return gi is not None and gi.find_channel(client_id) is not None

    def delete_topic(self, topic: str) -> None:
        self.topic_config_manager.delete(topic)
        self.store.delete_topics({topic})
        self.consumer_offset_manager.remove_topic(topic)
