"""The ACL accounts checked for 5.x gRPC requests (broker/core/acl/grpc_auth.py): the `authorization` metadata
of the 5.x clients (HMAC-SHA1 of `x-mq-date-time`, in hex, computed here by hand as rocketmq-python-client
5.1.2's Signature.sign does) and the resources each message needs, as the 5.x proxy's ACL parses them."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from rocketmq_emulator.broker.core.acl.grpc_auth import grpc_resources, hex_signature, parse_authorization
from rocketmq_emulator.broker.core.acl.permission import ANY, PUB, SUB, AclException
from rocketmq_emulator.broker.core.acl.validator import PlainAccessValidator

v2 = pytest.importorskip("rocketmq_emulator.protocol.grpc_v2").v2

ACL = """\
accounts:
  - {accessKey: app_user, secretKey: app_secret1, defaultTopicPerm: DENY, defaultGroupPerm: SUB,
     topicPerms: [orders=PUB|SUB, audit=SUB]}
"""
DATE = "20261127T045100Z"


def metadata(ak: str = "app_user", sk: str = "app_secret1", date: str = DATE) -> dict[str, str]:
    by_hand = hmac.new(sk.encode(), date.encode(), hashlib.sha1).hexdigest()
    assert hex_signature(sk, date) == by_hand
    return {"x-mq-date-time": date, "authorization": f"MQv2-HMAC-SHA1 Credential={ak}, "
                                                     f"SignedHeaders=x-mq-date-time, Signature={by_hand}"}


def test_the_authorization_header():
    ak, signature = parse_authorization("MQv2-HMAC-SHA1 Credential=app_user/x, SignedHeaders=x-mq-date-time, "
                                        "Signature=0aff")
    assert (ak, signature) == ("app_user", "Cv8=")  # the hex signature as Base64, as the proxy compares it
    with pytest.raises(AclException):
        parse_authorization("garbage")


def test_what_each_grpc_request_needs():
    orders, group = v2.Resource(name="orders"), v2.Resource(name="GID")
    send = v2.SendMessageRequest(messages=[v2.Message(topic=orders), v2.Message(topic=orders)])
    assert grpc_resources(send) == {"orders": PUB}
    receive = v2.ReceiveMessageRequest(group=group, message_queue=v2.MessageQueue(topic=orders))
    assert grpc_resources(receive) == {"%RETRY%GID": SUB, "orders": SUB}
    assert grpc_resources(v2.AckMessageRequest(group=group, topic=orders)) == {"%RETRY%GID": SUB, "orders": SUB}
    assert grpc_resources(v2.QueryRouteRequest(topic=orders)) == {"orders": ANY}
    assert grpc_resources(v2.EndTransactionRequest(topic=orders)) == {"orders": PUB}
    settings = v2.TelemetryCommand(settings=v2.Settings(publishing=v2.Publishing(topics=[orders])))
    assert grpc_resources(settings) == {"orders": PUB}
    namespaced = v2.QueryRouteRequest(topic=v2.Resource(resource_namespace="ns", name="orders"))
    assert grpc_resources(namespaced) == {"ns%orders": ANY}
    mixed = v2.SendMessageRequest(messages=[v2.Message(topic=orders), v2.Message(topic=v2.Resource(name="b"))])
    with pytest.raises(AclException, match="not consistent"):
        grpc_resources(mixed)


def test_grpc_requests_are_checked_against_the_accounts(tmp_path):
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL)
    acl = PlainAccessValidator(path)
    send = v2.SendMessageRequest(messages=[v2.Message(topic=v2.Resource(name="orders"))])
    acl.validate_grpc(metadata(), send, "127.0.0.1")
    with pytest.raises(AclException, match="Check signature failed for accessKey=app_user"):
        acl.validate_grpc(metadata(sk="wrong-secret"), send, "127.0.0.1")
    with pytest.raises(AclException, match="No accessKey is configured"):
        acl.validate_grpc({}, send, "127.0.0.1")
    audit = v2.SendMessageRequest(messages=[v2.Message(topic=v2.Resource(name="audit"))])
    with pytest.raises(AclException, match="No default permission for topic:audit"):
        acl.validate_grpc(metadata(), audit, "127.0.0.1")
    acl.validate_grpc(metadata(), v2.QueryRouteRequest(topic=v2.Resource(name="audit")), "127.0.0.1")  # ANY


class Aborted(Exception):
    pass


class Context:
    """What the guard uses of a grpc.aio context."""

    def __init__(self, md: dict[str, str]) -> None:
        self.md = md
        self.status = None

    def invocation_metadata(self):
        return list(self.md.items())

    def peer(self) -> str:
        return "ipv4:127.0.0.1:50123"

    async def abort(self, code, details):
        self.status = (code, details)
        raise Aborted(details)


async def test_the_guard_of_a_method_refuses_with_permission_denied(tmp_path):
    import grpc

    from rocketmq_emulator.broker.core.acl.grpc_auth import guard_method, peer_ip
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL)
    acl = PlainAccessValidator(path)
    served = []

    async def send(request, context):
        served.append(request)
        return "ok"
    guarded = guard_method(send, False, False, acl.validate_grpc)
    request = v2.SendMessageRequest(messages=[v2.Message(topic=v2.Resource(name="orders"))])
    assert await guarded(request, Context(metadata())) == "ok"
    ctx = Context(metadata(sk="wrong-secret"))
    with pytest.raises(Aborted):
        await guarded(request, ctx)
    assert ctx.status == (grpc.StatusCode.PERMISSION_DENIED, "Check signature failed for accessKey=app_user")
    assert len(served) == 1

    async def telemetry(commands, context):
        async for command in commands:
            yield command.WhichOneof("command")
    stream = guard_method(telemetry, True, True, acl.validate_grpc)

    async def commands(*items):
        for item in items:
            yield item
    publish = v2.TelemetryCommand(settings=v2.Settings(publishing=v2.Publishing(topics=[v2.Resource(name="orders")])))
    assert [c async for c in stream(commands(publish), Context(metadata()))] == ["settings"]
    audit = v2.TelemetryCommand(settings=v2.Settings(publishing=v2.Publishing(topics=[v2.Resource(name="audit")])))
    ctx = Context(metadata())
    with pytest.raises(Aborted):
        [c async for c in stream(commands(publish, audit), ctx)]
    assert ctx.status[1] == "No default permission for topic:audit"
    assert peer_ip(Context({})) == "127.0.0.1"
