"""The entities file: topics, consumer groups and name server KV settings declared before any client starts, as
other emulators declare theirs (docs/user/entities.md). `serve --entities FILE` reads it (broker/entities.py applies
it); `admin exportEntities` writes a running broker's in the same format. One home for the format, read by the
broker and written by the client.

    topics:
      - {name: Orders, queues: 8}
      - {name: Payments, queues: 4, messageType: FIFO, order: true}
    groups:
      - {name: billing, retryMaxTimes: 3}
      - {name: audit, consumeBroadcastEnable: true, consumeMessageOrderly: true}
    kv:
      - {namespace: ORDER_TOPIC_CONFIG, key: Payments, value: "broker-a:4"}
    accounts:   # ACL accounts as the plain ACL file writes them (applied with aclEnable)
      - {accessKey: orders_app, secretKey: orders_secret, topicPerms: [Payments=PUB|SUB]}

JSON has the same shape. A topic's keys: `name` (required), `queues` (read and write, default 8) or
`readQueueNums` / `writeQueueNums`, `perm` (2, 4 or 6), `order`, `messageType` (the 5.x attribute `message.type`:
NORMAL, FIFO, DELAY, TRANSACTION, MIXED). A group's: `name` (required) and any SubscriptionGroupConfig field by its
Java name (`consumeEnable`, `consumeFromMinEnable`, `consumeBroadcastEnable`, `retryQueueNums`, `retryMaxTimes`,
`brokerId`, `whichBrokerWhenConsumeSlowly`, `notifyConsumerIdsChangedEnable`, `consumeMessageOrderly`: 5.x's FIFO
group), and `groupRetryPolicy` (5.x: what its 5.x consumers back off by, in subscriptionGroup.json's form).
`parse_entities` collects every mistake, one line each naming the entity and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from .admin_bodies import (CustomizedRetryPolicy, ExponentialRetryPolicy, GroupRetryPolicy, SubscriptionGroupConfig,
                           TopicConfig)
from .topics import name_problem

#: the 5.x topic attribute and the message types it takes
MESSAGE_TYPES = ("NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED")
#: a group's fields by their Java names (SubscriptionGroupConfig), each with its type
GROUP_FIELDS: dict[str, tuple[str, type]] = {
    "consumeEnable": ("consume_enable", bool), "consumeFromMinEnable": ("consume_from_min_enable", bool),
    "consumeBroadcastEnable": ("consume_broadcast_enable", bool), "retryQueueNums": ("retry_queue_nums", int),
    "retryMaxTimes": ("retry_max_times", int), "brokerId": ("broker_id", int),
    "whichBrokerWhenConsumeSlowly": ("which_broker_when_consume_slowly", int),
    "notifyConsumerIdsChangedEnable": ("notify_consumer_ids_changed_enable", bool),
    "consumeMessageOrderly": ("consume_message_orderly", bool),
}
TOPIC_KEYS = ("name", "queues", "readQueueNums", "writeQueueNums", "perm", "order", "messageType")
#: an ACL account's keys, as the plain ACL file (4.9.8's plain_acl.yml) writes them
ACCOUNT_KEYS = ("accessKey", "secretKey", "whiteRemoteAddress", "admin", "defaultTopicPerm", "defaultGroupPerm",
                "topicPerms", "groupPerms")
DEFAULT_QUEUES = 8
SECTIONS = ("topics", "groups", "kv", "accounts")


class EntitiesError(ValueError):
    """An entities file that cannot be applied: `problems` has one line per mistake."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class KvSetting:
    namespace: str
    key: str
    value: str


@dataclass(frozen=True)
class Entities:
    topics: tuple[TopicConfig, ...] = ()
    groups: tuple[SubscriptionGroupConfig, ...] = ()
    kv: tuple[KvSetting, ...] = field(default=())
    #: ACL accounts in the plain ACL file's form (applied when the broker runs with aclEnable)
    accounts: tuple[dict[str, Any], ...] = ()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _topic(where: str, item: dict[str, Any], problems: list[str]) -> TopicConfig | None:
    bad = len(problems)
    for key in item:
        if key not in TOPIC_KEYS:
            problems.append(f"{where}: unknown field {key!r} (a topic has {', '.join(TOPIC_KEYS)})")
    queues = {}
    for key in ("queues", "readQueueNums", "writeQueueNums"):
        if key in item:
            if not _is_int(item[key]) or not 1 <= item[key] <= 1024:
                problems.append(f"{where}: {key} {item[key]!r} is not a whole number from 1 to 1024")
            else:
                queues[key] = item[key]
    if "queues" in item and ("readQueueNums" in item or "writeQueueNums" in item):
        problems.append(f"{where}: give queues, or readQueueNums and writeQueueNums, not both")
    perm = item.get("perm", 6)
    if perm not in (2, 4, 6) or isinstance(perm, bool):
        problems.append(f"{where}: perm {perm!r}: use 2 (write only), 4 (read only) or 6 (read and write)")
    order = item.get("order", False)
    if not isinstance(order, bool):
        problems.append(f"{where}: order {order!r}: use true or false")
    kind = item.get("messageType")
    if kind is not None and kind not in MESSAGE_TYPES:
        problems.append(f"{where}: messageType {kind!r}: use one of {', '.join(MESSAGE_TYPES)}")
    if len(problems) > bad:
        return None
    both = queues.get("queues", DEFAULT_QUEUES)
    return TopicConfig(topic_name=item["name"], read_queue_nums=queues.get("readQueueNums", both),
                       write_queue_nums=queues.get("writeQueueNums", both), perm=perm, order=order,
                       attributes={"message.type": kind} if kind else None)


def _retry_policy(where: str, value: Any, problems: list[str]) -> GroupRetryPolicy | None:
    """5.x's groupRetryPolicy, in its subscriptionGroup.json form."""
    shape = ("groupRetryPolicy: {type: EXPONENTIAL, exponentialRetryPolicy: {initial: MS, max: MS, multiplier: N}} "
             "or {type: CUSTOMIZED, customizedRetryPolicy: {next: [MS, ...]}}")
    if not isinstance(value, dict) or value.get("type") not in ("EXPONENTIAL", "CUSTOMIZED") or \
            set(value) - {"type", "exponentialRetryPolicy", "customizedRetryPolicy"}:
        problems.append(f"{where}: use {shape}")
        return None
    exponential = value.get("exponentialRetryPolicy")
    customized = value.get("customizedRetryPolicy")
    exp_policy = cust_policy = None
    if exponential is not None:
        if not isinstance(exponential, dict) or set(exponential) - {"initial", "max", "multiplier"} or \
                not all(_is_int(v) and v > 0 for v in exponential.values()):
            problems.append(f"{where}: exponentialRetryPolicy takes initial, max (ms) and multiplier, whole numbers "
                            f"above 0")
            return None
        exp_policy = ExponentialRetryPolicy(**exponential)
    if customized is not None:
        steps = customized.get("next") if isinstance(customized, dict) else None
        if not isinstance(steps, list) or not steps or not all(_is_int(v) and v > 0 for v in steps) or \
                set(customized) - {"next"}:
            problems.append(f"{where}: customizedRetryPolicy is {{next: [MS, ...]}}, delays above 0")
            return None
        cust_policy = CustomizedRetryPolicy(next=list(steps))
    return GroupRetryPolicy(type=value["type"], exponential_retry_policy=exp_policy, customized_retry_policy=cust_policy)


def _group(where: str, item: dict[str, Any], problems: list[str]) -> SubscriptionGroupConfig | None:
    bad = len(problems)
    values: dict[str, Any] = {}
    for key, value in item.items():
        if key == "name":
            continue
        if key == "groupRetryPolicy":
            values["group_retry_policy"] = _retry_policy(where, value, problems)
            continue
        if key not in GROUP_FIELDS:
            problems.append(f"{where}: unknown field {key!r} (a group has name, {', '.join(GROUP_FIELDS)}, "
                            f"groupRetryPolicy)")
            continue
        attr, kind = GROUP_FIELDS[key]
        if kind is bool and not isinstance(value, bool):
            problems.append(f"{where}: {key} {value!r}: use true or false")
        elif kind is int and (not _is_int(value) or value < (-1 if key == "retryMaxTimes" else 0)):
            problems.append(f"{where}: {key} {value!r} is not a whole number of at least "
                            f"{-1 if key == 'retryMaxTimes' else 0}")
        else:
            values[attr] = value
    if len(problems) > bad:
        return None
    return SubscriptionGroupConfig(group_name=item["name"], **values)


def _named(section: str, kind: str, items: Any, problems: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The section's entries that are mappings with a valid, unique name, as (where, entry) pairs; a generator,
    so that the problems come in the file's order when the caller checks each entry as it comes."""
    if items is None:
        return
    if not isinstance(items, list):
        problems.append(f"{section}: a list of {kind}s is expected, not {type(items).__name__}")
        return
    seen = set()
    for i, item in enumerate(items):
        where = f"{section}[{i}]"
        if not isinstance(item, dict):
            problems.append(f"{where}: a {kind} is a mapping with a name, not {item!r}")
            continue
        name = item.get("name")
        if not isinstance(name, str):
            problems.append(f"{where}: no name")
            continue
        problem = name_problem(kind, name)
        if problem:
            problems.append(f"{section}[{i}]: {problem}")
            continue
        where = f"{section}[{i}] {name!r}"
        if name in seen:
            problems.append(f"{where}: declared twice")
            continue
        seen.add(name)
        yield where, item


def parse_entities(document: Any) -> Entities:
    """The entities of a parsed file (a mapping); EntitiesError with every mistake."""
    problems: list[str] = []
    if document is None:
        return Entities()
    if not isinstance(document, dict):
        raise EntitiesError([f"the file holds a {type(document).__name__}, not a mapping of topics, groups and kv"])
    for key in document:
        if key not in SECTIONS:
            problems.append(f"unknown section {key!r} (the sections are {', '.join(SECTIONS)})")
    topics = [t for where, item in _named("topics", "topic", document.get("topics"), problems)
              if (t := _topic(where, item, problems)) is not None]
    groups = [g for where, item in _named("groups", "group", document.get("groups"), problems)
              if (g := _group(where, item, problems)) is not None]
    kv: list[KvSetting] = []
    raw_kv = document.get("kv")
    if raw_kv is not None and not isinstance(raw_kv, list):
        problems.append(f"kv: a list of settings is expected, not {type(raw_kv).__name__}")
        raw_kv = []
    for i, item in enumerate(raw_kv or []):
        if not isinstance(item, dict) or set(item) != {"namespace", "key", "value"} \
                or not all(isinstance(v, str) and v for v in item.values()):
            problems.append(f"kv[{i}]: a setting is {{namespace, key, value}}, each a non-empty string, not {item!r}")
            continue
        kv.append(KvSetting(item["namespace"], item["key"], item["value"]))
    accounts = _accounts(document.get("accounts"), problems)
    if problems:
        raise EntitiesError(problems)
    return Entities(tuple(topics), tuple(groups), tuple(kv), tuple(accounts))


def _accounts(raw: Any, problems: list[str]) -> list[dict[str, Any]]:
    """The accounts' shape (the broker checks the rest as it checks its plain ACL file: key lengths, perms)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(f"accounts: a list of accounts is expected, not {type(raw).__name__}")
        return []
    out, seen = [], set()
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("accessKey"), str) \
                or not isinstance(item.get("secretKey"), str):
            problems.append(f"accounts[{i}]: an account is a mapping with an accessKey and a secretKey")
            continue
        where = f"accounts[{i}] {item['accessKey']!r}"
        bad = len(problems)
        for key, value in item.items():
            if key not in ACCOUNT_KEYS:
                problems.append(f"{where}: unknown field {key!r} (an account has {', '.join(ACCOUNT_KEYS)})")
            elif key in ("topicPerms", "groupPerms") and not (isinstance(value, list) and
                                                             all(isinstance(v, str) for v in value)):
                problems.append(f"{where}: {key} is a list of NAME=PERM, e.g. [Orders=PUB|SUB]")
            elif key == "admin" and not isinstance(value, bool):
                problems.append(f"{where}: admin {value!r}: use true or false")
        if item["accessKey"] in seen:
            problems.append(f"{where}: declared twice")
        seen.add(item["accessKey"])
        if len(problems) == bad:
            out.append(dict(item))
    return out


def read_entities_file(path: str) -> Entities:
    """Read and check an entities file: YAML (.yaml, .yml: needs PyYAML) or JSON (any other name). EntitiesError
    names the file in every line; OSError when it cannot be read."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        if path.endswith((".yaml", ".yml")):
            try:
                import yaml
            except ImportError:
                from .extras import install_hint
                raise EntitiesError([f"reading YAML needs PyYAML ({install_hint('acl')}); or write the file as "
                                     f"JSON"]) from None
            document = yaml.safe_load(raw)
        else:
            document = json.loads(raw)
    except EntitiesError as exc:
        raise EntitiesError([f"{path}: {p}" for p in exc.problems]) from None
    except Exception as exc:  # noqa: BLE001 - the YAML or JSON parser's error: one line
        raise EntitiesError([f"{path}: not valid {'YAML' if path.endswith(('.yaml', '.yml')) else 'JSON'}: "
                             f"{' '.join(str(exc).split())}"]) from None
    try:
        return parse_entities(document)
    except EntitiesError as exc:
        raise EntitiesError([f"{path}: {p}" for p in exc.problems]) from None


def entities_document(topics: Sequence[TopicConfig], groups: Sequence[SubscriptionGroupConfig],
                      kv: Sequence[KvSetting] = ()) -> dict[str, Any]:
    """The file's mapping for these entities (what `admin exportEntities` writes); defaults are left out."""
    default_group = SubscriptionGroupConfig()
    out_topics = []
    for tc in sorted(topics, key=lambda t: t.topic_name):
        entry: dict[str, Any] = {"name": tc.topic_name}
        if tc.read_queue_nums == tc.write_queue_nums:
            entry["queues"] = tc.read_queue_nums
        else:
            entry.update(readQueueNums=tc.read_queue_nums, writeQueueNums=tc.write_queue_nums)
        if tc.perm != 6:
            entry["perm"] = tc.perm
        if tc.order:
            entry["order"] = True
        kind = (tc.attributes or {}).get("message.type")
        if kind and kind != "UNSPECIFIED":
            entry["messageType"] = kind
        out_topics.append(entry)
    out_groups = []
    for g in sorted(groups, key=lambda g: g.group_name):
        entry = {"name": g.group_name}
        for key, (attr, _) in GROUP_FIELDS.items():
            value = getattr(g, attr)
            if value is not None and value != getattr(default_group, attr):
                entry[key] = value
        if g.group_retry_policy is not None:
            policy = g.group_retry_policy
            entry["groupRetryPolicy"] = {"type": policy.type}
            if policy.exponential_retry_policy is not None:
                e = policy.exponential_retry_policy
                entry["groupRetryPolicy"]["exponentialRetryPolicy"] = {"initial": e.initial, "max": e.max,
                                                                       "multiplier": e.multiplier}
            if policy.customized_retry_policy is not None:
                entry["groupRetryPolicy"]["customizedRetryPolicy"] = {"next": list(policy.customized_retry_policy.next)}
        out_groups.append(entry)
    document: dict[str, Any] = {"topics": out_topics, "groups": out_groups}
    if kv:
        document["kv"] = [{"namespace": s.namespace, "key": s.key, "value": s.value} for s in kv]
    return document
