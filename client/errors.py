"""The client's exceptions: each says what happened and what to do about it.

    RocketMQError (protocol.errors)
    └── ClientError
        ├── NoRouteError              the name server knows no route for the topic (or no writable queue)
        ├── BrokerUnreachableError    a TCP connection could not be made or was lost (also a ConnectionError)
        ├── RequestTimeoutError       no answer within the timeout (also a TimeoutError)
        ├── BrokerResponseError       an answer with a non-success ResponseCode (also a protocol BrokerError)
        │   └── ConsumerNotOnlineError    CONSUMER_NOT_ONLINE (206): the group has no online consumer
        ├── ClientStateError          the object is not started, already stopped, or used the wrong way
        └── InvalidArgumentError      a bad topic, group, body or setting (also a ValueError)
"""

from __future__ import annotations

from rocketmq_emulator.protocol.codes import ResponseCode
from rocketmq_emulator.protocol.errors import BrokerError, RocketMQError

__all__ = ["ClientError", "NoRouteError", "BrokerUnreachableError", "RequestTimeoutError", "BrokerResponseError",
           "ConsumerNotOnlineError", "ClientStateError", "InvalidArgumentError", "RETRIABLE_SEND_CODES"]

#: the address BrokerResponseError is given for an answer of the name server (the hints then name it, not "the broker")
NAMESRV = "name server"

#: response codes after which a synchronous send tries again on another queue/broker (Java's list, §5.1)
RETRIABLE_SEND_CODES = frozenset({ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE,
                                  ResponseCode.SYSTEM_ERROR, ResponseCode.NO_PERMISSION, ResponseCode.NO_BUYER_ID,
                                  ResponseCode.NOT_IN_CURRENT_UNIT})

_HINTS: dict[int, str] = {
    ResponseCode.SYSTEM_ERROR: "{server} refused the request",  # its remark, just before, says why
    ResponseCode.SYSTEM_BUSY: "{server} is overloaded; retry later or slow down",
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: "{server} (this version) does not implement the request",
    ResponseCode.MESSAGE_ILLEGAL: "the message is too large or its properties are invalid; shrink it",
    ResponseCode.SERVICE_NOT_AVAILABLE: "the broker cannot store messages now (stopping, slave, or disk full)",
    ResponseCode.NO_PERMISSION: "the topic's or broker's perm, or the broker's access control, forbids this",
    ResponseCode.TOPIC_NOT_EXIST: "create the topic first (rocketmq-emulator admin updateTopic -t TOPIC)",
    ResponseCode.TOPIC_EXIST_ALREADY: "the topic exists already",
    ResponseCode.QUERY_NOT_FOUND: "nothing matched the query",
    ResponseCode.SUBSCRIPTION_PARSE_FAILED: "fix the subscription expression",
    ResponseCode.SUBSCRIPTION_NOT_EXIST: "the broker has not seen this consumer's heartbeat yet; it retries",
    ResponseCode.SUBSCRIPTION_NOT_LATEST: "the broker has an older subscription; it retries after a heartbeat",
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: "create the consumer group or enable autoCreateSubscriptionGroup",
    ResponseCode.CONSUMER_NOT_ONLINE: "start a consumer of the group, or check the group name",
    ResponseCode.FLOW_CONTROL: "the broker applies flow control; retry later",
}


class ClientError(RocketMQError):
    """Root of the client's exceptions."""


class NoRouteError(ClientError):
    """No route for a topic: the name server does not know it, or it has no queue usable for the operation."""

    def __init__(self, topic: str, detail: str | None = None) -> None:
        self.topic = topic
        text = detail or f"no route info of topic {topic!r} at the name server"
        super().__init__(f"{text}; create the topic (rocketmq-emulator admin updateTopic -t {topic}) or enable "
                         f"autoCreateTopicEnable on the broker, and check the name server address")


class BrokerUnreachableError(ClientError, ConnectionError):
    """A connection to a broker or name server could not be made, or was lost while waiting for an answer."""

    def __init__(self, addr: str, detail: str) -> None:
        self.addr = addr
        self.detail = detail  #: what happened, without the address and the advice
        super().__init__(f"{addr}: {detail}; check that the server runs and that its advertised address is "
                         f"reachable from this host")


class RequestTimeoutError(ClientError, TimeoutError):
    """No answer within the timeout."""

    def __init__(self, addr: str, what: str, timeout: float) -> None:
        self.addr = addr
        self.timeout = timeout
        super().__init__(f"{what} to {addr} got no answer within {timeout:g} s; the server may be overloaded "
                         f"or hung: retry, or raise the timeout")


class BrokerResponseError(ClientError, BrokerError):
    """A non-success answer. `code` is the ResponseCode (an int if unknown), `remark` the server's text."""

    def __init__(self, code: int, remark: str | None = None, *, operation: str | None = None,
                 addr: str | None = None) -> None:
        BrokerError.__init__(self, code, remark)
        self.operation = operation
        self.addr = addr
        head = f"{operation} failed" if operation else "request failed"
        if addr:
            head += " at the name server" if addr == NAMESRV else f" at {addr}"
        name = getattr(self.code, "name", str(code))
        text = f"{head}: {name} ({int(code)})"
        if self.remark:
            text += f": {self.remark.strip()}"
        hint = _HINTS.get(int(code))
        if hint:
            text += f" ({hint.format(server='the name server' if addr == NAMESRV else 'the broker')})"
        self.args = (text,)

    def __str__(self) -> str:
        return str(self.args[0])


class ConsumerNotOnlineError(BrokerResponseError):
    """CONSUMER_NOT_ONLINE: the group has no online consumer (or no progress at all)."""


class ClientStateError(ClientError):
    """The object is not started, already stopped, or used in a way that is not allowed."""


class InvalidArgumentError(ClientError, ValueError):
    """A bad topic, group, expression, body or setting."""


def response_error(code: int, remark: str | None = None, *, operation: str | None = None,
                   addr: str | None = None) -> BrokerResponseError:
    cls = ConsumerNotOnlineError if code == ResponseCode.CONSUMER_NOT_ONLINE else BrokerResponseError
    return cls(code, remark, operation=operation, addr=addr)
