"""One conversation: a live session together with what it is held with, as one object.

A :class:`Conversation` is the link to the session's agent, the
:class:`~acpcli.session.feed.SessionFeed`, the index it is recorded in, the writer of its
events, the agent's name and the exporter of its transcript, with what a conversation does:
a prompt turn and its bookkeeping, a setting changed, a turn cancelled, the session closed, a
login or a logout. The REPL (:func:`acpcli.repl.run_repl` and its slash commands), the Python
API's :class:`~acpcli.api.client.Session` and the command bodies hold one of these instead of
the loose parts, and reach the :class:`~acpcli.session.link.AgentLink` methods that take the
live session first through it.

A fork is :func:`~acpcli.session.attach.fork_recorded` of a conversation: it sets a session up
as attach does, and this module sits below attach (which needs the command's
:class:`~acpcli.session.context.Invocation`, whose person is handed a conversation).

Two backends, one protocol: this class is the local one (the session's own
:class:`~acpcli.session.link.AgentLink`: mentions read here, turns run here by
:func:`~acpcli.session.turn.run_turn`, the bookkeeping done here);
:class:`~acpcli.session.hosted.HostedConversation` is the hosted one (the socket to the session's
host, which reads the mentions, runs the turns and keeps the record: it holds no writer). The
REPL and the commands drive either through the same methods and never ask which they hold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from acpcli.history.eventlog import EventWriter
    from acpcli.history.index import Index
    from acpcli.protocol.settings import Choice
    from acpcli.session.feed import SessionFeed
    from acpcli.session.link import AgentLink
    from acpcli.wire.negotiate import AgentFeatures


class ConversationLink(Protocol):
    """What a conversation asks of its link, whoever holds the agent: the session's own
    :class:`~acpcli.session.link.AgentLink`, or the host's stand-in for one
    (:class:`~acpcli.session.hosted.HostedLink`)."""

    @property
    def features(self) -> AgentFeatures:
        """The agent's features, as negotiated."""
        ...

    def find_setting(self, live: SessionFeed, key: str) -> Choice:
        """The setting ``key`` names (:meth:`AgentLink.find_setting <acpcli.session.link.AgentLink.find_setting>`)."""
        ...

    async def set_by_name(self, live: SessionFeed, key: str, value_text: str) -> Choice:
        """Set the setting ``key`` names; the setting as it now is."""
        ...

    async def close(self, session_id: str) -> Any:
        """``session/close``; what the agent answered."""
        ...

    async def login(self, method_id: str) -> Any:
        """Log in with one of the agent's methods."""
        ...

    async def logout(self) -> Any:
        """Log out of the agent."""
        ...


@dataclass
class Conversation:
    """See the module docstring."""

    link: ConversationLink
    live: SessionFeed
    index: Index
    #: The writer of the session's events (None: a hosted conversation, whose host writes).
    writer: EventWriter | None
    #: The name the session is recorded under (the configured name, else the agent's own).
    agent: str
    #: ``export(path, format)`` writes this session's stored transcript; ``None`` when the
    #: caller offers none.
    export: Callable[[str, str], None] | None = None

    @property
    def session_id(self) -> str:
        """The session's id as recorded."""
        return self.live.session_id

    @property
    def features(self) -> AgentFeatures:
        """The agent's features, as negotiated."""
        return self.link.features

    @property
    def agent_link(self) -> AgentLink:
        """The link as the session's own :class:`~acpcli.session.link.AgentLink`: what only
        a conversation that holds its agent itself does (a hosted one asks its host)."""
        return cast("AgentLink", self.link)

    # -- a turn and its bookkeeping ----------------------------------------------------------

    def blocks(self, text: str) -> list[dict[str, Any]]:
        """The content blocks of a prompt of ``text``, its ``@`` mentions resolved where the
        agent runs: here (:func:`~acpcli.services.mentions.build_prompt`, not strict: pasted
        ``@decorators`` name no file and stay text); :class:`~acpcli.errors.UsageError` for a
        mention outside the session's roots."""
        from acpcli.services.mentions import build_prompt

        cwd = self.live.cwd or "."
        return build_prompt(text, cwd, [cwd, *self.live.additional_directories], self.features, strict=False)

    async def turn(
        self,
        text: str,
        blocks: Sequence[dict[str, Any]],
        *,
        notice: Callable[[str], None],
        tick: Callable[[], None] | None = None,
        sent: Any = None,
        limit: float | None = None,
        interrupts: bool = True,
    ) -> str:
        """One prompt turn; its stop reason: ``blocks`` (:meth:`blocks` of ``text``) sent as
        :func:`~acpcli.session.turn.run_turn` sends them (``sent``: the answer of the prompt
        :meth:`send_now` handed to the last turn, which this one waits for; ``limit``,
        ``interrupts`` as it takes them)."""
        from acpcli.session.turn import run_turn

        return await run_turn(
            self.agent_link, self.live, blocks, notice=notice, tick=tick, sent=sent, limit=limit, interrupts=interrupts
        )

    def flush(self) -> None:
        """What the session's events wait to have written, written."""
        if self.writer is not None:
            self.writer.flush()

    def after_turn(self) -> None:
        """The bookkeeping after a turn (:func:`~acpcli.session.turn.after_turn`: title,
        search documents)."""
        from acpcli.session.turn import after_turn

        after_turn(self.index, self.live)

    def title_from_prompt(self) -> None:
        """Title the session from its first prompt when nothing else titles it
        (:func:`~acpcli.session.turn.title_from_prompt`: a failed first turn too)."""
        from acpcli.session.turn import title_from_prompt

        title_from_prompt(self.index, self.live)

    async def cancel(self) -> None:
        """``session/cancel`` the running turn (:meth:`~acpcli.session.link.AgentLink.cancel`)."""
        await self.agent_link.cancel(self.live)

    async def send_during_turn(self, blocks: Sequence[dict[str, Any]]) -> Any:
        """A prompt sent into the running turn, for an agent that queues it
        (:meth:`~acpcli.session.link.AgentLink.send_during_turn`); the raw answer."""
        return await self.agent_link.send_during_turn(self.live, blocks)

    async def steer(self, blocks: Sequence[dict[str, Any]]) -> str:
        """A prompt put into the running turn, for an agent that steers
        (:meth:`~acpcli.session.link.AgentLink.steer`); the agent's outcome."""
        return await self.agent_link.steer(self.live, blocks)

    # -- "send now": a prompt handed to the running turn ------------------------------------

    @property
    def send_now_way(self) -> str | None:
        """How a prompt is handed to a running turn, as the agent says it takes one
        (:func:`~acpcli.wire.negotiate.send_now_way`); None: it does not."""
        from acpcli.wire.negotiate import send_now_way

        return send_now_way(getattr(self.features, "raw", None))

    def may_send_now(self) -> bool:
        """Whether a turn runs to hand a prompt to."""
        return self.live.turn_active

    async def send_now(self, text: str, blocks: Sequence[dict[str, Any]], back: Callable[[str], None]) -> Any:
        """Hand the prompt (``text``, built as ``blocks``) to the running turn, as
        :attr:`send_now_way` says: queued by the agent (the answer, which the next
        :meth:`turn` waits for as its ``sent``), or steered into the turn (``back(text)``
        when the agent did not take it: it goes first in the queue)."""
        from acpcli.wire.negotiate import QUEUEING

        if self.send_now_way == QUEUEING:
            return await self.send_during_turn(blocks)
        try:
            outcome = await self.steer(blocks)
        except Exception:  # noqa: BLE001 - refused or lost: the prompt is not lost, it goes first
            outcome = "failed"
        if outcome != "injected":
            back(text)
        return outcome

    # -- another terminal's turns (none without a host) -------------------------------------

    @property
    def other_turn(self) -> Any:
        """A turn another terminal sent, under way (None: none; only a hosted session has them)."""
        return None

    async def watch(self, *, notice: Callable[[str], None], tick: Callable[[], None] | None = None) -> str | None:
        """Draw :attr:`other_turn` until it ends; its stop reason."""
        return None

    def goodbye(self, come_back: str) -> tuple[str, list[str]]:
        """The line Ctrl-D leaves with (``come_back``: the command that reopens the session)
        and the commands in it, to keep whole when it is wrapped."""
        return f"bye — come back with: {come_back}", [come_back]

    async def settle(self, *, first: float = 1.0) -> None:
        """Wait while a replay is still arriving (:meth:`~acpcli.session.link.AgentLink.settle`)."""
        await self.agent_link.settle(self.live, first=first)

    # -- settings ------------------------------------------------------------------------------

    def settings(self) -> list[Choice]:
        """The settings the session offers now."""
        return self.live.settings()

    def find_setting(self, key: str) -> Choice:
        """The setting ``key`` names; :class:`~acpcli.errors.UsageError` naming those offered
        otherwise."""
        return self.link.find_setting(self.live, key)

    async def set(self, key: str, value_text: str) -> Choice:
        """Set the setting ``key`` names to the value ``value_text`` names, the change
        written to the event log; the setting as it now is."""
        choice = await self.link.set_by_name(self.live, key, value_text)
        self.flush()
        return choice

    # -- the session's life -----------------------------------------------------------------

    async def close(self) -> Any:
        """``session/close`` (the agent forgets it), then marked closed in the index; what the
        agent answered."""
        answer = await self.link.close(self.live.session_id)
        self.flush()
        self.index.mark_closed(self.live.session_id)
        return answer

    async def login(self, method_id: str) -> Any:
        """Log in with one of the agent's methods."""
        return await self.link.login(method_id)

    async def logout(self) -> Any:
        """Log out of the agent."""
        return await self.link.logout()
