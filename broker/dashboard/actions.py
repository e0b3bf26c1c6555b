"""What the dashboard changes, through the brokers' own cores (topic manager, the one send path, the reset of
Broker2Client, the store's expiry): create and delete topics, send a test message, reset a group (with a
preview), resend from the DLQ, expire every message now, drop the clients' connections. Bad input raises
views.Invalid / views.NotFound with a message for the page, never a broker error."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rocketmq_emulator.protocol import BrokerError, PermName
from rocketmq_emulator.protocol.admin_bodies import TopicConfig
from rocketmq_emulator.protocol.topics import DLQ_GROUP_TOPIC_PREFIX, topic_problem

from ..core.broker2client import ResetRequest
from ..core.connections import drop_connections as close_connections
from ..core.send_request import SendMessageRequest, SendMessageResponse
from .views import Invalid, NotFound, find_message, number, timestamp_ms

if TYPE_CHECKING:
    from ..core.read_model import BrokerFront

DASHBOARD_PRODUCER_GROUP = "rmq-emulator-dashboard"


def _text(body: dict[str, Any], name: str, *, required: bool = True) -> str:
    value = body.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise Invalid(f"{name} is required")
        return ""
    if not isinstance(value, str):
        raise Invalid(f"{name} must be text")
    return value.strip()


def _not_system(f: BrokerFront, topic: str) -> None:
    """A system topic is neither changed nor deleted (the broker's rule; UPDATE_AND_CREATE_TOPIC's remark)."""
    if f.read.is_system_topic(topic):
        raise Invalid(f"The topic[{topic}] is conflict with system topic.")


def _existing(f: BrokerFront, topic: str) -> None:
    if f.read.topic(topic) is None:
        raise NotFound(f"topic {topic!r} does not exist on {f.name}")


def create_topic(f: BrokerFront, body: dict[str, Any]) -> dict[str, Any]:
    topic = _text(body, "topic")
    problem = topic_problem(topic)
    if problem is not None:
        raise Invalid(problem)
    _not_system(f, topic)
    queues = number(body.get("queues"), "queues", low=1, default=4)
    if queues > 1024:
        raise Invalid("queues must be at most 1024")
    f.write.topic_config_manager.update(TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues,
                                              perm=PermName.READ | PermName.WRITE))
    return {"created": topic, "queues": queues}


def delete_topic(f: BrokerFront, topic: str) -> dict[str, Any]:
    _existing(f, topic)
    _not_system(f, topic)
    f.write.delete_topic(topic)
    return {"deleted": topic}


def send(f: BrokerFront, body: dict[str, Any]) -> dict[str, Any]:
    topic = _text(body, "topic")
    _existing(f, topic)
    text = body.get("body", "")
    if not isinstance(text, str):
        raise Invalid("body must be text")
    props = body.get("properties") or {}
    if not isinstance(props, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in props.items()):
        raise Invalid("properties must be an object of text values")
    props = {k.strip(): v for k, v in props.items() if k.strip()}
    bad = [k for k in props if any(c in k for c in "\x01\x02")]
    if bad:
        raise Invalid(f"property names may not hold control characters: {bad}")
    tag, keys = _text(body, "tag", required=False), _text(body, "keys", required=False)
    if tag:
        props["TAGS"] = tag
    if keys:
        props["KEYS"] = keys
    import uuid
    props["UNIQ_KEY"] = uuid.uuid4().hex.upper()
    result = _send(f, topic, text.encode(), props)
    return {"msgId": props["UNIQ_KEY"], "offsetMsgId": result.msg_id, "queueId": result.queue_id,
            "queueOffset": result.queue_offset}


def _send(f: BrokerFront, topic: str, body: bytes, props: dict[str, str], flag: int = 0) -> SendMessageResponse:
    """Through the one send path; a refusal is the page's message."""
    try:
        result = f.write.send_core.send(SendMessageRequest.of(DASHBOARD_PRODUCER_GROUP, topic, body, props, flag=flag))
    except BrokerError as exc:
        raise Invalid(f"the broker refused the message: {exc.remark}") from None
    if result.msg_id is None:
        raise Invalid(f"the broker refused the message: {result.remark}")
    return result


def _reset_request(f: BrokerFront, group: str, body: dict[str, Any]) -> ResetRequest:
    topic = _text(body, "topic")
    _existing(f, topic)
    mode = _text(body, "mode")
    queue_raw = body.get("queueId")
    queue_id = None if queue_raw in (None, "", -1, "-1") else number(queue_raw, "queueId")
    if mode == "earliest":
        timestamp, offset = 0, None
    elif mode == "latest":
        timestamp, offset = -1, None
    elif mode == "time":
        timestamp, offset = timestamp_ms(body.get("time")), None
    elif mode == "offset":
        if queue_id is None:
            raise Invalid("a reset to an explicit offset names its queue")
        timestamp, offset = 0, number(body.get("offset"), "offset")
    else:
        raise Invalid(f"mode must be earliest, latest, time or offset, not {mode!r}")
    return ResetRequest(topic, group, timestamp, True, queue_id=queue_id, offset=offset)


def reset_preview(f: BrokerFront, group: str, body: dict[str, Any]) -> dict[str, Any]:
    r = _reset_request(f, group, body)
    try:
        table = f.write.broker2client.compute_reset(r, f.read.has_broadcast_offsets(group))
    except BrokerError as exc:
        raise Invalid(exc.remark or "the reset cannot be made") from None
    return {"topic": r.topic, "group": group, "targets": [
        {"queueId": mq.queue_id, "from": f.read.committed_offset(group, r.topic, mq.queue_id),
         "to": offset} for mq, offset in sorted(table.items(), key=lambda kv: kv[0].queue_id)]}


def reset(f: BrokerFront, group: str, body: dict[str, Any]) -> dict[str, Any]:
    preview = reset_preview(f, group, body)
    r = _reset_request(f, group, body)
    try:
        f.write.broker2client.reset_offset(r)
    except BrokerError as exc:
        raise Invalid(exc.remark or "the reset failed") from None
    preview["applied"] = int(time.time() * 1000)
    return preview


def resend(f: BrokerFront, body: dict[str, Any]) -> dict[str, Any]:
    """A DLQ message sent again to the topic it came from (its original, not its retry topic)."""
    msg = find_message(f.read, _text(body, "msgId"), _text(body, "topic", required=False) or None)
    if not msg.topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
        raise Invalid(f"message {msg.msg_id} is in {msg.topic}, not in a DLQ")
    props = dict(msg.properties)
    origin = props.get("DLQ_ORIGIN_TOPIC") or props.get("RETRY_TOPIC")
    if not origin or f.read.topic(origin) is None:
        raise Invalid(f"the message's original topic {origin!r} does not exist any more")
    for name in ("DLQ_ORIGIN_TOPIC", "DLQ_ORIGIN_MESSAGE_ID", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID", "DELAY",
                 "MAX_RECONSUME_TIMES", "CLUSTER", "POP_CK"):
        props.pop(name, None)
    result = _send(f, origin, msg.uncompressed_body(), props, flag=msg.flag)
    return {"topic": origin, "offsetMsgId": result.msg_id, "queueId": result.queue_id,
            "queueOffset": result.queue_offset}


def expire_now(f: BrokerFront) -> dict[str, Any]:
    return {"deletedFiles": f.write.store.expire_files_now(roll=True)}


def drop_connections(f: BrokerFront) -> dict[str, Any]:
    # connections.drop_connections reads only the servers of the broker (WriteCores has them)
    return {"dropped": close_connections(f.write)}
