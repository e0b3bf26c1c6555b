"""The documentation runs as written (user-facing examples must not rot): README.md and every page under docs/.

* The five-minute tour (README.md, between `<!-- tour:start` and `<!-- tour:end -->`): a `rocketmq-emulator
  serve` on free ports stands in for terminal 1, then every ```bash and ```python block runs in order, as
  terminal 2 would run it (the venv's bin on the PATH, `$NAMESRV_ADDR` pointing at the broker), and its output
  (stdout and stderr, as a terminal shows them) must match the ```text block that follows it, where `...`
  matches anything.
* Every other ```python block of README.md and of docs/**/*.md runs in a fresh interpreter, as a user would run
  it, except a block right after `<!-- not-run-here: REASON -->` (something these machines lack, e.g. a Docker
  engine) and the 5.x client's blocks (`<!-- 5.x-client: ... -->`, run by integration_tests/test_grpc_clients.py);
  the pytest plugin's example file is run by integration_tests/test_pytest_plugin.py with pytester. A block's
  test id names its page and its number among the page's ```python blocks, counted from 1 (skipped ones count):
  `test_docs_python_block_runs[user/store.md-1]`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocketmq_emulator.testing.command_line import COMMAND
from rocketmq_emulator.testing.ports import free_broker_port, free_port

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text()
_FENCE = re.compile(r"```(\w+)\n(.*?)```", flags=re.S)
_NOT_RUN = re.compile(r"<!-- not-run-here: ([^>]*[^>\s][^>]*) -->\n+```\w+\n(.*?)```", flags=re.S)
#: blocks for the RocketMQ 5.x Python client, which lives in an environment of its own: run by
#: integration_tests/test_grpc_clients.py
FIVE_X = re.compile(r"<!-- 5.x-client: [^>]* -->\n+```python\n(.*?)```", flags=re.S)

_tour_start = README.index("<!-- tour:start")
_tour_end = README.index("<!-- tour:end -->")
TOUR = README[_tour_start:_tour_end]


def pages() -> dict[str, str]:
    """page name (README.md, or its path under docs/) -> its text; the tour left out of README's."""
    found = {"README.md": README[:_tour_start] + README[_tour_end:]}
    for path in sorted(DOCS.rglob("*.md")):
        found[path.relative_to(DOCS).as_posix()] = path.read_text()
    return found


def python_blocks() -> dict[str, str]:
    """test id (`page-n`) -> code of every ```python block that runs on its own."""
    blocks = {}
    for page, text in pages().items():
        not_run = {code for _reason, code in _NOT_RUN.findall(text)} | set(FIVE_X.findall(text))
        python = [code for lang, code in _FENCE.findall(text) if lang == "python"]
        for n, code in enumerate(python, start=1):
            if code not in not_run:
                blocks[f"{page}-{n}"] = code
    return blocks


BLOCKS = python_blocks()


def tour_steps() -> list[tuple[str, str, str | None]]:
    """(language, code, expected output or None) for each runnable block of the tour."""
    fences = _FENCE.findall(TOUR)
    steps = []
    for i, (lang, code) in enumerate(fences):
        if lang in ("bash", "python"):
            nxt = fences[i + 1] if i + 1 < len(fences) else None
            steps.append((lang, code, nxt[1] if nxt and nxt[0] == "text" else None))
    return steps


def matches(expected: str, actual: str) -> bool:
    """Line by line; `...` matches anything, runs of spaces match any spacing (table columns)."""
    exp = [line.rstrip() for line in expected.strip("\n").splitlines()]
    act = [line.rstrip() for line in actual.strip("\n").splitlines()]
    if len(exp) != len(act):
        return False
    for e, a in zip(exp, act):
        pattern = r"\s+".join(".*?".join(re.escape(part) for part in word.split("..."))
                              for word in e.split())
        if not re.fullmatch(r"\s*" + pattern + r"\s*", a):
            return False
    return True


def test_docs_have_examples():
    assert len(BLOCKS) >= 8
    assert len({page for name in BLOCKS for page in [name.rsplit("-", 1)[0]]}) >= 4
    assert len(tour_steps()) >= 8 and all(expected is not None for _, _, expected in tour_steps())


def test_matching_rules():
    assert matches("a ... c\nx  y", "a bbb c\nx     y")
    assert not matches("a ... c", "a b d")
    assert not matches("one\ntwo", "one")


@pytest.fixture
def tour_broker(tmp_path):
    ns_port, broker_port = free_port(), free_broker_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([*COMMAND, "serve", "--namesrv-port",
                                 str(ns_port), "--broker-port", str(broker_port)], cwd=tmp_path, stderr=log)
    deadline = time.monotonic() + 30
    while "ready:" not in log_path.read_text() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    try:
        yield ns_port, broker_port, log_path, tmp_path
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_tour_runs_as_written(tour_broker):
    ns_port, broker_port, log_path, workdir = tour_broker

    def as_documented(text: str) -> str:  # the README shows the default ports
        return text.replace(f":{ns_port}", ":9876").replace(f":{broker_port}", ":10911")

    shown_ready = _FENCE.findall(README[README.index("## A five-minute tour"):_tour_start])[0][1]
    ready = [line for line in log_path.read_text().splitlines() if "ready:" in line]
    assert ready and matches(shown_ready, as_documented(ready[0])), (shown_ready, ready)

    env = {**os.environ, "NAMESRV_ADDR": f"127.0.0.1:{ns_port}",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for n, (lang, code, expected) in enumerate(tour_steps()):
        if lang == "bash":
            cmd = ["bash", "-o", "pipefail", "-c", code]
        else:
            (workdir / "tour.py").write_text(code)
            cmd = [sys.executable, "tour.py"]
        proc = subprocess.run(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=120)
        output = as_documented(proc.stdout)
        assert "Traceback" not in output, f"tour step {n}:\n{code}\n{output}"
        assert matches(expected, output), f"tour step {n}:\n{code}\n--- README shows:\n{expected}\n--- got:\n{output}"


@pytest.mark.parametrize("block", list(BLOCKS))
def test_docs_python_block_runs(block):
    proc = subprocess.run([sys.executable, "-c", BLOCKS[block]], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"python block {block} failed:\n{proc.stderr[-3000:]}"


def test_the_readme_entities_example_runs_as_written(tmp_path):
    """README "Entities, typed topics and namespaces": the bash block, in an empty directory with the venv's bin on
    the PATH (it starts its own broker on free ports and stops it)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Entities, typed topics and namespaces", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    env = {**os.environ, "NAMESRV_ADDR": "",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-e", "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert '      "messageType": "FIFO"' in lines and lines[-1] == "MQ_INST_1_a%Orders", done.stdout


def test_the_readme_failover_example_runs_as_written(tmp_path):
    """README "A cluster: processes, master and slave": the bash block (two SYNC_MASTER brokers and their slaves in
    processes, broker-a's master killed, every message read, the master started again), as written."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## A cluster: processes, master and slave", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    env = {**os.environ, "NAMESRV_ADDR": "",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.Popen(["bash", "-e", "-c", block], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=180)
    finally:  # a step that failed leaves the brokers running (the block ends with kill %1): stop them
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        proc.wait(30)
    assert proc.returncode == 0, out + err
    assert out.count("SEND_OK") == 8 and "broker-a killed" in out and "broker-a started" in out, out
    assert len([line for line in out.splitlines() if line.startswith("Orders broker-")]) == 8, out  # all 8 read
