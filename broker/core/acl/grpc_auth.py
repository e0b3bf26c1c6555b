"""The same accounts checked for the 5.x clients' gRPC requests, as the 5.x proxy's ACL does (acl 1.0:
AuthenticationInterceptor, PlainAccessResource.parse of a gRPC message, AuthorizationHeader).

A 5.x client with credentials sends, with every call, the metadata `x-mq-date-time` (its clock, e.g.
`20261127T045100Z`) and `authorization: MQv2-HMAC-SHA1 Credential=<accessKey>, SignedHeaders=x-mq-date-time,
Signature=<hex of HMAC-SHA1(secretKey, x-mq-date-time)>`. The proxy turns the hex signature into Base64 and then
validates as for a remoting request (validator.py), the signed content being the date-time text. The resources:
a producer's and consumer's Telemetry settings (PUB on each published topic; SUB on the group and each
subscribed topic), SendMessage (PUB on the topic), ReceiveMessage, AckMessage, ChangeInvisibleDuration,
ForwardMessageToDeadLetterQueue, QueryAssignment (SUB on the group and the topic), EndTransaction (PUB),
a consumer's Heartbeat and NotifyClientTermination (SUB on the group), QueryRoute (ANY on the topic). A refusal is
the gRPC status PERMISSION_DENIED.
"""

from __future__ import annotations

import base64
import binascii
import logging
from typing import Any, AsyncIterator, Callable, Mapping

from rocketmq_emulator.protocol.topics import retry_topic

from .permission import ANY, PUB, SUB, AclException

#: PlainAccessValidator.validate_grpc: (metadata, request, remote ip) -> None, AclException when refused
Validate = Callable[[Mapping[str, str], Any, str], None]

log = logging.getLogger("rocketmq_emulator.acl")

DATE_TIME = "x-mq-date-time"
AUTHORIZATION = "authorization"
SESSION_TOKEN = "x-mq-session-token"
#: the ClientType values whose heartbeats name a group (apache.rocketmq.v2.ClientType)
_CONSUMER_TYPES = (2, 3)  # PUSH_CONSUMER, SIMPLE_CONSUMER


def parse_authorization(header: str) -> tuple[str | None, str | None]:
    """AuthorizationHeader: (access key, signature in Base64) of an `authorization` value."""
    method, sep, rest = header.partition(" ")
    if not sep:
        raise AclException("authorization header is incorrect")
    access_key = signature = None
    for item in rest.split(","):
        key, eq, value = item.strip().partition("=")
        if not eq:
            raise AclException("authorization keyValues length is incorrect, actual length=1")
        if key == "Credential":
            access_key = value.split("/")[0]
        elif key == "Signature":
            try:
                signature = base64.b64encode(bytes.fromhex(value)).decode("ascii")
            except ValueError:
                raise AclException(f"Illegal hexadecimal character in {value}") from None
    return access_key, signature


def _name(resource: Any) -> str:
    """A Resource's name with its namespace (NamespaceUtil.wrapNamespace: `namespace%name`)."""
    namespace = getattr(resource, "resource_namespace", "")
    return f"{namespace}%{resource.name}" if namespace else resource.name


def grpc_resources(request: Any) -> dict[str, int]:
    """The topics and group retry topics a gRPC request needs, by its message type."""
    kind = request.DESCRIPTOR.name
    needed: dict[str, int] = {}

    def topic(resource: Any, perm: int) -> None:
        needed[_name(resource)] = perm

    def group(resource: Any) -> None:
        needed[retry_topic(_name(resource))] = SUB
    if kind == "HeartbeatRequest":
        if request.client_type in _CONSUMER_TYPES:
            if not request.HasField("group"):
                raise AclException("Consumer heartbeat doesn't have group")
            group(request.group)
    elif kind == "SendMessageRequest":
        if not request.messages:
            raise AclException("SendMessageRequest, messageCount is zero")
        first = request.messages[0].topic
        if any(m.topic != first for m in request.messages):
            raise AclException("SendMessageRequest, messages' topic is not consistent")
        topic(first, PUB)
    elif kind == "ReceiveMessageRequest":
        group(request.group)
        topic(request.message_queue.topic, SUB)
    elif kind in ("AckMessageRequest", "ForwardMessageToDeadLetterQueueRequest", "QueryAssignmentRequest",
                  "ChangeInvisibleDurationRequest"):
        group(request.group)
        topic(request.topic, SUB)
    elif kind == "EndTransactionRequest":
        topic(request.topic, PUB)
    elif kind == "TelemetryCommand" and request.WhichOneof("command") == "settings":
        settings = request.settings
        if settings.HasField("publishing"):
            for t in settings.publishing.topics:
                topic(t, PUB)
        if settings.HasField("subscription"):
            group(settings.subscription.group)
            for entry in settings.subscription.subscriptions:
                topic(entry.topic, SUB)
        if not settings.HasField("publishing") and not settings.HasField("subscription"):
            raise AclException("settings command doesn't have publishing or subscription")
    elif kind == "NotifyClientTerminationRequest":
        group(request.group)
    elif kind == "QueryRouteRequest":
        topic(request.topic, ANY)
    return needed


def grpc_credentials(metadata: Mapping[str, str]) -> tuple[str | None, str | None, bytes]:
    """(access key, Base64 signature, signed content) of a call's metadata; no `authorization`: no key."""
    header = metadata.get(AUTHORIZATION)
    if header is None:
        return None, None, b""
    access_key, signature = parse_authorization(header)
    return access_key, signature, (metadata.get(DATE_TIME) or "").encode("utf-8")


def hex_signature(secret_key: str, date_time: str) -> str:
    """What a 5.x client puts in `Signature=` (lower-case hex of HMAC-SHA1 of the date-time)."""
    import hashlib
    import hmac
    return binascii.hexlify(hmac.new(secret_key.encode("utf-8"), date_time.encode("utf-8"),
                                     hashlib.sha1).digest()).decode("ascii")


def peer_ip(context: Any) -> str:
    """The client's address from a gRPC context's peer (`ipv4:127.0.0.1:5000`, `ipv6:[::1]:5000`)."""
    kind, _, rest = (context.peer() or "").partition(":")
    host = rest.rpartition(":")[0] if kind in ("ipv4", "ipv6") else rest
    return host.strip("[]")


def guard_method(fn: Callable[..., Any], client_streaming: bool, server_streaming: bool,
                 validate: Validate) -> Callable[..., Any]:
    """A MessagingService method behind the check (the proxy's AuthenticationInterceptor): each request (each
    command of a Telemetry stream) is validated first (`validate`: a PlainAccessValidator's validate_grpc); a
    refusal ends the call with PERMISSION_DENIED."""

    async def check(request: Any, context: Any) -> None:
        if request is None:  # malformed: the method answers it
            return
        try:
            validate(dict(context.invocation_metadata() or ()), request, peer_ip(context))
        except AclException as exc:
            import grpc  # the [grpc] extra: only a gRPC front calls this
            log.info("ACL refused %s from %s: %s", request.DESCRIPTOR.name, context.peer(), exc.message)
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, exc.message)

    if client_streaming:  # Telemetry: every command
        async def streaming(request_iterator: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            async def checked() -> AsyncIterator[Any]:
                async for command in request_iterator:
                    await check(command, context)
                    yield command
            async for item in fn(checked(), context):
                yield item
        return streaming
    if server_streaming:
        async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
            await check(request, context)
            async for item in fn(request, context):
                yield item
        return stream

    async def unary(request: Any, context: Any) -> Any:
        await check(request, context)
        return await fn(request, context)
    return unary
