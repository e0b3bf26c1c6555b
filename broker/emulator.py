"""`Emulator`: one process holding the name server and its brokers; `serve()` runs it until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import logging
import shutil
import signal
import tempfile
import time
from dataclasses import replace

from .config import WILDCARD_HOSTS, BrokerConfig, resolve_advertised_host
from .controller import BrokerController
from .limits import DescriptorWatch, raise_descriptor_limit
from .namesrv import NameServer

log = logging.getLogger("rocketmq_emulator")


class Emulator:
    """A name server plus one broker per config (a second broker: pass `extra_brokers`)."""

    def __init__(self, config: BrokerConfig, extra_brokers: list[BrokerConfig] | None = None) -> None:
        self.config = config
        self._tmpdir: str | None = None
        if config.ephemeral:
            self._tmpdir = tempfile.mkdtemp(prefix="rocketmq-emulator-")
            config.store_dir = self._tmpdir
        self.namesrv = NameServer(config.host, config.namesrv_port)
        for c in [config, *(extra_brokers or [])]:
            resolve_advertised_host(c)
        self.brokers = [BrokerController(c, self.namesrv.routes) for c in [config, *(extra_brokers or [])]]
        self.descriptor_watch = DescriptorWatch()
        self._watch_task: asyncio.Task[None] | None = None

    @property
    def broker(self) -> BrokerController:
        return self.brokers[0]

    @property
    def namesrv_addr(self) -> str:
        return f"{self.config.host}:{self.namesrv.port}"

    async def start(self) -> None:
        await self.namesrv.start()
        for b in self.brokers:
            await b.start()
        self._watch_task = asyncio.get_running_loop().create_task(self._watch_descriptors())

    async def _watch_descriptors(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.descriptor_watch.check()

    async def stop(self) -> None:
        if self._watch_task is not None:
            self._watch_task.cancel()
            self._watch_task = None
        for b in self.brokers:
            await b.stop()
        await self.namesrv.stop()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)

    async def __aenter__(self) -> Emulator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def ready_line(self) -> str:
        brokers = ", ".join(f"{b.config.broker_name}@{b.config.broker_addr}" for b in self.brokers)
        store = "ephemeral" if self.config.ephemeral else self.config.store_dir
        namesrv = self.namesrv_addr
        if self.config.host in WILDCARD_HOSTS:  # listening everywhere: name an address a client can use
            namesrv = f"{self.config.advertised_host or '127.0.0.1'}:{self.namesrv.port}"
        return (f"rocketmq-emulator ready: namesrv {namesrv} (set namesrvAddr to it), broker {brokers}, "
                f"cluster {self.config.cluster_name}, store {store}")


def second_broker(config: BrokerConfig, name: str = "broker-b", port_offset: int = 100) -> BrokerConfig:
    """A config for another broker in the same process and cluster (own port and store directory)."""
    return replace(config, broker_name=name, broker_port=config.broker_port + port_offset if config.broker_port else 0,
                   advertised_port=None, store_dir=f"{config.store_dir.rstrip('/')}-{name}", ephemeral=False,
                   unknown_keys=[])


async def serve(config: BrokerConfig) -> None:
    started = time.perf_counter()
    raise_descriptor_limit()
    emulator = Emulator(config)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await emulator.start()
    log.info("%s (started in %.0f ms)", emulator.ready_line(), (time.perf_counter() - started) * 1000)
    try:
        await stop.wait()
    finally:
        t0 = time.perf_counter()
        await emulator.stop()
        log.info("stopped in %.0f ms", (time.perf_counter() - t0) * 1000)
