"""Typed request/response headers (reference §4): conversion to and from `extFields`.

Each header is a msgspec Struct whose attributes are snake_case and whose wire names are the Java field
names. `Header.from_ext(ext)` parses string values by declared type (booleans: "true"/"false" in any case, and
"1"/"0"; any other text is false as in Java; an empty value counts as absent) and raises `ProtocolError` naming the wire
field when a required field is missing or a value does not parse (stricter than Java, which only logs).
`header.to_ext()` gives the `dict[str, str]` a command carries; None fields are omitted.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Callable, ClassVar, TypeVar

import msgspec

from rocketmq_emulator.native import lane

from .codes import CURRENT_VERSION
from .command import RemotingCommand
from .errors import ProtocolError
from .frame import frame_prefix
from .java_texts import number_format

H = TypeVar("H", bound="CommandHeader")
_WIRE_NAME = re.compile(r"`\$\.([^`\[]+)`|field `([^`]+)`")


def camel_except(**overrides: str) -> Callable[[str], str]:
    """A msgspec `rename` callable: Java camelCase names, with a few fields spelled otherwise."""
    def rename(name: str) -> str:
        if name in overrides:
            return overrides[name]
        head, *rest = name.split("_")
        return head + "".join(p.title() for p in rest)
    return rename


class CommandHeader(msgspec.Struct, kw_only=True, rename="camel"):
    """Base of every typed header."""

    # wire name -> Java field name, for error messages of the V2 one-letter form
    _long_names: ClassVar[dict[str, str]] = {}
    _bool_keys: ClassVar[tuple[str, ...] | None] = None
    _nonstr_keys: ClassVar[tuple[str, ...] | None] = None
    _out_fields: ClassVar[tuple[tuple[str, str], ...] | None] = None

    @classmethod
    def _prepare(cls) -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...]]:
        """Fill (and return) the class's `_bool_keys`, `_nonstr_keys` and `_out_fields`."""
        info = msgspec.structs.fields(cls)
        cls._bool_keys = bools = tuple(f.encode_name for f in info if _is_type(f.type, bool))
        cls._nonstr_keys = nonstr = tuple(f.encode_name for f in info if not _is_type(f.type, str))
        cls._out_fields = out = tuple((f.name, f.encode_name) for f in info)
        return bools, nonstr, out

    @classmethod
    def from_ext(cls: type[H], ext: dict[str, str] | None) -> H:
        try:  # fast path: every value already parses
            return msgspec.convert(ext or {}, cls, strict=False)
        except msgspec.ValidationError:
            pass
        nonstr_keys, bool_keys = cls._nonstr_keys, cls._bool_keys
        if nonstr_keys is None or bool_keys is None:
            bool_keys, nonstr_keys, _ = cls._prepare()
        ext = dict(ext or {})
        for key in nonstr_keys:
            value = ext.get(key)
            if value is None:
                continue
            if value == "":  # Java: an unparsable/empty value leaves the field at its default
                del ext[key]
            elif key in bool_keys:
                ext[key] = "true" if str(value).lower() == "true" else "false"
        try:
            return msgspec.convert(ext, cls, strict=False)
        except msgspec.ValidationError as exc:
            raise cls._error(exc, ext) from None

    @classmethod
    def _error(cls, exc: msgspec.ValidationError, ext: dict[str, str]) -> ProtocolError:
        text = str(exc)
        m = _WIRE_NAME.search(text)
        wire = (m.group(1) or m.group(2)) if m else None
        if wire is None:
            return ProtocolError(f"invalid {cls.__name__}: {text}")
        name = cls._long_names.get(wire, wire)
        shown = f"`{wire}` ({name})" if name != wire else f"`{wire}`"
        if "missing required field" in text:
            return ProtocolError(f"missing required header field {shown}")
        value = ext.get(wire)
        java = number_format(str(value)) if "Expected `int`" in text else None  # Integer/Long.parseLong in 4.9.8
        return ProtocolError(f"invalid value {value!r} for header field {shown}: {text.split(' - ')[0]}", java=java)

    def to_ext(self) -> dict[str, str]:
        cls = type(self)
        fields = cls._out_fields
        if fields is None:
            fields = cls._prepare()[2]
        out: dict[str, str] = {}
        for attr, wire in fields:
            value = getattr(self, attr)
            if value is None:
                continue
            if value is True:
                out[wire] = "true"
            elif value is False:
                out[wire] = "false"
            else:
                out[wire] = value if type(value) is str else str(value)
        return out


def _is_type(annotation: Any, t: type) -> bool:
    if annotation is t:
        return True
    args = getattr(annotation, "__args__", None)
    if not args:
        return False
    return t in args and all(a is t or a is type(None) for a in args)


# --------------------------------------------------------------------------------------------------
# §4.1 Sending
# --------------------------------------------------------------------------------------------------
#: the native lane's answer encoder (rocketmq_emulator.native), None on the Python path
_success_frame = lane.success_frame if lane is not None else None


class SendMessageRequestHeader(CommandHeader, kw_only=True):
    """SEND_MESSAGE (10) with long names; also the decoded form of the V2 header."""

    producer_group: str
    topic: str
    default_topic: str = "TBW102"
    default_topic_queue_nums: int = 4
    queue_id: int
    sys_flag: int = 0
    born_timestamp: int
    flag: int = 0
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: int | None = None
    bname: str | None = None

    def to_v2(self) -> SendMessageRequestHeaderV2:
        return SendMessageRequestHeaderV2(**msgspec.structs.asdict(self))


_V2_LETTERS = {"producer_group": "a", "topic": "b", "default_topic": "c", "default_topic_queue_nums": "d",
               "queue_id": "e", "sys_flag": "f", "born_timestamp": "g", "flag": "h", "properties": "i",
               "reconsume_times": "j", "unit_mode": "k", "max_reconsume_times": "l", "batch": "m", "bname": "n"}


def _v2_to_v1(self: Any) -> SendMessageRequestHeader:
    return SendMessageRequestHeader(**msgspec.structs.asdict(self))


def _v2_fast_ext(producer_group: str, topic: str, queue_id: int, properties: str, *, sys_flag: int = 0,
                 flag: int = 0, born_timestamp: int, reconsume_times: int = 0, batch: bool = False,
                 bname: str | None = None, max_reconsume_times: int | None = None,
                 default_topic: str = "TBW102", default_topic_queue_nums: int = 4) -> dict[str, str]:
    """The producer's hot path (Java's `FastCodesHeader`): the one-letter extFields built directly, the same
    as `to_ext()` of the equal header (tests/test_headers.py checks the two agree)."""
    ext = {"a": producer_group, "b": topic, "c": default_topic, "d": str(default_topic_queue_nums),
           "e": str(queue_id), "f": str(sys_flag), "g": str(born_timestamp), "h": str(flag), "i": properties,
           "j": str(reconsume_times), "k": "false", "m": "true" if batch else "false"}
    if max_reconsume_times is not None:
        ext["l"] = str(max_reconsume_times)
    if bname is not None:
        ext["n"] = bname
    return ext


#: SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320): the same fields under one-letter names.
if TYPE_CHECKING:
    class SendMessageRequestHeaderV2(SendMessageRequestHeader, kw_only=True):
        """The type checker's view of the class `defstruct` builds below: SendMessageRequestHeader's fields (the
        two are used alike; at run time it is not a subclass), `to_v1()` and `fast_ext()`."""

        def to_v1(self) -> SendMessageRequestHeader: ...

        fast_ext = staticmethod(_v2_fast_ext)
else:
    SendMessageRequestHeaderV2 = msgspec.defstruct(
        "SendMessageRequestHeaderV2",
        # 4.9.8 checks no field of the V2 header: a V2 send without its topic is a blank topic ("The specified
        # topic is blank."), so `b` defaults to "" here (the long-name header still requires it, as 4.9.8 does)
        [(f.name, f.type, f.default) if f.required is False else (f.name, f.type, "") if f.name == "topic"
         else (f.name, f.type) for f in msgspec.structs.fields(SendMessageRequestHeader)],
        bases=(CommandHeader,), kw_only=True, rename=_V2_LETTERS, module=__name__,
        namespace={"to_v1": _v2_to_v1, "fast_ext": staticmethod(_v2_fast_ext), "_long_names": {
            letter: msgspec.structs.fields(SendMessageRequestHeader)[i].encode_name
            for i, letter in enumerate(_V2_LETTERS[f.name] for f in msgspec.structs.fields(SendMessageRequestHeader))
        }},
    )


def decode_send_header(code: int, ext: dict[str, str] | None) -> SendMessageRequestHeader:
    """The send header of SEND_MESSAGE / SEND_REPLY_MESSAGE (long names) or SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE /
    SEND_REPLY_MESSAGE_V2 (letters).

    Both classes have the same attributes, so callers use the result the same way whatever the code.
    """
    if code == 10 or code == 324:  # SEND_MESSAGE, SEND_REPLY_MESSAGE
        return SendMessageRequestHeader.from_ext(ext)
    return SendMessageRequestHeaderV2.from_ext(ext)


#: A JSON header with its extFields left undecoded: RemotingCommand's header fields (same wire names, types and
#: defaults, read as strictly: a field it would refuse makes `decode_send_v2_frame` give up), extFields raw
_JsonEnvelope = msgspec.defstruct(
    "_JsonEnvelope",
    [(f.encode_name, f.type, f.default) for f in msgspec.structs.fields(RemotingCommand)
     if f.name in ("code", "language", "version", "opaque", "flag", "remark")]
    + [("extFields", msgspec.Raw, msgspec.Raw(b""))],  # (a Raw cannot be in a union with None)
    module=__name__)


_envelope_decoder = msgspec.json.Decoder(_JsonEnvelope)
_send_v2_decoder = msgspec.json.Decoder(SendMessageRequestHeaderV2, strict=False)


def decode_send_v2_frame(header: bytes | bytearray | memoryview, body: bytes) -> RemotingCommand | None:
    """A SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE JSON header read straight into its typed header (no extFields dict,
    no `convert`): the broker's send hot path (`FrameDecoder.typed`). Returns the RemotingCommand with `header`
    set and `ext_fields` None, or None whenever the generic path might answer differently (a value it would
    coerce or refuse, a malformed header): that path then decodes the frame and raises what it raises.
    `decode_send_header(code, ext)` of the generic command gives an equal header (tests/test_typed_send_header.py)."""
    env: Any  # (a `defstruct` class: its fields are RemotingCommand's)
    try:
        env = _envelope_decoder.decode(header)
        ext = env.extFields
        if not ext:
            return None
        typed = _send_v2_decoder.decode(ext)
    except msgspec.DecodeError:  # ValidationError included
        return None
    return RemotingCommand(env.code, env.language, env.version, env.opaque, env.flag, env.remark, None, body, 0, typed)


#: `FrameDecoder.typed` for the send codes whose header is the V2 one (letters)
SEND_V2_TYPED = {b'{"code":310,': decode_send_v2_frame, b'{"code":320,': decode_send_v2_frame}


class SendMessageResponseHeader(CommandHeader, kw_only=True):
    msg_id: str
    queue_id: int
    queue_offset: int
    transaction_id: str | None = None

    @staticmethod
    def fast_ext(msg_id: str, queue_id: int, queue_offset: int) -> dict[str, str]:
        """The broker's send hot path: the same extFields as `to_ext()` without a transaction id."""
        return {"msgId": msg_id, "queueId": str(queue_id), "queueOffset": str(queue_offset)}

    @staticmethod
    def _success_template(extra: dict[str, str]) -> str:
        """The SUCCESS answer's JSON header as a %-template of (msg_id, queue_id, queue_offset, opaque)."""
        from .command import RESPONSE_FLAG, RemotingCommand
        from .frame import json_frame_template

        proto = RemotingCommand(0, "JAVA", CURRENT_VERSION, 0, RESPONSE_FLAG, None,
                                {"msgId": "", "queueId": "", "queueOffset": "", **extra})
        return json_frame_template(proto, {"msgId": "%s", "queueId": "%d", "queueOffset": "%d"})

    @staticmethod
    def success_frame_segments(extra: dict[str, str]) -> tuple[bytes, ...]:
        """The template's literal pieces around its four conversions, as bytes: what the native lane's
        `success_frame` and `success_frames` fill."""
        segments = [""]
        for piece in re.split(r"(%%|%[sd])", SendMessageResponseHeader._success_template(extra)):
            if piece == "%%":
                segments[-1] += "%"
            elif piece in ("%s", "%d"):
                segments.append("")
            else:
                segments[-1] += piece
        return tuple(part.encode() for part in segments)

    @staticmethod
    def success_frame_encoder(extra: dict[str, str], native_off: bool = False
                              ) -> Callable[[str, int, int, int], bytes]:
        """The broker's send hot path: `encode(msg_id, queue_id, queue_offset, opaque)` -> the whole SUCCESS
        answer frame, byte for byte what encoding `RemotingCommand.response_to(request, SUCCESS, None,
        fast_ext(...) | extra)` for a JSON request gives (`extra`: MSG_REGION, TRACE_ON). With the native lane
        its `success_frame` fills the template (`native_off`: the Python twin regardless)."""
        template = SendMessageResponseHeader._success_template(extra)

        def encode(msg_id: str, queue_id: int, queue_offset: int, opaque: int) -> bytes:
            header = (template % (msg_id, queue_id, queue_offset, opaque)).encode()
            return frame_prefix(len(header)) + header

        if _success_frame is None or native_off:
            return encode
        return functools.partial(_success_frame, SendMessageResponseHeader.success_frame_segments(extra))


# --------------------------------------------------------------------------------------------------
# §4.2 Pulling
# --------------------------------------------------------------------------------------------------
class PullMessageRequestHeader(CommandHeader, kw_only=True):
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    sys_flag: int
    commit_offset: int = 0
    suspend_timeout_millis: int = 0
    subscription: str | None = None
    sub_version: int = 0
    expression_type: str | None = None
    bname: str | None = None


#: PullMessageResponseHeader.found_frame's JSON header (frame.encode_json_header's layout)
_FOUND_TEMPLATE = (b'{"code":0,"extFields":{"suggestWhichBrokerId":"0","nextBeginOffset":"%d","minOffset":"%d",'
                   b'"maxOffset":"%d"},"flag":1,"language":"JAVA","opaque":%d,"remark":"FOUND",'
                   b'"serializeTypeCurrentRPC":"JSON","version":' + str(CURRENT_VERSION).encode() + b'}')


class PullMessageResponseHeader(CommandHeader, kw_only=True):
    suggest_which_broker_id: int
    next_begin_offset: int
    min_offset: int
    max_offset: int

    @staticmethod
    def fast_ext(next_begin_offset: int, min_offset: int, max_offset: int, suggest_which_broker_id: int = 0
                 ) -> dict[str, str]:
        """The broker's pull hot path: the same extFields as `to_ext()`, built directly."""
        return {"suggestWhichBrokerId": str(suggest_which_broker_id), "nextBeginOffset": str(next_begin_offset),
                "minOffset": str(min_offset), "maxOffset": str(max_offset)}

    @staticmethod
    def found_frame(opaque: int, next_begin_offset: int, min_offset: int, max_offset: int, body: bytes) -> bytes:
        """The broker's pull hot path: the whole SUCCESS ("FOUND") answer frame to a JSON request, byte for byte what
        encoding `RemotingCommand.response_to(request, SUCCESS, "FOUND", fast_ext(...), body)` gives."""
        header = _FOUND_TEMPLATE % (next_begin_offset, min_offset, max_offset, opaque)
        return frame_prefix(len(header), len(body)) + header + body


# --------------------------------------------------------------------------------------------------
# §4.3 Offsets
# --------------------------------------------------------------------------------------------------
class QueryConsumerOffsetRequestHeader(CommandHeader, kw_only=True):
    consumer_group: str
    topic: str
    queue_id: int
    set_zero_if_not_found: bool | None = None
    bname: str | None = None


class QueryConsumerOffsetResponseHeader(CommandHeader, kw_only=True):
    offset: int


class UpdateConsumerOffsetRequestHeader(CommandHeader, kw_only=True):
    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: int
    bname: str | None = None


class SearchOffsetRequestHeader(CommandHeader, kw_only=True):
    topic: str
    queue_id: int
    timestamp: int
    bname: str | None = None


class OffsetResponseHeader(CommandHeader, kw_only=True):
    """Response of SEARCH_OFFSET_BY_TIMESTAMP, GET_MAX_OFFSET and GET_MIN_OFFSET."""

    offset: int


SearchOffsetResponseHeader = GetMaxOffsetResponseHeader = GetMinOffsetResponseHeader = OffsetResponseHeader


class QueueRequestHeader(CommandHeader, kw_only=True):
    """Request of GET_MAX_OFFSET, GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME."""

    topic: str
    queue_id: int
    bname: str | None = None


GetMaxOffsetRequestHeader = GetMinOffsetRequestHeader = GetEarliestMsgStoretimeRequestHeader = QueueRequestHeader


class GetEarliestMsgStoretimeResponseHeader(CommandHeader, kw_only=True):
    timestamp: int


# --------------------------------------------------------------------------------------------------
# §4.4 Querying / viewing messages
# --------------------------------------------------------------------------------------------------
class ViewMessageRequestHeader(CommandHeader, kw_only=True):
    offset: int


class QueryMessageRequestHeader(CommandHeader, kw_only=True, rename=camel_except(unique_key_query="_UNIQUE_KEY_QUERY")):
    topic: str
    key: str | None = None  # 4.9.8 reads no key as a key nothing matches
    max_num: int
    begin_timestamp: int
    end_timestamp: int
    unique_key_query: bool | None = None  # the admin's query by UNIQ_KEY (an extra extField upstream)


class QueryMessageResponseHeader(CommandHeader, kw_only=True):
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


# --------------------------------------------------------------------------------------------------
# §4.5 Client management, §4.6 transactions
# --------------------------------------------------------------------------------------------------
class UnregisterClientRequestHeader(CommandHeader, kw_only=True, rename=camel_except(client_id="clientID")):
    client_id: str | None = None  # 4.9.8 unregisters by the connection; the id is not needed
    producer_group: str | None = None
    consumer_group: str | None = None


class GroupRequestHeader(CommandHeader, kw_only=True):
    """GET_CONSUMER_LIST_BY_GROUP, NOTIFY_CONSUMER_IDS_CHANGED, GET_CONSUMER_CONNECTION_LIST."""

    consumer_group: str


class NotifyConsumerIdsChangedRequestHeader(GroupRequestHeader, kw_only=True):
    """NOTIFY_CONSUMER_IDS_CHANGED (40), from a broker to each client of the group."""


GetConsumerListByGroupRequestHeader = GroupRequestHeader
GetConsumerConnectionListRequestHeader = GroupRequestHeader


class ConsumerSendMsgBackRequestHeader(CommandHeader, kw_only=True):
    offset: int
    group: str
    delay_level: int = 0
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None


class ReplyMessageRequestHeader(CommandHeader, kw_only=True):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326), broker -> requesting client: the reply's send header, where it was born
    and stored ("ip:port"), and when; the body is the reply's body."""

    producer_group: str
    topic: str
    default_topic: str = "TBW102"
    default_topic_queue_nums: int = 4
    queue_id: int
    sys_flag: int = 0
    born_timestamp: int
    flag: int = 0
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    born_host: str
    store_host: str
    store_timestamp: int


class EndTransactionRequestHeader(CommandHeader, kw_only=True):
    producer_group: str
    tran_state_table_offset: int
    commit_log_offset: int
    commit_or_rollback: int
    from_transaction_check: bool = False
    msg_id: str
    transaction_id: str | None = None


class CheckTransactionStateRequestHeader(CommandHeader, kw_only=True):
    tran_state_table_offset: int
    commit_log_offset: int
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None


# --------------------------------------------------------------------------------------------------
# §4.7 Admin and relayed requests
# --------------------------------------------------------------------------------------------------
class ResetOffsetRequestHeader(CommandHeader, kw_only=True, rename=camel_except(is_force="isForce")):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str
    group: str
    timestamp: int
    is_force: bool = False
    queue_id: int | None = None  # 5.x
    offset: int | None = None  # 5.x


class GetConsumerStatusRequestHeader(CommandHeader, kw_only=True):
    topic: str
    group: str
    client_addr: str | None = None


class GetConsumerRunningInfoRequestHeader(CommandHeader, kw_only=True):
    consumer_group: str
    client_id: str
    jstack_enable: bool = False


class ConsumeMessageDirectlyResultRequestHeader(CommandHeader, kw_only=True):
    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None


class GetConsumeStatsRequestHeader(CommandHeader, kw_only=True):
    consumer_group: str
    topic: str | None = None


class GetProducerConnectionListRequestHeader(CommandHeader, kw_only=True):
    producer_group: str


class ViewBrokerStatsDataRequestHeader(CommandHeader, kw_only=True):
    """VIEW_BROKER_STATS_DATA (315): one stats item, e.g. TOPIC_PUT_NUMS / `Orders`."""

    stats_name: str
    stats_key: str


class GetConsumeStatsInBrokerHeader(CommandHeader, kw_only=True):
    """GET_BROKER_CONSUME_STATS (317): `isOrder` keeps only the groups' ordered topics."""

    is_order: bool = False


class CloneGroupOffsetRequestHeader(CommandHeader, kw_only=True):
    """CLONE_GROUP_OFFSET (314)."""

    src_group: str
    dest_group: str
    topic: str | None = None
    offline: bool = False


class TopicRequestHeader(CommandHeader, kw_only=True):
    """GET_TOPIC_STATS_INFO, DELETE_TOPIC_IN_BROKER, QUERY_TOPIC_CONSUME_BY_WHO."""

    topic: str


GetTopicStatsInfoRequestHeader = DeleteTopicRequestHeader = QueryTopicConsumeByWhoRequestHeader = TopicRequestHeader


class CreateTopicRequestHeader(CommandHeader, kw_only=True):
    topic: str
    default_topic: str = "TBW102"
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int | None = None
    order: bool = False
    #: 5.x: "+message.type=FIFO" (AttributeParser: `+key=value` / `-key`, comma separated)
    attributes: str | None = None


class DeleteSubscriptionGroupRequestHeader(CommandHeader, kw_only=True):
    group_name: str
    remove_offset: bool = False


class LockBatchMqRequestHeader(CommandHeader, kw_only=True):
    """LOCK/UNLOCK_BATCH_MQ carry no header fields (the request is in the body); 4.9.5+ may add bname."""

    bname: str | None = None


# --------------------------------------------------------------------------------------------------
# §4.8 Name server
# --------------------------------------------------------------------------------------------------
class GetRouteInfoRequestHeader(CommandHeader, kw_only=True):
    topic: str | None = None  # 4.9.8 looks up "null" and finds no route
    accept_standard_json_only: bool | None = None


class BrokerIdentityHeader(CommandHeader, kw_only=True):
    """UNREGISTER_BROKER (104) and QUERY_DATA_VERSION (322)."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


UnRegisterBrokerRequestHeader = QueryDataVersionRequestHeader = BrokerIdentityHeader


class RegisterBrokerRequestHeader(CommandHeader, kw_only=True):
    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str = ""
    broker_id: int
    compressed: bool = False
    body_crc32: int = 0


class RegisterBrokerResponseHeader(CommandHeader, kw_only=True):
    ha_server_addr: str | None = None
    master_addr: str | None = None


class QueryDataVersionResponseHeader(CommandHeader, kw_only=True):
    changed: bool


class KVConfigRequestHeader(CommandHeader, kw_only=True):
    """GET_KV_CONFIG (101), DELETE_KV_CONFIG (102)."""

    namespace: str
    key: str


GetKVConfigRequestHeader = DeleteKVConfigRequestHeader = KVConfigRequestHeader


class GetKVConfigResponseHeader(CommandHeader, kw_only=True):
    value: str | None = None


class PutKVConfigRequestHeader(CommandHeader, kw_only=True):
    namespace: str
    key: str
    value: str


class GetKVListByNamespaceRequestHeader(CommandHeader, kw_only=True):
    namespace: str


class DeleteTopicFromNamesrvRequestHeader(CommandHeader, kw_only=True):
    topic: str
    cluster_name: str | None = None


class GetTopicsByClusterRequestHeader(CommandHeader, kw_only=True):
    cluster: str


class BrokerNameRequestHeader(CommandHeader, kw_only=True):
    """WIPE_WRITE_PERM_OF_BROKER (205), ADD_WRITE_PERM_OF_BROKER (327)."""

    broker_name: str


class WipeWritePermOfBrokerResponseHeader(CommandHeader, kw_only=True):
    wipe_topic_count: int


class AddWritePermOfBrokerResponseHeader(CommandHeader, kw_only=True):
    add_topic_count: int


class GetBrokerConfigResponseHeader(CommandHeader, kw_only=True):
    """GET_BROKER_CONFIG (26): the configuration's data version (JSON); the body is a properties text."""

    version: str


class QueryConsumeQueueRequestHeader(CommandHeader, kw_only=True):
    """QUERY_CONSUME_QUEUE (321): `count` units of one consume queue from logical offset `index`."""

    topic: str
    queue_id: int
    index: int
    count: int
    consumer_group: str | None = None
