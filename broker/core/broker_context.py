"""`BrokerContext`: what a request handler (broker/handlers/) uses of its broker, as a Protocol that
`BrokerController` satisfies: the broker's state (`BrokerState`: configuration, store, managers) and its
services (the send path, delayed delivery, requests to clients, the run-time configuration, the listening
servers). Handlers are built with it and never import the controller, which imports them; a test builds a
broker without sockets and calls them directly (testing/broker_harness.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .broker_state import BrokerState

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.transport import RemotingServer

    from .broker2client import Broker2Client
    from .consume_core import ConsumeCore
    from .pop.service import PopService
    from .runtime_config import BrokerConfiguration
    from .schedule import ScheduleMessageService
    from .send_core import SendMessageCore
    from .transaction import TransactionalMessageService
    from .transaction_check import TransactionalMessageCheckService


class BrokerContext(BrokerState, Protocol):
    """A broker as its request handlers see it."""

    broker2client: Broker2Client
    configuration: BrokerConfiguration
    server: RemotingServer
    vip_server: RemotingServer | None
    pop_service: PopService
    started_at: float  # time.time() of the start (0 before)
    transaction_check: TransactionalMessageCheckService

    @property
    def schedule_service(self) -> ScheduleMessageService: ...

    @property
    def send_core(self) -> SendMessageCore: ...

    @property
    def consume_core(self) -> ConsumeCore: ...

    @property
    def transactions(self) -> TransactionalMessageService: ...

    def delete_topic(self, topic: str) -> None:
        """Remove a topic: its config, its queues in the store, its consumer offsets."""
