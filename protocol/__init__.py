"""Sans-IO codec of the RocketMQ 4.x remoting protocol: bytes in, commands out.

No asyncio, no sockets, no store: `broker/` and `client/` own the I/O. Modules:
`codes` (enums), `command` (RemotingCommand), `frame` (streaming frame codec), `headers` (typed headers),
`message` (stored records, properties, batches, ids), `fastjson` and `bodies` (JSON bodies), `errors`.
"""

from .codes import (LanguageCode, MessageSysFlag, PermName, PullSysFlag, RequestCode, ResponseCode,
                    SerializeType)
from .command import RemotingCommand
from .errors import BrokerError, ProtocolError, RocketMQError
from .frame import MAX_FRAME_LENGTH, FrameDecoder, encode_command, encode_command_bytes

__all__ = [
    "BrokerError", "FrameDecoder", "LanguageCode", "MAX_FRAME_LENGTH", "MessageSysFlag", "PermName",
    "ProtocolError", "PullSysFlag", "RemotingCommand", "RequestCode", "ResponseCode", "RocketMQError",
    "SerializeType", "encode_command", "encode_command_bytes",
]
