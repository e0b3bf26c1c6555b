"""What the 5.3.3 proxy checks before it sends, pops or routes (GrpcValidator, SendMessageActivity's
buildMessageProperty, DefaultTopicMessageTypeValidator), with its codes and texts, and the queue its
SendMessageQueueSelector picks for a message group (Guava's consistent hashing of the group's hashCode)."""

from __future__ import annotations

import re
from typing import Any, Callable

from rocketmq_emulator.protocol.grpc_v2 import v2
from rocketmq_emulator.protocol.message import java_string_hash
from rocketmq_emulator.protocol.topics import TOPIC_MAX_LENGTH, is_system_group

C = v2.Code
_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")
GROUP_MAX_LENGTH = 255
#: ProxyConfig's defaults
MAX_USER_PROPERTY_SIZE = 16 * 1024
USER_PROPERTY_MAX_NUM = 128
MAX_MESSAGE_GROUP_SIZE = 64
MAX_DELAY_TIME_MS = 24 * 3600 * 1000
MAX_TRANSACTION_RECOVERY_S = 3600
MAX_INVISIBLE_MS = 12 * 3600 * 1000
#: MessageConst.STRING_HASH_SET (5.3.3): names a user property may not have, and the properties a received
#: message does not show as user properties (GrpcConverter.buildUserAttributes)
RESERVED_PROPERTIES = frozenset({
    "TRACE_ON", "MSG_REGION", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID", "TRAN_MSG",
    "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG", "CORRECTION_FLAG",
    "RECONSUME_TIME", "UNIQ_KEY", "MAX_RECONSUME_TIMES", "CONSUME_START_TIME", "POP_CK", "POP_CK_OFFSET",
    "1ST_POP_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "DUP_INFO", "EXTEND_UNIQ_INFO", "INSTANCE_ID", "CORRELATION_ID",
    "REPLY_TO_CLIENT", "TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER", "MSG_TYPE", "INNER_MULTI_QUEUE_OFFSET",
    "TIMER_DELAY_MS", "TIMER_DELAY_SEC", "TIMER_DELIVER_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS",
    "TIMER_ROLL_TIMES", "TIMER_OUT_MS", "TIMER_DEL_UNIQKEY", "TIMER_DELAY_LEVEL", "__BORNHOST", "BORN_TIMESTAMP",
    "DLQ_ORIGIN_TOPIC", "DLQ_ORIGIN_MESSAGE_ID"})


class Failure(Exception):
    """An RPC refused with a status code of the 5.x protocol."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def validate_topic(topic: str, is_system_topic: Callable[[str], bool]) -> None:
    """GrpcValidator.validateTopic (Validators.checkTopic's texts); `is_system_topic`: TopicValidator.isSystemTopic
    as the brokers behind the endpoint have it (MessagingService.is_system_topic)."""
    if not topic.strip():
        raise Failure(C.ILLEGAL_TOPIC, "The specified topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise Failure(C.ILLEGAL_TOPIC, f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}.")
    if not _NAME.match(topic):
        raise Failure(C.ILLEGAL_TOPIC, f"The specified topic[{topic}] contains illegal characters, allowing only "
                                       "^[%|a-zA-Z0-9_-]+$")
    if is_system_topic(topic):
        raise Failure(C.ILLEGAL_TOPIC, "cannot access system topic")


def validate_group(group: str) -> None:
    """GrpcValidator.validateConsumerGroup (Validators.checkGroup's texts)."""
    if not group.strip():
        raise Failure(C.ILLEGAL_CONSUMER_GROUP, "the specified group is blank")
    if len(group) > GROUP_MAX_LENGTH:
        raise Failure(C.ILLEGAL_CONSUMER_GROUP, "the specified group is longer than group max length 255.")
    if not _NAME.match(group):
        raise Failure(C.ILLEGAL_CONSUMER_GROUP, f"the specified group[{group}] contains illegal characters, "
                                                "allowing only ^[%|a-zA-Z0-9_-]+$")
    if is_system_group(group):
        raise Failure(C.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")


def validate_invisible_time(ms: int, minimum: int = 0) -> None:
    if ms < minimum:
        raise Failure(C.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too small. min is {minimum}")
    if ms > MAX_INVISIBLE_MS:
        raise Failure(C.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too large. max is {MAX_INVISIBLE_MS}")


def _control(text: str) -> bool:
    """Guava's CharMatcher.javaIsoControl: U+0000-U+001F and U+007F-U+009F."""
    return any(c < " " or "\x7f" <= c <= "\x9f" for c in text)


def validate_message(m: Any, max_body: int, now_ms: int) -> None:
    """SendMessageActivity.buildMessage's checks of one message, in its order."""
    sp = m.system_properties
    if not len(m.body):
        raise Failure(C.MESSAGE_BODY_EMPTY, "message body cannot be empty")
    if max_body > 0 and len(m.body) > max_body:
        raise Failure(C.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {max_body}")
    if len(m.user_properties) > USER_PROPERTY_MAX_NUM:
        raise Failure(C.MESSAGE_PROPERTIES_TOO_LARGE, f"too many user properties, max is {USER_PROPERTY_MAX_NUM}")
    size = 0
    for k, v in m.user_properties.items():
        if k in RESERVED_PROPERTIES:
            raise Failure(C.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {k}")
        if _control(k):
            raise Failure(C.ILLEGAL_MESSAGE_PROPERTY_KEY, "the key of property cannot contain control character")
        if _control(v):
            raise Failure(C.ILLEGAL_MESSAGE_PROPERTY_KEY, "the value of property cannot contain control character")
        size += len(k.encode()) + len(v.encode())
    tag = sp.tag
    if tag:
        if not tag.strip():
            raise Failure(C.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
        if "|" in tag:
            raise Failure(C.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
        if _control(tag):
            raise Failure(C.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")
    size += len(tag.encode())
    for key in sp.keys:
        if key and not key.strip():
            raise Failure(C.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
        if key and _control(key):
            raise Failure(C.ILLEGAL_MESSAGE_KEY, "key cannot contain control character")
        size += len(key.encode())
    if size > MAX_USER_PROPERTY_SIZE:
        raise Failure(C.MESSAGE_PROPERTIES_TOO_LARGE, "the total size of user property is too large, max is "
                                                      f"{MAX_USER_PROPERTY_SIZE}")
    if not sp.message_id.strip():
        raise Failure(C.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    if sp.message_type == v2.MessageType.TRANSACTION and sp.HasField("orphaned_transaction_recovery_duration") \
            and sp.orphaned_transaction_recovery_duration.seconds > MAX_TRANSACTION_RECOVERY_S:
        raise Failure(C.BAD_REQUEST, "the max transaction recovery time of message is too large, max is "
                                     f"{MAX_TRANSACTION_RECOVERY_S}")
    if sp.HasField("delivery_timestamp") and sp.delivery_timestamp.ToMilliseconds() - now_ms > MAX_DELAY_TIME_MS:
        raise Failure(C.ILLEGAL_DELIVERY_TIME, f"the max delay time of message is too large, max is "
                                               f"{MAX_DELAY_TIME_MS}")
    group = sp.message_group
    if group:
        if not group.strip():
            raise Failure(C.ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace")
        if len(group.encode()) >= MAX_MESSAGE_GROUP_SIZE:
            raise Failure(C.ILLEGAL_MESSAGE_GROUP, f"message group exceed the max size {MAX_MESSAGE_GROUP_SIZE}")
        if _control(group):
            raise Failure(C.ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character")


def message_type_of(props: dict[str, str]) -> str:
    """TopicMessageType.parseFromMessageProperty."""
    if props.get("TRAN_MSG") == "true":
        return "TRANSACTION"
    if any(k in props for k in ("DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS")):
        return "DELAY"
    if "__SHARDINGKEY" in props:
        return "FIFO"
    return "NORMAL"


def check_message_type(topic_type: str, props: dict[str, str]) -> None:
    """DefaultTopicMessageTypeValidator: the message's type must be its topic's (MIXED takes every type)."""
    actual = message_type_of(props)
    if actual != topic_type and topic_type != "MIXED":
        raise Failure(C.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "org.apache.rocketmq.proxy.common.ProxyException: "
                      f"TopicMessageType validate failed, the expected type is {topic_type}, but actual type is "
                      f"{actual}")


_MASK = (1 << 64) - 1


def consistent_hash(value: int, buckets: int) -> int:
    """Guava's Hashing.consistentHash(long, int): the bucket of `value` (a Java long) among `buckets`."""
    state = value & _MASK
    candidate = 0
    while True:
        state = (2862933555777941757 * state + 1) & _MASK
        nxt = int((candidate + 1) / (((state >> 33) + 1) / 2.0**31))
        if 0 <= nxt < buckets:
            candidate = nxt
        else:
            return candidate


def fifo_queue(message_group: str, write_queues: int) -> int:
    """The queue SendMessageQueueSelector picks for a message group: consistentHash(group.hashCode(), n)."""
    return consistent_hash(java_string_hash(message_group), write_queues)
