"""The master's side of replication: 4.9.8's HAService accept loop, HAConnection (a reader and a writer per slave)
and GroupTransferService (waits for a slave's ack), on asyncio.

Per slave connection:

* the reader takes the slave's 8-byte max-offset reports: the first says where the slave's copy ends (the writer
  starts there, or at the start of the master's last segment for 0), each one is an ack (``push_to_slave_max_offset``
  is the highest ack of any slave; ``wait_for_slave`` resolves on it); an ack beyond the master's log, a negative
  one or a slave silent for haHousekeepingInterval closes the connection;
* the writer sends the commitlog from there: ``read_for_replication`` chunks (at most haTransferBatchSize, never
  across a segment's end) with their header, and a heartbeat (header of size 0) when nothing was written for
  haSendHeartbeatInterval. It waits for new data on ``notify()`` (the broker calls it after a put: O(1)), and
  looks again every 100 ms anyway (4.9.8's writer waits 100 ms too).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import threading
import time
from types import TracebackType

from rocketmq_emulator.store.message_store import MessageStore

from . import wire

log = logging.getLogger("rocketmq_emulator.ha")

_POLL_S = 0.1


class _Connection:
    def __init__(self, server: HAServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.addr = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else str(peer)
        self.request_offset = -1
        self.ack_offset = -1
        self.requested = asyncio.Event()

    async def run(self) -> None:
        tasks = [asyncio.ensure_future(self._read()), asyncio.ensure_future(self._write())]
        try:
            done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.writer.close()
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                exc = task.exception()
                if isinstance(exc, wire.FrameError):
                    log.warning("HA: slave %s sent garbage (%s): connection closed", self.addr, exc)
                elif isinstance(exc, (asyncio.IncompleteReadError, ConnectionError, OSError)):
                    log.info("HA: slave %s went away (%s)", self.addr, type(exc).__name__)
                else:
                    log.error("HA: slave %s: connection closed on an unexpected error", self.addr, exc_info=exc)

    async def _read(self) -> None:
        cfg = self.server.store.config
        store = self.server.store
        while True:
            try:
                data = await asyncio.wait_for(self.reader.readexactly(wire.REPORT_SIZE),
                                              cfg.ha_housekeeping_interval / 1000)
            except asyncio.TimeoutError:
                log.warning("HA: slave %s silent for %d ms (haHousekeepingInterval): connection closed", self.addr,
                            cfg.ha_housekeeping_interval)
                return
            offset = wire.decode_report(data)
            if self.request_offset < 0:
                self.request_offset = offset
                log.debug("HA: slave %s requests offset %d", self.addr, offset)
                self.requested.set()
            elif offset > store.commitlog.max_offset:
                log.warning("HA: slave %s reports offset %d, beyond this master's commitlog end %d: connection "
                            "closed", self.addr, offset, store.commitlog.max_offset)
                return
            self.ack_offset = offset
            self.server._acked(offset)

    async def _write(self) -> None:
        server = self.server
        store = server.store
        await self.requested.wait()
        offset = store.replication_start_offset(self.request_offset)
        log.info("HA: master transfers from %d to slave %s (it requested %d)", offset, self.addr, self.request_offset)
        writer = self.writer
        last_write = time.monotonic()
        while True:
            cfg = store.config
            wake = server._wake
            server._waiting = True
            batch = min(cfg.ha_transfer_batch_size, wire.MAX_BODY)
            data = store.read_for_replication(offset, batch)
            now = time.monotonic()
            if data:
                writer.write(wire.encode_header(offset, len(data)) + data)
                offset += len(data)
                await writer.drain()
                last_write = time.monotonic()
                continue
            heartbeat = cfg.ha_send_heartbeat_interval / 1000
            if now - last_write >= heartbeat:
                writer.write(wire.encode_header(offset, 0))
                await writer.drain()
                last_write = time.monotonic()
                continue
            try:
                await asyncio.wait_for(wake.wait(), min(_POLL_S, heartbeat - (now - last_write)))
            except asyncio.TimeoutError:
                pass


class HAServer:
    """The master's HA listener (4.9.8's HAService on haListenPort). ``async with HAServer(store, host, port)`` or
    ``await start()`` / ``await stop()``; port 0 binds a free port (``port``)."""

    def __init__(self, store: MessageStore, host: str = "127.0.0.1", port: int = 0) -> None:
        self.store = store
        self.host = host
        self._port = port
        self._server: asyncio.AbstractServer | None = None
        self._connections: dict[_Connection, asyncio.Task[None]] = {}
        self._push_max = 0
        self._waiters: list[tuple[int, int, asyncio.Future[bool]]] = []
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._waiting = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0

    # -- lifecycle -----------------------------------------------------------------------------------
    async def start(self) -> HAServer:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._wake = asyncio.Event()
        self._server = await asyncio.start_server(self._accept, self.host, self._port, reuse_address=True)
        sock = self._server.sockets[0]
        self._port = sock.getsockname()[1]
        log.debug("HA: master listening on %s:%d", self.host, self._port)
        return self

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        tasks = list(self._connections.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if server is not None:
            await server.wait_closed()
        for _offset, _seq, fut in self._waiters:
            if not fut.done():
                fut.set_result(False)
        self._waiters.clear()

    async def __aenter__(self) -> HAServer:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        return self._port

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._server is None:
            writer.close()
            return
        conn = _Connection(self, reader, writer)
        log.info("HA: master accepts slave %s", conn.addr)
        task = asyncio.current_task()
        assert task is not None
        self._connections[conn] = task
        try:
            await conn.run()
        except asyncio.CancelledError:  # stop(): ended here, so that the stream's callback sees a normal end
            pass
        finally:
            self._connections.pop(conn, None)

    # -- state ---------------------------------------------------------------------------------------
    @property
    def connection_count(self) -> int:
        return len(self._connections)

    @property
    def push_to_slave_max_offset(self) -> int:
        """The highest commitlog offset a slave has acknowledged (4.9.8's push2SlaveMaxOffset)."""
        return self._push_max

    def slave_ack_offsets(self) -> list[int]:
        """Each connected slave's last acknowledged offset (-1 before its first report)."""
        return [c.ack_offset for c in self._connections]

    def is_slave_ok(self, master_put_where: int) -> bool:
        """4.9.8's isSlaveOK: a slave is connected and lags less than haSlaveFallbehindMax behind `master_put_where`
        (the end of the put just made); when not, a SYNC_MASTER answers SLAVE_NOT_AVAILABLE."""
        return bool(self._connections) and \
            master_put_where - self._push_max < self.store.config.ha_slave_fallbehind_max

    def notify(self) -> None:
        """New data was appended: writers waiting for it send it now. O(1); callable from any thread."""
        if not self._waiting:
            return
        if self._loop is not None and threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(self._wake_writers)
        else:
            self._wake_writers()

    def _wake_writers(self) -> None:
        self._waiting = False
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    async def wait_for_slave(self, offset: int, timeout_s: float) -> bool:
        """True once a slave has acknowledged `offset` (the end of a put), False after `timeout_s` (a SYNC_MASTER
        then answers FLUSH_SLAVE_TIMEOUT)."""
        if self._push_max >= offset:
            return True
        if self._server is None or timeout_s <= 0:
            return False
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (offset, next(self._seq), fut))
        try:
            return await asyncio.wait_for(fut, timeout_s)
        except asyncio.TimeoutError:
            if len(self._waiters) > 1024:  # timed-out waiters of a slave that never acks: dropped now and then
                self._waiters = [w for w in self._waiters if not w[2].done()]
                heapq.heapify(self._waiters)
            return self._push_max >= offset

    def _acked(self, offset: int) -> None:
        if offset <= self._push_max:
            return
        self._push_max = offset
        waiters = self._waiters
        while waiters and waiters[0][0] <= offset:
            fut = heapq.heappop(waiters)[2]
            if not fut.done():
                fut.set_result(True)
