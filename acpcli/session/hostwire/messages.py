"""The messages of a live session's host and its clients, and a blocking channel for them.

One JSON object per line, ``"t"`` naming what it is (see :mod:`acpcli.host.server`), lines
bounded (:data:`MAX_MESSAGE` from a host, :data:`MAX_CLIENT_MESSAGE` from a client). This module imports no event loop: a one-turn command talks to
its host with :class:`BlockingChannel` (asyncio and anyio cost more to import than the whole
warm round trip); the host and ``attach`` use :class:`acpcli.session.hostwire.channel.Channel`.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any

from acpcli.history.records import LOCAL

#: The longest line an agent may send (the transport's limit): what one update can hold.
MAX_LINE = 64 * 1024 * 1024
#: The longest message a client takes from its host: an update of an agent's longest line,
#: whose quotes and backslashes the host's message escapes once more (at most twice as long).
MAX_MESSAGE = 2 * MAX_LINE + (1 << 20)
#: The longest message a host takes from a client: a prompt of the largest text a command
#: reads (8 MiB), every character of it escaped (``\u0001``: six bytes), with room to spare.
MAX_CLIENT_MESSAGE = 6 * 8 * 1024 * 1024 + (1 << 20)

#: Seconds a client waits for a host that stops answering (``ACPCLI_HOST_TIMEOUT``).
HOST_TIMEOUT = 30.0
#: A client whose host has said nothing for so many seconds asks it for its ``status``.
PING_AFTER = 2.0


def host_timeout() -> float:
    """How long a client waits for its host to answer (its ``ready``, a ``status`` asked
    during a quiet turn) before it takes the host for gone: ``ACPCLI_HOST_TIMEOUT`` seconds,
    else :data:`HOST_TIMEOUT`. A quiet agent is never taken for a dead host: the host
    answers for itself, whatever its agent does."""
    try:
        value = float(os.environ.get("ACPCLI_HOST_TIMEOUT", ""))
    except ValueError:
        return HOST_TIMEOUT
    return value if 0 < value < 1e6 else HOST_TIMEOUT


class ChannelClosed(Exception):
    """The other side went away (or sent what is not a message)."""


def uid_of(raw: socket.socket) -> int | None:
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        getpeereid = getattr(raw, "getpeereid", None)
        return int(getpeereid()[1]) if getpeereid is not None else None
    _pid, uid, _gid = struct.unpack("3i", raw.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i")))
    return int(uid)


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


class Lines:
    """Bytes received on a channel, cut into whole messages (one a line): each byte is
    scanned for the newline once, so a long message that comes in many chunks costs time
    linear in its size; more than ``limit`` bytes without a newline closes the channel."""

    def __init__(self, limit: int) -> None:
        self.data = bytearray()
        self.limit = limit
        self._scanned = 0  # bytes of data known to hold no newline

    def next(self) -> bytes | None:
        """The next whole line (without its newline), or None until more has come."""
        end = self.data.find(b"\n", self._scanned)
        if end >= 0:
            line = bytes(memoryview(self.data)[:end])
            del self.data[: end + 1]
            self._scanned = 0
            return line
        self._scanned = len(self.data)
        if len(self.data) > self.limit:
            raise ChannelClosed("a message over the size limit")
        return None


class BlockingChannel:
    """The same conversation over a plain blocking socket: what a one-turn command (``prompt
    --session``) uses, so that it needs no event loop (importing asyncio and anyio costs more
    than the whole warm round trip)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lines = Lines(MAX_MESSAGE)

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.sock.sendall(encoded(message))
        except OSError as err:
            raise ChannelClosed(str(err)) from None

    def receive(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next message, or None when ``timeout`` seconds pass without one."""
        import select

        while True:
            line = self._lines.next()
            if line is not None:
                return decoded(line)
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                return None
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError as err:
                raise ChannelClosed(str(err)) from None
            if not chunk:
                raise ChannelClosed("EndOfStream")
            self._lines.data += chunk

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


def apply_event(live: Any, kind: str, payload: str) -> None:
    """One update as the host stored it, applied to this command's own session mirror (so
    its view draws it); acpcli's own records but :data:`LOCAL` are bookkeeping."""
    if kind.startswith("acpcli/") and kind != LOCAL:
        return
    try:
        event = json.loads(payload)
    except ValueError:
        return
    if not isinstance(event, dict):
        return
    if "jsonrpc" in event:  # the whole frame, as it arrived from the agent
        params = event.get("params")
        event = params.get("update") if isinstance(params, dict) else None
        if not isinstance(event, dict):
            return
    live.feed(event)
