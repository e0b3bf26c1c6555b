#!/usr/bin/env python
"""Drive the official RocketMQ 5.x Python client (PyPI `rocketmq-python-client==5.1.2`, module `rocketmq`) like a
user. It runs in a virtual environment of its own (integration_tests/py5_client.py makes it): the package's
import name clashes with the C++ client's, and its generated stubs with any other copy of RocketMQ's protos.

Every command also takes --namespace NS (the client's ClientConfiguration namespace). One JSON object per line on
stdout, flushed at once, each with its time `t` (epoch seconds):

    produce --endpoint H:P --topic T --count N [--tag A] [--keys 'k{i}'] [--prop K=V ...] [--message-group G]
            [--delay-s S] [--transaction commit|rollback|unknown] [--checker commit|rollback] [--hold S] [--tls]
        -> started {ms}, sent {i, message_id, [transaction_id]} | send_error {i, error}, checked {message_id},
           done {shutdown_ms}
    simple  --endpoint H:P --topic T --group G [--expect N] [--duration S] [--invisible S] [--batch N]
            [--ack all|none|after-change] [--change-to S] [--expression '*'] [--await S] [--idle]
        -> started {ms}, received {message_id, body, tag, keys, props, attempt, topic, group, delivery_ts}
           per message, changed {message_id}, empty {waited} per empty receive, done {shutdown_ms}
    push    --endpoint H:P --topic T --group G [--expect N] [--duration S] [--fail-first K] [--expression '*']
            [--work-s S]
        -> started {ms}, received {..., "failed": bool}, worked {message_id} (with --work-s), done {shutdown_ms}

Message i has body `m<i>` (or `--body-prefix`); `{i}` in --keys and --prop values becomes i. The caller picks
HOME: the client logs only to $HOME/logs/rocketmq_python/.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import traceback

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message, MessageListener,
                      Producer, PushConsumer, SimpleConsumer, TransactionChecker, TransactionResolution)

_lock = threading.Lock()


def emit(event: str, **fields: object) -> None:
    with _lock:
        print(json.dumps({"event": event, "t": round(time.time(), 3), **fields}, default=str), flush=True)


def config(args: argparse.Namespace) -> ClientConfiguration:
    return ClientConfiguration(args.endpoint, Credentials(), namespace=args.namespace, request_timeout=10)


def describe(msg: Message, group: str = "") -> dict:
    return {"message_id": msg.message_id, "body": msg.body.decode(errors="replace"), "tag": msg.tag,
            "keys": sorted(msg.keys or ()), "props": dict(msg.properties or {}), "attempt": msg.delivery_attempt,
            "topic": msg.topic, "namespace": msg.namespace or "", "message_group": msg.message_group,
            "delivery_ts": msg.delivery_timestamp, "group": group}


class Checker(TransactionChecker):
    def __init__(self, answer: str) -> None:
        self.answer = answer

    def check(self, message: Message) -> TransactionResolution:
        emit("checked", message_id=message.message_id, body=message.body.decode(errors="replace"))
        return TransactionResolution.COMMIT if self.answer == "commit" else TransactionResolution.ROLLBACK


def produce(args: argparse.Namespace) -> None:
    t0 = time.monotonic()
    # the client refuses transactional sends without a checker: one that commits unless told otherwise
    checker = Checker(args.checker or "commit") if args.checker or args.transaction else None
    producer = Producer(config(args), (args.topic,), checker, tls_enable=args.tls)
    producer.startup()
    emit("started", ms=round((time.monotonic() - t0) * 1000))
    for i in range(args.count):
        msg = Message()
        msg.topic = args.topic
        msg.body = f"{args.body_prefix}{i}".encode()
        if args.tag:
            msg.tag = args.tag.replace("{i}", str(i))
        if args.keys:
            msg.keys = args.keys.replace("{i}", str(i))
        for prop in args.prop or ():
            k, _, v = prop.partition("=")
            msg.add_property(k, v.replace("{i}", str(i)))
        if args.message_group:
            msg.message_group = args.message_group
        if args.delay_s is not None:
            msg.delivery_timestamp = int(time.time() + args.delay_s)  # 5.1.2 takes epoch seconds (see README)
        try:
            if args.transaction:
                tx = producer.begin_transaction()
                receipt = producer.send(msg, tx)
                emit("sent", i=i, message_id=receipt.message_id, transaction_id=receipt.transaction_id)
                if args.transaction == "commit":
                    tx.commit()
                elif args.transaction == "rollback":
                    tx.rollback()
            else:
                receipt = producer.send(msg)
                emit("sent", i=i, message_id=receipt.message_id, offset=receipt.offset)
        except Exception as exc:  # noqa: BLE001 - reported as an event
            emit("send_error", i=i, error=f"{type(exc).__name__}: {exc}")
    if args.hold:
        time.sleep(args.hold)
    t1 = time.monotonic()
    producer.shutdown()
    emit("done", shutdown_ms=round((time.monotonic() - t1) * 1000))


def simple(args: argparse.Namespace) -> None:
    t0 = time.monotonic()
    consumer = SimpleConsumer(config(args), args.group, {args.topic: FilterExpression(args.expression)},
                              await_duration=args.await_s, tls_enable=args.tls)
    consumer.startup()
    emit("started", ms=round((time.monotonic() - t0) * 1000))
    received = 0
    changed: set[str] = set()
    deadline = time.monotonic() + args.duration
    if args.idle:  # online (heartbeating) without receiving, for --duration
        time.sleep(args.duration)
    while not args.idle and time.monotonic() < deadline and (args.expect is None or received < args.expect):
        began = time.monotonic()
        try:
            msgs = consumer.receive(args.batch, args.invisible)
        except Exception as exc:  # noqa: BLE001
            emit("receive_error", error=f"{type(exc).__name__}: {exc}")
            time.sleep(0.5)
            continue
        if not msgs:
            emit("empty", waited=round(time.monotonic() - began, 2))
            continue
        for msg in msgs:
            received += 1
            emit("received", **describe(msg, args.group))
            if args.ack == "all" or (args.ack == "after-change" and msg.message_id in changed):
                consumer.ack(msg)
            elif args.ack == "after-change":
                consumer.change_invisible_duration(msg, args.change_to)
                changed.add(msg.message_id)
                emit("changed", message_id=msg.message_id)
    t1 = time.monotonic()
    consumer.shutdown()
    emit("done", shutdown_ms=round((time.monotonic() - t1) * 1000))


def push(args: argparse.Namespace) -> None:
    seen: dict[str, int] = {}
    ok = threading.Event()
    count = [0]

    class Listener(MessageListener):
        def consume(self, message: Message) -> ConsumeResult:
            n = seen[message.message_id] = seen.get(message.message_id, 0) + 1
            failed = n <= args.fail_first
            emit("received", failed=failed, **describe(message, args.group))
            if args.work_s:  # a long consumption: the proxy must renew the message meanwhile
                time.sleep(args.work_s)
                emit("worked", message_id=message.message_id)
            if not failed:
                count[0] += 1
                if args.expect is not None and count[0] >= args.expect:
                    ok.set()
            return ConsumeResult.FAILURE if failed else ConsumeResult.SUCCESS

    t0 = time.monotonic()
    consumer = PushConsumer(config(args), args.group, Listener(), {args.topic: FilterExpression(args.expression)},
                            tls_enable=args.tls)
    consumer.startup()
    emit("started", ms=round((time.monotonic() - t0) * 1000))
    ok.wait(args.duration)
    t1 = time.monotonic()
    consumer.shutdown()
    emit("done", shutdown_ms=round((time.monotonic() - t1) * 1000))


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("produce", "simple", "push"):
        p = sub.add_parser(name)
        p.add_argument("--endpoint", required=True)
        p.add_argument("--topic", required=True)
        p.add_argument("--group", default="G5")
        p.add_argument("--expression", default="*")
        p.add_argument("--expect", type=int)
        p.add_argument("--duration", type=float, default=30.0)
        p.add_argument("--tls", action="store_true", help="TLS (trusting $GRPC_DEFAULT_SSL_ROOTS_FILE_PATH)")
        p.add_argument("--namespace", default="", help="the client's namespace (ClientConfiguration)")
    p = sub.choices["produce"]
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--body-prefix", default="m")
    p.add_argument("--tag")
    p.add_argument("--keys")
    p.add_argument("--prop", action="append")
    p.add_argument("--message-group")
    p.add_argument("--delay-s", type=float)
    p.add_argument("--transaction", choices=("commit", "rollback", "unknown"))
    p.add_argument("--checker", choices=("commit", "rollback"))
    p.add_argument("--hold", type=float, default=0.0)
    p = sub.choices["simple"]
    p.add_argument("--invisible", type=int, default=15)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--ack", choices=("all", "none", "after-change"), default="all")
    p.add_argument("--change-to", type=int, default=1)
    p.add_argument("--await", dest="await_s", type=int, default=20)
    p.add_argument("--idle", action="store_true", help="stay online for --duration without receiving")
    sub.choices["push"].add_argument("--fail-first", type=int, default=0)
    sub.choices["push"].add_argument("--work-s", type=float, default=0.0, help="each message takes this long")
    args = parser.parse_args()
    try:
        {"produce": produce, "simple": simple, "push": push}[args.command](args)
    except Exception as exc:  # noqa: BLE001 - the test reads it
        emit("error", error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc())
        sys.exit(2)


if __name__ == "__main__":
    main()
