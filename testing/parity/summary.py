"""The corpus in figures, by request family: README's parity table is this module's output
(`python -m rocketmq_emulator.testing.parity table`; integration_tests/test_parity_remoting.py checks the parity page has it).

A request's family comes from its code (FAMILIES); a request to the name server is "name server". A request
"matches" when open.toml lists no difference of its step; the default mode's deliberate differences are
counted by step too.
"""

from __future__ import annotations

from collections import defaultdict

from rocketmq_emulator.protocol.codes import RequestCode

from .compare import Deliberate
from .corpus import Scenario
from .remoting import code_of

#: request family -> the request codes in it (a code in none is "admin")
FAMILIES: dict[str, tuple[str, ...]] = {
    "send": ("SEND_MESSAGE", "SEND_MESSAGE_V2", "SEND_BATCH_MESSAGE"),
    "pull": ("PULL_MESSAGE", "LITE_PULL_MESSAGE"),
    "queue offsets": ("GET_MAX_OFFSET", "GET_MIN_OFFSET", "SEARCH_OFFSET_BY_TIMESTAMP", "GET_EARLIEST_MSG_STORETIME"),
    "consumer offsets": ("QUERY_CONSUMER_OFFSET", "UPDATE_CONSUMER_OFFSET", "GET_ALL_CONSUMER_OFFSET",
                         "CLONE_GROUP_OFFSET", "QUERY_CORRECTION_OFFSET"),
    "reset": ("INVOKE_BROKER_TO_RESET_OFFSET", "INVOKE_BROKER_TO_GET_CONSUMER_STATUS", "RESET_CONSUMER_CLIENT_OFFSET",
              "GET_CONSUMER_STATUS_FROM_CLIENT"),
    "heartbeat and consumer lists": ("HEART_BEAT", "UNREGISTER_CLIENT", "GET_CONSUMER_LIST_BY_GROUP",
                                     "CHECK_CLIENT_CONFIG", "NOTIFY_CONSUMER_IDS_CHANGED"),
    "ordered locks": ("LOCK_BATCH_MQ", "UNLOCK_BATCH_MQ"),
    "retry and DLQ": ("CONSUMER_SEND_MSG_BACK",),
    "transactions": ("END_TRANSACTION", "CHECK_TRANSACTION_STATE"),
    "request-reply": ("SEND_REPLY_MESSAGE", "SEND_REPLY_MESSAGE_V2", "PUSH_REPLY_MESSAGE_TO_CLIENT"),
    "message queries": ("QUERY_MESSAGE", "VIEW_MESSAGE_BY_ID"),
    "stats and progress": ("GET_CONSUME_STATS", "GET_BROKER_CONSUME_STATS", "GET_TOPIC_STATS_INFO",
                           "VIEW_BROKER_STATS_DATA", "GET_BROKER_RUNTIME_INFO", "QUERY_CONSUME_TIME_SPAN",
                           "GET_CONSUMER_CONNECTION_LIST", "GET_PRODUCER_CONNECTION_LIST",
                           "GET_CONSUMER_RUNNING_INFO", "QUERY_TOPIC_CONSUME_BY_WHO", "QUERY_CONSUME_QUEUE"),
}
_BY_CODE = {int(RequestCode[name]): family for family, names in FAMILIES.items() for name in names
            if name in RequestCode.__members__}


def family_of(spec: dict[str, object]) -> str:
    if spec.get("to") == "namesrv":
        return "name server"
    if "expect_push" in spec:
        push = spec["expect_push"]
        code = push.get("code") if isinstance(push, dict) else None
        return _BY_CODE.get(code_of(str(code)), "admin") if code else "admin"
    return _BY_CODE.get(code_of(spec["code"]), "admin")  # type: ignore[arg-type]  # a request step has a code


def family_table(scenarios: list[Scenario], open_entries: list[Deliberate], deliberate: list[Deliberate]) -> str:
    """The markdown table: family, scenarios, requests, matching in compat 4.9, deliberate in the default mode."""
    requests: dict[str, int] = defaultdict(int)
    matching: dict[str, int] = defaultdict(int)
    kept: dict[str, int] = defaultdict(int)
    where: dict[str, set[str]] = defaultdict(set)
    for scenario in scenarios:
        for step in scenario.steps:
            if not step.records:
                continue
            family = family_of(step.spec)
            requests[family] += 1
            where[family].add(scenario.name)
            name = step.name

            def hit(entries: list[Deliberate], modes: tuple[str, ...]) -> bool:
                return any(e.scenario == scenario.name and e.mode in modes and _match(e.step, name) for e in entries)
            if not hit(open_entries, ("both", "4.9")):
                matching[family] += 1
            if hit(deliberate, ("both",)):
                kept[family] += 1
    order = sorted(requests, key=lambda f: (-requests[f], f))
    lines = ["| request family | scenarios | requests and pushes | same as 4.9.8 (`--compat 4.9`) | "
             "deliberately different by default |", "|---|---:|---:|---:|---:|"]
    for f in order:
        lines.append(f"| {f} | {len(where[f])} | {requests[f]} | {matching[f]} | {kept[f]} |")
    total = sum(requests.values())
    lines.append(f"| **all** | {len(scenarios)} | {total} | {sum(matching.values())} | {sum(kept.values())} |")
    return "\n".join(lines)


def _match(pattern: str, name: str) -> bool:
    import fnmatch
    return fnmatch.fnmatchcase(name, pattern)
