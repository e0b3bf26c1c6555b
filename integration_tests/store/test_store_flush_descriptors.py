"""A flush opens no file: it fdatasyncs the descriptors the mapped files keep open, so it works when the
process has no descriptor left (a broker with as many client connections as its open-file limit allows)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CODE = """
import errno, os, resource, sys
from rocketmq_emulator.store import MessageStore, MessageStoreConfig
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner

store = MessageStore(MessageStoreConfig(store_path_root_dir=sys.argv[1])).start()
for q in range(4):
    store.put_message(MessageExtBrokerInner.build("TopicA", q, b"before", {}))
resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError as exc:
    assert exc.errno == errno.EMFILE
for q in range(4):
    store.put_message(MessageExtBrokerInner.build("TopicA", q, b"after", {}))
plan = store.plan_flush(store.clock() + 10_000)   # commitlog, consume queues, index and checkpoint are due
assert plan is not None and plan.checkpoint
from rocketmq_emulator.store.message_store import execute_flush_plan
execute_flush_plan(plan)
store.commit_flush_plan(plan)
print(store.checkpoint.confirm_offset == store.commitlog.max_offset, len(plan.fds) >= 5)
"""


def test_a_flush_needs_no_free_descriptor(tmp_path: Path):
    out = subprocess.run([sys.executable, "-c", CODE, str(tmp_path / "store")], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]
