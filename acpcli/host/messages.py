"""The messages of a live session's host and its clients, and a blocking channel for them.

One JSON object per line, ``"t"`` naming what it is (see :mod:`acpcli.host.server`), lines
bounded by :data:`MAX_LINE`. This module imports no event loop: a one-turn command talks to
its host with :class:`BlockingChannel` (asyncio and anyio cost more to import than the whole
warm round trip); the host and ``attach`` use :class:`acpcli.host.channel.Channel`.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any

#: The longest message line either side accepts (a prompt, a replayed turn's update).
MAX_LINE = 64 * 1024 * 1024


class ChannelClosed(Exception):
    """The other side went away (or sent what is not a message)."""


def uid_of(raw: socket.socket) -> int | None:
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        getpeereid = getattr(raw, "getpeereid", None)
        return int(getpeereid()[1]) if getpeereid is not None else None
    _pid, uid, _gid = struct.unpack("3i", raw.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i")))
    return uid


def decoded(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError:
        raise ChannelClosed("not a message") from None
    if not isinstance(message, dict) or not isinstance(message.get("t"), str):
        raise ChannelClosed("not a message")
    return message


def encoded(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n"


class BlockingChannel:
    """The same conversation over a plain blocking socket: what a one-turn command (``prompt
    --session``) uses, so that it needs no event loop (importing asyncio and anyio costs more
    than the whole warm round trip)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = bytearray()

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.sock.sendall(encoded(message))
        except OSError as err:
            raise ChannelClosed(str(err)) from None

    def receive(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next message, or None when ``timeout`` seconds pass without one."""
        import select

        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return decoded(line)
            if len(self._buffer) > MAX_LINE:
                raise ChannelClosed("a message over the size limit")
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                return None
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError as err:
                raise ChannelClosed(str(err)) from None
            if not chunk:
                raise ChannelClosed("EndOfStream")
            self._buffer += chunk

    def close(self) -> None:
        self.sock.close()


def connect_blocking(path: str) -> BlockingChannel:
    """:func:`connect` without an event loop."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        if uid_of(sock) != os.getuid():
            raise PermissionError(f"the process at {path} is not this user's")
    except BaseException:
        sock.close()
        raise
    return BlockingChannel(sock)


