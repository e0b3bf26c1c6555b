"""The client's commands: `admin <command>` (mqadmin's names and flags, cli/admin_commands.py), `produce`,
`consume` and `health`, run with this project's client:

    admin <command> ...     mqadmin's commands and flags (updateTopic, topicStatus, consumerProgress, ...)
    produce -t TOPIC ...    send lines of stdin (or --message / --count) as messages
    consume -t TOPIC ...    print messages as they arrive
    health [--broker ADDR]  is the name server up, and does every broker it lists answer (exit 0 or 1)

The name server comes from -n, else $NAMESRV_ADDR, else 127.0.0.1:9876. `--json` prints machine-readable
output (one JSON document for admin commands, one JSON object per line for produce/consume).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from rocketmq_emulator.client.config import DEFAULT_NAMESRV
from rocketmq_emulator.client.errors import BrokerResponseError, ClientError

from .args import (EXIT_FAILURE, EXIT_USAGE, OneLineParser, address, float_range, int_range, namesrv_list,
                   report_error)

if TYPE_CHECKING:  # each command imports what it uses when it runs (`python -X importtime` shows the saving)
    import asyncio

    from rocketmq_emulator.client.admin import Admin
    from rocketmq_emulator.client.push_consumer import PushConsumer

def _namesrv_default() -> str:
    """$NAMESRV_ADDR (checked like -n: a bad port there is a usage error naming the variable), else the default."""
    env = os.environ.get("NAMESRV_ADDR")
    if not env:
        return DEFAULT_NAMESRV
    try:
        return namesrv_list(env)
    except argparse.ArgumentTypeError as exc:
        problem = str(exc)
        raise UsageError("NAMESRV_ADDR=" + (problem if problem.startswith(repr(env)) else f"{env!r}: {problem}")) \
            from None


#: the group `consume` uses without -g: one per process, removed from the brokers when the command ends
THROWAWAY_GROUP = "rocketmq_emulator_console_{pid}"


def _common_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """-n, --json and --timeout, which every client command takes."""
    parser.add_argument("-n", "--namesrvAddr", dest="namesrv", default=None, type=namesrv_list,
                        help="name server host:port, several separated by ';' (default $NAMESRV_ADDR or "
                             f"{DEFAULT_NAMESRV})")
    parser.add_argument("--json", action="store_true", help="machine-readable output; errors as JSON on stderr")
    parser.add_argument("--timeout", type=float_range(0.001, 3600), default=3.0,
                        help="request timeout in seconds (default 3)")
    parser.add_argument("--namespace", default=None, type=namespace_type,
                        help="the namespace of -t and -g (as a 4.x client's setNamespace: NS%%TOPIC, NS%%GROUP); "
                             "lists show only its resources")
    return parser


def namespace_type(text: str) -> str:
    """An argparse type: a namespace, as RocketMQ allows its characters (no `%`, which separates it)."""
    from rocketmq_emulator.protocol.topics import name_problem
    problem = name_problem("namespace", text)
    if problem is not None or "%" in text:
        raise argparse.ArgumentTypeError(problem or f"{text!r}: a namespace cannot hold '%' (it separates the "
                                                    f"namespace from the name)")
    return text


def in_namespace(args: argparse.Namespace) -> None:
    """With --namespace, the -t topic and -g group as the namespace's client names them (`ns%Orders`)."""
    if not getattr(args, "namespace", None):
        return
    from rocketmq_emulator.protocol.namespaces import wrap_namespace
    for attr in ("topic", "group"):
        value = getattr(args, attr, None)
        if isinstance(value, str) and value:
            setattr(args, attr, wrap_namespace(args.namespace, value))


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], command: str,
               help_text: str) -> argparse.ArgumentParser:
    """The parser of `command` (admin, produce, consume or health) in the command line's tree."""
    if command == "admin":
        from .admin_commands import add_admin_commands
        admin = sub.add_parser("admin", help=help_text, description="mqadmin-style commands")
        admin_sub = admin.add_subparsers(dest="admin_command", required=True, metavar="<command>")
        add_admin_commands(admin_sub, _common_options(OneLineParser(add_help=False)))
        return admin

    if command == "produce":
        p = _common_options(sub.add_parser("produce", help=help_text))
        p.add_argument("-t", "--topic", required=True)
        p.add_argument("-g", "--group", default="rocketmq_emulator_console_producer")
        p.add_argument("--tags")
        p.add_argument("-k", "--keys", help="space-separated keys")
        p.add_argument("-p", "--property", action="append", default=[], metavar="KEY=VALUE")
        p.add_argument("-m", "--message", help="the body; with --count, '{i}' becomes the message number")
        p.add_argument("-c", "--count", type=int_range(1), help="send this many messages built from --message")
        p.add_argument("--batch", type=int_range(1, 10_000), metavar="SIZE",
                       help="send in batches of SIZE (1-10000)")
        p.add_argument("--sharding-key", help="keep all messages in one queue, in order")
        p.add_argument("--delay-level", type=int_range(1, 1000), metavar="LEVEL",
                       help="deliver after the delay of this level of the broker's messageDelayLevel (default "
                            "levels: 1=1s 2=5s 3=10s 4=30s 5=1m ... 18=2h; a level past the last is the last)")
        return p

    if command == "health":
        p = _common_options(sub.add_parser(
            "health", help=help_text,
            description="Checks that the name server answers and that every broker it lists answers; prints one "
                        "line and exits 0 (healthy) or 1 (saying which part is down)."))
        p.add_argument("--broker", action="append", default=None, metavar="HOST:PORT", type=address,
                       help="check this broker address instead of the listed ones (repeatable); the name server "
                            "must still list a broker")
        return p

    p = _common_options(sub.add_parser(
        "consume", help=help_text,
        description="Print the messages of a topic as they arrive, and commit what was printed. Ctrl-C (or SIGTERM) "
                    "stops it within a second. Exit status: 0 when it stopped as asked (Ctrl-C, --max-messages, "
                    "--idle-timeout), 1 when the topic is unknown or the broker is lost, 2 for a usage error."))
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-g", "--group", default=None,
                   help="consumer group (default: a throwaway group named " + THROWAWAY_GROUP.format(pid="<pid>")
                        + ", removed from the brokers when the command ends)")
    selector = p.add_mutually_exclusive_group()
    selector.add_argument("-e", "--expression", default="*", help="tag expression (default *)")
    selector.add_argument("--sql", metavar="EXPRESSION",
                          help="a SQL92 filter on the messages' properties instead, e.g. \"region = 'eu' AND amount "
                               "> 100\" (the broker must run with --enable-property-filter true)")
    p.add_argument("--from-beginning", action="store_true", help="a new group starts at the first message")
    p.add_argument("--broadcast", action="store_true", help="broadcasting consumer (offsets in ~/.rocketmq_offsets)")
    p.add_argument("--max-messages", type=int_range(1), default=None, metavar="N",
                   help="print and commit exactly N messages, then exit (default: no limit)")
    p.add_argument("--idle-timeout", type=float_range(0.001), default=None, metavar="SECONDS",
                   help="exit after this many seconds without a message (default: never)")
    return p


def _emit(out: TextIO, args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        out.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
    elif text:
        out.write(text + "\n")
    out.flush()


async def run_admin(args: argparse.Namespace, out: TextIO) -> int:
    from rocketmq_emulator.client.admin import Admin
    in_namespace(args)
    async with Admin(args.namesrv, timeout=args.timeout) as admin:
        data, text = await args.run(admin, args)
    _emit(out, args, data, text)
    return 0


async def run_health(args: argparse.Namespace, out: TextIO) -> int:
    from rocketmq_emulator.client.health import check_health
    report = await check_health(args.namesrv, args.broker, args.timeout)
    if args.json:
        out.write(json.dumps({"healthy": report.healthy, "detail": report.line}) + "\n")
    else:
        out.write(report.line + "\n")
    return 0 if report.healthy else EXIT_FAILURE


class UsageError(Exception):
    """A command-line value that argparse's types cannot check alone."""


def _properties(items: list[str]) -> dict[str, str]:
    props = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--property {item!r}: use KEY=VALUE")
        props[key] = value
    return props


async def run_produce(args: argparse.Namespace, out: TextIO, stdin: TextIO) -> int:
    import asyncio
    import signal
    in_namespace(args)
    props = _properties(args.property)
    if args.delay_level is not None and args.batch:
        raise UsageError("--delay-level cannot be used with --batch: a broker refuses delayed batches")
    if args.count is not None:
        template = args.message if args.message is not None else "message {i}"
        bodies: Any = (template.replace("{i}", str(i)) for i in range(args.count))
    elif args.message is not None:
        bodies = [args.message]
    else:
        bodies = (line.rstrip("\n") for line in stdin if line.strip())
    progress = [0]
    # Ctrl-C by the loop's own handler, as `consume` takes it: the send loop stops at its next
    # message even when a cancellation got lost in an await (asyncio.run's SIGINT handling alone once let all
    # 1,000,000 sends of `produce -c` finish after SIGINT under load), and run() exits 130
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    interrupted = asyncio.Event()

    def interrupt() -> None:
        interrupted.set()
        if task is not None:
            task.cancel()
    handled = []
    try:
        loop.add_signal_handler(signal.SIGINT, interrupt)
        handled.append(signal.SIGINT)
    except (NotImplementedError, RuntimeError):  # (not the main thread: asyncio.run's own handling)
        pass
    try:
        await _send_all(args, out, bodies, props, progress, interrupted)
    except asyncio.CancelledError:
        if not interrupted.is_set():
            raise
        total = f" of {args.count}" if args.count is not None else ""
        print(f"interrupted: {progress[0]}{total} message(s) sent", file=sys.stderr)
        raise KeyboardInterrupt from None
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
    if not args.json:
        print(f"sent {progress[0]} message(s)", file=sys.stderr)
    return 0


async def _send_all(args: argparse.Namespace, out: TextIO, bodies: Any, props: dict[str, str],
                    progress: list[int], interrupted: asyncio.Event) -> None:
    """produce's sends; `progress[0]`: how many were sent so far; they stop once `interrupted` is set."""
    import asyncio

    from rocketmq_emulator.client.message import Message
    from rocketmq_emulator.client.producer import Producer
    sent = 0
    async with Producer(args.group, namesrv=args.namesrv, send_timeout=args.timeout) as producer:
        batch: list[Message] = []

        async def flush() -> None:
            nonlocal sent
            if not batch:
                return
            r = await producer.send_batch(args.topic, batch, sharding_key=args.sharding_key)
            sent += len(batch)
            progress[0] = sent
            _emit(out, args, {"status": r.status.value, "msgId": r.msg_id, "brokerName": r.broker_name,
                              "queueId": r.queue_id, "queueOffset": r.queue_offset, "count": len(batch)},
                  f"{r.status.value} {len(batch)} messages queue={r.broker_name}:{r.queue_id} "
                  f"first offset={r.queue_offset}")
            batch.clear()

        for body in bodies:
            if interrupted.is_set():  # Ctrl-C whose cancellation an awaited send swallowed
                raise asyncio.CancelledError
            msg = Message(args.topic, body, tags=args.tags, keys=args.keys.split() if args.keys else None,
                          properties=props, delay_level=args.delay_level or 0)
            if args.batch:
                batch.append(msg)
                if len(batch) >= args.batch:
                    await flush()
                continue
            r = await producer.send_message(msg, sharding_key=args.sharding_key)
            sent += 1
            progress[0] = sent
            _emit(out, args, {"status": r.status.value, "msgId": r.msg_id, "offsetMsgId": r.offset_msg_id,
                              "brokerName": r.broker_name, "queueId": r.queue_id, "queueOffset": r.queue_offset},
                  f"{r.status.value} offsetMsgId={r.offset_msg_id} uniqKey={r.msg_id} "
                  f"queue={r.broker_name}:{r.queue_id} offset={r.queue_offset}")
        await flush()


#: how often `consume` looks for new messages and for a stop request, and checks the broker when idle
_POLL_S, _HEALTH_CHECK_S = 0.2, 2.0


async def run_consume(args: argparse.Namespace, out: TextIO) -> int:
    in_namespace(args)
    import asyncio
    import signal

    from rocketmq_emulator.client.admin import Admin
    from rocketmq_emulator.client.push_consumer import (BROADCASTING, CLUSTERING, FIRST_OFFSET, LAST_OFFSET,
                                                        PushConsumer)
    throwaway = args.group is None
    group = THROWAWAY_GROUP.format(pid=os.getpid()) if throwaway else args.group
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass
    async with Admin(args.namesrv, timeout=args.timeout) as admin:
        await admin.topic_route(args.topic)  # an unknown topic: NoRouteError, before anything is registered
        consumer = PushConsumer(group, namesrv=args.namesrv,
                                message_model=BROADCASTING if args.broadcast else CLUSTERING,
                                consume_from=FIRST_OFFSET if args.from_beginning else LAST_OFFSET)
        if args.sql is not None:
            consumer.subscribe(args.topic, args.sql, expression_type="SQL92")
        else:
            consumer.subscribe(args.topic, args.expression)
        try:
            async with consumer:
                await _consume_until_done(args, out, consumer, admin, stop)
        finally:
            if throwaway:
                await _forget_group(admin, group)
    return 0


async def _consume_until_done(args: argparse.Namespace, out: TextIO, consumer: PushConsumer, admin: Admin,
                              stop: asyncio.Event) -> None:
    """Print and ack messages until stopped, N were printed, or the idle timeout passed. Only printed messages
    are acked, so only they are committed. While idle, the broker is checked so a lost one ends the command."""
    from .admin_commands import message_json
    n = 0
    idle_since = last_check = time.monotonic()
    while not stop.is_set():
        wanted = 64 if args.max_messages is None else min(64, args.max_messages - n)
        batch = await consumer.getmany(timeout=_POLL_S, max_records=wanted)
        now = time.monotonic()
        if not batch:
            if args.idle_timeout is not None and now - idle_since >= args.idle_timeout:
                return
            if now - last_check >= _HEALTH_CHECK_S:
                last_check = now
                await admin.topic_status(args.topic)  # BrokerUnreachableError when the broker is gone
            continue
        idle_since = last_check = now
        for msgs in batch.values():
            for m in msgs:
                if args.json:
                    _emit(out, args, message_json(m), "")
                else:
                    out.write(f"{m.topic} {m.broker_name}:{m.queue_id}@{m.queue_offset} msgId={m.msg_id} "
                              f"tags={m.tags or ''} keys={m.keys or ''} | {m.text}\n")
                consumer.ack(m)
                n += 1
        out.flush()
        if args.max_messages is not None and n >= args.max_messages:
            return


async def _forget_group(admin: Admin, group: str) -> None:
    """Remove a throwaway group's subscription, offsets and retry topic from the brokers (best effort)."""
    from rocketmq_emulator.protocol.topics import retry_topic
    try:
        await admin.delete_subscription_group(group, remove_offset=True)
        await admin.delete_topic(retry_topic(group))
    except ClientError:
        pass


def run(args: argparse.Namespace, *, stdout: TextIO | None = None, stdin: TextIO | None = None) -> int:
    """Run a parsed client command. Exit status: 0 done, 1 the command failed (one line on stderr saying why),
    2 a usage error, 130 Ctrl-C during produce or an admin command (consume stops cleanly on Ctrl-C and exits
    0), 141 the reader of the output went away (`| head`), quietly."""
    out = stdout or sys.stdout
    as_json = getattr(args, "json", False)
    import asyncio
    try:
        if getattr(args, "namesrv", "") is None:
            args.namesrv = _namesrv_default()
        if args.command == "admin":
            return asyncio.run(run_admin(args, out))
        if args.command == "produce":
            return asyncio.run(run_produce(args, out, stdin or sys.stdin))
        if args.command == "consume":
            return asyncio.run(run_consume(args, out))
        if args.command == "health":
            return asyncio.run(run_health(args, out))
    except UsageError as exc:
        report_error(str(exc), "USAGE", as_json=as_json)
        return EXIT_USAGE
    except BrokerResponseError as exc:
        report_error(str(exc), getattr(exc.code, "name", str(exc.code)), as_json=as_json)
        return EXIT_FAILURE
    except ClientError as exc:
        report_error(str(exc), type(exc).__name__, as_json=as_json)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`consume ... | head -3`): stop quietly, as coreutils do
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE
    return EXIT_USAGE


#: a command whose output's reader went away: 128 + SIGPIPE, what a shell shows for coreutils in that case
EXIT_BROKEN_PIPE = 141


def _stdout_to_devnull() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush of what is still buffered
    does not fail on the closed pipe again (and print "Exception ignored")."""
    import os
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
