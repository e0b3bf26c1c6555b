"""SEND_MESSAGE (10, long names), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320), reference §9.1.

Batch or not is decided by the header's `batch` flag (C++ sends batches as 310 with `m=true`).
Transactional (half) messages are refused with NO_PERMISSION: this emulator does not implement transactions.
"""

from __future__ import annotations

import logging
import random
import time
from time import perf_counter_ns
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, PermName, ProtocolError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.codes import TRANSACTION_TYPE_MASK, MessageSysFlag, SerializeType
from rocketmq_emulator.protocol.headers import SendMessageRequestHeader, SendMessageResponseHeader, decode_send_header
from rocketmq_emulator.protocol.message import (PROPERTY_CLUSTER, PROPERTY_DELAY_TIME_LEVEL, PROPERTY_TAGS,
                                                PROPERTY_TRANSACTION_PREPARED, PROPERTY_WAIT_STORE_MSG_OK,
                                                decode_properties, encode_properties, iter_batch,
                                                pack_host, record_size, remove_property, tag_hash_code)
from rocketmq_emulator.protocol.topics import (NOT_ALLOWED_SEND_TOPICS, RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC,
                                               dlq_topic)
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner, keys_of
from rocketmq_emulator.store.results import PutMessageResult, PutMessageStatus

from ..topic_config import validate_topic

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.admin_bodies import TopicConfig

    from ..controller import BrokerController

log = logging.getLogger("rocketmq_emulator.send")
_PERM_WRITE = int(PermName.WRITE)  # a plain int: `int & IntFlag` runs IntFlag's Python-level __rand__ per send

_STATUS_CODES = {
    PutMessageStatus.PUT_OK: (ResponseCode.SUCCESS, None),
    PutMessageStatus.FLUSH_DISK_TIMEOUT: (ResponseCode.FLUSH_DISK_TIMEOUT, None),
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
    PutMessageStatus.SLAVE_NOT_AVAILABLE: (ResponseCode.SLAVE_NOT_AVAILABLE, None),
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: (ResponseCode.SYSTEM_ERROR,
                                               "create mapped file failed, server is busy or broken."),
    PutMessageStatus.MESSAGE_ILLEGAL: (ResponseCode.MESSAGE_ILLEGAL,
                                       "the message is illegal, maybe msg body or properties length not matched."),
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: (ResponseCode.MESSAGE_ILLEGAL,
                                                "the message is illegal, maybe msg properties length limit 32k."),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (ResponseCode.SERVICE_NOT_AVAILABLE,
                                             "service not available now. It may be caused by the store being "
                                             "shut down or the disk being full."),
    PutMessageStatus.OS_PAGECACHE_BUSY: (ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow "
                                                                     "control for a while"),
    PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}


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
            elif name == b"DELAY" or name == b"TRAN_MSG" or name == b"CLUSTER":
                special = True
    index_keys = keys.decode().split() if keys else []
    if uniq:
        index_keys.append(uniq.decode())
    return index_keys, tag_hash_code(tags.decode()) if tags else 0, wait, special


class SendMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self._cluster_suffix = f"\x02{PROPERTY_CLUSTER}\x01{broker.config.cluster_name}"
        self._valid_topics: set[str] = set()  # topics that passed validation and exist
        self._trace_on = "true" if broker.config.trace_on else "false"
        self._cluster_suffix_bytes = self._cluster_suffix.encode()
        self._max_message_size = broker.config.max_message_size
        self._failures: dict[PutMessageStatus, tuple[float, int]] = {}
        self._response_extra = {"MSG_REGION": broker.config.region_id, "TRACE_ON": self._trace_on}
        self._success_frame = SendMessageResponseHeader.success_frame_encoder(self._response_extra)
        self._stats = broker.stats

    def register(self, table: DispatchTable) -> None:
        codes = [RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE]
        table.register(codes, self.send_message)
        table.register_run(codes, self.send_messages)

    # -- a run of sends read together ---------------------------------------------------------------
    def send_messages(self, reqs: list[RemotingCommand], conn: RemotingConnection
                      ) -> list[RemotingCommand | BaseException | bytes | None]:
        """Consecutive sends of one read. Plain single messages (see `_plain_message`) with JSON headers are stored
        together with one `put_message_run` and answered from a pre-encoded frame; any other request is handled
        alone, in order (the run so far is stored first), exactly as `send_message` does."""
        answers: list[RemotingCommand | BaseException | bytes | None] = [None] * len(reqs)
        run_at: list[int] = []
        run: list[MessageExtBrokerInner] = []
        for i, req in enumerate(reqs):
            try:
                h, topic, queue_id, sys_flag, born = self._route(req, conn)
                msg = None if h.batch else \
                    self._plain_message(req, h, topic, queue_id, sys_flag, born, conn, (h.properties or "").encode())
                if msg is not None and req.serialize_type == SerializeType.JSON:
                    run.append(msg)
                    run_at.append(i)
                    continue
                if run:
                    self._store_run(reqs, run_at, run, answers)
                    run_at, run = [], []
                if h.batch:
                    answers[i] = self._send_batch(req, h, topic, queue_id, sys_flag, born, conn)
                elif msg is not None:  # a plain message with a binary header: answered in its own serialization
                    answers[i] = self._stored(req, msg, perf_counter_ns(), self.broker.store.put_message(msg))
                else:
                    answers[i] = self._send_full(req, h, topic, queue_id, sys_flag, born, conn)
            except Exception as exc:  # noqa: BLE001 - answered as the single handler's failure would be
                answers[i] = exc
        if run:
            self._store_run(reqs, run_at, run, answers)
        return answers

    def _store_run(self, reqs: list[RemotingCommand], run_at: list[int], run: list[MessageExtBrokerInner],
                   answers: list[RemotingCommand | BaseException | bytes | None]) -> None:
        store = self.broker.store
        arrived = self.broker.message_arrived
        began, wrote_before = perf_counter_ns(), store.put_bytes
        result = store.put_message_run(run) if len(run) > 1 else None
        if result is None or result.phy_offsets is None:  # nothing written: one by one, each its own status
            for i, msg in zip(run_at, run):
                answers[i] = self._stored(reqs[i], msg, perf_counter_ns(), store.put_message(msg))
            return
        self._count_run(run, store.put_bytes - wrote_before, began)
        if result.status is PutMessageStatus.PUT_OK:
            encode = self._success_frame
            for k, (i, msg) in enumerate(zip(run_at, run)):
                qo = result.queue_offsets[k]  # type: ignore[index]
                answers[i] = encode(result.msg_id(k), msg.queue_id, qo, reqs[i].opaque)
                arrived(msg.topic, msg.queue_id, qo + 1, msg.tags_code)
            return
        code, remark = _STATUS_CODES[result.status]  # FLUSH_DISK_TIMEOUT: stored, not yet on disk
        for k, (i, msg) in enumerate(zip(run_at, run)):
            qo = result.queue_offsets[k]  # type: ignore[index]
            ext = SendMessageResponseHeader.fast_ext(result.msg_id(k), msg.queue_id, qo)
            answers[i] = self._answer(reqs[i], code, remark, ext)
            arrived(msg.topic, msg.queue_id, qo + 1, msg.tags_code)

    def _count_run(self, run: list[MessageExtBrokerInner], wrote: int, began: int) -> None:
        """The broker statistics of a stored run: one `put` per topic (nearly always one for the whole run)."""
        topic = run[0].topic
        for m in run:
            if m.topic != topic:
                break
        else:
            self._stats.put(topic, len(run), wrote, len(run), began)
            return
        sizes = [record_size(len(m.body), len(m.topic.encode()), len(m.properties_raw), m.sys_flag) for m in run]
        extra = (wrote - sum(sizes)) // len(run)  # what the estimate leaves out is the same for every record
        for m, size in zip(run, sizes):
            self._stats.put(m.topic, 1, size + extra, 1, began)

    # -- one request --------------------------------------------------------------------------------
    def send_message(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h, topic, queue_id, sys_flag, born = self._route(req, conn)
        if h.batch:
            return self._send_batch(req, h, topic, queue_id, sys_flag, born, conn)
        msg = self._plain_message(req, h, topic, queue_id, sys_flag, born, conn, (h.properties or "").encode())
        if msg is not None:
            return self._stored(req, msg, perf_counter_ns(), self.broker.store.put_message(msg))
        return self._send_full(req, h, topic, queue_id, sys_flag, born, conn)

    def _route(self, req: RemotingCommand, conn: RemotingConnection
               ) -> tuple[SendMessageRequestHeader, str, int, int, bytes]:
        """The checks every send passes first (topic, queue, permission): header, topic, queue id, sys flag and
        the producer's packed address."""
        h = decode_send_header(req.code, req.ext_fields)
        topic = h.topic
        tc = self.broker.topic_config_manager.table.get(topic)
        if tc is None or topic not in self._valid_topics:
            validate_topic(topic)
            if topic in NOT_ALLOWED_SEND_TOPICS:
                raise BrokerError(ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
            tc = self._topic_config(h)
            self._valid_topics.add(topic)
        queue_id = h.queue_id
        if queue_id >= max(tc.write_queue_nums, tc.read_queue_nums):
            raise BrokerError(ResponseCode.SYSTEM_ERROR,
                              f"request queueId[{queue_id}] is illegal, {tc.topic_name} Producer: {conn.peer}")
        if queue_id < 0:
            queue_id = random.randrange(max(1, tc.write_queue_nums))
        if not tc.perm & _PERM_WRITE:
            raise BrokerError(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        born = conn.attributes.get("born_host")
        if born is None:
            born = conn.attributes["born_host"] = pack_host(conn.remote_ip or "127.0.0.1")
        sys_flag = h.sys_flag
        if tc.topic_filter_type == 1:
            sys_flag |= MessageSysFlag.MULTI_TAGS
        return h, topic, queue_id, sys_flag, born

    def _send_full(self, req: RemotingCommand, h: SendMessageRequestHeader, topic: str, queue_id: int,
                   sys_flag: int, born: bytes, conn: RemotingConnection) -> RemotingCommand:
        """A message that is not plain (`_plain_message` said None): properties decoded, then a transaction is
        refused, a retry topic resolved, a delay level parked, CLUSTER set."""
        body = req.body
        text = h.properties or ""
        props = decode_properties(text) if text else {}
        if props.get(PROPERTY_TRANSACTION_PREPARED) == "true" or sys_flag & TRANSACTION_TYPE_MASK:
            raise BrokerError(ResponseCode.NO_PERMISSION,
                              "transactional messages are not supported by rocketmq-emulator")
        reconsume_times = h.reconsume_times or 0
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            topic, queue_id = self._retry_or_dlq(h, topic, queue_id, reconsume_times, props, req.version)
        tags_code = tag_hash_code(props.get(PROPERTY_TAGS))
        real_queue_id = queue_id
        delay = props.get(PROPERTY_DELAY_TIME_LEVEL)
        if delay is not None and delay.lstrip("-").isdigit() and int(delay) > 0 or PROPERTY_CLUSTER in props:
            props.pop(PROPERTY_WAIT_STORE_MSG_OK, None)
            props[PROPERTY_CLUSTER] = self.broker.config.cluster_name
            if delay is not None and delay.lstrip("-").isdigit() and int(delay) > 0:
                topic, queue_id, tags_code = self.broker.schedule_service.park(topic, queue_id, props, int(delay))
            raw = encode_properties(props).encode()
        else:  # fast path: edit the client's string instead of re-encoding it (drop WAIT, add CLUSTER)
            text = (h.properties or "").rstrip("\x02")
            if PROPERTY_WAIT_STORE_MSG_OK in props:
                text = "\x02".join(p for p in text.split("\x02") if not p.startswith("WAIT\x01"))
            raw = (text + self._cluster_suffix if text else self._cluster_suffix[1:]).encode()
        if len(raw) > 32767:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, f"the message properties size {len(raw)} exceeds 32767")
        if len(body) > self.broker.config.max_message_size:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL,
                              f"the message body size {len(body)} exceeds maxMessageSize "
                              f"{self.broker.config.max_message_size}")
        inner = MessageExtBrokerInner(topic, queue_id, body, flag=h.flag, properties_raw=raw, tags_code=tags_code,
                                      sys_flag=sys_flag, born_timestamp=h.born_timestamp, born_host=born,
                                      born_port=conn.remote_port, reconsume_times=reconsume_times,
                                      keys=keys_of(props))
        began = perf_counter_ns()
        result = self.broker.store.put_message(inner)
        response = self._response(req, result, real_queue_id)
        if result.status is PutMessageStatus.PUT_OK or result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT:
            self._stats.put(topic, 1, result.wrote_bytes, 1, began)
            if topic == SCHEDULE_TOPIC:  # 4.9.8 keeps queue statistics for the delay levels
                self._stats.queue_put(topic, queue_id, result.wrote_bytes)
            self.broker.message_arrived(topic, queue_id, result.logics_offset + 1, tags_code)
        return response

    def _plain_message(self, req: RemotingCommand, h: SendMessageRequestHeader, topic: str, queue_id: int,
                       sys_flag: int, born: bytes, conn: RemotingConnection, raw: bytes) -> MessageExtBrokerInner | None:
        """The common message, stored as sent, read in one pass over its properties as bytes: None when it is
        not one (a delay level, a transaction, a CLUSTER property already set, or a retry topic)."""
        if sys_flag & TRANSACTION_TYPE_MASK or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return None
        index_keys, tags_code, wait, special = _scan_properties(raw)
        if special:
            return None
        body = req.body
        if len(body) > self._max_message_size:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, f"the message body size {len(body)} exceeds "
                                                            f"maxMessageSize {self._max_message_size}")
        if wait:
            raw = remove_property(raw, b"WAIT")
        raw = raw.rstrip(b"\x02") + self._cluster_suffix_bytes if raw else self._cluster_suffix_bytes[1:]
        if len(raw) > 32767:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, f"the message properties size {len(raw)} exceeds 32767")
        return MessageExtBrokerInner(topic, queue_id, body, h.flag, raw, tags_code, sys_flag, h.born_timestamp, born,
                                     conn.remote_port, h.reconsume_times or 0, 0, index_keys)

    def _stored(self, req: RemotingCommand, msg: MessageExtBrokerInner, began: int,
                result: PutMessageResult) -> RemotingCommand:
        """Answer a put of one message that began at perf_counter_ns `began`."""
        response = self._response(req, result, msg.queue_id)
        if result.status is PutMessageStatus.PUT_OK or result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT:
            self._stats.put(msg.topic, 1, result.wrote_bytes, 1, began)
            self.broker.message_arrived(msg.topic, msg.queue_id, result.logics_offset + 1, msg.tags_code)
        return response

    def _send_batch(self, req: RemotingCommand, h: SendMessageRequestHeader, topic: str, queue_id: int,
                    sys_flag: int, born: bytes, conn: RemotingConnection) -> RemotingCommand:
        if sys_flag & TRANSACTION_TYPE_MASK:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, "batch request does not support transaction message")
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, "batch request does not support retry group " + topic)
        batch_props = h.properties or ""
        suffix = (self._cluster_suffix if not batch_props else
                  "\x02" + batch_props.rstrip("\x02") + self._cluster_suffix).encode()
        inners = []
        total = 0
        born_ts, port = h.born_timestamp, conn.remote_port
        try:
            for flag, body, raw in iter_batch(req.body):
                raw = (raw.rstrip(b"\x02") + suffix) if raw else suffix[1:]
                if len(raw) > 32767:
                    raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, "the message properties size exceeds 32767")
                total += len(body)
                index_keys, tags_code, _, _ = _scan_properties(raw)
                inners.append(MessageExtBrokerInner(topic, queue_id, body, flag, raw, tags_code, sys_flag, born_ts, born,
                                                    port, 0, 0, index_keys))
        except ProtocolError as exc:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, f"malformed batch body: {exc}") from None
        if total > self.broker.config.max_message_size:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL,
                              f"the batch body size {total} exceeds maxMessageSize {self.broker.config.max_message_size}")
        began = perf_counter_ns()
        result = self.broker.store.put_messages(inners)
        response = self._response(req, result, queue_id)
        if result.status is PutMessageStatus.PUT_OK or result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT:
            self._stats.put(topic, result.msg_num, result.wrote_bytes, 1, began)
            self.broker.message_arrived(topic, queue_id, result.logics_offset + result.msg_num, None)
        return response

    def _response(self, req: RemotingCommand, result: PutMessageResult, queue_id: int) -> RemotingCommand:
        code, remark = _STATUS_CODES[result.status]
        if code in (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.FLUSH_SLAVE_TIMEOUT,
                    ResponseCode.SLAVE_NOT_AVAILABLE):
            ext = SendMessageResponseHeader.fast_ext(result.msg_id, queue_id, result.logics_offset)
        else:
            ext = {}
            self._stats.put_failed()
            self._warn_failed(result.status)
        return self._answer(req, code, remark, ext)

    def _answer(self, req: RemotingCommand, code: int, remark: str | None, ext: dict[str, str]) -> RemotingCommand:
        ext.update(self._response_extra)  # extFields beside the header, as the Java broker adds
        return RemotingCommand.response_to(req, code, remark, ext)

    def _warn_failed(self, status: PutMessageStatus) -> None:
        """One line per failure kind every 10 s (a full disk fails every send: the log must stay readable)."""
        now = time.monotonic()
        last, suppressed = self._failures.get(status, (0.0, 0))
        if now - last >= 10.0:
            more = f" ({suppressed} more since the last report)" if suppressed else ""
            log.warning("sends are failing: %s%s", status.name, more)
            self._failures[status] = (now, 0)
        else:
            self._failures[status] = (last, suppressed + 1)

    def _topic_config(self, h: SendMessageRequestHeader) -> TopicConfig:
        tcm = self.broker.topic_config_manager
        tc = tcm.get(h.topic)
        if tc is None:
            tc = tcm.create_in_send(h.topic, h.default_topic or "", h.default_topic_queue_nums,
                                    1 if h.unit_mode else 0)
            if tc is None and h.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                tc = tcm.create_without_template(h.topic, 1)
            if tc is None:
                raise BrokerError(ResponseCode.TOPIC_NOT_EXIST,
                                  f"topic[{h.topic}] not exist, apply first please!"
                                  "\nSee http://rocketmq.apache.org/docs/faq/ for further details.")
        return tc

    def _retry_or_dlq(self, h: SendMessageRequestHeader, topic: str, queue_id: int, reconsume_times: int,
                      props: dict[str, str], version: int) -> tuple[str, int]:
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX):]
        cfg = self.broker.subscription_group_manager.find(group)
        if cfg is None:
            raise BrokerError(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                              f"subscription group not exist, {group}")
        max_times = cfg.retry_max_times
        if version >= 121 and h.max_reconsume_times is not None:
            max_times = h.max_reconsume_times
        if reconsume_times >= max_times:
            dlq = dlq_topic(group)
            self.broker.topic_config_manager.create_without_template(dlq, 1)
            props.pop(PROPERTY_DELAY_TIME_LEVEL, None)
            log.info("message to %s reached %d reconsume times: sent to %s", topic, reconsume_times, dlq)
            return dlq, 0
        return topic, queue_id

