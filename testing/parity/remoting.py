"""Runs a remoting scenario over real TCP against a name server and a broker, and returns what came back as
plain data (one record per request or awaited push), before normalisation.

A record: `{"step": name, "request": {"to", "conn", "code", "header", "body"}, "answer": {"code", "remark",
"ext", "body"}}`; an answer that did not come within the step's timeout is `{"no_answer": true}`. A push the
broker sends a connection (`expect_push`) is recorded as `{"step": name, "push": {...}}` (`null` when none came).
"""

from __future__ import annotations

import asyncio
import binascii
import time
from dataclasses import dataclass, field
from typing import Any

import msgspec

from rocketmq_emulator.protocol import bodies
from rocketmq_emulator.protocol.codes import CURRENT_VERSION, RequestCode, ResponseCode, SerializeType, request_code_name
from rocketmq_emulator.protocol.command import RemotingCommand
from rocketmq_emulator.protocol.dispatch import DispatchTable
from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.message import BatchItem, decode_messages, encode_batch, encode_properties
from rocketmq_emulator.protocol.transport import RemotingConnection

from .corpus import CorpusError, Scenario, Step, substitute

#: answers whose body is stored messages
_MESSAGE_BODIES = {RequestCode.PULL_MESSAGE, RequestCode.QUERY_MESSAGE, RequestCode.VIEW_MESSAGE_BY_ID,
                   RequestCode.LITE_PULL_MESSAGE, 200050}  # 200050: POP_MESSAGE
#: pushed requests whose body is one stored message
_MESSAGE_PUSHES = {RequestCode.CHECK_TRANSACTION_STATE,
                   RequestCode.CONSUME_MESSAGE_DIRECTLY}  # PUSH_REPLY_MESSAGE_TO_CLIENT carries the body alone
#: answers whose body is Java properties text (key=value lines)
_PROPERTIES_BODIES = {RequestCode.GET_BROKER_CONFIG, RequestCode.GET_NAMESRV_CONFIG}


def code_of(name: str | int) -> int:
    if isinstance(name, int):
        return name
    try:
        return int(RequestCode[name])
    except KeyError:
        if name.isdigit():
            return int(name)
        raise CorpusError(f"unknown request code {name!r}") from None


def response_name(code: int) -> str:
    try:
        return ResponseCode(code).name
    except ValueError:
        return str(code)


def message_dict(msg: Any) -> dict[str, Any]:
    return {
        "topic": msg.topic, "queueId": msg.queue_id, "queueOffset": msg.queue_offset,
        "commitLogOffset": msg.commit_log_offset, "storeSize": msg.store_size, "sysFlag": msg.sys_flag,
        "flag": msg.flag, "bodyCRC": msg.body_crc, "reconsumeTimes": msg.reconsume_times,
        "preparedTransactionOffset": msg.prepared_transaction_offset,
        "bornTimestamp": msg.born_timestamp, "bornHost": f"{msg.born_host}:{msg.born_port}",
        "storeTimestamp": msg.store_timestamp, "storeHost": f"{msg.store_host}:{msg.store_port}",
        "body": _text_or_hex(msg.body), "properties": dict(sorted(msg.properties.items())),
    }


def _text_or_hex(data: bytes) -> str:
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return "hex:" + binascii.hexlify(data).decode()
    if any(ord(c) < 32 and c not in "\t\r\n" for c in text):
        return "hex:" + binascii.hexlify(data).decode()
    return text


def _plain(value: Any) -> Any:
    """A decoded fastjson value as plain JSON data: object keys (MessageQueue, tuples) become text."""
    if isinstance(value, dict):
        return {_key(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, msgspec.Struct):
        return _plain(msgspec.to_builtins(value))
    return value


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, (int, float, bool)):
        return str(key)
    if isinstance(key, msgspec.Struct):
        key = msgspec.to_builtins(key)
    if isinstance(key, dict):
        return ",".join(f"{k}={v}" for k, v in sorted(key.items()))
    if isinstance(key, tuple):
        return ",".join(f"{k}={v}" for k, v in sorted(key))
    return repr(key)


def decode_body(code: int, body: bytes, body_as: str | None = None, *, push: bool = False) -> Any:
    if not body:
        return None
    kind = body_as or ("messages" if (code in _MESSAGE_PUSHES if push else code in _MESSAGE_BODIES)
                       else "properties" if code in _PROPERTIES_BODIES and not push else "json")
    if kind == "messages":
        try:
            return [message_dict(m) for m in decode_messages(body, strict=False)]
        except ProtocolError as exc:
            return {"undecodable": str(exc), "hex": binascii.hexlify(body).decode()}
    if kind == "properties":
        text = body.decode(errors="replace")
        pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
        return dict(sorted((k.strip(), v.strip()) for k, v in pairs))
    if kind == "json":
        try:
            return _plain(bodies.loads(body))
        except (ProtocolError, ValueError, RecursionError):
            pass
    return _text_or_hex(body)


class _PushTable(DispatchTable):
    """Every request the broker sends this connection is queued for `expect_push`; answered only when the
    scenario says how (`reply`), else left unanswered (as most are oneway)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.pushes: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        self.replies: dict[int, tuple[int, str | None, dict[str, str] | None, bytes]] = {}

    def get(self, code: int) -> Any:
        def handler(request: RemotingCommand, conn: Any) -> RemotingCommand | None:
            self.pushes.put_nowait(request)
            reply = self.replies.get(request.code)
            if reply is None:
                return None
            rcode, remark, ext, body = reply
            return RemotingCommand.response_to(request, rcode, remark, ext, body)
        return handler


@dataclass
class Target:
    """The addresses a scenario runs against (host:port)."""
    namesrv: str
    broker: str

    @property
    def broker_port(self) -> int:
        return int(self.broker.rsplit(":", 1)[1])

    @property
    def namesrv_port(self) -> int:
        return int(self.namesrv.rsplit(":", 1)[1])


@dataclass
class Run:
    """One run of a scenario: its records plus what the normaliser needs to know about the run."""
    scenario: str
    target: Target
    started_ms: int
    ended_ms: int = 0
    records: list[dict[str, Any]] = field(default_factory=list)
    client_ports: set[int] = field(default_factory=set)


class Session:
    def __init__(self, scenario: Scenario, target: Target) -> None:
        self.scenario = scenario
        self.target = target
        self.conns: dict[tuple[str, str], tuple[RemotingConnection, _PushTable]] = {}
        self.names: dict[str, Any] = {}
        self.run = Run(scenario.name, target, int(time.time() * 1000))
        #: requests sent with `background = true`, by step name: their record, once answered (an `await` step)
        self.background: dict[str, asyncio.Task[dict[str, Any]]] = {}

    async def connection(self, to: str, name: str) -> tuple[RemotingConnection, _PushTable]:
        key = (to, name)
        if key not in self.conns or self.conns[key][0].closed:
            addr = self.target.namesrv if to == "namesrv" else self.target.broker
            host, port = addr.rsplit(":", 1)
            table = _PushTable(f"parity-{name}")
            loop = asyncio.get_running_loop()
            _, conn = await loop.create_connection(
                lambda: RemotingConnection(table, name=f"parity-{name}", addr=addr), host, int(port))
            sock = conn.transport.get_extra_info("sockname") if conn.transport else None
            if sock:
                self.run.client_ports.add(sock[1])
            self.conns[key] = (conn, table)
        return self.conns[key]

    def placeholders(self) -> dict[str, Any]:
        return {**self.names, "now": int(time.time() * 1000), "broker": self.target.broker,
                "namesrv": self.target.namesrv, "brokerPort": self.target.broker_port}

    async def close(self) -> None:
        for task in self.background.values():
            task.cancel()
        for conn, _ in self.conns.values():
            conn.close()
        self.conns.clear()

    # -- steps -------------------------------------------------------------------------------------
    async def run_step(self, step: Step) -> None:
        kind = step.kind
        spec = step.spec
        if kind == "sleep":
            await asyncio.sleep(float(spec["sleep"]))
        elif kind == "close":
            key = ("broker", spec["close"]) if not isinstance(spec["close"], dict) else (
                spec["close"].get("to", "broker"), spec["close"]["conn"])
            entry = self.conns.pop(key, None)
            if entry is not None:
                entry[0].close()
                await asyncio.sleep(0.2)
        elif kind == "expect_push":
            await self._expect_push(step)
        elif kind == "await":  # the answer of a request sent earlier with `background = true`, recorded now
            task = self.background.pop(spec["await"])
            self.run.records.append(await asyncio.wait_for(task, float(spec.get("timeout", 60))))
        elif kind == "answer_pushes":  # from now on, answer these pushes on this connection (as a client does)
            want = spec["answer_pushes"]
            _, table = await self.connection(want.get("to", "broker"), want.get("conn", "main"))
            body = msgspec.json.encode(want["reply_body_json"]) if "reply_body_json" in want else b""
            table.replies[code_of(want["code"])] = (int(want.get("reply_code", 0)), None, None, body)
        else:
            await self._request(step)

    async def _expect_push(self, step: Step) -> None:
        want = step.spec["expect_push"]
        conn_name = want.get("conn", "main")
        _, table = await self.connection(want.get("to", "broker"), conn_name)
        code = code_of(want["code"])
        if "reply" in step.spec:
            r = step.spec["reply"]
            table.replies[code] = (int(r.get("code", 0)), r.get("remark"), r.get("ext"),
                                   str(r.get("body", "")).encode())
        deadline = time.monotonic() + float(want.get("timeout", 10))
        got: RemotingCommand | None = None
        while got is None:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                cmd = await asyncio.wait_for(table.pushes.get(), left)
            except TimeoutError:
                break
            if cmd.code == code:
                got = cmd
        record: dict[str, Any] = {"step": step.name, "push": None}
        if got is not None:
            record["push"] = {"code": request_code_name(got.code), "ext": dict(sorted((got.ext_fields or {}).items())),
                              "body": decode_body(got.code, got.body, want.get("body_as"), push=True),
                              "oneway": got.is_oneway}
            for name, path in want.get("save", {}).items():
                self.names[name] = lookup(record["push"], path)
        self.run.records.append(record)

    def _command(self, spec: dict[str, Any], names: dict[str, Any]) -> RemotingCommand:
        code = code_of(spec["code"])
        header = {}
        for k, v in substitute(spec.get("header", {}), names).items():
            header[k] = encode_properties({pk: _str(pv) for pk, pv in v.items()}) if isinstance(v, dict) else _str(v)
        body = b""
        if "body" in spec:
            body = str(substitute(spec["body"], names)).encode()
        elif "body_size" in spec:
            body = b"x" * int(spec["body_size"])
        elif "body_json" in spec:
            body = msgspec.json.encode(substitute(spec["body_json"], names))
        elif "body_hex" in spec:
            body = bytes.fromhex(spec["body_hex"])
        elif "batch" in spec:
            items = substitute(spec["batch"], names)
            body = encode_batch([BatchItem(str(i.get("body", "")).encode(),
                                           {k: _str(v) for k, v in i.get("properties", {}).items()},
                                           int(i.get("flag", 0))) for i in items])
        serialize = SerializeType[spec.get("serialize", "JSON")]
        cmd = RemotingCommand.request(code, header, body, oneway=bool(spec.get("oneway")),
                                      language=spec.get("language", "JAVA"),
                                      version=int(spec.get("version", CURRENT_VERSION)), serialize_type=serialize)
        if "flag" in spec:
            cmd.flag = int(spec["flag"])
        return cmd

    async def _request(self, step: Step) -> None:
        spec = step.spec
        to = spec.get("to", "broker")
        conn, _ = await self.connection(to, spec.get("conn", "main"))
        if spec.get("background"):  # sent now, its answer awaited by a later `await` step (a held pull, say)
            cmd = self._command(spec, self.placeholders())
            request = {"to": to, "conn": spec.get("conn", "main"), "code": request_code_name(cmd.code),
                       "header": dict(sorted((cmd.ext_fields or {}).items()))}
            self.background[step.name] = asyncio.create_task(self._answer(step.name, request, conn, cmd, spec))
            await asyncio.sleep(0.3)  # on its way before the next step
            return
        timeout = float(spec.get("timeout", 5))
        until = spec.get("until")
        deadline = time.monotonic() + float(until.get("timeout", 30)) if until else 0
        while True:
            names = self.placeholders()
            cmd = self._command(spec, names)
            request = {"to": to, "conn": spec.get("conn", "main"), "code": request_code_name(cmd.code),
                       "header": dict(sorted((cmd.ext_fields or {}).items()))}
            if cmd.body:
                request["body"] = _text_or_hex(cmd.body) if len(cmd.body) <= 2048 else f"<{len(cmd.body)} bytes>"
            answer: dict[str, Any]
            if cmd.is_oneway:
                conn.send(cmd)
                await asyncio.sleep(0.3)
                answer = {"oneway": True}
            else:
                answer = await _invoke(conn, cmd, timeout, spec.get("body_as"))
            if not until or _matches(answer, until) or time.monotonic() > deadline:
                break
            await asyncio.sleep(float(until.get("every", 0.25)))
        record = {"step": step.name, "request": request, "answer": answer}
        self.run.records.append(record)
        for name, path in spec.get("save", {}).items():
            self.names[name] = lookup(answer, path)
        if "save_time" in spec:
            self.names[spec["save_time"]] = int(time.time() * 1000)


    async def _answer(self, name: str, request: dict[str, Any], conn: RemotingConnection, cmd: RemotingCommand,
                      spec: dict[str, Any]) -> dict[str, Any]:
        answer = await _invoke(conn, cmd, float(spec.get("timeout", 60)), spec.get("body_as"))
        return {"step": name, "request": request, "answer": answer}


async def _invoke(conn: RemotingConnection, cmd: RemotingCommand, timeout: float, body_as: str | None
                  ) -> dict[str, Any]:
    """The answer as recorded: code, remark, header fields and decoded body, or why there was none."""
    try:
        resp = await conn.invoke(cmd, timeout)
    except Exception as exc:  # noqa: BLE001 - a timeout or a closed connection is what came back
        return {"no_answer": True, "why": type(exc).__name__}
    return {"code": response_name(resp.code), "remark": resp.remark,
            "ext": dict(sorted((resp.ext_fields or {}).items())), "body": decode_body(cmd.code, resp.body, body_as)}


def _str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _matches(answer: dict[str, Any], until: dict[str, Any]) -> bool:
    try:
        value = lookup(answer, until["path"])
    except CorpusError:
        return False
    if "equals" in until:
        return _str(value) == _str(until["equals"])
    if "not_equals" in until:
        return _str(value) != _str(until["not_equals"])
    if "at_least" in until:
        return value is not None and int(value) >= int(until["at_least"])
    if "length" in until:
        return isinstance(value, list) and len(value) == int(until["length"])
    raise CorpusError(f"until needs equals, not_equals, at_least or length: {until}")


def lookup(data: Any, path: str) -> Any:
    """`ext.msgId`, `body.0.properties.UNIQ_KEY`, `body.offsetTable`: a value of a record by a dotted path."""
    value = data
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            raise CorpusError(f"no {path!r} in {str(data)[:300]}")
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value


async def run_scenario(scenario: Scenario, target: Target) -> Run:
    session = Session(scenario, target)
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
