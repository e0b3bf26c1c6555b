"""What the dashboard shows, as JSON-ready dicts read from the brokers of this process (the same managers,
store and functions the remoting requests answer from, so the numbers are admin topicStatus/consumerProgress's).
Bad input raises `Invalid` (answered 400 with its message), a missing thing `NotFound` (404)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from rocketmq_emulator.protocol.bodies import MessageModel
from rocketmq_emulator.protocol.message import MessageExt, decode_message_id, decode_messages
from rocketmq_emulator.protocol.topics import (DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC,
                                               dlq_topic, is_system_group, pop_retry_topic, retry_topic)

from ..consume_stats import consume_stats
from ..subscription_group import TOOL_GROUPS

if TYPE_CHECKING:
    from ..broker_context import BrokerContext

#: body bytes shown in a message's detail before it is marked truncated
BODY_LIMIT = 64 * 1024
#: messages a browse returns at most
BROWSE_LIMIT = 200


class Invalid(ValueError):
    """Bad input: the page shows the message, the API answers 400."""


class NotFound(LookupError):
    """Nothing by that name: 404."""


def number(value: str | None, name: str, *, low: int = 0, default: int | None = None) -> int:
    """A query or body value as an int ≥ `low`, or Invalid naming it."""
    if value is None or value == "":
        if default is None:
            raise Invalid(f"{name} is required")
        return default
    try:
        n = int(str(value).strip())
    except ValueError:
        raise Invalid(f"{name} must be a whole number, not {value!r}") from None
    if n < low:
        raise Invalid(f"{name} must be at least {low}, not {n}")
    return n


def timestamp_ms(value: str | None, name: str = "time") -> int:
    """Epoch milliseconds, or an ISO 8601 date-time (local time unless it carries an offset)."""
    if value is None or not str(value).strip():
        raise Invalid(f"{name} is required")
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    from datetime import datetime
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        raise Invalid(f"{name} must be epoch milliseconds or an ISO date-time like 2026-11-25T10:00:00, "
                      f"not {text!r}") from None


# -- overview ---------------------------------------------------------------------------------------
def broker_summary(b: BrokerContext, rates: dict[str, float]) -> dict[str, Any]:
    store = b.store
    topics = b.topic_config_manager.table
    return {
        "name": b.config.broker_name, "addr": b.broker_addr, "cluster": b.config.broker_cluster_name,
        "topics": sum(1 for t in topics if topic_kind(b, t) == "normal"),
        "groups": len(group_names(b)),
        "putTps": round(rates.get("put", 0.0), 1), "getTps": round(rates.get("get", 0.0), 1),
        "messagesPut": store.put_count, "messagesGot": store.get_found,
        "commitlogMinOffset": store.commitlog_min_offset, "commitlogMaxOffset": store.commitlog_max_offset,
        "storeBytes": store.commitlog_max_offset - store.commitlog_min_offset,
        "uptimeSeconds": round(time.time() - b.started_at, 1) if b.started_at else 0.0,
        "flushDiskType": b.config.store.flush_disk_type.value,
    }


# -- topics -----------------------------------------------------------------------------------------
def topic_kind(b: BrokerContext, topic: str) -> str:
    """retry, dlq, system (the broker's rule, TopicConfigManager.is_system_topic: what UPDATE_AND_CREATE_TOPIC
    refuses and 5.x clients may not access) or normal."""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return "retry"
    if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return "dlq"
    return "system" if b.topic_config_manager.is_system_topic(topic) else "normal"


def topics(b: BrokerContext, system: bool = False) -> list[dict[str, Any]]:
    out = []
    for name, tc in sorted(b.topic_config_manager.table.items()):
        kind = topic_kind(b, name)
        if not system and kind != "normal":
            continue
        queues = queue_stats(b, name, max(tc.read_queue_nums, tc.write_queue_nums))
        out.append({"topic": name, "readQueues": tc.read_queue_nums, "writeQueues": tc.write_queue_nums,
                    "perm": tc.perm, "messages": sum(q["messages"] for q in queues),
                    "lastStoreTime": max((q["lastStoreTime"] for q in queues), default=0), "kind": kind})
    return out


def queue_stats(b: BrokerContext, topic: str, count: int) -> list[dict[str, Any]]:
    store = b.store
    out = []
    for q in range(count):
        low, high = max(0, store.get_min_offset_in_queue(topic, q)), max(0, store.get_max_offset_in_queue(topic, q))
        last = store.get_message_store_timestamp(topic, q, high - 1) if high > low else 0
        out.append({"queueId": q, "minOffset": low, "maxOffset": high, "messages": high - low,
                    "lastStoreTime": max(0, last)})
    return out


def topic_detail(b: BrokerContext, topic: str) -> dict[str, Any]:
    tc = b.topic_config_manager.get(topic)
    if tc is None:
        raise NotFound(f"topic {topic!r} does not exist on {b.config.broker_name}")
    queues = queue_stats(b, topic, max(tc.read_queue_nums, tc.write_queue_nums))
    groups = sorted(g for g in b.consumer_offset_manager.groups_of_topic(topic) if not is_system_group(g))
    return {"topic": topic, "readQueues": tc.read_queue_nums, "writeQueues": tc.write_queue_nums, "perm": tc.perm,
            "queues": queues, "messages": sum(q["messages"] for q in queues), "groups": groups}


# -- messages ---------------------------------------------------------------------------------------
def message_view(msg: MessageExt, *, full: bool = False) -> dict[str, Any]:
    props = msg.properties
    body = msg.uncompressed_body()
    view: dict[str, Any] = {
        "msgId": msg.msg_id, "offsetMsgId": msg.offset_msg_id, "topic": msg.topic, "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset, "commitLogOffset": msg.commit_log_offset, "tags": props.get("TAGS"),
        "keys": props.get("KEYS"), "bornTimestamp": msg.born_timestamp, "storeTimestamp": msg.store_timestamp,
        "bornHost": f"{msg.born_host}:{msg.born_port}", "storeHost": f"{msg.store_host}:{msg.store_port}",
        "reconsumeTimes": msg.reconsume_times, "sysFlag": msg.sys_flag, "bodySize": len(body)}
    shown, truncated = body[:BODY_LIMIT if full else 200], len(body) > (BODY_LIMIT if full else 200)
    try:
        text = shown.decode("utf-8")
        kind = "text"
        if full and not truncated:
            try:
                text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
                kind = "json"
            except ValueError:
                pass
    except UnicodeDecodeError:
        text, kind = shown.hex(" "), "binary"
    view.update(body=text, bodyKind=kind, truncated=truncated)
    if full:
        view["properties"] = dict(props)
    return view


def browse(b: BrokerContext, topic: str, *, queue_id: int | None, offset: int | None, count: int,
           at_time: int | None = None) -> list[dict[str, Any]]:
    """Messages of `topic` from `offset` in `queue_id` (every queue when None), or from the first stored at or
    after `at_time`; at most `count`."""
    tc = b.topic_config_manager.get(topic)
    if tc is None:
        raise NotFound(f"topic {topic!r} does not exist on {b.config.broker_name}")
    queues = max(tc.read_queue_nums, tc.write_queue_nums)
    if queue_id is not None and not 0 <= queue_id < queues:
        raise Invalid(f"queue {queue_id} is not one of {topic}'s queues 0-{queues - 1}")
    count = min(max(1, count), BROWSE_LIMIT)
    out: list[dict[str, Any]] = []
    for q in ([queue_id] if queue_id is not None else range(queues)):
        start = offset if offset is not None else 0
        if at_time is not None:
            start = max(0, b.store.get_offset_in_queue_by_time(topic, q, at_time))
        start = max(start, b.store.get_min_offset_in_queue(topic, q))
        got = b.store.get_message("dashboard", topic, q, start, count - len(out) if queue_id is not None else count)
        if got is not None:
            out += [message_view(MessageExt.decode(r)) for r in got.messages]
    out.sort(key=lambda m: (m["storeTimestamp"], m["queueId"], m["queueOffset"]))
    return out[:count]


def by_key(b: BrokerContext, topic: str, key: str) -> list[dict[str, Any]]:
    if not key:
        raise Invalid("key is required")
    if b.topic_config_manager.get(topic) is None:
        raise NotFound(f"topic {topic!r} does not exist on {b.config.broker_name}")
    found = b.store.query_message(topic, key, 64)
    return [message_view(m) for m in decode_messages(found.body(), strict=False)]


def find_message(b: BrokerContext, msg_id: str, topic: str | None = None) -> MessageExt:
    """A message by its offset msgId, or by its unique key (UNIQ_KEY) in `topic`."""
    msg_id = msg_id.strip()
    if not msg_id:
        raise Invalid("a message id is required")
    if len(msg_id) in (32, 56):
        try:
            _, _, phy = decode_message_id(msg_id)
        except Exception:  # noqa: BLE001 - not an offset id: maybe a unique key
            phy = None
        if phy is not None:
            msg = b.store.look_message_by_offset(phy)
            if msg is not None and (topic is None or msg.topic == topic):
                return msg
    if topic:
        if b.topic_config_manager.get(topic) is None:
            raise NotFound(f"topic {topic!r} does not exist on {b.config.broker_name}")
        found = decode_messages(b.store.query_message(topic, msg_id, 8).body(), strict=False)
        for msg in found:
            if msg.msg_id == msg_id:
                return msg
    raise NotFound(f"no message {msg_id!r}" + (f" in {topic}" if topic else " (give the topic to find a unique key)"))


# -- groups -----------------------------------------------------------------------------------------
def group_names(b: BrokerContext) -> list[str]:
    """The consumer groups of users: RocketMQ's own (tools, CID_RMQ_SYS_*) left out."""
    names = set(b.subscription_group_manager.table) | set(b.consumer_manager.groups)
    return sorted(g for g in names if not is_system_group(g) and g not in TOOL_GROUPS)


def group_state(b: BrokerContext, group: str) -> tuple[str, bool]:
    """(state in words, broadcasting)."""
    gi = b.consumer_manager.get(group)
    broadcasting = (gi.message_model == MessageModel.BROADCASTING) if gi is not None \
        else b.broadcast_offsets.knows_group(group)
    if b.pop_service.inflight(group) or any(ck.group == group for ck in b.pop_service.checkpoints.values()):
        return "pop", broadcasting
    if gi is None or not gi.channels:
        return "offline", broadcasting
    return ("online, broadcasting: per client" if broadcasting else "online"), broadcasting


def groups(b: BrokerContext) -> list[dict[str, Any]]:
    out = []
    for g in group_names(b):
        stats = consume_stats(b, g)
        state, broadcasting = group_state(b, g)
        gi = b.consumer_manager.get(g)
        out.append({"group": g, "state": state, "broadcasting": broadcasting,
                    "clients": len(gi.channels) if gi is not None else 0,
                    "topics": sorted({mq.topic for mq in stats.offset_table}),
                    "diff": sum(max(0, w.broker_offset - w.consumer_offset) for w in stats.offset_table.values()),
                    "inflight": b.pop_service.inflight(g)})
    return out


def group_detail(b: BrokerContext, group: str) -> dict[str, Any]:
    if group not in group_names(b) and not b.consumer_offset_manager.topics_of_group(group):
        raise NotFound(f"no consumer group {group!r} on {b.config.broker_name}")
    stats = consume_stats(b, group)
    state, broadcasting = group_state(b, group)
    gi = b.consumer_manager.get(group)
    clients = []
    if gi is not None:
        for info in gi.channels.values():
            clients.append({"clientId": info.client_id, "addr": info.connection.peer, "language": info.language,
                            "version": info.version,
                            "lastHeartbeatSecondsAgo": round(time.monotonic() - info.last_update, 1)})
    subscriptions = [{"topic": t, "expression": s.sub_string, "type": s.expression_type or "TAG"}
                     for t, s in sorted((gi.subscription_table if gi is not None else {}).items())]
    queues = []
    for mq, w in sorted(stats.offset_table.items(), key=lambda kv: (kv[0].topic, kv[0].queue_id)):
        committed = w.consumer_offset
        pulled = w.pull_offset if w.pull_offset is not None else committed
        stored = b.consumer_offset_manager.query_offset(group, mq.topic, mq.queue_id) >= 0 or broadcasting
        queues.append({
            "topic": mq.topic, "queueId": mq.queue_id, "brokerOffset": w.broker_offset,
            "consumerOffset": committed if stored else None, "pulledOffset": pulled if stored else None,
            "diff": max(0, w.broker_offset - committed), "inflight": max(0, pulled - committed),
            "ready": max(0, w.broker_offset - max(pulled, committed)), "lastConsumeTime": w.last_timestamp,
            "state": "committed" if stored else "none committed yet"})
    model = "broadcasting" if broadcasting else "clustering"
    return {"group": group, "state": state, "messageModel": model, "clients": clients,
            "subscriptions": subscriptions, "queues": queues, "consumeTps": round(stats.consume_tps, 1),
            "totals": {k: sum(q[k] for q in queues) for k in ("brokerOffset", "diff", "inflight", "ready")},
            "popInflight": b.pop_service.inflight(group),
            "note": "broadcasting: each client keeps its own offsets; the group's are its latest" if broadcasting
            else None}


def history(b: BrokerContext, group: str, topic: str | None = None, queue_id: int | None = None
            ) -> list[dict[str, Any]]:
    """Newest first; a commit's address is shown with the client id of the connection when it is still online."""
    gi = b.consumer_manager.get(group)
    ids = {info.connection.peer: info.client_id for info in gi.channels.values()} if gi is not None else {}
    out = []
    for e in reversed(b.consumer_offset_manager.history.of(group, topic, queue_id)):
        d = e._asdict()
        if e.by in ids:
            d["by"] = f"{ids[e.by]} ({e.by})"
        out.append(d)
    return out


# -- where is a message for a group ---------------------------------------------------------------
def where(b: BrokerContext, group: str, msg_id: str, topic: str | None = None) -> dict[str, Any]:
    """Consumed, in flight, not yet pulled, in retry (with its due time) or in the DLQ, for `group`."""
    if not group:
        raise Invalid("group is required")
    msg = find_message(b, msg_id, topic)
    uniq = msg.properties.get("UNIQ_KEY") or msg.msg_id
    out: dict[str, Any] = {"message": message_view(msg), "group": group, "places": []}
    places = out["places"]
    committed = b.consumer_offset_manager.query_offset(group, msg.topic, msg.queue_id)
    pulled = b.consumer_offset_manager.query_pull_offset(group, msg.topic, msg.queue_id)
    unacked = {o for ck in b.pop_service.checkpoints.values() if ck.group == group and ck.topic == msg.topic
               and ck.queue_id == msg.queue_id for o in ck.pending()}
    if msg.queue_offset in unacked:
        places.append({"where": "in flight", "detail": "popped, not acked yet"})
    elif committed < 0:
        places.append({"where": "not yet pulled", "detail": "the group has committed nothing in this queue"})
    elif msg.queue_offset < committed:
        places.append({"where": "consumed", "detail": f"committed offset {committed} is past it"})
    elif msg.queue_offset < pulled:
        places.append({"where": "in flight", "detail": f"pulled (up to {pulled}), not committed yet"})
    else:
        places.append({"where": "not yet pulled", "detail": f"the group is at {committed}"})
    for kind, t in (("in retry", retry_topic(group)), ("in retry", pop_retry_topic(group, msg.topic)),
                    ("in the DLQ", dlq_topic(group))):
        if b.topic_config_manager.get(t) is None:
            continue
        for copy in decode_messages(b.store.query_message(t, uniq, 16).body(), strict=False):
            places.append({"where": kind, "detail": f"{t} queue {copy.queue_id} offset {copy.queue_offset}, "
                                                    f"reconsume times {copy.reconsume_times}",
                           "msgId": copy.offset_msg_id, "topic": t})
    for parked in decode_messages(b.store.query_message(SCHEDULE_TOPIC, uniq, 16).body(), strict=False):
        real = parked.properties.get("REAL_TOPIC", "")
        if real in (retry_topic(group), pop_retry_topic(group, msg.topic)):
            level = int(parked.properties.get("DELAY", "0") or 0)
            delays = b.schedule_service.delays
            due = parked.store_timestamp + (delays[level - 1] if 0 < level <= len(delays) else 0)
            places.append({"where": "in retry", "detail": f"waiting for its retry (delay level {level})",
                           "dueTime": due})
    return out
