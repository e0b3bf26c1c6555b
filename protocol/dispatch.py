"""`DispatchTable`: request code -> handler, for whichever side receives requests (the transport's
`RemotingConnection` looks requests up in it; see `transport.py`'s docstring for what a handler may return).

A side can defer request families it may never be asked for (`defer`): the loader imports their module and
registers their handlers on the first look-up of a code not in the table, so the process starts without them
(the broker defers its administration requests: `broker/controller.py`, `DEFERRED_PROCESSORS`).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Iterable, Mapping, Protocol

from .command import RemotingCommand
from .frame import TypedHeaderDecoder

# (request, connection) -> answer; the connection is transport.py's RemotingConnection (not named here: the
# transport imports this module)
Handler = Callable[[RemotingCommand, Any], "RemotingCommand | bytes | None | Awaitable[RemotingCommand | None]"]
RunHandler = Callable[[list[RemotingCommand], Any], "list[RemotingCommand | BaseException | bytes | None]"]


class ReadLane(Protocol):
    """Requests of one code a native function takes whole, once per read, before any command is made
    (`FrameDecoder.lane`; the broker's send lane: broker/handlers/send_message.py). `read(buf, pos,
    max_frame_length, context)` returns what `native._lane.split_frames` does, except that each run of frames it
    took is one list `[items, opaques, end]`; `handle(that list, connection)` answers them. Frames it leaves go
    the usual way, in order. Only used while `code` has a run handler and the wire trace is off."""

    code: int
    read: Callable[..., tuple[list[Any], tuple[int, int] | None]]

    def context(self, conn: Any) -> Any:
        """`read`'s last argument for one read of `conn`."""

    def handle(self, taken: list[Any], conn: Any) -> None:
        """Store and answer the requests of one run `read` took."""


class _AllBut:
    """The codes skipped by a wrapper that applies to `chosen` alone: every code but those."""

    __slots__ = ("chosen",)

    def __init__(self, chosen: frozenset[int]) -> None:
        self.chosen = chosen

    def __contains__(self, code: object) -> bool:
        return code not in self.chosen


class DispatchTable:
    """One table from request code to handler; deferred families (`defer`) are loaded on the first miss, and
    `wrap_handlers` applies to the handlers they register too."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._handlers: dict[int, Handler] = {}
        self.runs: dict[int, RunHandler] = {}  # codes whose consecutive requests in one read go together
        #: JSON headers the connections' frame decoders read straight into typed headers (`FrameDecoder.typed`):
        #: only for codes of `runs` whose handler reads `RemotingCommand.header`; cleared by whoever needs every
        #: request's extFields (ACL), and not used while the wire trace is on
        self.typed: dict[bytes, TypedHeaderDecoder] = {}
        #: the native read lane (`ReadLane`), when one is registered; cleared with `runs` and `typed`
        self.lane: ReadLane | None = None
        self._deferred: list[Callable[[DispatchTable], None]] = []
        self._wrappers: list[tuple[Callable[[Handler], Handler], frozenset[int] | _AllBut]] = []
        self._excluded: frozenset[int] = frozenset()  # `without`'s codes: never registered here

    def register(self, codes: int | Iterable[int], handler: Handler) -> None:
        for code in ([codes] if isinstance(codes, int) else codes):
            code = int(code)
            if code in self._excluded:
                continue
            wrapped = handler
            for wrap, skip in self._wrappers:
                if code not in skip:
                    wrapped = wrap(wrapped)
            self._handlers[code] = wrapped

    def defer(self, loader: Callable[[DispatchTable], None]) -> None:
        """`loader(table)` registers handlers when first needed: on the first look-up of a code not found."""
        self._deferred.append(loader)

    def load_deferred(self) -> None:
        while self._deferred:
            self._deferred.pop(0)(self)

    def wrap_handlers(self, wrap: Callable[[Handler], Handler], *, skip: Iterable[int] = (),
                      only: Iterable[int] | None = None) -> None:
        """Replace every handler but those of `skip` (or, with `only`, those of `only` alone) with
        `wrap(handler)`, now and at every later `register` (run handlers are left alone)."""
        if only is not None:
            chosen = frozenset(int(c) for c in only)
            skipped: frozenset[int] | _AllBut = _AllBut(chosen)
        else:
            skipped = frozenset(int(c) for c in skip)
        self._handlers = {c: h if c in skipped else wrap(h) for c, h in self._handlers.items()}
        self._wrappers.append((wrap, skipped))

    def register_run(self, codes: int | Iterable[int], handler: RunHandler,
                     typed: Mapping[bytes, TypedHeaderDecoder] | None = None) -> None:
        """Hand consecutive requests of these codes in one read to `handler` together (see `transport.py`'s
        docstring); each code keeps its single-request handler too (`get`). `typed`: header decoders for
        `FrameDecoder.typed` (the handler then reads `RemotingCommand.header` when it is set)."""
        for code in ([codes] if isinstance(codes, int) else codes):
            if int(code) not in self._excluded:
                self.runs[int(code)] = handler
        if typed:
            self.typed.update(typed)

    def get(self, code: int) -> Handler | None:
        handler = self._handlers.get(code)
        if handler is None and self._deferred:
            self.load_deferred()
            handler = self._handlers.get(code)
        return handler

    def without(self, *codes: int, name: str) -> DispatchTable:
        """A copy that never has `codes` (its deferred families are loaded into it on its own first miss)."""
        table = DispatchTable(name)
        table._excluded = self._excluded | {int(c) for c in codes}
        table._handlers = {c: h for c, h in self._handlers.items() if c not in table._excluded}
        table.runs = {c: h for c, h in self.runs.items() if c not in table._excluded}
        table.typed = dict(self.typed) if table.runs else {}
        table.lane = self.lane if self.lane is not None and self.lane.code in table.runs else None
        table._deferred = list(self._deferred)
        table._wrappers = list(self._wrappers)
        return table

    def codes(self) -> set[int]:
        """Every code answered (deferred families loaded first)."""
        self.load_deferred()
        return set(self._handlers)
