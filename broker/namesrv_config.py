"""The name server's GET_NAMESRV_CONFIG (319) and UPDATE_NAMESRV_CONFIG (318): mqadmin getNamesrvConfig and
updateNamesrvConfig (the configuration itself: broker/core/runtime_config.py, `NamesrvConfiguration`); and its KV
config file, `kvConfig.json` (4.9.8's layout: `{"configTable": {namespace: {key: value}}}`), written on each
PUT_KV_CONFIG / DELETE_KV_CONFIG and read at start, so updateKvConfig and updateOrderConf survive a restart.
"""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec

from rocketmq_emulator.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.protocol import fastjson
from rocketmq_emulator.protocol.bodies import Body
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

from .core.runtime_config import NamesrvConfiguration
from .state.config_file import load_config_file, write_config_file

log = logging.getLogger("rocketmq_emulator.namesrv")


class NamesrvConfigProcessor:
    def __init__(self, configuration: NamesrvConfiguration) -> None:
        self.configuration = configuration

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.GET_NAMESRV_CONFIG, self.get_config)
        table.register(RequestCode.UPDATE_NAMESRV_CONFIG, self.update_config)

    def get_config(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        return RemotingCommand.response_to(req, body=self.configuration.properties_text().encode("utf-8"))

    def update_config(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        keys = self.configuration.update(req.body)
        if keys:
            props = self.configuration.properties()
            log.info("name server config updated by %s: %s", conn.addr, ", ".join(f"{k}={props.get(k)}" for k in keys))
        return RemotingCommand.response_to(req)


class KVConfigSerializeWrapper(Body):
    """kvConfig.json."""

    config_table: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)


def kv_config_path(config_dir: Path) -> Path:
    return config_dir / "kvConfig.json"


def load_kv_config(config_dir: Path | None) -> dict[str, dict[str, str]]:
    if config_dir is None:
        return {}
    wrapper = load_config_file(kv_config_path(config_dir), KVConfigSerializeWrapper.decode)
    return {} if wrapper is None else wrapper.config_table


def persist_kv_config(config_dir: Path | None, table: dict[str, dict[str, str]]) -> None:
    if config_dir is not None:
        text = fastjson.dumps(KVConfigSerializeWrapper(config_table=table), pretty=True)
        write_config_file(kv_config_path(config_dir), text.encode())
