"""What the official 5.x Python client (rocketmq-python-client 5.1.2, through py5_driver.py) observes against the
real Apache RocketMQ 5.3.3 proxy, replayed against the emulator's gRPC endpoint: a produce, a SimpleConsumer's
receive and ack, FIFO order within a message group, a delayed message, a change of invisible time, a push
consumer's failed consumption delivered again. The observations (messages per step, in
the order received, with tag, keys, properties, attempt, message group, whether a delivery time came) were
recorded twice against fresh real brokers into tests/parity/snapshots_grpc/py5_client.json:

    .venv/bin/python -m integration_tests.test_parity_py5 record

What is left out, with its reason: message ids (the client makes them), times, and the receive errors and empty
receives a consumer has on the way (the real proxy fails the first receive of a fresh proxy with 50001 until the
client's settings arrive over Telemetry: shared/realbroker5/README.md; how often a receive comes back empty
depends on timing)."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from rocketmq_emulator.testing.parity.grpc_runner import GrpcTarget, apply_setup

from .py5_client import run_py5

SNAPSHOT = Path(__file__).resolve().parents[1] / "tests" / "parity" / "snapshots_grpc" / "py5_client.json"
SETUP = {"topics": [{"name": "P5Normal", "type": "NORMAL", "queues": 1},
                    {"name": "P5Fifo", "type": "FIFO", "queues": 4},
                    {"name": "P5Delay", "type": "DELAY", "queues": 1},
                    {"name": "P5Push", "type": "NORMAL", "queues": 1}],
         "groups": [{"name": "P5Group"}, {"name": "P5FifoGroup", "fifo": True}, {"name": "P5DelayGroup"},
                    {"name": "P5PushGroup"}]}
#: (step name, driver arguments): run in order, each a driver process of its own
STEPS: list[tuple[str, list[str]]] = [
    ("produce normal", ["produce", "--topic", "P5Normal", "--count", "3", "--tag", "TagA", "--keys", "key{i}",
                        "--prop", "color=red{i}"]),
    ("receive and ack normal", ["simple", "--topic", "P5Normal", "--group", "P5Group", "--expect", "3",
                                "--await", "5", "--duration", "40"]),
    ("receive again: nothing", ["simple", "--topic", "P5Normal", "--group", "P5Group", "--duration", "6",
                                "--await", "5"]),
    ("produce fifo", ["produce", "--topic", "P5Fifo", "--count", "5", "--message-group", "order-1", "--body-prefix",
                      "f"]),
    ("receive fifo in order", ["simple", "--topic", "P5Fifo", "--group", "P5FifoGroup", "--expect", "5",
                               "--batch", "1", "--await", "5", "--duration", "40"]),
    ("produce delayed 3 s", ["produce", "--topic", "P5Delay", "--count", "1", "--delay-s", "3", "--body-prefix",
                             "d"]),
    ("receive the delayed message", ["simple", "--topic", "P5Delay", "--group", "P5DelayGroup", "--expect", "1",
                                     "--await", "10", "--duration", "40"]),
    ("produce a delayed message to a normal topic", ["produce", "--topic", "P5Normal", "--count", "1",
                                                     "--delay-s", "3", "--body-prefix", "x"]),
    ("produce one to change", ["produce", "--topic", "P5Normal", "--count", "1", "--body-prefix", "c"]),
    ("change its invisible time, receive it again", ["simple", "--topic", "P5Normal", "--group", "P5Group",
                                                     "--ack", "after-change", "--change-to", "1", "--expect", "2",
                                                     "--await", "5", "--duration", "60"]),
    ("produce two for a push consumer", ["produce", "--topic", "P5Push", "--count", "2", "--body-prefix", "p"]),
    ("push consumer fails each once", ["push", "--topic", "P5Push", "--group", "P5PushGroup", "--fail-first", "1",
                                       "--expect", "2", "--duration", "60"]),
]


def observe(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A driver run's events as what a user sees, without ids and times."""
    out: dict[str, Any] = {}
    sent = [e for e in events if e["event"] == "sent"]
    errors = [e for e in events if e["event"] == "send_error"]
    if sent or errors:
        out["sent"] = len(sent)
        out["send_errors"] = sorted({e["error"].split(" (")[0] for e in errors})
    received = [e for e in events if e["event"] == "received"]
    if received or not (sent or errors):
        out["received"] = [{"body": e["body"], "tag": e["tag"], "keys": e["keys"], "props": e["props"],
                            "attempt": e["attempt"], "topic": e["topic"], "message_group": e["message_group"],
                            "delivery_time": e["delivery_ts"] is not None,
                            **({"failed": e["failed"]} if "failed" in e else {})} for e in received]
        if any("failed" in e for e in received):  # a push consumer consumes in threads: in no set order
            out["received"].sort(key=lambda r: (r["body"], r["attempt"]))
    out["finished"] = any(e["event"] == "done" for e in events)
    return out


def run_steps(endpoint: str, broker: str, namesrv: str, home: Path) -> list[dict[str, Any]]:
    asyncio.run(apply_setup(SETUP, GrpcTarget(endpoint, broker, namesrv)))
    records = []
    for i, (name, args) in enumerate(STEPS):
        command, *rest = args
        handle = run_py5([command, "--endpoint", endpoint, *rest], home=home / f"step{i}", timeout=90)
        records.append({"step": name, "observed": observe(handle.events)})
    return records


def record(times: int = 2) -> int:
    from rocketmq_emulator.testing.parity.real import REAL_53, start

    runs = []
    for n in range(times):
        broker = start(REAL_53)
        try:
            with tempfile.TemporaryDirectory(prefix="parity-py5-") as home:
                runs.append(run_steps(broker.grpc, broker.broker, broker.namesrv, Path(home)))
        finally:
            broker.stop()
        print(f"recorded #{n + 1}: {json.dumps(runs[-1])[:400]}", flush=True)
    if any(r != runs[0] for r in runs[1:]):
        print("two fresh real proxies gave different observations:", json.dumps(runs, indent=1), file=sys.stderr)
        return 1
    SNAPSHOT.write_text(json.dumps({"recorded_with": REAL_53.name, "recordings_compared": times,
                                    "client": "rocketmq-python-client 5.1.2 (integration_tests/py5_driver.py)",
                                    "setup": SETUP, "records": runs[0]}, indent=1) + "\n")
    print(f"wrote {SNAPSHOT}")
    return 0


@pytest.mark.timeout(400)
def test_the_5x_python_client_sees_on_the_emulator_what_it_sees_on_the_real_5_3_3(tmp_path):
    from rocketmq_emulator.testing.emulator_process import launch_emulator

    snapshot = json.loads(SNAPSHOT.read_text())
    assert snapshot["recordings_compared"] >= 2
    broker = launch_emulator(tmp_path, grpc=True)
    try:
        assert broker.grpc_endpoint is not None
        got = run_steps(broker.grpc_endpoint, broker.broker_addr, broker.namesrv_addr, tmp_path / "homes")
    finally:
        broker.stop()
    for real, emulated in zip(snapshot["records"], got):
        assert emulated == real, f"{real['step']}: the real 5.3.3 proxy {real['observed']}, the emulator " \
                                 f"{emulated['observed']}"
    assert len(got) == len(snapshot["records"])


if __name__ == "__main__":
    sys.exit(record() if sys.argv[1:] == ["record"] else 2)
