"""Instructions per message of the broker's send path, this checkout against another revision, counted by
valgrind's callgrind (figures, not a test). Instruction counts do not depend on what else the machine is doing,
so they compare two trees where wall-clock runs on a shared 2-core machine cannot (broker_bench's same-run
comparison still varies by ±15 %).

    .venv/bin/python -m benchmarks.send_instructions [--compare 506dbfa] [--rounds 30] [--only V2]

Each case feeds reads of requests to a broker connection in-process, as benchmarks/profile_send.py does (no
network: the Python cost alone): 64 SEND_MESSAGE_V2 of 100 B or 1 KiB per read, or one SEND_BATCH_MESSAGE of
32 or 256 × 100 B. It runs twice under callgrind, with a few rounds and with `--rounds` more; the difference
divided by the extra messages is the cost per message (start-up, imports and the first round cancel out). Same
interpreter, PYTHONHASHSEED=0, the other tree laid out by `git archive` ahead of this checkout on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from .broker_bench import checkout

DRIVER = r'''
import asyncio, sys, time
from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.protocol import RemotingCommand, RequestCode, encode_command_bytes
from rocketmq_emulator.protocol.headers import SendMessageRequestHeader
from rocketmq_emulator.protocol.message import BatchItem, encode_batch, encode_properties
from rocketmq_emulator.protocol.transport import RemotingConnection
try:  # configuration read once (after 506dbfa)
    from rocketmq_emulator.broker.settings import emulator_config
    config = emulator_config(namesrv_port=0, listen_port=0, ephemeral=True, vip_channel_enabled=False)
except ImportError:
    from rocketmq_emulator.broker.config import BrokerConfig
    config = BrokerConfig(namesrv_port=0, broker_port=0, ephemeral=True, vip_channel_enabled=False)

class T:
    def write(self, d): pass
    def writelines(self, d): pass
    def get_extra_info(self, k, default=None): return ("127.0.0.1", 5555) if k == "peername" else default
    def is_closing(self): return False
    def pause_reading(self): pass
    def resume_reading(self): pass
    def close(self): pass
    def get_write_buffer_size(self): return 0

size, batch, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def read():
    if batch:
        items = [BatchItem(b"x" * size, {"TAGS": "TagA", "UNIQ_KEY": f"{j:032X}"}) for j in range(batch)]
        h = SendMessageRequestHeader(producer_group="bench", topic="InsBatch", queue_id=0,
                                     born_timestamp=int(time.time() * 1000), batch=True)
        return encode_command_bytes(RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, h.to_v2().to_ext(),
                                                            encode_batch(items), opaque=1))
    out = []
    for i in range(64):
        h = SendMessageRequestHeader(producer_group="bench", topic="InsSend", queue_id=i % 4,
                                     born_timestamp=int(time.time() * 1000), properties=encode_properties(
                                         {"TAGS": "TagA", "UNIQ_KEY": f"{i:032X}"}))
        out.append(encode_command_bytes(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_v2().to_ext(),
                                                                b"x" * size, opaque=i)))
    return b"".join(out)

async def main():
    async with Emulator(config) as emulator:
        conn = RemotingConnection(emulator.broker.table, name="ins")
        conn.connection_made(T())
        chunk = read()
        for _ in range(3 + rounds):
            conn.data_received(chunk)
asyncio.run(main())
'''

CASES = (("SEND_MESSAGE_V2 100 B", 100, 0, 64), ("SEND_MESSAGE_V2 1024 B", 1024, 0, 64),
         ("SEND_BATCH_MESSAGE 32 x 100 B", 100, 32, 32), ("SEND_BATCH_MESSAGE 256 x 100 B", 100, 256, 256))


def instructions(driver: Path, pythonpath: Path | None, driver_args: Sequence[object], work: Path,
                 native: bool = True) -> int:
    """Instructions callgrind counts for one run of `driver` with `driver_args` (this checkout's package, or the
    tree at `pythonpath` ahead of it; `native=False`: with ROCKETMQ_EMULATOR_NATIVE=0); benchmarks/
    read_instructions.py uses it too."""
    out = work / f"cg.{os.getpid()}.{'.'.join(map(str, driver_args))}.{0 if pythonpath is None else 1}{int(native)}"
    env = {**os.environ, "PYTHONHASHSEED": "0", "ROCKETMQ_EMULATOR_NATIVE": "1" if native else "0"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
        if (pythonpath.parent / "python-path").exists():  # its lane could not be built (broker_bench.checkout)
            env["ROCKETMQ_EMULATOR_NATIVE"] = "0"
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                           str(driver), *map(str, driver_args)],
                          env=env, capture_output=True, text=True, cwd=work)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", default="506dbfa", metavar="REV",
                    help="the other revision (default 506dbfa; its tree has no compiled native lane), or `python`: "
                         "this checkout on its Python path (ROCKETMQ_EMULATOR_NATIVE=0)")
    ap.add_argument("--rounds", type=int, default=30, help="extra reads measured per case (default 30)")
    ap.add_argument("--only", metavar="TEXT", help="only the cases whose name contains TEXT (e.g. V2, BATCH)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        driver = work / "driver.py"
        driver.write_text(DRIVER)
        python_path = args.compare == "python"
        other = None if python_path else checkout(args.compare, work / "other")
        from rocketmq_emulator import native
        print(f"instructions per message (callgrind), {sys.executable}, PYTHONHASHSEED=0, {args.rounds} extra reads; "
              f"this checkout on its {native.PATH} path")
        print(f"  {'case':<34} {'this checkout':>14} {args.compare:>14} {'ratio':>7}")
        for label, size, batch, per_read in CASES:
            if args.only and args.only not in label:
                continue
            per = []
            for pythonpath, lane in ((None, True), (other, not python_path)):
                low = instructions(driver, pythonpath, (size, batch, 2), work, lane)
                high = instructions(driver, pythonpath, (size, batch, 2 + args.rounds), work, lane)
                per.append((high - low) / (args.rounds * per_read))
            print(f"  {label:<34} {per[0]:>14,.0f} {per[1]:>14,.0f} {per[0] / per[1]:>6.3f}x", flush=True)


if __name__ == "__main__":
    main()
