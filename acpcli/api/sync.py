"""The Python API without async: ``acpcli.run`` (one prompt, start to finish) and
``acpcli.sync.connect`` (the whole API, blocking: :class:`SyncAgent`, :class:`SyncSession`)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from acpcli.api.types import (
    Checkpoint,
    InputCallback,
    PermissionCallback,
    Permissions,
    Rewind,
    RunResult,
    TurnEnded,
)

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal

    from acpcli.api.client import Agent, Session, SessionInfo
    from acpcli.api.types import Event, Setting, Transcript, TurnResult


def run(
    agent: str | None,
    prompt: str,
    *,
    argv: Sequence[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    permissions: Permissions | PermissionCallback | None = None,
    on_input: InputCallback | None = None,
    session: str | None = None,
    title: str | None = None,
    protocol: str | None = None,
    timeout: float | None = None,
    home: str | os.PathLike[str] | None = None,
) -> RunResult:
    """Connect (:func:`~acpcli.api.client.connect`, same arguments), send ``prompt`` in a new
    session (or continue ``session``: resumed when the agent can, else loaded), and return the
    turn's stop reason, the agent's text and the session's transcript. Blocks; runs its own
    event loop (call :func:`~acpcli.api.client.connect` from async code instead). Errors are
    :mod:`acpcli.errors`' exceptions; a stop reason other than ``end_turn`` is not one (read
    :attr:`RunResult.stop_reason`)."""
    import anyio

    from acpcli.api.client import connect

    async def main() -> RunResult:
        async with connect(
            agent, argv=argv, cwd=cwd, permissions=permissions, on_input=on_input, protocol=protocol,
            timeout=timeout, home=home,
        ) as connected:
            if session is None:
                opened = await connected.new_session(title=title)
            elif connected.can_resume:
                opened = await connected.resume(session)
            else:
                opened = await connected.load(session)
            ended: TurnEnded | None = None
            async for event in opened.prompt(prompt):
                if isinstance(event, TurnEnded):
                    ended = event
            assert ended is not None  # a turn ends with TurnEnded or raises
            transcript = opened.transcript
            return RunResult(
                session_id=opened.id,
                stop_reason=ended.result.stop_reason,
                text=ended.result.text,
                markdown=transcript.markdown(),
                transcript_text=transcript.text(),
            )

    return anyio.run(main)


class SyncSession:
    """A :class:`~acpcli.api.client.Session`, blocking (from :meth:`SyncAgent.new_session` and
    its siblings). Its methods are the async session's, waited for."""

    def __init__(self, portal: BlockingPortal, session: Session) -> None:
        self._portal = portal
        self._session = session

    @property
    def id(self) -> str:
        return self._session.id

    @property
    def cwd(self) -> str | None:
        return self._session.cwd

    @property
    def transcript(self) -> Transcript:
        return self._session.transcript

    @property
    def settings(self) -> tuple[Setting, ...]:
        return self._session.settings

    @property
    def running(self) -> bool:
        return self._session.running

    @property
    def hosted(self) -> bool:
        return self._session.hosted

    def prompt(
        self, text: str, *, attach: Sequence[str | os.PathLike[str]] = (), mentions: bool = False
    ) -> Iterator[Event]:
        """The turn's events as they come (the last is :class:`~acpcli.api.types.TurnEnded`).
        Leaving the loop early cancels the turn and waits for its end, as with the async API."""
        events = self._session.prompt(text, attach=attach, mentions=mentions)
        finished = False
        try:
            while True:
                try:
                    event = self._portal.call(events.__anext__)
                except StopAsyncIteration:
                    finished = True
                    return
                yield event
        finally:
            close = getattr(events, "aclose", None)  # (an async generator: it cancels the turn)
            if not finished and close is not None:
                self._portal.call(close)

    def ask(self, text: str, *, attach: Sequence[str | os.PathLike[str]] = (), mentions: bool = False) -> TurnResult:
        """:meth:`prompt`, its events left unread: the turn's result."""
        return self._portal.call(lambda: self._session.ask(text, attach=attach, mentions=mentions))

    def cancel(self) -> None:
        self._portal.call(self._session.cancel)

    def set(self, key: str, value: str) -> Setting:
        return self._portal.call(self._session.set, key, value)

    def close(self) -> None:
        self._portal.call(self._session.close)

    def checkpoints(self) -> list[Checkpoint]:
        return self._portal.call(self._session.checkpoints)

    def diff(self, turn: int | None = None, *, stat: bool = False) -> str:
        return self._portal.call(lambda: self._session.diff(turn, stat=stat))

    def rewind(self, turn: int, *, files: bool = True, conversation: bool = True, force: bool = False) -> Rewind:
        """:meth:`Session.rewind <acpcli.api.client.Session.rewind>`; the new session (if
        any) is a :class:`SyncSession` too."""
        done = self._portal.call(lambda: self._session.rewind(turn, files=files, conversation=conversation, force=force))
        return replace(done, session=SyncSession(self._portal, done.session)) if done.session is not None else done


class SyncAgent:
    """A connected agent, blocking (from :func:`connect`)."""

    def __init__(self, portal: BlockingPortal, agent: Agent) -> None:
        self._portal = portal
        self._agent = agent

    @property
    def name(self) -> str:
        return self._agent.name

    @property
    def protocol_version(self) -> int:
        return self._agent.protocol_version

    @property
    def can_load(self) -> bool:
        return self._agent.can_load

    @property
    def can_resume(self) -> bool:
        return self._agent.can_resume

    @property
    def notices(self) -> list[str]:
        return self._agent.notices

    def new_session(self, *, title: str | None = None, keep_alive: float | None = None) -> SyncSession:
        return SyncSession(
            self._portal, self._portal.call(lambda: self._agent.new_session(title=title, keep_alive=keep_alive))
        )

    def load(self, session_id: str, *, join: bool = True) -> SyncSession:
        return SyncSession(self._portal, self._portal.call(lambda: self._agent.load(session_id, join=join)))

    def resume(self, session_id: str, *, join: bool = True) -> SyncSession:
        return SyncSession(self._portal, self._portal.call(lambda: self._agent.resume(session_id, join=join)))

    def sessions(self) -> list[SessionInfo]:
        return self._portal.call(self._agent.sessions)


@contextmanager
def connect(agent: str | None = None, **options: Any) -> Iterator[SyncAgent]:
    """:func:`acpcli.connect`, blocking: ``with acpcli.sync.connect("demo") as agent:``. The
    same arguments; callbacks (``permissions``, ``on_input``) are still async functions, run on
    the connection's own event loop (a background thread)."""
    from anyio.from_thread import start_blocking_portal

    from acpcli.api.client import _unwrapped
    from acpcli.api.client import connect as connect_async

    with start_blocking_portal() as portal:
        try:
            with portal.wrap_async_context_manager(connect_async(agent, **options)) as connected:
                yield SyncAgent(portal, connected)
        except BaseException as err:  # (the error itself, not a task group's wrapping of it)
            leaf = _unwrapped(err)
            if leaf is err:
                raise
            raise leaf from None
