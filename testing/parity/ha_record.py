"""Record what a real Apache RocketMQ 4.9.8 master-slave pair answers (tests/parity/ha/real_4_9_8.json).

    .venv/bin/python -m rocketmq_emulator.testing.parity.ha_record OUT.json [--no-java] [--keep-logs DIR]

Starts, on free 127.0.0.1 ports, a real name server, a master `broker-a` (brokerId=0), its slave `broker-a`
(brokerId=1, brokerRole=SLAVE, own store and port; it learns the master from the name server) and a second master
`broker-b`, then sends raw remoting requests step by step (route, sends, pulls, offsets, configuration, a
SYNC_MASTER with and without its slave, kill -9 of the master, the master's restart) and, unless `--no-java`,
runs the official Java 4.9.8 push consumer and producer through a kill -9 of the master.

Each step is written as {"step", "request", "response", "note"} with the values that vary from run to run
(timestamps, message ids, addresses, ports, disk ratios) replaced by placeholders ("<master>", "<slave>", ...).
Durations are findings too, but they vary: they are kept apart, under "measured", and never in a step.

Every process the script starts is stopped when it ends, also on failure or SIGTERM/SIGINT (and, through
PR_SET_PDEATHSIG, when the script itself is killed).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from rocketmq_emulator.protocol import FrameDecoder, RemotingCommand, RequestCode, ResponseCode, encode_command
from rocketmq_emulator.protocol import fastjson
from rocketmq_emulator.protocol.message import decode_messages, encode_properties

from .real import REAL_49, ensure_built

FORBIDDEN_PORTS = {9876, 10909, 10911, 10912, 8080, 8081}
TOPIC = "HA_TOPIC"
TOPIC7 = "HA_T7"
G_PULL = "HA_G_pull"            # auto-created group (brokerId 0, whichBrokerWhenConsumeSlowly 1)
G_SLAVE = "HA_G_slaveid"        # created on the master with brokerId=1
G_COMMIT = "HA_G_commit"
G_OFFSET = "HA_G_offset"
G_SLAVEONLY = "HA_G_slaveonly"
G_MARK = "HA_G_marker"
G7 = "HA_G7"
SUB_FLAG, COMMIT_FLAG, SUSPEND_FLAG = 0x4, 0x1, 0x2
SLAVE_SYNC_PERIOD_S = 10        # BrokerController.handleSlaveSynchronize: 3 s initial delay, then every 10 s


def _name(code: int, enum: Any) -> str:
    try:
        return str(enum(code).name)
    except ValueError:
        return str(code)


# ------------------------------------------------------------------------------------------------ processes
def _pdeathsig() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Ports:
    """Free 127.0.0.1 ports (never the RocketMQ defaults); a broker needs PORT-2 .. PORT+1."""

    def __init__(self) -> None:
        self.taken: set[int] = set()

    @staticmethod
    def _bindable(p: int) -> bool:
        if p < 1025 or p > 65535 or p in FORBIDDEN_PORTS:
            return False
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            return True
        except OSError:
            return False
        finally:
            s.close()

    def get(self, below: int = 0, above: int = 0) -> int:
        for _ in range(500):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            p = int(s.getsockname()[1])
            s.close()
            span = range(p - below, p + above + 1)
            if all(q not in self.taken and self._bindable(q) for q in span):
                self.taken.update(span)
                return p
        raise RuntimeError("no free port range found")


class Procs:
    """The processes this script started: stopped by their own pid only."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.live: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, Path] = {}
        self.count = 0

    def start(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Path:
        self.count += 1
        out = self.root / f"{self.count:02d}-{name}.out"
        with open(out, "wb") as fh:
            self.live[name] = subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                               env=env, preexec_fn=_pdeathsig, cwd=self.root)
        self.logs[name] = out
        return out

    def alive(self, name: str) -> bool:
        p = self.live.get(name)
        return p is not None and p.poll() is None

    def wait_text(self, name: str, text: str, timeout: float) -> float:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if text in self.logs[name].read_text(errors="replace"):
                return time.monotonic() - t0
            if not self.alive(name):
                raise RuntimeError(f"{name} exited:\n{self.logs[name].read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)
        raise RuntimeError(f"{name}: no {text!r} within {timeout} s:\n{self.logs[name].read_text()[-3000:]}")

    def stop(self, name: str, sig: int = signal.SIGTERM, timeout: float = 20.0) -> float:
        p = self.live.pop(name, None)
        if p is None:
            return 0.0
        t0 = time.monotonic()
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return time.monotonic() - t0

    def stop_all(self, timeout: float = 15.0) -> None:
        """SIGTERM to every live process at once, SIGKILL to those still running after `timeout`."""
        procs = list(self.live.values())
        self.live.clear()
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


# ------------------------------------------------------------------------------------------------ remoting
def call(addr: str, code: int, ext: dict[str, str] | None = None, body: bytes = b"",
         timeout: float = 10.0) -> RemotingCommand:
    """One request on a fresh connection; the response."""
    host, port = addr.rsplit(":", 1)
    cmd = RemotingCommand.request(code, ext, body)
    dec = FrameDecoder()
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(b"".join(encode_command(cmd)))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            data = s.recv(65536)
            if not data:
                raise ConnectionError(f"{addr} closed the connection")
            dec.feed(data)
            for r in dec:
                if r.is_response and r.opaque == cmd.opaque:
                    return r
    raise TimeoutError(f"{addr}: no answer to {code}")


def send_ext(topic: str, queue_id: int, **props: str) -> dict[str, str]:
    """SEND_MESSAGE_V2's one-letter header (tag TagA)."""
    return {"a": "HA_PG", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
            "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties({"TAGS": "TagA", **props}),
            "j": "0", "k": "false", "m": "false"}


def pull_ext(group: str, topic: str, queue_id: int, offset: int, sys_flag: int = SUB_FLAG,
             commit_offset: int = 0) -> dict[str, str]:
    return {"consumerGroup": group, "topic": topic, "queueId": str(queue_id), "queueOffset": str(offset),
            "maxMsgNums": "32", "sysFlag": str(sys_flag), "commitOffset": str(commit_offset),
            "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG"}


def kv_body(resp: RemotingCommand) -> dict[str, str]:
    """A KVTable body (GET_BROKER_RUNTIME_INFO)."""
    return dict(fastjson.loads(resp.body).get("table", {})) if resp.body else {}


def properties_body(resp: RemotingCommand) -> dict[str, str]:
    """GET_BROKER_CONFIG's body: a properties text."""
    out = {}
    for line in resp.body.decode(errors="replace").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


# ------------------------------------------------------------------------------------------------ recording
class Recorder:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.measured: dict[str, Any] = {}
        self.names: dict[str, str] = {}     # "127.0.0.1:P" -> "<master>"
        self.ports: dict[str, str] = {}     # "P" -> "<master-port>": only a whole value is replaced
        self.dirs: list[tuple[str, str]] = []

    def alias(self, addr: str, label: str) -> None:
        self.names[addr] = label

    def norm_text(self, text: str) -> str:
        for addr, label in sorted(self.names.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(addr, label)
        for d, label in self.dirs:
            text = text.replace(d, label)
        text = re.sub(r"\b[0-9A-F]{32}\b", "<msgId>", text)
        # SendMessageProcessor.diskUtil: String.format("CL: %5.2f CQ: %5.2f INDEX: %5.2f", ...)
        text = re.sub(r"(CL|CQ|INDEX): *-?[0-9]+\.[0-9]+", r"\1: <%5.2f>", text)
        return self.ports.get(text, text)

    def norm(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {self.norm_text(str(k)): self.norm(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.norm(v) for v in value]
        if isinstance(value, str):
            return self.norm_text(value)
        return value

    def measure(self, key: str, seconds: float) -> None:
        self.measured[key] = round(seconds, 2)
        print(f"  measured {key}: {seconds:.2f} s", flush=True)

    def add(self, step: str, to: str, code: int, ext: dict[str, str] | None, resp: RemotingCommand | None,
            note: str, *, body_in: Any = None, body_out: Any = None, drop_out: tuple[str, ...] = (),
            keep_in: tuple[str, ...] | None = None, extra: dict[str, Any] | None = None) -> None:
        req: dict[str, Any] = {"code": code, "name": _name(code, RequestCode), "to": to}
        if ext:
            sent = {k: v for k, v in ext.items() if k not in ("g", "bornTimestamp")}
            if keep_in is not None:
                sent = {k: v for k, v in sent.items() if k in keep_in}
            req["header"] = self.norm(sent)
        if body_in is not None:
            req["body"] = self.norm(body_in)
        entry: dict[str, Any] = {"step": step, "request": req, "note": note}
        if resp is not None:
            out: dict[str, Any] = {"code": resp.code, "name": _name(resp.code, ResponseCode),
                                   "remark": self.norm_text(resp.remark) if resp.remark is not None else None}
            header = {k: v for k, v in (resp.ext_fields or {}).items() if k not in drop_out}
            for k in ("msgId", "transactionId"):
                if k in header:
                    header[k] = "<msgId>" if header[k] else header[k]
            out["header"] = self.norm(header)
            if body_out is not None:
                out["body"] = self.norm(body_out)
            entry["response"] = out
        if extra:
            entry.update(self.norm(extra))
        self.steps.append(entry)
        code_s = f"{resp.code} {_name(resp.code, ResponseCode)} {resp.remark!r}" if resp is not None else "-"
        print(f"[{step}] {_name(code, RequestCode)} -> {to}: {code_s}", flush=True)

    def dump(self, path: Path, meta: dict[str, Any]) -> None:
        doc = {"meta": meta, "steps": self.steps, "measured": self.measured}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def wait_until(what: str, check: Callable[[], Any], timeout: float, every: float = 0.2) -> tuple[Any, float]:
    t0 = time.monotonic()
    last: Any = None
    while True:
        try:
            last = check()
            if last:
                return last, time.monotonic() - t0
        except (OSError, ConnectionError, TimeoutError) as e:
            last = e
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"timed out ({timeout} s) waiting for {what}; last: {last!r}")
        time.sleep(every)


def messages(resp: RemotingCommand) -> list[dict[str, Any]]:
    if resp.code != ResponseCode.SUCCESS or not resp.body:
        return []
    return [{"body": m.body.decode(errors="replace"), "queueId": m.queue_id, "queueOffset": m.queue_offset}
            for m in decode_messages(resp.body)]


def route_summary(resp: RemotingCommand) -> dict[str, Any] | None:
    if resp.code != ResponseCode.SUCCESS or not resp.body:
        return None
    data = fastjson.loads(resp.body)
    brokers = sorted(({"brokerName": b["brokerName"], "cluster": b.get("cluster"),
                       "brokerAddrs": {str(k): v for k, v in sorted(b["brokerAddrs"].items())}}
                      for b in data.get("brokerDatas", [])), key=lambda b: b["brokerName"])
    queues = sorted(({k: q[k] for k in ("brokerName", "readQueueNums", "writeQueueNums", "perm", "topicSysFlag")
                      if k in q} for q in data.get("queueDatas", [])), key=lambda q: q["brokerName"])
    return {"brokerDatas": brokers, "queueDatas": queues,
            "other_keys": sorted(k for k in data if k not in ("brokerDatas", "queueDatas"))}


def cluster_summary(resp: RemotingCommand) -> dict[str, Any]:
    data = fastjson.loads(resp.body)
    return {"brokerAddrTable": {name: {"cluster": b.get("cluster"),
                                       "brokerAddrs": {str(k): v for k, v in sorted(b["brokerAddrs"].items())}}
                                for name, b in sorted(data.get("brokerAddrTable", {}).items())},
            "clusterAddrTable": {c: sorted(n) for c, n in sorted(data.get("clusterAddrTable", {}).items())}}


# ------------------------------------------------------------------------------------------------ the run
class Run:
    def __init__(self, root: Path, rec: Recorder, java: bool) -> None:
        self.root = root
        self.rec = rec
        self.java = java
        self.procs = Procs(root)
        self.ports = Ports()
        self.env = dict(os.environ)
        self.env["RMQ_JAVA_OPTS"] = (self.env.get("RMQ_JAVA_OPTS", "") + " -Dtls.server.mode=disabled").strip()
        self.ns = ""
        self.addr: dict[str, str] = {}
        self.launched: dict[str, float] = {}

    # -------------------------------------------------------------------------- process helpers
    def start_namesrv(self) -> None:
        port = self.ports.get()
        self.ns = f"127.0.0.1:{port}"
        self.rec.alias(self.ns, "<namesrv>")
        self.procs.start("namesrv", [str(REAL_49.bin("namesrv")), "-p", str(port), "-d", str(self.root / "ns")],
                         self.env)
        self.rec.measure("boot.namesrv", self.procs.wait_text("namesrv", "boot success", 60))

    def place_broker(self, key: str, label: str) -> str:
        """The listen port of broker `key`: a free one at its first launch (its addresses and ports aliased to
        `label`), the same one at a restart. (integration_tests/test_parity_ha.py reuses it for the emulator.)"""
        if key not in self.addr:
            port = self.ports.get(2, 1)
            self.addr[key] = f"127.0.0.1:{port}"
            self.rec.alias(self.addr[key], label)
            self.rec.alias(f"127.0.0.1:{port + 1}", label[:-1] + "-ha>")
            self.rec.alias(f"127.0.0.1:{port - 2}", label[:-1] + "-fast>")
            self.rec.ports[str(port)] = label[:-1] + "-port>"
            self.rec.ports[str(port + 1)] = label[:-1] + "-ha-port>"
        return self.addr[key].rsplit(":", 1)[1]

    def launch_broker(self, key: str, label: str, settings: dict[str, str]) -> None:
        listen = self.place_broker(key, label)
        args = [str(REAL_49.bin("broker")), "-n", self.ns, "-p", listen, "-d", str(self.root / key)]
        args += [f"{k}={v}" for k, v in settings.items()]
        self.procs.start(key, args, self.env)
        self.launched[key] = time.monotonic()

    def boot(self, key: str) -> float:
        """Seconds from the launch until `boot success`."""
        self.procs.wait_text(key, "boot success", 90)
        return time.monotonic() - self.launched[key]

    # -------------------------------------------------------------------------- request helpers
    def send(self, key: str, topic: str, queue_id: int, body: str, **props: str) -> tuple[dict[str, str],
                                                                                         RemotingCommand]:
        ext = send_ext(topic, queue_id, **props)
        return ext, call(self.addr[key], RequestCode.SEND_MESSAGE_V2, ext, body.encode())

    def pull(self, key: str, group: str, offset: int, queue_id: int = 0, topic: str = TOPIC,
             sys_flag: int = SUB_FLAG, commit_offset: int = 0) -> tuple[dict[str, str], RemotingCommand]:
        ext = pull_ext(group, topic, queue_id, offset, sys_flag, commit_offset)
        return ext, call(self.addr[key], RequestCode.PULL_MESSAGE, ext)

    def query_offset(self, key: str, group: str, queue_id: int = 0, topic: str = TOPIC
                     ) -> tuple[dict[str, str], RemotingCommand]:
        ext = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}
        return ext, call(self.addr[key], RequestCode.QUERY_CONSUMER_OFFSET, ext)

    def update_offset(self, key: str, group: str, offset: int, queue_id: int = 0, topic: str = TOPIC
                      ) -> tuple[dict[str, str], RemotingCommand]:
        ext = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id), "commitOffset": str(offset)}
        return ext, call(self.addr[key], RequestCode.UPDATE_CONSUMER_OFFSET, ext)

    def broker_config(self, key: str, **values: str) -> tuple[str, RemotingCommand]:
        text = "".join(f"{k}={v}\n" for k, v in values.items())
        return text, call(self.addr[key], RequestCode.UPDATE_BROKER_CONFIG, None, text.encode())

    def runtime(self, key: str) -> dict[str, str]:
        return kv_body(call(self.addr[key], RequestCode.GET_BROKER_RUNTIME_INFO))

    def max_offset(self, key: str, topic: str = TOPIC, queue_id: int = 0) -> int:
        r = call(self.addr[key], RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)})
        return int((r.ext_fields or {}).get("offset", "-1"))

    def route(self, topic: str = TOPIC) -> RemotingCommand:
        return call(self.ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})

    def topics_of(self, key: str) -> dict[str, Any]:
        r = call(self.addr[key], RequestCode.GET_ALL_TOPIC_CONFIG)
        return fastjson.loads(r.body) if r.body else {}

    def groups_of(self, key: str) -> dict[str, Any]:
        r = call(self.addr[key], RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        return fastjson.loads(r.body) if r.body else {}

    def replicated(self) -> bool:
        return self.runtime("a0")["commitLogMaxOffset"] == self.runtime("a1")["commitLogMaxOffset"]

    def create_topic(self, key: str, topic: str, queues: int = 2) -> tuple[dict[str, str], RemotingCommand]:
        ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues),
               "writeQueueNums": str(queues), "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
               "order": "false"}
        return ext, call(self.addr[key], RequestCode.UPDATE_AND_CREATE_TOPIC, ext)

    def create_group(self, key: str, group: str, broker_id: int) -> tuple[dict[str, Any], RemotingCommand]:
        cfg = {"groupName": group, "consumeEnable": True, "consumeFromMinEnable": True,
               "consumeBroadcastEnable": True, "retryQueueNums": 1, "retryMaxTimes": 16, "brokerId": broker_id,
               "whichBrokerWhenConsumeSlowly": 1, "notifyConsumerIdsChangedEnable": True}
        return cfg, call(self.addr[key], RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None,
                         json.dumps(cfg).encode())

    # -------------------------------------------------------------------------- phases
    def run(self) -> None:
        rec = self.rec
        t_start = time.monotonic()
        self.start_namesrv()
        self.launch_broker("a0", "<master>", {"brokerName": "broker-a", "brokerId": "0",
                                               "brokerRole": "ASYNC_MASTER"})
        self.launch_broker("a1", "<slave>", {"brokerName": "broker-a", "brokerId": "1", "brokerRole": "SLAVE"})
        self.launch_broker("b0", "<broker-b>", {"brokerName": "broker-b", "brokerId": "0",
                                                "brokerRole": "ASYNC_MASTER"})
        for k in ("a0", "a1", "b0"):
            rec.measure(f"boot.{k}", self.boot(k))
        self.phase_config()
        self.phase_route_and_send()
        self.phase_pull()
        self.phase_offsets()
        self.phase_sync_master()
        self.phase_kill_master()
        if self.java:
            self.phase_java()
        rec.measure("total", time.monotonic() - t_start)

    # step 5 first: the slave's configuration as it booted (step 3 changes slaveReadEnable at run time)
    def phase_config(self) -> None:
        keys = ("brokerName", "brokerId", "brokerRole", "slaveReadEnable", "offsetCheckInSlave",
                "haMasterAddress", "haListenPort", "haSlaveFallbehindMax", "haHousekeepingInterval",
                "haSendHeartbeatInterval", "syncFlushTimeout", "slaveTimeout", "flushDiskType", "brokerPermission")
        for key, label in (("a1", "<slave>"), ("a0", "<master>")):
            r = call(self.addr[key], RequestCode.GET_BROKER_CONFIG)
            props = properties_body(r)
            chosen = {k: props.get(k) for k in keys}
            self.rec.add(f"5.get_broker_config.{key}", label, RequestCode.GET_BROKER_CONFIG, None, r,
                         "the body is a java.util.Properties text; only these keys are kept (null: not in the text)",
                         body_out={"selected": chosen}, drop_out=("version",),
                         extra={"response_header_keys": sorted((r.ext_fields or {}).keys())})

    def phase_route_and_send(self) -> None:
        rec = self.rec
        ext, r = self.create_topic("a0", TOPIC)
        rec.add("1.create_topic.master", "<master>", RequestCode.UPDATE_AND_CREATE_TOPIC, ext, r,
                "topic created on the master only (2 read / 2 write queues)")
        ext, r = self.create_topic("a1", TOPIC + "_on_slave")
        rec.add("1.create_topic.slave", "<slave>", RequestCode.UPDATE_AND_CREATE_TOPIC, ext, r,
                "AdminBrokerProcessor.validateSlave refuses topic and group changes on a slave")
        cfg, r = self.create_group("a0", G_SLAVE, 1)
        rec.add("1.create_group.master", "<master>", RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, r,
                "subscription group with brokerId=1 (read from the slave when slaveReadEnable)", body_in=cfg)
        cfg, r = self.create_group("a1", G_SLAVE + "_on_slave", 0)
        rec.add("1.create_group.slave", "<slave>", RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, r,
                "refused on the slave", body_in=cfg)
        t0 = time.monotonic()
        _, waited = wait_until("the topic on the slave (SlaveSynchronize)",
                               lambda: TOPIC in self.topics_of("a1").get("topicConfigTable", {}), 30, 0.25)
        rec.measure("slave_sync.topic_visible_on_slave_after_create", waited)
        r = self.route()
        rs = route_summary(r)
        rec.add("1.route", "<namesrv>", RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}, r,
                "brokerDatas hold broker-a's master (0) and slave (1); queueDatas come from the master's registration "
                "only (RouteInfoManager.registerBroker updates queue data for brokerId 0 only)",
                body_out=rs, drop_out=())
        r = call(self.ns, RequestCode.GET_BROKER_CLUSTER_INFO)
        rec.add("1.cluster_list", "<namesrv>", RequestCode.GET_BROKER_CLUSTER_INFO, None, r,
                "broker-a lists both addresses under one name", body_out=cluster_summary(r))

        # sends
        t0 = time.monotonic()
        ext, r = self.send("a0", TOPIC, 0, "m0")
        rec.measure("send.async_master.round_trip", time.monotonic() - t0)
        rec.add("2.send.async_master", "<master>", RequestCode.SEND_MESSAGE_V2, ext, r,
                "ASYNC_MASTER with its slave up", drop_out=())
        for i in (1, 2, 3):
            _, r = self.send("a0", TOPIC, 0, f"m{i}")
            assert r.code == 0, r
        ext, r = self.send("a1", TOPIC, 0, "to-slave")
        rec.add("2.send.slave", "<slave>", RequestCode.SEND_MESSAGE_V2, ext, r,
                "a slave refuses every send (DefaultMessageStore.checkStoreStatus: SERVICE_NOT_AVAILABLE); the "
                "remark's disk ratios vary and are normalised to <%5.2f>")
        ext, r = self.send("a1", TOPIC + "_unknown", 0, "to-slave")
        rec.add("2.send.slave.unknown_topic", "<slave>", RequestCode.SEND_MESSAGE_V2, ext, r,
                "a send to the slave for a topic it does not know (autoCreateTopicEnable=true on it)")
        _, waited = wait_until("replication to the slave", lambda: self.replicated() and
                               self.max_offset("a1") == 4, 30)
        rec.measure("replication.4_messages_on_slave", waited)

    def phase_pull(self) -> None:
        rec = self.rec
        keep = ("consumerGroup", "topic", "queueId", "queueOffset", "sysFlag", "commitOffset", "maxMsgNums")

        def pull(step: str, key: str, group: str, offset: int, note: str, **kw: Any) -> RemotingCommand:
            ext, r = self.pull(key, group, offset, **kw)
            label = {"a0": "<master>", "a1": "<slave>"}[key]
            rec.add(step, label, RequestCode.PULL_MESSAGE, ext, r, note, keep_in=keep,
                    body_out={"messages": messages(r)})
            return r

        pull("3.pull.master.slaveReadEnable_false", "a0", G_PULL, 0,
             "master, slaveReadEnable=false (default): suggestWhichBrokerId 0")
        pull("3.pull.master.slaveReadEnable_false.group_brokerId_1", "a0", G_SLAVE, 0,
             "the group's brokerId=1 is ignored while slaveReadEnable=false")
        text, r = self.broker_config("a0", slaveReadEnable="true")
        rec.add("3.update_broker_config.master.slaveReadEnable_true", "<master>", RequestCode.UPDATE_BROKER_CONFIG,
                None, r, "changed at run time", body_in=text)
        pull("3.pull.master.slaveReadEnable_true", "a0", G_PULL, 0,
             "master, slaveReadEnable=true, consumer not slow: suggestWhichBrokerId = the group's brokerId (0)")
        pull("3.pull.master.slaveReadEnable_true.group_brokerId_1", "a0", G_SLAVE, 0,
             "master, slaveReadEnable=true, group brokerId=1: suggestWhichBrokerId 1")
        pull("3.pull.master.beyond_max", "a0", G_PULL, 10, "master at an offset beyond its max (4): the correction")
        pull("3.pull.master.at_max", "a0", G_PULL, 4, "master at its max offset, no suspend flag")
        text, r = self.broker_config("a0", slaveReadEnable="false")
        rec.add("3.update_broker_config.master.slaveReadEnable_false", "<master>", RequestCode.UPDATE_BROKER_CONFIG,
                None, r, "back to the default", body_in=text)

        for value in ("false", "true"):
            if value == "true":
                text, r = self.broker_config("a1", slaveReadEnable="true")
                rec.add("3.update_broker_config.slave.slaveReadEnable_true", "<slave>",
                        RequestCode.UPDATE_BROKER_CONFIG, None, r, "UPDATE_BROKER_CONFIG is accepted by a slave",
                        body_in=text)
            s = f"slaveReadEnable_{value}"
            pull(f"3.pull.slave.{s}", "a1", G_PULL, 0, f"slave, {s}: are the replicated messages served?")
            pull(f"3.pull.slave.{s}.group_brokerId_1", "a1", G_SLAVE, 0, f"slave, {s}, group brokerId=1")
            pull(f"3.pull.slave.{s}.at_max", "a1", G_PULL, 4, f"slave, {s}, at its max offset (4)")
            pull(f"3.pull.slave.{s}.beyond_max", "a1", G_PULL, 10,
                 f"slave, {s}, offset 10 beyond its max (4): OFFSET_OVERFLOW_BADLY -> PULL_OFFSET_MOVED, which a "
                 "slave turns into PULL_RETRY_IMMEDIATELY (offsetCheckInSlave=false)")
            pull(f"3.pull.slave.{s}.beyond_max.group_brokerId_1", "a1", G_SLAVE, 10,
                 f"slave, {s}, beyond max, group brokerId=1")
        text, r = self.broker_config("a1", slaveReadEnable="false")
        rec.add("3.update_broker_config.slave.slaveReadEnable_false", "<slave>", RequestCode.UPDATE_BROKER_CONFIG,
                None, r, "back to the default", body_in=text)

        # the commit bit
        pull("3.pull.slave.commit_bit", "a1", G_COMMIT, 0,
             "sysFlag commit|subscription, commitOffset=2, to the slave", sys_flag=SUB_FLAG | COMMIT_FLAG,
             commit_offset=2)
        ext, r = self.query_offset("a1", G_COMMIT)
        rec.add("3.query_offset.slave.after_commit_bit", "<slave>", RequestCode.QUERY_CONSUMER_OFFSET, ext, r,
                "the slave did not store the commitOffset (storeOffsetEnable is false on a SLAVE); the answer is the "
                "not-found fallback (offset 0: min offset 0 and the message still in memory)")
        pull("3.pull.master.commit_bit", "a0", G_COMMIT, 0, "the same pull to the master",
             sys_flag=SUB_FLAG | COMMIT_FLAG, commit_offset=2)
        ext, r = self.query_offset("a0", G_COMMIT)
        rec.add("3.query_offset.master.after_commit_bit", "<master>", RequestCode.QUERY_CONSUMER_OFFSET, ext, r,
                "the master stored commitOffset 2")

    def phase_offsets(self) -> None:
        rec = self.rec
        ext, r = self.update_offset("a0", G_OFFSET, 3)
        rec.add("4.update_offset.master", "<master>", RequestCode.UPDATE_CONSUMER_OFFSET, ext, r,
                "offset 3 on the master")
        t0 = time.monotonic()
        wait_until("the offset on the slave", lambda: (self.query_offset("a1", G_OFFSET)[1].ext_fields or {}
                                                       ).get("offset") == "3", 3 * SLAVE_SYNC_PERIOD_S, 0.25)
        rec.measure("slave_sync.offset_visible_on_slave", time.monotonic() - t0)
        ext, r = self.query_offset("a1", G_OFFSET)
        rec.add("4.query_offset.slave.after_sync", "<slave>", RequestCode.QUERY_CONSUMER_OFFSET, ext, r,
                f"after SlaveSynchronize.syncConsumerOffset (every {SLAVE_SYNC_PERIOD_S} s, 3 s after boot); see "
                "measured.slave_sync.offset_visible_on_slave")

        ext, r = self.update_offset("a1", G_OFFSET, 1)
        rec.add("4.update_offset.slave.group_known_to_master", "<slave>", RequestCode.UPDATE_CONSUMER_OFFSET, ext, r,
                "UPDATE_CONSUMER_OFFSET sent to the slave directly (queue 0, offset 1; the master has 3)")
        ext, r = self.update_offset("a1", G_OFFSET, 1, queue_id=1)
        rec.add("4.update_offset.slave.group_known_to_master.q1", "<slave>", RequestCode.UPDATE_CONSUMER_OFFSET, ext,
                r, "queue 1 of the same group and topic (the master has no queue-1 offset)")
        ext, r = self.update_offset("a1", G_SLAVEONLY, 2)
        rec.add("4.update_offset.slave.group_unknown_to_master", "<slave>", RequestCode.UPDATE_CONSUMER_OFFSET, ext,
                r, "a topic@group the master has no offset for")
        ext, r = self.query_offset("a1", G_OFFSET)
        rec.add("4.query_offset.slave.right_after_own_update", "<slave>", RequestCode.QUERY_CONSUMER_OFFSET, ext, r,
                "the slave answers its own value until the next sync")
        ext, r = self.update_offset("a0", G_MARK, 7)
        rec.add("4.update_offset.master.marker", "<master>", RequestCode.UPDATE_CONSUMER_OFFSET, ext, r,
                "a marker: once the slave shows it, a sync has run after the slave's own updates")
        wait_until("the marker on the slave", lambda: (self.query_offset("a1", G_MARK)[1].ext_fields or {}
                                                      ).get("offset") == "7", 3 * SLAVE_SYNC_PERIOD_S, 0.25)
        for step, group, q, note in (
                ("4.query_offset.slave.after_next_sync", G_OFFSET, 0,
                 "the master's value replaced the slave's own (offsetTable.putAll of topic@group entries)"),
                ("4.query_offset.slave.after_next_sync.q1", G_OFFSET, 1,
                 "queue 1, set only on the slave: the whole topic@group map was replaced, so it is gone (the "
                 "not-found fallback answers)"),
                ("4.query_offset.slave.after_next_sync.group_unknown_to_master", G_SLAVEONLY, 0,
                 "a topic@group the master does not have survives the sync")):
            ext, r = self.query_offset("a1", group, q)
            rec.add(step, "<slave>", RequestCode.QUERY_CONSUMER_OFFSET, ext, r, note)

        # topic and group created on the master appear on the slave
        topics_s, topics_m = self.topics_of("a1"), self.topics_of("a0")
        tc_s = topics_s.get("topicConfigTable", {}).get(TOPIC)
        tc_m = topics_m.get("topicConfigTable", {}).get(TOPIC)
        self.rec.add("4.topics.slave", "<slave>", RequestCode.GET_ALL_TOPIC_CONFIG, None, None,
                     "GET_ALL_TOPIC_CONFIG on the slave: the master's topic, the same config, the same dataVersion "
                     "(SlaveSynchronize.syncTopicConfig copies the table and the version)",
                     extra={"observed": {
                         "topic_on_slave": tc_s, "same_config_as_master": tc_s == tc_m,
                         "same_topic_names_as_master": sorted(topics_s.get("topicConfigTable", {})) ==
                         sorted(topics_m.get("topicConfigTable", {})),
                         "slave_only_topic_created": (TOPIC + "_unknown") in topics_s.get("topicConfigTable", {}),
                         "same_dataVersion_as_master": topics_s.get("dataVersion") == topics_m.get("dataVersion")}})
        groups_s, groups_m = self.groups_of("a1"), self.groups_of("a0")
        g_s = groups_s.get("subscriptionGroupTable", {}).get(G_SLAVE)
        self.rec.add("4.groups.slave", "<slave>", RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, None, None,
                     "GET_ALL_SUBSCRIPTIONGROUP_CONFIG on the slave",
                     extra={"observed": {
                         "group_on_slave": g_s,
                         "same_as_master": g_s == groups_m.get("subscriptionGroupTable", {}).get(G_SLAVE),
                         "same_group_names_as_master": sorted(groups_s.get("subscriptionGroupTable", {})) ==
                         sorted(groups_m.get("subscriptionGroupTable", {})),
                         "same_dataVersion_as_master": groups_s.get("dataVersion") == groups_m.get("dataVersion")}})

    def phase_sync_master(self) -> None:
        rec = self.rec
        rec.measure("stop.master.sigterm", self.procs.stop("a0", signal.SIGTERM))
        self.launch_broker("a0", "<master>", {"brokerName": "broker-a", "brokerId": "0",
                                               "brokerRole": "SYNC_MASTER"})
        rec.measure("boot.a0.sync_master", self.boot("a0"))
        t0 = time.monotonic()
        first: list[int] = []

        def probe() -> bool:
            _, r = self.send("a0", TOPIC, 1, "probe")
            first.append(r.code)
            return r.code == 0
        wait_until("the SYNC_MASTER's slave", probe, 30, 0.5)
        rec.measure("sync_master.slave_ok_after_boot", time.monotonic() - t0)
        rec.measured["sync_master.probe_codes_after_boot"] = first
        print(f"  probe codes after restart: {first}", flush=True)
        t0 = time.monotonic()
        ext, r = self.send("a0", TOPIC, 0, "sync-1")
        rec.measure("send.sync_master.slave_up.round_trip", time.monotonic() - t0)
        rec.add("2.send.sync_master.slave_up", "<master>", RequestCode.SEND_MESSAGE_V2, ext, r,
                "SYNC_MASTER with its slave connected: waits for the slave's ack (see measured."
                "send.sync_master.slave_up.round_trip vs send.async_master.round_trip)")
        t0 = time.monotonic()
        ext, r = self.send("a0", TOPIC, 0, "sync-1-nowait", WAIT="false")
        rec.measure("send.sync_master.slave_up.wait_false.round_trip", time.monotonic() - t0)
        rec.add("2.send.sync_master.slave_up.wait_false", "<master>", RequestCode.SEND_MESSAGE_V2, ext, r,
                "property WAIT=false, slave up")

        rec.measure("stop.slave.sigterm", self.procs.stop("a1", signal.SIGTERM))
        time.sleep(1.0)
        t0 = time.monotonic()
        ext, r = self.send("a0", TOPIC, 0, "sync-2")
        rec.measure("send.sync_master.slave_down.round_trip", time.monotonic() - t0)
        stored_at = int((r.ext_fields or {}).get("queueOffset", "-1"))
        rec.add("2.send.sync_master.slave_down", "<master>", RequestCode.SEND_MESSAGE_V2, ext, r,
                "SYNC_MASTER, slave stopped: HAService.isSlaveOK is false (no connection) -> SLAVE_NOT_AVAILABLE at "
                "once; sendOK is true, so the header carries msgId/queueId/queueOffset and the message IS stored")
        ext, r = self.send("a0", TOPIC, 0, "sync-2-nowait", WAIT="false")
        rec.add("2.send.sync_master.slave_down.wait_false", "<master>", RequestCode.SEND_MESSAGE_V2, ext, r,
                "property WAIT=false: no slave check (CommitLog.submitReplicaRequest only checks when "
                "isWaitStoreMsgOK)")
        ext, r = self.pull("a0", G_PULL, stored_at)
        rec.add("2.pull.master.message_answered_slave_not_available", "<master>", RequestCode.PULL_MESSAGE, ext, r,
                "the message answered SLAVE_NOT_AVAILABLE is in the queue",
                keep_in=("consumerGroup", "topic", "queueId", "queueOffset", "sysFlag"),
                body_out={"messages": messages(r)})

        self.launch_broker("a1", "<slave>", {"brokerName": "broker-a", "brokerId": "1", "brokerRole": "SLAVE"})
        rec.measure("boot.a1.restart", self.boot("a1"))
        t0 = time.monotonic()
        wait_until("the SYNC_MASTER's slave again", lambda: self.send("a0", TOPIC, 1, "probe")[1].code == 0, 30, 0.5)
        rec.measure("sync_master.slave_ok_after_slave_boot", time.monotonic() - t0)
        wait_until("replication", self.replicated, 30)

    def phase_kill_master(self) -> None:
        rec = self.rec
        ext, r = self.send("a0", TOPIC, 0, "before-kill")
        assert r.code == 0, r
        last_offset = int((r.ext_fields or {})["queueOffset"])
        wait_until("replication", self.replicated, 30)
        wait_until("the slave's consume queue", lambda: self.max_offset("a1") == last_offset + 1, 30)
        t0 = time.monotonic()
        self.procs.stop("a0", signal.SIGKILL)

        def dropped() -> bool:
            rs = route_summary(self.route())
            return rs is not None and all("0" not in b["brokerAddrs"] for b in rs["brokerDatas"]
                                          if b["brokerName"] == "broker-a")
        _, waited = wait_until("the route without the master", dropped, 150, 0.1)
        rec.measure("kill9.route_drops_master", time.monotonic() - t0)
        r = self.route()
        rec.add("6.route.after_kill9", "<namesrv>", RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}, r,
                "kill -9 of the master: the name server drops its address when the broker's channel closes "
                "(BrokerHousekeepingService.onChannelClose), not after the 120 s scan; broker-a's queueDatas stay "
                "(the slave keeps the brokerName alive)", body_out=route_summary(r))
        r = call(self.ns, RequestCode.GET_BROKER_CLUSTER_INFO)
        rec.add("6.cluster_list.after_kill9", "<namesrv>", RequestCode.GET_BROKER_CLUSTER_INFO, None, r,
                "clusterList after the kill", body_out=cluster_summary(r))
        ext, r = self.pull("a1", G_PULL, last_offset)
        rec.add("6.pull.slave.master_down", "<slave>", RequestCode.PULL_MESSAGE, ext, r,
                "the slave still serves what was replicated (slaveReadEnable=false)",
                keep_in=("consumerGroup", "topic", "queueId", "queueOffset", "sysFlag"),
                body_out={"messages": messages(r)})
        ext, r = self.send("a1", TOPIC, 0, "to-slave-master-down")
        rec.add("6.send.slave.master_down", "<slave>", RequestCode.SEND_MESSAGE_V2, ext, r,
                "the slave still refuses sends (no automatic promotion in 4.9.8 without DLedger)")
        ext, r = self.query_offset("a1", G_OFFSET)
        rec.add("6.query_offset.slave.master_down", "<slave>", RequestCode.QUERY_CONSUMER_OFFSET, ext, r,
                "the slave answers offsets from its last sync")

        # restart the master on the same store and port (ASYNC_MASTER, so a send does not depend on the slave)
        t0 = time.monotonic()
        self.launch_broker("a0", "<master>", {"brokerName": "broker-a", "brokerId": "0",
                                               "brokerRole": "ASYNC_MASTER"})
        rec.measure("boot.a0.restart_after_kill9", self.boot("a0"))
        t_boot = time.monotonic()
        ext, r = self.send("a0", TOPIC, 0, "after-restart")
        rec.add("6.send.master.after_restart", "<master>", RequestCode.SEND_MESSAGE_V2, ext, r,
                "the restarted master (same store and port) continues the queue offsets")
        off = int((r.ext_fields or {}).get("queueOffset", "-1"))
        t_send = time.monotonic()

        def on_slave() -> bool:
            return any(m["body"] == "after-restart" for m in messages(self.pull("a1", G_PULL, off)[1]))
        wait_until("the new message on the slave", on_slave, 60, 0.2)
        rec.measure("restart.new_message_on_slave_after_master_boot", time.monotonic() - t_boot)
        rec.measure("restart.new_message_on_slave_after_send", time.monotonic() - t_send)
        ext, r = self.pull("a1", G_PULL, off)
        rec.add("6.pull.slave.after_master_restart", "<slave>", RequestCode.PULL_MESSAGE, ext, r,
                "the slave's HAClient reconnected to the same HA address (it retries every 5 s)",
                keep_in=("consumerGroup", "topic", "queueId", "queueOffset", "sysFlag"),
                body_out={"messages": messages(r)})
        r = self.route()
        rec.add("6.route.after_restart", "<namesrv>", RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}, r,
                "the master is back in the route", body_out=route_summary(r))

    def java_tool(self, name: str, *args: str) -> Path:
        env = dict(os.environ)
        return self.procs.start(name, ["/tmp/javarmq/bin/rmq-java", *args], env)

    def java_lines(self, name: str) -> list[dict[str, Any]]:
        out = []
        for line in self.procs.logs[name].read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def java_wait(self, name: str, timeout: float) -> int:
        p = self.procs.live[name]
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.procs.stop(name)
            return -1
        finally:
            self.procs.live.pop(name, None)

    def phase_java(self) -> None:
        rec = self.rec
        if not Path("/tmp/javarmq/bin/rmq-java").exists():
            rec.steps.append({"step": "7.skipped", "note": "/tmp/javarmq/bin/rmq-java missing"})
            return
        for key in ("a0", "b0"):
            ext, r = self.create_topic(key, TOPIC7, 2)
            assert r.code == 0, r
        wait_until("HA_T7 on the slave", lambda: TOPIC7 in self.topics_of("a1").get("topicConfigTable", {}), 40,
                   0.5)
        wait_until("HA_T7 routed to both", lambda: len((route_summary(self.route(TOPIC7)) or {}).get(
            "queueDatas", [])) == 2, 30)
        batch1 = [f"b1-{i}" for i in range(8)]
        for i, body in enumerate(batch1):
            assert self.send("a0", TOPIC7, i % 2, body)[1].code == 0
        self.java_tool("consume1", "PushConsume", self.ns, "CLUSTERING", G7, "8", "60", TOPIC7, "first")
        rc1 = self.java_wait("consume1", 90)
        got1 = [x["body"] for x in self.java_lines("consume1") if x.get("event") == "consumed"]
        t0 = time.monotonic()

        def slave_has_offsets() -> bool:
            return all((self.query_offset("a1", G7, q, TOPIC7)[1].ext_fields or {}).get("offset") == "4"
                       for q in (0, 1))
        synced = True
        try:
            wait_until("G7's offsets on the slave", slave_has_offsets, 45, 0.5)
        except RuntimeError:
            synced = False
        rec.measure("java.offsets_on_slave_after_consumer_exit", time.monotonic() - t0)
        batch2 = [f"b2-{i}" for i in range(6)]
        for i, body in enumerate(batch2):
            assert self.send("a0", TOPIC7, i % 2, body)[1].code == 0
        wait_until("replication of batch 2", lambda: self.replicated() and self.max_offset("a1", TOPIC7, 0) == 7
                   and self.max_offset("a1", TOPIC7, 1) == 7, 30)
        self.procs.stop("a0", signal.SIGKILL)
        wait_until("the route without the master", lambda: all(
            "0" not in b["brokerAddrs"] for b in (route_summary(self.route(TOPIC7)) or {"brokerDatas": []})[
                "brokerDatas"] if b["brokerName"] == "broker-a"), 150, 0.1)
        self.java_tool("consume2", "PushConsume", self.ns, "CLUSTERING", G7, "16", "90", TOPIC7, "first")
        try:
            wait_until("batch 2 from the slave", lambda: sum(
                1 for x in self.java_lines("consume2") if x.get("event") == "consumed") >= 6, 60, 0.5)
        except RuntimeError:
            pass
        self.java_tool("produce", "Produce", self.ns, "10", TOPIC7, "TagA", "HA_PG_java")
        rcp = self.java_wait("produce", 90)
        sends = [x for x in self.java_lines("produce") if x.get("event") in ("sent", "send_error")]
        rc2 = self.java_wait("consume2", 90)
        consumed2 = [x for x in self.java_lines("consume2") if x.get("event") == "consumed"]
        got2 = [x["body"] for x in consumed2]
        dup = sorted(b for b in got2 if b in got1 or got2.count(b) > 1)
        rec.steps.append(rec.norm({
            "step": "7.java_push_consumer_through_master_kill9",
            "request": {"client": "official Java 4.9.8 DefaultMQPushConsumer (rmq-java PushConsume, CLUSTERING, "
                                  "CONSUME_FROM_FIRST_OFFSET) and DefaultMQProducer (rmq-java Produce)",
                        "topic": TOPIC7, "queues": "2 on broker-a, 2 on broker-b", "group": G7,
                        "sequence": ["8 messages b1-* to broker-a's master", "consumer 1 consumes 8 and exits",
                                     "wait until the slave shows the group's offsets (4, 4)",
                                     "6 messages b2-* to broker-a's master, replicated",
                                     "kill -9 broker-a's master, wait until the route drops it",
                                     "consumer 2 (same group) starts",
                                     "Produce sends 10 hello-java-* while broker-a's master is down"]},
            "response": {
                "consumer1": {"exit": rc1, "consumed": sorted(got1)},
                "slave_had_consumer1_offsets_before_kill": synced,
                "consumer2": {"exit": rc2, "consumed_count": len(got2),
                              "consumed_from_broker_a_slave": sorted(b for b in got2 if b.startswith("b")),
                              "consumed_hello_java": len([b for b in got2 if b.startswith("hello-java")]),
                              "duplicates": dup,
                              "lost_batch2": sorted(set(batch2) - set(got2))},
                "producer": {"exit": rcp, "statuses": sorted({x.get("status", "send_error") for x in sends}),
                             "brokers": sorted({x.get("broker", "-") for x in sends}),
                             "errors": [x.get("error") for x in sends if x.get("event") == "send_error"]}},
            "note": "the push consumer pulls broker-a's queues from the slave while the master is down "
                    "(MQClientInstance.findBrokerAddressInSubscribe falls back to any address of the brokerName); "
                    "the producer skips broker-a (no master address) and sends to broker-b"}))
        print(f"[7] consumer1 rc={rc1} {len(got1)}; consumer2 rc={rc2} {len(got2)} dup={dup}; producer rc={rcp} "
              f"brokers={sorted({x.get('broker', '-') for x in sends})}", flush=True)

        # the master comes back: consumer 2 committed broker-a's offsets (7, 7) to the slave only; what do the two
        # brokers answer after the slave's next sync, and does a new consumer of the group re-consume b2-*?
        def offsets(key: str) -> list[str | None]:
            return [(self.query_offset(key, G7, q, TOPIC7)[1].ext_fields or {}).get("offset") for q in (0, 1)]
        slave_before = offsets("a1")
        self.launch_broker("a0", "<master>", {"brokerName": "broker-a", "brokerId": "0",
                                               "brokerRole": "ASYNC_MASTER"})
        rec.measure("boot.a0.restart_in_step7", self.boot("a0"))
        t_boot = time.monotonic()
        master_after = offsets("a0")
        synced_back = True
        try:
            wait_until("the slave's offsets = the master's", lambda: offsets("a1") == master_after, 45, 0.5)
        except RuntimeError:
            synced_back = False
        rec.measure("java.slave_offsets_overwritten_after_master_boot", time.monotonic() - t_boot)
        slave_after = offsets("a1")
        self.java_tool("consume3", "PushConsume", self.ns, "CLUSTERING", G7, "6", "25", TOPIC7, "first")
        rc3 = self.java_wait("consume3", 60)
        got3 = [x["body"] for x in self.java_lines("consume3") if x.get("event") == "consumed"]
        rec.steps.append(rec.norm({
            "step": "7.java_after_master_restart",
            "request": {"sequence": ["restart broker-a's master (same store and port) after step 7",
                                     "wait until the slave's offsets of the group equal the master's",
                                     "consumer 3 (same group, CONSUME_FROM_FIRST_OFFSET) runs for at most 25 s"]},
            "response": {"slave_offsets_before_master_restart": slave_before,
                         "master_offsets_after_restart": master_after,
                         "slave_offsets_after_sync": slave_after, "slave_synced_within_45_s": synced_back,
                         "consumer3": {"exit": rc3, "consumed": sorted(got3)}},
            "note": "offsets committed while the master was down went to the slave only (RemoteBrokerOffsetStore "
                    "falls back to the slave); the master restarts with its own older offsets and the slave's next "
                    "SlaveSynchronize.syncConsumerOffset overwrites the slave's newer ones, so a consumer that starts "
                    "afterwards re-consumes what was consumed from the slave"}))
        print(f"[7b] slave before {slave_before} master after {master_after} slave after {slave_after}; "
              f"consumer3 rc={rc3} {sorted(got3)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--no-java", action="store_true", help="skip step 7 (Java push consumer through a kill -9)")
    ap.add_argument("--keep-logs", type=Path, help="copy the process logs here afterwards")
    args = ap.parse_args(argv)
    ensure_built(REAL_49)
    root = Path(tempfile.mkdtemp(prefix="ha-record-"))
    rec = Recorder()
    rec.dirs.append((str(root), "<dir>"))
    run = Run(root, rec, not args.no_java)

    def on_signal(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ok = False
    try:
        run.run()
        ok = True
    finally:
        run.procs.stop_all()
        if args.keep_logs:
            shutil.copytree(root, args.keep_logs, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("commitlog", "consumequeue", "index"))
        shutil.rmtree(root, ignore_errors=True)
    meta = {"recorded_with": REAL_49.name,
            "topology": "1 name server; broker-a master (brokerId 0) + slave (brokerId 1, brokerRole SLAVE, own store "
                        "and port, master learnt from the name server); broker-b master; all on 127.0.0.1 free ports, "
                        "-Dtls.server.mode=disabled",
            "regenerate": ".venv/bin/python -m rocketmq_emulator.testing.parity.ha_record "
                          "tests/parity/ha/real_4_9_8.json",
            "placeholders": {"<namesrv>": "name server address", "<master>": "broker-a master address",
                             "<slave>": "broker-a slave address", "<broker-b>": "broker-b address",
                             "<master-ha>/<slave-ha>": "HA port (listenPort+1)", "<msgId>": "a message id",
                             "<master-port>/<master-ha-port>/...": "a port number given alone (haListenPort)",
                             "<%5.2f>": "a disk usage ratio (String.format %5.2f, -1.00 for a missing dir)"},
            "measured_note": "seconds on a shared 2-vCPU VM; they vary from run to run: compare bounds, not values"}
    if ok:
        rec.dump(args.out, meta)
        print(f"wrote {args.out}: {len(rec.steps)} steps", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
