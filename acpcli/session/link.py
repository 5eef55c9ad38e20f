"""One connection to one agent: the link that sends, the dispatcher that routes back.

:class:`AgentLink` sends; the :class:`Dispatcher` routes what the agent sends to the live
session it names.

Built in this order (:func:`open_link`), so nothing is patched in afterwards: the dispatcher
(which needs no connection), the client services (which read the roots of the dispatcher's
sessions), the connection (handing each notification's raw frame text to the dispatcher as an
argument), then the link over that connection.

Invariants:

* A method or field the agent did not advertise is never sent: every gated request is built
  by :mod:`acpcli.wire.capabilities`, which raises :class:`~acpcli.errors.CapabilityMissing` first.
* Every answer is checked where it is read (:func:`acpcli.wire.negotiate.read_answer`), and a
  permission request before it is asked (:func:`acpcli.wire.negotiate.read_request`).
* A session's view exists *before* its ``session/load`` is sent and outlives the response,
  so replayed updates that arrive after the answer (gemini) are still rendered and stored.
* A v1 turn ends with the ``session/prompt`` response; a v2 turn with ``state_update`` idle.
  v1 agents do not echo the user's prompt, so acpcli records it itself
  (:meth:`~acpcli.session.feed.SessionFeed.echo_prompt`) so that transcripts read the same
  whichever version produced them.
* Every update, the agent's or acpcli's own, reaches the store, the event log and the view
  through :meth:`~acpcli.session.feed.SessionFeed.feed`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel

from acpcli.errors import RpcError
from acpcli.history.records import SETTING
from acpcli.protocol import wire
from acpcli.services.permissions import is_cancelled
from acpcli.session import carried
from acpcli.session.feed import Recorder, SessionFeed, Sink, seed_settings, settings_changed
from acpcli.text.safe import safe_line, shown_id
from acpcli.wire import capabilities
from acpcli.wire.negotiate import read_answer, read_request

if TYPE_CHECKING:
    from acpcli.model import Store
    from acpcli.protocol.settings import Choice
    from acpcli.services.elicitation import Request
    from acpcli.services.permissions import Refusals
    from acpcli.services.requests import ClientServices, TurnPolicy
    from acpcli.wire.connection import Connection
    from acpcli.wire.negotiate import AgentFeatures, ClientOffer, ProtocolChoice
    from acpcli.wire.transport import AgentProcess, Transport
    from acpcli.wire.wiretap import Tap

log = logging.getLogger("acpcli.session")

#: Bounds on updates kept for sessions not attached yet (see ``Dispatcher.on_notification``).
_EARLY_SESSIONS = 8
_EARLY_UPDATES = 256

#: Event-loop turns ``settle`` gives the reader after an answer that followed its replay, so
#: frames already received are dispatched before it returns (no timed pause).
_DRAIN_TURNS = 3

#: How long a dismissed permission's answer waits for the turn's session/cancel to go out.
_CANCEL_FIRST = 5.0

T = TypeVar("T")

PermissionDecider = Callable[[SessionFeed, dict[str, Any]], Awaitable[dict[str, Any]]]
CANCELLED_OUTCOME = {"outcome": {"outcome": "cancelled"}}
#: Answers an elicitation (:mod:`acpcli.services.elicitation`): the session it is scoped to (a
#: SessionFeed, a host client's mirror of one, or None for a request-scoped one) and the
#: request read; the answer, or None when dismissed (``cancel``).
Elicitor = Callable[[Any, "Request"], Awaitable["dict[str, Any] | None"]]
#: The most accepted links whose ``elicitation/complete`` is still awaited.
_OPEN_PAGES = 64


class Dispatcher:
    """The live sessions of one agent connection, and the routing of what the agent sends to
    them: ``session/update`` notifications (in arrival order, with the frame's text) and
    ``session/request_permission`` and ``elicitation/create`` requests. Needs no connection:
    it is built first. ``say`` gets the lines the user must see (a declined elicitation)."""

    def __init__(
        self,
        *,
        decide_permission: PermissionDecider | None = None,
        elicit: Elicitor | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.sessions: dict[str, SessionFeed] = {}  # by the agent's id for the session
        self._decide_permission = decide_permission
        self._elicit = elicit
        self._say = say
        #: The elicitation modes advertised and usable on this connection (set after
        #: ``initialize``: none on a v2 connection, whose schema has no elicitation).
        self.elicitation_modes: tuple[str, ...] = ("form", "url")
        #: The agent's name (set after ``initialize``): who a request for input says is asking.
        self.agent_name = ""
        self._pages: dict[str, str] = {}  # accepted links' elicitationId -> host, oldest first
        self._early: dict[str, list[tuple[Any, str | None]]] = {}  # updates before attach

    def attach(self, agent_id: str, live: SessionFeed) -> None:
        """Route ``agent_id``'s updates to ``live`` from now on, starting with those that came
        before it was attached."""
        self.sessions[agent_id] = live
        for update, frame_text in self._early.pop(agent_id, ()):
            live.feed(update, frame_text)

    def detach(self, agent_id: str) -> None:
        self.sessions.pop(agent_id, None)

    def roots(self, session_id: str) -> tuple[str, Sequence[str]] | None:
        """The root set of a session held here (a :data:`~acpcli.services.files.SessionRoots`):
        read on every request, so it is always the session's current one."""
        live = self.sessions.get(session_id)
        if live is None or not live.cwd:
            return None
        return live.cwd, list(live.additional_directories)

    def on_notification(self, method: str, params: Any, frame_text: str | None = None) -> None:
        """The connection's notification callback (arrival order, inline). ``frame_text`` is
        the notification as received, which the event log stores without re-encoding."""
        if method == "elicitation/complete":
            self._page_done(params)
            return
        if method != "session/update" or not isinstance(params, dict):
            log.debug("ignoring notification %s", method)
            return
        session_id = params.get("sessionId")
        live = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if live is None:
            # An agent may send updates for a new session in the same write as the
            # session/new answer, before `new()` has attached it: keep a few, replay them
            # on attach.
            if isinstance(session_id, str) and (session_id in self._early or len(self._early) < _EARLY_SESSIONS):
                early = self._early.setdefault(session_id, [])
                if len(early) < _EARLY_UPDATES:
                    early.append((params.get("update"), frame_text))
                    return
            log.debug("update for a session this link does not hold: %r", session_id)
            return
        live.feed(params.get("update"), frame_text)

    async def on_request_permission(self, params: Any) -> dict[str, Any]:
        """``session/request_permission``: record the tool call it names, ask the decider.

        A question withdrawn (the turn was cancelled) or dismissed is answered ``cancelled``;
        a dismissal also asks the turn's owner to cancel the turn (``cancelled`` only means
        something for a cancelled turn, so the agent is not left guessing)."""
        if not isinstance(params, dict):
            raise RpcError(RpcError.INVALID_PARAMS, "params must be an object")
        session_id = params.get("sessionId")
        live = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if live is None:
            raise RpcError(RpcError.INVALID_PARAMS, f"unknown session {shown_id(str(session_id))!r}")
        read_request(live.protocol_version, "session/request_permission", params)
        tool_call = params.get("toolCall")
        if isinstance(tool_call, dict):
            live.asked_about(tool_call)  # stored and shown like any update
        decide = self._decide_permission
        if live.cancel_requested or decide is None:
            return CANCELLED_OUTCOME
        result = await _unless_withdrawn(live, lambda: decide(live, params))
        if result is None or is_cancelled(result):
            if not live.cancel_requested:
                live.want_cancel()  # dismissed (Ctrl-C) or nothing could be chosen
                if live.prompting:
                    # The turn's owner sends session/cancel: let it go out before this
                    # answer, so the agent learns of the cancel first (as it would of ours).
                    with anyio.move_on_after(_CANCEL_FIRST):
                        await live.cancel_sent.wait()
            return CANCELLED_OUTCOME
        return result

    def _tell(self, live: SessionFeed | None, line: str) -> None:
        from acpcli.services.permissions import release_screen

        if self._say is None:  # no run to report to (acpcli auth): a warning on stderr
            from acpcli import notices

            notices.warn("elicitation", line.removeprefix("acpcli: ").removeprefix("warning: "))
            return
        release_screen(live)
        self._say(line)

    async def on_elicitation(self, params: Any) -> Any:
        """``elicitation/create`` (:mod:`acpcli.services.elicitation`): read and bounded, asked of the
        elicitor, the answer checked against the form; ``-32602`` for a request that cannot be
        read (or of a mode not advertised), ``decline`` with one line for one acpcli will not
        present. A sensitive field's value reaches the wire log masked (:class:`Masked`)."""
        from acpcli.services import elicitation as el
        from acpcli.wire.connection import Masked

        if not self.elicitation_modes:
            raise RpcError(RpcError.METHOD_NOT_FOUND, "method not found: elicitation/create")
        try:
            request = el.read_request(params, modes=self.elicitation_modes)
        except el.Invalid as bad:
            self._tell(None, f"acpcli: warning: the agent's request for input is not valid ACP (answered as an error): {bad}")
            raise RpcError(RpcError.INVALID_PARAMS, f"elicitation/create: invalid params: {bad}") from None
        except el.Unusable as why:
            self._tell(None, f"acpcli: declined the agent's request for input: {why}")
            return el.answer(el.DECLINE)
        request.agent = self.agent_name
        live: SessionFeed | None = None
        if request.session_id is not None:
            live = self.sessions.get(request.session_id)
            if live is None:
                raise RpcError(RpcError.INVALID_PARAMS, f"unknown session {shown_id(request.session_id)!r}")
        result = el.settled(request, await self._ask_elicitor(live, request))
        if isinstance(request, el.UrlPage) and result["action"] == el.ACCEPT:
            self._pages[request.elicitation_id] = request.host
            while len(self._pages) > _OPEN_PAGES:
                del self._pages[next(iter(self._pages))]
        sink = getattr(live, "sink", None)
        show = getattr(sink, "elicitation", None)
        if show is not None:
            show(request, result)
        logged = el.masked_answer(request, result)
        return Masked(result, logged) if logged is not result else result

    async def _ask_elicitor(self, live: SessionFeed | None, request: Request) -> dict[str, Any]:
        """The elicitor's answer; ``cancel`` when the turn is cancelled meanwhile (the
        question is withdrawn, as a permission question is), ``decline`` when there is none."""
        from acpcli.services import elicitation as el

        elicit = self._elicit
        if elicit is None:
            self._tell(live, "acpcli: declined the agent's request for input: nobody can answer it here")
            return el.answer(el.DECLINE)
        if live is None:
            answered = await elicit(None, request)
            return answered if isinstance(answered, dict) else el.answer(el.CANCEL)
        if live.cancel_requested:
            return el.answer(el.CANCEL)
        result = await _unless_withdrawn(live, lambda: elicit(live, request))
        return result if isinstance(result, dict) else el.answer(el.CANCEL)

    def _page_done(self, params: Any) -> None:
        """``elicitation/complete``: a link the user accepted is done (unknown or repeated
        ids are ignored, as the spec asks)."""
        elicitation_id = params.get("elicitationId") if isinstance(params, dict) else None
        host = self._pages.pop(elicitation_id, None) if isinstance(elicitation_id, str) else None
        if host is not None:
            self._tell(None, f"acpcli: the agent says the interaction at {safe_line(host)} is complete")



async def _unless_withdrawn(live: SessionFeed, ask: Callable[[], Awaitable[T]]) -> T | None:
    """``ask()`` (a question of the person's: a permission, a form), unless the turn withdraws
    its open questions first (``live.pending_permissions``: a cancel, the turn's end); None
    then, as for a question nobody answered."""
    withdrawn = anyio.Event()
    live.pending_permissions.add(withdrawn)
    answered: list[T] = []
    try:
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                answered.append(await ask())
                tg.cancel_scope.cancel()

            async def watch() -> None:
                await withdrawn.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(run)
            tg.start_soon(watch)
    finally:
        live.pending_permissions.discard(withdrawn)
    return answered[0] if answered else None


async def _drained(live: SessionFeed, seen: int) -> bool:
    """Give the reader a few event-loop turns (no timed pause) to dispatch the frames already
    received; whether updates beyond ``seen`` came meanwhile."""
    for _ in range(_DRAIN_TURNS):
        await anyio.lowlevel.checkpoint()
    return live.updates_seen != seen


class AgentLink:
    """A connection to one initialized agent, and the sessions driven over it."""

    def __init__(
        self,
        conn: Connection,
        features: AgentFeatures,
        dispatcher: Dispatcher,
        *,
        store_factory: Callable[[], Store],
        process: AgentProcess | None = None,
        services: ClientServices | None = None,
    ) -> None:
        self.conn = conn
        self.features = features
        self.dispatcher = dispatcher
        self._store_factory = store_factory
        #: The agent's process, when the link spawned one (:meth:`kill`).
        self.process = process
        #: The client services answering the agent's fs/terminal requests, if any.
        self.services = services

    def _read(self, method: str, answer: Any) -> dict[str, Any]:
        """The agent's answer to ``method``, checked where it is read (the run-time contract in
        :mod:`acpcli.protocol`): :class:`~acpcli.errors.ProtocolError` naming what is wrong."""
        return read_answer(self.features.protocol_version, method, answer)

    @property
    def sessions(self) -> dict[str, SessionFeed]:
        """The live sessions over this link, by the agent's id for each."""
        return self.dispatcher.sessions

    def kill(self) -> None:
        """Kill the agent's process group at once (no grace periods)."""
        if self.process is not None:
            self.process.kill()

    # -- lifecycle ------------------------------------------------------------------------

    def _attach(
        self, session_id: str, sink: Sink | None, recorder: Recorder | None, local_id: str | None = None
    ) -> SessionFeed:
        live = SessionFeed(
            session_id=session_id, store=self._store_factory(), sink=sink, recorder=recorder,
            protocol_version=self.features.protocol_version,
        )
        if local_id is not None and local_id != session_id:
            live.session_id, live.wire_id = local_id, session_id
        self.dispatcher.attach(session_id, live)
        return live

    async def new(
        self,
        cwd: str,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[dict[str, Any]] = (),
        *,
        sink: Sink | None = None,
        recorder: Recorder | None = None,
    ) -> SessionFeed:
        """``session/new``."""
        _, params = capabilities.opening_params(self.features, "new", cwd, additional_directories, mcp_servers)
        return await self._created("session/new", params, cwd, additional_directories, sink, recorder)

    async def _created(
        self, method: str, params: dict[str, Any], cwd: str, additional_directories: Sequence[str],
        sink: Sink | None, recorder: Recorder | None,
    ) -> SessionFeed:
        """Send ``method`` (``session/new`` or ``session/fork``), whose answer names a new
        session as ``sessionId``, and attach that session."""
        result = self._read(method, await self.conn.request(method, params))
        session_id = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(session_id, str) or not session_id:
            raise RpcError(RpcError.INTERNAL_ERROR, f"{method} answered without a sessionId", method=method)
        live = self._attach(session_id, sink, recorder)
        live.cwd, live.additional_directories = cwd, list(additional_directories)
        live.response = result
        seed_settings(live, result)
        return live

    async def fork(
        self,
        session_id: str,
        cwd: str,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[dict[str, Any]] = (),
        *,
        sink: Sink | None = None,
        recorder: Recorder | None = None,
    ) -> SessionFeed:
        """``session/fork`` of the agent's session ``session_id``: a new session (its id in the
        answer, like ``session/new``'s) that starts with that conversation so far.

        An agent forks only a session it holds (claude-agent-acp answers -32002 for one of an
        earlier process), so one not held over this link is resumed first (else loaded, its
        replay neither shown nor stored: the parent's record is acpcli's already)."""
        _, params = capabilities.opening_params(
            self.features, "fork", cwd, additional_directories, mcp_servers, session_id=session_id
        )
        if session_id not in self.sessions:
            if self.features.resume:
                await self.resume(session_id, cwd, additional_directories, mcp_servers)
            elif self.features.load:
                await self.load(session_id, cwd, additional_directories, mcp_servers)
        return await self._created("session/fork", params, cwd, additional_directories, sink, recorder)

    async def load(
        self,
        session_id: str,
        cwd: str,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[dict[str, Any]] = (),
        *,
        sink: Sink | None = None,
        recorder: Recorder | None = None,
        local_id: str | None = None,
    ) -> SessionFeed:
        """Load with replay; the replay is over when the response arrives (``null`` or ``{}``).
        ``local_id``: the id acpcli records the session under, when the agent's differs."""
        method, params = capabilities.opening_params(
            self.features, "load", cwd, additional_directories, mcp_servers, session_id=session_id
        )
        return await self._reattach(method, params, sink, recorder, local_id)

    async def resume(
        self,
        session_id: str,
        cwd: str,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[dict[str, Any]] = (),
        *,
        sink: Sink | None = None,
        recorder: Recorder | None = None,
        local_id: str | None = None,
    ) -> SessionFeed:
        """``session/resume`` (no replay expected; a replay is tolerated and rendered)."""
        method, params = capabilities.opening_params(
            self.features, "resume", cwd, additional_directories, mcp_servers, session_id=session_id
        )
        return await self._reattach(method, params, sink, recorder, local_id)

    async def _reattach(
        self,
        method: str,
        params: dict[str, Any],
        sink: Sink | None,
        recorder: Recorder | None,
        local_id: str | None = None,
    ) -> SessionFeed:
        """Send a load/resume whose view exists first (the replay arrives before the answer,
        or after it); forget the view again if the agent refuses."""
        session_id = params["sessionId"]
        live = self._attach(session_id, sink, recorder, local_id)
        live.cwd, live.additional_directories = params["cwd"], list(params.get("additionalDirectories", []))
        try:
            result = self._read(method, await self.conn.request(method, params))
        except BaseException:
            self.dispatcher.detach(session_id)
            raise
        live.response = result if isinstance(result, dict) else {}
        seed_settings(live, result)
        return live

    async def settle(
        self, live: SessionFeed, *, quiet: float = 0.1, first: float = 1.0, limit: float = 10.0
    ) -> None:
        """Wait while the session's replay is still arriving, then return.

        ``session/load`` replays the whole conversation *before* answering (the spec), so when
        the transcript already holds entries at the answer the replay is over: settle lets the
        frames already received be dispatched (a few event-loop turns, no timed pause) and
        returns -- unless updates are still arriving then, which makes it wait as below.

        Some agents answer first and replay afterwards (gemini-cli 0.61.0, observed), so an
        answer with no transcript yet does not mean there is nothing to replay: the first
        update may take up to ``first`` seconds to come. An agent known to do so
        (:func:`acpcli.wire.capabilities.replay_may_trail`: gemini sends part of its replay before
        the answer and the rest after) is waited for even when the transcript has entries. Once updates arrive after the answer,
        settle returns when none has arrived for ``quiet`` seconds; it never waits longer
        than ``limit`` seconds in all, nor after the connection closed.
        """
        seen = live.updates_seen
        if live.store.entries and not capabilities.replay_may_trail(self.features):
            if not await _drained(live, seen):
                return  # the replay came before the answer: no wait
            seen = live.updates_seen  # updates still arriving after the answer: a trailing replay
            gap = quiet
        elif live.store.entries:  # an agent whose replay trails its answer: wait while it comes
            gap = quiet
        else:
            # nothing of the transcript yet (a session-level update or nothing at all): a
            # replay may still follow the answer
            gap = max(first, quiet)
        step = min(0.02, quiet)
        last = anyio.current_time()
        with anyio.move_on_after(limit):
            while not self.conn.closed:
                await anyio.sleep(step)
                now = anyio.current_time()
                if live.updates_seen != seen:
                    seen, last, gap = live.updates_seen, now, quiet
                elif now - last >= gap:
                    # The quiet may be acpcli's own (a busy machine kept this process from
                    # running while the agent wrote on): let the reader take what is waiting
                    # before calling the replay over.
                    if not await _drained(live, seen):
                        return
                    seen, last, gap = live.updates_seen, anyio.current_time(), quiet

    async def close(self, session_id: str) -> Any:
        """``session/close``; returns exactly what the agent answered. ``session_id`` may be
        the recorded id of a session attached here under another agent id."""
        for agent_id, live in self.sessions.items():
            if live.session_id == session_id:
                session_id = agent_id
                break
        result = await self.conn.request("session/close", capabilities.close_params(self.features, session_id))
        self._read("session/close", result)  # checked; returned exactly as answered
        self.dispatcher.detach(session_id)
        terminals = self.services.terminals if self.services is not None else None
        if terminals is not None:
            await terminals.release_session(session_id)  # what the closed session left running
        return result

    async def delete(self, session_id: str) -> dict[str, Any]:
        """``session/delete`` of the agent's id ``session_id`` (the agent then no longer
        lists it); returns what the agent answered (``{}`` by the spec)."""
        result = await self.conn.request("session/delete", capabilities.delete_params(self.features, session_id))
        return self._read("session/delete", result)

    async def list_remote(self, cwd: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """``session/list``, following ``nextCursor`` until the agent says there is no more."""
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            params = capabilities.list_params(self.features, cwd, cursor)
            result = self._read("session/list", await self.conn.request("session/list", params))
            sessions = result.get("sessions") if isinstance(result, dict) else None
            for info in sessions if isinstance(sessions, list) else []:
                if isinstance(info, dict):
                    yield info
            cursor = result.get("nextCursor") if isinstance(result, dict) else None
            if not isinstance(cursor, str) or not cursor or cursor in seen:
                return  # no more pages (or an agent repeating a cursor: stop, do not loop)
            seen.add(cursor)

    # -- settings and authentication ---------------------------------------------------------

    def find_setting(self, live: SessionFeed, key: str) -> Choice:
        """The setting ``key`` names (an option id, a category such as ``mode`` or ``model``,
        or a name); :class:`~acpcli.errors.UsageError` naming those offered otherwise."""
        from acpcli.errors import UsageError
        from acpcli.protocol import settings

        offered = live.settings()
        found = settings.find(offered, key)
        if found is None:
            names = ", ".join(c.key for c in offered)
            raise UsageError(
                f"{self.features.display_name} offers no {key} setting" + (f" (it offers: {names})" if names else "")
            )
        return found

    async def set_by_name(self, live: SessionFeed, key: str, value_text: str) -> Choice:
        """Set the setting ``key`` names to the value ``value_text`` names; returns the
        setting as it now is. :class:`~acpcli.errors.UsageError` when there is no such setting
        or value (then nothing is sent)."""
        from acpcli.protocol import settings

        found = self.find_setting(live, key)
        try:
            await self.change_setting(live, found, capabilities.resolve(found, value_text))
        except RpcError as err:
            # The agent refused a value it offered (or one it offers no longer): say what it
            # offers, so the next try can be right.
            if err.hint is None and found.values:
                err.hint = f"{found.key} offers: " + ", ".join(value for value, _, _ in found.values)
            raise
        return settings.find(live.settings(), found.key) or found

    async def change_setting(self, live: SessionFeed, choice: Choice, value: str | bool) -> None:
        """Set a mode or config option (a :class:`~acpcli.protocol.settings.Choice`).

        A ``set_config_option`` answer carries the complete option list, which replaces ours;
        a ``set_mode`` answer carries nothing, so the mode we asked for becomes current.
        """
        from acpcli.protocol import settings

        method, params = capabilities.change_request(self.features, live.agent_id, choice, value)
        result = self._read(method, await self.conn.request(method, params))
        live.mark(SETTING, {"key": choice.key, "value": value})
        if method == "session/set_mode":
            settings_changed(live, mode=value)
            return
        if method == "session/set_model":  # answers nothing: the model we asked for is current
            settings_changed(live, models={"currentModelId": value})
            return
        options = result.get("configOptions") if isinstance(result, dict) else None
        if not isinstance(options, list):  # an agent that answered {}: record what we asked for
            options = [
                {**option, "currentValue": value} if settings.option_id(option) == choice.key else option
                for option in live.store.config_options
            ]
        settings_changed(live, options, value if choice.category == settings.MODE else None)

    async def login(self, method_id: str) -> Any:
        """``authenticate`` (v1) / ``auth/login`` (v2) with an advertised method."""
        method, params = capabilities.login_request(self.features, method_id)
        return await self.conn.request(method, params, bounded=False)  # a person may be logging in

    async def logout(self) -> Any:
        """``logout`` (v1, when advertised) / ``auth/logout`` (v2)."""
        method, params = capabilities.logout_request(self.features)
        return await self.conn.request(method, params)

    # -- prompt turn ----------------------------------------------------------------------

    async def prompt(self, live: SessionFeed, blocks: Sequence[dict[str, Any]], *, sent: Awaitable[Any] | None = None) -> str:
        """Run one turn and return its stop reason.

        v1: the ``session/prompt`` response carries ``stopReason``. v2: the response only
        acknowledges; the turn ends with ``state_update`` ``idle`` and its ``stopReason``.
        While the turn runs, a wish to cancel it (:attr:`SessionFeed.cancel_wanted`: a
        dismissed permission question) is carried out here, by the turn's owner.

        ``sent``: the answer of a ``session/prompt`` sent already, during the previous turn
        (:meth:`send_during_turn`), which this turn waits for instead of sending ``blocks``.
        """
        v1 = self.features.protocol_version == 1
        if sent is None:
            live.note_prompt(blocks)  # before start_turn: the store still holds only earlier turns
        live.start_turn(joined=sent is not None)
        if v1 and sent is None:
            live.echo_prompt(blocks)  # the prompt is on disk before the agent answers
        idle = live.turn_idle = anyio.Event() if not v1 else None
        answer: Any = None
        gone: list[Exception] = []
        failed: list[Exception] = []
        live.prompting = True
        ended: tuple[str | None, str | None] = ("cancelled", None)  # left early: Ctrl-C twice, a timeout
        try:
            async with anyio.create_task_group() as tg:

                async def turn() -> None:
                    nonlocal answer
                    try:
                        if sent is not None:
                            answer = await sent
                        else:
                            # a rewound conversation's transcript goes with its first prompt
                            carry = carried.pending(live.session_id)
                            sending = [*blocks, carried.block(carry, self.features.prompt_embedded_context)] if carry else blocks
                            params = wire.prompt_params(live.agent_id, sending)
                            answer = await self.conn.request("session/prompt", params, bounded=False)
                            if carry:
                                carried.sent(live.session_id)
                        if v1:  # v2 acknowledges; what a turn says comes with its idle
                            answer = self._read("session/prompt", answer)
                        if idle is not None:  # v2: acknowledged; the turn ends with idle
                            await self._until_idle(idle, gone)
                    except Exception as err:  # noqa: BLE001 - re-raised below as itself, not in a group
                        failed.append(err)
                    tg.cancel_scope.cancel()

                async def cancel_when_wanted() -> None:
                    await live.cancel_wanted.wait()
                    if not live.cancel_requested:
                        await self.cancel(live)

                tg.start_soon(turn)
                tg.start_soon(cancel_when_wanted)
            if failed:
                ended = (None, _failure(failed[0]))
                raise failed[0]
            if gone and (idle is None or not idle.is_set()):
                ended = (None, _failure(gone[0]))
                raise gone[0]
            stop = answer.get("stopReason") if v1 and isinstance(answer, dict) else live.store.stop_reason
            stop = stop if isinstance(stop, str) else "end_turn"
            ended = (stop, None)
            return stop
        finally:
            live.turn_idle = None
            live.prompting = False
            live.end_turn(*ended)

    async def send_during_turn(self, live: SessionFeed, blocks: Sequence[dict[str, Any]]) -> Any:
        """Send a prompt while a turn runs, to an agent that queues it into the turn
        (claude-agent-acp's ``promptQueueing``): the running turn's request is answered when
        the agent takes it up, and this one's answer ends the turn it joined (pass it as
        :meth:`prompt`'s ``sent``). Returns the raw answer. The prompt is recorded where the
        agent takes it up, not in the middle of the message it is streaming
        (:meth:`~acpcli.session.feed.SessionFeed.join_prompt`)."""
        live.join_prompt(blocks)
        return await self.conn.request("session/prompt", wire.prompt_params(live.agent_id, blocks), bounded=False)

    async def steer(self, live: SessionFeed, blocks: Sequence[dict[str, Any]]) -> str:
        """``_session/steering``: put a prompt into the running turn, for an agent that
        advertises the extension; the agent's outcome (``injected``, ``promptRequired``
        when no turn runs any more). The prompt is recorded once the agent took it."""
        answer = await self.conn.request("_session/steering", wire.steering_params(live.agent_id, blocks))
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        if outcome == "injected":
            live.note_prompt(blocks)
            if self.features.protocol_version == 1:
                live.echo_prompt(blocks)
        return outcome if isinstance(outcome, str) else "unknown"

    async def _until_idle(self, idle: anyio.Event, gone: list[Exception]) -> None:
        """Wait for a v2 turn's ``idle``, or for the connection to end (its error in ``gone``)."""
        async with anyio.create_task_group() as tg:

            async def until_idle() -> None:
                await idle.wait()
                tg.cancel_scope.cancel()

            async def until_closed() -> None:
                gone.append(await self.conn.wait_closed("session/prompt"))
                tg.cancel_scope.cancel()

            tg.start_soon(until_idle)
            tg.start_soon(until_closed)

    async def cancel(self, live: SessionFeed) -> None:
        """``session/cancel``: pending permission questions are withdrawn (answered
        ``cancelled``) and unfinished tool calls are marked cancelled, as the protocol asks."""
        live.cancel_requested = True
        for pending in list(live.pending_permissions):
            pending.set()
        live.cancel_unfinished_tools()
        try:
            await self.conn.notify("session/cancel", wire.cancel_params(live.agent_id))
        finally:
            live.cancel_sent.set()


def _failure(err: Exception) -> str:
    """What failed a turn, in one line for its transcript: an agent's error by its message and
    what its ``data`` adds (codex puts the model provider's words there)."""
    from acpcli.errors import AcpcliError
    from acpcli.text.safe import clip, safe_line

    if isinstance(err, RpcError):
        detail = err.data_detail().split("\n")[0].strip()
        text = f"{err.rpc_message} ({err.code})" + (f": {detail}" if detail else "")
    else:
        text = err.message if isinstance(err, AcpcliError) else str(err) or type(err).__name__
    return clip(safe_line(text), 300)


@asynccontextmanager
async def open_link(
    argv: Sequence[str],
    *,
    env_extra: dict[str, str] | None = None,
    choice: ProtocolChoice = "auto",
    offer: ClientOffer | None = None,
    log_file: Path | None = None,
    stderr_log: Path | None = None,
    decide_permission: PermissionDecider | None = None,
    elicit: Elicitor | None = None,
    extra_handlers: dict[str, Callable[[Any], Awaitable[Any]]] | None = None,
    tap: Tap | None = None,
    policy: str | None = None,
    refusals: Refusals | None = None,
    turns: TurnPolicy | None = None,
    step_timeout: float | None = None,
    cancelled: list[str] | None = None,
    one_shot: bool = False,
    transport: Transport | None = None,
) -> AsyncIterator[AgentLink]:
    """Spawn the agent, connect, ``initialize``; yield the link; shut everything down.

    ``transport``: carry the frames over this :class:`~acpcli.wire.transport.Transport` instead of
    spawning ``argv`` (the Python API's seam: a memory pair in tests); closed at the end.

    The client services (file system inside each session's root set, terminals) are served
    as the ``offer`` advertises, and only on v1 connections (v2 has no such methods).
    Terminals outlive nothing: they are killed after the connection stops. ``policy`` (the
    resolved ``--permissions``) and ``refusals`` go to :class:`~acpcli.services.requests.ClientServices`:
    ``deny`` and ``read-only`` refuse file writes and terminals; ``turns`` (a live session's
    host) replaces ``policy`` with each turn's sender's. ``step_timeout`` bounds every
    request but a turn and a login (:meth:`~acpcli.wire.connection.Connection.request`).
    ``cancelled`` collects the methods of requests given up with ``$/cancel_request``.

    ``one_shot``: the link serves one command that asks nothing more of the agent once the
    body is done (and has stored what arrived): when it closes, an agent that does not exit
    at the end of its input is stopped after
    :data:`~acpcli.wire.transport.ONE_SHOT_STDIN_GRACE` instead of two seconds.
    """
    from acpcli.model import Store
    from acpcli.services.requests import ClientServices
    from acpcli.wire.connection import Connection
    from acpcli.wire.negotiate import ClientOffer, initialize
    from acpcli.wire.transport import ONE_SHOT_STDIN_GRACE, AgentProcess
    from acpcli.wire.wiretap import WireTap

    offer = offer or ClientOffer()
    if tap is None:  # an explicit tap (``--raw``) wins over the log file
        tap = WireTap(log_file) if log_file is not None else WireTap.from_env()
    dispatcher = Dispatcher(
        decide_permission=decide_permission, elicit=elicit, say=refusals.note if refusals is not None else None
    )
    services = ClientServices.for_offer(dispatcher.roots, offer, policy=policy, refusals=refusals, turns=turns)
    handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {
        "session/request_permission": dispatcher.on_request_permission,
        **services.handlers(),
        **(extra_handlers or {}),
    }
    if offer.elicitation:
        handlers["elicitation/create"] = dispatcher.on_elicitation
    carrier = (
        AgentProcess.spawn(argv, env_extra=env_extra, stderr_log=stderr_log) if transport is None else _given(transport)
    )
    async with services, carrier as proc:
        if one_shot and isinstance(proc, AgentProcess):
            proc.stdin_grace = ONE_SHOT_STDIN_GRACE
        async with Connection(
            proc, handlers=handlers, on_notification=dispatcher.on_notification, tap=tap, step_timeout=step_timeout,
            cancelled=cancelled,
        ) as conn:
            features = await initialize(conn, choice=choice, offer=offer)
            services.restrict(features)
            dispatcher.agent_name = features.display_name
            if not (features.client_elicitation and features.protocol_version == 1):
                dispatcher.elicitation_modes = ()
            process = proc if isinstance(proc, AgentProcess) else None
            yield AgentLink(conn, features, dispatcher, store_factory=Store, process=process, services=services)


@asynccontextmanager
async def _given(transport: Transport) -> AsyncIterator[Transport]:
    """A transport handed in, as :func:`open_link` uses a spawned process (the connection
    closes it)."""
    yield transport
