"""The broker starts without importing its administration handlers or the wire trace (broker/controller.py's
DEFERRED_PROCESSORS, README "Performance"), and still answers their requests: the first one imports them. Run in
a fresh interpreter, since this test process has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rocketmq_emulator.broker.controller import DEFERRED_PROCESSORS

SCRIPT = r"""
import asyncio, json, sys
from rocketmq_emulator.broker.settings import emulator_config
from rocketmq_emulator.broker.emulator import Emulator
from rocketmq_emulator.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.protocol.transport import RemotingConnection

def loaded():
    return sorted(m for m in sys.modules if m.startswith("rocketmq_emulator.broker.handlers.")
                  or m.endswith(".trace"))

async def main():
    config = emulator_config(namesrv_port=0, listen_port=0, store_path_root_dir=sys.argv[1],
                             offset_durability=sys.argv[2])
    async with Emulator(config) as emu:
        started = loaded()
        _, conn = await asyncio.get_running_loop().create_connection(
            lambda: RemotingConnection(None, name="test"), "127.0.0.1", emu.broker.server.port)
        info = await conn.invoke(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 10)
        unknown = await conn.invoke(RemotingCommand.request(4321), 10)
        conn.close()
        wrapped = hasattr(emu.broker.table.get(RequestCode.CLONE_GROUP_OFFSET), "__wrapped__")
        print(json.dumps({"started": started, "after": loaded(), "wrapped": wrapped,
                          "info": [info.code, info.body.decode()], "unknown": [unknown.code, unknown.remark]}))

asyncio.run(main())
"""


@pytest.mark.parametrize("durability", ["write-behind", "write-through"])
def test_admin_handlers_load_on_their_first_request(tmp_path, durability):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "store"), durability],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    deferred = {f"rocketmq_emulator.broker.handlers.{entry.partition(':')[0]}" for entry in DEFERRED_PROCESSORS}
    assert "rocketmq_emulator.broker.handlers.send_message" in out["started"]
    assert not deferred & set(out["started"]), "imported before any request asked for them"
    assert not any(m.endswith(".trace") for m in out["started"]), "the wire trace is off"
    code, body = out["info"]
    assert code == 0 and '"putTps"' in body  # GET_BROKER_RUNTIME_INFO answered by the deferred admin handler
    assert deferred <= set(out["after"])
    assert out["unknown"] == [3, " request type 4321 not supported"]  # REQUEST_CODE_NOT_SUPPORTED as before
    # write-through wraps the deferred handlers too (a cloned offset is answered once durable)
    assert out["wrapped"] is (durability == "write-through")
