"""The plain ACL file (4.9.8's `conf/plain_acl.yml`): its accounts and global white addresses, read with PyYAML
(the `[acl]` extra, imported only when ACL is on) and checked once when loaded, so that a bad file is refused
with one line naming it; and the edits the ACL admin requests make to it (PlainPermissionManager's
updateAccessConfig, deleteAccessConfig, updateGlobalWhiteAddrsConfig), each bumping the file's `dataVersion`.

The file's keys are 4.9.8's: `globalWhiteRemoteAddresses`, `accounts` (each `accessKey`, `secretKey`,
`whiteRemoteAddress`, `admin`, `defaultTopicPerm`, `defaultGroupPerm`, `topicPerms`, `groupPerms`) and
`dataVersion`. Group permissions are kept under the group's retry topic, as 4.9.8 keys them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from rocketmq_emulator.protocol.extras import install_hint
from rocketmq_emulator.protocol.admin_bodies import DataVersion
from rocketmq_emulator.protocol.topics import retry_topic

from .permission import AclException, check_keys, check_resource_perms, parse_perm, split_resource
from .remote_address import Match, address_matcher

ACCOUNT_KEYS = ("accessKey", "secretKey", "whiteRemoteAddress", "admin", "defaultTopicPerm", "defaultGroupPerm",
                "topicPerms", "groupPerms")


@dataclass(frozen=True)
class Account:
    """One account (4.9.8's PlainAccessResource as loaded): permissions by topic and by group retry topic."""

    access_key: str
    secret_key: str
    white_remote_address: str | None
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    #: None when the account names no topic or group (an admin account then owns everything)
    resource_perms: dict[str, int] | None
    matches_address: Match = field(repr=False)


@dataclass(frozen=True)
class PlainAcl:
    """A loaded file: the parsed document (edits start from it), its accounts by access key, the global white
    list and its version."""

    document: dict[str, Any]
    accounts: dict[str, Account]
    global_white: tuple[Match, ...]
    data_version: DataVersion

    @property
    def global_white_addrs(self) -> list[str]:
        return [str(a) for a in self.document.get("globalWhiteRemoteAddresses") or []]


def text_of(value: Any) -> str | None:
    """A scalar as 4.9.8's fastjson reads it into a String field (`secretKey: 12345678` is "12345678")."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AclException(f"{what} is not a list")
    return value


def build_account(raw: dict[str, Any]) -> Account:
    """PlainPermissionManager.buildPlainAccessResource: AclException on short keys, a `Res=Perm` item without
    one `=`, or a white address 4.9.8 cannot read."""
    access_key, secret_key = text_of(raw.get("accessKey")), text_of(raw.get("secretKey"))
    check_keys(access_key, secret_key)
    assert access_key is not None and secret_key is not None
    perms: dict[str, int] | None = None
    for key, is_topic in (("groupPerms", False), ("topicPerms", True)):
        for item in _list(raw.get(key), f"{key} of {access_key}"):
            parts = split_resource(text_of(item) or "")
            if len(parts) != 2:
                raise AclException(f"Parse resource permission failed for {'topic' if is_topic else 'group'}:{item}")
            name = parts[0].strip()
            perms = perms or {}
            perms[name if is_topic else retry_topic(name)] = parse_perm(parts[1])
    white = text_of(raw.get("whiteRemoteAddress"))
    admin = raw.get("admin")
    return Account(access_key, secret_key, white, admin is True or text_of(admin) == "true",
                   parse_perm(text_of(raw.get("defaultTopicPerm"))), parse_perm(text_of(raw.get("defaultGroupPerm"))),
                   perms, address_matcher(white))


def parse(text: bytes) -> PlainAcl:
    """A file's content; AclException saying what is wrong (the caller names the file)."""
    try:
        import yaml  # the [acl] extra: only when ACL is on
    except ImportError:
        raise AclException(f"reading it needs PyYAML: {install_hint('acl')}") from None
    try:
        document = yaml.safe_load(text.decode("utf-8")) if text.strip() else {}
    except UnicodeDecodeError as exc:
        raise AclException(f"not UTF-8 text (byte 0x{text[exc.start]:02x} at offset {exc.start})") from None
    except yaml.YAMLError as exc:
        raise AclException(f"not YAML: {' '.join(str(exc).split())}") from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise AclException("not a mapping of globalWhiteRemoteAddresses, accounts and dataVersion")
    accounts: dict[str, Account] = {}
    for raw in _list(document.get("accounts"), "accounts"):
        if not isinstance(raw, dict):
            raise AclException(f"an account is not a mapping of {', '.join(ACCOUNT_KEYS)}: {raw!r}")
        account = build_account(raw)
        accounts.setdefault(account.access_key, account)  # 4.9.8 keeps the first of a repeated key
    white = tuple(address_matcher(text_of(a)) for a in _list(document.get("globalWhiteRemoteAddresses"),
                                                          "globalWhiteRemoteAddresses"))
    version = DataVersion()
    versions = _list(document.get("dataVersion"), "dataVersion")
    if versions and isinstance(versions[0], dict):
        try:
            version = DataVersion(timestamp=int(versions[0].get("timestamp", 0)),
                                  counter=int(versions[0].get("counter", 0)))
        except (TypeError, ValueError):
            raise AclException(f"dataVersion is not a counter and a timestamp: {versions[0]!r}") from None
    return PlainAcl(document, accounts, white, version)


def load(path: Path) -> PlainAcl:
    """The file at `path`, created empty when missing (as 4.9.8 does); AclException naming the file."""
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        return parse(path.read_bytes())
    except OSError as exc:
        raise AclException(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except AclException as exc:
        raise AclException(f"{path}: {exc.message}") from None


def dump(document: dict[str, Any]) -> bytes:
    """The file's text (block style, keys in the document's order, as 4.9.8's snakeyaml dumpAsMap writes it)."""
    import yaml
    text: str = yaml.safe_dump(document, default_flow_style=False, sort_keys=False, allow_unicode=True)
    return text.encode("utf-8")


def _next_version(acl: PlainAcl, document: dict[str, Any]) -> dict[str, Any]:
    """updateAclConfigFileVersion: counter + 1, timestamp now."""
    version = acl.data_version.next_version(int(time.time() * 1000))
    document["dataVersion"] = [{"counter": version.counter, "timestamp": version.timestamp}]
    return document


def with_account(acl: PlainAcl, update: dict[str, Any]) -> dict[str, Any]:
    """UPDATE_AND_CREATE_ACL_CONFIG: the document with this account created or its given fields replaced (the
    account moves to the end, as 4.9.8 writes it); AclException when 4.9.8 refuses the update."""
    check_keys(update.get("accessKey"), update.get("secretKey"))
    check_resource_perms(update.get("topicPerms"))
    check_resource_perms(update.get("groupPerms"))
    document = dict(acl.document)
    accounts = [dict(a) for a in document.get("accounts") or [] if isinstance(a, dict)]
    old = next((a for a in accounts if text_of(a.get("accessKey")) == update["accessKey"]), None)
    if old is not None:
        accounts.remove(old)
    account = old if old is not None else {}
    account["accessKey"] = update["accessKey"]
    account["secretKey"] = update["secretKey"]
    if update.get("whiteRemoteAddress") is not None:
        account["whiteRemoteAddress"] = update["whiteRemoteAddress"]
    account["admin"] = bool(update.get("admin"))
    for key in ("defaultTopicPerm", "defaultGroupPerm"):
        if update.get(key):
            account[key] = update[key]
    for key in ("topicPerms", "groupPerms"):
        if update.get(key) is not None:
            account[key] = update[key]
    build_account(account)  # what 4.9.8 would refuse when loading it
    accounts.append(account)
    document["accounts"] = accounts
    return _next_version(acl, document)


def with_accounts(acl: PlainAcl, accounts: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The entities file's accounts (docs/user/entities.md): each declared account exactly as declared, the others
    untouched; None when the file already holds them so. AclException when 4.9.8 would refuse one."""
    declared = {a["accessKey"]: dict(a) for a in accounts}
    old = [a for a in acl.document.get("accounts") or [] if isinstance(a, dict)]
    current = {text_of(a.get("accessKey")): a for a in old}
    if all(current.get(key) == account for key, account in declared.items()):
        return None
    for account in declared.values():
        try:
            build_account(account)
        except AclException as exc:
            raise AclException(f"account {account['accessKey']!r}: {exc.message}") from None
    document = dict(acl.document)
    document["accounts"] = [a for a in old if text_of(a.get("accessKey")) not in declared] + list(declared.values())
    return _next_version(acl, document)


def without_account(acl: PlainAcl, access_key: str) -> dict[str, Any] | None:
    """DELETE_ACL_CONFIG: the document without this account; None when the file has none of that key."""
    if access_key not in acl.accounts:
        return None
    document = dict(acl.document)
    document["accounts"] = [a for a in document.get("accounts") or []
                            if not (isinstance(a, dict) and text_of(a.get("accessKey")) == access_key)]
    return _next_version(acl, document)


def with_global_white(acl: PlainAcl, addresses: list[str]) -> dict[str, Any]:
    """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: the document with this global white list."""
    for address in addresses:
        address_matcher(address)
    document = dict(acl.document)
    document["globalWhiteRemoteAddresses"] = list(addresses)
    return _next_version(acl, document)
