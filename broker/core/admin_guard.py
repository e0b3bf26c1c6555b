"""Admin protection for a shared broker (README "Running a shared broker"): the requests that destroy or change
what others rely on, and the emulator's own test controls, are refused NO_PERMISSION to anyone but the
addresses allowed (`adminAllowedAddresses`, `serve --admin-allow`; default everyone, as tests expect); with ACL
on (`aclEnable`), only to admin accounts as well.

4.9.8 has no such switch: without ACL anyone who reaches its ports may send these requests, and with ACL it
refuses its admin codes to accounts that are not admin. The guard wraps only the codes below in each dispatch
table (the name server's and every broker's), so other requests pay nothing for it.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any, Callable

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.protocol.codes import request_code_name
from rocketmq_emulator.protocol.emulator_requests import EmulatorRequestCode
from rocketmq_emulator.protocol.transport import DispatchTable, Handler, RemotingConnection

log = logging.getLogger("rocketmq_emulator.broker")

#: deletes, config updates, permission changes, file cleanups, ACL changes, and the emulator's test controls
#: (expire, drop connections, stop and start a broker, advance time)
ADMIN_REQUEST_CODES = frozenset(int(c) for c in (
    RequestCode.DELETE_TOPIC_IN_BROKER, RequestCode.DELETE_TOPIC_IN_NAMESRV, RequestCode.DELETE_SUBSCRIPTIONGROUP,
    RequestCode.DELETE_KV_CONFIG, RequestCode.PUT_KV_CONFIG, RequestCode.UPDATE_BROKER_CONFIG,
    RequestCode.UPDATE_NAMESRV_CONFIG, RequestCode.WIPE_WRITE_PERM_OF_BROKER, RequestCode.ADD_WRITE_PERM_OF_BROKER,
    RequestCode.TRIGGER_DELETE_FILES, RequestCode.DELETE_EXPIRED_COMMITLOG, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
    RequestCode.CLEAN_UNUSED_TOPIC, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, RequestCode.DELETE_ACL_CONFIG,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, *EmulatorRequestCode))

#: the ACL updates: with ACL on, 4.9.8's own rule decides them (any account the ACL lets through may send them),
#: so the account check of the guard leaves them out; the address check covers them
ACL_UPDATE_CODES = frozenset(int(c) for c in (
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, RequestCode.DELETE_ACL_CONFIG,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG))

IsAdmin = Callable[[RemotingCommand, str], bool]


class AdminGuard:
    """`allowed`: networks (`adminAllowedAddresses`), None for everyone; `is_admin`: with ACL on, whether a
    request is signed by an admin account."""

    def __init__(self, allowed: tuple[str, ...] | None, is_admin: IsAdmin | None = None) -> None:
        self.allowed = None if allowed is None else tuple(ipaddress.ip_network(a, strict=False) for a in allowed)
        self.is_admin = is_admin
        #: ACL is on somewhere in the process: the dashboard, which carries no account, refuses admin actions
        self.accounts_required = is_admin is not None
        self._warned: set[str] = set()

    @property
    def active(self) -> bool:
        return self.allowed is not None or self.is_admin is not None

    def refusal(self, request: RemotingCommand, remote_ip: str) -> str | None:
        """Why `request` from `remote_ip` is refused, or None when it is allowed."""
        name = f"{request_code_name(request.code)} ({request.code})"
        if self.allowed is not None and not self._address_allowed(remote_ip):
            return (f"{name} is refused to {remote_ip or 'an unknown address'}: admin requests are allowed only "
                    f"from adminAllowedAddresses ({','.join(str(n) for n in self.allowed)})")
        if self.is_admin is not None and not self.is_admin(request, remote_ip):
            return f"{name} needs an admin account (aclEnable=true)"
        return None

    def action_refusal(self, what: str, remote_ip: str) -> str | None:
        """The same rule for a dashboard action (`what`) from `remote_ip`: the dashboard has no accounts, so with
        ACL on its admin actions are refused to everyone."""
        if self.allowed is not None and not self._address_allowed(remote_ip):
            return (f"{what} is refused to {remote_ip or 'an unknown address'}: admin actions are allowed only "
                    f"from adminAllowedAddresses ({','.join(str(n) for n in self.allowed)})")
        if self.accounts_required:
            return f"{what} needs an admin account (aclEnable=true), which the dashboard cannot carry"
        return None

    def _address_allowed(self, remote_ip: str) -> bool:
        assert self.allowed is not None
        try:
            ip = ipaddress.ip_address(remote_ip)
        except ValueError:
            return False
        return any(ip in net for net in self.allowed)

    def protect(self, table: DispatchTable) -> None:
        """Guard `table`'s admin requests (those of request families it loads later included); an account check
        alone leaves the ACL updates to the ACL."""
        if self.active:
            codes = ADMIN_REQUEST_CODES if self.allowed is not None else ADMIN_REQUEST_CODES - ACL_UPDATE_CODES
            table.wrap_handlers(self._wrap, only=codes)

    def _wrap(self, handler: Handler) -> Handler:
        def guarded(request: RemotingCommand, conn: RemotingConnection) -> Any:
            why = self.refusal(request, conn.remote_ip)
            if why is None:
                return handler(request, conn)
            if conn.remote_ip not in self._warned:  # once per address: a refused client may retry in a loop
                self._warned.add(conn.remote_ip)
                log.warning("%s", why)
            return RemotingCommand.response_to(request, ResponseCode.NO_PERMISSION, why)
        guarded.__wrapped__ = handler  # type: ignore[attr-defined]  # (an awaitable answer is the transport's)
        return guarded
