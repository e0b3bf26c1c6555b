"""The signature of a remoting request as 4.9.8's AclClientRPCHook makes it and PlainAccessValidator checks it
(AclUtils.combineRequestContent, AclSigner): the values of the request's ext fields sorted by name (Java's
TreeMap: by UTF-16 code units), without `Signature` and `_UNIQUE_KEY_QUERY`, concatenated, in UTF-8, followed by
the body; HMAC-SHA1 of that with the secret key, in Base64. The client adds its `AccessKey` (and
`SecurityToken`, if it has one) to the ext fields before signing, so they are signed too."""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Mapping

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
#: MixAll.UNIQUE_MSG_QUERY_FLAG: left out of the signed content by the broker
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
_UNSIGNED = (SIGNATURE, UNIQUE_MSG_QUERY_FLAG)


def _java_order(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


def request_content(ext_fields: Mapping[str, str] | None, body: bytes | None, *, client: bool = False) -> bytes:
    """What is signed: the sorted ext field values, then the body. The client leaves out only the Signature;
    the broker also `_UNIQUE_KEY_QUERY` (so 4.9.8 refuses a signed query by unique key: kept as it is)."""
    fields = ext_fields or {}
    unsigned = (SIGNATURE,) if client else _UNSIGNED
    text = "".join(fields[name] for name in sorted(fields, key=_java_order) if name not in unsigned)
    return text.encode("utf-8", "surrogatepass") + (body or b"")


def sign(content: bytes, secret_key: str) -> str:
    """AclSigner.calSignature: Base64 of HMAC-SHA1(secret key, content)."""
    return base64.b64encode(hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()).decode("ascii")


def signed_fields(ext_fields: Mapping[str, str] | None, body: bytes | None, access_key: str, secret_key: str,
                  security_token: str | None = None) -> dict[str, str]:
    """The ext fields an AclClientRPCHook sends: these plus AccessKey (and SecurityToken) and the Signature."""
    out = dict(ext_fields or {})
    out[ACCESS_KEY] = access_key
    if security_token is not None:
        out[SECURITY_TOKEN] = security_token
    out[SIGNATURE] = sign(request_content(out, body, client=True), secret_key)
    return out
