"""Messages between a host and its clients: one JSON object per line over a unix socket.

Each message is an object with ``"t"`` naming what it is. A client sends ``hello`` first and
is answered ``ready``; after that, see :mod:`acpcli.host.server` for the conversation. Lines
are bounded (:data:`~acpcli.session.hostwire.messages.MAX_MESSAGE` from a host,
:data:`~acpcli.session.hostwire.messages.MAX_CLIENT_MESSAGE` from a client), and a host's connections
share a :class:`Budget` for what they hold of lines not yet whole: a peer cannot make the
other side hold more.

Only this user may talk to a host: the socket is 0600 in a 0700 directory, and both sides
check the peer's credentials (``SO_PEERCRED``) on every connection.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream

from acpcli.errors import HostLost, HostReported
from acpcli.session.hostwire.messages import (
    MAX_MESSAGE,
    ChannelClosed,
    Lines,
    decoded,
    encoded,
    host_timeout,
    uid_of,
)


def peer_uid(stream: SocketStream) -> int | None:
    """The user id of the process at the other end (None where the platform cannot say)."""
    return uid_of(stream.extra(SocketAttribute.raw_socket))


def same_user(stream: SocketStream) -> bool:
    """Whether the peer runs as this user (an unknown peer is refused)."""
    return peer_uid(stream) == os.getuid()


class Budget:
    """Bytes that a host's connections may hold between them of lines not yet whole (so many
    clients each sending a long line cannot make the host hold their sum)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, size: int) -> bool:
        if self.used + size > self.limit:
            return False
        self.used += size
        return True

    def give(self, size: int) -> None:
        self.used = max(self.used - size, 0)


class Channel:
    """One connection: :meth:`send` a message, :meth:`receive` the next one (at most
    ``limit`` bytes; ``budget``: shared with other connections, see :class:`Budget`)."""

    def __init__(self, stream: SocketStream, *, limit: int = MAX_MESSAGE, budget: Budget | None = None) -> None:
        self.stream = stream
        self.budget = budget
        self._lines = Lines(limit)
        self._held = 0  # bytes of the buffer taken from the budget
        self.received = 0  # messages received so far
        self._lock = anyio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_bytes(encoded(message))

    async def send_bytes(self, data: bytes) -> None:
        """A message already encoded (:func:`~acpcli.session.hostwire.messages.encoded`: one line)."""
        async with self._lock:  # whole lines, whoever sends
            try:
                await self.stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as err:
                raise ChannelClosed(str(err)) from None

    async def receive(self) -> dict[str, Any]:
        while True:
            line = self._lines.next()
            if line is not None:
                self._release()
                self.received += 1
                return decoded(line)
            try:
                chunk = await self.stream.receive(1 << 20)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as err:
                raise ChannelClosed(type(err).__name__) from None
            if self.budget is not None:
                if not self.budget.take(len(chunk)):
                    raise ChannelClosed("over the buffer budget")
                self._held += len(chunk)
            self._lines.data += chunk

    def pending(self) -> bool:
        """Whether something has come that :meth:`receive` has not taken yet."""
        if self._lines.data:
            return True
        import select

        try:
            ready, _, _ = select.select([self.stream.extra(SocketAttribute.raw_socket)], [], [], 0)
        except (OSError, ValueError, anyio.TypedAttributeLookupError):
            return False
        return bool(ready)

    def _release(self) -> None:
        if self.budget is not None:
            keep = len(self._lines.data)  # what stays is still held
            self.budget.give(self._held - keep)
            self._held = keep

    async def aclose(self) -> None:
        self._lines.data.clear()
        self._release()
        await self.stream.aclose()


async def connect(path: str) -> Channel:
    """A channel to the host listening at ``path`` (OSError when there is none), after
    checking that it runs as this user."""
    stream = await anyio.connect_unix(path)
    if not same_user(stream):
        await stream.aclose()
        raise PermissionError(f"the process at {path} is not this user's")
    return Channel(stream)


LOST_HINT = "what arrived before is stored (acpcli show); the next command on the session starts a new host"


@dataclass
class Ready:
    """What the host said when this terminal joined."""

    session_id: str
    host_pid: int | None
    agent: str
    keep_alive: float | None
    #: The last event of the session the host had stored when this terminal joined (-1: all
    #: that is on disk; 0: none).
    stored: int
    busy: bool
    state: dict[str, Any]


async def join(channel: Channel, expected: str | None = None) -> Ready:
    """Say hello as a watcher (every turn reaches it) and read the host's ``ready`` (waiting
    no longer than :func:`~acpcli.session.hostwire.messages.host_timeout`); ``expected``: the session
    the host must hold (a host that holds another one is refused)."""
    from acpcli.errors import ExitCode
    from acpcli.text.safe import safe_line, shown_id

    patience = host_timeout()
    try:
        await channel.send({"t": "hello", "pid": os.getpid(), "role": "attach"})
        with anyio.fail_after(patience):
            ready = await channel.receive()
    except ChannelClosed:
        raise HostLost("the session host went away", hint=LOST_HINT) from None
    except TimeoutError:
        raise HostLost(f"the session host does not answer (waited {patience:g} s)", hint=LOST_HINT) from None
    if ready.get("t") == "error":  # refused (too many connections)
        raise HostReported(str(ready.get("message")), int(ready.get("exit") or 1), hint=ready.get("hint"))
    if ready.get("t") != "ready":
        raise HostLost("the session host did not answer", hint=LOST_HINT)
    if expected is not None and ready.get("session") != expected:
        held = ready.get("session")
        raise HostReported(
            f"the host reached for {shown_id(expected)} holds another session"
            f" ({safe_line(shown_id(held)) if isinstance(held, str) else 'unknown'})",
            int(ExitCode.DAMAGED), hint="`acpcli stop --all` ends every host",
        )
    state = ready.get("state")
    keep = ready.get("keep_alive")
    stored = ready.get("stored")
    return Ready(
        session_id=str(ready.get("session")),
        host_pid=ready.get("pid") if isinstance(ready.get("pid"), int) else None,
        agent=str(ready.get("agent") or "the agent"),
        keep_alive=float(keep) if isinstance(keep, (int, float)) else None,
        stored=stored if isinstance(stored, int) else -1 if stored == "all" else 0,
        busy=bool(ready.get("busy")),
        state=state if isinstance(state, dict) else {},
    )
