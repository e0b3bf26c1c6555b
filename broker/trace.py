"""The broker's wire trace (`serve --trace`, README "Wire trace"): `Tracer` is the hook the transport calls
(`RemotingConnection.tracer`) for each command read and written.

On the event loop it only chooses (`protocol/trace.py`'s filters) and packs the command with its connection's
details (msgpack, about 2 µs); a pump thread hands the packed commands through a pipe to a renderer process
(`python -m rocketmq_emulator.broker.trace --render ...`), which decodes them (`protocol.trace.Renderer`) and
writes the lines. The broker's interpreter does no rendering and the pump holds the interpreter lock only to
move bytes, so a trace does not stall the event loop. At most `max_pending` commands wait: beyond that a line
is dropped, counted, and the count is written to the trace and logged (at most every 10 s).
"""

from __future__ import annotations

import io
import logging
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from typing import IO, Any, cast

from rocketmq_emulator.protocol import RemotingCommand
from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.frame import decode_frames
from rocketmq_emulator.protocol.trace import Renderer, TraceFilter, choose, pack, pack_dropped

from .config import TraceFormat

log = logging.getLogger("rocketmq_emulator.trace")


class Tracer:
    """The broker side of the trace (see the module docstring): `start()` / `stop()`, or `with Tracer.open(...)`."""

    def __init__(self, target: str, *, fmt: TraceFormat | str = TraceFormat.TEXT,
                 trace_filter: TraceFilter | None = None, body_chars: int = 300, max_pending: int = 20_000) -> None:
        self.target = target
        self.fmt = TraceFormat(fmt).value  # the setting's enum (wireTraceFormat); ValueError on anything else
        self.filter = trace_filter or TraceFilter()
        self.body_chars = body_chars
        self.max_pending = max_pending
        self.dropped = 0
        self._pending: deque[bytes] = deque()
        self._reported_drops = 0
        self._last_drop_log = -10.0
        self._renderer: subprocess.Popen[bytes] | None = None
        self._pump: threading.Thread | None = None
        self._stopping = False

    @classmethod
    def open(cls, target: str, **kw: Any) -> Tracer:
        """`-` (or empty) is standard error; anything else a file appended to. An unusable file fails here."""
        if target not in ("-", ""):
            with open(target, "a", encoding="utf-8"):
                pass
        return cls(target, **kw)

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> Tracer:
        if self._renderer is None:
            self._renderer = subprocess.Popen(
                [sys.executable, "-m", "rocketmq_emulator.broker.trace", "--render", self.target or "-", self.fmt,
                 str(self.body_chars)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
            pipe = cast(IO[bytes], self._renderer.stdin)  # stdin=PIPE: always a pipe
            self._pump = threading.Thread(target=self._run_pump, args=(pipe,), name="rocketmq-trace", daemon=True)
            self._pump.start()
        return self

    def stop(self) -> None:
        """Hand over what is pending, then let the renderer write it all and end."""
        if self._pump is not None:
            self._stopping = True
            self._pump.join(10)
            self._pump = None
        if self._renderer is not None:
            try:
                self._renderer.wait(10)
            except subprocess.TimeoutExpired:
                self._renderer.kill()
                self._renderer.wait()
            self._renderer = None
        if self.dropped:
            log.warning("trace: %d lines dropped in all (the renderer could not keep up)", self.dropped)

    def __enter__(self) -> Tracer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- called by the transport, on the event loop --------------------------------------------------
    def inbound(self, conn: Any, cmd: RemotingCommand) -> None:
        self._command(conn, "in", cmd)

    def outbound(self, conn: Any, cmd: RemotingCommand) -> None:
        self._command(conn, "out", cmd)

    def outbound_frame(self, conn: Any, frame: bytes) -> None:
        """A pre-encoded answer frame (the broker's send runs)."""
        try:
            (cmd,) = decode_frames(frame)
        except (ProtocolError, ValueError):
            return
        self._command(conn, "out", cmd)

    def _command(self, conn: Any, direction: str, cmd: RemotingCommand) -> None:
        request_code = choose(conn.attributes, direction, cmd, self.filter)
        if request_code is None:
            return
        if len(self._pending) >= self.max_pending:
            self.dropped += 1
            return
        self._pending.append(pack(time.time(), conn.name, conn.peer, conn.attributes, direction, request_code, cmd))

    # -- the pump thread: pending records -> the renderer's stdin ------------------------------------
    def _run_pump(self, pipe: IO[bytes]) -> None:
        pending = self._pending
        try:
            while True:
                if not pending:
                    if self._stopping:
                        break
                    time.sleep(0.005)
                    continue
                chunk = []
                size = 0
                while pending and size < 1 << 20:
                    item = pending.popleft()
                    chunk.append(item)
                    size += len(item)
                if self.dropped != self._reported_drops:
                    chunk.append(pack_dropped(self.dropped - self._reported_drops))
                    self._reported_drops = self.dropped
                    now = time.monotonic()
                    if now - self._last_drop_log >= 10.0:  # the log stays readable under a long overload
                        log.warning("trace: %d lines dropped so far (the renderer cannot keep up with the traffic; "
                                    "narrow the trace with --trace-codes, --trace-group or --trace-topic)",
                                    self.dropped)
                        self._last_drop_log = now
                pipe.write(b"".join(chunk))  # blocks (without the GIL) while the renderer catches up
                pipe.flush()
        except (OSError, ValueError) as exc:
            log.error("trace: the renderer is gone (%s): tracing stops", exc)
        finally:
            try:
                pipe.close()
            except OSError:
                pass


def render_main(argv: list[str]) -> int:
    """`python -m rocketmq_emulator.broker.trace --render TARGET FORMAT BODY_CHARS` (started by `Tracer`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the broker, which then closes our input
    target, fmt, body_chars = argv[0], argv[1], int(argv[2])
    out = sys.stderr if target in ("-", "") else open(target, "a", encoding="utf-8", buffering=1 << 16)
    renderer = Renderer(fmt, body_chars)
    stdin = cast(io.BufferedReader, sys.stdin.buffer)  # the pipe from the broker: buffered, so it has read1
    try:
        while data := stdin.read1(1 << 20):
            lines = renderer.feed(data)
            if lines:
                out.write("\n".join(lines) + "\n")
                out.flush()
    finally:
        if out is not sys.stderr:
            out.close()
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["--render"]:
    sys.exit(render_main(sys.argv[2:]))
