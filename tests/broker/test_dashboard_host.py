"""The dashboard's Host check and body decoding (broker/dashboard/hosts.py, server.py's decode_body), over real HTTP
on 127.0.0.1: a request for another name (a DNS rebinding page: to the browser it is the dashboard's own origin)
gets 421 for a page, a static file, a JSON read and an action, and the action does nothing; the bound address,
localhost and the configured names are answered; a refused host is logged once. A JSON body nested too deeply,
or one the decoder refuses, answers 400 naming the problem, with nothing logged at ERROR."""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import pytest

from rocketmq_emulator.broker.dashboard.hosts import HostCheck, split_host
from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.broker.settings import SettingError, emulator_config
from rocketmq_emulator.cli.main import build_parser
from rocketmq_emulator.cli.serve import config_from_args

LOGGER = "rocketmq_emulator.dashboard"


@pytest.fixture
async def dash(tmp_path):
    cfg = emulator_config(namesrv_port=0, listen_port=0, dashboard_port=0, topics="T:2",
                          dashboard_allowed_hosts="Dash.Example,pinned.example:1",
                          store_path_root_dir=str(tmp_path / "store"))
    async with Emulator(cfg) as emu:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{emu.dashboard.port}") as http:
            yield emu, http, emu.dashboard.port


async def request(http, method: str, path: str, host: str, **kw):  # noqa: ANN001, ANN201
    async with http.request(method, path, headers={"Host": host, **kw.pop("headers", {})}, **kw) as r:
        return r.status, await r.text()


async def raw(port: int, lines: list[str]) -> bytes:
    """A hand-written request (aiohttp always sends one Host): its answer's status line and body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    answer = await reader.read()
    writer.close()
    return answer


async def test_another_host_gets_421_for_pages_static_files_reads_and_actions(dash, caplog):
    emu, http, port = dash
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "localhost.evil.example"):
        with caplog.at_level(logging.DEBUG, logger=LOGGER):
            for path in ("/", "/static/app.js", "/no-such-page"):
                status, text = await request(http, "GET", path, host)
                assert status == 421 and text.count("\n") == 1 and "not a name of this dashboard" in text, text
            for path in ("/api/overview", "/api/topics", "/api/topics/T", "/api/events"):
                status, text = await request(http, "GET", path, host)
                assert status == 421 and "--dashboard-allowed-hosts" in text, (path, text)
            origin = f"http://{host}"  # the rebinding page's own origin: the Origin check alone lets it through
            status, _ = await request(http, "POST", "/api/topics", host, json={"topic": "Rebound", "queues": 2},
                                      headers={"Origin": origin})
            assert status == 421
            status, _ = await request(http, "POST", "/api/controls/advance", host, json={"seconds": 3600})
            assert status == 421
    assert emu.read_model().topic("Rebound") is None and emu.clock.offset_ms == 0  # the actions did nothing
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 4, [r.getMessage() for r in warnings]  # once per host, however many requests
    assert "evil.example" in warnings[0].getMessage()


async def test_no_host_or_two_hosts_are_refused(dash):
    _, _, port = dash
    assert (await raw(port, ["GET /api/topics HTTP/1.0"])).startswith(b"HTTP/1.0 421")
    two = await raw(port, ["GET / HTTP/1.1", f"Host: 127.0.0.1:{port}", "Host: evil.example", "Connection: close"])
    assert two.split(b" ")[1] in (b"400", b"421"), two[:80]  # aiohttp may refuse it first


async def test_the_bound_address_localhost_and_configured_names_are_answered(dash):
    emu, http, port = dash
    allowed = [f"127.0.0.1:{port}", "127.0.0.1", f"localhost:{port}", "LOCALHOST", "localhost.", f"[::1]:{port}",
               "localhost.localdomain", f"app.localhost:{port}", "dash.example", f"DASH.example:{port}",
               "pinned.example:1", f"127.0.0.1:{port + 1}"]  # a port published under another number
    for host in allowed:
        status, _ = await request(http, "GET", "/api/overview", host)
        assert status == 200, host
    status, page = await request(http, "GET", "/", f"localhost:{port}")
    assert status == 200 and "rocketmq-emulator dashboard" in page
    for host in ("pinned.example:2", "pinned.example", "dash.example.evil", "", "a b", "127.0.0.1:x",
                 f"127.0.0.1:{port}@evil.example"):
        assert (await request(http, "GET", "/api/overview", host))[0] == 421, host
    origin = f"http://dash.example:{port}"
    status, created = await request(http, "POST", "/api/topics", f"dash.example:{port}",
                                    json={"topic": "ByName", "queues": 1}, headers={"Origin": origin})
    assert status == 200 and emu.read_model().topic("ByName") is not None


@pytest.mark.parametrize("body,problem", [
    ('{"topic": "N", "x": ' + "[" * 33 + "]" * 33 + "}", "nested too deeply"),
    ('{"topic": "N", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),  # past the decoder's limit
    ('{"topic": "N", "x": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}", "nested too deeply"),
    ("[" * 200_000, "nested too deeply"),  # the decoder's RecursionError comes before the missing end
    ('{"topic": "N"', "not valid JSON"),
    ('{"topic": "\\ud800"}', "not valid JSON"),
    ('{"queues": 1e400}', "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
], ids=["33-levels", "100000-levels", "5000-objects", "unclosed-200000", "truncated", "lone-surrogate",
        "number-out-of-range", "not-an-object"])
async def test_a_deep_or_refused_json_body_answers_400_naming_it_and_logs_no_error(dash, caplog, body, problem):
    emu, http, port = dash
    with caplog.at_level(logging.DEBUG):
        for path in ("/api/topics", "/api/send", "/api/groups/G/reset/preview", "/api/controls/advance"):
            async with http.post(path, data=body, headers={"Content-Type": "application/json"}) as r:
                assert r.status == 400, (path, await r.text())
                assert problem in (await r.json())["error"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text[-2000:]
    assert emu.read_model().topic("N") is None


async def test_a_body_32_levels_deep_is_still_taken(dash):
    emu, http, port = dash
    body = '{"topic": "Deep", "x": ' + "[" * 31 + "]" * 31 + "}"  # the object itself is level 1
    async with http.post("/api/topics", data=body, headers={"Content-Type": "application/json"}) as r:
        assert r.status == 200, await r.text()
    assert emu.read_model().topic("Deep") is not None


def test_the_setting_from_flags_environment_and_code():
    def from_cli(argv: list[str], environ: dict[str, str]):  # noqa: ANN202
        return config_from_args(build_parser().parse_args(["serve", *argv]), environ)
    assert from_cli(["--dashboard-allowed-hosts", "a.example,B.example:8080"], {}).dashboard_allowed_hosts == \
        ("a.example", "b.example:8080")
    env = {"ROCKETMQ_EMULATOR_DASHBOARD_ALLOWED_HOSTS": "dev-vm,[::1]:80"}
    assert from_cli([], env).dashboard_allowed_hosts == ("dev-vm", "[::1]:80")
    assert emulator_config(dashboard_allowed_hosts=["x.example"]).dashboard_allowed_hosts == ("x.example",)
    assert emulator_config().dashboard_allowed_hosts == ()
    for bad in ("http://a.example", "a.example/x", "::1", "a.example:0", "a b"):
        with pytest.raises(SettingError, match="dashboardAllowedHosts"):
            emulator_config(dashboard_allowed_hosts=bad)


def test_the_host_rule():
    check = HostCheck("0.0.0.0", "10.1.2.3", ("dev-vm", "pinned:8080"))
    assert split_host("[::1]:8080") == ("[::1]", 8080) and split_host("Name.:80") == ("name", 80)
    assert split_host("a:b") is None and split_host("[::1") is None and split_host("a:70000") is None
    for host in ("10.1.2.3:8080", "192.168.1.5", "[fe80::1]:1", "dev-vm", "DEV-VM:9", "pinned:8080", "localhost"):
        assert check.allows(host), host
    for host in ("pinned:8081", "evil", "dev-vm.evil", "", "localhost:x", "0x7f.1"):
        assert not check.allows(host), host
    named = HostCheck("myvm.lan", "myvm.lan", ())  # --host NAME: that name is the dashboard's
    assert named.allows("myvm.lan:8080") and not named.allows("other.lan")
