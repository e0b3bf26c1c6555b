"""The frames of 4.9.8's HA protocol (HAConnection / HAService.HAClient), byte for byte. Sans-IO.

* slave -> master: its max commitlog offset, 8 bytes big-endian, on connect, after each append and every
  haSendHeartbeatInterval (nothing else ever travels this way);
* master -> slave: a transfer, header ``[8-byte big-endian physical offset][4-byte big-endian body size]`` and the
  body, the commitlog's bytes from that offset (never across a segment's end; at most haTransferBatchSize); a
  heartbeat is a header of size 0 at the offset the next transfer will start from.
"""

from __future__ import annotations

import struct

REPORT = struct.Struct(">q")
HEADER = struct.Struct(">qi")
REPORT_SIZE = REPORT.size  # 8
HEADER_SIZE = HEADER.size  # 12
#: a 4.9.8 slave reads into a 4 MiB buffer: a bigger transfer could never be taken whole, so none is sent, and one
#: received is garbage
MAX_BODY = 4 * 1024 * 1024 - HEADER_SIZE


class FrameError(ValueError):
    """Bytes that are no frame of the HA protocol: the connection is closed."""


def encode_report(offset: int) -> bytes:
    return REPORT.pack(offset)


def decode_report(data: bytes) -> int:
    (offset,) = REPORT.unpack(data)
    if offset < 0:
        raise FrameError(f"a slave reported the negative offset {offset}")
    return int(offset)


def encode_header(offset: int, size: int) -> bytes:
    return HEADER.pack(offset, size)


def decode_header(data: bytes) -> tuple[int, int]:
    offset, size = HEADER.unpack(data)
    if offset < 0 or size < 0 or size > MAX_BODY:
        raise FrameError(f"no transfer header: offset {offset}, body size {size}")
    return int(offset), int(size)
