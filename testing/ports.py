"""Free TCP ports on 127.0.0.1 for brokers, name servers and dead addresses started by tests and benchmarks."""

from __future__ import annotations

import contextlib
import socket


def free_port(exclude: frozenset[int] | set[int] = frozenset()) -> int:
    """A free TCP port on 127.0.0.1 (not in `exclude`)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in exclude:
            return port


def free_broker_port(brokers: int = 1, slaves: int = 0) -> int:
    """A port P with P, P-2 (the broker's VIP port) and P+1 (its HA port) free on 127.0.0.1, and for `brokers` > 1
    the ports of `serve --brokers N` too (P + 10 i, its - 2 and + 1), and of each broker's `slaves` (+ 5 k)."""
    from rocketmq_emulator.broker.config import BROKER_PORT_STEP, VIP_PORT_OFFSET
    for _ in range(200):
        port = free_port()
        if port < 1026 or port + BROKER_PORT_STEP * brokers > 65535:
            continue
        try:
            with contextlib.ExitStack() as stack:
                for i in range(brokers):
                    for k in range(slaves + 1):
                        base = port + BROKER_PORT_STEP * i + 5 * k
                        for p in (base, base - VIP_PORT_OFFSET, base + 1):
                            stack.enter_context(socket.socket()).bind(("127.0.0.1", p))
            return port
        except OSError:
            continue
    raise RuntimeError("no free ports for the broker")
