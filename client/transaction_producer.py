"""`TransactionProducer` (Java's TransactionMQProducer): transactional messages.

    async def execute(msg, arg):          # the local transaction, run once the half message is stored
        return LocalTransactionState.COMMIT_MESSAGE
    async def check(msg):                 # asked by the broker when it got no decision (a crash, UNKNOW)
        return LocalTransactionState.COMMIT_MESSAGE if order_exists(msg.keys) else LocalTransactionState.ROLLBACK_MESSAGE
    async with TransactionProducer("orders", namesrv=..., check_local_transaction=check) as p:
        result = await p.send_message_in_transaction(Message("Orders", b"..."), execute, arg=order)

`send_message_in_transaction` sends the message as a half message (TRAN_MSG=true, PGROUP=<group>, sys flag
prepared): the broker stores it where no consumer sees it. If that send succeeds it runs `execute(msg, arg)`
(plain or async; an exception or None counts as UNKNOW, as in Java) and tells the broker the outcome with
END_TRANSACTION, oneway: COMMIT_MESSAGE makes the message consumable (same msg_id), ROLLBACK_MESSAGE discards it,
UNKNOW leaves it to the broker's check-back: after `transactionTimeOut` the broker sends CHECK_TRANSACTION_STATE
to a producer of the group, whose `check_local_transaction(msg)` answers the same way. A send that fails is
rolled back without running the local transaction.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Union

from rocketmq_emulator.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.protocol.codes import MessageSysFlag
from rocketmq_emulator.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketmq_emulator.protocol.message import (PROPERTY_PRODUCER_GROUP, PROPERTY_TRANSACTION_PREPARED,
                                                PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, decode_message_id)
from rocketmq_emulator.protocol.topics import AUTO_CREATE_TOPIC_KEY
from rocketmq_emulator.protocol.transport import RemotingConnection

from .errors import ClientError, ClientStateError, InvalidArgumentError
from .message import Message, ReceivedMessage
from .producer import Producer, SendResult, SendStatus

log = logging.getLogger("rocketmq_emulator.client.transaction")


class LocalTransactionState(enum.Enum):
    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"  # RocketMQ's spelling


_STATE_FLAG = {LocalTransactionState.COMMIT_MESSAGE: int(MessageSysFlag.TRANSACTION_COMMIT_TYPE),
               LocalTransactionState.ROLLBACK_MESSAGE: int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE),
               LocalTransactionState.UNKNOW: 0}

StateResult = Union[LocalTransactionState, None, Awaitable[Union[LocalTransactionState, None]]]
ExecuteLocal = Callable[[Message, Any], StateResult]
CheckLocal = Callable[[ReceivedMessage], StateResult]


@dataclass
class TransactionSendResult:
    """The half message's send result and what the local transaction decided."""

    send_result: SendResult
    local_transaction_state: LocalTransactionState
    #: what `execute_local_transaction` raised (the state is then UNKNOW and the broker's check-back decides)
    local_transaction_error: Exception | None = None

    @property
    def msg_id(self) -> str:
        return self.send_result.msg_id

    @property
    def transaction_id(self) -> str:
        return self.send_result.msg_id


async def _state_of(outcome: StateResult, what: str) -> LocalTransactionState:
    if inspect.isawaitable(outcome):
        outcome = await outcome
    if outcome is None:
        return LocalTransactionState.UNKNOW
    if not isinstance(outcome, LocalTransactionState):
        log.warning("%s returned %r, not a LocalTransactionState: counted as UNKNOW", what, outcome)
        return LocalTransactionState.UNKNOW
    return outcome


def _logging_configured(logger: logging.Logger) -> bool:
    """Whether a record of `logger` reaches a handler that prints it (the client's NullHandler does not)."""
    current: logging.Logger | None = logger
    while current is not None:
        if any(not isinstance(h, logging.NullHandler) for h in current.handlers):
            return True
        if not current.propagate:
            return False
        current = current.parent
    return False


def _log_raised(message: str) -> None:
    """A user's callback raised: logged with its traceback, and on stderr when the application has set up no
    logging (the client's NullHandler would otherwise swallow it and the UNKNOW would pass unexplained)."""
    log.error(message, exc_info=True)
    if not _logging_configured(log):
        sys.stderr.write(f"rocketmq_emulator.client: {message}\n{traceback.format_exc()}")


class TransactionProducer(Producer):
    """A Producer that also sends transactional messages; `check_local_transaction(msg)` answers the broker's
    check-backs (without it, a check-back is answered UNKNOW and the broker asks again later)."""

    def __init__(self, group: str = "DEFAULT_PRODUCER", *, check_local_transaction: CheckLocal | None = None,
                 **kwargs: Any) -> None:
        super().__init__(group, **kwargs)
        self.check_local_transaction = check_local_transaction
        self._checks: set[asyncio.Task[None]] = set()

    async def start(self) -> TransactionProducer:
        """Start, and make the brokers know this producer at once (a heartbeat, as a Java producer sends within
        a second of its start), so that check-backs of its group's earlier transactions reach it."""
        await super().start()
        try:
            await self.instance.topic_route(AUTO_CREATE_TOPIC_KEY)  # the brokers of the cluster
        except ClientError as exc:  # no TBW102 (autoCreateTopicEnable off): the first send makes them known
            log.debug("%s: no route of %s at start: %s", self.group, AUTO_CREATE_TOPIC_KEY, exc)
        await self.instance.send_heartbeat_to_all_brokers()
        return self

    async def stop(self) -> None:
        for task in list(self._checks):
            task.cancel()
        await asyncio.gather(*self._checks, return_exceptions=True)
        await super().stop()

    async def send_message_in_transaction(self, msg: Message, execute_local_transaction: ExecuteLocal,
                                          arg: Any = None, *, timeout: float | None = None) -> TransactionSendResult:
        if "DELAY" in msg.properties:
            raise InvalidArgumentError("a transactional message cannot have a delay level")
        msg.properties[PROPERTY_TRANSACTION_PREPARED] = "true"
        msg.properties[PROPERTY_PRODUCER_GROUP] = self.group
        result = await self.send_message(msg, timeout=timeout)  # TRAN_MSG: sent with the prepared sys flag
        error: Exception | None = None
        if result.status is SendStatus.SEND_OK:
            try:
                state = await _state_of(execute_local_transaction(msg, arg), "execute_local_transaction")
            except Exception as exc:  # noqa: BLE001 - the local transaction's failure: UNKNOW, as in Java
                _log_raised(f"{self.group}: the local transaction of message {result.msg_id} raised {exc!r}: "
                            f"state UNKNOW, left to the broker's check-back")
                state, error = LocalTransactionState.UNKNOW, exc
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        await self._end_transaction(result, state)
        return TransactionSendResult(result, state, error)

    async def _end_transaction(self, result: SendResult, state: LocalTransactionState) -> None:
        """END_TRANSACTION, oneway, to the broker that stored the half message."""
        _, _, commit_log_offset = decode_message_id(result.offset_msg_id)
        header = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=result.queue_offset,
            commit_log_offset=commit_log_offset, commit_or_rollback=_STATE_FLAG[state], from_transaction_check=False,
            msg_id=result.msg_id, transaction_id=result.msg_id)
        addr = await self.instance.find_master(result.broker_name)
        await self.instance.api.oneway(addr, RequestCode.END_TRANSACTION, header.to_ext())

    def check_transaction_state(self, msg: ReceivedMessage, h: CheckTransactionStateRequestHeader,
                                conn: RemotingConnection) -> None:
        """The broker's check-back (client/remoting_processor.py): answered in the background on `conn`."""
        if self._instance is None:
            raise ClientStateError(f"transactional producer {self.group!r} is not started")
        task = asyncio.get_running_loop().create_task(self._check(msg, h, conn))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _check(self, msg: ReceivedMessage, h: CheckTransactionStateRequestHeader,
                     conn: RemotingConnection) -> None:
        state = LocalTransactionState.UNKNOW
        if self.check_local_transaction is None:
            log.warning("%s: the broker checks transaction %s, but this producer has no check_local_transaction: "
                        "answered UNKNOW", self.group, h.msg_id)
        else:
            try:
                state = await _state_of(self.check_local_transaction(msg), "check_local_transaction")
            except Exception as exc:  # noqa: BLE001 - answered UNKNOW: the broker asks again
                _log_raised(f"{self.group}: check_local_transaction of {h.msg_id} raised {exc!r}: answered UNKNOW")
        unique = msg.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or msg.offset_msg_id
        header = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=h.tran_state_table_offset,
            commit_log_offset=h.commit_log_offset, commit_or_rollback=_STATE_FLAG[state],
            from_transaction_check=True, msg_id=unique, transaction_id=h.transaction_id)
        if not conn.invoke_oneway(RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext())):
            log.info("%s: the broker's connection closed before transaction %s was answered", self.group, h.msg_id)
