"""END_TRANSACTION (37): a producer's decision on a half message, after its local transaction or when the broker
checked back (reference: EndTransactionProcessor). The remoting front of broker/core/transaction.py; usually oneway
(the Java client sends it so), answered when it is not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.protocol.headers import EndTransactionRequestHeader
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

if TYPE_CHECKING:
    from ..core.broker_context import BrokerContext


class EndTransactionProcessor:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.END_TRANSACTION, self.end_transaction)

    def end_transaction(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand | None:
        h = EndTransactionRequestHeader.from_ext(req.ext_fields)
        outcome = self.broker.transactions.end_transaction(h, conn.peer)
        if outcome is None:
            return None
        code, remark = outcome
        return RemotingCommand.response_to(req, code, remark)
