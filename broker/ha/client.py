"""The slave's side of replication: 4.9.8's HAService.HAClient on asyncio.

It connects to the master's HA address (the name server hands it to a slave at each registration:
``update_master_address``), reports where its copy ends (8 bytes) on connect, after each append and every
haSendHeartbeatInterval, and stores each transfer with ``MessageStore.append_replicated`` (which dispatches the
whole records: ``on_dispatched`` hooks get the queues' new max offsets, to wake held pulls). A transfer that does
not start where the copy ends, bytes that are no frame or no records, a master silent for haHousekeepingInterval or
a broken connection: the connection is closed with one WARNING and made again; while the master is away it is
tried every second, quietly (one line when it goes away, one when it is back).
"""

from __future__ import annotations

import asyncio
import logging
import time
from types import TracebackType
from typing import Callable

from rocketmq_emulator.store.message_store import MessageStore
from rocketmq_emulator.store.results import ReplicaAppendStatus

from . import wire

log = logging.getLogger("rocketmq_emulator.ha")

RETRY_S = 1.0
CONNECT_TIMEOUT_S = 3.0

#: called with {(topic, queue id): the queue's new max offset} after an append made messages readable
DispatchHook = Callable[[dict[tuple[str, int], int]], None]


class _Closed(Exception):
    """The session ends: the reason was logged."""


def _split(addr: str) -> tuple[str, int] | None:
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host.strip("[]"), int(port)


class HAClient:
    """A slave's replication client. ``await start()`` / ``await stop()`` (or ``async with``)."""

    def __init__(self, store: MessageStore, master_ha_addr: str | None = None) -> None:
        self.store = store
        self._master_addr: str | None = master_ha_addr or None
        self.on_dispatched: list[DispatchHook] = []
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self._writer: asyncio.StreamWriter | None = None
        self._connected = False
        self._away = False  # the master could not be reached (logged once)
        self._reported = -1
        self._last_write = 0.0

    # -- lifecycle -----------------------------------------------------------------------------------
    async def start(self) -> HAClient:
        if self._task is None:
            self._changed = asyncio.Event()
            self._task = asyncio.ensure_future(self._run())
        return self

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._close()

    async def __aenter__(self) -> HAClient:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    # -- state ---------------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def master_addr(self) -> str | None:
        return self._master_addr

    def update_master_address(self, addr: str | None) -> None:
        """The master's HA address (`host:port`; None or "": none known yet). A new one closes the connection to
        the old one."""
        addr = addr or None
        if addr == self._master_addr:
            return
        log.debug("HA: update master address, OLD: %s NEW: %s", self._master_addr, addr)
        self._master_addr = addr
        self._away = False
        self._changed.set()
        self._close()

    # -- the session loop ----------------------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            self._changed.clear()
            addr = self._master_addr
            target = _split(addr) if addr else None
            if addr and target is None:
                log.warning("HA: master address %r is not HOST:PORT: not connecting", addr)
            if addr is None or target is None:
                await self._changed.wait()
                continue
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(*target), CONNECT_TIMEOUT_S)
            except (OSError, asyncio.TimeoutError) as exc:
                if not self._away:
                    self._away = True
                    log.warning("HA: master %s cannot be reached (%s): trying again every %.0f s", addr,
                                exc.__class__.__name__, RETRY_S)
                await self._pause()
                continue
            if self._away:
                self._away = False
                log.info("HA: master %s is back", addr)
            self._writer = writer
            self._connected = True
            try:
                await self._session(addr, reader, writer)
            except _Closed:
                pass
            except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
                if self._master_addr == addr and self._writer is writer:
                    log.warning("HA: connection to master %s broken (%s): connecting again", addr,
                                exc.__class__.__name__)
            except wire.FrameError as exc:
                log.warning("HA: master %s sent garbage (%s): connection closed, connecting again", addr, exc)
            finally:
                if self._writer is writer:
                    self._close()
                else:
                    writer.close()
            await self._pause()

    async def _pause(self) -> None:
        try:
            await asyncio.wait_for(self._changed.wait(), RETRY_S)
        except asyncio.TimeoutError:
            pass

    def _close(self) -> None:
        writer, self._writer = self._writer, None
        self._connected = False
        if writer is not None:
            writer.close()

    def _report(self, writer: asyncio.StreamWriter, offset: int) -> None:
        writer.write(wire.encode_report(offset))
        self._reported = offset
        self._last_write = time.monotonic()

    async def _session(self, addr: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        store = self.store
        self._report(writer, store.replica_max_offset())
        await writer.drain()
        log.info("HA: connected to master %s, reported offset %d", addr, self._reported)
        heartbeat_task = asyncio.ensure_future(self._heartbeats(writer))
        try:
            while True:
                housekeeping = store.config.ha_housekeeping_interval / 1000
                try:
                    header = await asyncio.wait_for(reader.readexactly(wire.HEADER_SIZE), housekeeping)
                    offset, size = wire.decode_header(header)
                    body = await asyncio.wait_for(reader.readexactly(size), housekeeping) if size else b""
                except asyncio.TimeoutError:
                    log.warning("HA: master %s silent for %d ms (haHousekeepingInterval): connection closed, "
                                "connecting again", addr, store.config.ha_housekeeping_interval)
                    raise _Closed from None
                result = store.append_replicated(offset, body)
                status = result.status
                if status is not ReplicaAppendStatus.APPENDED:
                    if status is ReplicaAppendStatus.OFFSET_MISMATCH:
                        log.warning("HA: master %s pushed offset %d, not where this slave's commitlog ends (%d): "
                                    "connection closed, connecting again", addr, offset, result.max_offset)
                    else:
                        log.warning("HA: master %s: the transfer at offset %d (%d bytes) was not stored (%s): "
                                    "connection closed, connecting again", addr, offset, size, status.name)
                    raise _Closed
                if result.arrived:
                    for hook in self.on_dispatched:
                        try:
                            hook(result.arrived)
                        except Exception:  # a hook's failure is not the replication's
                            log.exception("HA: an on_dispatched hook failed")
                if result.max_offset > self._reported:
                    self._report(writer, result.max_offset)
                    await writer.drain()
        finally:
            heartbeat_task.cancel()
            await asyncio.gather(heartbeat_task, return_exceptions=True)

    async def _heartbeats(self, writer: asyncio.StreamWriter) -> None:
        """Report the offset again when nothing was written for haSendHeartbeatInterval (4.9.8's
        isTimeToReportOffset)."""
        while True:
            interval = self.store.config.ha_send_heartbeat_interval / 1000
            wait = self._last_write + interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            self._report(writer, max(self._reported, self.store.replica_max_offset()))
            try:
                await writer.drain()
            except (ConnectionError, OSError):
                return
