"""Client scenarios of the parity tier: the official Java 4.9.8, C++ and Go clients run against a broker, and what
they observe (deliveries per queue in their order, redeliveries, committed offsets, dead-letter queue, result
lines) is normalised into records that compare like the remoting corpus's (compare.py).

Scenarios are data: `tests/parity/clients/scenarios.toml` (its header says the format). Snapshots:
`tests/parity/clients/<name>.json`, written by `record-clients` when two recordings against fresh real 4.9.8
brokers normalise to the same data; `integration_tests/test_parity_clients.py` replays them on the emulator.

The drivers are the project's: `integration_tests/java_client.py` (Java drivers and mqadmin), `cpp_driver.py`
(C++ client, one process per client), `integration_tests/go/rmq-go` (Go client), plus `ParityClient.java` of
tests/parity/clients/java (ordered send and consumption, a consumer that fails: what the other drivers lack).
They live in the checkout, not in the installed package: this module runs from a checkout.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .normalise import Context, normalise_records
from .real import ROOT, shared_dir

CLIENTS_DIR = ROOT / "tests" / "parity" / "clients"
SCENARIOS_FILE = CLIENTS_DIR / "scenarios.toml"
PARITY_DRIVER = CLIENTS_DIR / "java" / "ParityClient.java"

#: message properties dropped from observations, each with its reason (two fresh real brokers differ in them)
DROPPED_PROPERTIES = {
    "UNIQ_KEY": "the client makes it from its IP, pid, start time and a counter",
    "CONSUME_START_TIME": "the client's clock when the listener was called",
    "MAX_OFFSET": "the queue's max offset when the pull was answered: how many messages (or retries) had arrived "
                  "by then is timing",
    "MIN_OFFSET": "kept with MAX_OFFSET (set by the same pull)",
}
#: properties whose value is an id the client made: shown as what it is, not as the value
CLIENT_IDS = ("ORIGIN_MESSAGE_ID",)
#: fields of a result line dropped: run-specific (run id, home dir, elapsed times, timestamps)
DROPPED_RESULT_FIELDS = ("run_id", "home", "t", "pid", "elapsed_ms", "clientId")


@dataclass
class ClientRun:
    name: str
    client: str                 # java | parity | cpp | go | mqadmin
    args: list[str]
    timeout: float = 90
    background: bool = False    # start and go on; awaited before the broker is observed
    ordered: bool = False       # deliveries keep the client's order (orderly consumer); else sorted by offset
    wait: float = 0.0           # seconds after it ended (or started, when background)


@dataclass
class ClientScenario:
    name: str
    description: str
    topic: str
    groups: list[str]
    runs: list[ClientRun]
    settings: dict[str, str] = field(default_factory=dict)
    dlq: int = 0                # messages expected in %DLQ%<first group> (waited for, then read)

    @property
    def families(self) -> list[str]:
        return ["clients"]


def load_scenarios(names: list[str] | None = None, path: Path = SCENARIOS_FILE) -> list[ClientScenario]:
    data = tomllib.loads(path.read_text())
    out = []
    for s in data["scenario"]:
        runs = [ClientRun(r["name"], r["client"], [str(a) for a in r["args"]], r.get("timeout", 90),
                          r.get("background", False), r.get("ordered", False), r.get("wait", 0.0))
                for r in s["run"]]
        out.append(ClientScenario(s["name"], s.get("description", ""), s["topic"], s.get("groups", []), runs,
                                  {k: str(v) for k, v in s.get("settings", {}).items()}, s.get("dlq", 0)))
    if names:
        unknown = set(names) - {s.name for s in out}
        if unknown:
            raise SystemExit(f"unknown client scenarios: {', '.join(sorted(unknown))}")
        out = [s for s in out if s.name in names]
    return out


def _integration(module: str) -> Any:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return __import__(f"integration_tests.{module}", fromlist=["_"])


class Tools:
    """The client drivers: Java (compiled once into `workdir`), C++ (cpp_driver.py), Go (rmq-go)."""

    def __init__(self, workdir: Path, java: Any = None) -> None:
        self.workdir = workdir
        # (ParityClient.java is compiled with the other drivers: integration_tests/java_client.py)
        self.java = java or _integration("java_client").JavaClients.prepare(workdir / "java")
        self.go = go_binary()

    def mqadmin_command(self, home: Path) -> str:
        return shlex.join(self.java._java(home, self.java.tools_cp, "MQAdminPlus", ()))

    def start(self, run: ClientRun, args: list[str], home: Path) -> Any:
        if run.client in ("java", "parity"):
            driver = args[0] if run.client == "java" else "ParityClient"
            rest = args[1:] if run.client == "java" else args
            return self.java.start(driver, *rest, timeout=run.timeout, home=home)
        if run.client == "mqadmin":
            return self.java.start("MQAdminPlus", *args, timeout=run.timeout, home=home)
        if run.client == "cpp":
            return _integration("cppclient").start_driver(args, timeout=run.timeout, home=home)
        if run.client == "go":
            if self.go is None:
                raise FileNotFoundError(f"the Go client driver rmq-go was not found: neither {GO_BINARY} (vendored) "
                                        "nor shared/clients/go/rmq-go")
            home.mkdir(parents=True, exist_ok=True)
            proc = subprocess.Popen([str(self.go), *args, "--home", str(home)], cwd=home, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
            return _integration("cppclient").DriverHandle(proc, run.timeout, None)
        raise ValueError(f"unknown client {run.client!r}")


#: the Go driver vendored in the checkout (integration_tests/go/README.md); ../shared/clients/go/rmq-go is the fallback
GO_BINARY = ROOT / "integration_tests" / "go" / "rmq-go"


def go_binary() -> Path | None:
    """The Go client driver: the vendored integration_tests/go/rmq-go, else shared/clients/go/rmq-go; None if
    neither is there."""
    if GO_BINARY.exists():
        return GO_BINARY
    try:
        path = shared_dir() / "clients" / "go" / "rmq-go"
    except FileNotFoundError:
        return None
    return path if path.exists() else None


@dataclass
class Observation:
    """What one run of a scenario saw, before normalisation."""
    namesrv: str
    broker: str
    started_ms: int
    ended_ms: int = 0
    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    broker_view: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return json.dumps({"events": self.events, "exit": self.exit_codes, "broker": self.broker_view},
                          default=str)[:6000]


def run_scenario(scenario: ClientScenario, namesrv: str, broker: str, tools: Tools) -> Observation:
    obs = Observation(namesrv, broker, int(time.time() * 1000))
    with tempfile.TemporaryDirectory(prefix=f"parity-clients-{scenario.name}-") as tmp:
        values = {"namesrv": namesrv, "topic": scenario.topic, "mqadmin": tools.mqadmin_command(Path(tmp) / "admin")}
        background: list[tuple[ClientRun, Any]] = []
        for run in scenario.runs:
            args = [re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], a) for a in run.args]
            handle = tools.start(run, args, Path(tmp) / run.name)
            if run.background:
                background.append((run, handle))
                time.sleep(run.wait)
                continue
            handle.wait()
            obs.events[run.name], obs.exit_codes[run.name] = handle.events, handle.returncode
            time.sleep(run.wait)
        for run, handle in background:
            handle.wait()
            obs.events[run.name], obs.exit_codes[run.name] = handle.events, handle.returncode
        obs.broker_view = asyncio.run(observe_broker(scenario, namesrv, broker))
    obs.ended_ms = int(time.time() * 1000)
    return obs


async def observe_broker(scenario: ClientScenario, namesrv: str, broker: str) -> dict[str, Any]:
    """Per queue of the topic, the groups' retry topics and DLQ: min/max offset and the groups' committed offsets
    (QUERY_CONSUMER_OFFSET, or the refusal's code); the DLQ's messages."""
    from rocketmq_emulator.client import PullConsumer
    from rocketmq_emulator.client.errors import BrokerResponseError, NoRouteError
    from rocketmq_emulator.protocol import ResponseCode
    from rocketmq_emulator.protocol.bodies import MessageQueue

    view: dict[str, Any] = {"queues": {}, "dlq": []}
    async with PullConsumer("parity_observer", namesrv=namesrv, instance_name="parity-observer") as reader:
        api = reader.instance.api
        topics = [scenario.topic] + [f"%RETRY%{g}" for g in scenario.groups] + [f"%DLQ%{g}" for g in scenario.groups]
        if scenario.dlq:
            deadline = time.monotonic() + 30
            mq = MessageQueue(f"%DLQ%{scenario.groups[0]}", "broker-a", 0)
            while time.monotonic() < deadline:
                try:
                    if await api.max_offset(broker, mq) >= scenario.dlq:
                        break
                except BrokerResponseError:
                    pass
                await asyncio.sleep(0.5)
        for topic in topics:
            try:
                mqs = sorted(await reader.fetch_message_queues(topic), key=lambda q: q.queue_id)
            except (NoRouteError, BrokerResponseError):
                continue
            for mq in mqs:
                row: dict[str, Any] = {"min": await api.min_offset(broker, mq), "max": await api.max_offset(broker, mq)}
                for group in scenario.groups:
                    try:
                        row[f"committed {group}"] = await api.query_consumer_offset(broker, group, mq)
                    except BrokerResponseError as exc:
                        row[f"committed {group}"] = _code_name(exc.code, ResponseCode)
                view["queues"][f"{topic}:{mq.queue_id}"] = row
                if topic.startswith("%DLQ%") and row["max"] > 0:
                    result = await reader.pull(mq, 0, 32)
                    view["dlq"] += [{"queueOffset": m.queue_offset, "body": m.body.decode("utf-8", "replace"),
                                     "tags": m.tags, "keys": m.keys, "reconsumeTimes": m.reconsume_times,
                                     "properties": dict(m.properties)} for m in result.messages]
    return view


def _code_name(code: int, codes: Any) -> str:
    try:
        return str(codes(code).name)
    except ValueError:
        return str(code)


# -- normalisation ------------------------------------------------------------------------------------------------
_INDEX = re.compile(r"(\d+)$")
_GO_RUN = re.compile(r"\b[0-9a-f]{8,}\b")


def _delivery(client: str, e: dict[str, Any]) -> dict[str, Any]:
    """One consumed/pulled message, whatever driver printed it."""
    body = e.get("body") or ""
    if client == "go":
        body = _GO_RUN.sub("<run>", body)
    props = e.get("properties")
    out: dict[str, Any] = {
        "topic": e.get("topic"), "queueId": e.get("queueId", e.get("queue_id")),
        "queueOffset": e.get("queueOffset", e.get("queue_offset")), "body": body, "tags": e.get("tags"),
        "keys": e.get("keys"), "reconsumeTimes": e.get("reconsumeTimes", e.get("reconsume_times"))}
    if "phase" in e:
        out["phase"] = e["phase"]
    if "failed" in e:
        out["failed"] = e["failed"]
    if props is not None:
        out["properties"] = _properties(props)
    return out


def _properties(props: dict[str, str]) -> dict[str, str]:
    """Without DROPPED_PROPERTIES; an id in CLIENT_IDS that is the message's UNIQ_KEY (or another client-made id,
    not an offset msgId, which the msgid rule normalises) is named, not shown."""
    out = {}
    for k, v in sorted(props.items()):
        if k in DROPPED_PROPERTIES:
            continue
        if k in CLIENT_IDS and not _OFFSET_ID.match(v):
            v = "<the message's UNIQ_KEY>" if v == props.get("UNIQ_KEY") else "<a client-made id>"
        out[k] = v
    return out


_OFFSET_ID = re.compile(r"^7F000001[0-9A-F]{24}$")


def _is_retry(d: dict[str, Any]) -> bool:
    props = d.get("properties")
    if props is not None:
        return "RETRY_TOPIC" in props
    return bool(d.get("reconsumeTimes"))


def _index(body: str) -> int:
    m = _INDEX.search(body)
    return int(m.group(1)) if m else 1 << 30


def queue_labels(scenario: ClientScenario, obs: Observation) -> dict[int, str]:
    """Queue ids of the topic -> q0, q1, ... in the order of the first message each got (by run, then by the
    message's index). Why: the Java producer's round robin starts at a random queue, so which queue id got
    message 0 differs between two fresh real brokers; what each queue got, in which order, does not."""
    first: dict[int, tuple[int, int]] = {}
    for n, run in enumerate(scenario.runs):
        for e in obs.events.get(run.name, []):
            if e.get("event") == "sent" and e.get("queueId") is not None:
                qid, body = e["queueId"], e.get("body", "")
            elif e.get("event") in ("consumed", "polled", "received", "pulled"):
                d = _delivery(run.client, e)
                if _is_retry(d) or d["queueId"] is None:
                    continue
                qid, body = d["queueId"], d["body"]
            else:
                continue
            key = (n, _index(body))
            if qid not in first or key < first[qid]:
                first[qid] = key
    return {qid: f"q{i}" for i, qid in enumerate(sorted(first, key=lambda q: first[q]))}


def observation_records(scenario: ClientScenario, obs: Observation) -> list[dict[str, Any]]:
    """The observation as records ({"step", "answer"}) for compare.diff_records, normalised."""
    labels = queue_labels(scenario, obs)

    def label(topic_queue: str) -> str:
        topic, _, qid = topic_queue.rpartition(":")
        if topic == scenario.topic:
            return labels.get(int(qid), f"unlabelled-{qid}")
        return f"{topic.split('%')[1] if topic.startswith('%') else topic}:{qid}"

    records = []
    for run in scenario.runs:
        events = obs.events.get(run.name, [])
        answer: dict[str, Any] = {"exit": obs.exit_codes.get(run.name)}
        sent: dict[str, list[dict[str, Any]]] = {}
        for e in events:
            if e.get("event") == "sent":
                where = labels.get(e["queueId"], f"unlabelled-{e['queueId']}") if "queueId" in e else "?"
                offset = e.get("queueOffset", e.get("offset"))
                body = _GO_RUN.sub("<run>", e.get("body", "")) if run.client == "go" else e.get("body")
                sent.setdefault(where, []).append({"queueOffset": offset, "body": body if body is not None
                                                   else f"#{e.get('i')}", "status": e.get("status"),
                                                   "offsetMsgId": e.get("offsetMsgId")})
        if sent:
            answer["sent"] = {k: sorted(v, key=lambda s: (s["queueOffset"] is None, s["queueOffset"] or 0,
                                                          _index(s["body"] or "")))
                              for k, v in sorted(sent.items())}
        queues: dict[str, list[dict[str, Any]]] = {}
        deliveries: dict[str, int] = {}
        for e in events:
            if e.get("event") not in ("consumed", "polled", "received", "pulled"):
                continue
            d = _delivery(run.client, e)
            where = (f"RETRY:{d['queueId']}" if _is_retry(d)
                     else labels.get(d["queueId"], f"unlabelled-{d['queueId']}"))
            deliveries[d["body"]] = deliveries.get(d["body"], 0) + 1
            queues.setdefault(where, []).append({k: v for k, v in d.items() if k not in ("queueId", "topic")})
        if queues:
            if not run.ordered:  # concurrently consumed: the listener runs on a thread pool, its print order is not
                for q in queues.values():  # defined; sorted by phase, offset and attempt
                    q.sort(key=lambda d: (d.get("phase", 0), d["queueOffset"], d["reconsumeTimes"] or 0))
            for where, q in queues.items():
                if where.startswith("RETRY:"):
                    _unorder(q)
            answer["deliveries"] = dict(sorted(queues.items()))
            answer["messages"] = len(deliveries)
            answer["delivered more than once"] = {b: n for b, n in sorted(deliveries.items()) if n > 1}
        results = [e for e in events if e.get("event") in ("result", "done")]
        if results:
            answer["result"] = {k: v for k, v in results[-1].items() if k not in DROPPED_RESULT_FIELDS}
        records.append({"step": run.name, "answer": answer})
    records.append({"step": "broker offsets", "answer": dict(sorted((label(k), v) for k, v in
                                                                   obs.broker_view.get("queues", {}).items()))})
    if scenario.dlq:
        dlq = [{**m, "properties": _properties(m["properties"])} for m in obs.broker_view.get("dlq", [])]
        _unorder(dlq)
        records.append({"step": "dead-letter queue", "answer": {"messages": dlq}})
    ctx = Context(_port(obs.namesrv), _port(obs.broker), obs.started_ms, obs.ended_ms or obs.started_ms)
    return normalise_records(records, ctx)


def _unorder(messages: list[dict[str, Any]]) -> None:
    """Messages of a retry topic or DLQ: sorted by attempt and message, without their queue offsets. Why: a
    concurrent consumer's threads send failed messages back in the order they finish, so which one gets which
    offset of the retry queue differs between two runs; the offsets each round takes do not (broker offsets)."""
    for m in messages:
        m.pop("queueOffset", None)
    messages.sort(key=lambda m: (m.get("reconsumeTimes") or 0, _index(m.get("body") or ""), m.get("body") or ""))


def _port(addr: str) -> int:
    return int(addr.rsplit(":", 1)[1])


# -- snapshots, record and replay ----------------------------------------------------------------------------------
def snapshot_path(name: str) -> Path:
    return CLIENTS_DIR / f"{name}.json"


def write_snapshot(scenario: ClientScenario, records: list[dict[str, Any]], recorded_with: str, runs: int) -> Path:
    path = snapshot_path(scenario.name)
    data = {"scenario": scenario.name, "recorded_with": recorded_with, "recordings_compared": runs,
            "settings": scenario.settings, "records": records}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def record(names: list[str] | None, times: int = 2, raw: Path | None = None) -> int:
    """Each scenario `times` times, each against a fresh real 4.9.8 broker; a snapshot when all agree."""
    from .compare import diff_records, report
    from .real import REAL_49, start

    failed = 0
    with tempfile.TemporaryDirectory(prefix="parity-clients-tools-") as work:
        tools = Tools(Path(work))
        for scenario in load_scenarios(names):
            runs = []
            for i in range(times):
                broker = start(REAL_49, scenario.settings)
                t0 = time.monotonic()
                try:
                    obs = run_scenario(scenario, broker.namesrv, broker.broker, tools)
                finally:
                    broker.stop()
                print(f"recorded {scenario.name} #{i + 1} in {time.monotonic() - t0:.1f} s", flush=True)
                if raw is not None:
                    raw.mkdir(parents=True, exist_ok=True)
                    (raw / f"{scenario.name}.{i + 1}.json").write_text(obs.describe())
                runs.append(observation_records(scenario, obs))
            unstable = [d for other in runs[1:] for d in diff_records(scenario.name, runs[0], other)]
            if unstable:
                failed += 1
                print(f"\n{scenario.name}: two fresh real brokers made the clients see different things after "
                      f"normalisation:\n" + report(unstable), file=sys.stderr)
                continue
            print(f"wrote {write_snapshot(scenario, runs[0], REAL_49.name, len(runs))}")
    return 1 if failed else 0


def emulator_settings(scenario: ClientScenario, compat: str | None) -> dict[str, str]:
    from rocketmq_emulator.broker.settings import IGNORED_KEYS

    from .snapshots import REAL_BROKER_SETTINGS

    settings = {k: v for k, v in {**REAL_BROKER_SETTINGS, **scenario.settings}.items() if k not in IGNORED_KEYS}
    if compat is not None:
        settings["compat"] = compat
    return settings


def run_on_emulator(scenario: ClientScenario, tools: Tools, compat: str | None = None) -> Observation:
    from rocketmq_emulator.testing.emulator_thread import EmulatorThread

    with tempfile.TemporaryDirectory(prefix="parity-clients-emu-") as store:
        emu = EmulatorThread(Path(store), **emulator_settings(scenario, compat))
        try:
            emu.start()
            return run_scenario(scenario, emu.namesrv_addr, f"127.0.0.1:{emu.broker_port}", tools)
        finally:
            emu.close()


def replay(scenario: ClientScenario, tools: Tools, compat: str | None = None) -> tuple[list[Any], Observation]:
    """The differences between the snapshot and what the clients see on a fresh emulator (and that observation)."""
    from .compare import diff_records

    snapshot = json.loads(snapshot_path(scenario.name).read_text())
    obs = run_on_emulator(scenario, tools, compat)
    return diff_records(f"clients/{scenario.name}", snapshot["records"], observation_records(scenario, obs)), obs
