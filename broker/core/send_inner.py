"""The MessageExtBrokerInner(s) a checked SendMessageRequest stores (reference §9.1), as RocketMQ's
SendMessageProcessor builds its msgInner: the properties the broker keeps (WAIT dropped, CLUSTER added), the
tags hash and keys to index, a retry topic resolved (handleRetryAndDLQ), a delay level parked, a batch split.

* `plain`: the common message, read in one pass over its properties as bytes; None when it is not one (a delay
  level, a transaction, CLUSTER already set, or a retry topic).
* `full`: any single message, its properties decoded: a half message of a transaction made (transaction.py), a
  retry topic resolved, a delay level parked in SCHEDULE_TOPIC_XXXX.
* `batch`: the messages of a batch request.

Every message passes the same size rules before it is built, refused with the same remarks
(`_properties_too_big`, `_body_too_big`): its final properties at most 32767 bytes, its body (a batch's bodies
together) at most maxMessageSize.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketmq_emulator.native import lane
from rocketmq_emulator.protocol import BrokerError, ProtocolError, ResponseCode
from rocketmq_emulator.protocol.codes import TRANSACTION_TYPE_MASK
from rocketmq_emulator.protocol.message import (PROPERTY_CLUSTER, PROPERTY_DELAY_TIME_LEVEL, PROPERTY_TAGS,
                                                PROPERTY_TIMER_DELIVER_MS,
                                                PROPERTY_TRANSACTION_PREPARED, PROPERTY_WAIT_STORE_MSG_OK,
                                                decode_properties, encode_properties, iter_batch, remove_property,
                                                tag_hash_code)
from rocketmq_emulator.protocol.topics import RETRY_GROUP_TOPIC_PREFIX, dlq_topic
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner, keys_of

if TYPE_CHECKING:
    from .broker_state import BrokerState
    from .send_request import SendMessageRequest

log = logging.getLogger("rocketmq_emulator.send")
MAX_PROPERTIES_SIZE = 32767  # the record's PROPERTIESLEN is a signed short


def _scan_properties(raw: bytes) -> tuple[list[str], int, bool, bool]:
    """One pass over a raw properties string: the keys to index (KEYS tokens, then UNIQ_KEY), the TAGS hash,
    whether WAIT is present and whether a property that needs the full path is (DELAY, TRAN_MSG, CLUSTER).
    Later duplicates win and empty values count as absent, as in `decode_properties`."""
    tags = keys = uniq = None
    wait = special = False
    if raw:
        for item in raw.split(b"\x02"):
            name, _, value = item.partition(b"\x01")
            if name == b"TAGS":
                tags = value
            elif name == b"UNIQ_KEY":
                uniq = value
            elif name == b"KEYS":
                keys = value
            elif name == b"WAIT":
                wait = True
            elif name == b"DELAY" or name == b"TRAN_MSG" or name == b"CLUSTER" or name == b"TIMER_DELIVER_MS":
                special = True
    index_keys = keys.decode().split() if keys else []
    if uniq:
        index_keys.append(uniq.decode())
    return index_keys, tag_hash_code(tags.decode()) if tags else 0, wait, special


def _plain_properties(raw: bytes, suffix: bytes) -> tuple[bytes, list[str], int] | None:
    """A common message's properties as stored (WAIT dropped, `suffix` = the CLUSTER pair appended), its index
    keys and tags code; None when a property needs the full path (`InnerMessageBuilder.full`)."""
    index_keys, tags_code, wait, special = scan_properties(raw)
    if special:
        return None
    if wait:
        raw = remove_property(raw, b"WAIT")
    return raw.rstrip(b"\x02") + suffix if raw else suffix[1:], index_keys, tags_code


#: the C twins when the native lane runs (rocketmq_emulator.native)
scan_properties = lane.scan_properties if lane is not None else _scan_properties
plain_properties = lane.plain_properties if lane is not None else _plain_properties
batch_messages = lane.batch_messages if lane is not None else None


def message_illegal_remark(limit: int) -> str:
    """4.9.8's one remark for a body over maxMessageSize and for properties over 32767 bytes."""
    return (f"the message is illegal, maybe msg body or properties length not matched. msg body length limit "
            f"{limit}B, msg properties length limit 32KB.")


def _properties_too_big(raw: bytes, limit: int) -> BrokerError:
    return BrokerError(ResponseCode.MESSAGE_ILLEGAL, message_illegal_remark(limit))


def _body_too_big(size: int, limit: int, what: str = "message") -> BrokerError:
    return BrokerError(ResponseCode.MESSAGE_ILLEGAL, message_illegal_remark(limit))


class InnerMessageBuilder:
    def __init__(self, broker: BrokerState) -> None:
        self.broker = broker
        self._cluster_suffix = f"\x02{PROPERTY_CLUSTER}\x01{broker.config.broker_cluster_name}"
        self.cluster_suffix = self._cluster_suffix.encode()

    def _check_sizes(self, raw: bytes, body: bytes) -> None:
        """The size rules every single message passes: its final properties, then its body."""
        limit = self.broker.config.store.max_message_size  # read per message: updateBrokerConfig changes it at run time
        if len(raw) > MAX_PROPERTIES_SIZE:
            raise _properties_too_big(raw, limit)
        if len(body) > limit:
            raise _body_too_big(len(body), limit)

    def message(self, request: SendMessageRequest) -> MessageExtBrokerInner:
        """The single message of a checked request."""
        msg = self.plain(request)
        return msg if msg is not None else self.full(request)

    def plain(self, request: SendMessageRequest, limit: int | None = None) -> MessageExtBrokerInner | None:
        """The common message, stored as sent (WAIT dropped, CLUSTER added), read in one pass over its
        properties as bytes: None when it is not one. `limit`: maxMessageSize when the caller has read it (once
        for the requests of a read, not once per message: the size rules are inlined here, the hot path)."""
        h = request.header
        if request.sys_flag & TRANSACTION_TYPE_MASK or h.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return None
        plain = plain_properties((h.properties or "").encode(), self.cluster_suffix)
        if plain is None:
            return None
        raw, index_keys, tags_code = plain
        body = request.body
        if len(raw) > MAX_PROPERTIES_SIZE:  # _check_sizes' rules, inlined
            raise _properties_too_big(raw, self.broker.config.store.max_message_size)
        if limit is None:
            limit = self.broker.config.store.max_message_size
        if len(body) > limit:
            raise _body_too_big(len(body), limit)
        return MessageExtBrokerInner(h.topic, request.queue_id, body, h.flag, raw, tags_code, request.sys_flag,
                                     h.born_timestamp, request.born_host, request.born_port, h.reconsume_times or 0,
                                     0, index_keys)

    def full(self, request: SendMessageRequest) -> MessageExtBrokerInner:
        """Any single message, its properties decoded: a half message made, a retry topic resolved (to the DLQ
        after the group's max reconsume times), a delay level parked, CLUSTER set."""
        h = request.header
        topic, queue_id, sys_flag = h.topic, request.queue_id, request.sys_flag
        text = h.properties or ""
        props = decode_properties(text) if text else {}
        reconsume_times = h.reconsume_times or 0
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            topic, queue_id = self.handle_retry_and_dlq(request, reconsume_times, props)
        tags_code = tag_hash_code(props.get(PROPERTY_TAGS))
        delay = props.get(PROPERTY_DELAY_TIME_LEVEL)
        level = int(delay) if delay is not None and delay.lstrip("-").isdigit() else 0
        # a half message (transaction.py), unless it is a consumer's retry of one (as upstream)
        half = (props.get(PROPERTY_TRANSACTION_PREPARED, "").lower() == "true"
                and not (reconsume_times > 0 and level > 0))
        if half:
            if self.broker.config.reject_transaction_message:
                raise BrokerError(ResponseCode.NO_PERMISSION, f"the broker[{self.broker.config.broker_ip1}] sending "
                                                              "transaction message is forbidden")
            if props.pop(PROPERTY_DELAY_TIME_LEVEL, None) is not None:  # as the Java producer drops it
                level = 0
        deliver = props.get(PROPERTY_TIMER_DELIVER_MS) if not half and level <= 0 else None
        deliver_ms = int(deliver) if deliver is not None and deliver.isdigit() else 0
        if level > 0 or PROPERTY_CLUSTER in props or half or deliver is not None:
            if level <= 0 and not half:  # 4.9.8 writes a delayed or half message's properties again, WAIT included
                props.pop(PROPERTY_WAIT_STORE_MSG_OK, None)
            props[PROPERTY_CLUSTER] = self.broker.config.broker_cluster_name
            if level > 0:
                topic, queue_id, tags_code = self.broker.schedule_service.park(topic, queue_id, props, level)
            elif deliver_ms > self.broker.clock.now_ms():  # a delivery time (5.x timer message) still ahead
                topic, queue_id, tags_code = self.broker.timer_service.park(topic, queue_id, props, deliver_ms)
            raw = encode_properties(props).encode()
        else:  # fast path: edit the client's string instead of re-encoding it (drop WAIT, add CLUSTER)
            text = text.rstrip("\x02")
            if PROPERTY_WAIT_STORE_MSG_OK in props:
                text = "\x02".join(p for p in text.split("\x02") if not p.startswith("WAIT\x01"))
            raw = (text + self._cluster_suffix if text else self._cluster_suffix[1:]).encode()
        msg = MessageExtBrokerInner(topic, queue_id, request.body, flag=h.flag, properties_raw=raw,
                                    tags_code=tags_code, sys_flag=sys_flag, born_timestamp=h.born_timestamp,
                                    born_host=request.born_host, born_port=request.born_port,
                                    reconsume_times=reconsume_times, keys=keys_of(props))
        if half:
            self.broker.transactions.half_message(msg, props)
        self._check_sizes(msg.properties_raw, request.body)
        return msg

    def batch(self, request: SendMessageRequest) -> list[MessageExtBrokerInner]:
        """The messages of a batch request: each item's properties with the request's and CLUSTER appended."""
        h = request.header
        topic, queue_id, sys_flag = h.topic, request.queue_id, request.sys_flag
        batch_props = h.properties or ""
        delay = decode_properties(batch_props).get(PROPERTY_DELAY_TIME_LEVEL, "0") if batch_props else "0"
        if sys_flag & TRANSACTION_TYPE_MASK or (delay.isdigit() and int(delay) > 0):
            # 4.9.8's store refuses a transactional or delayed batch (MESSAGE_ILLEGAL, the one remark); a batch to
            # a retry topic is stored as any other
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, message_illegal_remark(self.broker.config.store.max_message_size))
        suffix = (self._cluster_suffix if not batch_props else
                  "\x02" + batch_props.rstrip("\x02") + self._cluster_suffix).encode()
        born_ts, born, port = h.born_timestamp, request.born_host, request.born_port
        made = None if batch_messages is None else batch_messages(
            MessageExtBrokerInner, request.body, suffix, topic, queue_id, sys_flag, born_ts, born, port)
        inners: list[MessageExtBrokerInner]
        if made is not None:  # the native lane (None: a malformed or oversized item, decided below)
            inners, total = made
        else:
            inners, total = self._batch_items(request.body, suffix, topic, queue_id, sys_flag, born_ts, born, port)
        if total > self.broker.config.store.max_message_size:
            raise _body_too_big(total, self.broker.config.store.max_message_size, "batch")
        return inners

    def _batch_items(self, body: bytes, suffix: bytes, topic: str, queue_id: int, sys_flag: int, born_ts: int,
                     born: bytes, port: int) -> tuple[list[MessageExtBrokerInner], int]:
        """The messages of a batch body and their bodies' total size; the reference the native lane's
        `batch_messages` matches."""
        inners = []
        total = 0
        try:
            for flag, body, raw in iter_batch(body):
                raw = (raw.rstrip(b"\x02") + suffix) if raw else suffix[1:]
                if len(raw) > MAX_PROPERTIES_SIZE:
                    raise _properties_too_big(raw, self.broker.config.store.max_message_size)
                total += len(body)
                index_keys, tags_code, _, _ = scan_properties(raw)
                inners.append(MessageExtBrokerInner(topic, queue_id, body, flag, raw, tags_code, sys_flag, born_ts, born,
                                                    port, 0, 0, index_keys))
        except ProtocolError as exc:  # 4.9.8 fails with an exception: SYSTEM_ERROR, no MSG_REGION/TRACE_ON
            raise ProtocolError(f"malformed batch body: {exc}", java=exc.java) from None
        return inners, total

    def handle_retry_and_dlq(self, request: SendMessageRequest, reconsume_times: int,
                             props: dict[str, str]) -> tuple[str, int]:
        """A message sent to %RETRY%<group>: its topic and queue, or the group's DLQ (queue 0, answered with queue
        0, its delay level dropped) once it has been reconsumed the group's max times."""
        h = request.header
        topic = h.topic
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX):]
        cfg = self.broker.subscription_group_manager.find(group)
        if cfg is None:
            raise BrokerError(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}")
        max_times = cfg.retry_max_times
        if request.version >= 121 and h.max_reconsume_times is not None:
            max_times = h.max_reconsume_times
        if reconsume_times >= max_times:
            dlq = dlq_topic(group)
            self.broker.topic_config_manager.create_without_template(dlq, 1)
            props.pop(PROPERTY_DELAY_TIME_LEVEL, None)
            log.info("message to %s reached %d reconsume times: sent to %s", topic, reconsume_times, dlq)
            request.queue_id = 0
            return dlq, 0
        return topic, request.queue_id
