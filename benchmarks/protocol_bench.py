"""Protocol codec throughput on one core: prints ops/s (figures, not a test).

    .venv/bin/python -m benchmarks.protocol_bench [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

from rocketmq_emulator.protocol import (FrameDecoder, RemotingCommand, SerializeType, encode_command,
                                        encode_command_bytes)
from rocketmq_emulator.protocol.headers import SendMessageRequestHeader, decode_send_header
from rocketmq_emulator.protocol.message import MessageExt, decode_messages, encode_properties


def send_v2_request(stype: SerializeType) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="PID_bench", topic="BenchTopic", queue_id=1, born_timestamp=1700000000000,
        properties=encode_properties({"TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "0A0000050000ABCD0000000000000001",
                                      "WAIT": "true"}), reconsume_times=0, batch=False)
    return RemotingCommand.request(310, header.to_v2().to_ext(), b"x" * 100, serialize_type=stype)


def pull_body(n: int = 32) -> bytes:
    return b"".join(MessageExt(topic="BenchTopic", body=b"x" * 100, queue_offset=i, commit_log_offset=i * 250,
                               store_host="127.0.0.1", store_port=10911,
                               properties={"TAGS": "TagA", "UNIQ_KEY": "0A000005%024d" % i}).encode()
                    for i in range(n))


def rate(fn: Callable[[], None], seconds: float, batch: int = 1000) -> float:
    best = 0.0
    for _ in range(3):
        n = 0
        start = time.perf_counter()
        deadline = start + seconds / 3
        while True:
            for _ in range(batch):
                fn()
            n += batch
            now = time.perf_counter()
            if now >= deadline:
                break
        best = max(best, n / (now - start))
    return best


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=1.5, help="time per measurement")
    args = ap.parse_args(argv)

    rows = []
    for stype in (SerializeType.JSON, SerializeType.ROCKETMQ):
        req = send_v2_request(stype)
        frame = encode_command_bytes(req)
        decoder = FrameDecoder()

        def decode() -> RemotingCommand:
            decoder.feed(frame)
            return decoder.next_command()  # type: ignore[return-value]

        def decode_encode() -> None:
            decoder.feed(frame)
            encode_command(decoder.next_command())  # type: ignore[arg-type]

        def full_send_path() -> None:
            cmd = decode()
            decode_send_header(cmd.code, cmd.ext_fields)
            encode_command(RemotingCommand.response_to(cmd, 0, ext_fields={
                "msgId": "7F00000100002A9F0000000000000800", "queueId": "1", "queueOffset": "42",
                "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}))

        name = stype.name
        rows.append((f"SEND_MESSAGE_V2 100 B, {name} header: decode", rate(decode, args.seconds), "frames"))
        rows.append((f"SEND_MESSAGE_V2 100 B, {name} header: encode", rate(lambda: encode_command(req), args.seconds),
                     "frames"))
        rows.append((f"SEND_MESSAGE_V2 100 B, {name} header: decode+encode", rate(decode_encode, args.seconds),
                     "frames"))
        rows.append((f"  + typed header + encoded SEND response, {name}", rate(full_send_path, args.seconds),
                     "requests"))

    body = pull_body()
    r = rate(lambda: decode_messages(body), args.seconds, batch=100)
    rows.append(("pull body of 32 messages: decode", r, "bodies"))
    rows.append(("  = messages decoded", r * 32, "messages"))
    rows.append(("  + parse properties of each", rate(lambda: [m.properties for m in decode_messages(body)],
                                                      args.seconds, batch=100) * 32, "messages"))

    width = max(len(r[0]) for r in rows)
    print(f"{'measure'.ljust(width)}  {'ops/s':>12}  unit")
    for label, value, unit in rows:
        print(f"{label.ljust(width)}  {value:12,.0f}  {unit}/s")
    target = [v for label, v, _ in rows if label == "SEND_MESSAGE_V2 100 B, JSON header: decode+encode"][0]
    print(f"\ntarget decode+encode of a send request >= 200,000/s: {target:,.0f}/s "
          f"({target / 200_000:.2f}x of target)")


if __name__ == "__main__":
    main()
