"""`python -m rocketmq_emulator.client` (also `rocketmq-emulator admin|produce|consume`):

    admin <command> ...     mqadmin's commands and flags (updateTopic, topicStatus, consumerProgress, ...)
    produce -t TOPIC ...    send lines of stdin (or --message / --count) as messages
    consume -t TOPIC ...    print messages as they arrive

The name server comes from -n, else $NAMESRV_ADDR, else 127.0.0.1:9876. `--json` prints machine-readable
output (one JSON document for admin commands, one JSON object per line for produce/consume).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from typing import Any, TextIO

from .admin import Admin
from .cli_admin import add_admin_commands, message_json
from .config import DEFAULT_NAMESRV
from .errors import ClientError
from .message import Message
from .producer import Producer
from .push_consumer import BROADCASTING, CLUSTERING, FIRST_OFFSET, LAST_OFFSET, PushConsumer


def _namesrv_default() -> str:
    return os.environ.get("NAMESRV_ADDR") or DEFAULT_NAMESRV


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-n", "--namesrvAddr", dest="namesrv", default=_namesrv_default(),
                        help="name server host:port, several separated by ';' (default $NAMESRV_ADDR or "
                             f"{DEFAULT_NAMESRV})")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument("--timeout", type=float, default=3.0, help="request timeout in seconds (default 3)")

    parser = argparse.ArgumentParser(prog="rocketmq-emulator", description="RocketMQ client tools")
    sub = parser.add_subparsers(dest="command", required=True)
    admin = sub.add_parser("admin", help="mqadmin-style administration", description="mqadmin-style commands")
    admin_sub = admin.add_subparsers(dest="admin_command", required=True, metavar="<command>")
    add_admin_commands(admin_sub, common)

    p = sub.add_parser("produce", parents=[common], help="send messages (stdin lines, --message, --count)")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-g", "--group", default="rocketmq_emulator_console_producer")
    p.add_argument("--tags")
    p.add_argument("-k", "--keys", help="space-separated keys")
    p.add_argument("-p", "--property", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("-m", "--message", help="the body; with --count, '{i}' becomes the message number")
    p.add_argument("-c", "--count", type=int, help="send this many messages built from --message")
    p.add_argument("--batch", type=int, default=0, metavar="SIZE", help="send in batches of SIZE")
    p.add_argument("--sharding-key", help="keep all messages in one queue, in order")

    p = sub.add_parser("consume", parents=[common], help="print messages of a topic as they arrive")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-g", "--group", default=f"rocketmq_emulator_console_{os.getpid()}")
    p.add_argument("-e", "--expression", default="*", help="tag expression (default *)")
    p.add_argument("--from-beginning", action="store_true", help="a new group starts at the first message")
    p.add_argument("--broadcast", action="store_true", help="broadcasting consumer (offsets in ~/.rocketmq_offsets)")
    p.add_argument("--max-messages", type=int, default=0, help="exit after this many messages")
    p.add_argument("--idle-timeout", type=float, default=0.0, help="exit after this many seconds without a message")
    return parser


def _emit(out: TextIO, args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        out.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
    elif text:
        out.write(text + "\n")
    out.flush()


async def run_admin(args: argparse.Namespace, out: TextIO) -> int:
    async with Admin(args.namesrv, timeout=args.timeout) as admin:
        data, text = await args.run(admin, args)
    _emit(out, args, data, text)
    return 0


def _properties(items: list[str]) -> dict[str, str]:
    props = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--property {item!r}: use KEY=VALUE")
        props[key] = value
    return props


async def run_produce(args: argparse.Namespace, out: TextIO, stdin: TextIO) -> int:
    props = _properties(args.property)
    if args.count is not None:
        template = args.message if args.message is not None else "message {i}"
        bodies: Any = (template.replace("{i}", str(i)) for i in range(args.count))
    elif args.message is not None:
        bodies = [args.message]
    else:
        bodies = (line.rstrip("\n") for line in stdin if line.strip())
    sent = 0
    async with Producer(args.group, namesrv=args.namesrv, send_timeout=args.timeout) as producer:
        batch: list[Message] = []

        async def flush() -> None:
            nonlocal sent
            if not batch:
                return
            r = await producer.send_batch(args.topic, batch, sharding_key=args.sharding_key)
            sent += len(batch)
            _emit(out, args, {"status": r.status.value, "msgId": r.msg_id, "brokerName": r.broker_name,
                              "queueId": r.queue_id, "queueOffset": r.queue_offset, "count": len(batch)},
                  f"{r.status.value} {len(batch)} messages queue={r.broker_name}:{r.queue_id} "
                  f"first offset={r.queue_offset}")
            batch.clear()

        for body in bodies:
            msg = Message(args.topic, body, tags=args.tags, keys=args.keys.split() if args.keys else None,
                          properties=props)
            if args.batch > 0:
                batch.append(msg)
                if len(batch) >= args.batch:
                    await flush()
                continue
            r = await producer.send_message(msg, sharding_key=args.sharding_key)
            sent += 1
            _emit(out, args, {"status": r.status.value, "msgId": r.msg_id, "offsetMsgId": r.offset_msg_id,
                              "brokerName": r.broker_name, "queueId": r.queue_id, "queueOffset": r.queue_offset},
                  f"{r.status.value} msgId={r.msg_id} queue={r.broker_name}:{r.queue_id} offset={r.queue_offset}")
        await flush()
    if not args.json:
        print(f"sent {sent} message(s)", file=sys.stderr)
    return 0


async def run_consume(args: argparse.Namespace, out: TextIO) -> int:
    consumer = PushConsumer(args.group, namesrv=args.namesrv,
                            message_model=BROADCASTING if args.broadcast else CLUSTERING,
                            consume_from=FIRST_OFFSET if args.from_beginning else LAST_OFFSET)
    consumer.subscribe(args.topic, args.expression)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass
    n = 0
    async with consumer:
        while not stop.is_set():
            timeout = args.idle_timeout or 0.5
            batch = await consumer.getmany(timeout=timeout, max_records=64)
            if not batch:
                if args.idle_timeout:
                    break
                continue
            for msgs in batch.values():
                for m in msgs:
                    n += 1
                    if args.json:
                        _emit(out, args, message_json(m), "")
                    else:
                        out.write(f"{m.topic} {m.broker_name}:{m.queue_id}@{m.queue_offset} msgId={m.msg_id} "
                                  f"tags={m.tags or ''} keys={m.keys or ''} | {m.text}\n")
                    consumer.ack(m)
                    if args.max_messages and n >= args.max_messages:
                        stop.set()
                        break
            out.flush()
    return 0


def main(argv: list[str] | None = None, *, stdout: TextIO | None = None, stdin: TextIO | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    out = stdout or sys.stdout
    try:
        if args.command == "admin":
            return asyncio.run(run_admin(args, out))
        if args.command == "produce":
            return asyncio.run(run_produce(args, out, stdin or sys.stdin))
        if args.command == "consume":
            return asyncio.run(run_consume(args, out))
    except ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 2
