"""The clients' connections to a broker as a whole: the emulator's test control that closes them all (the
remoting DROP_CONNECTIONS request and the dashboard's "drop connections" call it; clients must reconnect)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.transport import RemotingConnection, RemotingServer


class Listening(Protocol):
    """A broker's listening servers (BrokerController, and the dashboard's write cores, have them)."""

    @property
    def server(self) -> RemotingServer: ...

    @property
    def vip_server(self) -> RemotingServer | None: ...


def drop_connections(b: Listening, keep: RemotingConnection | None = None) -> int:
    """Close every client connection of the broker's ports but `keep`; how many (clients must reconnect)."""
    servers = [s for s in (b.server, b.vip_server) if s is not None]
    others = [c for s in servers for c in s.connections if c is not keep]
    for c in others:
        c.close()
    return len(others)
