"""An asyncio client for the RocketMQ 4.x remoting protocol: `Producer`, `PushConsumer`, `PullConsumer`,
`Admin`. It imports `protocol/` only, so it talks to the emulator and to real RocketMQ 4.x/5.x brokers alike.

    async with Producer("pg", namesrv="127.0.0.1:9876") as producer:
        result = await producer.send("TopicTest", b"hello", tags="TagA", keys="order-1")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocketmq_emulator.protocol.bodies import ConsumeFromWhere, MessageModel, MessageQueue

    from .admin import Admin
    from .allocate import AllocateMessageQueueAveragely, AllocateMessageQueueAveragelyByCircle
    from .config import ClientConfig, ConsumerSettings
    from .consume_service import ConsumeResult
    from .errors import (BrokerResponseError, BrokerUnreachableError, ClientError, ClientStateError,
                         ConsumerNotOnlineError, InvalidArgumentError, NoRouteError, RequestTimeoutError)
    from .message import Message, ReceivedMessage
    from .offset_store import LocalFileOffsetStore, OffsetStore, ReadOffsetType, RemoteBrokerOffsetStore
    from .producer import Producer, SendResult, SendStatus
    from .pull_api import PullResult, PullStatus
    from .pull_consumer import PullConsumer
    from .request_reply import ReplyTimeoutError, create_reply_message
    from .transaction_producer import LocalTransactionState, TransactionProducer, TransactionSendResult
    from .push_consumer import (BROADCASTING, CLUSTERING, FIRST_OFFSET, LAST_OFFSET, TIMESTAMP, PushConsumer,
                                RebalanceListener)

#: public name -> the module defining it, imported on first use (PEP 562), so that the command line (cli/)
#: loads only what its command uses
_HOMES = {
    **dict.fromkeys(("ConsumeFromWhere", "MessageModel", "MessageQueue"), "rocketmq_emulator.protocol.bodies"),
    "Admin": ".admin",
    **dict.fromkeys(("AllocateMessageQueueAveragely", "AllocateMessageQueueAveragelyByCircle"), ".allocate"),
    **dict.fromkeys(("ClientConfig", "ConsumerSettings"), ".config"),
    "ConsumeResult": ".consume_service",
    **dict.fromkeys(("BrokerResponseError", "BrokerUnreachableError", "ClientError", "ClientStateError",
                     "ConsumerNotOnlineError", "InvalidArgumentError", "NoRouteError", "RequestTimeoutError"),
                    ".errors"),
    **dict.fromkeys(("Message", "ReceivedMessage"), ".message"),
    **dict.fromkeys(("LocalFileOffsetStore", "OffsetStore", "ReadOffsetType", "RemoteBrokerOffsetStore"),
                    ".offset_store"),
    **dict.fromkeys(("Producer", "SendResult", "SendStatus"), ".producer"),
    **dict.fromkeys(("PullResult", "PullStatus"), ".pull_api"),
    "PullConsumer": ".pull_consumer",
    **dict.fromkeys(("ReplyTimeoutError", "create_reply_message"), ".request_reply"),
    **dict.fromkeys(("LocalTransactionState", "TransactionProducer", "TransactionSendResult"),
                    ".transaction_producer"),
    **dict.fromkeys(("BROADCASTING", "CLUSTERING", "FIRST_OFFSET", "LAST_OFFSET", "TIMESTAMP", "PushConsumer",
                     "RebalanceListener"), ".push_consumer"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


__all__ = [
    "Admin", "AllocateMessageQueueAveragely", "AllocateMessageQueueAveragelyByCircle", "BROADCASTING",
    "BrokerResponseError", "BrokerUnreachableError", "CLUSTERING", "ClientConfig", "ClientError", "ClientStateError",
    "ConsumeFromWhere", "ConsumeResult", "ConsumerNotOnlineError", "ConsumerSettings", "FIRST_OFFSET",
    "InvalidArgumentError", "LAST_OFFSET", "LocalFileOffsetStore", "LocalTransactionState", "Message", "MessageModel", "MessageQueue",
    "NoRouteError", "OffsetStore", "Producer", "PullConsumer", "PullResult", "PullStatus", "PushConsumer",
    "ReadOffsetType", "RebalanceListener", "ReceivedMessage", "RemoteBrokerOffsetStore", "ReplyTimeoutError",
    "RequestTimeoutError", "SendResult", "SendStatus", "TIMESTAMP", "TransactionProducer", "TransactionSendResult",
    "create_reply_message",
]
