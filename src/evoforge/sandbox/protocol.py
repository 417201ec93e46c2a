"""Length-prefixed frames over pipes between host, zygote and child.

A frame is 4 bytes big-endian length + payload. Control frames are JSON objects; the result
value travels as raw JSON bytes in a frame of its own. Nothing is ever pickled, so a hostile
child cannot make the host run code by what it sends back.
"""
from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

HEADER = struct.Struct(">I")  # the length prefix of every frame
MAX_FRAME = (1 << 31) - 1
ARTIFACTS_KEY = "__artifacts__"  # where OpenEvolve's EvaluationResult.artifacts travel back in the value


class ChannelClosed(Exception):
    """The other end went away (EOF) before a whole frame arrived."""


class ChannelTimeout(Exception):
    """No whole frame arrived before the deadline."""


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def send_frame(fd: int, payload: bytes) -> None:
    write_all(fd, HEADER.pack(len(payload)) + payload if len(payload) < 65536 else HEADER.pack(len(payload)))
    if len(payload) >= 65536:
        write_all(fd, payload)


def send_json(fd: int, obj: dict[str, Any]) -> None:
    send_frame(fd, json.dumps(obj).encode())


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout("no reply before the deadline")
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if not poller.poll(max(1, int(left * 1000))):
                raise ChannelTimeout("no reply before the deadline")
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise ChannelClosed("channel closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None = None) -> bytes:
    (n,) = HEADER.unpack(_read_exact(fd, HEADER.size, deadline))
    return _read_exact(fd, n, deadline)


def read_json(fd: int, deadline: float | None = None) -> dict[str, Any]:
    obj = json.loads(read_frame(fd, deadline))
    if not isinstance(obj, dict):
        raise ChannelClosed("malformed control frame")
    return obj
