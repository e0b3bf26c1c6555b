"""Where a send's time goes in the broker: SEND_MESSAGE_V2 frames (64 per read) or SEND_BATCH_MESSAGE requests
(500 × 100 B) fed to a broker connection in-process, timed, then profiled with cProfile (the issue #14 starting
point; no network, so the figures are the Python cost alone).

    .venv/bin/python -m benchmarks.profile_send [--batch] [--rounds 1500] [--top 25]

`--top 0` times without profiling; a sampling profile by line (no cProfile distortion) of the same work:
`.venv/bin/py-spy record -r 2000 -f raw -o /tmp/send.txt -- .venv/bin/python -m benchmarks.profile_send
--rounds 8000 --top 0` (py-spy from PyPI).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import time

from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.client.message import encode_batch_columns
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, encode_command_bytes
from rocketmq_emulator.protocol.headers import SendMessageRequestHeader
from rocketmq_emulator.protocol.message import encode_properties
from rocketmq_emulator.protocol.transport import RemotingConnection


class _Transport:
    """Just enough of an asyncio transport for a RemotingConnection: written bytes are dropped."""

    def write(self, data: bytes) -> None: ...

    def writelines(self, data: list[bytes]) -> None: ...

    def get_extra_info(self, key: str, default: object = None) -> object:
        return ("127.0.0.1", 5555) if key == "peername" else default

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def close(self) -> None: ...

    def get_write_buffer_size(self) -> int:
        return 0


def frames(batch: bool) -> tuple[bytes, int]:
    """One read's worth of requests, and the messages in it."""
    if batch:
        body, _, _ = encode_batch_columns([f"{i}:".encode().ljust(100, b"x") for i in range(500)],
                                          tags=["TagA"] * 500, keys=[f"key-{i}" for i in range(500)])
        h = SendMessageRequestHeader(producer_group="bench", topic="ProfileBatch", queue_id=0,
                                     born_timestamp=int(time.time() * 1000), batch=True)
        return encode_command_bytes(RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, h.to_v2().to_ext(), body,
                                                            opaque=1)), 500
    out = []
    for i in range(64):
        h = SendMessageRequestHeader(producer_group="bench", topic="ProfileSend", queue_id=i % 4,
                                     born_timestamp=int(time.time() * 1000), properties=encode_properties(
                                         {"TAGS": "TagA", "UNIQ_KEY": f"{i:032X}", "WAIT": "true"}))
        out.append(encode_command_bytes(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_v2().to_ext(),
                                                                b"x" * 100, opaque=i)))
    return b"".join(out), 64


async def main(batch: bool, rounds: int, top: int) -> None:
    config = emulator_config(namesrv_port=0, listen_port=0, ephemeral=True, vip_channel_enabled=False)
    async with Emulator(config) as emulator:
        conn = RemotingConnection(emulator.broker.table, name="profile")
        conn.connection_made(_Transport())  # type: ignore[arg-type]
        chunk, per_read = frames(batch)
        conn.data_received(chunk)  # creates the topic
        t0 = time.perf_counter()
        for _ in range(rounds):
            conn.data_received(chunk)
        elapsed = time.perf_counter() - t0
        n = rounds * per_read
        print(f"{n / elapsed:,.0f} messages/s in-process, {elapsed / n * 1e6:.2f} µs per message", flush=True)
        if top <= 0:
            return
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(rounds):
            conn.data_received(chunk)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(top)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--batch", action="store_true", help="SEND_BATCH_MESSAGE of 500 × 100 B instead of single sends")
    ap.add_argument("--rounds", type=int, default=0, help="reads to feed (default 1500 single / 400 batch)")
    ap.add_argument("--top", type=int, default=25, help="profile lines to print")
    args = ap.parse_args()
    asyncio.run(main(args.batch, args.rounds or (400 if args.batch else 1500), args.top))
