"""`Broker2Client`: resets and status requests a broker makes of a group's clients (INVOKE_BROKER_TO_RESET_OFFSET
→ RESET_CONSUMER_CLIENT_OFFSET, INVOKE_BROKER_TO_GET_CONSUMER_STATUS → GET_CONSUMER_STATUS_FROM_CLIENT).

How a reset is computed, per queue of the topic (all of them, or one), as 4.9.x does with the fixes the
README's "Consumer offsets" section describes:

* a group the broker does not know at all (`knows_group`: no subscription group config, no stored offset, no
  consumer online) is refused before anything is computed, in both modes, with 4.9.8's answer for such a group
  (SYSTEM_ERROR "THe consumer group <G> not exist"; 5.x refuses a group with no config likewise): a typo'd name
  must not create offsets. With autoCreateSubscriptionGroup on, a group's first heartbeat or pull creates its
  config, so any group that ever ran on this broker is known;
* the target is the explicit offset when given, else the queue's max offset for timestamp -1, else the first
  offset stored at or after the timestamp;
* clustering: without force an offset only moves back (`target` if it is below the committed offset, else the
  committed one). A group with no committed offset for a queue is "not exist" in 4.9.x (SYSTEM_ERROR); with
  server-side reset on it simply takes the target, as 5.x does;
* broadcasting: every queue takes the target (the broker holds no committed offset to compare with).

Then the reset goes to every online client in the body form it reads (C++: the list form; everyone else: the
Java object-key form). With server-side reset on (5.x), the broker also records the offsets and applies them
at each queue's next pull that does not already come from the reset offset, which reaches clients that ignore
RESET_CONSUMER_CLIENT_OFFSET, were offline, or had a pull held or in flight; held pulls are woken and answered
"nothing new", so the client pulls again at once. With it off (4.9.x), no client online is CONSUMER_NOT_ONLINE.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import GetConsumerStatusBody, ResetOffsetBody
from rocketmq_emulator.protocol.bodies import MessageModel, MessageQueue
from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.headers import GetConsumerStatusRequestHeader, ResetOffsetRequestHeader

from ..config import Compat

if TYPE_CHECKING:
    from ..state.client_manager import ClientChannelInfo, ConsumerGroupInfo
    from .broker_state import BrokerState

log = logging.getLogger("rocketmq_emulator.reset")

#: clients older than this (3.0.7) cannot apply a reset (upstream's rule)
MIN_RESET_CLIENT_VERSION = 28
#: how long the broker remembers that it told a client of a reset (RESET_CONSUMER_CLIENT_OFFSET). Clients that apply
#: a reset themselves (Java 4.9.x, Go 2.x) pause the queues and send no pull of them for 10 s, then pull from the
#: reset offset; clients that ignore it (ali-ons 3.x, which reports JAVA) keep pulling from their old offset. The
#: broker decides from what the client does, not from the language it claims: a told client's first pull of a queue
#: from its old offset (one the reset woke, or one in flight) is answered "nothing new", and so is any other within
#: RESET_SETTLE_S of the telling (held until then when it may be suspended); one after that proves the client is not
#: applying the reset, and is moved to the reset offset (PULL_OFFSET_MOVED). A client applying the reset must never
#: be moved: its offset-moved path applies the reset a second time 10 s later and removes the queue the reset had
#: just rebuilt (Java: what was consumed in between is delivered again; Go 2.1.2: the queue is no longer committed,
#: its offset stays at the reset offset). Moving the first pull did that to Java clients; moving the second did it
#: to Go clients, whose pull loop answers "nothing new" with a new pull from the old offset before the goroutine
#: handling RESET_CONSUMER_CLIENT_OFFSET has paused the queues (a race of a few ms, lost in about 1 run in 4).
RESET_TOLD_S = 30.0
#: how long after telling a client of a reset its pulls from the old offset are answered "nothing new" (see above):
#: far above the few ms a client applying the reset takes to pause its queues, far below the 10 s before it applies it
RESET_SETTLE_S = 2.0
STATUS_TIMEOUT_S = 5.0
#: MQVersion.Version's first names (ordinals 0-27, the versions before 3.0.7 that the broker refuses by name)
_OLD_VERSIONS = ("V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", *(f"V3_0_0_BETA{i}" for i in range(1, 6)),
                 *(f"V3_0_0_BETA{i}{s}" for i in range(6, 10) for s in ("_SNAPSHOT", "")), "V3_0_0_FINAL",
                 *(f"V3_0_{i}{s}" for i in range(1, 7) for s in ("_SNAPSHOT", "")))


def version_desc(version: int) -> str:
    """MQVersion.getVersionDesc for a client too old for resets and status requests (the number beyond)."""
    return _OLD_VERSIONS[version] if 0 <= version < len(_OLD_VERSIONS) else str(version)
#: INVOKE_BROKER_TO_GET_CONSUMER_STATUS of a group with no consumer online: upstream's getConsumeStatus calls
#: getConsumerGroupInfo(group).getChannelInfoTable() and answers the exception's text (4.9.8 and 5.3.3 alike)
_NO_GROUP_INFO = ('java.lang.NullPointerException: Cannot invoke "org.apache.rocketmq.broker.client.ConsumerGroupInfo.'
                  'getChannelInfoTable()" because the return value of "org.apache.rocketmq.broker.client.'
                  'ConsumerManager.getConsumerGroupInfo(String)" is null, org.apache.rocketmq.broker.client.net.'
                  'Broker2Client.getConsumeStatus(Broker2Client.java:243)')


@dataclass
class ResetRequest:
    topic: str
    group: str
    timestamp: int
    is_force: bool
    queue_id: int | None = None
    offset: int | None = None
    for_cpp: bool = False  # the admin asked for the C++ body form for every client (mqadmin -c)


class Broker2Client:
    def __init__(self, broker: BrokerState) -> None:
        self.broker = broker
        #: (group, topic, client id) -> when the client was sent RESET_CONSUMER_CLIENT_OFFSET
        self._told: dict[tuple[str, str, str], float] = {}
        #: (group, topic, client id, queue id): told clients whose first pull of the queue since was answered
        self._waited: set[tuple[str, str, str, int]] = set()

    def _tell(self, group: str, topic: str, client_id: str) -> None:
        """Remember that the client was sent this reset (its earlier ones, and every expired entry, forgotten)."""
        now = time.monotonic()
        expired = {k for k, told in self._told.items() if now - told >= RESET_TOLD_S}
        for key in expired:
            del self._told[key]
        gone = expired | {(group, topic, client_id)}
        self._waited = {w for w in self._waited if w[:3] not in gone}
        self._told[(group, topic, client_id)] = now

    def first_pull_since_told(self, group: str, topic: str, queue_id: int, client_id: str) -> bool:
        """True, once per queue, for a client told of the group's last reset of `topic` (within RESET_TOLD_S):
        that pull from elsewhere than the reset offset is answered "nothing new"; the client's next ones from
        elsewhere wait out `settling` and are then moved. False for clients never told (they are moved at once)."""
        told = self._told.get((group, topic, client_id))
        if told is None:
            return False
        if time.monotonic() - told >= RESET_TOLD_S:
            del self._told[(group, topic, client_id)]
            self._waited = {w for w in self._waited if w[:3] != (group, topic, client_id)}
            return False
        key = (group, topic, client_id, queue_id)
        if key in self._waited:
            return False
        self._waited.add(key)
        return True

    def settling(self, group: str, topic: str, client_id: str) -> float:
        """Seconds left of RESET_SETTLE_S since the client was told of the group's last reset of `topic` (0.0 when it
        was never told, or long enough ago): until then its pulls from its old offset are answered "nothing new"."""
        told = self._told.get((group, topic, client_id))
        return 0.0 if told is None else max(0.0, told + RESET_SETTLE_S - time.monotonic())

    # -- reset --------------------------------------------------------------------------------------
    def compute_reset(self, r: ResetRequest, broadcasting: bool) -> dict[MessageQueue, int]:
        b = self.broker
        tc = b.topic_config_manager.get(r.topic)
        if tc is None:
            raise BrokerError(ResponseCode.SYSTEM_ERROR,
                              f"[reset-offset] reset offset failed, no topic in this broker. topic={r.topic}")
        if not self.knows_group(r.group):
            # 4.9.8's words (no subscription group, offset or online consumer of it here)
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"THe consumer group <{r.group}> not exist")
        queues = range(tc.write_queue_nums) if r.queue_id is None else [r.queue_id]
        if r.queue_id is not None and not 0 <= r.queue_id < max(tc.write_queue_nums, tc.read_queue_nums):
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"queueId[{r.queue_id}] is illegal, topic:[{r.topic}]")
        server_side = b.config.use_server_side_reset_offset
        table: dict[MessageQueue, int] = {}
        for q in queues:
            target = self._target(r, q)
            mq = MessageQueue(r.topic, b.config.broker_name, q)
            if broadcasting and b.config.compat is not Compat.V4_9:  # 4.9.8 holds no offset of a broadcasting
                table[mq] = target  # group, so it refuses its reset ("not exist" below)
                continue
            committed = b.consumer_offset_manager.query_offset(r.group, r.topic, q)
            if committed < 0:
                if not server_side:
                    raise BrokerError(ResponseCode.SYSTEM_ERROR, f"THe consumer group <{r.group}> not exist")
                table[mq] = target
            elif r.is_force or target < committed:
                table[mq] = target
            else:
                table[mq] = committed
        return table

    def knows_group(self, group: str) -> bool:
        """A group a reset may be made for: one with a subscription group config (made by updateSubGroup or, with
        autoCreateSubscriptionGroup on, by the group's first heartbeat, pull or send-back), stored offsets (its own
        or a broadcasting group's), or a consumer online. Anything else is a typo: refused, nothing stored."""
        b = self.broker
        if group in b.subscription_group_manager.table:
            return True
        gi = b.consumer_manager.get(group)
        return (gi is not None and bool(gi.channels)) or bool(b.consumer_offset_manager.topics_of_group(group)) \
            or b.broadcast_offsets.knows_group(group)

    def _target(self, r: ResetRequest, queue_id: int) -> int:
        store = self.broker.store
        if r.offset is not None:
            low, high = store.get_min_offset_in_queue(r.topic, queue_id), store.get_max_offset_in_queue(r.topic, queue_id)
            if not low <= r.offset <= high:
                raise BrokerError(ResponseCode.SYSTEM_ERROR, f"Target offset {r.offset} not in consume queue range "
                                                             f"[{low}-{high}] of queue {queue_id}")
            return r.offset
        if r.timestamp == -1:
            return max(0, store.get_max_offset_in_queue(r.topic, queue_id))
        return max(0, store.get_offset_in_queue_by_time(r.topic, queue_id, r.timestamp))

    def reset_offset(self, r: ResetRequest) -> dict[MessageQueue, int]:
        """Compute the new offsets, then either record them for the next pulls (server-side reset, 5.x) or tell
        the online clients (4.9.x). Raises BrokerError with upstream's codes."""
        b = self.broker
        gi = b.consumer_manager.get(r.group)
        broadcasting = (gi.message_model == MessageModel.BROADCASTING) if gi is not None \
            else b.broadcast_offsets.knows_group(r.group)
        table = self.compute_reset(r, broadcasting)
        channels = list(gi.channels.values()) if gi is not None else []
        # a client too old to apply a reset refuses it before anything is stored
        for info in channels:
            if info.version < MIN_RESET_CLIENT_VERSION:
                raise BrokerError(ResponseCode.SYSTEM_ERROR,
                                  f"the client does not support this feature. version={version_desc(info.version)}")
        if b.config.use_server_side_reset_offset:
            for mq, offset in table.items():
                if broadcasting:
                    b.broadcast_offsets.assign_reset(group=r.group, topic=r.topic, queue_id=mq.queue_id, offset=offset)
                elif offset != b.consumer_offset_manager.query_offset(r.group, r.topic, mq.queue_id):
                    # a queue the reset leaves where it is (no force, already behind) keeps going as it was
                    b.consumer_offset_manager.assign_reset(group=r.group, topic=r.topic, queue_id=mq.queue_id,
                                                           offset=offset)
            if not channels:  # (a pull may still be held for a client that never registered)
                b.pull_hold_service.wake_group(r.group, r.topic)
                log.info("[reset-offset] %s of %s recorded; no client online, applied when the group pulls again",
                         r.topic, r.group)
                return table
        elif not channels:
            raise BrokerError(ResponseCode.CONSUMER_NOT_ONLINE, f"Consumer not online, so can not reset offset, "
                                                                f"Group: {r.group} Topic: {r.topic} "
                                                                f"Timestamp: {r.timestamp}")
        body = ResetOffsetBody(offset_table=table)
        java_form, c_form = body.encode(), body.encode_for_c()
        header = ResetOffsetRequestHeader(topic=r.topic, group=r.group, timestamp=r.timestamp, is_force=False)
        for info in channels:
            # 4.9.8 and 5.x push the C++ form only when the admin asks in C++; the emulator also gives it to a C++
            # consumer, which cannot read the Java form (compat 4.9: as upstream)
            cpp = r.for_cpp or (b.config.compat is not Compat.V4_9 and str(info.language).upper() == "CPP")
            request = RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header.to_ext(),
                                              c_form if cpp else java_form)
            info.connection.invoke_oneway(request)
            self._tell(r.group, r.topic, info.client_id)
            log.info("[reset-offset] %s of %s sent to %s (%s form)", r.topic, r.group, info.client_id,
                     "C++" if cpp else "Java")
        if b.config.use_server_side_reset_offset:
            # after the requests, on the same connections: a held pull is answered "nothing new" (it carries the
            # old offset) and the client's next pull either comes from the reset offset (it applied the
            # request) or is moved there by the broker (it did not)
            b.pull_hold_service.wake_group(r.group, r.topic)
        return table

    # -- consumer status ----------------------------------------------------------------------------
    async def get_consumer_status(self, topic: str, group: str, client_addr: str | None
                                  ) -> dict[str, dict[MessageQueue, int]]:
        """Each client's in-memory offsets of the topic (GET_CONSUMER_STATUS_FROM_CLIENT, 5 s each, in parallel);
        clients that do not answer are left out."""
        gi = self.broker.consumer_manager.get(group)
        if gi is None:  # 4.9.8 and 5.3.3 run into a NullPointerException here and answer its text
            raise BrokerError(ResponseCode.SYSTEM_ERROR, _NO_GROUP_INFO)
        if not gi.channels:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"No Any Consumer online in the consumer group: [{group}]")
        # a clientAddr naming no client of the group is answered with an empty table, as upstream
        channels = [c for c in gi.channels.values() if not client_addr or c.client_id == client_addr]
        for info in channels:
            if info.version < MIN_RESET_CLIENT_VERSION:
                raise BrokerError(ResponseCode.SYSTEM_ERROR,
                                  f"the client does not support this feature. version={version_desc(info.version)}")
        ext = GetConsumerStatusRequestHeader(topic=topic, group=group, client_addr=client_addr).to_ext()

        async def ask(info: ClientChannelInfo) -> tuple[str, dict[MessageQueue, int] | None]:
            try:
                response = await info.connection.invoke(
                    RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, ext), STATUS_TIMEOUT_S)
                if response.code != ResponseCode.SUCCESS:
                    return info.client_id, None
                return info.client_id, GetConsumerStatusBody.decode(response.body).message_queue_table
            except (asyncio.TimeoutError, TimeoutError, ConnectionError, ProtocolError) as exc:
                log.info("GET_CONSUMER_STATUS_FROM_CLIENT to %s: no answer (%s)", info.client_id,
                         type(exc).__name__)
                return info.client_id, None
        answers = await asyncio.gather(*(ask(info) for info in channels))
        return {cid: table for cid, table in answers if table is not None}

    # -- other requests to clients --------------------------------------------------------------------
    def notify_consumer_ids_changed(self, group: str, gi: ConsumerGroupInfo) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED to every member of a group whose members changed (they rebalance)."""
        for conn in list(gi.channels):
            conn.invoke_oneway(RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                                                       {"consumerGroup": group}))

    def check_transaction_state(self, info: ClientChannelInfo, ext: dict[str, str], body: bytes) -> bool:
        """CHECK_TRANSACTION_STATE to a producer of the half message's group (oneway: it answers with
        END_TRANSACTION); False when its connection is gone."""
        return info.connection.invoke_oneway(RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, ext, body))

    async def push_reply(self, info: ClientChannelInfo, ext: dict[str, str], body: bytes,
                         timeout: float) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT to the requester of a request-reply message; its answer (raises on a
        timeout or a lost connection)."""
        return await info.connection.invoke(
            RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, ext, body), timeout)

    async def call_consumer(self, info: ClientChannelInfo, code: int, ext: dict[str, str], body: bytes,
                            timeout: float) -> RemotingCommand:
        """An admin's request passed on to one consumer (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY);
        its answer (raises on a timeout or a lost connection)."""
        return await info.connection.invoke(RemotingCommand.request(code, ext, body), timeout)
