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


def free_broker_port(brokers: int = 1) -> int:
    """A port P with P and P-2 (the broker's VIP port) free on 127.0.0.1, and for `brokers` > 1 the ports of
    `serve --brokers N` too (P + 10 i and P + 10 i - 2)."""
    from rocketmq_emulator.broker.config import BROKER_PORT_STEP, VIP_PORT_OFFSET
    for _ in range(200):
        port = free_port()
        if port < 1026 or port + BROKER_PORT_STEP * brokers > 65535:
            continue
        try:
            with contextlib.ExitStack() as stack:
                for i in range(brokers):
                    for p in (port + BROKER_PORT_STEP * i, port + BROKER_PORT_STEP * i - VIP_PORT_OFFSET):
                        stack.enter_context(socket.socket()).bind(("127.0.0.1", p))
            return port
        except OSError:
            continue
    raise RuntimeError("no free ports for the broker")
