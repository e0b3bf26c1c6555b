"""4.9.8's ACL permissions (acl/common/Permission.java, AclConstants.java): the bits an account owns on a topic or
a group, the requests only admin accounts may send, and `AclException`, the refusal every check raises."""

from __future__ import annotations

from rocketmq_emulator.protocol import RequestCode

#: the permission bits: DENY wins over anything; a request needs PUB or SUB (ANY: either)
DENY = 1
ANY = 1 << 1
PUB = 1 << 2
SUB = 1 << 3

#: the texts of the ACL file and of UPDATE_AND_CREATE_ACL_CONFIG -> bits (anything else is DENY)
PERM_BY_TEXT = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}

#: the requests only an admin account may send (Permission.ADMIN_CODE)
ADMIN_CODES = frozenset({RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.UPDATE_BROKER_CONFIG,
                         RequestCode.DELETE_TOPIC_IN_BROKER, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                         RequestCode.DELETE_SUBSCRIPTIONGROUP})

#: an access or secret key must be longer than this (AclConstants.ACCESS_KEY_MIN_LENGTH, SECRET_KEY_MIN_LENGTH)
KEY_MIN_LENGTH = 6

#: where 4.9.8 throws, for the `--compat 4.9` remark (the first stack frame of exceptionSimpleDesc)
_MANAGER = "org.apache.rocketmq.acl.plain.PlainPermissionManager"
ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"


class AclException(Exception):
    """A refusal (or a bad ACL file or update), with the frame 4.9.8 throws it from (`method:line` of
    PlainPermissionManager.java) when the request path knows it."""

    def __init__(self, message: str, frame: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.frame = frame

    def java(self) -> str | None:
        """4.9.8's remark: `RemotingHelper.exceptionSimpleDesc` of the AclException."""
        if self.frame is None:
            return None
        method, _, line = self.frame.partition(":")
        return f"{ACL_EXCEPTION}: {self.message}, {_MANAGER}.{method}(PlainPermissionManager.java:{line})"


def parse_perm(text: str | None) -> int:
    """Permission.parsePermFromString: unset or unknown text is DENY."""
    return DENY if text is None else PERM_BY_TEXT.get(str(text).strip(), DENY)


def check_permission(needed: int, owned: int) -> bool:
    """Permission.checkPermission: `owned` grants `needed`."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def split_resource(item: str) -> list[str]:
    """`topicA=PUB|SUB` -> its tokens as StringUtils.split(item, "=") gives them (empty tokens dropped)."""
    return [part for part in str(item).split("=") if part]


def check_resource_perms(items: list[str] | None) -> None:
    """Permission.checkResourcePerms: the `Res=Perm` items an update gives (unknown permissions refused)."""
    for item in items or ():
        parts = split_resource(item)
        if len(parts) != 2:
            raise AclException(f"Parse Resource format error for {item}.\n"
                               f"The expected resource format is 'Res=Perm'. For example: topicA=SUB")
        if parts[1].strip() != "DENY" and parse_perm(parts[1]) == DENY:
            raise AclException(f"Parse resource permission error for {item}.\n"
                               f"The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'.")


def check_keys(access_key: str | None, secret_key: str | None) -> None:
    """PlainPermissionManager.checkPlainAccessConfig."""
    if access_key is None or secret_key is None or len(access_key) <= KEY_MIN_LENGTH \
            or len(secret_key) <= KEY_MIN_LENGTH:
        raise AclException(f"The accessKey={_java_str(access_key)} and secretKey={_java_str(secret_key)} cannot be "
                           f"null and length should longer than 6")


def _java_str(value: str | None) -> str:
    return "null" if value is None else value
