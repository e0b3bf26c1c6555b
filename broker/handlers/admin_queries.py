"""Admin queries mqadmin 4.9.8 sends that only read the broker's state (and one that does more): GET_ALL_DELAY_OFFSET
(45, the schedule's delayOffset.json), QUERY_CONSUME_TIME_SPAN (303, mqadmin consumerProgress -s),
QUERY_CORRECTION_OFFSET (308) and RESUME_CHECK_HALF_MESSAGE (323), answered as 4.9.8's AdminBrokerProcessor does.

QUERY_CORRECTION_OFFSET removes the offsets of every `filterGroups` group (all their topics) before it takes the
minimum over the other groups: 4.9.8 (and 5.x) remove them through the offset table's key set, so mqadmin's
filter groups lose their committed offsets. The emulator does the same.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import msgspec

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.message import decode_message_id
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection
from rocketmq_emulator.store.results import STORED

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext

LONG_MAX = 2 ** 63 - 1
RESUME_FAILED = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."


def format_time(ms: int) -> str:
    """UtilAll.formatDate(new Date(ms), "yyyy-MM-dd#HH:mm:ss:SSS") in the local time zone (negative times too)."""
    t = time.localtime(ms // 1000)
    return time.strftime("%Y-%m-%d#%H:%M:%S", t) + f":{ms % 1000:03d}"


class AdminQueryProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.GET_ALL_DELAY_OFFSET, self.get_all_delay_offset)
        table.register(RequestCode.QUERY_CONSUME_TIME_SPAN, self.query_consume_time_span)
        table.register(RequestCode.QUERY_CORRECTION_OFFSET, self.query_correction_offset)
        table.register(RequestCode.RESUME_CHECK_HALF_MESSAGE, self.resume_check_half_message)

    def resume_check_half_message(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        """mqadmin resumeCheckHalfMessage: the half message at the id's offset stored again with its check count
        at 0, so that the check-back asks its producer again."""
        b = self.broker
        msg = None
        try:
            _, _, offset = decode_message_id((req.ext_fields or {}).get("msgId", ""))
            msg = b.store.look_message_by_offset(offset)
        except ValueError:
            pass
        if msg is None:
            return RemotingCommand.response_to(req, ResponseCode.SYSTEM_ERROR, RESUME_FAILED)
        checker = b.transaction_check
        result = b.store.put_message(checker._inner(msg, msg.topic, {**msg.properties, "TRANSACTION_CHECK_TIMES": "0"}))
        if result.status not in STORED:
            return RemotingCommand.response_to(req, ResponseCode.SYSTEM_ERROR,
                                               "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
        return RemotingCommand.response_to(req)

    def get_all_delay_offset(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        return RemotingCommand.response_to(req, body=self.broker.schedule_service.encode())

    def query_consume_time_span(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        ext = req.ext_fields or {}
        topic, group = ext.get("topic", ""), ext.get("group", "")
        b = self.broker
        tc = b.topic_config_manager.get(topic)
        if tc is None:
            return RemotingCommand.response_to(req, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = b.store
        spans: list[dict[str, Any]] = []
        for q in range(tc.write_queue_nums):
            min_time = store.get_earliest_message_time(topic, q)
            max_offset = store.get_max_offset_in_queue(topic, q)
            max_time = store.get_message_store_timestamp(topic, q, max_offset - 1)
            consumer_offset = b.consumer_offset_manager.query_offset(group, topic, q)
            consume_time = (store.get_message_store_timestamp(topic, q, consumer_offset - 1) if consumer_offset > 0
                            else min_time)
            delay = 0
            if consumer_offset < max_offset:
                delay = int(time.time() * 1000) - store.get_message_store_timestamp(topic, q, consumer_offset)
            spans.append({
                "consumeTimeStamp": consume_time, "consumeTimeStampStr": format_time(consume_time),
                "delayTime": delay, "maxTimeStamp": max_time, "maxTimeStampStr": format_time(max_time),
                "messageQueue": {"brokerName": b.config.broker_name, "queueId": q, "topic": topic},
                "minTimeStamp": min_time, "minTimeStampStr": format_time(min_time)})
        return RemotingCommand.response_to(req, body=msgspec.json.encode({"consumeTimeSpanSet": spans}))

    def query_correction_offset(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        ext = req.ext_fields or {}
        topic, compare_group, filter_groups = ext.get("topic", ""), ext.get("compareGroup", ""), ext.get(
            "filterGroups", "")
        com = self.broker.consumer_offset_manager
        doomed = {g for g in filter_groups.split(",")} if filter_groups.strip() else set()
        if doomed:
            com._remove(lambda key: key.partition("@")[2] in doomed)
        store = self.broker.store
        minimum: dict[int, int] = {}
        for key, queues in list(com.offset_table.items()):
            if key.split("@")[0] != topic:
                continue
            for q, offset in queues.items():
                if offset >= store.get_min_offset_in_queue(topic, q):
                    minimum[q] = min(offset, minimum.get(q, LONG_MAX))
        for q, offset in com.query_offsets_of_group(compare_group, topic).items():
            if q not in minimum:  # 4.9.8 unboxes a missing entry here: a NullPointerException
                return RemotingCommand.response_to(req, ResponseCode.SYSTEM_ERROR, "java.lang.NullPointerException")
            minimum[q] = LONG_MAX if minimum[q] > offset else minimum[q]
        body = "{\"correctionOffsets\":{" + ",".join(f"{q}:{o}" for q, o in sorted(minimum.items())) + "}}"
        return RemotingCommand.response_to(req, body=body.encode())
