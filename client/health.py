"""`rocketmq-emulator health [-n NAMESRV] [--broker ADDR ...]`: is the name server up, and does every broker it
lists answer? One line, exit status 0 (healthy) or 1 (which part is down). Works against any RocketMQ 4.x/5.x
name server, not only the emulator; the container's HEALTHCHECK runs it.

`--broker ADDR` checks the given broker addresses instead of the listed ones (the name server must still list
at least one broker): inside a container whose broker advertises an address only reachable from outside
(`ROCKETMQ_EMULATOR_ADVERTISED_PORT=20911`), the check uses the container's own port.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from .admin import Admin
from .config import ClientConfig
from .errors import BrokerUnreachableError, ClientError


@dataclass
class HealthReport:
    healthy: bool
    line: str


def _why(exc: BaseException) -> str:
    """Why a server did not answer, without repeating its address (the line names it already)."""
    if isinstance(exc, BrokerUnreachableError):
        return exc.detail
    return str(exc) or "timed out"


async def check_health(namesrv: str, brokers: list[str] | None = None, timeout: float = 3.0) -> HealthReport:
    config = ClientConfig(namesrv=namesrv, request_timeout=timeout, connect_timeout=timeout,
                          reconnect_backoff_max=0.1)
    async with Admin(config=config) as admin:
        try:
            info = await asyncio.wait_for(admin.cluster_info(), timeout * 2)
        except (ClientError, asyncio.TimeoutError) as exc:
            return HealthReport(False, f"unhealthy: the name server {namesrv} does not answer: {_why(exc)}")
        listed = [(name, bid, addr) for name, bd in sorted(info.broker_addr_table.items())
                  for bid, addr in sorted(bd.broker_addrs.items())]
        if not listed:
            return HealthReport(False, f"unhealthy: the name server {namesrv} answers but lists no broker")
        targets = [(f"broker at {a}", a) for a in brokers] if brokers else \
            [(f"broker {name} (id {bid}) at {addr}", addr) for name, bid, addr in listed]
        for what, addr in targets:
            try:
                await asyncio.wait_for(admin.broker_runtime_info(addr), timeout * 2)
            except (ClientError, asyncio.TimeoutError) as exc:
                return HealthReport(False, f"unhealthy: {what} does not answer: {_why(exc)}")
    names = ", ".join(what for what, _ in targets)
    return HealthReport(True, f"healthy: name server {namesrv}, {names}")
