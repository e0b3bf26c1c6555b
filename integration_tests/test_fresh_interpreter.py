"""What a fresh Python process imports: the codec loads no I/O, the broker loads neither the optional extras it
does not use (gRPC, aiohttp) nor the SQL92 parser before a filter needs it. Each check runs in a new interpreter,
since the test process has imported everything already (the unit tier, tests/, starts no process)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_codec_loads_no_asyncio_or_socket():
    """Every protocol module but the transport is sans-IO (no network, processes, threads or command line),
    and loads nothing of the higher layers. (grpc_v2, the 5.x messages of the optional [grpc] extra, is left out:
    protobuf itself imports threading; it is checked for the rest below.)"""
    code = ("import sys, pkgutil, importlib, rocketmq_emulator.protocol as p\n"
            "for m in pkgutil.iter_modules(p.__path__):\n"
            "    if m.name not in ('transport', 'grpc_v2'):\n"
            "        importlib.import_module('rocketmq_emulator.protocol.' + m.name)\n"
            "print(sorted(m for m in ('asyncio', 'socket', 'selectors', 'argparse', 'subprocess', 'threading', "
            "'rocketmq_emulator.store', 'rocketmq_emulator.broker', 'rocketmq_emulator.client', "
            "'rocketmq_emulator.spark_tools', 'rocketmq_emulator.cli', 'rocketmq_emulator.testing') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    code = ("import sys, rocketmq_emulator.protocol.grpc_v2\n"
            "print(sorted(m for m in ('asyncio', 'socket', 'grpc', 'rocketmq_emulator.broker') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_grpc_and_aiohttp_are_not_imported_by_a_broker_without_the_endpoint_or_the_dashboard(tmp_path):
    code = ("import sys, asyncio\n"
            "from rocketmq_emulator.broker.emulator import Emulator\n"
            "from rocketmq_emulator.broker.settings import emulator_config\n"
            "async def main():\n"
            "    async with Emulator(emulator_config(namesrv_port=0, listen_port=0, ephemeral=True)):\n"
            "        pass\n"
            "asyncio.run(main())\n"
            "print(sorted(m for m in ('grpc', 'google.protobuf', 'aiohttp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_parser_is_not_imported_by_the_broker_at_start():
    code = ("import sys; import rocketmq_emulator.broker.controller, rocketmq_emulator.broker.handlers.pull_message;"
            "print('rocketmq_emulator.broker.core.filter.selector_parser' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
