"""Typed JSON bodies of the client, route and heartbeat requests (reference §6.3).

Every body is a `msgspec.Struct` with snake_case attributes whose encode names are the Java property names.
`encode()` writes fastjson's compact form (properties alphabetical, None omitted, see `fastjson.dumps`);
`decode(bytes)` is tolerant the way fastjson is (§6.2): enums by name (any case) or ordinal, numbers given as
strings, missing and null properties left at their defaults (except MessageQueue, whose three properties are
required), unknown properties ignored, bare or quoted numeric keys, object-form bean keys, and the list forms
of MessageQueue-keyed maps. Anything that cannot be made into the body raises `ProtocolError`.

Stats, reset-offset and config bodies live in `admin_bodies`.
"""

from __future__ import annotations

import types
import typing
from enum import Enum, IntEnum
from typing import Any, Callable, TypeVar

import msgspec

from . import fastjson
from .codes import LanguageCode
from .errors import ProtocolError
from .java_texts import NULL_BODY

__all__ = [
    "Body", "MessageQueue", "ConsumeType", "MessageModel", "ConsumeFromWhere", "SubscriptionData",
    "ConsumerData", "ProducerData", "HeartbeatData", "QueueData", "BrokerData", "TopicRouteData", "ClusterInfo",
    "TopicList", "GroupList", "KVTable", "GetConsumerListByGroupResponseBody", "Connection", "ConsumerConnection",
    "ProducerConnection", "LockBatchRequestBody", "UnlockBatchRequestBody", "LockBatchResponseBody",
    "CheckClientRequestBody", "CMResult", "ConsumeMessageDirectlyResult", "OffsetMovedEvent", "from_json_value",
    "loads",
]

B = TypeVar("B", bound="Body")
_Conv = Callable[[Any, str], Any]  # (parsed JSON value, path for error messages) -> typed value


# --------------------------------------------------------------------------------------------------
# Tolerant conversion of parsed JSON values into typed bodies
# --------------------------------------------------------------------------------------------------
def _bad(path: str, expected: str, value: Any) -> ProtocolError:
    text = repr(value)
    return ProtocolError(f"{path}: expected {expected}, got {text[:60]}{'...' if len(text) > 60 else ''}")


def _to_str(v: Any, path: str) -> str:
    if type(v) is str:
        return v
    t = type(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return fastjson.java_double(v)
    raise _bad(path, "a string", v)


def _to_int(v: Any, path: str) -> int:
    if type(v) is int:
        return v
    t = type(v)
    if t is str:
        try:
            return int(v.strip())
        except ValueError:
            pass
    elif t is float and v.is_integer():
        return int(v)
    elif t is bool:
        return int(v)
    raise _bad(path, "an integer", v)


def _to_float(v: Any, path: str) -> float:
    if type(v) is float:
        return v
    t = type(v)
    if t is int or t is bool:
        return float(v)
    if t is str:
        try:
            return float(v)
        except ValueError:
            pass
    raise _bad(path, "a number", v)


def _to_bool(v: Any, path: str) -> bool:
    if type(v) is bool:
        return v
    if type(v) is str and v.lower() in ("true", "false"):
        return v.lower() == "true"
    if type(v) is int and v in (0, 1):
        return bool(v)
    raise _bad(path, "a boolean", v)


def _to_any(v: Any, path: str) -> Any:
    return v


def _enum_converter(enum: type[Enum]) -> _Conv:
    by_name = {m.name.upper(): m for m in enum}
    by_value = {m.value: m for m in enum}

    def conv(v: Any, path: str) -> Any:
        if type(v) is str:
            member = by_name.get(v.strip().upper())
            if member is None:
                try:
                    member = by_value.get(int(v))
                except ValueError:
                    pass
        elif type(v) is int or isinstance(v, enum):
            member = by_value.get(v)
        else:
            member = None
        if member is None:
            raise _bad(path, f"a {enum.__name__} name or ordinal", v)
        return member

    return conv


_CONVERTERS: dict[Any, _Conv] = {str: _to_str, int: _to_int, float: _to_float, bool: _to_bool, Any: _to_any}


def _converter(tp: Any) -> _Conv:
    conv = _CONVERTERS.get(tp)
    if conv is not None:
        return conv
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(tp, type) and issubclass(tp, Enum):
        conv = _enum_converter(tp)
    elif isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        conv = _bean_converter(tp)
    elif origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"unsupported union {tp}")
        conv = _converter(inner[0])
    elif origin is list or origin is set or origin is frozenset:
        conv = _collection_converter(origin, _converter(args[0]))
    elif origin is dict:
        conv = _dict_converter(args[0], _converter(args[1]))
    else:
        raise TypeError(f"no fastjson converter for {tp!r}")
    _CONVERTERS[tp] = conv
    return conv


def _collection_converter(kind: type, item: _Conv) -> _Conv:
    def conv(v: Any, path: str) -> Any:
        if not isinstance(v, (list, tuple)):
            raise _bad(path, "an array", v)
        where = path + "[]"
        return kind(item(x, where) for x in v if x is not None)

    return conv


def _key_converter(tp: Any) -> _Conv:
    if tp is str:
        return _to_str
    if tp is int:
        return _to_int
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        bean = _bean_converter(tp)

        def conv(k: Any, path: str) -> Any:
            if isinstance(k, tp):
                return k
            if isinstance(k, str) and k.lstrip().startswith("{"):  # a key written as a string of JSON
                k = fastjson.loads(k)
            elif isinstance(k, tuple):  # a frozen object key that was not a MessageQueue
                try:
                    k = dict(k)
                except (TypeError, ValueError):
                    raise _bad(path, f"a {tp.__name__} key", k) from None
            return bean(k, path)

        return conv
    return _converter(tp)


def _dict_converter(key_type: Any, value: _Conv) -> _Conv:
    key = _key_converter(key_type)
    bean_keys = isinstance(key_type, type) and issubclass(key_type, msgspec.Struct)

    def conv(v: Any, path: str) -> Any:
        if isinstance(v, dict):
            key_path, value_path = path + "{key}", path + "{}"
            return {key(k, key_path): value(x, value_path) for k, x in v.items() if x is not None}
        if bean_keys and isinstance(v, list):
            # the list forms of a bean-keyed map: C++ `[{...mq, "offset": n}]`, gson `[[{mq}, n]]`
            out = {}
            for i, entry in enumerate(v):
                where = f"{path}[{i}]"
                if isinstance(entry, dict) and "offset" in entry:
                    out[key(entry, where)] = value(entry["offset"], where + ".offset")
                elif isinstance(entry, list) and len(entry) == 2:
                    out[key(entry[0], where)] = value(entry[1], where)
                elif entry is not None:
                    raise _bad(where, "a map entry", entry)
            return out
        raise _bad(path, "an object", v)

    return conv


class _BeanSpec:
    """How to build one Struct type from a parsed JSON object."""

    __slots__ = ("fields", "folded", "required")

    def __init__(self, cls: type[msgspec.Struct]) -> None:
        self.fields: dict[str, tuple[str, _Conv]] = {}
        self.required: list[str] = []  # fields without a default (MessageQueue's): no guessing those
        for f in msgspec.structs.fields(cls):
            self.fields[f.encode_name] = (f.name, _converter(f.type))
            if f.required:
                self.required.append(f.name)
        for alias, wire in getattr(cls, "__fastjson_aliases__", {}).items():
            self.fields.setdefault(alias, self.fields[wire])
        self.folded = {k.lower(): v for k, v in self.fields.items()}


_SPECS: dict[type, _BeanSpec] = {}


def _bean_converter(cls: type[msgspec.Struct]) -> _Conv:
    def conv(v: Any, path: str) -> Any:
        if isinstance(v, cls):
            return v
        if not isinstance(v, dict):
            raise _bad(path, f"a {cls.__name__} object", v)
        spec = _SPECS.get(cls)
        if spec is None:
            spec = _SPECS[cls] = _BeanSpec(cls)
        kwargs: dict[str, Any] = {}
        fields, folded = spec.fields, spec.folded
        for name, value in v.items():
            if value is None or type(name) is not str:
                continue
            field = fields.get(name) or folded.get(name.lower())
            if field is not None:
                kwargs[field[0]] = field[1](value, f"{path}.{name}")
        for attr in spec.required:
            if attr not in kwargs:
                raise ProtocolError(f"{path}: missing property for {attr!r} of {cls.__name__}")
        return cls(**kwargs)

    return conv


def from_json_value(cls: type[B], value: Any) -> B:
    """Build a body from an already parsed JSON value (e.g. an object nested in another document)."""
    try:
        return _converter(cls)(value, cls.__name__)  # type: ignore[no-any-return]  # the converter of cls makes a cls
    except RecursionError:
        raise ProtocolError(f"{cls.__name__}: value nested too deeply") from None


def utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        raise ProtocolError(f"cannot encode body text as UTF-8: {exc.reason}") from None


class Body(msgspec.Struct, kw_only=True, rename="camel"):
    """Base of all JSON bodies: fastjson encode/decode."""

    def encode(self) -> bytes:
        """Compact fastjson text (UTF-8)."""
        return utf8(fastjson.dumps(self))

    @classmethod
    def decode(cls: type[B], data: bytes | bytearray | memoryview | str) -> B:
        """Parse a body; tolerant of what fastjson accepts (§6.2), `ProtocolError` otherwise."""
        if not data:  # 4.9.8 decodes `new String(body)` of no body: a NullPointerException
            raise ProtocolError(f"the request has no body: a JSON {cls.__name__} body is needed", java=NULL_BODY)
        return from_json_value(cls, loads(data))


# --------------------------------------------------------------------------------------------------
# Message queues, heartbeat
# --------------------------------------------------------------------------------------------------
# a frozen Struct on a non-frozen base is fine for msgspec; mypy applies the dataclass rule that forbids it
class MessageQueue(Body, frozen=True, order=True, kw_only=False):  # type: ignore[misc]  # see the line above
    """A queue of a topic on one broker; hashable, ordered by (topic, broker_name, queue_id)."""

    topic: str
    broker_name: str
    queue_id: int


def _message_queue_key(obj: dict[Any, Any]) -> MessageQueue | None:
    """An object in key position that names a queue (topic, brokerName, queueId) as a MessageQueue."""
    topic, broker, qid = obj.get("topic"), obj.get("brokerName"), obj.get("queueId")
    if type(topic) is not str or type(broker) is not str:
        return None
    if type(qid) is str:
        try:
            qid = int(qid)
        except ValueError:
            return None
    return MessageQueue(topic, broker, qid) if type(qid) is int else None


def loads(data: str | bytes | bytearray | memoryview) -> Any:
    """`fastjson.loads` with object keys that name a queue read as `MessageQueue` (the Java bodies' map keys)."""
    return fastjson.loads(data, object_key=_message_queue_key)


class ConsumeType(IntEnum):
    CONSUME_ACTIVELY = 0  # pull
    CONSUME_PASSIVELY = 1  # push


class MessageModel(IntEnum):
    BROADCASTING = 0
    CLUSTERING = 1


class ConsumeFromWhere(IntEnum):
    CONSUME_FROM_LAST_OFFSET = 0
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = 1
    CONSUME_FROM_MIN_OFFSET = 2
    CONSUME_FROM_MAX_OFFSET = 3
    CONSUME_FROM_FIRST_OFFSET = 4
    CONSUME_FROM_TIMESTAMP = 5


class SubscriptionData(Body):
    """One subscription of a consumer group: topic plus tag expression (C++ omits the sets when empty)."""

    class_filter_mode: bool = False
    topic: str = ""
    sub_string: str = ""
    tags_set: list[str] = msgspec.field(default_factory=list)
    code_set: list[int] = msgspec.field(default_factory=list)
    sub_version: int = 0
    expression_type: str = "TAG"


class ConsumerData(Body):
    group_name: str = ""
    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    subscription_data_set: list[SubscriptionData] = msgspec.field(default_factory=list)
    unit_mode: bool = False


class ProducerData(Body):
    group_name: str = ""


class HeartbeatData(Body):
    """HEART_BEAT body: the client id plus the producer and consumer groups of the client instance."""

    client_id: str = msgspec.field(default="", name="clientID")
    producer_data_set: list[ProducerData] = msgspec.field(default_factory=list)
    consumer_data_set: list[ConsumerData] = msgspec.field(default_factory=list)


# --------------------------------------------------------------------------------------------------
# Route and cluster data
# --------------------------------------------------------------------------------------------------
class QueueData(Body):
    __fastjson_aliases__ = {"topicSynFlag": "topicSysFlag"}  # the ≤ 4.8 spelling

    broker_name: str = ""
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = 0


class BrokerData(Body):
    """A broker group: broker id (0 = master) -> "ip:port"."""

    cluster: str = ""
    broker_name: str = ""
    broker_addrs: dict[int, str] = msgspec.field(default_factory=dict)


class TopicRouteData(Body):
    order_topic_conf: str | None = None
    queue_datas: list[QueueData] = msgspec.field(default_factory=list)
    broker_datas: list[BrokerData] = msgspec.field(default_factory=list)
    filter_server_table: dict[str, list[str]] = msgspec.field(default_factory=dict)

    def encode(self, standard_json: bool = False) -> bytes:
        """Bare broker-id keys (old clients) or, with `standard_json`, quoted and sorted keys (§6.1 rule 6)."""
        return utf8(fastjson.dumps(self, standard_json=standard_json))


class ClusterInfo(Body):
    broker_addr_table: dict[str, BrokerData] = msgspec.field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = msgspec.field(default_factory=dict)


class TopicList(Body):
    topic_list: list[str] = msgspec.field(default_factory=list)
    broker_addr: str | None = None


class GroupList(Body):
    group_list: list[str] = msgspec.field(default_factory=list)


class KVTable(Body):
    table: dict[str, str] = msgspec.field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# Client management
# --------------------------------------------------------------------------------------------------
class GetConsumerListByGroupResponseBody(Body):
    consumer_id_list: list[str] = msgspec.field(default_factory=list)


class Connection(Body):
    """One client channel: TCP peer address, client id, language and version from its requests."""

    client_addr: str = ""
    client_id: str = ""
    language: LanguageCode = LanguageCode.JAVA
    version: int = 0


class ConsumerConnection(Body):
    connection_set: list[Connection] = msgspec.field(default_factory=list)
    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    subscription_table: dict[str, SubscriptionData] = msgspec.field(default_factory=dict)


class ProducerConnection(Body):
    connection_set: list[Connection] = msgspec.field(default_factory=list)


class LockBatchRequestBody(Body):
    consumer_group: str = ""
    client_id: str = ""
    mq_set: set[MessageQueue] = msgspec.field(default_factory=set)


class UnlockBatchRequestBody(Body):
    consumer_group: str = ""
    client_id: str = ""
    mq_set: set[MessageQueue] = msgspec.field(default_factory=set)


class LockBatchResponseBody(Body):
    lock_ok_mq_set: set[MessageQueue] = msgspec.field(default_factory=set, name="lockOKMQSet")


class CheckClientRequestBody(Body):
    client_id: str = ""
    group: str = ""
    subscription_data: SubscriptionData | None = None


class CMResult(IntEnum):
    """Outcome of CONSUME_MESSAGE_DIRECTLY (Java `CMResult`)."""

    CR_SUCCESS = 0
    CR_LATER = 1
    CR_ROLLBACK = 2
    CR_COMMIT = 3
    CR_THROW_EXCEPTION = 4
    CR_RETURN_NULL = 5


class ConsumeMessageDirectlyResult(Body):
    order: bool = False
    auto_commit: bool = True
    consume_result: CMResult | None = None
    remark: str | None = None
    spent_time_mills: int = 0


class OffsetMovedEvent(Body):
    """Body of the messages written to topic OFFSET_MOVED_EVENT on PULL_OFFSET_MOVED."""

    consumer_group: str = ""
    message_queue: MessageQueue | None = None
    offset_request: int = 0
    offset_new: int = 0
