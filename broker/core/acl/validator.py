"""`PlainAccessValidator`: every remoting request of a broker with `aclEnable=true` checked as 4.9.8's
PlainAccessValidator and PlainPermissionManager check it, before its handler runs.

1. The remote address in the file's global white list: allowed.
2. No `AccessKey` ext field, or one the file does not have: refused.
3. The remote address matches the account's `whiteRemoteAddress`: allowed (no signature, no permissions).
4. The `Signature` is not the request's (signature.py): refused.
5. A send to RMQ_SYS_TRACE_TOPIC (message traces): allowed.
6. An admin-only request (permission.ADMIN_CODES) from an account that is not admin: refused; then each topic and
   group the request names (`resources`) must be granted by the account's permission for it, or its default
   topic or group permission when it names none; an admin account with no topic or group permissions owns all.

A refusal is SYSTEM_ERROR with the AclException's message (with `--compat 4.9`, 4.9.8's exceptionSimpleDesc of
it). The file is read again when it changes on disk (its modification time and size, looked at most every
`RELOAD_CHECK_S` seconds, from the request path); a file that no longer loads is logged and the accounts already
loaded stay in force.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import HeartbeatData
from rocketmq_emulator.protocol.dispatch import DispatchTable, Handler
from rocketmq_emulator.protocol.message import java_hash_set_order
from rocketmq_emulator.protocol.topics import RETRY_GROUP_TOPIC_PREFIX, TRACE_TOPIC, retry_topic

from ...state.config_file import write_config_file
from . import plain_acl
from .grpc_auth import grpc_credentials, grpc_resources
from .permission import ADMIN_CODES, PUB, SUB, AclException, check_permission
from .plain_acl import Account, PlainAcl
from .signature import ACCESS_KEY, SIGNATURE, request_content, sign

log = logging.getLogger("rocketmq_emulator.acl")

#: the file's modification time is looked at no more often than this, from the request path
RELOAD_CHECK_S = 2.0


def _retry(group: str | None) -> str | None:
    return None if group is None else retry_topic(group)


def resources(cmd: RemotingCommand) -> dict[str, int]:
    """The topics and group retry topics a request needs, with the permission (PlainAccessValidator.parse); the
    requests not listed there need none (a batch send included, as in 4.9.8)."""
    ext = cmd.ext_fields or {}
    code = cmd.code
    needed: dict[str, int] = {}

    def add(resource: str | None, perm: int) -> None:
        if resource is not None:
            needed[resource] = perm
    if code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
        topic, group = (ext.get("topic"), ext.get("group")) if code == RequestCode.SEND_MESSAGE \
            else (ext.get("b"), ext.get("a"))
        if topic is not None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            add(_retry(group), SUB)
        else:
            add(topic, PUB)
    elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
        add(_retry(ext.get("group")), SUB)
    elif code == RequestCode.PULL_MESSAGE:
        add(ext.get("topic"), SUB)
        add(_retry(ext.get("consumerGroup")), SUB)
    elif code == RequestCode.QUERY_MESSAGE:
        add(ext.get("topic"), SUB)
    elif code == RequestCode.HEART_BEAT:
        try:
            data = HeartbeatData.decode(cmd.body or b"")
        except Exception as exc:  # noqa: BLE001 - 4.9.8 wraps any parse failure in an AclException
            raise AclException(str(exc)) from None
        for consumer in data.consumer_data_set:
            add(_retry(consumer.group_name), SUB)
            for sub in consumer.subscription_data_set:
                add(sub.topic, SUB)
    elif code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        add(_retry(ext.get("consumerGroup")), SUB)
    elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
        add(_retry(ext.get("consumerGroup")), SUB)
        add(ext.get("topic"), SUB)
    return needed


def _resource_text(resource: str) -> str:
    """PlainAccessResource.printStr."""
    if resource.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX):]}"
    return f"topic:{resource}"


def check_perm(code: int, needed: dict[str, int], owned: Account) -> None:
    """PlainPermissionManager.checkPerm; the resources in the order 4.9.8's HashMap iterates them, so that the
    first refused is the one it names."""
    if code in ADMIN_CODES and not owned.admin:
        raise AclException(f"Need admin permission for request code={code}, but accessKey={owned.access_key} is not",
                           "checkPerm:581")
    if not needed or (owned.resource_perms is None and owned.admin):
        return
    perms = owned.resource_perms or {}
    for resource in java_hash_set_order(needed):
        is_group = resource.startswith(RETRY_GROUP_TOPIC_PREFIX)
        if resource in perms:
            granted, line = perms[resource], 611
        else:
            granted, line = (owned.default_group_perm if is_group else owned.default_topic_perm), 606
        if not check_permission(needed[resource], granted):
            raise AclException(f"No default permission for {_resource_text(resource)}", f"checkPerm:{line}")


def _host(remote_addr: str) -> str:
    """The address without its port (PlainAccessValidator.parse: up to the last ':'), IPv6 addresses kept."""
    try:
        return str(ipaddress.ip_address(remote_addr))
    except ValueError:
        return remote_addr.rpartition(":")[0] if ":" in remote_addr else remote_addr


class PlainAccessValidator:
    """The accounts of one plain ACL file (`path`) and the check of every request against them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.acl: PlainAcl = plain_acl.load(path)
        except AclException as exc:
            raise ValueError(f"the plain ACL file {exc.message}") from None
        self._stamp = self._file_stamp()
        self._next_check = time.monotonic() + RELOAD_CHECK_S
        if not self.acl.accounts and not self.acl.global_white:
            log.warning("ACL is on and %s has no account and no global white address: every request is refused",
                        path)

    # -- the file -----------------------------------------------------------------------------------
    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def reload_if_changed(self) -> bool:
        """Read the file again if it changed on disk; True when new accounts are in force."""
        stamp = self._file_stamp()
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            self.acl = plain_acl.load(self.path)
        except AclException as exc:
            log.error("the plain ACL file changed and no longer loads, the accounts loaded before stay: %s",
                      exc.message)
            return False
        log.info("%s reloaded: %d accounts", self.path, len(self.acl.accounts))
        return True

    def write(self, document: dict[str, Any]) -> None:
        """Write an edited document (the config-file routine: a .bak of the old one) and put it in force."""
        content = plain_acl.dump(document)
        acl = plain_acl.parse(content)
        write_config_file(self.path, content)
        self.acl = acl
        self._stamp = self._file_stamp()

    def apply_accounts(self, accounts: Sequence[dict[str, Any]]) -> bool:
        """The entities file's accounts written into the file and put in force; False when already so."""
        self.reload_if_changed()
        try:
            document = plain_acl.with_accounts(self.acl, accounts)
        except AclException as exc:
            raise ValueError(f"the entities' ACL {exc.message}") from None
        if document is None:
            return False
        self.write(document)
        log.info("%s: %d account(s) of the entities file applied", self.path, len(accounts))
        return True

    # -- the check ----------------------------------------------------------------------------------
    def validate(self, cmd: RemotingCommand, remote_ip: str) -> None:
        """PlainPermissionManager.validate of this request from `remote_ip`; AclException when refused."""
        needed = resources(cmd)
        ext = cmd.ext_fields or {}
        self._validate(cmd.code, needed, ext.get(ACCESS_KEY), ext.get(SIGNATURE),
                       lambda: request_content(ext, cmd.body), remote_ip)

    def validate_grpc(self, metadata: Mapping[str, str], request: Any, remote_ip: str) -> None:
        """The same for a 5.x client's gRPC request (grpc_auth.py): its `authorization` metadata signs its
        `x-mq-date-time`; AclException when refused (the front answers PERMISSION_DENIED)."""
        needed = grpc_resources(request)
        access_key, signature, content = grpc_credentials(metadata)
        self._validate(0, needed, access_key, signature, lambda: content, remote_ip)

    def _validate(self, code: int, needed: dict[str, int], access_key: str | None, signature: str | None,
                  content: Callable[[], bytes], remote_ip: str) -> None:
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + RELOAD_CHECK_S
            self.reload_if_changed()
        acl = self.acl
        if any(match(remote_ip) for match in acl.global_white):
            return
        if access_key is None:
            raise AclException("No accessKey is configured", "validate:664")
        owned = acl.accounts.get(access_key)
        if owned is None:
            raise AclException(f"No acl config for {access_key}", "validate:668")
        if owned.matches_address(remote_ip):
            return
        if sign(content(), owned.secret_key) != signature:
            raise AclException(f"Check signature failed for accessKey={access_key}", "validate:684")
        if needed.get(TRACE_TOPIC) == PUB:
            return
        check_perm(code, needed, owned)

    def guard(self, handler: Handler) -> Handler:
        """`handler` behind the check: a refused request is answered SYSTEM_ERROR, its handler never runs."""
        def checked(request: RemotingCommand, conn: Any) -> Any:
            try:
                self.validate(request, conn.remote_ip)
            except AclException as exc:
                log.info("ACL refused %s from %s: %s", request.code, conn.addr, exc.message)
                raise BrokerError(ResponseCode.SYSTEM_ERROR, exc.message, java=exc.java()) from None
            return handler(request, conn)
        return checked

    def protect(self, table: DispatchTable) -> None:
        """Check every request of `table` (those of families registered later too). Consecutive sends are no
        longer handed over together: each is checked on its own."""
        table.runs.clear()
        table.typed.clear()  # every request's extFields are read (AccessKey, Signature)
        table.lane = None
        table.wrap_handlers(self.guard)

    def is_admin(self, cmd: RemotingCommand, remote_addr: str) -> bool:
        """The request comes from an admin account: its AccessKey names one, and either it is signed with that
        account's secret key or it comes from the account's white remote address (which 4.9.8 trusts unsigned)."""
        ext = cmd.ext_fields or {}
        owned = self.acl.accounts.get(ext.get(ACCESS_KEY) or "")
        if owned is None or not owned.admin:
            return False
        if owned.matches_address(_host(remote_addr)):
            return True
        return sign(request_content(ext, cmd.body), owned.secret_key) == ext.get(SIGNATURE)

