"""`rocketmq-emulator admin <command>`: mqadmin's command names and flags (their arguments, and what each runs
with the client's Admin), readable tables by default and `--json` for scripts."""

from __future__ import annotations

import argparse
import datetime as _dt
import re
from typing import Any, Awaitable, Callable

from rocketmq_emulator.client.admin import Admin
from rocketmq_emulator.client.errors import InvalidArgumentError
from rocketmq_emulator.client.message import ReceivedMessage
from rocketmq_emulator.protocol.admin_bodies import ConsumerOffsetSerializeWrapper, SubscriptionGroupConfig
from rocketmq_emulator.protocol.bodies import MessageQueue
from rocketmq_emulator.protocol.errors import ProtocolError
from rocketmq_emulator.protocol.namespaces import namespace_of

from .args import address, boolean, float_range, int_range


#: queue counts a topic may have here (RocketMQ has no hard limit; thousands of queues make no sense for tests)
queue_nums = int_range(1, 1024)
timestamp_ms = int_range(0, what=" ms since the epoch")


def perm(text: str) -> int:
    """mqadmin's -p: 2 (write), 4 (read) or 6 (read and write)."""
    value = int_range()(text)
    if value not in (2, 4, 6):
        raise argparse.ArgumentTypeError(f"{value}: use 2 (write only), 4 (read only) or 6 (read and write)")
    return value


def parse_timestamp(text: str) -> int:
    """mqadmin's -s: `now` (-1), milliseconds, or yyyy-MM-dd#HH:mm:ss:SSS (local time)."""
    text = text.strip()
    if text.lower() == "now":
        return -1
    if re.fullmatch(r"\d+", text):
        return int(text)
    try:
        return int(_dt.datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f").timestamp() * 1000)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: use now, milliseconds, or yyyy-MM-dd#HH:mm:ss:SSS") from None


def fmt_time(ms: int) -> str:
    if ms <= 0:
        return "N/A"
    return _dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)


def mq_json(mq: MessageQueue) -> dict[str, Any]:
    return {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id}


def message_json(m: ReceivedMessage) -> dict[str, Any]:
    return {"msgId": m.msg_id, "offsetMsgId": m.offset_msg_id, "topic": m.topic, "brokerName": m.broker_name,
            "queueId": m.queue_id, "queueOffset": m.queue_offset, "tags": m.tags, "keys": m.keys,
            "bornTimestamp": m.born_timestamp, "storeTimestamp": m.store_timestamp,
            "bornHost": f"{m.born_host}:{m.born_port}", "storeHost": f"{m.store_host}:{m.store_port}",
            "reconsumeTimes": m.reconsume_times, "properties": dict(m.properties),
            "body": m.body.decode("utf-8", "replace")}


# -- commands: each returns (data for --json, text) -------------------------------------------------------
def _message_type_attribute(text: str) -> str:
    kind = text.removeprefix("+message.type=")
    if kind == text or kind not in ("NORMAL", "FIFO", "DELAY", "TRANSACTION"):
        raise argparse.ArgumentTypeError("expected +message.type=NORMAL|FIFO|DELAY|TRANSACTION")
    return kind


async def update_topic(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    addrs = await admin.create_topic(a.topic, a.read_queue_nums, a.write_queue_nums, perm=a.perm, order=a.order,
                                     cluster=a.cluster, broker_addr=a.broker_addr, message_type=a.attributes)
    data = {"topic": a.topic, "readQueueNums": a.read_queue_nums, "writeQueueNums": a.write_queue_nums,
            "perm": a.perm, "order": a.order, "brokers": addrs}
    return data, "\n".join(f"create topic to {addr} success." for addr in addrs) + \
        f"\nTopicConfig [topicName={a.topic}, readQueueNums={a.read_queue_nums}, writeQueueNums=" \
        f"{a.write_queue_nums}, perm={a.perm}, order={str(a.order).lower()}]"


async def delete_topic(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    if a.topic not in await admin.topic_list():
        raise InvalidArgumentError(f"topic {a.topic!r} does not exist, nothing was deleted (admin topicList "
                                   f"lists the topics)")
    addrs = await admin.delete_topic(a.topic, cluster=a.cluster)
    return {"topic": a.topic, "brokers": addrs}, f"delete topic [{a.topic}] from cluster " \
                                                f"[{a.cluster or 'all'}] success ({', '.join(addrs)})."


async def topic_list(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    """The topics, grouped by namespace (those without one first); with --namespace, only that one's."""
    topics = sorted(await admin.topic_list(), key=lambda t: (namespace_of(t), t))
    if a.namespace:
        topics = [t for t in topics if namespace_of(t) == a.namespace]
    by_namespace: dict[str, list[str]] = {}
    for t in topics:
        by_namespace.setdefault(namespace_of(t), []).append(t)
    return {"topicList": topics, "byNamespace": by_namespace}, "\n".join(topics)


async def topic_route(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    route = await admin.topic_route(a.topic)
    data = {"brokerDatas": [{"cluster": b.cluster, "brokerName": b.broker_name,
                             "brokerAddrs": {str(k): v for k, v in sorted(b.broker_addrs.items())}}
                            for b in route.broker_datas],
            "queueDatas": [{"brokerName": q.broker_name, "readQueueNums": q.read_queue_nums,
                            "writeQueueNums": q.write_queue_nums, "perm": q.perm} for q in route.queue_datas]}
    rows = [[q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm] for q in route.queue_datas]
    brokers = [[b.cluster, b.broker_name, bid, addr] for b in route.broker_datas
               for bid, addr in sorted(b.broker_addrs.items())]
    return data, table(["#Broker Name", "#Read Queues", "#Write Queues", "#Perm"], rows) + "\n\n" + \
        table(["#Cluster", "#Broker Name", "#BID", "#Addr"], brokers)


async def topic_status(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    status = await admin.topic_status(a.topic)
    data = [{**mq_json(mq), "minOffset": t.min_offset, "maxOffset": t.max_offset,
             "lastUpdateTimestamp": t.last_update_timestamp} for mq, t in status.items()]
    rows = [[mq.broker_name, mq.queue_id, t.min_offset, t.max_offset, fmt_time(t.last_update_timestamp)]
            for mq, t in status.items()]
    return data, table(["#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"], rows)


def progress_figures(w: Any) -> tuple[int, int, int]:
    """(pulled, inflight, ready) of a queue: inflight = pulled - committed, ready = max - pulled (never
    negative). A broker without 5.x's pull offset gives pulled = committed."""
    pulled = w.pull_offset if w.pull_offset is not None else w.consumer_offset
    pulled = min(max(pulled, w.consumer_offset), max(w.broker_offset, w.consumer_offset))
    return pulled, pulled - w.consumer_offset, max(0, w.broker_offset - pulled)


async def _progress(admin: Admin, group: str) -> tuple[Any, list[list[Any]], int, float]:
    stats = await admin.consumer_progress(group)
    data, rows = [], []
    for mq, w in stats.offset_table.items():
        pulled, inflight, ready = progress_figures(w)
        data.append({**mq_json(mq), "brokerOffset": w.broker_offset, "consumerOffset": w.consumer_offset,
                     "pullOffset": pulled, "diff": w.broker_offset - w.consumer_offset, "inflight": inflight,
                     "ready": ready, "lastTimestamp": w.last_timestamp})
        rows.append([mq.topic, mq.broker_name, mq.queue_id, w.broker_offset, w.consumer_offset, pulled,
                     w.broker_offset - w.consumer_offset, inflight, ready, fmt_time(w.last_timestamp)])
    return data, rows, stats.total_diff(), stats.consume_tps


async def consumer_progress(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    if a.group:
        data, rows, diff, tps = await _progress(admin, a.group)
        text = table(["#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Pulled", "#Diff",
                      "#Inflight", "#Ready", "#LastTime"], rows)
        return {"group": a.group, "consumeTps": tps, "diffTotal": diff, "offsets": data}, \
            f"{text}\n\nConsume TPS: {tps:.2f}\nDiff Total: {diff}"
    out: list[dict[str, Any]] = []
    rows = []
    groups = sorted(await admin.consumer_groups(), key=lambda g: (namespace_of(g), g))
    for group in (g for g in groups if not a.namespace or namespace_of(g) == a.namespace):
        try:
            _, _, diff, tps = await _progress(admin, group)
        except Exception as exc:  # noqa: BLE001 - mqadmin skips groups it cannot read
            out.append({"group": group, "error": str(exc)})
            continue
        out.append({"group": group, "consumeTps": tps, "diffTotal": diff})
        rows.append([group, f"{tps:.2f}", diff])
    return out, table(["#Group", "#TPS", "#Diff Total"], rows)


async def consumer_connection(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    cc = await admin.consumer_connection(a.group)
    conns = [{"clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language.name,
              "version": c.version} for c in cc.connection_set]
    subs = {t: s.sub_string for t, s in sorted(cc.subscription_table.items())}
    data = {"group": a.group, "connections": conns, "subscriptions": subs, "consumeType": cc.consume_type.name,
            "messageModel": cc.message_model.name, "consumeFromWhere": cc.consume_from_where.name}
    text = table(["#", "#ClientId", "#ClientAddr", "#Language", "#Version"],
                 [[i + 1, c["clientId"], c["clientAddr"], c["language"], c["version"]] for i, c in enumerate(conns)])
    text += "\n\nBelow is subscription:\n" + table(["#", "#Topic", "#SubExpression"],
                                                   [[i + 1, t, e] for i, (t, e) in enumerate(subs.items())])
    text += f"\n\nConsumeType: {cc.consume_type.name}\nMessageModel: {cc.message_model.name}\n" \
            f"ConsumeFromWhere: {cc.consume_from_where.name}"
    return data, text


async def reset_offset_by_time(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    result = await admin.reset_offset_by_timestamp(a.group, a.topic, a.timestamp, force=a.force, cpp=a.cplus)
    rows: list[dict[str, Any]] = [{**mq_json(r.queue), "offset": r.offset} for r in result.rows]
    if result.method != "broker":  # the old way computes these; the broker's answer has only the new offset
        for row, r in zip(rows, result.rows):
            row.update(brokerOffset=r.broker_offset, consumerOffset=r.consumer_offset,
                       timestampOffset=r.timestamp_offset)
    data = {"group": a.group, "topic": a.topic, "timestamp": a.timestamp, "force": a.force, "method": result.method,
            "offsets": rows}
    if result.method == "broker":
        text = table(["#brokerName", "#queueId", "#offset"],
                     [[r.queue.broker_name, r.queue.queue_id, r.offset] for r in result.rows])
    else:
        text = table(["#brokerName", "#queueId", "#brokerOffset", "#consumerOffset", "#timestampOffset",
                      "#resetOffset"],
                     [[r.queue.broker_name, r.queue.queue_id, r.broker_offset, r.consumer_offset,
                       r.timestamp_offset, r.offset] for r in result.rows])
        text = "The broker could not reset the group's online consumers (no consumer online, or not supported); " \
               "the offsets were written to the brokers directly.\n" + text
    return data, text


async def reset_offset(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    result = await admin.reset_offset(a.group, a.topic, a.offset, queue_id=a.queue_id)
    rows = [{**mq_json(r.queue), "offset": r.offset} for r in result.rows]
    data = {"group": a.group, "topic": a.topic, "method": result.method, "offsets": rows}
    return data, table(["#brokerName", "#queueId", "#offset"],
                       [[r.queue.broker_name, r.queue.queue_id, r.offset] for r in result.rows])


async def get_consumer_status(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    status = await admin.get_consumer_status(a.group, a.topic, a.client_id)
    data = {cid: [{**mq_json(mq), "offset": off} for mq, off in t.items()] for cid, t in status.items()}
    rows = [[cid, mq.broker_name, mq.queue_id, off] for cid, t in status.items() for mq, off in t.items()]
    return data, table(["#clientId", "#brokerName", "#queueId", "#offset"], rows)


async def export_offsets(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    wrapper = await admin.export_offsets(a.group, a.topic, a.broker, known=True)
    content = wrapper.encode(pretty=True).decode()
    queues = sum(len(v) for v in wrapper.offset_table.values())
    data = {"group": a.group, "queues": queues, "offsetTable": {k: {str(q): o for q, o in v.items()}
                                                               for k, v in wrapper.offset_table.items()}}
    if a.file:
        write_file(a.file, content)
        return {**data, "file": a.file}, f"{queues} queue offset(s) of group {a.group} written to {a.file}"
    return data, content


def write_file(path: str, content: str) -> None:
    """An export's file; a path that cannot be written is one line (InvalidArgumentError), not a traceback."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
    except OSError as exc:
        raise InvalidArgumentError(f"cannot write {path}: {exc.strerror or exc}") from None


async def import_offsets(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    try:
        with open(a.file, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise InvalidArgumentError(f"cannot read {a.file}: {exc.strerror or exc}") from None
    try:
        wrapper = ConsumerOffsetSerializeWrapper.decode(raw)
    except ProtocolError as exc:
        raise InvalidArgumentError(f"{a.file} is not a consumerOffset.json: {exc}") from None
    written = await admin.import_offsets(wrapper, a.group, a.broker)
    return {"file": a.file, "queues": written}, f"{written} queue offset(s) imported from {a.file}"


async def stop_broker(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    remark = await admin.stop_broker(a.broker_name, a.route_delay)
    return {"broker": a.broker_name, "state": "stopped", "routeDelaySeconds": a.route_delay}, remark


async def kill_broker(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    remark = await admin.kill_broker(a.broker_name)
    return {"broker": a.broker_name, "state": "killed"}, remark


async def pause_broker(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    remark = await admin.pause_broker(a.broker_name, not a.resume)
    return {"broker": a.broker_name, "state": "running" if a.resume else "paused"}, remark


async def advance_time(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    done = await admin.advance_time(a.seconds)
    return done, (f"clock advanced by {a.seconds:g} s (now {done['offsetMillis'] / 1000:g} s ahead): "
                  f"{done['delivered']} delayed message(s) delivered, {done['revived']} POP message(s) revived, "
                  f"{done['pullsAnswered']} held pull(s) answered, {done['filesDeleted']} file(s) expired")


async def start_broker(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    remark = await admin.start_broker(a.broker_name)
    return {"broker": a.broker_name, "state": "running"}, remark


async def expire_now(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    deleted = await admin.expire_now(a.topic)
    data: dict[str, Any] = {"brokers": [{"addr": addr, "deletedFiles": n} for addr, n in deleted.items()]}
    text = "\n".join(f"{addr}: {n} commitlog file(s) expired" for addr, n in deleted.items())
    if a.topic:
        status = await admin.topic_status(a.topic)
        data["queues"] = [{**mq_json(mq), "minOffset": t.min_offset, "maxOffset": t.max_offset}
                          for mq, t in status.items()]
        text += "\n" + table(["#Broker Name", "#QID", "#Min Offset", "#Max Offset"],
                             [[mq.broker_name, mq.queue_id, t.min_offset, t.max_offset] for mq, t in status.items()])
    return data, text


def _message_text(m: ReceivedMessage) -> str:
    d = message_json(m)
    lines = [("OffsetID:", d["offsetMsgId"]), ("Topic:", d["topic"]), ("Tags:", f"[{d['tags'] or ''}]"),
             ("Keys:", f"[{d['keys'] or ''}]"), ("Queue ID:", d["queueId"]), ("Queue Offset:", d["queueOffset"]),
             ("Reconsume Times:", d["reconsumeTimes"]), ("Born Timestamp:", fmt_time(d["bornTimestamp"])),
             ("Store Timestamp:", fmt_time(d["storeTimestamp"])), ("Born Host:", d["bornHost"]),
             ("Store Host:", d["storeHost"]), ("Properties:", d["properties"]), ("Message Body:", d["body"])]
    return "\n".join(f"{k:<20}{v}" for k, v in [("Msg ID:", d["msgId"])] + lines)


async def query_msg_by_id(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    m = await admin.query_message_by_id(a.msg_id, a.topic)
    return message_json(m), _message_text(m)


async def query_msg_by_key(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    msgs = await admin.query_message_by_key(a.topic, a.key, a.max_num, a.begin or 0, a.end)
    data = [message_json(m) for m in msgs]
    return data, table(["#Message ID", "#QID", "#Offset"], [[m.msg_id, m.queue_id, m.queue_offset] for m in msgs])


async def cluster_list(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    brokers = await admin.cluster_list()
    data = [{"cluster": b.cluster, "brokerName": b.broker_name, "brokerId": b.broker_id, "addr": b.addr,
             "version": b.runtime.get("brokerVersionDesc", ""), "runtime": b.runtime} for b in brokers]
    rows = [[b.cluster, b.broker_name, b.broker_id, b.addr, b.runtime.get("brokerVersionDesc", "N/A")]
            for b in brokers]
    return data, table(["#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version"], rows)


async def broker_status(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    """mqadmin brokerStatus: a broker's runtime statistics, sorted by key (with the address first when several)."""
    if a.broker_addr:
        addrs = [a.broker_addr]
    else:
        addrs = [b.addr for b in await admin.cluster_list() if a.cluster is None or b.cluster == a.cluster]
        if not addrs:
            raise InvalidArgumentError(f"cluster {a.cluster!r} has no broker (admin clusterList lists them)")
    stats = {addr: dict(sorted((await admin.broker_runtime_info(addr)).items())) for addr in addrs}
    several = len(addrs) > 1 or not a.broker_addr
    lines = [f"{addr:<24} {k:<32}: {v}" if several else f"{k:<32}: {v}"
             for addr, table_ in stats.items() for k, v in table_.items()]
    return stats, "\n".join(lines)


_SUB_GROUP_FLAGS = (("consume_enable", "consumeEnable"), ("consume_from_min_enable", "consumeFromMinEnable"),
                    ("consume_broadcast_enable", "consumeBroadcastEnable"), ("retry_queue_nums", "retryQueueNums"),
                    ("retry_max_times", "retryMaxTimes"), ("broker_id", "brokerId"),
                    ("which_broker_when_consume_slowly", "whichBrokerWhenConsumeSlowly"),
                    ("notify_consumer_ids_changed_enable", "notifyConsumerIdsChangedEnable"),
                    ("consume_message_orderly", "consumeMessageOrderly"))


async def update_sub_group(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    """mqadmin updateSubGroup: create or replace a group's subscription config (fields not given: Java's
    defaults, as mqadmin does)."""
    given = {field: getattr(a, field) for field, _ in _SUB_GROUP_FLAGS if getattr(a, field) is not None}
    addrs = await admin.update_subscription_group(a.group, cluster=a.cluster, broker_addr=a.broker_addr, **given)
    cfg = SubscriptionGroupConfig(group_name=a.group, **given)
    data = {"groupName": a.group, **{key: getattr(cfg, field) for field, key in _SUB_GROUP_FLAGS
                                     if getattr(cfg, field) is not None}, "brokers": addrs}
    def java(value: Any) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)
    fields = ", ".join(f"{key}={java(getattr(cfg, field))}" for field, key in _SUB_GROUP_FLAGS[:-1])
    order = "" if cfg.consume_message_orderly is None else f", consumeMessageOrderly={java(cfg.consume_message_orderly)}"
    return data, "".join(f"create subscription group to {addr} success.\n" for addr in addrs) + \
        f"SubscriptionGroupConfig [groupName={a.group}, {fields}{order}]"


async def export_entities(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    """The running brokers' topics, groups and KV settings as an entities file (`serve --entities` reads it)."""
    import json
    document = await admin.export_entities(a.cluster, a.kv_namespace or ("ORDER_TOPIC_CONFIG",))
    if a.file and a.file.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            from rocketmq_emulator.protocol.extras import install_hint
            raise InvalidArgumentError(f"writing YAML needs PyYAML ({install_hint('acl')}); or name a .json file") \
                from None
        content = yaml.safe_dump(document, sort_keys=False, default_flow_style=None)
    else:
        content = json.dumps(document, indent=2) + "\n"
    summary = (f"{len(document['topics'])} topic(s), {len(document['groups'])} group(s), "
               f"{len(document.get('kv', []))} KV setting(s)")
    if not a.file:
        return document, content.rstrip("\n")
    write_file(a.file, content)
    return {**document, "file": a.file}, f"{summary} written to {a.file}"


Command = Callable[[Admin, argparse.Namespace], Awaitable[tuple[Any, str]]]


def add_admin_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                       common: argparse.ArgumentParser) -> None:
    def cmd(name: str, fn: Command, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        p.set_defaults(run=fn)
        return p

    p = cmd("updateTopic", update_topic, "create or update a topic")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-r", "--readQueueNums", dest="read_queue_nums", type=queue_nums, default=8,
                   help="1-1024 (default 8)")
    p.add_argument("-w", "--writeQueueNums", dest="write_queue_nums", type=queue_nums, default=8,
                   help="1-1024 (default 8)")
    p.add_argument("-p", "--perm", type=perm, default=6, help="2 write, 4 read, 6 read+write (default)")
    p.add_argument("-c", "--clusterName", dest="cluster")
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", type=address, metavar="HOST:PORT")
    p.add_argument("-o", "--order", type=boolean, default=False)
    p.add_argument("-a", "--attributes", type=_message_type_attribute, metavar="+message.type=TYPE",
                   help="5.x: the message type a 5.x producer may send to the topic (NORMAL, FIFO, DELAY, "
                        "TRANSACTION), as mqadmin 5.x's updateTopic -a")
    p = cmd("deleteTopic", delete_topic, "delete a topic from the brokers and the name server")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-c", "--clusterName", dest="cluster")
    cmd("topicList", topic_list, "list the topics the name server knows")
    p = cmd("topicRoute", topic_route, "the route of a topic")
    p.add_argument("-t", "--topic", required=True)
    p = cmd("topicStatus", topic_status, "min/max offset and last update of each queue of a topic")
    p.add_argument("-t", "--topic", required=True)
    p = cmd("consumerProgress", consumer_progress, "a group's progress per queue (all groups without -g)")
    p.add_argument("-g", "--consumerGroup", dest="group")
    p = cmd("consumerConnection", consumer_connection, "the online clients of a group")
    p.add_argument("-g", "--consumerGroup", dest="group", required=True)
    p = cmd("resetOffsetByTime", reset_offset_by_time, "reset a group's offsets of a topic to a time")
    p.add_argument("-g", "--group", dest="group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-s", "--timestamp", type=parse_timestamp, required=True,
                   help="now, milliseconds, or yyyy-MM-dd#HH:mm:ss:SSS")
    p.add_argument("-f", "--force", type=boolean, default=True, help="false: only move offsets backwards")
    p.add_argument("-c", "--cplus", action="store_true", help="ask for the C++ client's reset body")
    p = cmd("resetOffset", reset_offset, "reset a group's offset of one queue, or of every queue, to an offset")
    p.add_argument("-g", "--group", dest="group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-o", "--offset", type=int_range(0), required=True, help="the new offset (0 or more)")
    p.add_argument("-q", "--queueId", dest="queue_id", type=int_range(0, 1023), help="only this queue")
    p = cmd("getConsumerStatus", get_consumer_status, "each online client's in-memory offsets of a topic")
    p.add_argument("-g", "--group", dest="group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-i", "--originClientId", dest="client_id", help="only this client")
    p = cmd("exportOffsets", export_offsets, "a group's offsets on one broker, in consumerOffset.json's format")
    p.add_argument("-g", "--group", dest="group", required=True)
    p.add_argument("-t", "--topic", help="only this topic")
    p.add_argument("-b", "--brokerAddr", dest="broker", type=address, metavar="HOST:PORT",
                   help="the broker (needed when there are several)")
    p.add_argument("-f", "--file", help="write to this file (default: standard output)")
    p = cmd("importOffsets", import_offsets, "write the offsets of a consumerOffset.json to a broker "
            "(stop the group's consumers first)")
    p.add_argument("-f", "--file", required=True, help="a consumerOffset.json (a real broker's, or exportOffsets')")
    p.add_argument("-g", "--group", dest="group", help="only this group (default: every group in the file)")
    p.add_argument("-b", "--brokerAddr", dest="broker", type=address, metavar="HOST:PORT",
                   help="the broker (needed when there are several)")
    p = cmd("stopBroker", stop_broker, "take one broker of `serve --brokers N` away: a clean stop, its routes "
                                       "dropped at once or after --route-delay (emulator only)")
    p.add_argument("-b", "--brokerName", dest="broker_name", required=True, help="e.g. broker-b")
    p.add_argument("--route-delay", dest="route_delay", type=float_range(0, 3600), default=0.0, metavar="SECONDS",
                   help="keep the routes this long, as a real name server does until the heartbeat times out "
                        "(default 0: drop them at once)")
    p = cmd("startBroker", start_broker, "bring a broker taken away with stopBroker or killBroker back (emulator "
                                         "only)")
    p.add_argument("-b", "--brokerName", dest="broker_name", required=True)
    p = cmd("killBroker", kill_broker, "as a crash: a broker goes without a clean stop (SIGKILL with --processes); "
                                       "its routes go at once (emulator only)")
    p.add_argument("-b", "--brokerName", dest="broker_name", required=True,
                   help="broker-a (a master) or broker-a/1 (its slave)")
    p = cmd("pauseBroker", pause_broker, "a broker answers nothing, its connections stay open (SIGSTOP with "
                                         "--processes), until --resume (emulator only)")
    p.add_argument("-b", "--brokerName", dest="broker_name", required=True,
                   help="broker-a (a master) or broker-a/1 (its slave)")
    p.add_argument("--resume", action="store_true", help="go on answering")
    p = cmd("advanceTime", advance_time, "fast-forward the broker clock: what is due within SECONDS happens now "
                                         "(delays, retries, invisible times, check-backs, retention; emulator only)")
    p.add_argument("-s", "--seconds", dest="seconds", required=True,
                   type=float_range(0, 10 * 365 * 24 * 3600, what=" seconds: ten years"),
                   metavar="SECONDS", help="how much time passes, e.g. 7200")
    p = cmd("expireNow", expire_now, "retention on demand: every message stored so far expires (emulator only)")
    p.add_argument("-t", "--topic", help="only the brokers of this topic, and show its queues' min/max")
    p = cmd("queryMsgById", query_msg_by_id, "a message by its offset id (or unique id with -t)")
    p.add_argument("-i", "--msgId", dest="msg_id", required=True)
    p.add_argument("-t", "--topic")
    p = cmd("queryMsgByKey", query_msg_by_key, "messages of a topic by key")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-k", "--msgKey", dest="key", required=True)
    p.add_argument("-b", "--beginTimestamp", dest="begin", type=timestamp_ms)
    p.add_argument("-e", "--endTimestamp", dest="end", type=timestamp_ms)
    p.add_argument("-c", "--maxNum", dest="max_num", type=int_range(1, 1000), default=64,
                   help="1-1000 (default 64)")
    cmd("clusterList", cluster_list, "the brokers of every cluster")
    p = cmd("exportEntities", export_entities, "the topics, consumer groups and KV settings of the running brokers "
                                               "as an entities file (serve --entities reads it back)")
    p.add_argument("-f", "--file", help="write to this file: YAML for .yaml/.yml, else JSON (default: JSON on "
                                        "standard output)")
    p.add_argument("-c", "--clusterName", dest="cluster", help="only this cluster's brokers")
    p.add_argument("--kv-namespace", action="append", metavar="NAMESPACE",
                   help="the name server KV namespaces to export (repeatable; default ORDER_TOPIC_CONFIG)")
    p = cmd("brokerStatus", broker_status, "a broker's runtime statistics (every broker, or of -c, without -b)")
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", type=address, metavar="HOST:PORT")
    p.add_argument("-c", "--clusterName", dest="cluster")
    p = cmd("updateSubGroup", update_sub_group, "create or update a consumer group's subscription config (fields "
                                                "not given take Java's defaults, as with mqadmin)")
    p.add_argument("-g", "--groupName", dest="group", required=True)
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", type=address, metavar="HOST:PORT",
                   help="only this broker (default: every master of -c, or of every cluster)")
    p.add_argument("-c", "--clusterName", dest="cluster")
    p.add_argument("-s", "--consumeEnable", dest="consume_enable", type=boolean, help="default true")
    p.add_argument("-m", "--consumeFromMinEnable", dest="consume_from_min_enable", type=boolean, help="default true")
    p.add_argument("-d", "--consumeBroadcastEnable", dest="consume_broadcast_enable", type=boolean,
                   help="default true")
    p.add_argument("-q", "--retryQueueNums", dest="retry_queue_nums", type=int_range(0, 1024), help="default 1")
    p.add_argument("-r", "--retryMaxTimes", dest="retry_max_times", type=int_range(-1, 10_000),
                   help="redeliveries before the dead-letter queue (default 16; -1: none, straight to the DLQ)")
    p.add_argument("-i", "--brokerId", dest="broker_id", type=int_range(0), help="default 0")
    p.add_argument("-w", "--whichBrokerWhenConsumeSlowly", dest="which_broker_when_consume_slowly",
                   type=int_range(0), help="default 1")
    p.add_argument("-a", "--notifyConsumerIdsChanged", dest="notify_consumer_ids_changed_enable", type=boolean,
                   help="default true")
    p.add_argument("-o", "--consumeMessageOrderly", dest="consume_message_orderly", type=boolean,
                   help="5.x: a FIFO group (5.x clients consume its queues in order)")


__all__ = ["add_admin_commands", "parse_timestamp", "table", "message_json"]
