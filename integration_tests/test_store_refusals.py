"""`serve` on a store it must not touch: one line naming the file, a non-zero exit, the store left as it was;
and the explicit recovery flag that cuts (README "The store")."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from rocketmq_emulator.store import MessageStore, MessageStoreConfig
from rocketmq_emulator.store.format import STORE_FORMAT_VERSION
from rocketmq_emulator.store.message_ext_broker_inner import MessageExtBrokerInner
from rocketmq_emulator.testing.command_line import COMMAND

ROOT = Path(__file__).resolve().parents[1]


def serve(store: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *COMMAND[1:], "serve", "--store-dir", str(store), "--namesrv-port", "0",
                             "--broker-port", "0", *extra], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def refused(store: Path) -> str:
    proc = serve(store)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0, out
    assert "Traceback" not in out
    [line] = [x for x in out.splitlines() if "error" in x.lower()]
    return line


def damaged_store(root: Path) -> int:
    """20 messages, one with an unknown magic, 10 more; left as after a crash. The unknown record's offset."""
    store = MessageStore(MessageStoreConfig(store_path_root_dir=str(root))).start()
    puts = [store.put_message(MessageExtBrokerInner("T", 0, f"m{i}".encode() * 10)) for i in range(31)]
    bad = puts[20].wrote_offset
    mf = store.commitlog.queue.find_mapped_file_by_offset(bad)
    mf.mm[bad - mf.file_from_offset + 4:bad - mf.file_from_offset + 8] = (0x0BADF00D).to_bytes(4, "big")
    store.stop(clean=False)
    return bad


def test_serve_refuses_a_store_with_valid_records_after_a_bad_one_and_cuts_only_when_asked(tmp_path):
    bad = damaged_store(tmp_path / "store")
    commitlog = tmp_path / "store" / "commitlog" / f"{0:020d}"
    before = commitlog.read_bytes()
    line = refused(tmp_path / "store")
    assert str(commitlog) in line and "followed by 10 valid records" in line and "--recovery-cut-invalid" in line
    assert commitlog.read_bytes() == before  # nothing cut, nothing zeroed
    proc = serve(tmp_path / "store", "--recovery-cut-invalid", "true")
    try:
        lines = []
        for text in proc.stdout:  # type: ignore[union-attr]
            lines.append(text)
            if "ready:" in text:
                break
        assert any("cut 10 valid messages" in x and " ERROR " in x for x in lines), lines
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert (tmp_path / "store" / f"recovery-cut-{bad}.bin").stat().st_size > 0


def test_serve_refuses_a_store_of_a_newer_format(tmp_path):
    store = tmp_path / "store"
    MessageStore(MessageStoreConfig(store_path_root_dir=str(store))).start().stop()
    (store / "storeFormat.json").write_text(json.dumps({"formatVersion": STORE_FORMAT_VERSION + 1}))
    line = refused(store)
    assert f"format version {STORE_FORMAT_VERSION + 1}" in line and f"reads version {STORE_FORMAT_VERSION}" in line
