"""Instructions per message of the broker's read paths (PULL_MESSAGE and POP_MESSAGE), this checkout against
another revision, counted by valgrind's callgrind (figures, not a test): the read-side twin of
benchmarks/send_instructions.py, whose `instructions` runs each case here too.

    .venv/bin/python -m benchmarks.read_instructions [--compare 8c1b98a] [--rounds 30] [--only POP] [--repeat 1]

8c1b98a is the code before the consume core (78431bc: PULL and POP read through broker/core/consume_core.py).

Each case feeds reads of requests to a broker connection in-process (no network), the answers going to a fake
transport: 16 PULL_MESSAGE of 32 × 100 B per read (queues 0-3 of a 4-queue topic, each from offset 0 again,
sysFlag SUBSCRIPTION with "*" as a lite pull consumer sends it, no suspend: no long polling), the same with the
tag filter "TagA || TagB" matching every second message (so a pull scans 64 queue entries for its 32), or 8
POP_MESSAGE of 32 × 100 B per read (queueId -1, initMode MIN, pollTime 0, invisibleTime 60000; each pop moves
the group's offset). POP handlers answer from tasks: each round lets the event loop run (`asyncio.sleep(0)`)
until every answer of its read is written, and that loop turn is part of the cost. The messages are stored
before the rounds, through SEND_MESSAGE_V2 requests on another fake connection: for POP as many as the longer
run pops, identically in both runs of a case, so the storing cancels out. The broker's periodic tasks (flush,
offset persistence, pop revive, statistics, the name server's scan; a callgrind run is ~50× slower, so they
would fire many more times in the longer run) are cancelled once the broker is up.

Each case runs twice under callgrind, with 2 and with 2 + `--rounds` measured reads (after 3 more); the
difference divided by the extra messages delivered is the cost per message (start-up, imports, storing and the
first reads cancel out). Before that, each tree's driver runs once without callgrind and checks the answers:
every one SUCCESS, 32 messages per answer (only TagA / TagB with the filter; for POP no message twice).
Same interpreter, PYTHONHASHSEED=0, the other tree laid out by `git archive` ahead of this checkout on
PYTHONPATH.

Noise (2026-11-27): two pairs of runs of one tree agree within 0.05 % for PULL (the start-up varies by 1-2 M
instructions between runs, which the 30 extra reads dilute); the same commit laid out at two paths gave 1.004-1.005×
for PULL and 1.001× for POP: where a process's objects land moves its misses in CPython's type-attribute cache, so
ratios within about ±0.5 % are no change. POP is also bimodal between processes of one tree: one has or has not a
run of such misses, about 37 M instructions over 30 extra reads, 3 % of its figure. `--repeat 3` keeps the lowest
of three pairs of runs and prints the range; use it before reading a POP ratio within 3 % of 1.
"This checkout" is imported afresh by every run: a tree edited while the benchmark runs gives nonsense (the two
runs of a case see different code). To measure a commit, lay it out as the other side is
(`benchmarks.broker_bench.checkout(REV, DIR)`) and run with `PYTHONPATH=DIR/path`, which every run inherits.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .broker_bench import checkout
from .send_instructions import instructions

DRIVER = r'''
import asyncio, sys, time
from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.protocol import FrameDecoder, RemotingCommand, RequestCode, encode_command_bytes
from rocketmq_emulator.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeader
from rocketmq_emulator.protocol.message import decode_messages, encode_properties
from rocketmq_emulator.protocol.pop_headers import INIT_MODE_MIN, PopMessageRequestHeader
from rocketmq_emulator.protocol.transport import RemotingConnection
try:  # configuration read once (after 506dbfa)
    from rocketmq_emulator.broker.settings import emulator_config
    config = emulator_config(namesrv_port=0, listen_port=0, ephemeral=True, vip_channel_enabled=False)
except ImportError:
    from rocketmq_emulator.broker.config import BrokerConfig
    config = BrokerConfig(namesrv_port=0, broker_port=0, ephemeral=True, vip_channel_enabled=False)

class T:
    n = 0  # writes: one per read of pulls, one per POP answer (written by its task)
    def write(self, d): self.n += 1
    def writelines(self, d): self.n += 1
    def get_extra_info(self, k, default=None): return ("127.0.0.1", 5555) if k == "peername" else default
    def is_closing(self): return False
    def pause_reading(self): pass
    def resume_reading(self): pass
    def close(self): pass
    def get_write_buffer_size(self): return 0

class Kept(T):  # the check run: the answers are kept and decoded at the end
    def __init__(self): self.out = []
    def write(self, d): self.n += 1; self.out.append(bytes(d))
    def writelines(self, d): self.n += 1; self.out.extend(bytes(x) for x in d)

case, rounds, stored_rounds, check = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
PULLS, POPS, QUEUES, TAGS = 16, 8, 4, ("TagA", "TagC", "TagB", "TagD")

def sends(topic, n):
    out = []
    for i in range(n):
        h = SendMessageRequestHeader(producer_group="bench", topic=topic, queue_id=i % QUEUES,
                                     born_timestamp=int(time.time() * 1000), properties=encode_properties(
                                         {"TAGS": TAGS[i // QUEUES % 4], "UNIQ_KEY": f"{i:032X}"}))
        out.append(encode_command_bytes(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_v2().to_ext(),
                                                                b"x" * 100, opaque=i)))
    return out

def pulls(topic, expression):
    out = []
    for i in range(PULLS):
        h = PullMessageRequestHeader(consumer_group="InsPullGroup", topic=topic, queue_id=i % QUEUES, queue_offset=0,
                                     max_msg_nums=32, sys_flag=0x4, subscription=expression, expression_type="TAG")
        out.append(encode_command_bytes(RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext(), opaque=i)))
    return b"".join(out)

def pops(topic):
    out = []
    for i in range(POPS):
        h = PopMessageRequestHeader(consumer_group="InsPopGroup", topic=topic, queue_id=-1, max_msg_nums=32,
                                    invisible_time=60000, poll_time=0, born_time=int(time.time() * 1000),
                                    init_mode=INIT_MODE_MIN, exp_type="TAG", exp="*")
        out.append(encode_command_bytes(RemotingCommand.request(RequestCode.POP_MESSAGE, h.to_ext(), opaque=i)))
    return b"".join(out)

async def main():
    async with Emulator(config) as emulator:
        here = asyncio.current_task()
        quiet = [t for t in asyncio.all_tasks() if t is not here]  # periodic tasks: nothing runs in between
        for t in quiet:
            t.cancel()
        await asyncio.gather(*quiet, return_exceptions=True)
        sender = RemotingConnection(emulator.broker.table, name="ins-send")
        sender.connection_made(T())
        if case == "pop":
            topic, chunk, answers = "InsPop", pops("InsPop"), POPS
            stored = (3 + stored_rounds) * POPS * 32
        else:
            topic, chunk, answers = "InsPull", pulls("InsPull", "TagA || TagB" if case == "pull-tag" else "*"), 1
            stored = QUEUES * 128
        frames = sends(topic, stored)
        for k in range(0, len(frames), 64):
            sender.data_received(b"".join(frames[k:k + 64]))
        for _ in range(3):
            await asyncio.sleep(0)
        t = Kept() if check else T()
        conn = RemotingConnection(emulator.broker.table, name="ins")
        conn.connection_made(t)
        for _ in range(3 + rounds):
            target = t.n + answers
            conn.data_received(chunk)
            spins = 0
            while t.n < target:
                await asyncio.sleep(0)
                spins += 1
                if spins > 1000:
                    raise SystemExit(f"{target - t.n} answers missing")
        if check:
            decoder = FrameDecoder()
            decoder.feed(b"".join(t.out))
            seen, count, remarks = set(), 0, set()
            for cmd in decoder:
                if cmd.code != 0:
                    raise SystemExit(f"answer {cmd.code} {cmd.remark}")
                msgs = decode_messages(cmd.body)
                if len(msgs) != 32:
                    raise SystemExit(f"{len(msgs)} messages in an answer, not 32")
                for m in msgs:
                    tags = m.properties.get("TAGS")
                    if case == "pull-tag" and tags not in ("TagA", "TagB"):
                        raise SystemExit(f"tag {tags} through the filter")
                    if case == "pop" and (m.queue_id, m.queue_offset) in seen:
                        raise SystemExit(f"queue {m.queue_id} offset {m.queue_offset} popped twice")
                    seen.add((m.queue_id, m.queue_offset))
                count += len(msgs)
            print(count // (3 + rounds))
asyncio.run(main())
'''

#: (label, driver case, messages delivered per read)
CASES = (("PULL_MESSAGE 32 x 100 B", "pull", 16 * 32), ("PULL_MESSAGE 32 x 100 B, TagA || TagB", "pull-tag", 16 * 32),
         ("POP_MESSAGE 32 x 100 B", "pop", 8 * 32))


def check(driver: Path, pythonpath: Path | None, case: str, per_read: int, work: Path, native: bool = True) -> None:
    """One run without callgrind that decodes the answers: each SUCCESS with the expected messages."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "ROCKETMQ_EMULATOR_NATIVE": "1" if native else "0"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
        if (pythonpath.parent / "python-path").exists():  # its lane could not be built (broker_bench.checkout)
            env["ROCKETMQ_EMULATOR_NATIVE"] = "0"
    proc = subprocess.run([sys.executable, str(driver), case, "2", "2", "1"], env=env, capture_output=True,
                          text=True, cwd=work)
    got = proc.stdout.strip()
    if proc.returncode != 0 or got != str(per_read):
        raise SystemExit(f"{case} ({'this checkout' if pythonpath is None else pythonpath}): expected {per_read} "
                         f"messages per read, got {got!r} (exit {proc.returncode}):\n{proc.stderr[-2000:]}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", default="8c1b98a", metavar="REV",
                    help="the other revision (default 8c1b98a; its tree has no compiled native lane), or `python`: "
                         "this checkout on its Python path (ROCKETMQ_EMULATOR_NATIVE=0)")
    ap.add_argument("--rounds", type=int, default=30, help="extra reads measured per case (default 30)")
    ap.add_argument("--only", metavar="TEXT", help="only the cases whose name contains TEXT (e.g. PULL, POP, Tag)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="N pairs of runs per case and tree, the lowest cost kept, the range printed (default 1)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        driver = work / "driver.py"
        driver.write_text(DRIVER)
        python_path = args.compare == "python"
        other = None if python_path else checkout(args.compare, work / "other")
        print(f"instructions per message (callgrind), {sys.executable}, PYTHONHASHSEED=0, {args.rounds} extra reads"
              + (f", lowest of {args.repeat} pairs of runs" if args.repeat > 1 else ""))
        print(f"  {'case':<38} {'this checkout':>14} {args.compare:>14} {'ratio':>7}")
        for label, case, per_read in CASES:
            if args.only and args.only not in label:
                continue
            per, spread = [], []
            for pythonpath, lane in ((None, True), (other, not python_path)):
                check(driver, pythonpath, case, per_read, work, lane)
                most = 2 + args.rounds  # what the longer run pops: both runs store that much
                got = []
                for _ in range(args.repeat):
                    low = instructions(driver, pythonpath, (case, 2, most, 0), work, lane)
                    high = instructions(driver, pythonpath, (case, most, most, 0), work, lane)
                    got.append((high - low) / (args.rounds * per_read))
                per.append(min(got))
                spread.append(f"{min(got):,.0f}-{max(got):,.0f}")
            print(f"  {label:<38} {per[0]:>14,.0f} {per[1]:>14,.0f} {per[0] / per[1]:>6.3f}x"
                  + (f"   ({spread[0]} / {spread[1]})" if args.repeat > 1 else ""), flush=True)


if __name__ == "__main__":
    main()
