"""A broker without sockets, for unit tests of its request handlers: `BrokerHarness(root)` is a real
`BrokerController` (its store on real mapped files under `root`, its real managers, its own dispatch table with
the same handlers, deferred families and wrappers as a serving broker), never started: no port is bound, no
timer runs. Requests reach it through `ClientChannel`s, each a real `RemotingConnection` of the broker's server
over a transport that records what the broker writes, so a request is encoded, decoded, dispatched and answered
exactly as one from a socket would be, in well under a millisecond.

    async with BrokerHarness(tmp_path, longPollingEnable=False) as broker:
        await broker.send("Orders", b"hello", tags="A")
        response = await broker.ask(RequestCode.GET_MAX_OFFSET, QueueRequestHeader(topic="Orders", queue_id=0))

Settings are RocketMQ's keys (`longPollingEnable`, `newGroupOffset`, ...), as in a broker.conf. Tests run on
an event loop (the broker's collaborators schedule work on it: held pulls, the offset journal).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.controller import BrokerController
from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.protocol import FrameDecoder, PullSysFlag, RemotingCommand, RequestCode
from rocketmq_emulator.protocol.bodies import (ConsumerData, ConsumeType, HeartbeatData, MessageModel, ProducerData,
                                               SubscriptionData)
from rocketmq_emulator.protocol.codes import CURRENT_VERSION
from rocketmq_emulator.protocol.frame import encode_command_bytes
from rocketmq_emulator.protocol.headers import CommandHeader, PullMessageRequestHeader, SendMessageRequestHeader
from rocketmq_emulator.protocol.message import encode_properties, java_string_hash

#: small mapped files: a harness broker is made and removed per test
HARNESS_SETTINGS: dict[str, object] = {"listenPort": 0, "brokerIP1": "127.0.0.1",
                                       "mappedFileSizeCommitLog": 4 * 1024 * 1024,
                                       "mappedFileSizeConsumeQueue": 1000 * 20}
#: how long `ask` waits for an answer the handler gives later (an awaited client call, a held pull)
ANSWER_TIMEOUT_S = 2.0

#: the port numbers of the clients' addresses as the broker sees them (no socket: only distinct labels)
_peer_ports = itertools.count(50001)


def broker_config(root: Path, settings: Mapping[str, object]) -> BrokerConfig:
    """A broker's configuration from RocketMQ keys, with its store under `root`."""
    return emulator_config({**HARNESS_SETTINGS, "storePathRootDir": str(root), **settings}).broker


class RecordingTransport(asyncio.Transport):
    """What a RemotingConnection writes to: everything written goes to `on_write`; closing it ends the
    connection as a peer's close does."""

    def __init__(self, peer: tuple[str, int], on_write: Callable[[bytes], None]) -> None:
        super().__init__()
        self.peer = peer
        self.on_write = on_write
        self.protocol: asyncio.Protocol | None = None
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.peer if name == "peername" else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.on_write(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.on_write(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        if not self.closing:
            self.closing = True
            if self.protocol is not None:
                self.protocol.connection_lost(None)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class ClientChannel:
    """One client connection to the harness broker: requests go in as frames, and the broker's answers (by
    opaque) and its own requests to the client (`requests`: NOTIFY_CONSUMER_IDS_CHANGED,
    RESET_CONSUMER_CLIENT_OFFSET, ...) come back decoded."""

    def __init__(self, broker: BrokerController, client_id: str) -> None:
        self.client_id = client_id
        self.conn = broker.server._protocol()  # the connection the server makes for an accepted socket
        self.transport = RecordingTransport(("127.0.0.1", next(_peer_ports)), self._received)
        self.transport.protocol = self.conn
        self._decoder = FrameDecoder()
        self._answers: dict[int, asyncio.Future[RemotingCommand]] = {}
        self.requests: list[RemotingCommand] = []
        self.conn.connection_made(self.transport)

    @property
    def addr(self) -> str:
        return self.conn.peer

    def _received(self, data: bytes) -> None:
        self._decoder.feed(data)
        for cmd in self._decoder:
            if not cmd.is_response:
                self.requests.append(cmd)
                continue
            fut = self._answers.pop(cmd.opaque, None)
            assert fut is not None, f"an answer to no request: {cmd}"
            fut.set_result(cmd)

    def submit(self, cmd: RemotingCommand) -> asyncio.Future[RemotingCommand]:
        """Hand the broker one request; the future of its answer (done at once unless the handler answers
        later, as a held pull does)."""
        fut: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        if not cmd.is_oneway:
            self._answers[cmd.opaque] = fut
        self.conn.data_received(encode_command_bytes(cmd))
        return fut

    async def ask(self, code: int, header: CommandHeader | dict[str, str] | None = None, body: bytes = b"", *,
                  language: str = "JAVA", version: int = CURRENT_VERSION,
                  timeout: float = ANSWER_TIMEOUT_S) -> RemotingCommand:
        """The broker's answer to one request (TimeoutError if none comes within `timeout`)."""
        ext = header.to_ext() if isinstance(header, CommandHeader) else header
        cmd = RemotingCommand.request(code, ext, body, language=language, version=version)
        return await asyncio.wait_for(self.submit(cmd), timeout)

    def close(self) -> None:
        """The client goes away (its connection is lost, as when its socket closes)."""
        self.transport.close()


class BrokerHarness:
    """A real broker with no sockets (see the module's docstring). `broker` is the controller; `client` the
    first client connection, which `ask`, `send` and `heartbeat` use unless given another (`connect`)."""

    def __init__(self, root: Path, **settings: object) -> None:
        self.broker = BrokerController(broker_config(root, settings))
        self.broker.open_store()
        self.broker.load()
        self.client = self.connect("127.0.0.1@harness")

    def connect(self, client_id: str = "") -> ClientChannel:
        """Another client connection (its own channel: its own client id, language and subscriptions)."""
        return ClientChannel(self.broker, client_id or f"127.0.0.1@harness-{next(_peer_ports)}")

    async def ask(self, code: int, header: CommandHeader | dict[str, str] | None = None, body: bytes = b"",
                  **kw: Any) -> RemotingCommand:
        """The broker's answer to one request of the first client (`ClientChannel.ask`)."""
        return await self.client.ask(code, header, body, **kw)

    async def send(self, topic: str, body: bytes, *, tags: str | None = None, keys: str | None = None,
                   queue_id: int = 0, properties: dict[str, str] | None = None,
                   channel: ClientChannel | None = None) -> RemotingCommand:
        """SEND_MESSAGE of one message from producer group PG (to `channel`, else the first client)."""
        props = dict(properties or {})
        if tags is not None:
            props["TAGS"] = tags
        if keys is not None:
            props["KEYS"] = keys
        header = SendMessageRequestHeader(producer_group="PG", topic=topic, queue_id=queue_id,
                                          born_timestamp=int(time.time() * 1000),
                                          properties=encode_properties(props) if props else None)
        return await (channel or self.client).ask(RequestCode.SEND_MESSAGE, header, body)

    async def heartbeat(self, group: str, *topics: str, model: MessageModel = MessageModel.CLUSTERING,
                        sub_string: str = "*", producer_group: str | None = None,
                        channel: ClientChannel | None = None) -> RemotingCommand:
        """HEART_BEAT of a push consumer of `group` subscribing `topics` (and a producer of `producer_group`)."""
        channel = channel or self.client
        # with the tags' hash codes, as every client sends them (the broker filters by the codes alone)
        tags = [] if sub_string.strip() in ("", "*") else [s.strip() for s in sub_string.split("||") if s.strip()]
        subs = [SubscriptionData(topic=t, sub_string=sub_string, tags_set=tags,
                                 code_set=[java_string_hash(s) for s in tags], sub_version=1) for t in topics]
        data = HeartbeatData(client_id=channel.client_id, consumer_data_set=[ConsumerData(
            group_name=group, consume_type=ConsumeType.CONSUME_PASSIVELY, message_model=model,
            subscription_data_set=subs)] if group else [],
            producer_data_set=[ProducerData(group_name=producer_group)] if producer_group else [])
        return await channel.ask(RequestCode.HEART_BEAT, body=data.encode())

    async def pull(self, group: str, topic: str, queue_id: int, offset: int, *, max_nums: int = 32,
                   subscription: str | None = "*", suspend: bool = False, suspend_ms: int = 15000,
                   commit_offset: int | None = None, channel: ClientChannel | None = None,
                   timeout: float = ANSWER_TIMEOUT_S) -> RemotingCommand:
        """PULL_MESSAGE as a push consumer sends it: with its subscription (`subscription=None`: none, the broker
        uses the group's from its heartbeat), held up to `suspend_ms` when `suspend`, committing
        `commit_offset` when given."""
        flag = PullSysFlag(0)
        if subscription is not None:
            flag |= PullSysFlag.SUBSCRIPTION
        if suspend:
            flag |= PullSysFlag.SUSPEND
        if commit_offset is not None:
            flag |= PullSysFlag.COMMIT_OFFSET
        header = PullMessageRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id, queue_offset=offset,
                                          max_msg_nums=max_nums, sys_flag=int(flag), commit_offset=commit_offset or 0,
                                          suspend_timeout_millis=suspend_ms if suspend else 0,
                                          subscription=subscription, sub_version=1)
        return await (channel or self.client).ask(RequestCode.PULL_MESSAGE, header, timeout=timeout)

    async def close(self) -> None:
        """Stop as a broker stops: held pulls answered, offsets and configs written, the store closed."""
        await self.broker.stop(unregister=False)

    async def __aenter__(self) -> BrokerHarness:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
