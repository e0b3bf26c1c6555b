"""How a broker reaches its name servers (4.9.8's BrokerOuterAPI): it registers at start, every 30 s and whenever
its topics change, and unregisters at a clean stop.

* `LocalNamesrv`: the name server lives in this process (`serve`, `serve --brokers N`): a call, no socket.
* `RemoteNamesrvs`: `serve --role broker --namesrv-addr a:9876;b:9876`: REGISTER_BROKER / UNREGISTER_BROKER over
  TCP to every name server, as a 4.9.8 broker sends them (JSON body, its CRC32, uncompressed), so that the
  emulator's broker registers with the emulator's name server or a real one. The connection stays open: a name
  server drops a broker's routes when it closes (the broker process died) or after 120 s without registration.

Either way the answer tells a slave its master's address and HA address (`Registration.on_master`).
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from dataclasses import dataclass
from typing import Callable

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import RegisterBrokerBody, TopicConfigSerializeWrapper
from rocketmq_emulator.protocol.headers import (BrokerIdentityHeader, RegisterBrokerRequestHeader,
                                                RegisterBrokerResponseHeader)
from rocketmq_emulator.protocol.transport import RemotingConnection

from .namesrv import RouteInfoManager

log = logging.getLogger("rocketmq_emulator.broker")

#: 4.9.8's registerBrokerTimeoutMills (s)
REGISTER_TIMEOUT_S = 6.0
#: 4.9.8's registerNameServerPeriod (s)
REGISTER_PERIOD_S = 30.0


@dataclass(frozen=True)
class Registration:
    """What a broker tells its name servers."""

    cluster: str
    broker_name: str
    broker_addr: str
    broker_id: int
    ha_server_addr: str
    topics: TopicConfigSerializeWrapper


#: called with (master address, master HA address) from a registration's answer (None, None: no master yet)
MasterListener = Callable[[str | None, str | None], None]


class LocalNamesrv:
    """The name server of this process."""

    def __init__(self, routes: RouteInfoManager, on_master: MasterListener | None = None) -> None:
        self.routes = routes
        self.on_master = on_master

    def register(self, reg: Registration) -> None:
        w = reg.topics
        self.routes.register_broker(reg.cluster, reg.broker_name, reg.broker_addr, reg.broker_id,
                                    w.topic_config_table, w.data_version, ha_server_addr=reg.ha_server_addr)
        if self.on_master is not None:
            self.on_master(*self.routes.master_of(reg.broker_name, reg.broker_id))

    async def register_now(self, reg: Registration) -> None:
        self.register(reg)

    async def unregister(self, reg: Registration) -> None:
        self.routes.unregister_broker(reg.cluster, reg.broker_name, reg.broker_addr, reg.broker_id)

    def unregister_now(self, reg: Registration) -> None:
        self.routes.unregister_broker(reg.cluster, reg.broker_name, reg.broker_addr, reg.broker_id)

    async def close(self) -> None:
        pass


class RemoteNamesrvs:
    """Name servers reached over TCP (`namesrvAddr`). `register` is fire-and-forget (the topic table changed, the
    30-s period): registrations do not overlap, and one asked for while another runs follows it."""

    def __init__(self, addrs: tuple[str, ...], on_master: MasterListener | None = None) -> None:
        self.addrs = addrs
        self.on_master = on_master
        self._conns: dict[str, RemotingConnection] = {}
        self._unreachable: set[str] = set()  # told once when it goes, once when it is back
        self._running: asyncio.Task[None] | None = None
        self._again: Registration | None = None
        self._closed = False

    def register(self, reg: Registration) -> None:
        if self._closed:
            return
        if self._running is not None and not self._running.done():
            self._again = reg
            return
        self._running = asyncio.get_running_loop().create_task(self._register_loop(reg))

    async def _register_loop(self, reg: Registration | None) -> None:
        while reg is not None and not self._closed:
            self._again = None
            await self.register_now(reg)
            reg = self._again

    async def register_now(self, reg: Registration) -> None:
        """Register with every name server at once (4.9.8 does so in parallel); a failure is logged."""
        body = RegisterBrokerBody(topic_config_serialize_wrapper=reg.topics).encode()
        header = RegisterBrokerRequestHeader(broker_name=reg.broker_name, broker_addr=reg.broker_addr,
                                             cluster_name=reg.cluster, ha_server_addr=reg.ha_server_addr,
                                             broker_id=reg.broker_id, compressed=False,
                                             body_crc32=zlib.crc32(body) & 0x7FFFFFFF)
        answers = await asyncio.gather(*(self._invoke(addr, RequestCode.REGISTER_BROKER, header.to_ext(), body)
                                         for addr in self.addrs))
        for answer in answers:
            if answer is not None and answer.code == ResponseCode.SUCCESS:
                h = RegisterBrokerResponseHeader.from_ext(answer.ext_fields)
                if self.on_master is not None:
                    self.on_master(h.master_addr or None, h.ha_server_addr or None)
                return

    async def unregister(self, reg: Registration) -> None:
        header = BrokerIdentityHeader(broker_name=reg.broker_name, broker_addr=reg.broker_addr,
                                      cluster_name=reg.cluster, broker_id=reg.broker_id).to_ext()
        await asyncio.gather(*(self._invoke(addr, RequestCode.UNREGISTER_BROKER, header, b"", timeout=2.0)
                               for addr in self.addrs))

    def unregister_now(self, reg: Registration) -> None:
        asyncio.get_running_loop().create_task(self.unregister(reg))

    async def _invoke(self, addr: str, code: int, ext: dict[str, str], body: bytes,
                      timeout: float = REGISTER_TIMEOUT_S) -> RemotingCommand | None:
        try:
            conn = self._conns.get(addr)
            if conn is None or conn.closed:
                conn = self._conns[addr] = await asyncio.wait_for(self._connect(addr), timeout)
            answer = await conn.invoke(RemotingCommand.request(code, ext_fields=ext, body=body), timeout)
        except (OSError, asyncio.TimeoutError, ValueError) as exc:
            if addr not in self._unreachable:
                self._unreachable.add(addr)
                log.warning("name server %s: %s failed (%s); retried every %.0f s", addr,
                            RequestCode(code).name, exc or type(exc).__name__, REGISTER_PERIOD_S)
            return None
        if addr in self._unreachable:
            self._unreachable.discard(addr)
            log.info("name server %s reached again", addr)
        if answer.code != ResponseCode.SUCCESS:
            log.warning("name server %s refused %s: code %d, %s", addr, RequestCode(code).name, answer.code,
                        answer.remark)
        return answer

    @staticmethod
    async def _connect(addr: str) -> RemotingConnection:
        host, _, port = addr.rpartition(":")
        _, conn = await asyncio.get_running_loop().create_connection(
            lambda: RemotingConnection(None, name="namesrv-link", addr=addr), host, int(port))
        return conn

    async def close(self) -> None:
        self._closed = True
        if self._running is not None:
            self._running.cancel()
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()


NamesrvLink = LocalNamesrv | RemoteNamesrvs


class MasterLink:
    """A slave's requests to its master (4.9.8's BrokerOuterAPI getAllTopicConfig, getAllConsumerOffset,
    getAllDelayOffset, getAllSubscriptionGroupConfig): one connection, made again when closed."""

    def __init__(self) -> None:
        self.addr: str | None = None
        self._conn: RemotingConnection | None = None

    def set_master(self, addr: str | None) -> None:
        if addr != self.addr:
            self.close()
            self.addr = addr

    async def get(self, code: int, timeout: float = 3.0) -> bytes | None:
        """The body of the master's answer to `code` (no header), or None when it cannot be had (logged at DEBUG:
        the HA client says when the master is away)."""
        addr = self.addr
        if addr is None:
            return None
        try:
            if self._conn is None or self._conn.closed:
                self._conn = await asyncio.wait_for(RemoteNamesrvs._connect(addr), timeout)
            answer = await self._conn.invoke(RemotingCommand.request(code), timeout)
        except (OSError, asyncio.TimeoutError, ValueError) as exc:
            log.debug("master %s: %s failed: %s", addr, RequestCode(code).name, exc)
            return None
        if answer.code != ResponseCode.SUCCESS:
            log.warning("master %s refused %s: code %d, %s", addr, RequestCode(code).name, answer.code, answer.remark)
            return None
        return answer.body

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
