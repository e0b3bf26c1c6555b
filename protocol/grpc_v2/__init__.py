"""RocketMQ 5.x's gRPC messages (apache/rocketmq-apis, `apache/rocketmq/v2/service.proto` + `definition.proto`),
built at import from a compiled descriptor set into a descriptor pool of this module's own.

Why a descriptor set and no generated `_pb2` modules: generated modules register their files in protobuf's
default pool, so they cannot be imported in one process with another copy of the same files (the official
Python 5.x client ships one); and they carry version guards tied to the protobuf that generated them. A
FileDescriptorSet is plain protobuf data that every protobuf 4.x-7.x reads, and a pool of our own clashes with
nothing. `apache_rocketmq_v2.desc` is made by `protocol/grpc_v2/generate.sh` from apache/rocketmq-apis at commit
`PROTO_COMMIT` (Apache License 2.0; the .proto files are not copied here).

Only protobuf is imported: the gRPC server (broker/grpc/) imports grpc, and only when the endpoint is enabled.
"""

from __future__ import annotations

from importlib import resources
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from google.protobuf import descriptor_pb2, descriptor_pool

#: apache/rocketmq-apis commit the descriptor set was compiled from
PROTO_COMMIT = "3e60073c6dab3430feaec443824802e23ecda681"
PACKAGE = "apache.rocketmq.v2"
SERVICE = f"{PACKAGE}.MessagingService"

_pool = descriptor_pool.DescriptorPool()
_files = descriptor_pb2.FileDescriptorSet.FromString(
    resources.files(__package__).joinpath("apache_rocketmq_v2.desc").read_bytes())
for _file in _files.file:
    _pool.Add(_file)


def _message_class(full_name: str) -> Any:
    desc = _pool.FindMessageTypeByName(full_name)
    try:
        from google.protobuf.message_factory import GetMessageClass
        return GetMessageClass(desc)
    except ImportError:  # protobuf before 4.22
        from google.protobuf.message_factory import MessageFactory
        return MessageFactory(_pool).GetPrototype(desc)


def _namespace() -> SimpleNamespace:
    """Every message class and enum of the package: `v2.QueryRouteRequest`, `v2.Code.OK` (an int)."""
    names: dict[str, Any] = {}
    for file in _files.file:
        if file.package != PACKAGE:
            continue
        for msg in file.message_type:
            names[msg.name] = _message_class(f"{PACKAGE}.{msg.name}")
        for enum in file.enum_type:
            names[enum.name] = SimpleNamespace(**{v.name: v.number for v in enum.value})
    names["Timestamp"] = _message_class("google.protobuf.Timestamp")
    names["Duration"] = _message_class("google.protobuf.Duration")
    return SimpleNamespace(**names)


if TYPE_CHECKING:  # the type checker reads the generated stubs (types.pyi, stubgen.py); run time builds them
    from . import types as v2
else:
    v2 = _namespace()


def method_types(method: str) -> tuple[Any, Any, bool, bool]:
    """(request class, response class, client streaming, server streaming) of a MessagingService method."""
    m = _pool.FindServiceByName(SERVICE).methods_by_name[method]
    request = _message_class(m.input_type.full_name)
    response = _message_class(m.output_type.full_name)
    return request, response, m.client_streaming, m.server_streaming


def method_callable(channel: Any, method: str) -> Any:
    """A MessagingService method on a `grpc.aio` channel (unary or server-streaming; Telemetry is neither), its
    messages serialised by this module's classes: `await method_callable(ch, "QueryRoute")(request, metadata=md)`."""
    request, response, _, server_streaming = method_types(method)
    make = channel.unary_stream if server_streaming else channel.unary_unary
    return make(f"/{SERVICE}/{method}", request_serializer=request.SerializeToString,
                response_deserializer=response.FromString)


def method_names() -> list[str]:
    return [m.name for m in _pool.FindServiceByName(SERVICE).methods]
