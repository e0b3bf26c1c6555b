"""Pull throughput with a SQL92 property filter against tag filtering, on the same stored messages (figures, not
a test).

    .venv/bin/python -m benchmarks.filter_bench [--per-queue 32000] [--rounds 3]

The broker runs in its own process (`serve --ephemeral --enable-property-filter true`). 4 queues are filled with
100-byte messages whose properties are TAGS (TagA / TagB alternating), `a` (0-9) and `region` (eu / us / apac).
Then PULL_MESSAGE requests (32 messages asked, 64 in flight, the subscription in the request as a lite pull
carries it) read every queue from the start with:

* no filter (`*`): every message;
* TAG `TagA`: half of them, chosen by the consume queue's tag hash code, without reading the commitlog;
* SQL92 `TAGS = 'TagA' AND a >= 0 AND region IS NOT NULL`: the same half, each candidate's properties read from
  its commitlog record and evaluated (3 terms).

It prints matched messages per second delivered for each, and SQL92's as a multiple of TAG's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, encode_command_bytes
from rocketmq_emulator.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeader
from rocketmq_emulator.protocol.message import BatchItem, encode_batch

from .broker_bench import Broker, drive

TOPIC = "BenchFilter"
QUEUES = 4
SQL = "TAGS = 'TagA' AND a >= 0 AND region IS NOT NULL"


def seed_frames(per_queue: int) -> list[bytes]:
    frames = []
    regions = ("eu", "us", "apac")
    for q in range(QUEUES):
        for start in range(0, per_queue, 256):
            items = [BatchItem(b"x" * 100, {"TAGS": "TagA" if i % 2 == 0 else "TagB", "a": str(i % 10),
                                            "region": regions[i % 3], "UNIQ_KEY": f"{q:08X}{i:024X}"})
                     for i in range(start, min(start + 256, per_queue))]
            h = SendMessageRequestHeader(producer_group="bench", topic=TOPIC, queue_id=q, batch=True,
                                         born_timestamp=int(time.time() * 1000))
            frames.append(encode_command_bytes(RemotingCommand.request(
                RequestCode.SEND_BATCH_MESSAGE, h.to_v2().to_ext(), encode_batch(items), opaque=len(frames))))
    return frames


def pull_frames(per_queue: int, expression: str, expression_type: str) -> list[bytes]:
    """One pull per 32 queue units from the start of each queue: every unit is scanned exactly once."""
    frames = []
    for q in range(QUEUES):
        for k in range(per_queue // 32):
            h = PullMessageRequestHeader(consumer_group="bench", topic=TOPIC, queue_id=q, queue_offset=k * 32,
                                         max_msg_nums=32, sys_flag=0x4, subscription=expression,
                                         expression_type=expression_type)
            frames.append(encode_command_bytes(RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext(),
                                                                       opaque=len(frames))))
    return frames


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-queue", type=int, default=32_000, help="messages stored in each of the 4 queues")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every figure; medians printed")
    args = ap.parse_args(argv)
    per_queue = args.per_queue - args.per_queue % 32
    broker = Broker("this checkout", extra=("--enable-property-filter", "true"))
    try:
        seeds = seed_frames(per_queue)
        _, ok, failed = asyncio.run(drive(broker.port, seeds, len(seeds), window=4))
        if failed:
            raise SystemExit(f"seeding failed: {failed} of {len(seeds)} batches refused")
        print(f"stored {per_queue * QUEUES:,} messages in {QUEUES} queues; pulling each queue from the start, "
              f"32 per request, 64 in flight, {args.rounds} rounds")
        cases = (("no filter (*)", "*", "TAG", per_queue * QUEUES),
                 ("TAG TagA", "TagA", "TAG", per_queue * QUEUES // 2),
                 (f"SQL92 {SQL}", SQL, "SQL92", per_queue * QUEUES // 2))
        figures: dict[str, list[float]] = {label: [] for label, *_ in cases}
        for _ in range(args.rounds):
            for label, expression, expression_type, matched in cases:
                frames = pull_frames(per_queue, expression, expression_type)
                elapsed, ok, failed = asyncio.run(drive(broker.port, frames, len(frames)))
                if failed:
                    raise SystemExit(f"{label}: {failed} pulls failed")
                # every unit is scanned once and the matched messages are known: messages per second delivered
                figures[label].append(matched / elapsed)
        medians = {label: statistics.median(v) for label, v in figures.items()}
        for label, value in medians.items():
            print(f"  {label:<70} {value:>12,.0f} matched msg/s")
        tag, sql = medians["TAG TagA"], medians[f"SQL92 {SQL}"]
        print(f"  SQL92 (3 terms) / TAG: {sql / tag:.2f}x")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
