"""An asyncio client for the RocketMQ 4.x remoting protocol: `Producer`, `PushConsumer`, `PullConsumer`,
`Admin`. It imports `protocol/` only, so it talks to the emulator and to real RocketMQ 4.x/5.x brokers alike.

    async with Producer("pg", namesrv="127.0.0.1:9876") as producer:
        result = await producer.send("TopicTest", b"hello", tags="TagA", keys="order-1")
"""

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
from .push_consumer import (BROADCASTING, CLUSTERING, FIRST_OFFSET, LAST_OFFSET, TIMESTAMP, PushConsumer,
                            RebalanceListener)

__all__ = [
    "Admin", "AllocateMessageQueueAveragely", "AllocateMessageQueueAveragelyByCircle", "BROADCASTING",
    "BrokerResponseError", "BrokerUnreachableError", "CLUSTERING", "ClientConfig", "ClientError", "ClientStateError",
    "ConsumeFromWhere", "ConsumeResult", "ConsumerNotOnlineError", "ConsumerSettings", "FIRST_OFFSET",
    "InvalidArgumentError", "LAST_OFFSET", "LocalFileOffsetStore", "Message", "MessageModel", "MessageQueue",
    "NoRouteError", "OffsetStore", "Producer", "PullConsumer", "PullResult", "PullStatus", "PushConsumer",
    "ReadOffsetType", "RebalanceListener", "ReceivedMessage", "RemoteBrokerOffsetStore", "RequestTimeoutError",
    "SendResult", "SendStatus", "TIMESTAMP",
]
