"""Receipt handles renewed for 5.x push consumers, as the 5.3.3 proxy renews them (DefaultReceiptHandleManager):
a ReceiveMessage with `auto_renew` (a push consumer's) gets 60 s of invisibility, and while the consumer works
on a message the proxy extends it before it runs out, so a long consumption is not delivered twice.

* Every 5 s (renewSchedulePeriodMillis), a handle that turns visible within 10 s (renewAheadTimeMillis) is
  renewed by the next step of the renew policy (1 min, 3 min, 5 min, 10 min, 30 min, then 1 h), until 3 hours
  after it was received (renewMaxTimeMillis); then it is made visible after the group's retry delay and no
  longer renewed.
* Ack, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue of a renewed message use its latest handle
  (the client still holds the first one) and stop its renewal.
* A client that ends its session or goes silent: its messages become visible 1 s later
  (invisibleTimeMillisWhenClear), for another consumer of the group.

The clock is the broker's (so `advanceTime` counts), the scan runs in real time.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Callable

from rocketmq_emulator.protocol.topics import parse_delay_levels

from ..core.read_model import BrokerFront

log = logging.getLogger("rocketmq_emulator.grpc")

RENEW_SCHEDULE_PERIOD_S = 5.0
RENEW_AHEAD_MS = 10_000
RENEW_MAX_MS = 3 * 3600 * 1000
#: RenewStrategyPolicy: the invisible time of the n-th renewal (the last one repeats)
RENEW_POLICY_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
INVISIBLE_WHEN_CLEAR_MS = 1000


@dataclass(slots=True)
class Held:
    """A message a push consumer is working on."""

    front: BrokerFront
    group: str
    topic: str
    handle: str  #: the latest receipt handle (renewals replace it)
    received_ms: int
    next_visible_ms: int
    reconsume_times: int
    renew_times: int = 0


class ReceiptRenewal:
    """`alive(client_id)`: whether the client still has a session (a gone one's messages are released)."""

    def __init__(self, alive: Callable[[str], bool]) -> None:
        self.alive = alive
        self.held: dict[tuple[str, str], dict[str, Held]] = {}  # (client id, group) -> message id -> held
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def add(self, client_id: str, group: str, message_id: str, held: Held) -> None:
        self.held.setdefault((client_id, group), {})[message_id] = held

    def take(self, client_id: str, group: str, message_id: str) -> Held | None:
        """Stop renewing a message (acked, changed, sent to the DLQ); its latest handle, when renewed here."""
        handles = self.held.get((client_id, group))
        if not handles:
            return None
        held = handles.pop(message_id, None)
        if not handles:
            del self.held[(client_id, group)]
        return held

    def release(self, client_id: str) -> int:
        """The client is gone: its messages turn visible in a second. Returns how many."""
        count = 0
        for key in [k for k in self.held if k[0] == client_id]:
            for held in self.held.pop(key).values():
                count += self._change(held, INVISIBLE_WHEN_CLEAR_MS, "release")
        return count

    def scan(self) -> int:
        """One renewal round (what the periodic task runs); how many handles were renewed."""
        renewed = 0
        for key in list(self.held):
            if not self.alive(key[0]):
                self.release(key[0])
                continue
            for message_id, held in list(self.held.get(key, {}).items()):
                now = held.front.write.pop_service.broker.clock.now_ms()
                if held.next_visible_ms - now > RENEW_AHEAD_MS:
                    continue
                if now - held.received_ms < RENEW_MAX_MS:
                    step = RENEW_POLICY_MS[min(held.renew_times, len(RENEW_POLICY_MS) - 1)]
                    if self._change(held, step, "renew"):
                        held.renew_times += 1
                        renewed += 1
                        continue
                else:  # renewed long enough: back to the group after its retry delay
                    self._change(held, self._retry_delay_ms(held), "stop renewing")
                self.take(key[0], key[1], message_id)
        return renewed

    def _retry_delay_ms(self, held: Held) -> int:
        levels = parse_delay_levels(held.front.read.config.store.message_delay_level)
        return levels[min(held.reconsume_times + 2, len(levels) - 1)]

    @staticmethod
    def _change(held: Held, invisible_ms: int, why: str) -> bool:
        try:
            new = held.front.write.pop_service.change_invisible(held.group, held.topic, held.handle, invisible_ms)
        except Exception as exc:  # noqa: BLE001 - acked or revived meanwhile: nothing to renew
            log.debug("%s of a receipt handle of %s failed: %s", why, held.group, exc)
            return False
        held.handle = new.encode()
        held.next_visible_ms = new.pop_time + new.invisible_time
        return True

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(RENEW_SCHEDULE_PERIOD_S)
            try:
                self.scan()
            except Exception:  # noqa: BLE001 - the next round tries again
                log.exception("receipt handle renewal failed")

