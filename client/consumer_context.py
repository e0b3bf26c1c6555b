"""What a push consumer's collaborators share, instead of the consumer itself (aiokafka's
`Fetcher(client, subscription)` is the model): the rebalance, the pull service, the consume services and the
remoting processor each take a `ConsumerContext` plus the callbacks they need, and none of them knows
`PushConsumer`.

* `ConsumerContext`: the group's settings (read-only after start), its subscriptions, the client instance and
  the offset store, the pause switches and the background tasks.
* `FlowSwitch`: the consumer's pause state (`pause`/`resume` by the application, `suspend` during a reset).
* `BackgroundTasks`: fire-and-forget tasks (a heartbeat, an offset correction) cancelled at stop.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Coroutine

from rocketmq_emulator.protocol.bodies import ConsumeFromWhere, MessageModel, MessageQueue, SubscriptionData

from .allocate import AllocateStrategy
from .config import ConsumerSettings
from .consumer_stats import ConsumerStatsManager

if TYPE_CHECKING:
    from .instance import ClientInstance
    from .offset_store import OffsetStore

log = logging.getLogger("rocketmq_emulator.client.consumer")


class FlowSwitch:
    """Whether pulling is paused: all queues or some (`pause`/`resume`), or all while offsets are reset
    (`suspend`, a separate switch so a reset never resumes what the application paused)."""

    def __init__(self) -> None:
        self.paused_all = False
        self.suspended = False
        self.paused_queues: set[MessageQueue] = set()
        self._resumed = asyncio.Event()
        self._resumed.set()

    @property
    def paused(self) -> bool:
        """Every queue is held back (by `pause()` without queues, or a reset under way)."""
        return self.paused_all or self.suspended

    def is_paused(self, mq: MessageQueue) -> bool:
        return self.paused_all or self.suspended or mq in self.paused_queues

    def pause(self, queues: tuple[MessageQueue, ...] = ()) -> None:
        if queues:
            self.paused_queues.update(queues)
        else:
            self.paused_all = True
        self._update()

    def resume(self, queues: tuple[MessageQueue, ...] = ()) -> None:
        if queues:
            self.paused_queues.difference_update(queues)
        else:
            self.paused_all = False
            self.paused_queues.clear()
        self._update()

    def suspend(self, on: bool) -> None:
        self.suspended = on
        self._update()

    def _update(self) -> None:
        if self.paused_all or self.suspended or self.paused_queues:
            self._resumed.clear()
        else:
            self._resumed.set()

    async def wait_resumed(self, timeout: float) -> None:
        """Return when nothing is paused any more, or after `timeout` s (some queues paused: a short nap)."""
        if self.paused_queues and not self.paused:
            await asyncio.sleep(min(timeout, 0.1))
            return
        try:
            await asyncio.wait_for(self._resumed.wait(), timeout)
        except asyncio.TimeoutError:
            pass


class BackgroundTasks:
    """Tasks nobody awaits (a heartbeat soon, an offset correction); a failure is logged, `cancel()` ends all."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("%s: background task failed: %r", self.owner, task.exception())

    def cancel(self) -> None:
        for task in list(self.tasks):
            task.cancel()


@dataclass(eq=False)
class ConsumerContext:
    """The shared state of one started push consumer."""

    group: str
    client_id: str
    instance: ClientInstance
    offset_store: OffsetStore
    message_model: MessageModel
    consume_from: ConsumeFromWhere
    consume_timestamp_ms: int
    orderly: bool
    allocate_strategy: AllocateStrategy
    settings: ConsumerSettings
    #: topic -> subscription; the consumer's own dict, so a later subscribe() is seen by the rebalance
    subscriptions: dict[str, SubscriptionData]
    flow: FlowSwitch = field(default_factory=FlowSwitch)
    background: BackgroundTasks = field(default_factory=lambda: BackgroundTasks("consumer"))
    #: pull and consume counters by topic, for GET_CONSUMER_RUNNING_INFO's statusTable
    stats: ConsumerStatsManager = field(default_factory=ConsumerStatsManager)
    started_at: int = 0  #: ms since the epoch

    @property
    def clustering(self) -> bool:
        return self.message_model == MessageModel.CLUSTERING

    @property
    def needs_locks(self) -> bool:
        """Orderly consumers in clustering mode consume a queue only while they hold its broker lock."""
        return self.orderly and self.clustering

    def max_reconsume_times(self) -> int:
        n = self.settings.max_reconsume_times
        if n == -1:
            return 2 ** 31 - 1 if self.orderly else 16
        return n

    def committed(self, mq: MessageQueue) -> int:
        """The in-memory offset of `mq` (-1 if none): what the next commit sends."""
        return self.offset_store.offset_table.get(mq, -1)

    def heartbeat_soon(self) -> None:
        self.background.spawn(self.instance.send_heartbeat_to_all_brokers())
