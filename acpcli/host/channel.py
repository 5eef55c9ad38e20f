"""Messages between a host and its clients: one JSON object per line over a unix socket.

Each message is an object with ``"t"`` naming what it is. A client sends ``hello`` first and
is answered ``ready``; after that, see :mod:`acpcli.host.server` for the conversation. Lines
are bounded (:data:`MAX_LINE`): a peer cannot make the other side hold more.

Only this user may talk to a host: the socket is 0600 in a 0700 directory, and both sides
check the peer's credentials (``SO_PEERCRED``) on every connection.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

#: The longest message line either side accepts (a prompt, a replayed turn's update).
MAX_LINE = 64 * 1024 * 1024


class ChannelClosed(Exception):
    """The other side went away (or sent what is not a message)."""


def peer_uid(stream: SocketStream) -> int | None:
    """The user id of the process at the other end (None where the platform cannot say)."""
    raw = stream.extra(SocketAttribute.raw_socket)
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        getpeereid = getattr(raw, "getpeereid", None)
        return int(getpeereid()[1]) if getpeereid is not None else None
    _pid, uid, _gid = struct.unpack("3i", raw.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i")))
    return uid


def same_user(stream: SocketStream) -> bool:
    """Whether the peer runs as this user (an unknown peer is refused)."""
    return peer_uid(stream) == os.getuid()


class Channel:
    """One connection: :meth:`send` a message, :meth:`receive` the next one."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self._reader = BufferedByteReceiveStream(stream)
        self._lock = anyio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        async with self._lock:  # whole lines, whoever sends
            try:
                await self.stream.send(data + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as err:
                raise ChannelClosed(str(err)) from None

    async def receive(self) -> dict[str, Any]:
        try:
            line = await self._reader.receive_until(b"\n", MAX_LINE)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as err:
            raise ChannelClosed(type(err).__name__) from None
        except anyio.DelimiterNotFound:
            raise ChannelClosed("a message over the size limit") from None
        try:
            message = json.loads(line)
        except ValueError:
            raise ChannelClosed("not a message") from None
        if not isinstance(message, dict) or not isinstance(message.get("t"), str):
            raise ChannelClosed("not a message")
        return message

    async def aclose(self) -> None:
        await self.stream.aclose()


async def connect(path: str) -> Channel:
    """A channel to the host listening at ``path`` (OSError when there is none), after
    checking that it runs as this user."""
    stream = await anyio.connect_unix(path)
    if not same_user(stream):
        await stream.aclose()
        raise PermissionError(f"the process at {path} is not this user's")
    return Channel(stream)
