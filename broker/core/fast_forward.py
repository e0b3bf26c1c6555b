"""Fast-forward (README "Testing time-based behaviour"): after the brokers' clock moved, everything now due
happens at once, in the order the broker's own timers would have run it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rocketmq_emulator.store.message_store import MessageStore
from rocketmq_emulator.store.retention import newest_write_ms

if TYPE_CHECKING:
    from ..clock import BrokerClock
    from ..state.broadcast_offset import BroadcastOffsetManager
    from .long_polling import PullRequestHoldService
    from .pop.service import PopService
    from .schedule import ScheduleMessageService
    from .timer import TimerMessageService
    from .transaction_check import TransactionalMessageCheckService


def run_due_work(clock: BrokerClock, store: MessageStore, file_reserved_hours: int, *,
                 schedule: ScheduleMessageService, timer: TimerMessageService, pop: PopService,
                 transaction_check: TransactionalMessageCheckService, broadcast_offsets: BroadcastOffsetManager,
                 held_pulls: PullRequestHoldService) -> dict[str, int]:
    """Delayed and timed messages are delivered in due order (the delay levels and the timer merged), POP
    messages past their invisible time revive, transaction check-backs run, broadcasting clients expire, held
    pulls past their suspend time are answered, and commitlog files older than fileReservedTime (by the clock)
    are deleted. Returns how many of each."""
    done = {"delivered": 0, "revived": 0, "pullsAnswered": 0, "filesDeleted": 0}
    now = clock.now_ms()
    while True:
        level = schedule.next_due()
        timed = timer.next_due()
        if level is not None and level[0] <= now and (timed is None or level[0] <= timed):
            if not schedule.deliver_next(level[1]):
                break
        elif timed is not None and timed <= now:
            if timer.deliver_due(now_ms=timed) == 1.0:  # a put failed: try again later
                break
        else:
            break
        done["delivered"] += 1
    schedule.wake_all()
    timer.wake()
    done["revived"] = pop.revive(now)
    transaction_check.check()
    broadcast_offsets.scan()
    done["pullsAnswered"] = held_pulls.expire_until(time.monotonic() + clock.offset_ms / 1000)
    older_than = clock.real_at(now - file_reserved_hours * 3600 * 1000)  # file times are real times
    newest = newest_write_ms(store.commitlog)
    done["filesDeleted"] = store.expire_files_now(older_than_ms=older_than, roll=0 < newest < older_than)
    return done
