"""The pytest plugin's wire-trace section (`pytest_plugin.py`, README "pytest plugin"): the lines of its
emulator's trace file a failed test's report shows, once the file holds everything traced until then."""

from __future__ import annotations

import socket
import time
import uuid
from pathlib import Path

from rocketmq_emulator.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.protocol.frame import encode_command_bytes

TRACE_LINES = 300  # at most this many of a failed test's trace lines go into its report
TRACE_MARK = "pytest-trace-mark"  # the topic name prefix of the plugin's own marker requests
TRACE_CATCH_UP_S = 10.0  # how long a failed test's report waits for the trace to be written


def trace_section(trace: Path, start: int, since: str, namesrv_addr: str | None) -> str:
    """The trace lines of one test: those from byte `start` of `trace` stamped `since` or later (an earlier
    test's lines written late are older), after waiting until the file caught up (`trace_caught_up`); the
    last `TRACE_LINES` of them. OSError when the file cannot be read."""
    caught_up = namesrv_addr is not None and trace_caught_up(namesrv_addr, trace, start)
    with open(trace, "rb") as f:
        f.seek(start)
        lines = f.read().decode("utf-8", "replace").splitlines()
    lines = [line for line in lines if (not line[:1].isdigit() or line[:23] >= since) and TRACE_MARK not in line]
    if not caught_up:
        lines.append(f"... (the last lines may be missing: the emulator's trace was not written within "
                     f"{TRACE_CATCH_UP_S:g} s)")
    if len(lines) > TRACE_LINES:
        lines = [f"... {len(lines) - TRACE_LINES} earlier lines in {trace}"] + lines[-TRACE_LINES:]
    return "\n".join(lines) or "(nothing exchanged)"


def trace_caught_up(namesrv_addr: str, trace: Path, start: int = 0, limit: float = TRACE_CATCH_UP_S) -> bool:
    """Whether the trace file holds everything the emulator traced until now. Its lines are written by a
    renderer process, behind the traffic (at the start of a session by as long as that process takes to start):
    so send the name server a marked request (a route query for a topic named `pytest-trace-mark-...`) and wait
    until its line is in the file; the trace is written in order, so every earlier line is there too."""
    mark = f"{TRACE_MARK}-{uuid.uuid4().hex}"
    host, _, port = namesrv_addr.rpartition(":")
    request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": mark}, opaque=1)
    deadline = time.monotonic() + limit
    try:
        with socket.create_connection((host, int(port)), timeout=limit) as conn:
            conn.sendall(encode_command_bytes(request))
            conn.recv(4)  # answered (or at least read): the request is in the trace's queue
    except OSError:
        return False  # a stopped or paused emulator: take what is there
    needle = mark.encode()
    while True:
        try:
            with open(trace, "rb") as f:
                f.seek(start)
                if needle in f.read():
                    return True
        except OSError:
            return False
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
