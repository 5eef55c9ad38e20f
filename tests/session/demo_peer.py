"""The peer of the session layer's unit tests: the real demo agent served in this process
over the memory transport pair (:func:`demo_link`), and what the tests share.

The demo agent is a blocking, threaded program (:mod:`acpcli.demo_agent.rpc`): its ``Peer``
reads and writes raw files. :class:`_AgentEndFile` is such a file over the agent end of
:func:`~acpcli.wire.transport.memory_pair`, each call carried into the event loop through a
blocking portal, so the agent's own code answers the client's own code with no subprocess.
"""

from __future__ import annotations

import io
import json
import queue
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

from acpcli.demo_agent.agent import DemoAgent
from acpcli.demo_agent.flags import parse_options
from acpcli.demo_agent.rpc import EOF, Peer, PeerGone
from acpcli.env import Environment
from acpcli.errors import ConnectionClosed
from acpcli.session.context import Invocation
from acpcli.session.link import AgentLink, open_link
from acpcli.wire.transport import MemoryTransport, memory_pair

#: A broken exchange fails the test instead of hanging the suite (not a measure of speed).
LIMIT = 60


class _AgentEndFile:
    """A raw binary file (``read``/``write``) over the agent end of a memory pair."""

    def __init__(self, end: MemoryTransport, portal: BlockingPortal) -> None:
        self._end = end
        self._portal = portal

    def read(self, size: int = -1) -> bytes:
        try:
            frame = self._portal.call(self._end.receive)
        except RuntimeError:  # the portal is gone: the test is over
            return b""
        return b"" if frame is None else frame + b"\n"

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        for line in chunk.split(b"\n"):
            if line:
                try:
                    self._portal.call(self._end.send, line)
                except (ConnectionClosed, RuntimeError) as err:
                    raise OSError(str(err)) from err
        return len(chunk)


class ServedDemo:
    """The demo agent of one "launch": its options and its serving thread."""

    def __init__(self, end: MemoryTransport, portal: BlockingPortal, flags: list[str]) -> None:
        file = _AgentEndFile(end, portal)
        self.options = parse_options(["--delay", "0", *flags])
        self.peer = Peer(file, file)  # type: ignore[arg-type]
        self.agent = DemoAgent(self.peer, self.options)
        self.thread = threading.Thread(target=self._serve, name="demo-agent", daemon=True)

    def _serve(self) -> None:
        inbox: queue.Queue[Any] = queue.Queue()
        reader = threading.Thread(
            target=self.peer.read_forever, args=(inbox, self.agent.urgent), name="demo-agent-reader", daemon=True
        )
        reader.start()
        try:
            while (msg := inbox.get()) is not EOF:
                self.agent.handle(msg)
        except PeerGone:
            pass
        finally:
            self.agent.shutdown()
            reader.join(timeout=LIMIT)


@asynccontextmanager
async def demo_link(*flags: str, **link_options: Any) -> AsyncIterator[AgentLink]:
    """An :class:`AgentLink` to the demo agent (``flags``: its command-line flags; ``--delay 0``
    always) served in this process over a memory pair; ``link_options`` go to ``open_link``.
    Each call is a new launch of the agent, sharing its sessions on disk with the others."""
    client_end, agent_end = memory_pair()
    try:
        async with BlockingPortal() as portal:
            served = ServedDemo(agent_end, portal, list(flags))
            served.thread.start()
            try:
                with anyio.fail_after(LIMIT):
                    async with open_link(["demo-agent-in-process"], transport=client_end, **link_options) as link:
                        yield link
            finally:
                await client_end.aclose()
                await agent_end.aclose()
                await anyio.to_thread.run_sync(served.thread.join, LIMIT)
    except Exception as err:  # the portal's task group wraps what the body raised: unwrap it
        inner = getattr(err, "exceptions", None)
        if inner and len(inner) == 1:
            raise inner[0] from None
        raise


def quiet_env() -> Environment:
    """An environment whose streams are string buffers (read them with ``.getvalue()``)."""
    return Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=io.StringIO())


def stderr_of(run: Invocation) -> str:
    stream = run.env.stderr
    assert isinstance(stream, io.StringIO)
    return stream.getvalue()


class Frames:
    """A wire tap (``open_link(tap=...)``): the methods acpcli sent, in order."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    def sent(self, frame: bytes) -> None:
        method = json.loads(frame).get("method")
        if method is not None:
            self.methods.append(method)

    def received(self, frame: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def text(value: str) -> dict[str, Any]:
    """A prompt's text block."""
    return {"type": "text", "text": value}


#: A demo prompt that runs a whole turn without asking for permission.
QUIET = "hello no-permission"
