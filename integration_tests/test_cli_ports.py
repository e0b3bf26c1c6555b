"""The command line's ports and start-up (issue 22): every port given or implied is checked (one line, exit 2,
never a wrapped port or a traceback), a route with a bad port is one line in `health`, the client commands run
in the `rocketmq-emulator` process itself importing only what they use, and `serve`'s ready line counts from the
process's start."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocketmq_emulator.broker.settings import SettingError, emulator_config
from rocketmq_emulator.cli.main import build_parser
from rocketmq_emulator.cli.serve import ConfigError, config_from_args
from rocketmq_emulator.protocol.admin_bodies import DataVersion
from rocketmq_emulator.testing.command_line import COMMAND

ROOT = Path(__file__).resolve().parents[1]
CLI = COMMAND  # what the `rocketmq-emulator` script runs
BAD_NAMESRV = "127.0.0.1:99999"


def run(*args: str, env: dict[str, str] | None = None, python: tuple[str, ...] = ()) \
        -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *python, *CLI[1:], *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "NAMESRV_ADDR": "", **(env or {})})


def one_error_line(proc: subprocess.CompletedProcess[str], status: int = 2) -> str:
    assert proc.returncode == status, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def admin_commands() -> list[str]:
    parser = build_parser(["admin"])
    [admin] = [a for a in parser._subparsers._group_actions if a.dest == "command"]  # noqa: SLF001
    [sub] = [a for a in admin.choices["admin"]._subparsers._group_actions]  # noqa: SLF001
    return sorted(sub.choices)


CLIENT_COMMANDS = [["admin", name] for name in admin_commands()] + [
    ["produce", "-t", "T", "-m", "x"], ["consume", "-t", "T"], ["health"], ["seed", "-t", "T", "--messages", "1"]]


@pytest.mark.parametrize("args", CLIENT_COMMANDS, ids=" ".join)
def test_an_out_of_range_name_server_port_is_one_line_and_status_2(args):
    line = one_error_line(run(*args, "-n", BAD_NAMESRV))
    assert f"'{BAD_NAMESRV}': port 99999 is out of range (1 to 65535)" in line


@pytest.mark.parametrize("command", [["health"], ["admin", "topicList"], ["produce", "-t", "T", "-m", "x"]],
                         ids=" ".join)
def test_an_out_of_range_port_in_namesrv_addr_is_one_line(command):
    line = one_error_line(run(*command, env={"NAMESRV_ADDR": "127.0.0.1:9876;127.0.0.1:65536"}))
    assert line == "error: NAMESRV_ADDR='127.0.0.1:9876;127.0.0.1:65536': '127.0.0.1:65536': port 65536 is out " \
                   "of range (1 to 65535)", line
    line = one_error_line(run(*command, env={"NAMESRV_ADDR": "127.0.0.1:70000"}))
    assert line == "error: NAMESRV_ADDR='127.0.0.1:70000': port 70000 is out of range (1 to 65535)", line


@pytest.mark.parametrize("args", [["health", "--broker", "127.0.0.1:0"],
                                  ["admin", "updateTopic", "-t", "T", "-b", "127.0.0.1:70000"],
                                  ["admin", "exportOffsets", "-g", "g", "-b", "broker-a"],
                                  ["admin", "topicList", "-n", "127.0.0.1:9876;127.0.0.1:abc"],
                                  ["admin", "topicList", "-n", "localhost"]], ids=" ".join)
def test_other_bad_addresses_are_one_line(args):
    one_error_line(run(*args))


def test_with_json_a_bad_port_is_a_json_error():
    proc = run("admin", "topicList", "-n", BAD_NAMESRV, "--json")
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert json.loads(line)["code"] == "USAGE" and "99999" in json.loads(line)["error"]


SERVE_PORTS = [
    (["--brokers", "2", "--broker-port", "65530"], {}, "the last broker would listen on 65540"),
    (["--brokers", "26", "--broker-port", "65300"], {}, "at most 65285"),
    (["--brokers", "2"], {"ROCKETMQ_EMULATOR_BROKER_PORT": "65530"}, "would listen on 65540"),
    (["--broker-port", "2"], {}, "its VIP port would be 0"),
    (["--broker-port", "1"], {}, "its VIP port would be -1"),
    (["--advertised-port", "0"], {}, "--advertised-port 0: use 1 to 65535"),
    (["--advertised-port", "65535", "--brokers", "3"], {}, "the last broker would advertise 65555"),
    ([], {"ROCKETMQ_EMULATOR_ADVERTISED_PORT": "65530", "ROCKETMQ_EMULATOR_BROKERS": "2"}, "advertise 65540"),
    (["--namesrv-port", "65536"], {}, "65536 is out of range"),
    ([], {"ROCKETMQ_EMULATOR_NAMESRV_PORT": "70000"}, "ROCKETMQ_EMULATOR_NAMESRV_PORT='70000'"),
]


@pytest.mark.parametrize("args,env,expected", SERVE_PORTS, ids=[" ".join(a) or str(e) for a, e, _ in SERVE_PORTS])
def test_serve_refuses_a_port_that_would_wrap(args, env, expected, tmp_path):
    line = one_error_line(run("serve", "--store-dir", str(tmp_path / "store"), *args, env=env))
    assert expected in line, line
    assert not (tmp_path / "store").exists()  # refused before anything was started


def test_a_broker_conf_listen_port_out_of_range_is_one_line(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("listenPort=70000\n")
    line = one_error_line(run("serve", "--config", str(conf), "--store-dir", str(tmp_path / "store")))
    assert "invalid value for listenPort: 70000 is out of range (0 to 65535)" in line


@pytest.mark.parametrize("args", [["--brokers", "26", "--broker-port", "65285"], ["--broker-port", "3"],
                                  ["--broker-port", "0", "--brokers", "26"],
                                  ["--advertised-port", "65515", "--brokers", "3"]], ids=" ".join)
def test_the_highest_ports_that_fit_are_accepted(args):
    args = build_parser().parse_args(["serve", *args])
    config = config_from_args(args, environ={})
    assert len(config.brokers) >= 1


def test_the_port_check_covers_the_vip_port_only_when_the_vip_channel_is_on(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("listenPort=2\nvipChannelEnabled=false\n")
    config = config_from_args(build_parser().parse_args(["serve", "--config", str(conf)]), environ={})
    assert config.broker.listen_port == 2
    conf.write_text("listenPort=2\n")
    with pytest.raises(ConfigError, match="VIP port would be 0"):
        config_from_args(build_parser().parse_args(["serve", "--config", str(conf)]), environ={})


def test_health_reports_a_route_with_an_out_of_range_port_in_one_line(emulator_factory):
    emu = emulator_factory()
    with pytest.raises(SettingError, match="advertisedPort: 70000 is out of range"):
        emulator_config(advertised_port=70000)  # the emulator's own settings refuse it; another broker may not:
    routes = emu.broker.routes
    assert routes is not None
    emu.call(lambda: routes.register_broker("DefaultCluster", "broker-a", "127.0.0.1:70000", 0, {},
                                            DataVersion(counter=1)))  # what a misconfigured broker registers
    proc = run("health", "-n", emu.namesrv_addr, "--timeout", "2")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stdout.strip().splitlines()
    assert line.startswith("unhealthy: broker broker-a (id 0) at 127.0.0.1:70000 does not answer"), line
    assert "port must be 0-65535" in line


# -- one process, deferred imports ------------------------------------------------------------------------
#: runs the console entry point as the script does, then writes the modules loaded in this process
LOADED = """import json, sys
from rocketmq_emulator.cli.main import main
try:
    main(sys.argv[2:])
except SystemExit:
    pass
finally:
    with open(sys.argv[1], "w") as f:
        json.dump(sorted(sys.modules), f)
"""


def loaded_modules(tmp_path: Path, *args: str) -> set[str]:
    out = tmp_path / "modules.json"
    subprocess.run([sys.executable, "-c", LOADED, str(out), *args], cwd=ROOT, capture_output=True, timeout=60,
                   env={**os.environ, "NAMESRV_ADDR": ""})
    return set(json.loads(out.read_text()))


def test_client_commands_run_in_the_same_process():
    # `python -X importtime` logs the imports of this interpreter only: a re-executed one would log none of them
    proc = run("admin", "-h", python=("-X", "importtime"))
    logged = {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert {"rocketmq_emulator.cli.main", "rocketmq_emulator.cli.admin_commands"} <= logged


HEAVY = {"uvloop", "rocketmq_emulator.store", "rocketmq_emulator.broker.emulator", "rocketmq_emulator.broker.config",
         "rocketmq_emulator.client.push_consumer", "rocketmq_emulator.client.producer",
         "rocketmq_emulator.client.pull_consumer", "rocketmq_emulator.client.admin", "asyncio", "pyspark",
         "rocketmq_emulator.spark_tools.seed_job", "rocketmq_emulator.cli.serve", "rocketmq_emulator.cli.seed",
         "rocketmq_emulator.cli.client_commands", "rocketmq_emulator.cli.admin_commands"}
CLIENT = {"rocketmq_emulator.cli.client_commands"}
ADMIN = CLIENT | {"rocketmq_emulator.cli.admin_commands", "rocketmq_emulator.client.admin", "asyncio"}


@pytest.mark.parametrize("args,needs", [
    (["--help"], set()),
    (["produce", "-h"], CLIENT),
    (["health", "-h"], CLIENT),
    (["admin", "-h"], ADMIN),
    (["admin", "topicList", "-n", "127.0.0.1:1", "--timeout", "0.5"], ADMIN),
    (["produce", "-t", "T", "-m", "x", "-n", "127.0.0.1:1", "--timeout", "0.5"],
     CLIENT | {"rocketmq_emulator.client.producer", "asyncio"}),
    (["serve", "-h"], {"rocketmq_emulator.cli.serve"}),
    (["seed", "-h"], {"rocketmq_emulator.cli.seed"}),
    (["trace", "-h"], set()),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_a_command_imports_only_what_it_uses(args, needs, tmp_path):
    loaded = loaded_modules(tmp_path, *args)
    assert loaded & HEAVY == needs


def test_the_ready_line_counts_from_the_process_start(tmp_path):
    t0 = time.perf_counter()
    proc = subprocess.Popen([*CLI, "serve", "--namesrv-port", "0", "--broker-port", "0", "--store-dir",
                             str(tmp_path / "store")], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            found = re.search(r"\(started in (\d+) ms\)", line)
            if found:
                wall_ms = (time.perf_counter() - t0) * 1000
                break
        else:
            pytest.fail("no ready line")
    finally:
        proc.terminate()
        proc.wait(10)
    reported = int(found.group(1))
    # the interpreter's own start and the imports are part of it (they were not: 28 ms reported for 430 ms)
    assert 0.5 * wall_ms <= reported <= wall_ms + 20, (reported, wall_ms)


# -- the two small points of issue 22 ------------------------------------------------------------------------
def test_a_refusal_names_no_remark_above(emulator):
    ns = emulator.namesrv_addr
    run("admin", "updateTopic", "-n", ns, "-t", "Refused", "-r", "1", "-w", "1")
    emulator.call(lambda: emulator.broker.subscription_group_manager.find("g"))
    line = one_error_line(run("admin", "resetOffset", "-n", ns, "-g", "g", "-t", "Refused", "-o", "5"), 1)
    assert re.search(r"SYSTEM_ERROR \(1\): .+ \(the broker refused the request\)$", line), line


def test_a_broker_reset_prints_no_old_method_columns_in_json(emulator):
    ns = emulator.namesrv_addr
    assert run("produce", "-n", ns, "-t", "ResetJson", "-c", "2").returncode == 0
    emulator.call(lambda: emulator.broker.subscription_group_manager.find("g"))
    proc = run("admin", "resetOffsetByTime", "-n", ns, "-g", "g", "-t", "ResetJson", "-s", "0", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["method"] == "broker" and data["offsets"]
    assert all(set(row) == {"topic", "brokerName", "queueId", "offset"} for row in data["offsets"]), data


# -- serve --ready-file -----------------------------------------------------------------------------------------
def test_the_ready_file_gives_every_address_of_a_broker_started_on_port_0(tmp_path):
    """A script starts `serve` on free ports and learns them from the ready file (no log parsing): it appears
    whole once every server accepts, its addresses work, and a clean stop removes it."""
    import asyncio
    import socket
    import urllib.request

    from rocketmq_emulator.client import Admin
    ready = tmp_path / "ready.json"
    ready.write_text('{"namesrvAddr": "127.0.0.1:1"}')  # left by a killed run: not taken for this one's
    proc = subprocess.Popen([*CLI, "serve", "--namesrv-port", "0", "--broker-port", "0", "--grpc-port", "0",
                             "--dashboard-port", "0", "--ephemeral", "--ready-file", str(ready)],
                            cwd=ROOT, stderr=subprocess.DEVNULL, env={**os.environ, "NAMESRV_ADDR": ""})
    try:
        deadline = time.monotonic() + 30
        info = None
        while time.monotonic() < deadline and proc.poll() is None:
            if ready.exists():
                info = json.loads(ready.read_text())
                if info["namesrvAddr"] != "127.0.0.1:1":
                    break
            time.sleep(0.05)
        assert info is not None and info["namesrvAddr"] != "127.0.0.1:1", info
        assert info["pid"] == proc.pid and info["store"] is None and info["cluster"] == "DefaultCluster"
        [broker] = info["brokers"]
        assert broker["name"] == "broker-a" and broker["addr"] == f"127.0.0.1:{broker['port']}"

        async def cluster() -> list[str]:
            async with Admin(info["namesrvAddr"]) as admin:
                return [b.addr for b in await admin.cluster_list()]
        assert asyncio.run(cluster()) == [broker["addr"]]
        host, port = info["grpcAddr"].rsplit(":", 1)
        socket.create_connection((host, int(port)), timeout=5).close()
        with urllib.request.urlopen(info["dashboardUrl"] + "api/overview", timeout=10) as answer:
            assert answer.status == 200
    finally:
        proc.terminate()
        proc.wait(30)
    assert proc.returncode == 0 and not ready.exists()


def test_a_ready_file_that_cannot_be_written_stops_the_start(tmp_path):
    proc = subprocess.run([*CLI, "serve", "--namesrv-port", "0", "--broker-port", "0", "--ephemeral",
                           "--ready-file", str(tmp_path / "no" / "such" / "dir" / "ready.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    [line] = [x for x in proc.stderr.splitlines() if " INFO " not in x]
    assert line.endswith(f"cannot start: cannot write the ready file "
                         f"'{tmp_path}/no/such/dir/ready.json': No such file or directory"), proc.stderr


_WITHOUT = ("import sys\n"
            "class Missing:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == sys.argv[1]:\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
            "sys.meta_path.insert(0, Missing())\n"
            "from rocketmq_emulator.cli.main import main\n"
            "sys.exit(main(sys.argv[2:]))\n")


@pytest.mark.parametrize("module, flag, extra", [("aiohttp", "--dashboard-port", "dashboard"),
                                                 ("grpc", "--grpc-port", "grpc")])
def test_a_missing_extra_names_the_install_commands_that_work(module, flag, extra):
    """Without the extra's library installed (hidden from this process), the start fails with one line naming
    the command that works from a clone and the one for a registry, not only a registry name that does not exist
    yet."""
    proc = subprocess.run([sys.executable, "-c", _WITHOUT, module, "serve", "--namesrv-port", "0", "--broker-port",
                           "0", "--ephemeral", flag, "0"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if " INFO " not in x]
    assert (f"needs the [{extra}] extra (pip install -e '.[{extra}]' in a clone of rocketmq-emulator, or pip install "
            f"'rocketmq-emulator[{extra}]' from a package registry once released)") in line, line
