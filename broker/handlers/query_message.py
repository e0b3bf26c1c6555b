"""VIEW_MESSAGE_BY_ID and QUERY_MESSAGE (reference §9.17)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.headers import (QueryMessageRequestHeader, QueryMessageResponseHeader,
                                                ViewMessageRequestHeader)
from rocketmq_emulator.protocol.java_texts import negative_limit
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext

DEFAULT_QUERY_MAX_NUM = 32


class QueryMessageProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.VIEW_MESSAGE_BY_ID, self.view_message_by_id)
        table.register(RequestCode.QUERY_MESSAGE, self.query_message)

    def view_message_by_id(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        offset = ViewMessageRequestHeader.from_ext(req.ext_fields).offset
        record = self.broker.store.select_one_message_by_offset(offset)
        if record is None:
            size = self.broker.store.size_field_at(offset)  # 4.9.8 limits a buffer to it: negative fails so
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}",
                              java=negative_limit(size) if size is not None and size < 0 else None)
        return RemotingCommand.response_to(req, body=bytes(record))

    def query_message(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = QueryMessageRequestHeader.from_ext(req.ext_fields)
        max_num = h.max_num
        if h.unique_key_query:
            max_num = DEFAULT_QUERY_MAX_NUM
        end = h.end_timestamp if h.end_timestamp > 0 else int(time.time() * 1000)
        result = self.broker.store.query_message(h.topic, h.key or "", max_num, h.begin_timestamp, end)
        if not result.messages:  # 4.9.8 answers with its header, both fields 0
            return RemotingCommand.response_to(
                req, ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct",
                QueryMessageResponseHeader(index_last_update_timestamp=0, index_last_update_phyoffset=0).to_ext())
        # the newest max_num, in the order they were stored (as 4.9.8 answers)
        body = b"".join(bytes(m) for _, m in sorted(zip(result.phy_offsets, result.messages), key=lambda p: p[0]))
        return RemotingCommand.response_to(req, ext_fields=QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phyoffset).to_ext(), body=body)
