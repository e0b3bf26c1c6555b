"""`RemotingCommand`: one request or response of the remoting protocol (reference §2)."""

from __future__ import annotations

import itertools
from typing import Any

import msgspec

from .codes import CURRENT_VERSION, ResponseCode, SerializeType

RESPONSE_FLAG = 0x1
ONEWAY_FLAG = 0x2

_opaque_counter = itertools.count(1)


def next_opaque() -> int:
    """A process-wide request id, kept positive and within a signed 32-bit int as clients expect."""
    return next(_opaque_counter) & 0x7FFFFFFF


class RemotingCommand(msgspec.Struct, rename={"ext_fields": "extFields", "body": "__emulator_body__",
                                              "serialize_type": "__emulator_serialize_type__",
                                              "header": "__emulator_header__"}):
    """A decoded or to-be-encoded frame.

    `language` is the `LanguageCode` *name* as the JSON header carries it (`"JAVA"`, `"CPP"`, ...; a binary
    header's byte is mapped to its name). `ext_fields` maps header field names to strings (numbers and
    booleans sent by C++ or ali-ons are normalised on decode). `body` is raw bytes. `serialize_type` is the
    header serialization the command arrived in; a response is written in the same one.

    It is a msgspec Struct so that a JSON header decodes straight into it (the hot path); `body` and
    `serialize_type` are never read from the header.
    """

    code: int
    language: str = "JAVA"
    version: int = CURRENT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] | None = None  # typed str so a JSON header with string values decodes in one pass
    body: bytes = b""
    serialize_type: int = 0  # SerializeType.JSON
    #: the typed request header when the frame decoder read it straight from the JSON (`FrameDecoder.typed`: the
    #: broker's send runs); `ext_fields` is then None
    header: Any = None

    # -- constructors -------------------------------------------------------------------------------
    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        opaque: int | None = None,
        oneway: bool = False,
        language: str = "JAVA",
        version: int = CURRENT_VERSION,
        serialize_type: int = SerializeType.JSON,
    ) -> RemotingCommand:
        return cls(code, language, version, next_opaque() if opaque is None else opaque,
                   ONEWAY_FLAG if oneway else 0, None, ext_fields, body, serialize_type)

    @classmethod
    def response_to(
        cls,
        request: RemotingCommand,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        version: int = CURRENT_VERSION,
    ) -> RemotingCommand:
        """A response carrying the request's opaque, the response bit, and the request's serialization."""
        return cls(code, "JAVA", version, request.opaque, RESPONSE_FLAG, remark, ext_fields, body,
                   request.serialize_type)

    @classmethod
    def not_supported(cls, request: RemotingCommand) -> RemotingCommand:
        """REQUEST_CODE_NOT_SUPPORTED, worded as Java's remoting answers a code it has no processor for."""
        return cls.response_to(request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                               f" request type {request.code} not supported")

    # -- helpers ------------------------------------------------------------------------------------
    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    def ext(self, name: str, default: str | None = None) -> str | None:
        fields = self.ext_fields
        return default if fields is None else fields.get(name, default)

    def __repr__(self) -> str:
        kind = "response" if self.flag & RESPONSE_FLAG else "request"
        return (f"<RemotingCommand {kind} code={self.code} opaque={self.opaque} flag={self.flag} "
                f"language={self.language} version={self.version} remark={self.remark!r} "
                f"ext={self.ext_fields!r} body={len(self.body)}B>")
