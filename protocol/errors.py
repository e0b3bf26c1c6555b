"""The protocol package's one exception hierarchy.

`ProtocolError` means "these bytes or fields are not a valid RocketMQ remoting message"; a server closes
the connection (malformed frame) or answers with an error naming the field (bad header).
`BrokerError` is a well-formed answer that carries a non-success `ResponseCode`: the broker raises it
inside a handler to produce an error response, and the client raises it when a broker answered so.
"""

from __future__ import annotations


class RocketMQError(Exception):
    """Root of every error raised by this project's protocol layer."""


class ProtocolError(RocketMQError, ValueError):
    """Malformed input: a bad frame, header, body or message record.

    `java` is the remark Apache RocketMQ 4.9.8 answers for the same input, where it is known (`java_texts`); a server
    with `java_remarks` on (`--compat 4.9`) answers it instead of the message."""

    def __init__(self, message: str, *, java: str | None = None) -> None:
        super().__init__(message)
        self.java = java


class BrokerError(RocketMQError):
    """A response code other than success, with the remark that explains it."""

    def __init__(self, code: int, remark: str | None = None, *, java: str | None = None) -> None:
        from .codes import ResponseCode

        self.java = java  # 4.9.8's remark for the same failure, as ProtocolError.java

        try:
            self.code: int = ResponseCode(code)
        except ValueError:
            self.code = code
        self.remark = remark or ""
        name = getattr(self.code, "name", str(code))
        super().__init__(f"{name} ({int(code)}): {self.remark}" if self.remark else f"{name} ({int(code)})")

