"""RocketMQ 4.x's remoting protocol as the broker, the name server and the client share it: the codec, and the
one transport module.

The codec is sans-IO (no asyncio, sockets, files, processes or argparse): bytes in, values out. `codes`
(request and response codes, RocketMQ's flags), `command` (RemotingCommand), `frame` (streaming frame codec),
`headers` (typed headers), `message` (stored records, properties, batches, ids), `fastjson`, `bodies` and the
other `*_bodies` (bodies), `topics` (topic and group naming rules), `dispatch` (request code -> handler),
`trace` (the wire trace's filters, records and lines), `errors`.

`transport` is the only module with I/O: asyncio connections, invoke/oneway, timers. Files, processes and the
command line belong to the layers above (`broker/`, `cli/`).
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
