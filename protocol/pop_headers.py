"""Typed headers of POP consumption (5.x remoting: POP_MESSAGE 200050, ACK_MESSAGE 200051,
CHANGE_MESSAGE_INVISIBLETIME 200053) and BATCH_ACK_MESSAGE's body. The consumer names its group, topic and
queue (-1: any queue of the topic) and how long popped messages stay invisible; every popped message carries its
receipt handle in the POP_CK property ("extraInfo"), which ACK and CHANGE_MESSAGE_INVISIBLETIME send back."""

from __future__ import annotations

from .bodies import Body
from .headers import CommandHeader

#: the property of a popped message that holds its receipt handle
PROPERTY_POP_CK = "POP_CK"
#: initMode of POP_MESSAGE: where a group with no offset starts (ConsumeInitMode)
INIT_MODE_MIN = 0
INIT_MODE_MAX = 1


class PopMessageRequestHeader(CommandHeader, kw_only=True):
    consumer_group: str
    topic: str
    queue_id: int = -1
    max_msg_nums: int = 32
    invisible_time: int
    poll_time: int = 0
    born_time: int = 0
    init_mode: int = INIT_MODE_MAX
    exp_type: str | None = None
    exp: str | None = None
    order: bool = False
    attempt_id: str | None = None


class PopMessageResponseHeader(CommandHeader, kw_only=True):
    pop_time: int
    invisible_time: int
    revive_qid: int = 0
    rest_num: int = 0
    start_offset_info: str | None = None
    msg_offset_info: str | None = None
    order_count_info: str | None = None


class AckMessageRequestHeader(CommandHeader, kw_only=True):
    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: int


class ChangeInvisibleTimeRequestHeader(CommandHeader, kw_only=True):
    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: int
    invisible_time: int


class ChangeInvisibleTimeResponseHeader(CommandHeader, kw_only=True):
    pop_time: int
    invisible_time: int
    revive_qid: int = 0


class BatchAck(Body):
    """One entry of BATCH_ACK_MESSAGE's body. `bit_set`: the acked offsets' positions after `start_offset` (the
    emulator takes the list of positions that Java serializes a BitSet to); `retry`: "1" for the pop retry topic."""

    consumer_group: str
    topic: str
    retry: str = "0"
    start_offset: int = 0
    bit_set: list[int] = []
    pop_time: int = 0
    invisible_time: int = 0
    revive_queue_id: int = 0
    queue_id: int = 0


class BatchAckMessageRequestBody(Body):
    broker_name: str = ""
    acks: list[BatchAck] = []
