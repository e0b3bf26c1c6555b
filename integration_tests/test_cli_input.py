"""The command line as a newcomer meets it: bad values are refused with one line and exit status 2 (JSON with
`--json`), never a traceback; `consume` prints and commits exactly what it is asked for, stops on Ctrl-C and
SIGTERM, reports an unknown topic or a lost broker, and leaves no throwaway group behind."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rocketmq_emulator.client import Admin
from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.command_line import run_cli as run
from rocketmq_emulator.testing.ports import free_broker_port, free_port

ROOT = Path(__file__).resolve().parents[1]
CLI = COMMAND  # what the `rocketmq-emulator` script runs

BAD_VALUES = [
    ["serve", "--config", "/nonexistent/broker.conf"],
    ["serve", "--log-level", "LOUD"],
    ["serve", "--namesrv-port", "99999"],
    ["serve", "--broker-port", "-1"],
    ["serve", "--advertised-port", "port"],
    ["serve", "--topic", "orders:many"],
    ["serve", "--topic", "orders:0"],
    ["serve", "--topic", "bad topic"],
    ["serve", "--group", "g/1"],
    ["serve", "--offset-durability", "sometimes"],
    ["serve", "--admin-allow", "localhost"],
    ["health", "--timeout", "0"],
    ["seed", "-t", "T", "--messages", "0"],
    ["seed", "-t", "T", "--messages", "5", "--body-size", "9-3"],
    ["seed", "-t", "T", "--messages", "5", "--tags", "TagA:0"],
    ["seed", "-t", "T", "--messages", "5", "--time-span", "soon"],
    ["seed", "-t", "T", "--messages", "5", "--keys", "a b"],
    ["seed", "-t", "T", "--messages", "5", "--progress-interval", "0"],
    ["seed", "-t", "T"],
    ["produce", "-t", "T", "-c", "-5"],
    ["produce", "-t", "T", "-c", "ten"],
    ["produce", "-t", "T", "--batch", "0"],
    ["produce", "-t", "T", "-m", "x", "-p", "novalue"],
    ["produce", "-t", "T", "--timeout", "nan"],
    ["consume", "-t", "T", "--max-messages", "0"],
    ["consume", "-t", "T", "--max-messages", "-1"],
    ["consume", "-t", "T", "--idle-timeout", "-1"],
    ["admin", "updateTopic", "-t", "T", "-p", "9"],
    ["admin", "updateTopic", "-t", "T", "-r", "100000"],
    ["admin", "updateTopic", "-t", "T", "-w", "0"],
    ["admin", "updateTopic", "-t", "T", "-o", "maybe"],
    ["admin", "queryMsgByKey", "-t", "T", "-k", "k", "-c", "-1"],
    ["admin", "queryMsgByKey", "-t", "T", "-k", "k", "-b", "-3"],
    ["admin", "resetOffsetByTime", "-g", "g", "-t", "T", "-s", "-5"],
    ["admin", "resetOffsetByTime", "-g", "g", "-t", "T", "-s", "yesterday"],
    ["admin", "resetOffsetByTime", "-g", "g", "-t", "T", "-s", "now", "-f", "perhaps"],
    ["admin", "noSuchCommand"],
    ["nosuchcommand"],
]


@pytest.mark.parametrize("args", BAD_VALUES, ids=[" ".join(a) for a in BAD_VALUES])
def test_a_bad_value_is_one_line_and_status_2(args):
    proc = run(*args)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("args", [a for a in BAD_VALUES if a[0] in ("produce", "consume", "admin") and len(a) > 2],
                         ids=lambda a: " ".join(a))
def test_with_json_the_error_is_json(args):
    proc = run(*args, "--json")
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    error = json.loads(line)
    assert error["code"] == "USAGE" and error["error"]


def test_a_bad_broker_conf_value_is_one_line(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\nnewGroupOffset=sometimes\n")
    proc = run("serve", "--config", str(conf))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {conf}: invalid value for newGroupOffset: 'sometimes' is not one of legacy, strict")


def test_a_bad_environment_value_is_one_line():
    proc = run("serve", env={"ROCKETMQ_EMULATOR_BROKER_PORT": "lots"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: ROCKETMQ_EMULATOR_BROKER_PORT='lots': invalid value for listenPort: 'lots' is not an int"]


@pytest.mark.parametrize("json_out", [False, True])
def test_no_server_is_one_line_and_status_1(json_out):
    proc = run("admin", "topicList", "-n", "127.0.0.1:1", *(["--json"] if json_out else []))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    if json_out:
        assert json.loads(line)["code"] == "BrokerUnreachableError"
    else:
        assert line.startswith("error: 127.0.0.1:1: cannot connect (Connection refused)")
        assert line.count("127.0.0.1") == 1, line  # asyncio's "Connect call failed ('127.0.0.1', 1)" repeated it


def test_delete_of_an_unknown_topic_says_so(emulator):
    proc = run("admin", "deleteTopic", "-n", emulator.namesrv_addr, "-t", "NoSuchTopic")
    assert proc.returncode == 1
    assert "'NoSuchTopic' does not exist" in proc.stderr


def test_produce_prints_the_id_that_query_msg_by_id_finds(emulator):
    ns = emulator.namesrv_addr
    out = run("produce", "-n", ns, "-t", "Lookup", "-m", "find me").stdout
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
    found = run("admin", "queryMsgById", "-n", ns, "-i", fields["offsetMsgId"], "--json")
    assert found.returncode == 0, found.stderr
    message = json.loads(found.stdout)
    assert message["body"] == "find me" and message["msgId"] == fields["uniqKey"]


def _produce(ns: str, topic: str, count: int) -> None:
    proc = run("admin", "updateTopic", "-n", ns, "-t", topic, "-r", "4", "-w", "4")
    assert proc.returncode == 0, proc.stderr
    proc = run("produce", "-n", ns, "-t", topic, "-m", "m{i}", "-c", str(count))
    assert proc.returncode == 0, proc.stderr


def _committed(emulator, group: str, topic: str) -> int:
    async def total() -> int:
        async with Admin(emulator.namesrv_addr) as admin:
            stats = await admin.consumer_progress(group, topic)
            return sum(w.consumer_offset for w in stats.offset_table.values())
    return emulator.run(total())


@pytest.mark.parametrize("n", [1, 7, 13])
def test_consume_max_messages_prints_and_commits_exactly_n(emulator, n):
    ns = emulator.namesrv_addr
    _produce(ns, "Exact", 20)
    proc = run("consume", "-n", ns, "-t", "Exact", "-g", f"exact{n}", "--from-beginning", "--max-messages", str(n))
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == n
    assert _committed(emulator, f"exact{n}", "Exact") == n


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_consume_stops_on_a_signal_despite_a_long_idle_timeout(emulator, sig):
    ns = emulator.namesrv_addr
    _produce(ns, "Stoppable", 5)
    proc = subprocess.Popen([*CLI, "consume", "-n", ns, "-t", "Stoppable", "-g", "stoppable", "--from-beginning",
                             "--idle-timeout", "600"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(5)]  # every message printed: it is idle now
        assert all(" | m" in line for line in lines)
        proc.send_signal(sig)
        rc = proc.wait(timeout=30)  # far below the idle timeout: the signal was not ignored
    finally:
        proc.kill()
    assert rc == 0, proc.stderr.read()
    assert _committed(emulator, "stoppable", "Stoppable") == 5


def test_consume_of_an_unknown_topic_fails_at_once(emulator):
    proc = run("consume", "-n", emulator.namesrv_addr, "-t", "NoSuchTopic", "--idle-timeout", "600")
    assert proc.returncode == 1
    assert "no route info of topic 'NoSuchTopic'" in proc.stderr


def test_consume_reports_a_lost_broker(tmp_path):
    ns_port, broker_port = free_port(), free_broker_port()
    server = subprocess.Popen([*CLI, "serve", "--namesrv-port", str(ns_port), "--broker-port", str(broker_port),
                               "--store-dir", str(tmp_path / "store")], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        assert "ready" in server.stderr.readline() + server.stderr.readline()
        ns = f"127.0.0.1:{ns_port}"
        _produce(ns, "Doomed", 3)
        consumer = subprocess.Popen([*CLI, "consume", "-n", ns, "-t", "Doomed", "--from-beginning",
                                     "--idle-timeout", "600"], cwd=ROOT, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        try:
            assert all(" | m" in consumer.stdout.readline() for _ in range(3))
            server.kill()
            server.wait(10)
            rc = consumer.wait(timeout=60)
            err = consumer.stderr.read()
        finally:
            consumer.kill()
    finally:
        server.kill()
    assert rc == 1 and "Traceback" not in err
    assert f"127.0.0.1:{ns_port}" in err or f"127.0.0.1:{broker_port}" in err


def test_consume_without_a_group_leaves_nothing_behind(emulator):
    ns = emulator.namesrv_addr
    _produce(ns, "Throwaway", 3)
    proc = run("consume", "-n", ns, "-t", "Throwaway", "--from-beginning", "--max-messages", "3")
    assert proc.returncode == 0, proc.stderr
    assert "rocketmq_emulator_console_<pid>" in run("consume", "-h").stdout
    groups = emulator.call(lambda: [g for g in emulator.broker.subscription_group_manager.table
                                    if g.startswith("rocketmq_emulator_console_")])
    offsets = emulator.call(lambda: [k for k in emulator.broker.consumer_offset_manager.offset_table
                                     if "rocketmq_emulator_console_" in k])
    topics = json.loads(run("admin", "topicList", "-n", ns, "--json").stdout)["topicList"]
    assert groups == [] and offsets == []
    assert not [t for t in topics if "rocketmq_emulator_console_" in t]


def test_cluster_list_counts_no_held_pulls_once_consumers_left(emulator):
    ns = emulator.namesrv_addr
    _produce(ns, "Quiet", 2)
    proc = run("consume", "-n", ns, "-t", "Quiet", "-g", "quiet", "--from-beginning", "--max-messages", "2")
    assert proc.returncode == 0, proc.stderr

    def held() -> str:
        [broker] = json.loads(run("admin", "clusterList", "-n", ns, "--json").stdout)
        return broker["runtime"]["pullHeldCount"]
    deadline = time.monotonic() + 5  # well before a held pull would time out by itself (15 s)
    while held() != "0" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert held() == "0"


def test_input_the_broker_refuses_is_worded_as_such(emulator):
    ns = emulator.namesrv_addr
    _produce(ns, "Refused", 2)
    emulator.call(lambda: emulator.broker.subscription_group_manager.find("g"))  # a known group, as after a heartbeat
    proc = run("admin", "resetOffset", "-n", ns, "-g", "g", "-t", "Refused", "-o", "999999", "-q", "0")
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert "SYSTEM_ERROR (1): Target offset 999999 not in consume queue range" in line
    assert "the broker refused the request" in line and "internal error" not in line
    proc = run("admin", "resetOffset", "-n", ns, "-g", "g", "-t", "Refused", "-o", "999999", "--json")
    assert json.loads(proc.stderr)["code"] == "SYSTEM_ERROR"


def test_a_bad_topic_list_in_the_environment_is_one_line():
    proc = run("serve", env={"ROCKETMQ_EMULATOR_TOPICS": "orders:8,payments:x"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: ROCKETMQ_EMULATOR_TOPICS='orders:8,payments:x': invalid value for topics: topic 'payments:x': the "
        "queue count 'x' is not a "
        "number"]


@pytest.mark.parametrize("json_out", [False, True])
def test_health_of_a_missing_name_server_is_one_line_and_status_1(json_out):
    proc = run("health", "-n", "127.0.0.1:1", "--timeout", "1", *(["--json"] if json_out else []))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    [line] = proc.stdout.strip().splitlines()
    if json_out:
        assert json.loads(line)["healthy"] is False
    else:
        assert line == "unhealthy: the name server 127.0.0.1:1 does not answer: cannot connect (Connection refused)"


def test_health_names_the_broker_that_is_down(emulator):
    proc = run("health", "-n", emulator.namesrv_addr)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == f"healthy: name server {emulator.namesrv_addr}, broker broker-a (id 0) at " \
                                  f"127.0.0.1:{emulator.broker_port}"
    proc = run("health", "-n", emulator.namesrv_addr, "--broker", "127.0.0.1:1", "--timeout", "1")
    assert proc.returncode == 1
    assert proc.stdout.startswith("unhealthy: broker at 127.0.0.1:1 does not answer")


def test_a_range_error_writes_whole_numbers_in_full():
    """Not "0 to 3.1536e+08": the bound as a person writes it, with what it means."""
    line = run("admin", "advanceTime", "-s", "-5").stderr.strip()
    assert "-5 is out of range (0 to 315360000 seconds: ten years)" in line and "e+" not in line, line


def test_ctrl_c_during_produce_says_how_many_were_sent(emulator):
    """Ctrl-C (SIGINT) in the middle of `produce -c N`: exit status 130 and one line naming what was sent, which
    is exactly the SEND_OK lines printed."""
    proc = subprocess.Popen([*COMMAND, "produce", "-n", emulator.namesrv_addr, "-t", "CtrlC", "-c", "1000000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = 0
    assert proc.stdout is not None
    for _ in proc.stdout:  # wait until some are sent
        seen += 1
        if seen == 20:
            break
    proc.send_signal(signal.SIGINT)
    rest = proc.stdout.read()  # to the end (the lines the loop above already buffered too); stderr is one line
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.wait(timeout=30)
    printed = seen + len(rest.splitlines())
    assert proc.returncode == 130, err
    assert f"interrupted: {printed} of 1000000 message(s) sent" in err and "Traceback" not in err, err


@pytest.mark.parametrize("args, prog", [
    (["produce", "-t", "T", "-b", "x"], "rocketmq-emulator produce"),
    (["admin", "topicList", "--cluster", "c"], "rocketmq-emulator admin topicList"),
    (["consume", "-t", "T", "extra"], "rocketmq-emulator consume"),
], ids=["produce", "admin topicList", "consume"])
def test_an_unknown_argument_names_the_subcommand(args, prog):
    """argparse reports arguments no subcommand knows from the top parser; the line names the subcommand the user
    typed and points to its help."""
    proc = run(*args)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {prog}: unrecognized arguments: ") and line.endswith(f"(see {prog} -h)"), line


@pytest.mark.parametrize("args", [["admin", "updateTopic", "-t", "bad topic"], ["produce", "-t", "bad topic", "-m", "x"],
                                  ["serve", "--group", "g/1"], ["serve", "--topic", "bad topic"]],
                         ids=["updateTopic", "produce", "serve --group", "serve --topic"])
def test_a_bad_name_is_explained_in_words_not_a_regex(args):
    proc = run(*args, "-n", "127.0.0.1:1") if args[0] != "serve" else run(*args)
    [line] = proc.stderr.strip().splitlines()
    assert "letters, digits and the characters % | _ -" in line, line
    assert "a-zA-Z" not in line and "^" not in line, line


def test_a_refusal_by_the_name_server_is_not_blamed_on_the_broker(emulator):
    proc = run("admin", "stopBroker", "-n", emulator.namesrv_addr, "-b", "nosuch")
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert line == ("error: stop broker nosuch failed at the name server: SYSTEM_ERROR (1): no broker named 'nosuch' "
                    "in this emulator (it has broker-a) (the name server refused the request)"), line


@pytest.mark.parametrize("args, expected", [
    (["--namesrv-port", "20876", "--broker-port", "20876"],
     "error: --namesrv-port 20876 (the name server) and --broker-port 20876 (broker broker-a): one port cannot serve "
     "both; give each its own (0 picks a free one)"),
    (["--namesrv-port", "20874", "--broker-port", "20876"],
     "error: --namesrv-port 20874 (the name server) and 20874 (broker broker-a's VIP port, its port minus 2): one "
     "port cannot serve both; give each its own (0 picks a free one)"),
    (["--namesrv-port", "0", "--broker-port", "20876", "--brokers", "2", "--dashboard-port", "20886"],
     "error: --broker-port 20876 + 10 (broker broker-b) and --dashboard-port 20886: one port cannot serve both; "
     "give each its own (0 picks a free one)"),
], ids=["namesrv = broker", "namesrv = VIP", "second broker = dashboard"])
def test_one_port_for_two_servers_is_refused_before_binding(args, expected):
    """Nothing is bound (the ports need not be free): the settings are refused as they are read, naming both roles."""
    proc = run("serve", "--ephemeral", *args)
    assert proc.returncode == 2 and proc.stderr.strip() == expected, proc.stderr


@pytest.mark.parametrize("flag, server", [("--namesrv-port", "the name server"), ("--broker-port", "broker broker-a"),
                                          ("--grpc-port", "the gRPC endpoint"), ("--dashboard-port", "the dashboard")])
def test_a_taken_port_names_the_server_and_its_flag(flag, server):
    """A port another program holds: one line naming which server could not listen and the flag to change; no
    bind traceback, and no gRPC C-core log line with its advice about GRPC_VERBOSITY."""
    import socket
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    taken = holder.getsockname()[1]
    try:
        ports = {"--namesrv-port": "0", "--broker-port": str(free_broker_port())}
        ports[flag] = str(taken)
        proc = run("serve", "--ephemeral", *(a for kv in ports.items() for a in kv))
    finally:
        holder.close()
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if " INFO " not in line]
    assert len(errors) == 1, proc.stderr
    assert errors[0].endswith(f"ERROR rocketmq_emulator: cannot start: {server} cannot listen on 127.0.0.1:{taken}: "
                              f"the port is in use (by another program, or another server of this one); choose "
                              f"another with {flag} (0 picks a free one)"), proc.stderr
