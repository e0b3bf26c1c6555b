"""Runs a gRPC scenario (tests/parity/corpus_grpc/*.toml, `protocol = "grpc"`) against a RocketMQ 5.x gRPC endpoint
(the real 5.3.3 proxy, or the emulator's broker/grpc/) and returns what came back as plain data.

A scenario file:

    protocol = "grpc"
    description = "..."
    families = ["send", ...]
    [setup]                                   # made before the steps, the same way on both sides
    topics = [{name = "T", type = "FIFO", queues = 8}]      # UPDATE_AND_CREATE_TOPIC with `+message.type=FIFO`
    groups = [{name = "G", fifo = true, retry_max_times = 16}]   # UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
    [[step]]
    name = "send one"
    rpc = "SendMessage"                      # a MessagingService RPC
    client = "producer"                      # x-mq-client-id is parity-<client> (default "main")
    request = {messages = [{topic = {name = "T"}, body = {text = "hello"}, ...}]}   # protobuf JSON form
    save = {txid = "entries.0.transactionId"}
    [[step]]
    sleep = 1.0

The setup is the remoting requests `mqadmin5 updateTopic -a +message.type=X` and `updateSubGroup -o true` send
(sent straight to the broker's remoting port: the same bytes, without a JVM per command). Requests are protobuf
JSON (`json_format.ParseDict` into the classes of protocol/grpc_v2's pool) with three conveniences: a Timestamp
field may be an int (ms since the epoch, e.g. "${now+2000}"), a Duration field an int (ms), a bytes field
`{text = "..."}` or `{size = N}` (N bytes of "x"). Placeholders are corpus.py's (`${now}`, saved values).
Metadata: what the 5.x clients send (x-mq-client-id, x-mq-language, x-mq-protocol, x-mq-client-version,
x-mq-request-id, x-mq-date-time); a step's `metadata` table adds or replaces headers (an empty value drops one).

ReceiveMessage records every response of its stream; Telemetry keeps one stream per client open until the scenario
ends (the proxy forgets a client's settings when it goes), writes the step's command(s) and records the commands
read back (`read`, default 1, within `read_timeout` seconds).

A record: `{"step", "request": {"code": rpc, "to": "proxy", "header": {"client"}, "body": request},
"answer": {"grpc": "OK", "response": {...}}}` (`"responses": [...]` for streams; a gRPC error is
`{"grpc": "UNAVAILABLE", "details": "..."}`).
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .corpus import CorpusError, read_scenario_file, read_steps, settings_text, substitute
from .remoting import lookup

STEP_KEYS = frozenset({"name", "rpc", "request", "requests", "metadata", "client", "save", "timeout", "read",
                       "read_timeout", "save_time", "order_by"})
OTHER_KEYS = frozenset({"name", "sleep", "close"})
SETUP_KEYS = frozenset({"topics", "groups"})


@dataclass(frozen=True)
class GrpcStep:
    index: int
    name: str
    spec: dict[str, Any]

    @property
    def kind(self) -> str:
        for kind in ("rpc", "sleep", "close"):
            if kind in self.spec:
                return kind
        raise CorpusError(f"step {self.index} ({self.name}) is neither an rpc, sleep nor close")


@dataclass(frozen=True)
class GrpcScenario:
    name: str
    path: Path
    description: str
    families: tuple[str, ...]
    settings: dict[str, str]
    setup: dict[str, Any]
    steps: tuple[GrpcStep, ...]
    protocol: str = "grpc"

    def request_count(self) -> int:
        return sum(1 for s in self.steps if s.kind == "rpc")


def load_grpc_scenario(path: Path) -> GrpcScenario:
    data = read_scenario_file(path)
    if data.get("protocol") != "grpc":
        raise CorpusError(f"{path.name}: a gRPC scenario says protocol = \"grpc\"")
    steps = read_steps(path, data.get("step", []), lambda spec: STEP_KEYS if "rpc" in spec else OTHER_KEYS, GrpcStep)
    setup = data.get("setup", {})
    if set(setup) - SETUP_KEYS:
        raise CorpusError(f"{path.name}: unknown setup keys {sorted(set(setup) - SETUP_KEYS)}")
    return GrpcScenario(path.stem, path, data.get("description", ""), tuple(data.get("families", ())),
                        settings_text(data.get("settings", {})), setup, steps)


def load_grpc_corpus(directory: Path, only: list[str] | None = None) -> list[GrpcScenario]:
    scenarios = [load_grpc_scenario(p) for p in sorted(directory.glob("*.toml"))]
    if only:
        scenarios = [s for s in scenarios if s.name in only]
    return scenarios


@dataclass
class GrpcTarget:
    """The addresses a gRPC scenario runs against (host:port): the gRPC endpoint, the broker's remoting port (for
    the setup) and the name server."""
    grpc: str
    broker: str
    namesrv: str

    @staticmethod
    def port(addr: str) -> int:
        return int(addr.rsplit(":", 1)[1])


@dataclass
class GrpcRun:
    scenario: str
    target: GrpcTarget
    started_ms: int
    ended_ms: int = 0
    records: list[dict[str, Any]] = field(default_factory=list)


# -- requests in protobuf JSON ------------------------------------------------------------------------
def _rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _prepare(value: Any, desc: Any) -> Any:
    """The conveniences (int times and durations, text bodies) turned into protobuf JSON for message `desc`."""
    if not isinstance(value, dict):
        return value
    out = {}
    for key, v in value.items():
        fd = desc.fields_by_camelcase_name.get(key) or desc.fields_by_name.get(key)
        if fd is None:
            out[key] = v
            continue
        items = v if isinstance(v, list) and _repeated(fd) else [v]
        done = [_prepare_field(x, fd) for x in items]
        out[key] = done if isinstance(v, list) and _repeated(fd) else done[0]
    return out


def _repeated(fd: Any) -> bool:
    repeated = getattr(fd, "is_repeated", None)
    return bool(repeated) if repeated is not None else fd.label == fd.LABEL_REPEATED


def _prepare_field(v: Any, fd: Any) -> Any:
    if fd.message_type is not None:
        full = fd.message_type.full_name
        if full == "google.protobuf.Timestamp" and isinstance(v, int):
            return _rfc3339(v)
        if full == "google.protobuf.Duration" and isinstance(v, int):
            return f"{v // 1000}.{v % 1000:03d}s"
        if fd.message_type.GetOptions().map_entry:
            return v
        return _prepare(v, fd.message_type)
    if fd.type == fd.TYPE_BYTES and isinstance(v, dict):
        data = v["text"].encode() if "text" in v else b"x" * int(v["size"])
        return base64.b64encode(data).decode()
    return v


def build_request(rpc: str, body: dict[str, Any]) -> Any:
    from google.protobuf import json_format

    from rocketmq_emulator.protocol.grpc_v2 import method_types

    request_cls = method_types(rpc)[0]
    return json_format.ParseDict(_prepare(body, request_cls.DESCRIPTOR), request_cls())


def as_dict(message: Any) -> dict[str, Any]:
    from google.protobuf import json_format

    return json_format.MessageToDict(message)  # type: ignore[no-any-return]  # protobuf's dict is untyped


# -- setup ---------------------------------------------------------------------------------------------
async def apply_setup(setup: dict[str, Any], target: GrpcTarget) -> None:
    """Typed topics and FIFO groups as `mqadmin5 updateTopic -a +message.type=X` / `updateSubGroup -o true` make
    them, then waits until the name server routes every topic."""
    if not setup:
        return
    from rocketmq_emulator.protocol.admin_bodies import SubscriptionGroupConfig
    from rocketmq_emulator.protocol.codes import RequestCode, ResponseCode
    from rocketmq_emulator.protocol.command import RemotingCommand
    from rocketmq_emulator.protocol.dispatch import DispatchTable
    from rocketmq_emulator.protocol.transport import RemotingConnection

    async def connect(addr: str) -> RemotingConnection:
        host, port = addr.rsplit(":", 1)
        _, conn = await asyncio.get_running_loop().create_connection(
            lambda: RemotingConnection(DispatchTable("parity-setup"), name="parity-setup", addr=addr), host, int(port))
        return conn

    broker = await connect(target.broker)
    namesrv = await connect(target.namesrv)
    try:
        for t in setup.get("topics", []):
            queues = str(t.get("queues", 8))
            ext = {"topic": t["name"], "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues,
                   "perm": str(t.get("perm", 6)), "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
                   "order": "false"}
            if "type" in t:
                ext["attributes"] = f"+message.type={t['type']}"
            resp = await broker.invoke(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext), 10)
            if resp.code != ResponseCode.SUCCESS:
                raise CorpusError(f"setup: topic {t['name']}: {resp.code} {resp.remark}")
        for g in setup.get("groups", []):
            cfg = SubscriptionGroupConfig(group_name=g["name"], consume_message_orderly=bool(g.get("fifo", False)),
                                          retry_max_times=int(g.get("retry_max_times", 16)))
            resp = await broker.invoke(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {},
                                                               cfg.encode()), 10)
            if resp.code != ResponseCode.SUCCESS:
                raise CorpusError(f"setup: group {g['name']}: {resp.code} {resp.remark}")
        deadline = time.monotonic() + 15
        for t in setup.get("topics", []):
            while True:
                resp = await namesrv.invoke(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                                    {"topic": t["name"]}), 5)
                if resp.code == ResponseCode.SUCCESS or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
    finally:
        broker.close()
        namesrv.close()


# -- the steps -----------------------------------------------------------------------------------------
class GrpcSession:
    def __init__(self, scenario: GrpcScenario, target: GrpcTarget) -> None:
        import grpc

        self.scenario = scenario
        self.target = target
        self.channel = grpc.aio.insecure_channel(target.grpc, options=[
            ("grpc.max_send_message_length", 64 * 1024 * 1024),
            ("grpc.max_receive_message_length", 64 * 1024 * 1024)])
        self.names: dict[str, Any] = {}
        self.telemetry: dict[str, Any] = {}
        self.run = GrpcRun(scenario.name, target, int(time.time() * 1000))

    def placeholders(self) -> dict[str, Any]:
        host, port = self.target.grpc.rsplit(":", 1)
        return {**self.names, "now": int(time.time() * 1000), "grpcHost": host, "grpcPort": int(port)}

    def metadata(self, spec: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        client = spec.get("client", "main")
        md = {"x-mq-client-id": f"parity-{client}", "x-mq-language": "JAVA", "x-mq-protocol": "v2",
              "x-mq-client-version": "5.0.7", "x-mq-request-id": str(uuid.uuid4()),
              "x-mq-date-time": datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")}
        for k, v in spec.get("metadata", {}).items():
            if v == "":
                md.pop(k, None)
            else:
                md[k] = str(v)
        return tuple(md.items())

    async def close(self) -> None:
        for call in self.telemetry.values():
            call.cancel()
        self.telemetry.clear()
        await self.channel.close()

    async def run_step(self, step: GrpcStep) -> None:
        spec = step.spec
        if step.kind == "sleep":
            await asyncio.sleep(float(spec["sleep"]))
            return
        if step.kind == "close":
            call = self.telemetry.pop(str(spec["close"]), None)
            if call is not None:
                await call.done_writing()
                call.cancel()
                await asyncio.sleep(0.2)
            return
        from rocketmq_emulator.protocol.grpc_v2 import SERVICE, method_types

        rpc = spec["rpc"]
        _, response_cls, client_streaming, server_streaming = method_types(rpc)
        names = self.placeholders()
        bodies = substitute(spec.get("requests", [spec.get("request", {})]), names)
        requests = [build_request(rpc, b) for b in bodies]
        md = self.metadata(spec)
        timeout = float(spec.get("timeout", 10))
        record_request = {"code": rpc, "to": "proxy", "header": {"client": spec.get("client", "main")},
                          "body": bodies[0] if len(bodies) == 1 else bodies}
        answer: dict[str, Any]
        view: dict[str, Any]
        try:
            if client_streaming:
                responses = await self._telemetry(spec, requests, md, response_cls)
                answer = {"grpc": "OK", "responses": [as_dict(r) for r in responses]}
                view = {"responses": answer["responses"]}
            elif server_streaming:
                call = self.channel.unary_stream(f"/{SERVICE}/{rpc}",
                                                 request_serializer=type(requests[0]).SerializeToString,
                                                 response_deserializer=response_cls.FromString)
                got = [as_dict(r) async for r in call(requests[0], metadata=md, timeout=timeout)]
                if "order_by" in spec:
                    got = _ordered(got, spec["order_by"])
                answer = {"grpc": "OK", "responses": got}
                view = {"responses": got, "messages": [r["message"] for r in got if "message" in r],
                        **next((r for r in got if "status" in r), {})}
            else:
                call = self.channel.unary_unary(f"/{SERVICE}/{rpc}",
                                                request_serializer=type(requests[0]).SerializeToString,
                                                response_deserializer=response_cls.FromString)
                got1 = as_dict(await call(requests[0], metadata=md, timeout=timeout))
                answer = {"grpc": "OK", "response": got1}
                view = got1
        except Exception as exc:  # noqa: BLE001 - a gRPC error status is what came back
            code = getattr(exc, "code", None)
            answer = {"grpc": code().name if callable(code) else type(exc).__name__,
                      "details": exc.details() if hasattr(exc, "details") else str(exc)}
            view = {}
        self.run.records.append({"step": step.name, "request": record_request, "answer": answer})
        for name, path in spec.get("save", {}).items():
            try:
                self.names[name] = lookup(view, path)
            except CorpusError:  # the answer lacks it: later steps send this text, the records show why
                self.names[name] = f"<no {path}>"
        if "save_time" in spec:
            self.names[spec["save_time"]] = int(time.time() * 1000)

    async def _telemetry(self, spec: dict[str, Any], requests: list[Any], md: Any, response_cls: Any) -> list[Any]:
        from rocketmq_emulator.protocol.grpc_v2 import SERVICE

        client = str(spec.get("client", "main"))
        call = self.telemetry.get(client)
        if call is None or call.done():
            stream = self.channel.stream_stream(f"/{SERVICE}/Telemetry",
                                                request_serializer=type(requests[0]).SerializeToString,
                                                response_deserializer=response_cls.FromString)
            call = self.telemetry[client] = stream(metadata=md)
        for r in requests:
            await call.write(r)
        got = []
        deadline = time.monotonic() + float(spec.get("read_timeout", 3))
        for _ in range(int(spec.get("read", 1))):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                item = await asyncio.wait_for(call.read(), left)
            except TimeoutError:
                break
            if item is None or not hasattr(item, "ListFields"):  # the stream ended
                break
            got.append(item)
        return got


def _ordered(responses: list[dict[str, Any]], keys: list[str]) -> list[dict[str, Any]]:
    """The received messages of a stream sorted by `keys` (paths in a message, e.g. systemProperties.queueId), in
    the places the messages had: a broker's pop starts at a random queue, so messages of several queues come in
    an order of chance (`order_by` of a ReceiveMessage step)."""
    places = [i for i, r in enumerate(responses) if "message" in r]

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        out = []
        for path in keys:
            try:
                v = lookup(r["message"], path)
            except CorpusError:
                v = ""
            out.append((0, v) if isinstance(v, int) else (1, str(v)))
        return tuple(out)

    messages = sorted((responses[i] for i in places), key=key)
    out = list(responses)
    for i, m in zip(places, messages):
        out[i] = m
    return out


async def run_grpc_scenario(scenario: GrpcScenario, target: GrpcTarget) -> GrpcRun:
    await apply_setup(scenario.setup, target)
    session = GrpcSession(scenario, target)
    try:
        for step in scenario.steps:
            try:
                await session.run_step(step)
            except CorpusError as exc:
                raise CorpusError(f"{scenario.name}: step {step.index} ({step.name}): {exc}") from None
    finally:
        await session.close()
    session.run.ended_ms = int(time.time() * 1000)
    return session.run
