"""The checks `rocketmq-emulator seed` makes before it starts Spark, with this project's client (no pyspark): the
name server answers, the topic has a route with writable queues (its own, or TBW102's when the broker creates
topics on send), and the brokers of that route answer. `--queues N` creates (or resizes) the topic here too.

A failed check is one line (PreflightError), within a couple of seconds, instead of a Spark job failing after
Spark's start-up and the writer's retries."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from rocketmq_emulator.client import (Admin, BrokerUnreachableError, ClientConfig, ClientError, InvalidArgumentError,
                                      NoRouteError)
from rocketmq_emulator.client.route import MASTER_ID
from rocketmq_emulator.protocol.admin_bodies import TopicOffset
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.topics import AUTO_CREATE_TOPIC_KEY

#: seconds for each connection and request of the checks (and of the progress polls)
CHECK_TIMEOUT = 1.5


class PreflightError(Exception):
    """A check before Spark failed; the message says why in one line."""


@dataclass
class SeedTarget:
    """Where the seed job writes: `queues` writable queues (`auto_create`: TBW102's, the broker creates the topic
    on the first send) on `brokers`; `baseline`: the sum of the topic's max offsets before the job."""

    topic: str
    queues: int
    brokers: list[str]
    baseline: int
    auto_create: bool


def admin_config(namesrv: str, timeout: float = CHECK_TIMEOUT) -> ClientConfig:
    return ClientConfig().with_(namesrv=namesrv, connect_timeout=timeout, request_timeout=timeout)


def landed_offsets(status: dict[MessageQueue, TopicOffset]) -> int:
    """The sum of the max offsets of a topic's queues (Admin.topic_status)."""
    return sum(offset.max_offset for offset in status.values())


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


async def _check(namesrv: str, topic: str, queues: int | None) -> SeedTarget:
    async with Admin(config=admin_config(namesrv), instance_name=f"seed-check-{os.getpid()}") as admin:
        try:
            info = await admin.cluster_info()
        except ClientError as exc:
            detail = exc.detail if isinstance(exc, BrokerUnreachableError) else _one_line(exc)
            raise PreflightError(f"name server {namesrv} is unreachable: {detail}") from None
        if not any(bd.broker_addrs for bd in info.broker_addr_table.values()):
            raise PreflightError(f"the name server {namesrv} lists no broker: start one (rocketmq-emulator serve)")
        if queues is not None:
            try:
                await admin.create_topic(topic, queues, queues)
            except ClientError as exc:
                raise PreflightError(f"cannot create topic {topic!r} with {queues} queue(s): {_one_line(exc)}") \
                    from None
        try:
            publish = await admin.instance.publish_info(topic)
        except InvalidArgumentError as exc:
            raise PreflightError(_one_line(exc)) from None
        except NoRouteError as exc:
            if "auto-creation is disabled" in str(exc):
                raise PreflightError(f"topic {topic!r} does not exist and the broker does not create topics on "
                                     f"send (no {AUTO_CREATE_TOPIC_KEY} route): pass --queues N to create it") \
                    from None
            raise PreflightError(f"topic {topic!r} has no writable queue: {_one_line(exc)}") from None
        except ClientError as exc:
            raise PreflightError(f"cannot look up the route of topic {topic!r}: {_one_line(exc)}") from None
        names = set(publish.broker_names())
        addrs = sorted(bd.broker_addrs[MASTER_ID] for bd in publish.route.broker_datas
                       if bd.broker_name in names and MASTER_ID in bd.broker_addrs)
        baseline = 0
        for addr in addrs:
            try:
                await admin.broker_runtime_info(addr)
            except ClientError as exc:
                raise PreflightError(f"broker {addr} of topic {topic!r} does not answer: {_one_line(exc)}") from None
        if not publish.from_default_topic:
            try:
                baseline = landed_offsets(await admin.topic_status(topic))
            except ClientError as exc:
                raise PreflightError(f"cannot read the offsets of topic {topic!r}: {_one_line(exc)}") from None
        return SeedTarget(topic, len(publish.queues), addrs, baseline, publish.from_default_topic)


def check_target(namesrv: str, topic: str, queues: int | None = None) -> SeedTarget:
    """Check (and with `queues`, create) `topic` before a seed job; PreflightError says what is wrong."""
    async def bounded() -> SeedTarget:
        try:
            return await asyncio.wait_for(_check(namesrv, topic, queues), 4 * CHECK_TIMEOUT)
        except asyncio.TimeoutError:
            raise PreflightError(f"checking topic {topic!r} at name server {namesrv} took longer than "
                                 f"{4 * CHECK_TIMEOUT:g} s") from None
    return asyncio.run(bounded())
