"""`serve` refusing to start: a store it must not touch (one line naming the file, a non-zero exit, the store
left as it was; the explicit recovery flag that cuts: README "The store"), and bad files and values (one line
naming the setting or the file)."""

from __future__ import annotations

import json
import os
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


def refused_with(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """serve with these arguments must stop at once: (exit status, its one error line)."""
    proc = subprocess.run([sys.executable, *COMMAND[1:], "serve", "--namesrv-port", "0", "--broker-port", "0", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out
    [line] = [x for x in out.splitlines() if "error" in x.lower()]
    return proc.returncode, line


def test_a_broker_conf_that_is_not_utf8_is_one_line(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_bytes(b"brokerName=b\xff\xfe\n")
    status, line = refused_with("--config", str(conf), "--store-dir", str(tmp_path / "s"))
    assert status == 2 and str(conf) in line and "not UTF-8 text (byte 0xff at offset 12)" in line


def test_bad_values_name_their_setting(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("deleteWhen=abc\n")
    status, line = refused_with("--config", str(conf), "--store-dir", str(tmp_path / "s1"))
    assert status == 2 and "deleteWhen" in line and "'abc' is not hours of the day" in line
    status, line = refused_with("--store-dir", str(tmp_path / "s2"), env={"ROCKETMQ_EMULATOR_EPHEMERAL": "perhaps"})
    assert status == 2 and "ROCKETMQ_EMULATOR_EPHEMERAL='perhaps'" in line and "not true or false" in line
    status, line = refused_with("--store-dir", str(tmp_path / "s3"), "--grpc-tls-port", "0")
    assert status == 2 and "grpcTlsPort" in line and "--grpc-port" in line
    status, line = refused_with("--store-dir", str(tmp_path / "s4"), "--host", "no.such.host.invalid")
    assert status == 1 and "--host 'no.such.host.invalid'" in line and "does not resolve" in line


def test_a_damaged_config_file_without_a_backup_is_not_started_from_empty(tmp_path):
    store = tmp_path / "store"
    MessageStore(MessageStoreConfig(store_path_root_dir=str(store))).start().stop()
    (store / "config").mkdir(exist_ok=True)
    topics = store / "config" / "topics.json"
    topics.write_text('{"topicConfigTable": {broken')
    _, line = refused_with("--store-dir", str(store))
    assert str(topics) in line and "topics.json.bak is missing or damaged too" in line
    assert topics.read_text() == '{"topicConfigTable": {broken'  # left for the user to restore


def test_a_damaged_sqlite_file_is_named(tmp_path):
    store = tmp_path / "store"
    (store / "config").mkdir(parents=True)
    db = store / "config" / "popCheckpoint.db"
    db.write_bytes(b"this is not a database" * 100)
    _, line = refused_with("--store-dir", str(store))
    assert str(db) in line and "damaged" in line
