"""The ACL admin requests of a broker with `aclEnable=true`, answered as 4.9.8's AdminBrokerProcessor does (the
controller registers them after broker_config.py's answers of a broker without ACL, which they replace):

* UPDATE_AND_CREATE_ACL_CONFIG (50): an account created, or its given fields replaced; DELETE_ACL_CONFIG (51);
  UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53). Each writes the plain ACL file (with a new `dataVersion`) and puts it in
  force at once; a refusal is the request's *_FAILED code with 4.9.8's text.
* GET_BROKER_CLUSTER_ACL_INFO (52): the file's data version and the broker's name, address and cluster
  (mqadmin `clusterAclConfigVersion`).
* GET_BROKER_CLUSTER_ACL_CONFIG (54, 5.x's): the accounts and the global white list as a JSON body (not
  supported with `--compat 4.9`, as on 4.9.8).

These requests pass the ACL check first, as any other (a signed request of any account, or a white address).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection

from ..config import Compat
from ..core.acl import plain_acl
from ..core.acl.permission import AclException

if TYPE_CHECKING:
    from ..core.acl.validator import PlainAccessValidator
    from ..core.broker_context import BrokerContext

log = logging.getLogger("rocketmq_emulator.acl")


def _required(req: RemotingCommand, name: str) -> str:
    value = (req.ext_fields or {}).get(name)
    if value is None:
        raise BrokerError(ResponseCode.SYSTEM_ERROR, f"missing required header field {name}")
    return value


def _split(text: str | None) -> list[str] | None:
    """UtilAll.split(text, ","): None stays None; Java's String.split drops trailing empty items."""
    if text is None:
        return None
    items = text.split(",")
    while items and items[-1] == "" and len(items) > 1:
        items.pop()
    return items


def _fail(req: RemotingCommand, code: ResponseCode, remark: str) -> RemotingCommand:
    log.warning("%s refused: %s", RequestCode(req.code).name, remark)
    return RemotingCommand.response_to(req, code, remark)


class AclAdminProcessor:
    def __init__(self, broker: BrokerContext, validator: PlainAccessValidator) -> None:
        self.broker = broker
        self.validator = validator

    def register(self, table: DispatchTable) -> None:
        table.register(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, self.update_access_config)
        table.register(RequestCode.DELETE_ACL_CONFIG, self.delete_access_config)
        table.register(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, self.acl_config_version)
        table.register(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, self.update_global_white_addrs)
        if self.broker.config.compat is not Compat.V4_9:  # 4.9.8 has no such request: not supported there
            table.register(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, self.acl_config)

    def update_access_config(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        ext = req.ext_fields or {}
        update: dict[str, Any] = {
            "accessKey": _required(req, "accessKey"), "secretKey": ext.get("secretKey"),
            "whiteRemoteAddress": ext.get("whiteRemoteAddress"), "admin": ext.get("admin") == "true",
            "defaultTopicPerm": ext.get("defaultTopicPerm"), "defaultGroupPerm": ext.get("defaultGroupPerm"),
            "topicPerms": _split(ext.get("topicPerms")), "groupPerms": _split(ext.get("groupPerms"))}
        self.validator.reload_if_changed()
        try:
            self.validator.write(plain_acl.with_account(self.validator.acl, update))
        except (AclException, OSError) as exc:
            return _fail(req, ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, str(exc))
        log.info("ACL account %s updated by %s", update["accessKey"], conn.addr)
        return RemotingCommand.response_to(req)

    def delete_access_config(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        access_key = _required(req, "accessKey")
        self.validator.reload_if_changed()
        document = plain_acl.without_account(self.validator.acl, access_key)
        if document is None:
            return _fail(req, ResponseCode.DELETE_ACL_CONFIG_FAILED,
                         f"The accesskey[{access_key}] corresponding to accessConfig has been deleted failed.")
        try:
            self.validator.write(document)
        except (AclException, OSError) as exc:
            return _fail(req, ResponseCode.DELETE_ACL_CONFIG_FAILED, str(exc))
        log.info("ACL account %s deleted by %s", access_key, conn.addr)
        return RemotingCommand.response_to(req)

    def update_global_white_addrs(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        addrs = _required(req, "globalWhiteAddrs")
        path = (req.ext_fields or {}).get("aclFileFullPath")
        failed = f"The globalWhiteAddresses[{addrs}] has been updated failed."
        # the one file of this broker (4.9.8 also takes other files under its home; a missing path means it too)
        if path and path.strip() and path.strip() != str(self.validator.path):
            return _fail(req, ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, failed)
        self.validator.reload_if_changed()
        try:
            self.validator.write(plain_acl.with_global_white(self.validator.acl, _split(addrs) or []))
        except (AclException, OSError) as exc:
            return _fail(req, ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, str(exc))
        log.info("ACL global white addresses set to %s by %s", addrs, conn.addr)
        return RemotingCommand.response_to(req)

    def acl_config_version(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        self.validator.reload_if_changed()
        version = self.validator.acl.data_version.encode().decode()
        config = self.broker.config
        return RemotingCommand.response_to(req, ext_fields={
            "version": version, "allAclFileVersion": "{" + json.dumps(str(self.validator.path)) + ":" + version + "}",
            "brokerName": config.broker_name, "brokerAddr": self.broker.broker_addr,
            "clusterName": config.broker_cluster_name})

    def acl_config(self, req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        self.validator.reload_if_changed()
        acl = self.validator.acl
        configs = []
        for key in acl.accounts:
            raw = next(a for a in acl.document.get("accounts") or []
                       if isinstance(a, dict) and plain_acl.text_of(a.get("accessKey")) == key)
            entry = {name: raw[name] if name in ("topicPerms", "groupPerms") else plain_acl.text_of(raw[name])
                     for name in plain_acl.ACCOUNT_KEYS if raw.get(name) is not None}
            entry["admin"] = acl.accounts[key].admin
            configs.append(dict(sorted(entry.items())))
        body = {"globalWhiteAddrs": acl.global_white_addrs, "plainAccessConfigs": configs}
        return RemotingCommand.response_to(req, body=json.dumps(body, separators=(",", ":")).encode("utf-8"))
