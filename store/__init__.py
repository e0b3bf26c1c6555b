"""The broker's message store: memory-mapped commitlog and consume queues laid out as RocketMQ lays them out.

Standard library and `protocol` only; no asyncio, no network. Entry point: `MessageStore`.
"""

from .config import FlushDiskType, MessageStoreConfig
from .mapped_file import StoreLoadError
from .message_ext_broker_inner import MessageExtBrokerInner
from .message_store import MessageStore
from .results import GetMessageResult, GetMessageStatus, PutMessageResult, PutMessageStatus, QueryMessageResult

__all__ = ["FlushDiskType", "GetMessageResult", "GetMessageStatus", "MessageExtBrokerInner", "MessageStore",
           "MessageStoreConfig", "PutMessageResult", "PutMessageStatus", "QueryMessageResult",
           "StoreLoadError"]
