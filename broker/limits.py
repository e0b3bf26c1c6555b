"""File descriptors: every client connection, store segment and config write needs one.

A process started from a login shell or a service manager usually gets a soft limit of 1024 open files, which
about a thousand client connections exhaust. Past that, uvloop (libuv) accepts each new connection and closes
it at once with no answer and nothing logged, and every file the broker opens fails with EMFILE. So, as
RocketMQ's start scripts do (`ulimit -n 655350`), `serve` raises the soft limit to the hard limit at start, and
`DescriptorWatch` logs once when the process is about to run out, with what to do.
"""

from __future__ import annotations

import logging
import os
import resource

log = logging.getLogger("rocketmq_emulator.broker")

#: descriptors kept free for store segments, config writes and the accept path
HEADROOM = 32


def raise_descriptor_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard one. Returns (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the open-file limit from %d to %d (%s): about %d client connections "
                        "will fit", soft, target, exc, soft - 100)
            return soft, soft
        log.debug("open-file limit raised from %d to %d", soft, target)
        return soft, target
    return soft, soft


def open_descriptors() -> int:
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # the listing's own descriptor
    except OSError:
        return -1


class DescriptorWatch:
    """Call `check()` now and then: logs once when fewer than HEADROOM descriptors are left (new connections are
    then refused), and once more when the pressure is over."""

    def __init__(self) -> None:
        self.exhausted = False

    def check(self) -> bool:
        used = open_descriptors()
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if used < 0 or soft == resource.RLIM_INFINITY:
            return False
        if not self.exhausted and used >= soft - HEADROOM:
            self.exhausted = True
            log.error("out of file descriptors: %d of %d in use; new client connections are refused and store "
                      "files cannot be opened. Close idle clients, or raise the limit (ulimit -n) before starting",
                      used, soft)
        elif self.exhausted and used < soft - 4 * HEADROOM:
            self.exhausted = False
            log.warning("file descriptors available again: %d of %d in use", used, soft)
        return self.exhausted
