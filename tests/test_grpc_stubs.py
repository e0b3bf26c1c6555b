"""The typing stubs of the 5.x gRPC messages (protocol/grpc_v2/types.pyi) are what stubgen.py makes of the descriptor
set the run-time classes come from: regenerate them with
`python -m rocketmq_emulator.protocol.grpc_v2.stubgen > protocol/grpc_v2/types.pyi` when the descriptor changes."""

from __future__ import annotations

from pathlib import Path

from rocketmq_emulator.protocol.grpc_v2 import method_names, method_types, v2
from rocketmq_emulator.protocol.grpc_v2.stubgen import stub

STUB = Path(__file__).resolve().parents[1] / "protocol" / "grpc_v2" / "types.pyi"


def test_the_committed_stubs_are_the_generated_ones():
    assert STUB.read_text() == stub().rstrip("\n") + "\n", "types.pyi is stale: regenerate it (see the docstring)"


def test_every_message_the_service_uses_has_a_stub_class():
    text = STUB.read_text()
    for method in method_names():
        request, response, _, _ = method_types(method)
        for cls in (request, response):
            assert f"\nclass {cls.DESCRIPTOR.name}(_Message):" in text
            assert getattr(v2, cls.DESCRIPTOR.name) is not None
