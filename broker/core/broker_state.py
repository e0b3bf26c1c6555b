"""`BrokerState`: what a broker's services share of it (its configuration, its store and its managers), as a
Protocol that `BrokerController` satisfies, so that the services below the controller (the send path, delayed
delivery, resets sent to clients, run-time configuration hooks) are typed against the state they use, never
against the controller that builds them (broker/controller.py imports them; they do not import it).

The two services that use each other are seen through the one method each needs: `DelayParking` (the send path
parks a DELAY message) and `MessagePutting` (delayed delivery re-puts a due message). The request handlers take
the wider `BrokerContext` (broker/core/broker_context.py), which adds the services themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol, Sequence

if TYPE_CHECKING:
    from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner
    from rocketmq_emulator.store.message_store import MessageStore
    from rocketmq_emulator.store.results import GetMessageResult, PutMessageResult

    from ..state.broadcast_offset import BroadcastOffsetManager
    from ..clock import BrokerClock
    from ..state.delivery_log import DeliveryLog
    from ..state.client_manager import ConsumerManager, ProducerManager
    from ..config import BrokerConfig
    from ..state.consumer_offset import ConsumerOffsetManager
    from ..state.lock_manager import RebalanceLockManager
    from .long_polling import PullRequestHoldService
    from .filter.consumer_filter import ConsumerFilterManager
    from ..state.stats import BrokerStatsManager
    from ..state.subscription_group import SubscriptionGroupManager
    from ..state.topic_config import TopicConfigManager


class DelayParking(Protocol):
    """Delayed delivery as the send path sees it (ScheduleMessageService)."""

    def park(self, topic: str, queue_id: int, props: dict[str, str], level: int) -> tuple[str, int, int]: ...


class MessagePutting(Protocol):
    """The send path as delayed delivery sees it (SendMessageCore): store one message, counted and waking the
    pulls held on its queue."""

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult: ...


class MessageReading(Protocol):
    """The read path as POP sees it (ConsumeCore): where a group starts in a queue, and a counted store read."""

    def start_offset(self, group: str, topic: str, queue_id: int, init_mode: int) -> int: ...

    def fetch_correcting(self, group: str, topic: str, queue_id: int, offset: int, max_nums: int,
                         tag_codes: frozenset[int] | None, record_filter: Callable[[bytes], bool] | None
                         ) -> tuple[GetMessageResult | None, int]: ...


class TimerParking(Protocol):
    """What the send path asks of the timer (broker/core/timer.py)."""

    def park(self, topic: str, queue_id: int, props: dict[str, str], deliver_ms: int) -> tuple[str, int, int]: ...


class HalfMessages(Protocol):
    """Transactions as the send path sees them (TransactionalMessageService): a message made a half message."""

    def half_message(self, msg: MessageExtBrokerInner, props: dict[str, str]) -> None: ...


class BrokerState(Protocol):
    """One broker's configuration, store and managers (BrokerController has them all)."""

    store: MessageStore
    store_host_packed: bytes  # the broker's own address, packed: born host of the messages it writes itself
    topic_config_manager: TopicConfigManager
    subscription_group_manager: SubscriptionGroupManager
    consumer_offset_manager: ConsumerOffsetManager
    broadcast_offsets: BroadcastOffsetManager
    consumer_manager: ConsumerManager
    producer_manager: ProducerManager
    lock_manager: RebalanceLockManager
    pull_hold_service: PullRequestHoldService
    stats: BrokerStatsManager
    clock: BrokerClock  # now, as fast-forwarded by tests
    delivery_log: DeliveryLog | None  # deliveries for the dashboard's message story (None: not recorded)
    consumer_filter_manager: ConsumerFilterManager

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def listen_port(self) -> int:
        """The port listened on (the bound one when the config asked for 0)."""

    @property
    def broker_addr(self) -> str:
        """The address clients are told to use (route data, message ids)."""

    @property
    def schedule_service(self) -> DelayParking: ...

    @property
    def timer_service(self) -> TimerParking: ...

    @property
    def send_core(self) -> MessagePutting: ...

    @property
    def consume_core(self) -> MessageReading: ...

    @property
    def transactions(self) -> HalfMessages: ...

    def message_arrived(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None) -> None:
        """A message was stored: wake the pulls held on its queue."""

    def messages_arrived(self, msgs: Sequence[MessageExtBrokerInner], queue_offsets: Sequence[int]) -> None:
        """Messages stored together, at these queue offsets: `message_arrived` for each that can wake anyone."""

    def register_with_namesrv(self) -> None:
        """Send the broker's topics to its name server (again)."""
