"""kill -9 of a broker under a real commit load, for `test_offset_durability.py` and
`benchmarks/offset_bench.py --crash`.

One run: an emulator in a subprocess (`--offset-durability MODE`), `committers` tasks of the client's
`RemoteBrokerOffsetStore` (what a push consumer commits with), each owning its queues and committing
offset+1, +2, ... and awaiting the broker's answer (an acknowledged commit); SIGKILL at a random moment while
commits are in flight; restart on the same store; read every queue's offset back. Per queue:

* `regression` = last acknowledged offset − offset after the restart (each commit adds 1, so it counts
  acknowledged commits lost; ≤ 0 means none);
* `bound_ok`: the queue kept at least what was acknowledged one flush interval before the kill (the
  write-behind promise).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from rocketmq_emulator.client import Admin
from rocketmq_emulator.client.config import ClientConfig
from rocketmq_emulator.client.errors import ClientError
from rocketmq_emulator.client.instance import ClientInstance
from rocketmq_emulator.client.offset_store import RemoteBrokerOffsetStore
from rocketmq_emulator.testing.emulator_process import launch_emulator
from rocketmq_emulator.protocol.bodies import MessageQueue

TOPIC = "CrashTopic"
GROUP = "crash_group"
INTERVAL_S = 0.1  # flushConsumerOffsetInterval (the default)


@dataclass
class CrashResult:
    mode: str
    acked: int = 0  #: acknowledged commits in the run
    regressions: dict[MessageQueue, int] = field(default_factory=dict)  # > 0 only
    beyond_bound: list[MessageQueue] = field(default_factory=list)
    invented: list[MessageQueue] = field(default_factory=list)  # an offset never sent

    @property
    def lost(self) -> int:
        return sum(self.regressions.values())

    @property
    def worst(self) -> int:
        return max(self.regressions.values(), default=0)


async def crash_run(root: Path, mode: str, *, committers: int = 4, queues: int = 16, seed: int = 0,
                    before_kill: tuple[float, float] = (0.3, 0.8)) -> CrashResult:
    rng = random.Random(seed)
    broker = launch_emulator(root, "--offset-durability", mode)
    result = CrashResult(mode)
    try:
        async with Admin(broker.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, queues, queues)
        mqs = [MessageQueue(TOPIC, "broker-a", q) for q in range(queues)]
        acked: dict[MessageQueue, list[tuple[float, int]]] = {mq: [(0.0, 0)] for mq in mqs}
        sent: dict[MessageQueue, int] = {mq: 0 for mq in mqs}
        config = ClientConfig(namesrv=broker.namesrv_addr, request_timeout=2.0, reconnect_backoff_max=0.2)
        instance = await ClientInstance.acquire(f"127.0.0.1@crash{seed}", config)
        try:
            store = RemoteBrokerOffsetStore(instance, GROUP)
            stop = asyncio.Event()

            async def commit_loop(owned: list[MessageQueue]) -> None:
                while not stop.is_set():
                    for mq in owned:
                        offset = sent[mq] + 1
                        sent[mq] = offset
                        try:
                            await store.update_consume_offset_to_broker(mq, offset, oneway=False)
                        except ClientError:
                            return  # the broker is gone
                        acked[mq].append((time.monotonic(), offset))
            tasks = [asyncio.ensure_future(commit_loop(mqs[i::committers])) for i in range(committers)]
            await asyncio.sleep(rng.uniform(*before_kill))
            killed_at = time.monotonic()
            await asyncio.to_thread(broker.kill)
            await asyncio.wait(tasks, timeout=10)
            stop.set()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            await instance.release()
        await asyncio.to_thread(broker.start)  # crash recovery
        async with Admin(broker.namesrv_addr) as admin:
            api, addr = admin.instance.api, broker.broker_addr
            for mq in mqs:
                stored = await api.query_consumer_offset(addr, GROUP, mq)
                history = acked[mq]
                result.acked += len(history) - 1
                last = history[-1][1]
                if last - stored > 0:
                    result.regressions[mq] = last - stored
                safe = max(o for t, o in history if t <= killed_at - INTERVAL_S) if any(
                    t <= killed_at - INTERVAL_S for t, _ in history) else 0
                if stored < safe:
                    result.beyond_bound.append(mq)
                if stored > sent[mq]:
                    result.invented.append(mq)
    finally:
        broker.stop()
    return result
