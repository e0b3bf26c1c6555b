#!/usr/bin/env python
"""Drive the official C++ RocketMQ client (PyPI `rocketmq==0.4.4`, module `rocketmq.client`) like a user.

Run as a subprocess; prints one JSON object per line on stdout for each event, flushed at once:

    python cpp_driver.py produce --namesrv 127.0.0.1:9876 --topic T --group G --count 3 [--tags A] [--keys k{i}]
                                 [--body-prefix "msg "] [--property K=V ...] [--batch SIZE] [--send-timeout-ms MS]
        -> {"event":"sent","i":..,"status":"OK","msg_id":..,"offset":..} | {"event":"send_error","i":..,"error":..}
           a send that failed only inside the client (see ClientLog) is repeated after {"event":"send_retry",..}
    python cpp_driver.py push --namesrv ... --topic T --group G [--model clustering|broadcasting]
                              [--expression '*'] [--duration S] [--expect N] [--fail-first K] [--fail-mode raise|status]
                              [--instance-name X] [--show-property NAME ...]
        -> {"event":"started",..}, {"event":"received",..} per delivery (including failed ones, "failed":true)
    python cpp_driver.py pull --namesrv ... --topic T --group G [--expression '*'] [--max-num 32] [--duration S]
                              [--show-property NAME ...]
        -> {"event":"pulled",..} per message, then "offsets" in the final "done" event
    every scenario ends with {"event":"done",...}; a fatal error prints {"event":"error",...} and exits 2.

Message i has body `<body-prefix><i>`; `{i}` in `--keys`, `--tags` and `--property` values becomes i.
The driver changes nothing global: the caller picks HOME (the library writes $HOME/logs/rocketmq-cpp and $HOME/.rocketmq_offsets).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
import traceback

from rocketmq.client import Message, MessageModel, Producer, PullConsumer, PushConsumer, RecvMessage
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import _CConsumeStatus as ConsumeStatus, dll

#: Properties copied into "received"/"pulled" events when present.
SELECTED_PROPERTIES = ("UNIQ_KEY", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID",
                       "ORIGIN_MESSAGE_ID", "RECONSUME_TIME", "MAX_RECONSUME_TIMES", "MIN_OFFSET", "MAX_OFFSET",
                       "PGROUP", "TRAN_MSG")

_out_lock = threading.Lock()


def emit(event: str, **fields) -> None:
    line = json.dumps({"event": event, **fields, "t": round(time.time(), 3)}, default=str)
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def describe(msg, extra_properties=()) -> dict:
    """The fields of a `RecvMessage` a test may look at."""
    props = {}
    for name in (*SELECTED_PROPERTIES, *extra_properties):
        value = _text(msg.get_property(name))
        if value:
            props[name] = value
    return {"topic": msg.topic, "tags": _text(msg.tags), "keys": _text(msg.keys), "body": _text(msg.body),
            "queue_id": msg.queue_id, "queue_offset": msg.queue_offset, "msg_id": msg.id,
            "reconsume_times": msg.reconsume_times, "born_timestamp": msg.born_timestamp,
            "store_timestamp": msg.store_timestamp, "properties": props}


# --------------------------------------------------------------------------------------------------
class ClientLog:
    """This process's own C++ client log ($HOME/logs/rocketmq-cpp/<pid>_*; the library flushes every line).

    The client's sendSync tries up to five queues and, when all fail, raises "No route info of this topic"
    whatever the cause. One cause never reaches a broker: another client thread holds the transport table
    lock (it is connecting), and the client's timed lock gives up at once ("GetTransport of:... get
    timed_mutex timeout"); the last attempt may find the lock free and the connection not yet up. Such a send is
    safe to repeat; a broker's error answer is not retried here.
    """

    def __init__(self) -> None:
        self.folder = os.path.join(os.environ.get("HOME", "."), "logs", "rocketmq-cpp")
        self.offsets: dict[str, int] = {}

    def _files(self) -> list[str]:
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        return sorted(os.path.join(self.folder, n) for n in names if n.startswith(f"{os.getpid()}_"))

    def skip_to_end(self) -> None:
        self.offsets = {path: os.path.getsize(path) for path in self._files()}

    def new_lines(self) -> list[str]:
        lines = []
        for path in self._files():
            with open(path, "rb") as f:
                f.seek(self.offsets.get(path, 0))
                lines += f.read().decode("utf-8", "replace").splitlines()
        return lines

    def only_transport_lock_timeouts(self) -> bool:
        lines = self.new_lines()
        lock_timeouts = sum("get timed_mutex timeout" in line for line in lines)
        failed_attempts = sum("send failed of times" in line for line in lines)
        # the last attempt can also fail inside the client without a lock timeout: the lock was free, but the
        # connection the other thread opened was not up yet (its "try to connect" is in the same lines)
        connecting = any("try to connect to fd" in line for line in lines)
        return lock_timeouts > 0 and (lock_timeouts == failed_attempts
                                      or (connecting and lock_timeouts == failed_attempts - 1))


def produce(args) -> int:
    producer = Producer(args.group, timeout=args.send_timeout_ms)
    producer.set_namesrv_addr(args.namesrv)
    producer.start()
    emit("started", role="producer", group=args.group, topic=args.topic)

    def build(i: int) -> Message:
        msg = Message(args.topic)
        if args.tags:
            msg.set_tags(args.tags.replace("{i}", str(i)))
        if args.keys:
            msg.set_keys(args.keys.replace("{i}", str(i)))
        for item in args.property:
            key, _, value = item.partition("=")
            msg.set_property(key, value.replace("{i}", str(i)))
        msg.set_body(f"{args.body_prefix}{i}")
        return msg

    ok = failed = 0
    step = args.batch or 1
    log = ClientLog()
    for first in range(0, args.count, step):
        indexes = list(range(first, min(first + step, args.count)))
        for attempt in range(1, 4):
            log.skip_to_end()
            try:
                if args.batch:
                    result = producer.send_batch([build(i) for i in indexes])
                else:
                    result = producer.send_sync(build(first))
                break
            except Exception as exc:  # noqa: BLE001 - report every client error as an event
                error = f"{type(exc).__name__}: {exc}"
                if attempt < 3 and log.only_transport_lock_timeouts():
                    emit("send_retry", i=first, n=len(indexes), error=error,
                         reason="every attempt failed inside the client: transport table lock busy")
                    time.sleep(0.2)
                    continue
                result = None
                failed += len(indexes)
                emit("send_error", i=first, n=len(indexes), error=error)
                break
        if result is None:
            continue
        ok += len(indexes) if result.status.name == "OK" else 0
        emit("sent", i=first, n=len(indexes), status=result.status.name, msg_id=result.msg_id,
             offset=result.offset)
    if args.linger:  # a live producer for admin commands; SIGTERM (`DriverHandle.stop()`) ends it early
        emit("sent_all", sent_ok=ok)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        deadline = time.monotonic() + args.linger
        while not stop.wait(0.1) and time.monotonic() < deadline:
            pass
    producer.shutdown()
    emit("done", scenario="produce", sent_ok=ok, send_failed=failed)
    return 0


# --------------------------------------------------------------------------------------------------
def push(args) -> int:
    model = MessageModel.BROADCASTING if args.model == "broadcasting" else MessageModel.CLUSTERING
    consumer = PushConsumer(args.group, message_model=model)
    consumer.set_namesrv_addr(args.namesrv)
    if args.instance_name:
        consumer.set_instance_name(args.instance_name)
    lock = threading.Lock()
    attempts: dict[str, int] = {}  # per message (UNIQ_KEY, else msg id): deliveries so far
    done_keys: set[str] = set()  # messages consumed successfully at least once
    counts = {"received": 0, "failed": 0, "succeeded": 0}
    stop = threading.Event()  # set by --expect being reached or by SIGTERM
    signalled = []
    # SIGTERM (`DriverHandle.stop()`) ends the run early but still cleanly (shutdown, "done")
    signal.signal(signal.SIGTERM, lambda *_: (signalled.append(True), stop.set()))

    def on_message(msg) -> None:
        info = describe(msg, args.show_property)
        key = info["properties"].get("UNIQ_KEY") or info["msg_id"]
        with lock:
            attempt = attempts[key] = attempts.get(key, 0) + 1
            fail = attempt <= args.fail_first
            counts["received"] += 1
            counts["failed" if fail else "succeeded"] += 1
            if not fail:
                done_keys.add(key)
            if args.expect and len(done_keys) >= args.expect:
                stop.set()
        emit("received", attempt=attempt, failed=fail, **info)
        if fail:
            raise RuntimeError(f"fail-first: attempt {attempt} of {key}")

    if args.fail_mode == "raise":  # what a user does: the wrapper maps an exception to RECONSUME_LATER
        consumer.subscribe(args.topic, on_message, expression=args.expression)
    else:
        # The wrapper re-raises inside the ctypes callback, so ctypes hands the library an unset return
        # value (in practice non-zero = RECONSUME_LATER, but undefined). "status" returns the code itself.
        def on_message_status(_consumer, msg_handle) -> int:
            try:
                on_message(RecvMessage(msg_handle))
            except RuntimeError:
                return ConsumeStatus.RECONSUME_LATER.value
            return ConsumeStatus.CONSUME_SUCCESS.value

        ffi_check(dll.Subscribe(consumer._handle, args.topic.encode(), args.expression.encode()))
        consumer._register_callback(on_message_status)
    consumer.start()
    emit("started", role="push", group=args.group, topic=args.topic, model=args.model,
         expression=args.expression)
    deadline = time.monotonic() + args.duration
    while not stop.wait(0.1) and time.monotonic() < deadline:  # short waits: signal handlers run in between
        pass
    consumer.shutdown()
    with lock:
        emit("done", scenario="push", expected_reached=bool(args.expect) and len(done_keys) >= args.expect,
             stopped_by_signal=bool(signalled), distinct=len(attempts), distinct_succeeded=len(done_keys),
             **counts)
    return 0


# --------------------------------------------------------------------------------------------------
def pull(args) -> int:
    consumer = PullConsumer(args.group)
    consumer.set_namesrv_addr(args.namesrv)
    consumer.start()
    emit("started", role="pull", group=args.group, topic=args.topic, expression=args.expression)
    count = [0]

    def run() -> None:
        for msg in consumer.pull(args.topic, expression=args.expression, max_num=args.max_num):
            count[0] += 1
            emit("pulled", **describe(msg, args.show_property))

    # `PullConsumer.pull` spins forever on a broker error (BROKER_TIMEOUT never advances), so it runs in a
    # thread with a deadline. On timeout the library may be mid-call: report and leave without shutdown.
    errors: list[str] = []
    worker = threading.Thread(target=lambda: _capture(run, errors), daemon=True)
    worker.start()
    worker.join(args.duration)
    offsets = final_offsets(args.topic)
    if worker.is_alive():
        emit("error", error=f"pull did not finish within {args.duration}s", pulled=count[0], offsets=offsets)
        os._exit(3)
    consumer.shutdown()
    if errors:
        emit("error", error=errors[0], pulled=count[0], offsets=offsets)
        return 2
    emit("done", scenario="pull", pulled=count[0], offsets=offsets)
    return 0


def final_offsets(topic: str) -> dict[str, int]:
    """Next offset per queue id, from `PullConsumer.offset_table` (keys `"<topic>@<qid>"`; under Python 3 the
    topic part is the repr of the C char array, e.g. `b'T'@0`)."""
    out = {}
    for key, value in PullConsumer.offset_table.items():
        match = re.fullmatch(r"(?:b'(.*)'|(.*))@(\d+)", key)
        if match and (match[1] if match[1] is not None else match[2]) == topic:
            out[match[3]] = value
    return out


def _capture(fn, errors: list) -> None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        errors.append(f"{type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="scenario", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--namesrv", required=True, help="host:port of the name server")
    common.add_argument("--topic", default="TopicTest")
    common.add_argument("--group", default="GID_cpp_driver")

    p = sub.add_parser("produce", parents=[common])
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--tags", default="")
    p.add_argument("--keys", default="")
    p.add_argument("--body-prefix", default="cpp message #")
    p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--batch", type=int, default=0, metavar="SIZE", help="send_batch in groups of SIZE")
    # 15 s, not the client's 3 s: on a busy machine the first send (route lookup, connect) can take longer, and
    # the C++ client does not retry a send that timed out
    p.add_argument("--send-timeout-ms", type=int, default=15000)
    p.add_argument("--linger", type=float, default=0.0, help="stay up this many seconds after the sends")

    consume = argparse.ArgumentParser(add_help=False)
    consume.add_argument("--expression", default="*", help="tag expression")
    consume.add_argument("--show-property", action="append", default=[], metavar="NAME",
                         help="also report this message property (besides the standard ones)")

    p = sub.add_parser("push", parents=[common, consume])
    p.add_argument("--model", choices=("clustering", "broadcasting"), default="clustering")
    p.add_argument("--duration", type=float, default=10.0, help="seconds to consume (upper bound)")
    p.add_argument("--expect", type=int, default=0, help="stop once N distinct messages were consumed OK")
    p.add_argument("--fail-first", type=int, default=0, help="fail the first K deliveries of each message (RECONSUME_LATER)")
    p.add_argument("--fail-mode", choices=("raise", "status"), default="raise",
                   help="how --fail-first fails: raise in the callback (default, as a user does) or return "
                        "RECONSUME_LATER through the wrapper's private _register_callback (well-defined)")
    p.add_argument("--instance-name", default="")

    p = sub.add_parser("pull", parents=[common, consume])
    p.add_argument("--max-num", type=int, default=32)
    p.add_argument("--duration", type=float, default=20.0, help="deadline for the whole pull pass")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    emit("start", scenario=args.scenario, pid=os.getpid(), namesrv=args.namesrv)
    try:
        return {"produce": produce, "push": push, "pull": pull}[args.scenario](args)
    except Exception as exc:  # noqa: BLE001
        emit("error", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
        return 2


if __name__ == "__main__":
    sys.exit(main())
