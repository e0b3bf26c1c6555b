"""Normalisation: what differs between two fresh real brokers given the same requests, made equal. Nothing else
is touched: a value that two real brokers answer the same must be answered the same by the emulator.

Each rule has its reason. Value rules apply to every value (and map key) of a record; path rules to the values
at the paths they name (`fnmatch` patterns over dotted paths such as `answer.body.table.putTps`, list indexes as
numbers). `record` twice and `check` tell whether the rules are enough (python -m
rocketmq_emulator.testing.parity check): the two recordings must normalise to the same data.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any, Callable

from rocketmq_emulator.protocol.message import decode_message_id

from .remoting import Run

DAY_MS = 86_400_000


@dataclass(frozen=True)
class Context:
    """What a run's values are normalised against."""
    namesrv_port: int
    broker_port: int
    started_ms: int
    ended_ms: int

    @classmethod
    def of(cls, run: Run) -> Context:
        return cls(run.target.namesrv_port, run.target.broker_port, run.started_ms, run.ended_ms)

    def port_name(self, port: int) -> str:
        names = {self.namesrv_port: "namesrv", self.broker_port: "broker", self.broker_port - 2: "broker-vip",
                 self.broker_port + 1: "broker-ha"}
        return f"<{names.get(port, 'client')}-port>"


@dataclass(frozen=True)
class ValueRule:
    name: str
    reason: str
    apply: Callable[[Any, Context], Any]


@dataclass(frozen=True)
class PathRule:
    name: str
    reason: str
    paths: tuple[str, ...]
    replacement: str


def _time(value: Any, ctx: Context) -> Any:
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.isdigit() and len(value) == 13:
        number = int(value)
    if number is not None and ctx.started_ms - 3 * DAY_MS <= number <= ctx.ended_ms + DAY_MS:
        return "<time>"
    if isinstance(value, str) and len(value) > 13:  # a time inside a text (a remark naming the timestamp)
        new = _MS_IN_TEXT.sub(lambda m: "<time>" if ctx.started_ms - 3 * DAY_MS <= int(m.group(0))
                              <= ctx.ended_ms + DAY_MS else m.group(0), value)
        return value if new == value else new
    return value


_MS_IN_TEXT = re.compile(r"(?<!\d)\d{13}(?!\d)")
_TIME_TEXT = re.compile(r"\d{4}-\d\d-\d\d[# ]\d\d:\d\d:\d\d(?:[:.,]\d{3})?")


def _time_text(value: Any, ctx: Context) -> Any:
    """A wall-clock time written out (UtilAll.timeMillisToHumanString2: 2026-11-26#12:00:00:000)."""
    if isinstance(value, str) and len(value) >= 19 and _TIME_TEXT.search(value):
        return _TIME_TEXT.sub("<time>", value)
    return value


_ADDRESS = re.compile(r"(127\.0\.0\.1|localhost|\d+\.\d+\.\d+\.\d+):(\d{2,5})\b")


def _addresses(value: Any, ctx: Context) -> Any:
    if isinstance(value, str) and ":" in value:
        return _ADDRESS.sub(lambda m: f"{m.group(1)}:{ctx.port_name(int(m.group(2)))}", value)
    return value


_MSGID = re.compile(r"^[0-9A-F]{32}$")


def _msgid(value: Any, ctx: Context) -> Any:
    """An offset message id is the store's IP, port and commitlog offset: the port is the run's. A batch's answer
    lists its ids with commas."""
    if not isinstance(value, str) or not value.startswith("7F000001"):
        return value
    ids = value.split(",")
    if not all(_MSGID.match(i) for i in ids):
        return value
    out = []
    for one in ids:
        try:
            ip, port, offset = decode_message_id(one)
        except ValueError:
            return value
        out.append(f"<msgid {ip}:{ctx.port_name(port)} @{offset}>")
    return ",".join(out)


VALUE_RULES: tuple[ValueRule, ...] = (
    ValueRule("time", "a wall-clock time in milliseconds (store, born, boot, update and check times): the clock "
              "when it happened, never the same twice; numbers within 3 days before and 1 day after the run",
              _time),
    ValueRule("time-text", "a wall-clock time written as text (4.9.8's human-readable times): never the same "
              "twice", _time_text),
    ValueRule("address", "the ports of a run: each broker and name server picks free ports, each client "
              "connection an ephemeral one", _addresses),
    ValueRule("msgid", "an offset msgId encodes the broker's port; its commitlog offset stays (it is decided by "
              "the sizes of what was stored before)", _msgid),
)

#: path rules, each found by recording twice against fresh real brokers (`check`)
PATH_RULES: tuple[PathRule, ...] = ()

#: admin and name server configs (GET_BROKER_CONFIG, GET_NAMESRV_CONFIG)
PATH_RULES += (
    PathRule("run-directories", "each fresh broker and name server runs in a fresh temporary directory: the store, "
             "config and KV file paths of its configuration name it (the emulator's store is laid out in its own "
             "way, so the whole path is replaced)",
             ("answer.body.storePathRootDir", "answer.body.storePathCommitLog", "answer.body.configStorePath",
              "answer.body.kvConfigPath"), "<run directory path>"),
    PathRule("installation-directory", "rocketmqHome, the broker's installation folder (ROCKETMQ_HOME): where the "
             "real broker was built, the emulator's package folder", ("answer.body.rocketmqHome",),
             "<installation directory>"),
    PathRule("listen-ports", "the ports a broker or name server listens on, as bare numbers in its configuration: "
             "free ports of the run", ("answer.body.listenPort", "answer.body.haListenPort"), "<port>"),
    PathRule("uptime", "runtime info's uptime text ('[ 0 days, 0 hours, 0 minutes, 7 seconds ]'): seconds since "
             "the broker started, which depend on how long it took to start", ("answer.body.table.runtime",),
             "<uptime>"),
    PathRule("disk-space", "runtime info's free and total space of the store's disk and its used ratio: the "
             "machine's disk, shared with everything else running", (
                 "answer.body.table.commitLogDirCapacity", "answer.body.table.commitLogDiskRatio*",
                 "answer.body.table.consumeQueueDiskRatio*"), "<disk space>"),
    PathRule("store-tps", "runtime info's put/get rates ('0.0  ', or blanks before the store's first sample of its "
             "per-second counters): whether the sampler ran yet decides", ("answer.body.table.*Tps",), "<tps>"),
    PathRule("consume-tps", "GET_CONSUME_STATS's consumeTps: the group's per-minute pull rate, 0 until the broker's "
             "10-s sampling tick (its phase set when the broker started) first falls after the group's first pull, "
             "then the messages pulled by then over 10 s; whether a tick fell inside the run decides",
             ("answer.body.consumeTps",), "<tps>"),
    PathRule("consume-time-span-clock", "QUERY_CONSUME_TIME_SPAN's times as text (yyyy-MM-dd#HH:mm:ss:SSS) and "
             "delayTime (the broker's newest store time minus the consumed message's): when the messages were "
             "stored", ("answer.body.consumeTimeSpanSet.*.*Str", "answer.body.consumeTimeSpanSet.*.delayTime"),
             "<clock>"),
)


def _run_directory(value: Any, ctx: Context) -> Any:
    if isinstance(value, str) and "/parity-" in value:
        new = _RUN_DIR.sub("<run directory path>", value)
        return value if new == value else new
    return value


_RUN_DIR = re.compile(r"/(?:[^\s/,]+/)*parity-(?:real|emu)-[A-Za-z0-9_]+[^\s,]*")

VALUE_RULES += (
    ValueRule("run-directory", "each fresh broker runs in a fresh temporary directory, which some map keys name "
              "(runtime info's commitLogDiskRatio_<commitlog path>)", _run_directory),
)


#: lists whose order two fresh real brokers give differently, compared sorted: (path pattern, reason)
SORTED_LISTS: tuple[tuple[str, str], ...] = (
    ("answer.body.consumerIdList", "the broker lists a group's channels from a hash map keyed by connection: the "
                                   "order differs from run to run"),
)


def normalise_run(run: Run, extra_rules: tuple[PathRule, ...] = ()) -> list[dict[str, Any]]:
    ctx = Context.of(run)
    rules = PATH_RULES + extra_rules
    return [_walk(record, "", ctx, rules) for record in run.records]


def normalise_records(records: list[dict[str, Any]], ctx: Context,
                      extra_rules: tuple[PathRule, ...] = ()) -> list[dict[str, Any]]:
    rules = PATH_RULES + extra_rules
    return [_walk(record, "", ctx, rules) for record in records]


def _walk(value: Any, path: str, ctx: Context, rules: tuple[PathRule, ...]) -> Any:
    for rule in rules:
        if any(fnmatch.fnmatchcase(path, p) for p in rule.paths):
            return rule.replacement
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = _scalar(k, ctx) if isinstance(k, str) else k
            out[key] = _walk(v, f"{path}.{k}" if path else str(k), ctx, rules)
        return dict(sorted(out.items())) if path.startswith(("answer.body", "push.body")) else out
    if isinstance(value, list):
        items = [_walk(v, f"{path}.{i}", ctx, rules) for i, v in enumerate(value)]
        if any(fnmatch.fnmatchcase(path, p) for p, _ in SORTED_LISTS):
            items.sort(key=repr)
        return items
    if isinstance(value, str) and "\x01" in value:
        # a message's properties string in a header (name\x01value\x02...): compared as a map, since Java writes
        # it in HashMap order; its length is compared through the sizes and offsets of stored records
        props: dict[str, str] = {}
        for item in value.split("\x02"):
            if item:
                name, _, text = item.partition("\x01")
                props[name] = text
        return _walk({"<properties>": dict(sorted(props.items()))}, path, ctx, rules)
    return _scalar(value, ctx)


def _scalar(value: Any, ctx: Context) -> Any:
    for rule in VALUE_RULES:
        new = rule.apply(value, ctx)
        if new is not value:
            return new
    return value
