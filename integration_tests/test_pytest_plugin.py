"""The pytest plugin from the outside: README's complete test file, run by pytest in a subprocess (pytester)
with only the plugin's fixtures: its own emulator (round trip, expire_now, restart(clean=False), drop and
pause), then `--rocketmq-namesrv` pointing at a separately started emulator, and `--rocketmq-keep-store`."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest

from rocketmq_emulator.client import Producer

README = Path(__file__).resolve().parents[1] / "docs" / "user" / "pytest-plugin.md"
FAST_FORWARD = Path(__file__).resolve().parents[1] / "docs" / "user" / "fast-forward.md"
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

pytestmark = pytest.mark.timeout(600)


def readme_example() -> str:
    text = README.read_text()
    block = text.split("<!-- pytest-example:start -->", 1)[1].split("<!-- pytest-example:end -->", 1)[0]
    return block.split("```python\n", 1)[1].rsplit("```", 1)[0]


def project(pytester: pytest.Pytester, **files: str) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(**files)


def test_the_readme_test_file_passes_against_its_own_emulator(pytester):
    project(pytester, test_orders=readme_example())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=4)


#: the test project's conftest: every test records its worker, that worker's broker and its topic (if it has one)
WHERE = """
import json, os, pytest

@pytest.fixture(autouse=True)
def _where(rocketmq_broker, request):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    topic = request.getfixturevalue("rocketmq_topic") if "rocketmq_topic" in request.fixturenames else None
    with open(os.path.join(os.environ["WHERE_DIR"], request.node.name + ".json"), "w") as f:
        json.dump({"worker": worker, "namesrv": rocketmq_broker.namesrv_addr, "topic": topic}, f)
"""


@pytest.mark.parametrize("shared", [False, True], ids=["own-emulators", "one-shared-broker"])
def test_the_readme_test_file_passes_under_pytest_xdist(pytester, emulator, shared, tmp_path, monkeypatch):
    # `pytest -n 2`: each worker starts its own emulator on free ports, or, with --rocketmq-namesrv, the workers
    # share one broker; either way each test gets a topic of its own
    monkeypatch.setenv("WHERE_DIR", str(tmp_path))
    project(pytester, test_orders=readme_example(), conftest=WHERE)
    args = ["-p", "no:cacheprovider", "-n", "2"]
    result = pytester.runpytest_subprocess(*args, *(["-rs", "--rocketmq-namesrv", emulator.namesrv_addr]
                                                    if shared else []))
    if shared:
        result.assert_outcomes(passed=1, skipped=3)  # the faults need the plugin's own emulator (skipped, saying why)
    else:
        result.assert_outcomes(passed=4)
    seen = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    by_worker = {s["worker"]: s["namesrv"] for s in seen}
    assert sorted(by_worker) == ["gw0", "gw1"], seen  # both workers ran tests
    assert all(by_worker[s["worker"]] == s["namesrv"] for s in seen)  # one broker per worker for its session
    if shared:
        assert set(by_worker.values()) == {emulator.namesrv_addr}
    else:
        assert len(set(by_worker.values())) == 2 and emulator.namesrv_addr not in by_worker.values()
    topics = [s["topic"] for s in seen if s["topic"]]
    assert topics and len(set(topics)) == len(topics)


def test_rocketmq_namesrv_runs_the_same_tests_against_another_broker(pytester, emulator):
    async def send_others_messages() -> None:
        async with Producer("others_producer", namesrv=emulator.namesrv_addr) as producer:
            for i in range(3):
                await producer.send("OthersTopic", f"keep me {i}".encode())
    asyncio.run(send_others_messages())  # a shared development broker: someone else's messages
    store = emulator.broker.store
    before = {q: (store.get_min_offset_in_queue("OthersTopic", q), store.get_max_offset_in_queue("OthersTopic", q))
              for q in range(4)}
    assert sum(hi - lo for lo, hi in before.values()) == 3

    project(pytester, test_orders=readme_example())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", "--rocketmq-namesrv",
                                           emulator.namesrv_addr)
    after = {q: (store.get_min_offset_in_queue("OthersTopic", q), store.get_max_offset_in_queue("OthersTopic", q))
             for q in range(4)}
    assert after == before  # the other topic keeps every message
    # the round trip runs against the emulator started here; restart and pause need the plugin's own, and
    # expire_now and drop_connections would reach beyond this session's topics and clients: skipped, saying so
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines(["*expire_now() would expire every message of every topic on it, not only what "
                                 "this test session made*--rocketmq-namesrv*",
                                 "*restart() needs the broker this plugin starts*",
                                 "*drop_connections() would close the connections of every client of it*"])
    assert any(t.startswith("t_test_round_trip") for t in emulator.broker.topic_config_manager.table)


def test_the_faults_that_reach_beyond_the_session_are_refused_on_another_broker(pytester, emulator):
    project(pytester, test_faults="""
def test_stop_broker(rocketmq_broker):
    rocketmq_broker.stop_broker("broker-a")

def test_expire_now_of_every_topic(rocketmq_broker):
    rocketmq_broker.expire_now()
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", "--rocketmq-namesrv",
                                           emulator.namesrv_addr)
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*stop_broker() would stop a broker every client of it uses*",
                                 "*expire_now() would expire every message*"])

    async def send_after() -> str:
        async with Producer("others_producer", namesrv=emulator.namesrv_addr) as producer:
            return (await producer.send("OthersTopic", b"still served")).queue.broker_name
    assert asyncio.run(send_after()) == "broker-a"  # broker-a still serves


def test_keep_store_keeps_the_store_of_a_failed_session_only(pytester):
    project(pytester, test_store="""
def test_passes(rocketmq_broker):
    print("STORE", rocketmq_broker.store_dir)
    assert rocketmq_broker.store_dir.is_dir()
""")
    passed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", "--rocketmq-keep-store")
    passed.assert_outcomes(passed=1)
    store = Path(re.search(r"STORE (\S+)", passed.stdout.str()).group(1))
    assert not store.exists()  # nothing failed: removed

    project(pytester, test_store="def test_fails(rocketmq_broker):\n    assert False\n")
    failed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rocketmq-keep-store")
    failed.assert_outcomes(failed=1)
    kept = Path(re.search(r"store kept at (\S+)", failed.stdout.str()).group(1))
    try:
        assert (kept / "config" / "consumerOffset.json").is_file() and (kept.parent / "emulator.log").is_file()
    finally:
        shutil.rmtree(kept.parent, ignore_errors=True)


def test_a_failed_test_report_shows_the_wire_trace_of_that_test(pytester):
    project(pytester, test_trace="""
import pytest

pytestmark = pytest.mark.asyncio


async def test_passes(rocketmq_producer, rocketmq_topic):
    producer = await rocketmq_producer()
    await producer.send(rocketmq_topic, b"first test")

async def test_fails(rocketmq_producer, rocketmq_topic):
    producer = await rocketmq_producer()
    await producer.send(rocketmq_topic, b"second test")
    assert False, "the consumer got nothing"
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    section = out.split("rocketmq wire trace (call)", 1)[1]
    assert "<- SEND_MESSAGE_V2(310)" in section and "-> answer to SEND_MESSAGE_V2: SUCCESS(0)" in section
    assert "b=t_test_fails" in section and "t_test_passes" not in section  # only what this test exchanged

    quiet = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rocketmq-no-trace")
    quiet.assert_outcomes(passed=1, failed=1)
    assert "rocketmq wire trace" not in quiet.stdout.str()


def test_the_first_test_of_a_session_gets_its_wire_trace(pytester):
    """The first test starts the emulator (and its trace renderer process) and fails at once: its report still
    holds what it exchanged, on a busy machine too (the report waits for the trace to catch up)."""
    project(pytester, test_first="""
def test_fails_first(rocketmq_topic):
    assert False, "first"
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    section = result.stdout.str().split("rocketmq wire trace (call)", 1)[1]
    assert "(nothing exchanged)" not in section
    assert "<- UPDATE_AND_CREATE_TOPIC(17)" in section and "topic=t_test_fails_first_" in section, section
    assert "-> answer to UPDATE_AND_CREATE_TOPIC: SUCCESS(0)" in section, section
    assert "pytest-trace-mark" not in section  # the plugin's own marker request is not the test's


def test_a_project_without_an_asyncio_loop_scope_setting_gets_no_warning(pytester):
    pytester.makepyfile(test_plain="""
import pytest

@pytest.mark.asyncio
async def test_sends(rocketmq_producer, rocketmq_topic):
    producer = await rocketmq_producer()
    await producer.send(rocketmq_topic, b"no ini file")
""")
    assert not list(pytester.path.glob("*.ini")) and not list(pytester.path.glob("*.toml"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    out = result.stdout.str() + result.stderr.str()
    assert "Warning" not in out and "is unset" not in out, out  # no warning of any kind
    assert "asyncio_default_fixture_loop_scope=function" in out  # pytest-asyncio's header: the plugin's value


def test_rocketmq_brokers_runs_several_and_one_can_be_taken_away(pytester):
    project(pytester, test_cluster="""
import pytest

pytestmark = pytest.mark.asyncio


async def test_two_brokers(rocketmq_broker, rocketmq_topic, rocketmq_producer):
    async with rocketmq_broker.admin() as admin:
        route = await admin.topic_route(rocketmq_topic)
    assert sorted(b.broker_name for b in route.broker_datas) == ["broker-a", "broker-b"]
    rocketmq_broker.stop_broker("broker-b")
    async with rocketmq_broker.admin() as admin:
        route = await admin.topic_route(rocketmq_topic)
    assert [b.broker_name for b in route.broker_datas] == ["broker-a"]
    producer = await rocketmq_producer()
    result = await producer.send(rocketmq_topic, b"while broker-b is away")
    assert result.queue.broker_name == "broker-a"
    rocketmq_broker.start_broker("broker-b")
    async with rocketmq_broker.admin() as admin:
        route = await admin.topic_route(rocketmq_topic)
    assert sorted(b.broker_name for b in route.broker_datas) == ["broker-a", "broker-b"]
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rocketmq-brokers", "2")
    result.assert_outcomes(passed=1)


def test_rocketmq_grpc_gives_the_session_a_5x_endpoint(pytester):
    """`--rocketmq-grpc`: rocketmq_broker.grpc_endpoint answers a 5.x route query; without it there is none."""
    project(pytester, test_grpc="""
import grpc
import pytest
from rocketmq_emulator.protocol.grpc_v2 import SERVICE, v2

@pytest.mark.asyncio
async def test_endpoint(rocketmq_broker, rocketmq_topic):
    assert rocketmq_broker.grpc_endpoint is not None
    async with grpc.aio.insecure_channel(rocketmq_broker.grpc_endpoint) as channel:
        route = channel.unary_unary(f"/{SERVICE}/QueryRoute", request_serializer=v2.QueryRouteRequest.SerializeToString,
                                    response_deserializer=v2.QueryRouteResponse.FromString)
        answer = await route(v2.QueryRouteRequest(topic=v2.Resource(name=rocketmq_topic)),
                             metadata=(("x-mq-client-id", "plugin-test"),))
    assert answer.status.code == v2.Code.OK and len(answer.message_queues) == 4
""")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rocketmq-grpc").assert_outcomes(passed=1)
    project(pytester, test_grpc="def test_none(rocketmq_broker):\n    assert rocketmq_broker.grpc_endpoint is None\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_readme_fast_forward_example_passes(pytester):
    """README "Testing time-based behaviour": the retries to the DLQ and a 2-hour delay, in seconds."""
    text = FAST_FORWARD.read_text()
    block = text.split("<!-- fast-forward-example:start -->", 1)[1].split("<!-- fast-forward-example:end -->", 1)[0]
    project(pytester, test_time=block.split("```python\n", 1)[1].rsplit("```", 1)[0])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2)


def test_the_entities_file_declares_the_session_emulators_topics_and_groups(pytester):
    """`rocketmq_entities` in the ini file (relative to the rootdir), or `--rocketmq-entities FILE`: the session's
    emulator starts with the file's topics and groups."""
    pytester.makeini(INI + "rocketmq_entities = entities.json\n")
    pytester.makefile(".json", entities=json.dumps({"topics": [{"name": "Declared", "queues": 2,
                                                                "messageType": "FIFO"}],
                                                    "groups": [{"name": "declared-group", "retryMaxTimes": 2}]}))
    pytester.makepyfile(test_entities="""
import pytest

@pytest.mark.asyncio
async def test_declared(rocketmq_broker):
    async with rocketmq_broker.admin() as admin:
        route = await admin.topic_route("Declared")
        exported = await admin.export_entities()
    assert [(q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas] == [(2, 2)]
    assert {"name": "Declared", "queues": 2, "messageType": "FIFO"} in exported["topics"]
    assert {"name": "declared-group", "retryMaxTimes": 2} in exported["groups"]
""")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    other = pytester.path / "other.json"
    other.write_text(json.dumps({"topics": [{"name": "Declared", "queues": 3}]}))
    pytester.makepyfile(test_entities="""
import pytest

@pytest.mark.asyncio
async def test_declared(rocketmq_broker):
    async with rocketmq_broker.admin() as admin:
        route = await admin.topic_route("Declared")
    assert [q.read_queue_nums for q in route.queue_datas] == [3]
""")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rocketmq-entities", str(other)).assert_outcomes(
        passed=1)


def test_the_failover_example_passes_with_a_slave_of_each_broker(pytester):
    """docs/user/cluster.md's failover test file: a master killed, its slave serves every acknowledged message."""
    text = (README.parent / "cluster.md").read_text()
    block = text.split("<!-- failover-example:start -->", 1)[1].split("<!-- failover-example:end -->", 1)[0]
    project(pytester, test_failover=block.split("```python\n", 1)[1].rsplit("```", 1)[0])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rocketmq-slaves", "1")
    result.assert_outcomes(passed=1)
