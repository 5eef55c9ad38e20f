"""Messages between a host and its clients: one JSON object per line over a unix socket.

Each message is an object with ``"t"`` naming what it is. A client sends ``hello`` first and
is answered ``ready``; after that, see :mod:`acpcli.host.server` for the conversation. Lines
are bounded (:data:`MAX_LINE`): a peer cannot make the other side hold more.

Only this user may talk to a host: the socket is 0600 in a 0700 directory, and both sides
check the peer's credentials (``SO_PEERCRED``) on every connection.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from acpcli.host.messages import MAX_LINE, ChannelClosed, decoded, encoded, uid_of


def peer_uid(stream: SocketStream) -> int | None:
    """The user id of the process at the other end (None where the platform cannot say)."""
    return uid_of(stream.extra(SocketAttribute.raw_socket))


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
        data = encoded(message)
        async with self._lock:  # whole lines, whoever sends
            try:
                await self.stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as err:
                raise ChannelClosed(str(err)) from None

    async def receive(self) -> dict[str, Any]:
        try:
            line = await self._reader.receive_until(b"\n", MAX_LINE)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as err:
            raise ChannelClosed(type(err).__name__) from None
        except anyio.DelimiterNotFound:
            raise ChannelClosed("a message over the size limit") from None
        return decoded(line)

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
