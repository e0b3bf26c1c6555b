"""How the 5.3.3 proxy shapes its answers: statuses named after their code, its fixed texts, the queues of a
route and their permissions (RouteActivity), the id it gives a batch, a delay message's recall handle."""

from __future__ import annotations

import itertools
import time
from typing import Any

from rocketmq_emulator.protocol import PermName
from rocketmq_emulator.protocol.grpc_v2 import v2

from . import converter as cv
from .validate import Failure

C = v2.Code
T = v2.MessageType

#: the route's acceptMessageTypes of a topic's message type (RouteActivity.parseTopicMessageType)
ACCEPTED_TYPES = {"NORMAL": (T.NORMAL,), "FIFO": (T.FIFO,), "DELAY": (T.DELAY,), "TRANSACTION": (T.TRANSACTION,),
                  "MIXED": (T.NORMAL, T.FIFO, T.DELAY, T.TRANSACTION)}
#: the proxy's grpcClientConsumerMin/MaxLongPollingTimeoutMillis: a receive waits at least 5 s, at most 20 s
MIN_LONG_POLLING_MS = 5_000
MAX_LONG_POLLING_MS = 20_000
#: a receive's long poll when the request has none, and the one the settings reply gives subscribers
DEFAULT_LONG_POLLING_MS = 20_000
FAQ = "\nFor more information, please visit the url, https://rocketmq.apache.org/docs/bestPractice/06FAQ"
#: what the proxy in local mode answers a receive of a topic the broker does not have (its NullPointerException)
NO_TOPIC_ON_RECEIVE = ('Cannot invoke "org.apache.rocketmq.common.TopicConfig.getPerm()" because "<parameter1>" is '
                       "null. NullPointerException. org.apache.rocketmq.proxy.service.route.LocalTopicRouteService."
                       "toTopicRouteData(LocalTopicRouteService.java:83)")
NO_TRANSACTION_DATA = "org.apache.rocketmq.proxy.common.ProxyException: cannot found transaction data"
#: what the proxy answers (FORBIDDEN) a send to a topic whose route has no writable queue (ProducerProcessor)
NO_WRITABLE_QUEUE = "org.apache.rocketmq.proxy.common.ProxyException: no writable queue"
CODE_NAMES = {number: name for name, number in vars(C).items()}


def named(code: int) -> Any:
    """A status whose message is its code's name, as the proxy answers OK and whole-request outcomes."""
    return cv.status(code, CODE_NAMES.get(code, str(code)))


def handle_parse_failure(text: str) -> Failure:
    """ReceiptHandle.decode's refusal of a handle of fewer than 8 fields, as the proxy answers it."""
    return Failure(C.INTERNAL_SERVER_ERROR, f"Parse failed, dataList size {len(text.split(' '))}. "
                   "IllegalArgumentException. org.apache.rocketmq.common.consumer.ReceiptHandle.decode("
                   "ReceiptHandle.java:56)")


def permission(perm: int) -> int:
    read, write = bool(perm & PermName.READ), bool(perm & PermName.WRITE)
    P = v2.Permission
    value: int = P.READ_WRITE if read and write else P.READ if read else P.WRITE if write else P.NONE
    return value


def route_queues(read: int, write: int, perm: int) -> list[int]:
    """The permission of each queue of a route (RouteActivity.genMessageQueueFromQueueData): read-only queues
    first, then write-only, then read-write; a topic neither readable nor writable has NONE queues."""
    r = w = rw = n = 0
    readable, writable = bool(perm & PermName.READ), bool(perm & PermName.WRITE)
    if readable and writable:
        rw = min(read, write)
        r, w = read - rw, write - rw
    elif writable:
        w = write
    elif readable:
        r = read
    else:
        n = max(1, read, write)
    P = v2.Permission
    return [P.READ] * r + [P.WRITE] * w + [P.READ_WRITE] * rw + [P.NONE] * n


def new_message_id() -> str:
    """An id of the 5.x MessageClientIDSetter's shape (the proxy gives a batch one of its own): the address (16
    bytes, as on an IPv6 host), the pid, a class loader hash, the ms since the month began and a counter, in hex."""
    import os
    import random
    now = time.time()
    day = time.gmtime(now)
    month_start = now - ((day.tm_mday - 1) * 86400 + day.tm_hour * 3600 + day.tm_min * 60 + day.tm_sec)
    return (f"00000000000000000000FFFF7F000001{os.getpid() & 0xFFFF:04X}{random.getrandbits(32):08X}"
            f"{int((now - month_start) * 1000) & 0xFFFFFFFF:08X}{next(_ids) & 0xFFFF:04X}")


_ids = itertools.count()


def recall_handle(topic: str, broker_name: str, deliver_ms: int, message_id: str) -> str:
    """RecallMessageHandle.HandleV1: base64 of "v1 topic brokerName deliverTime messageId"."""
    import base64
    return base64.b64encode(f"v1 {topic} {broker_name} {deliver_ms} {message_id}".encode()).decode()
