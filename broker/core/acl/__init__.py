"""4.9.8's ACL on the broker's remoting front (README "ACL"): the plain ACL file and its accounts
(`plain_acl`), the permissions (`permission`), white remote addresses (`remote_address`), the request signature
(`signature`) and the check of every request (`validator.PlainAccessValidator`); the controller builds the
validator when `aclEnable=true`, broker/handlers/acl_admin.py answers the ACL admin requests with it."""

from __future__ import annotations

from pathlib import Path

from ...config import BrokerConfig

#: the file's name in the broker's config directory (4.9.8: ${rocketmq.home}/conf/plain_acl.yml)
PLAIN_ACL_FILE = "plain_acl.yml"


def plain_acl_path(config: BrokerConfig) -> Path:
    """`aclPlainFile`, else `<storePathRootDir>/config/plain_acl.yml`."""
    if config.acl_plain_file:
        return Path(config.acl_plain_file)
    return Path(config.store.store_path_root_dir) / "config" / PLAIN_ACL_FILE
