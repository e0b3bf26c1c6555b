"""`DashboardServer`: the dashboard's pages and JSON API (`/api/...`, README "Dashboard"), served by aiohttp on the
broker's event loop. Pages are static files of this package (no CDN, no build) that fetch the API and refresh
when the server-sent event stream `/api/events` ticks (every second).

Every request first passes the Host check (hosts.py: another name, as a DNS rebinding sends, gets 421). Actions
are POSTs with a JSON body (at most MAX_DEPTH levels deep) and, when the browser sends an Origin, the same origin
as the page (a cross-site form cannot send JSON without a CORS preflight, which is never granted); `read_only`
refuses them (403) and the pages hide them. Bad input is answered 400 (404 for a missing thing) with
`{"error": message}`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import socket
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, Sequence

import msgspec
from aiohttp import web

from rocketmq_emulator.protocol import BrokerError
from rocketmq_emulator.protocol.trace import NotATraceError, TraceFilter, format_text, parse_codes, read_trace
from rocketmq_emulator.protocol.transport import PortUnavailable

from . import actions, story, views
from .hosts import HostCheck, host_middleware
from .series import BrokerSeries
from .views import Invalid, NotFound

if TYPE_CHECKING:
    from ..config import EmulatorConfig
    from ..core.admin_guard import AdminGuard
    from ..core.read_model import BrokerFront, ReadModel


class EmulatorView(Protocol):
    """What the dashboard reads of the process (Emulator has it)."""

    config: EmulatorConfig
    stopped: set[str]
    admin_guard: AdminGuard

    def fronts(self) -> Sequence[BrokerFront]:
        """The running brokers: each one's read model (what the pages show) and write cores (the actions)."""

    @property
    def namesrv_addr(self) -> str: ...

    @property
    def grpc_port(self) -> int | None: ...

    def advance_time(self, seconds: float) -> dict[str, int]: ...

    def members(self) -> list[dict[str, Any]]:
        """Every broker of the process, masters and slaves, with its role and state."""

    async def control_broker(self, key: str, what: str) -> str: ...

log = logging.getLogger("rocketmq_emulator.dashboard")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
STATIC = Path(str(resources.files(__package__).joinpath("static")))
#: how deep an action's JSON body may nest (the actions take objects of plain values: 2 levels)
MAX_DEPTH = 32


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, default=str))


def decode_body(raw: bytes) -> dict[str, Any]:
    """An action's JSON body: an object at most MAX_DEPTH levels deep, else Invalid naming the problem (a body
    the decoder refuses, one nested past its recursion limit included)."""
    if not raw.strip():
        return {}
    try:
        body = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise Invalid(f"the body is not valid JSON: {exc}") from None
    except RecursionError:
        raise Invalid(f"the body is nested too deeply (at most {MAX_DEPTH} levels)") from None
    if not isinstance(body, dict):
        raise Invalid("the body must be a JSON object")
    level: list[Any] = [body]
    for _ in range(MAX_DEPTH):
        level = [v for c in level for v in (c.values() if isinstance(c, dict) else c) if isinstance(v, (dict, list))]
        if not level:
            return body
    raise Invalid(f"the body is nested too deeply (at most {MAX_DEPTH} levels)")


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except Invalid as exc:
        return _json({"error": str(exc)}, 400)
    except NotFound as exc:
        return _json({"error": str(exc)}, 404)
    except web.HTTPException as exc:
        if request.path.startswith("/api/"):
            return _json({"error": exc.reason}, exc.status)
        raise
    except Exception as exc:  # noqa: BLE001 - a bug of the dashboard: logged, answered as one
        log.error("dashboard: %s %s failed", request.method, request.path, exc_info=exc)
        return _json({"error": f"internal error: {type(exc).__name__}: {exc}"}, 500)


class DashboardServer:
    def __init__(self, emulator: EmulatorView, host: str, port: int, *, read_only: bool = False) -> None:
        self.emulator = emulator
        self.host = host
        self.port = port
        self.read_only = read_only
        config = emulator.config
        #: the Host check, made first (hosts.py)
        self.hosts = HostCheck(host, config.broker.broker_ip1, config.dashboard_allowed_hosts)
        self._runner: web.AppRunner | None = None
        self._rates: dict[str, dict[str, float]] = {}
        self._last: dict[str, tuple[float, int, int]] = {}
        self._ticker: asyncio.Task[None] | None = None
        self._sampler: asyncio.Task[None] | None = None
        self._subscribers: set[asyncio.Queue[str]] = set()
        #: each broker's charts (series.py), sampled every dashboard_sample_seconds
        self.series: dict[str, BrokerSeries] = {}
        self.sample_s = config.dashboard_sample_seconds

    # -- life cycle ---------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(middlewares=[host_middleware(self.hosts), _errors], client_max_size=8 * 1024 * 1024)
        get, post = app.router.add_get, app.router.add_post
        get("/", self.index)
        get("/api/overview", self.overview)
        get("/api/topics", self.topics)
        get("/api/topics/{topic}", self.topic)
        get("/api/topics/{topic}/messages", self.messages)
        get("/api/messages/{msg_id}", self.message)
        get("/api/groups", self.groups)
        get("/api/groups/{group}", self.group)
        get("/api/groups/{group}/history", self.history)
        get("/api/groups/{group}/where", self.where)
        get("/api/events", self.events)
        get("/api/messages/{msg_id}/story", self.story)
        get("/api/series/overview", self.series_overview)
        get("/api/series/topics/{topic}", self.series_topic)
        get("/api/series/groups/{group}", self.series_group)
        get("/api/trace", self.trace)
        post("/api/topics", self.action(lambda b, body, r: actions.create_topic(b, body)))
        post("/api/topics/{topic}/delete", self.action(
            lambda b, body, r: actions.delete_topic(b, r.match_info["topic"]), admin="deleting a topic"))
        post("/api/send", self.action(lambda b, body, r: actions.send(b, body)))
        post("/api/groups/{group}/reset/preview",
             self.action(lambda b, body, r: actions.reset_preview(b, r.match_info["group"], body), read=True))
        post("/api/groups/{group}/reset", self.action(lambda b, body, r: actions.reset(b, r.match_info["group"], body)))
        post("/api/resend", self.action(lambda b, body, r: actions.resend(b, body)))
        post("/api/controls/expire", self.action(lambda b, body, r: actions.expire_now(b), admin="expiring messages"))
        post("/api/controls/drop-connections", self.action(lambda b, body, r: actions.drop_connections(b),
                                                           admin="dropping connections"))
        post("/api/controls/advance", self.action(lambda b, body, r: self.emulator.advance_time(
            views.number(body.get("seconds"), "seconds")), admin="advancing time"))
        get("/api/cluster", self.cluster)
        post("/api/cluster/{key:[^/]+(?:/[0-9]+)?}/{what}", self.action(self._control, admin="controlling a broker",
                                                                      needs_broker=False))
        app.router.add_static("/static", STATIC)
        return app

    async def start(self) -> None:
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
        try:
            await site.start()
        except socket.gaierror:  # --host names no address here: the command line says so
            await runner.cleanup()
            raise
        except OSError as exc:
            await runner.cleanup()
            raise PortUnavailable("dashboard", "the dashboard", self.host, self.port, exc) from None
        server = getattr(site, "_server", None)
        if self.port == 0 and server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        self._runner = runner
        self._ticker = asyncio.get_running_loop().create_task(self._tick())
        self._sampler = asyncio.get_running_loop().create_task(self._sample())
        log.info("dashboard on http://%s:%d/%s", self.host, self.port, " (read-only)" if self.read_only else "")

    async def stop(self) -> None:
        tasks = [t for t in (self._ticker, self._sampler) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for q in self._subscribers:
            q.put_nowait("")
        if self._runner is not None:
            await self._runner.shutdown()
            await self._runner.cleanup()
            self._runner = None

    # -- helpers ------------------------------------------------------------------------------------
    def brokers(self) -> list[BrokerFront]:
        return list(self.emulator.fronts())

    def broker(self, request: web.Request) -> BrokerFront:
        name = request.query.get("broker")
        running = self.brokers()
        if not running:
            raise NotFound("no broker is running")
        if not name:
            return running[0]
        for f in running:
            if f.name == name:
                return f
        raise NotFound(f"no running broker named {name!r}")

    def read(self, request: web.Request) -> ReadModel:
        """The read model of the broker the request names (?broker=, default: the first running)."""
        return self.broker(request).read

    def action(self, fn: Callable[[Any, dict[str, Any], web.Request], Any], *,
               read: bool = False, admin: str | None = None, needs_broker: bool = True) -> Handler:
        """`admin`: the action destroys or controls (named so), and the admin guard decides who may. `fn` may be a
        coroutine function; without `needs_broker` it gets None for the broker (it acts on the process)."""
        async def handle(request: web.Request) -> web.StreamResponse:
            if self.read_only and not read:
                return _json({"error": "the dashboard is read-only (--dashboard-read-only)"}, 403)
            why = self.emulator.admin_guard.action_refusal(admin, request.remote or "") if admin else None
            if why is not None:
                return _json({"error": why}, 403)
            origin = request.headers.get("Origin")
            if origin is not None and origin != f"{request.scheme}://{request.host}":
                return _json({"error": f"cross-origin request from {origin} refused"}, 403)
            if request.content_type != "application/json":
                return _json({"error": "actions take a JSON body (Content-Type: application/json)"}, 415)
            body = decode_body(await request.read())
            result = fn(self.broker(request) if needs_broker else None, body, request)
            if inspect.isawaitable(result):
                result = await result
            log.info("dashboard: %s %s", request.path, json.dumps(body)[:200])
            return _json(result)
        return handle

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for f in self.brokers():
                name = f.name
                put, got, _, _ = f.read.store_figures()
                last = self._last.get(name)
                if last is not None and now > last[0]:
                    self._rates[name] = {"put": (put - last[1]) / (now - last[0]), "get": (got - last[2]) / (now - last[0])}
                self._last[name] = (now, put, got)
            event = json.dumps({"t": int(time.time() * 1000)})
            for q in list(self._subscribers):
                if q.qsize() < 10:
                    q.put_nowait(event)

    async def _sample(self) -> None:
        """The charts' samples (series.py): one now, then every `sample_s` seconds."""
        while True:
            for f in self.brokers():
                try:
                    self.series.setdefault(f.name, BrokerSeries(self.sample_s)).sample(f.read)
                except Exception:  # noqa: BLE001 - a chart must never stop the dashboard; said once per sample
                    log.exception("dashboard: sampling %s for the charts failed", f.name)
            await asyncio.sleep(self.sample_s)

    def _series_of(self, request: web.Request) -> tuple[BrokerSeries, ReadModel]:
        front = self.broker(request)
        return self.series.setdefault(front.name, BrokerSeries(self.sample_s)), front.read

    async def story(self, request: web.Request) -> web.StreamResponse:
        return _json(story.story(self.read(request), request.match_info["msg_id"], request.query.get("topic")))

    async def series_overview(self, request: web.Request) -> web.StreamResponse:
        series, read = self._series_of(request)
        return _json(series.overview(read))

    async def series_topic(self, request: web.Request) -> web.StreamResponse:
        series, read = self._series_of(request)
        topic = request.match_info["topic"]
        if read.topic(topic) is None:
            raise NotFound(f"no topic {topic!r} on {read.name}")
        return _json(series.topic(read, topic))

    async def series_group(self, request: web.Request) -> web.StreamResponse:
        series, read = self._series_of(request)
        group = request.match_info["group"]
        if group not in read.user_groups() and not read.has_offsets(group):
            raise NotFound(f"no consumer group {group!r} on {read.name}")
        return _json(series.group(read, group))

    # -- the brokers of the process (masters and slaves) -----------------------------------------------
    async def cluster(self, request: web.Request) -> web.StreamResponse:
        return _json({"brokers": self.emulator.members()})

    async def _control(self, _broker: None, body: dict[str, Any], request: web.Request) -> dict[str, Any]:
        key, what = request.match_info["key"], request.match_info["what"]
        if key not in {m["key"] for m in self.emulator.members()}:
            raise NotFound(f"no broker {key!r} in this process")
        try:
            done = await self.emulator.control_broker(key, what)
        except BrokerError as exc:
            raise Invalid(exc.remark) from None
        return {"broker": key, "done": done}

    # -- pages and reads ----------------------------------------------------------------------------
    async def index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html")

    async def overview(self, request: web.Request) -> web.StreamResponse:
        e = self.emulator
        brokers = [views.broker_summary(f.read, self._rates.get(f.name, {})) for f in self.brokers()]
        return _json({"cluster": e.config.broker.broker_cluster_name, "namesrv": e.namesrv_addr,
                      "brokers": brokers, "stoppedBrokers": sorted(e.stopped), "readOnly": self.read_only,
                      "grpc": f"{e.config.broker.broker_ip1}:{e.grpc_port}" if e.grpc_port is not None else None,
                      "trace": e.config.wire_trace})

    async def topics(self, request: web.Request) -> web.StreamResponse:
        return _json(views.topics(self.read(request), request.query.get("system") == "true"))

    async def topic(self, request: web.Request) -> web.StreamResponse:
        return _json(views.topic_detail(self.read(request), request.match_info["topic"]))

    async def messages(self, request: web.Request) -> web.StreamResponse:
        b, q, topic = self.read(request), request.query, request.match_info["topic"]
        if q.get("key"):
            return _json(views.by_key(b, topic, q["key"]))
        queue = q.get("queue")
        return _json(views.browse(
            b, topic, queue_id=None if queue in (None, "", "all") else views.number(queue, "queue"),
            offset=views.number(q.get("offset"), "offset", default=0),
            count=views.number(q.get("count"), "count", low=1, default=20),
            at_time=views.timestamp_ms(q["time"]) if q.get("time") else None))

    async def message(self, request: web.Request) -> web.StreamResponse:
        msg = views.find_message(self.read(request), request.match_info["msg_id"], request.query.get("topic"))
        return _json(views.message_view(msg, full=True))

    async def groups(self, request: web.Request) -> web.StreamResponse:
        return _json(views.groups(self.read(request)))

    async def group(self, request: web.Request) -> web.StreamResponse:
        return _json(views.group_detail(self.read(request), request.match_info["group"]))

    async def history(self, request: web.Request) -> web.StreamResponse:
        q = request.query
        queue = q.get("queue")
        return _json(views.history(self.read(request), request.match_info["group"], q.get("topic") or None,
                                   None if queue in (None, "") else views.number(queue, "queue")))

    async def where(self, request: web.Request) -> web.StreamResponse:
        q = request.query
        return _json(views.where(self.read(request), request.match_info["group"], q.get("msgId", ""),
                                 q.get("topic") or None))

    async def events(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: a tick every second; the pages fetch their data again on each."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        queue: asyncio.Queue[str] = asyncio.Queue()
        self._subscribers.add(queue)
        try:
            while True:
                event = await queue.get()
                if not event:
                    break
                await response.write(f"data: {event}\n\n".encode())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self._subscribers.discard(queue)
        return response

    async def trace(self, request: web.Request) -> web.StreamResponse:
        """The wire trace's last lines (text format, to a file), filtered by code names, group and topic."""
        target = self.emulator.config.wire_trace
        if target is None or target == "-":
            raise Invalid("the wire trace is off: start serve with --trace FILE to follow it here")
        q = request.query
        try:
            codes = parse_codes(q["codes"]) if q.get("codes", "").strip() else None
        except ValueError as exc:
            raise Invalid(str(exc)) from None
        trace_filter = TraceFilter(codes, q.get("group") or None, q.get("topic") or None)
        limit = views.number(q.get("lines"), "lines", low=1, default=200)
        try:
            with open(target, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - 2_000_000))
                lines = f.read().decode(errors="replace").splitlines()
        except OSError as exc:
            raise Invalid(f"cannot read the trace file {target}: {exc.strerror}") from None
        if size > 2_000_000:
            lines = lines[1:]  # the first line read is the end of a longer one
        try:  # the live rule of `rocketmq-emulator trace`: requests chosen, their answers; JSON lines as text
            picked = [r if isinstance(r, str) else format_text(r) for r in read_trace(lines, trace_filter)]
        except NotATraceError as exc:
            raise Invalid(f"{target}: {exc}") from None
        return _json({"file": target, "lines": picked[-limit:]})
