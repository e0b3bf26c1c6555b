"""What the dashboard shows, as JSON-ready dicts read from the brokers of this process through each one's read
model (broker/core/read_model.py: the same managers, store and functions the remoting requests and the gRPC front answer
from, so the numbers are admin topicStatus/consumerProgress's and the routes the name server's).
Bad input raises `Invalid` (answered 400 with its message), a missing thing `NotFound` (404)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from rocketmq_emulator.protocol.message import MessageExt
from rocketmq_emulator.protocol.namespaces import namespace_of
from rocketmq_emulator.protocol.topics import SCHEDULE_TOPIC, dlq_topic, pop_retry_topic, retry_topic

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.admin_bodies import ConsumeStats

    from ..core.read_model import ReadModel

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
def broker_summary(b: ReadModel, rates: dict[str, float]) -> dict[str, Any]:
    store = b.store_figures()
    return {
        "name": b.name, "addr": b.addr, "cluster": b.config.broker_cluster_name,
        "permission": b.config.broker_permission,
        "topics": len(b.topics()),
        "groups": len(b.user_groups()),
        "putTps": round(rates.get("put", 0.0), 1), "getTps": round(rates.get("get", 0.0), 1),
        "messagesPut": store.put, "messagesGot": store.got,
        "commitlogMinOffset": store.commitlog_min, "commitlogMaxOffset": store.commitlog_max,
        "storeBytes": store.commitlog_max - store.commitlog_min,
        "uptimeSeconds": round(time.time() - b.started_at, 1) if b.started_at else 0.0,
        "flushDiskType": b.config.store.flush_disk_type.value,
    }


# -- topics -----------------------------------------------------------------------------------------
def route_perm(b: ReadModel, topic: str) -> int | None:
    """The perm of the topic's queues in its route: what the broker registers (ReadModel.route)."""
    route = b.route(topic)
    return route.perm if route is not None else None


def topics(b: ReadModel, system: bool = False) -> list[dict[str, Any]]:
    """The users' topics, or every one with `system`; `kind`: retry, dlq, system (the broker's one rule: what
    UPDATE_AND_CREATE_TOPIC refuses and 5.x clients may not access) or normal; `perm`: the topic's own,
    `routePerm`: what its route says (the name server's and gRPC QueryRoute's)."""
    out = []
    for tc in b.topics(system):
        name = tc.topic_name
        queues = queue_stats(b, name, max(tc.read_queue_nums, tc.write_queue_nums))
        out.append({"topic": name, "namespace": namespace_of(name), "readQueues": tc.read_queue_nums,
                    "writeQueues": tc.write_queue_nums,
                    "perm": tc.perm, "routePerm": route_perm(b, name), "messages": sum(q["messages"] for q in queues),
                    "lastStoreTime": max((q["lastStoreTime"] for q in queues), default=0),
                    "kind": b.topic_kind(name)})
    return out


def queue_stats(b: ReadModel, topic: str, count: int) -> list[dict[str, Any]]:
    out = []
    for q in range(count):
        low, high, last = b.queue_range(topic, q)
        out.append({"queueId": q, "minOffset": low, "maxOffset": high, "messages": high - low,
                    "lastStoreTime": last})
    return out


def topic_detail(b: ReadModel, topic: str) -> dict[str, Any]:
    tc = b.topic(topic)
    if tc is None:
        raise NotFound(f"topic {topic!r} does not exist on {b.name}")
    queues = queue_stats(b, topic, max(tc.read_queue_nums, tc.write_queue_nums))
    groups = b.groups_of_topic(topic)
    return {"topic": topic, "readQueues": tc.read_queue_nums, "writeQueues": tc.write_queue_nums, "perm": tc.perm,
            "routePerm": route_perm(b, topic), "kind": b.topic_kind(topic), "queues": queues,
            "messages": sum(q["messages"] for q in queues),
            "lastStoreTime": max((q["lastStoreTime"] for q in queues), default=0), "groups": groups}


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


def browse(b: ReadModel, topic: str, *, queue_id: int | None, offset: int | None, count: int,
           at_time: int | None = None) -> list[dict[str, Any]]:
    """Messages of `topic` from `offset` in `queue_id` (every queue when None), or from the first stored at or
    after `at_time`; at most `count`."""
    tc = b.topic(topic)
    if tc is None:
        raise NotFound(f"topic {topic!r} does not exist on {b.name}")
    queues = max(tc.read_queue_nums, tc.write_queue_nums)
    if queue_id is not None and not 0 <= queue_id < queues:
        raise Invalid(f"queue {queue_id} is not one of {topic}'s queues 0-{queues - 1}")
    count = min(max(1, count), BROWSE_LIMIT)
    out: list[dict[str, Any]] = []
    for q in ([queue_id] if queue_id is not None else range(queues)):
        got = b.read_queue(topic, q, offset if offset is not None else 0,
                           count - len(out) if queue_id is not None else count, at_time)
        out += [message_view(m) for m in got]
    out.sort(key=lambda m: (m["storeTimestamp"], m["queueId"], m["queueOffset"]))
    return out[:count]


def by_key(b: ReadModel, topic: str, key: str) -> list[dict[str, Any]]:
    if not key:
        raise Invalid("key is required")
    if b.topic(topic) is None:
        raise NotFound(f"topic {topic!r} does not exist on {b.name}")
    return [message_view(m) for m in b.messages_by_key(topic, key, 64)]


def find_message(b: ReadModel, msg_id: str, topic: str | None = None) -> MessageExt:
    """A message by its offset msgId, or by its unique key (UNIQ_KEY) in `topic` (ReadModel.find_message)."""
    msg_id = msg_id.strip()
    if not msg_id:
        raise Invalid("a message id is required")
    msg = b.find_message(msg_id, topic)
    if msg is not None:
        return msg
    if topic and b.topic(topic) is None:
        raise NotFound(f"topic {topic!r} does not exist on {b.name}")
    raise NotFound(f"no message {msg_id!r}" + (f" in {topic}" if topic else " (give the topic to find a unique key)"))


# -- groups -----------------------------------------------------------------------------------------
def group_state(b: ReadModel, group: str) -> tuple[str, bool]:
    """(state in words, broadcasting)."""
    broadcasting = b.is_broadcasting(group)
    if b.inflight(group) or b.pops(group):
        return "pop", broadcasting
    if not b.clients_of(group):
        return "offline", broadcasting
    return ("online, broadcasting: per client" if broadcasting else "online"), broadcasting


def groups(b: ReadModel) -> list[dict[str, Any]]:
    out = []
    for g in b.user_groups():
        stats = b.progress(g)
        state, broadcasting = group_state(b, g)
        out.append({"group": g, "namespace": namespace_of(g), "state": state, "broadcasting": broadcasting,
                    "clients": len(b.clients_of(g)),
                    "topics": sorted({mq.topic for mq in stats.offset_table}),
                    "diff": sum(max(0, w.broker_offset - w.consumer_offset) for w in stats.offset_table.values()),
                    "inflight": b.inflight(g)})
    return out


def group_detail(b: ReadModel, group: str) -> dict[str, Any]:
    if group not in b.user_groups() and not b.has_offsets(group):
        raise NotFound(f"no consumer group {group!r} on {b.name}")
    stats = b.progress(group)
    state, broadcasting = group_state(b, group)
    gi = b.consumer_group(group)
    clients = []
    if gi is not None:
        for info in gi.channels.values():
            clients.append({"clientId": info.client_id, "addr": info.connection.peer, "language": info.language,
                            "version": info.version,
                            "lastHeartbeatSecondsAgo": round(time.monotonic() - info.last_update, 1)})
    subscriptions = [{"topic": t, "expression": s.sub_string, "type": s.expression_type or "TAG"}
                     for t, s in sorted((gi.subscription_table if gi is not None else {}).items())]
    queues = progress_rows(b, group, stats, broadcasting)
    model = "broadcasting" if broadcasting else "clustering"
    return {"group": group, "state": state, "messageModel": model, "clients": clients,
            "subscriptions": subscriptions, "queues": queues, "consumeTps": round(stats.consume_tps, 1),
            "totals": {k: sum(q[k] for q in queues) for k in ("brokerOffset", "diff", "inflight", "ready")},
            "popInflight": b.inflight(group), "unacked": unacked(b, group),
            "dlq": b.topic(dlq_topic(group)) is not None,
            "note": "broadcasting: each client keeps its own offsets; the group's are its latest" if broadcasting
            else None}


def progress_rows(b: ReadModel, group: str, stats: ConsumeStats, broadcasting: bool) -> list[dict[str, Any]]:
    """Each queue's offsets of the group: behind (diff: stored minus committed), in flight (pulled, not committed)
    and ready (stored, not yet pulled)."""
    queues = []
    for mq, w in sorted(stats.offset_table.items(), key=lambda kv: (kv[0].topic, kv[0].queue_id)):
        committed = w.consumer_offset
        pulled = w.pull_offset if w.pull_offset is not None else committed
        stored = b.committed_offset(group, mq.topic, mq.queue_id) >= 0 or broadcasting
        queues.append({
            "topic": mq.topic, "queueId": mq.queue_id, "brokerOffset": w.broker_offset,
            "consumerOffset": committed if stored else None, "pulledOffset": pulled if stored else None,
            "diff": max(0, w.broker_offset - committed), "inflight": max(0, pulled - committed),
            "ready": max(0, w.broker_offset - max(pulled, committed)), "lastConsumeTime": w.last_timestamp,
            "state": "committed" if stored else "none committed yet"})
    return queues


def unacked(b: ReadModel, group: str, topic: str | None = None) -> list[dict[str, Any]]:
    """A POP group's messages popped and not acked (ReadModel.unacked)."""
    return [{"topic": u.topic, "queueId": u.queue_id, "offset": u.offset, "invisibleUntil": u.invisible_until,
             "orderly": u.orderly} for u in b.unacked(group, topic)]


def history(b: ReadModel, group: str, topic: str | None = None, queue_id: int | None = None
            ) -> list[dict[str, Any]]:
    """Newest first; a commit's address is shown with the client id of the connection when it is still online."""
    ids = {info.connection.peer: info.client_id for info in b.clients_of(group)}
    out = []
    for e in reversed(b.offset_history(group, topic, queue_id)):
        d = e._asdict()
        if e.by in ids:
            d["by"] = f"{ids[e.by]} ({e.by})"
        out.append(d)
    return out


# -- where is a message for a group ---------------------------------------------------------------
def where(b: ReadModel, group: str, msg_id: str, topic: str | None = None) -> dict[str, Any]:
    """Consumed, in flight, not yet pulled, in retry (with its due time) or in the DLQ, for `group`."""
    if not group:
        raise Invalid("group is required")
    msg = find_message(b, msg_id, topic)
    return {"message": message_view(msg), "group": group, "places": places_of(b, group, msg)}


def places_of(b: ReadModel, group: str, msg: MessageExt) -> list[dict[str, Any]]:
    """`where`'s places of a message already found."""
    uniq = msg.properties.get("UNIQ_KEY") or msg.msg_id
    places: list[dict[str, Any]] = []
    committed = b.committed_offset(group, msg.topic, msg.queue_id)
    pulled = b.pulled_offset(group, msg.topic, msg.queue_id)
    popped = {u.offset for u in b.unacked(group, msg.topic, msg.queue_id)}
    if msg.queue_offset in popped:
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
        if b.topic(t) is None:
            continue
        for copy in b.messages_by_key(t, uniq, 16):
            places.append({"where": kind, "detail": f"{t} queue {copy.queue_id} offset {copy.queue_offset}, "
                                                    f"reconsume times {copy.reconsume_times}",
                           "msgId": copy.offset_msg_id, "topic": t})
    for parked in b.messages_by_key(SCHEDULE_TOPIC, uniq, 16):
        real = parked.properties.get("REAL_TOPIC", "")
        if parked.queue_offset < b.schedule_offset(parked.queue_id):
            continue  # delivered to its retry topic already (listed above, if it is still there)
        if real in (retry_topic(group), pop_retry_topic(group, msg.topic)):
            level = int(parked.properties.get("DELAY", "0") or 0)
            delays = b.retry_delays()
            due = parked.store_timestamp + (delays[level - 1] if 0 < level <= len(delays) else 0)
            places.append({"where": "in retry", "detail": f"waiting for its retry (delay level {level})",
                           "dueTime": due})
    return places
