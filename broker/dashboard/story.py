"""A message's story for the dashboard: its life in order, from the broker's own records. Sent (born host and
time; the producer group when the message carries it, as a transaction's does: a broker does not store the
sender's group or client with a message, RocketMQ's neither, so they come from trace records when the client sends
traces), a transaction's half message and its commit, a delayed or timed message's first store in the delay or
timer topic, stored (topic, queue, offset, store time), then for each consumer group with offsets in its topic or that was handed it: each delivery (pull or
POP, client, time, attempt; broker/state/delivery_log.py, recorded while the dashboard runs), each retry (its copy
in the group's retry topic and that copy's deliveries), the dead-letter queue, the offset commits and resets of its
queue that passed it, and where it is now for the group (views.where). Clients that send traces (4.x
`enableMsgTrace`) add their trace records from the trace topic (publish, consume before and after, with their
client host, cost and status)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocketmq_emulator.protocol.message import MessageExt
from rocketmq_emulator.protocol.topics import (SCHEDULE_TOPIC, TIMER_TOPIC, TRACE_TOPIC, TRANS_HALF_TOPIC, dlq_topic,
                                              pop_retry_topic, retry_topic)

from . import views

if TYPE_CHECKING:
    from ..core.read_model import ReadModel

#: 4.x trace records (TraceDataEncoder): fields split by \x01, records by \x02
_TRACE_FIELDS = {"Pub": ("type", "time", "region", "group", "topic", "msgId", "tags", "keys", "storeHost", "bodySize",
                         "costMs", "msgType", "offsetMsgId", "success"),
                 "SubBefore": ("type", "time", "region", "group", "requestId", "msgId", "retryTimes", "keys"),
                 "SubAfter": ("type", "requestId", "msgId", "costMs", "success", "keys")}
_TRACED = {"Pub": "traced: sent", "SubBefore": "traced: consuming", "SubAfter": "traced: consumed"}


def story(b: ReadModel, msg_id: str, topic: str | None = None) -> dict[str, Any]:
    msg = views.find_message(b, msg_id, topic)
    uniq = msg.properties.get("UNIQ_KEY") or msg.msg_id
    steps: list[dict[str, Any]] = []

    def step(t: int, what: str, detail: str, group: str | None = None) -> None:
        steps.append({"t": t, "what": what, "detail": detail, "group": group})

    props = msg.properties
    producer = f"producer group {props['PGROUP']}, " if props.get("PGROUP") else ""  # (a transaction's says it)
    step(msg.born_timestamp, "sent", f"{producer}from {msg.born_host}:{msg.born_port}")
    if props.get("TRAN_MSG") == "true":
        for half in (b.messages_by_key(TRANS_HALF_TOPIC, uniq, 4) if b.topic(TRANS_HALF_TOPIC) else []):
            step(half.store_timestamp, "transaction prepared", f"its half message stored ({TRANS_HALF_TOPIC} offset "
                                                               f"{half.queue_offset}), invisible until committed")
        step(msg.store_timestamp, "transaction committed", "the message stored in its topic, visible to consumers")
    if props.get("REAL_TOPIC") or props.get("DELAY", "0") != "0" or props.get("TIMER_DELIVER_MS"):
        # a delayed or timed message was stored first in the delay or timer topic, then again in its own when due
        for parked_topic in (SCHEDULE_TOPIC, TIMER_TOPIC):
            for parked in (b.messages_by_key(parked_topic, uniq, 8) if b.topic(parked_topic) else []):
                if parked.properties.get("REAL_TOPIC") != msg.topic:
                    continue  # (a retry's parked copy: its group's story tells it)
                level = parked.properties.get("DELAY", "0")
                how = f"delay level {level}" if level != "0" else \
                    f"a timer to {parked.properties.get('TIMER_DELIVER_MS')} (epoch ms)"
                step(parked.store_timestamp, "stored, delayed", f"{how}: in {parked_topic} queue "
                                                                 f"{parked.queue_id} offset {parked.queue_offset}")
    due = " (due: delivered to its topic)" if props.get("REAL_TOPIC") else ""
    step(msg.store_timestamp, "stored", f"{msg.topic} queue {msg.queue_id} offset {msg.queue_offset} (commit log "
                                        f"offset {msg.commit_log_offset}, {msg.store_host}:{msg.store_port}){due}")
    recorded = b.deliveries(msg.topic, msg.queue_id, msg.queue_offset)
    groups = set(b.groups_of_topic(msg.topic)) | {d.group for d in recorded or ()}
    for group in sorted(groups):
        _group_story(b, msg, uniq, group, recorded, step)
    if b.topic(TRACE_TOPIC) is not None:
        ids = {msg.msg_id, msg.offset_msg_id, uniq}
        for trace in b.messages_by_key(TRACE_TOPIC, msg.msg_id, 64):
            for record in _trace_records(trace):
                if record.get("msgId") not in ids:
                    continue  # (a trace message carries a batch of records, of other messages too)
                time_text = record.get("time", "")  # (SubAfter has none: the trace message's store time)
                t = int(time_text) if time_text.isdigit() else trace.store_timestamp
                detail = ", ".join(f"{k} {v}" for k, v in record.items() if k not in ("type", "time") and v)
                step(t, _TRACED[record["type"]], detail, record.get("group"))
    steps.sort(key=lambda s: s["t"])  # stable: what happened at one millisecond keeps its order
    now = [{"group": group, **place} for group in sorted(groups) for place in views.places_of(b, group, msg)]
    return {"message": views.message_view(msg), "recorded": recorded is not None, "steps": steps, "now": now}


def _group_story(b: ReadModel, msg: MessageExt, uniq: str, group: str, recorded: list[Any] | None,
                 step: Any) -> None:
    for d in recorded or ():
        if d.group == group and d.kind == "ack":
            step(d.time_ms, "acked", f"by {d.client}", group)
        elif d.group == group:
            step(d.time_ms, "delivered", f"{d.kind} by {d.client}" + (f", attempt {d.attempt}" if d.attempt else ""),
                 group)
    for e in b.offset_history(group, msg.topic, msg.queue_id):
        if e.kind == "commit" and (e.previous if e.previous is not None else -1) <= msg.queue_offset < e.offset:
            step(e.time_ms, "offset committed past it", f"to {e.offset} by {e.by}", group)
        elif e.kind in ("reset", "moved"):
            side = "before" if e.offset <= msg.queue_offset else "after"
            step(e.time_ms, f"offset {e.kind}", f"to {e.offset} ({side} it) by {e.by}", group)
    for kind, t in (("retry", retry_topic(group)), ("retry", pop_retry_topic(group, msg.topic)),
                    ("dead-lettered", dlq_topic(group))):
        if b.topic(t) is None:
            continue
        for copy in b.messages_by_key(t, uniq, 16):
            what = "dead-lettered" if kind == "dead-lettered" else f"retry {copy.reconsume_times}"
            step(copy.store_timestamp, what, f"a copy in {t} queue {copy.queue_id} offset {copy.queue_offset}", group)
            for d in b.deliveries(t, copy.queue_id, copy.queue_offset) or ():
                if d.group == group and d.kind == "ack":
                    step(d.time_ms, "acked", f"by {d.client} (the copy in {t})", group)
                elif d.group == group:
                    step(d.time_ms, "delivered", f"{d.kind} by {d.client}, attempt {copy.reconsume_times + 1} "
                                                 f"(the copy in {t})", group)


def _trace_records(trace: MessageExt) -> list[dict[str, str]]:
    """The trace body's records (TraceDataEncoder's format), each as named fields."""
    out = []
    text = trace.uncompressed_body().decode("utf-8", "replace")
    for raw in text.split("\x02"):
        fields = raw.split("\x01")
        if not fields or fields[0] not in _TRACE_FIELDS:
            continue
        names = _TRACE_FIELDS[fields[0]]
        out.append({name: value for name, value in zip(names, fields)})
    return out
