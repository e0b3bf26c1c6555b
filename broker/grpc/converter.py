"""Messages and statuses between RocketMQ 5.x's gRPC shapes and the store's, mapped as the 5.x proxy maps them
(GrpcConverter, SendMessageActivity.buildMessage, ResponseBuilder): the message id is UNIQ_KEY, a message group is
`__SHARDINGKEY`, a delivery time `TIMER_DELIVER_MS`, keys are KEYS split at spaces, a message's delivery attempt is
its reconsume times + 1, and user properties are every property that is not one of RocketMQ's own."""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any

from rocketmq_emulator.protocol import ResponseCode
from rocketmq_emulator.protocol.grpc_v2 import v2
from rocketmq_emulator.protocol.message import (PROPERTY_KEYS, PROPERTY_TAGS,
                                                PROPERTY_TIMER_DELIVER_MS, PROPERTY_TRANSACTION_PREPARED,
                                                PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
                                                MessageExt)
from rocketmq_emulator.protocol.namespaces import namespace_of, without_namespace
from rocketmq_emulator.protocol.topics import origin_topic

from .validate import RESERVED_PROPERTIES

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.grpc_v2 import types as pb

PROPERTY_SHARDING_KEY = "__SHARDINGKEY"
PROPERTY_TRACE_CONTEXT = "TRACE_CONTEXT"
PROPERTY_BORN_HOST = "__BORNHOST"

C = v2.Code
#: remoting response code -> gRPC status code (the proxy's ResponseBuilder)
STATUS_OF: dict[int, int] = {
    ResponseCode.SUCCESS: C.OK,
    ResponseCode.TOPIC_NOT_EXIST: C.TOPIC_NOT_FOUND,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: C.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.SUBSCRIPTION_NOT_EXIST: C.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.NO_PERMISSION: C.FORBIDDEN,
    ResponseCode.MESSAGE_ILLEGAL: C.BAD_REQUEST,
    ResponseCode.INVALID_PARAMETER: C.BAD_REQUEST,
    ResponseCode.SUBSCRIPTION_PARSE_FAILED: C.ILLEGAL_FILTER_EXPRESSION,
    ResponseCode.NO_MESSAGE: C.INVALID_RECEIPT_HANDLE,
    ResponseCode.SERVICE_NOT_AVAILABLE: C.INTERNAL_SERVER_ERROR,
    ResponseCode.FLUSH_DISK_TIMEOUT: C.MASTER_PERSISTENCE_TIMEOUT,
    ResponseCode.SYSTEM_BUSY: C.TOO_MANY_REQUESTS,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: C.NOT_IMPLEMENTED,
}


def status(code: int = C.OK, message: str = "OK") -> pb.Status:
    return v2.Status(code=code, message=message)


def status_of_remoting(code: int, remark: str | None) -> pb.Status:
    return status(STATUS_OF.get(code, C.INTERNAL_ERROR), remark or f"response code {code}")


def timestamp(ms: int) -> pb.Timestamp:
    t = v2.Timestamp()
    t.FromMilliseconds(ms)
    return t


def duration_ms(d: pb.Duration) -> int:
    return int(d.seconds * 1000 + d.nanos // 1_000_000)


def duration(ms: int) -> pb.Duration:
    d = v2.Duration()
    d.FromMilliseconds(ms)
    return d


def message_type(props: dict[str, str]) -> int:
    if props.get(PROPERTY_TRANSACTION_PREPARED, "").lower() == "true" or "TRAN_PREPARED_QUEUE_OFFSET" in props:
        return int(v2.MessageType.TRANSACTION)
    if PROPERTY_SHARDING_KEY in props:
        return int(v2.MessageType.FIFO)
    if PROPERTY_TIMER_DELIVER_MS in props or "DELAY" in props:
        return int(v2.MessageType.DELAY)
    return int(v2.MessageType.NORMAL)


def to_v2(msg: MessageExt, *, receipt_handle: str | None = None, attempt: int | None = None,
          invisible_ms: int | None = None, topic: str | None = None) -> Any:
    """A stored message as a 5.x client receives it (body uncompressed, IDENTITY, with its MD5)."""
    props = msg.properties
    body = msg.uncompressed_body()
    out = v2.Message()
    full = topic or origin_topic(msg.topic, props)
    out.topic.name = without_namespace(full)  # as the 5.x proxy's GrpcConverter.buildResource: `ns%T` is T in ns
    namespace = namespace_of(full)
    if namespace:
        out.topic.resource_namespace = namespace
    for k, v in props.items():
        if k not in RESERVED_PROPERTIES:
            out.user_properties[k] = v
    sp = out.system_properties
    tag = props.get(PROPERTY_TAGS)
    if tag:
        sp.tag = tag
    keys = props.get(PROPERTY_KEYS)
    if keys:
        sp.keys.extend(k for k in keys.split(" ") if k)
    sp.message_id = props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or msg.offset_msg_id
    sp.body_digest.type = v2.DigestType.MD5
    sp.body_digest.checksum = hashlib.md5(body).hexdigest().upper()
    sp.body_encoding = v2.Encoding.IDENTITY
    sp.message_type = message_type(props)
    sp.born_timestamp.CopyFrom(timestamp(msg.born_timestamp))
    sp.born_host = props.get(PROPERTY_BORN_HOST) or msg.born_host
    sp.store_timestamp.CopyFrom(timestamp(msg.store_timestamp))
    sp.store_host = f"{msg.store_host}:{msg.store_port}"
    deliver = props.get(PROPERTY_TIMER_DELIVER_MS)
    if deliver and deliver.isdigit():
        sp.delivery_timestamp.CopyFrom(timestamp(int(deliver)))
    if receipt_handle is not None:
        sp.receipt_handle = receipt_handle
    sp.queue_id = msg.queue_id
    sp.queue_offset = msg.queue_offset
    if invisible_ms is not None:
        sp.invisible_duration.CopyFrom(duration(invisible_ms))
    sp.delivery_attempt = attempt if attempt is not None else msg.reconsume_times + 1
    group = props.get(PROPERTY_SHARDING_KEY)
    if group:
        sp.message_group = group
    trace = props.get(PROPERTY_TRACE_CONTEXT)
    if trace:
        sp.trace_context = trace
    if "DLQ_ORIGIN_TOPIC" in props:
        sp.dead_letter_queue.topic = props["DLQ_ORIGIN_TOPIC"]
        sp.dead_letter_queue.message_id = props.get("DLQ_ORIGIN_MESSAGE_ID", "")
    out.body = body
    return out


def properties_of(message: pb.Message) -> dict[str, str]:
    """The RocketMQ properties of a message a 5.x producer sends (user properties, then the system ones)."""
    sp = message.system_properties
    props = dict(message.user_properties)
    if sp.HasField("tag") and sp.tag:
        props[PROPERTY_TAGS] = sp.tag
    if sp.keys:
        props[PROPERTY_KEYS] = " ".join(sp.keys)
    if sp.message_id:
        props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = sp.message_id
    if sp.HasField("message_group") and sp.message_group:
        props[PROPERTY_SHARDING_KEY] = sp.message_group
    if sp.HasField("delivery_timestamp"):
        props[PROPERTY_TIMER_DELIVER_MS] = str(sp.delivery_timestamp.ToMilliseconds())
    if sp.HasField("trace_context") and sp.trace_context:
        props[PROPERTY_TRACE_CONTEXT] = sp.trace_context
    if sp.born_host:
        props[PROPERTY_BORN_HOST] = sp.born_host
    if sp.message_type == v2.MessageType.TRANSACTION:
        props[PROPERTY_TRANSACTION_PREPARED] = "true"
        if sp.HasField("orphaned_transaction_recovery_duration"):
            props["CHECK_IMMUNITY_TIME_IN_SECONDS"] = str(sp.orphaned_transaction_recovery_duration.seconds)
    return props


def born_ms(message: pb.Message) -> int:
    sp = message.system_properties
    return int(sp.born_timestamp.ToMilliseconds()) if sp.HasField("born_timestamp") else int(time.time() * 1000)
