"""A session whose live-session host runs, as the Python API holds it: the same
:class:`~acpcli.api.client.Session`, its turns carried over the host's socket.

A session whose host runs (``acpcli new --keep-alive``, ``acpcli sessions --live``) has its
agent in that host, which owns the queue and the writes. :meth:`Agent.load
<acpcli.api.client.Agent.load>` and :meth:`~acpcli.api.client.Agent.resume` join it
(:func:`joined`) instead of starting a second agent on the session: the
:class:`HostedSession` says hello as a watcher (:func:`acpcli.session.hostwire.channel.join`),
keeps a mirror of the session (its transcript as the host had stored it, then every update the
host sends, whoever's turn it is), and sends its prompts to the host, which runs each under
this connection's policy (the prompt's ``grant``) and asks this connection's callbacks its
permission questions and forms. One turn at a time: a prompt while another client's turn runs
or waits in the host raises :class:`~acpcli.errors.SessionBusy` (the host is told not to
queue it). Never prints: what the host says for stderr arrives as
:class:`~acpcli.api.types.Notice` events.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import anyio

from acpcli.api.client import Session, _Failed, _Feed
from acpcli.api.convert import input_request, setting
from acpcli.api.types import Event, InputAnswered, Notice, Setting, TurnEnded, TurnResult
from acpcli.errors import AcpcliError, ExitCode, HostLost, HostReported, SessionBusy, UsageError
from acpcli.session.hostwire.channel import LOST_HINT
from acpcli.session.hostwire.messages import ChannelClosed, apply_event

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectSendStream

    from acpcli.api.client import Agent
    from acpcli.session.feed import SessionFeed
    from acpcli.session.hostwire.channel import Channel, Ready


async def joined(agent: Agent, session_id: str, *, refuse: bool = False) -> HostedSession | None:
    """``session_id``'s host joined, when one runs (None: none does, nothing was made).
    ``refuse``: raise :class:`~acpcli.errors.SessionBusy` for a running host instead."""
    from acpcli import paths
    from acpcli.session.hostwire import address
    from acpcli.session.hostwire.channel import connect, join

    if not (paths.home_dir() / "run").is_dir():  # no host ever ran in this home
        return None
    try:
        path = str(address.socket_path(session_id))
    except AcpcliError:  # run/ unusable: no host can be there
        return None
    try:
        channel = await connect(path)
    except OSError:
        return None
    try:
        if refuse:
            from acpcli.text.safe import shown_id

            raise SessionBusy(
                f"session {shown_id(session_id)} is live: its host runs its agent (join=False)",
                hint="join it (the default), or end its host first: `acpcli stop ID`",
            )
        ready = await join(channel, session_id)
        live = _mirror(agent, session_id, ready)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await channel.aclose()
        raise
    session = HostedSession(agent, channel, ready, live)
    with agent._at_home():
        agent._tg.start_soon(session._read)
    return session


def _mirror(agent: Agent, session_id: str, ready: Ready) -> SessionFeed:
    """The session as the host had it when this connection joined: the transcript it had
    stored (the record acpcli keeps, as ``acpcli show`` reads it), its settings and roots."""
    from acpcli.history.records import rebuild
    from acpcli.model import Store
    from acpcli.session.feed import SessionFeed

    state = ready.state
    if ready.stored == 0:  # nothing on disk yet
        store = Store()
    else:
        store = rebuild(agent._index, session_id, upto=ready.stored if ready.stored > 0 else None)
    features = state.get("features")
    version = features.get("protocol_version") if isinstance(features, dict) else None
    cwd = state.get("cwd")
    extra = state.get("additional_directories")
    live = SessionFeed(
        session_id, store, cwd=cwd if isinstance(cwd, str) else None,
        additional_directories=[d for d in extra if isinstance(d, str)] if isinstance(extra, list) else [],
        protocol_version=version if isinstance(version, int) else 1,
    )
    _apply_state(live, state)
    return live


def _apply_state(live: SessionFeed, state: dict[str, Any]) -> None:
    """The host's ``state`` (in its ``ready``, and when a setting changed): v1 modes, and the
    settings, commands, title and usage as updates the store's reducer takes."""
    modes = state.get("modes")
    if isinstance(modes, dict):
        live.modes = modes
    for update in state.get("updates") or []:
        if isinstance(update, dict):
            live.store.apply(update)


class HostedSession(Session):
    """A :class:`~acpcli.api.client.Session` whose turns its live-session host runs (see the
    module docstring): :meth:`prompt` streams the same events, :meth:`cancel`, :meth:`set` and
    :meth:`close` go to the host. Leaving the connection leaves the host running (for its
    keep-alive); :meth:`close` closes the session, and its host ends."""

    def __init__(self, agent: Agent, channel: Channel, ready: Ready, live: SessionFeed) -> None:
        self._agent = agent
        self._channel = channel
        self._ready = ready
        self._live = live
        self._send: MemoryObjectSendStream[Event | _Failed] | None = None
        self._leaving: anyio.Event | None = None
        self._error: Exception | None = None
        self._ended: anyio.Event | None = None
        self._started = False  # the host began this connection's turn (its ``start``)
        self._cancelled = False
        self._calls: dict[int, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self._next_call = 0
        #: Why the host can no longer be reached (it went away, or was stopped or closed).
        self._lost: AcpcliError | None = None
        live.sink = _Feed(self)

    @property
    def hosted(self) -> bool:
        return True

    @property
    def host_pid(self) -> int | None:
        """The pid of the session's host (``acpcli sessions --live``)."""
        return self._ready.host_pid

    def _check_host(self) -> None:
        if self._lost is not None:
            raise self._lost

    async def _post(self, message: dict[str, Any]) -> None:
        self._check_host()
        try:
            await self._channel.send(message)
        except ChannelClosed:
            raise self._lost or HostLost("the session host went away", hint=LOST_HINT) from None

    # -- a turn ------------------------------------------------------------------------------

    async def _begin(
        self, text: str, attach: list[str], mentions: bool, send: MemoryObjectSendStream[Event | _Failed],
        ended: anyio.Event,
    ) -> None:
        """The prompt to the host, which runs it at once or answers busy: not queued behind
        another client's turn (one turn at a time, as without a host)."""
        self._check_host()
        self._send, self._ended, self._started, self._cancelled = send, ended, False, False
        try:
            await self._post({
                "t": "prompt", "text": text, "settings": [], "wait": False, "grant": self._agent._grant,
                "mentions": mentions, "attach": attach,
            })
        except BaseException:
            self._send = self._ended = None
            raise
        timeout = self._agent._timeout
        if timeout:
            with self._agent._at_home():
                self._agent._tg.start_soon(self._deadline, timeout, ended)

    async def _deadline(self, seconds: float, ended: anyio.Event) -> None:
        """A turn that outlasts the connection's ``timeout`` is cancelled (the host stops an
        agent that does not end it within a grace), and ends in
        :class:`~acpcli.errors.StepTimeout`."""
        from acpcli.session.outcome import turn_timed_out

        with anyio.move_on_after(seconds):
            await ended.wait()
            return
        if ended.is_set():
            return
        if self._error is None:
            self._error = turn_timed_out(seconds, self.id, answered=True)
        with contextlib.suppress(AcpcliError):
            await self._post({"t": "cancel", "kill_after": _TIMEOUT_GRACE})

    def _finish(self, item: Event | _Failed) -> None:
        """The turn is over: its last event (or error) to the caller, the session free again."""
        send, ended = self._send, self._ended
        if send is None:
            return
        if self._error is not None and not isinstance(item, _Failed):
            item = _Failed(self._error)  # a callback failed: the caller's own error, now the turn is over
        self._emit(item)
        self._error = None
        self._send = self._ended = None
        self._started = False
        send.close()
        if ended is not None:
            ended.set()

    async def cancel(self) -> None:
        """Cancel the running turn (the host sends ``session/cancel``; it ends with stop
        reason ``cancelled``); nothing when no turn of this session object is running."""
        if self._send is not None and not self._cancelled and self._lost is None:
            self._cancelled = True
            with contextlib.suppress(AcpcliError):
                await self._post({"t": "cancel"})

    # -- what the host says ------------------------------------------------------------------

    async def _read(self) -> None:
        """Read the host's messages for as long as the connection lasts (run in its task group)."""
        try:
            while True:
                message = await self._channel.receive()
                await self._handle(message)
        except ChannelClosed:
            if self._lost is None:
                mid = " mid-turn" if self._started else ""
                self._lost = HostLost(f"the session host went away{mid}", hint=LOST_HINT)
        finally:
            if self._lost is None:
                self._lost = UsageError("this agent's connection is closed")
            for event, _ in self._calls.values():
                event.set()  # nothing waits for an answer that cannot come
            if self._send is not None:
                self._finish(_Failed(self._lost))
            with anyio.CancelScope(shield=True):
                await self._channel.aclose()

    async def _handle(self, message: dict[str, Any]) -> None:
        kind = message["t"]
        live = self._live
        if kind == "u":
            apply_event(live, str(message.get("k")), str(message.get("p")))
        elif kind == "start":
            self._started = True
            live.store.turn_boundary()  # a turn's messages are its own
            live.turn_first_entry = len(live.store.entries)
        elif kind in ("other-turn", "other-end"):
            live.store.turn_boundary()  # another client's turn: mirrored, not this one's events
        elif kind == "end" and self._send is not None:
            stop = message.get("stop")
            stop = stop if isinstance(stop, str) else "end_turn"
            live.store.end_turn(stop, None)
            self._finish(TurnEnded(TurnResult(stop, self.id, self._said())))
        elif kind in ("error", "withdrawn", "ending") and self._send is not None:
            self._finish(_Failed(_turn_error(message, self.id)))
        elif kind == "note":
            text = str(message.get("text"))
            if self._send is not None:
                self._emit(Notice(text))
            else:
                self._agent._notice(text)
        elif kind == "state":
            _apply_state(live, message)
        elif kind == "ask":
            params = message.get("params")
            result = await self._agent._decide(live, params) if isinstance(params, dict) else None
            await self._answer(message.get("id"), result)
        elif kind == "elicit":
            await self._answer(message.get("id"), await self._form(message))
        elif kind in ("result", "failed"):
            waiting = self._calls.get(message.get("id"))  # type: ignore[arg-type]
            if waiting is not None:
                waiting[1].append(message)
                waiting[0].set()
        elif kind in ("closed", "stopping"):  # closed or stopped elsewhere: the host ends
            why = "closed" if kind == "closed" else "stopped"
            self._lost = HostLost(f"the session's host was {why} from elsewhere", hint=LOST_HINT)

    async def _answer(self, ask_id: Any, result: Any) -> None:
        with contextlib.suppress(AcpcliError):  # the host went away: the reader says so
            await self._post({"t": "answer", "id": ask_id, "result": result})

    async def _form(self, message: dict[str, Any]) -> dict[str, Any]:
        """The agent's request for input (the host read it already), answered by the
        connection's ``on_input`` (declined without one), and shown as
        :class:`~acpcli.api.types.InputAnswered`."""
        from acpcli.services import elicitation as el

        try:
            request = el.read_request(message.get("params"))
        except ValueError:
            return el.answer(el.DECLINE)
        agent = message.get("agent")
        request.agent = agent if isinstance(agent, str) else ""
        settled = el.settled(request, await self._agent._elicit(self._live, request))
        if self._send is not None:
            self._emit(InputAnswered(input_request(request), el.action_of(settled)))
        return settled

    def _said(self) -> str:
        from acpcli.model import AGENT, Message

        live = self._live
        return "".join(
            e.text for e in live.store.entries[live.turn_first_entry :] if isinstance(e, Message) and e.kind == AGENT
        )

    # -- between turns -----------------------------------------------------------------------

    async def _call(self, op: str, **fields: Any) -> Any:
        self._next_call += 1
        call_id = self._next_call
        answered: tuple[anyio.Event, list[dict[str, Any]]] = (anyio.Event(), [])
        self._calls[call_id] = answered
        try:
            await self._post({"t": "call", "id": call_id, "op": op, **fields})
            await answered[0].wait()
        finally:
            del self._calls[call_id]
        if not answered[1]:
            raise self._lost or HostLost("the session host went away", hint=LOST_HINT)
        answer = answered[1][0]
        if answer["t"] == "failed":
            raise _reported(answer)
        return answer.get("value")

    async def set(self, key: str, value: str) -> Setting:
        """Set one of the session's settings through its host (between turns); returns it as
        it now is."""
        from acpcli.protocol import settings

        self._agent._check()
        answer = await self._call("set", key=key, value=value)
        found_key = answer.get("key") if isinstance(answer, dict) else key
        found = settings.find(self._live.settings(), str(found_key))
        if found is None:
            raise UsageError(f"the session has no setting {key!r}")
        return setting(found)

    async def close(self) -> None:
        """``session/close`` through the host (refused while a turn runs or waits there:
        :class:`~acpcli.errors.SessionBusy`); the host then ends, its agent with it."""
        agent = self._agent
        agent._check()
        if self._send is not None:
            await self.cancel()
        await self._call("close")
        self._lost = UsageError(f"session {self.id} is closed")
        if self in agent._sessions:
            agent._sessions.remove(self)
        with anyio.CancelScope(shield=True):
            await self._channel.aclose()


#: Seconds a turn cancelled for outlasting ``timeout`` has to end before the host stops the agent.
_TIMEOUT_GRACE = 3.0


def _reported(message: dict[str, Any]) -> AcpcliError:
    """An error the host reported (``error``, ``failed``): a busy session is
    :class:`~acpcli.errors.SessionBusy`, the rest the error it was, by its exit code."""
    text, code, hint = str(message.get("message")), int(message.get("exit") or 1), message.get("hint")
    hint = hint if isinstance(hint, str) else None
    if code == int(ExitCode.BUSY):
        return SessionBusy(text, hint=hint)
    return HostReported(text, code, hint=hint)


def _turn_error(message: dict[str, Any], session_id: str) -> AcpcliError:
    kind = message["t"]
    if kind == "withdrawn":
        return SessionBusy(f"the prompt to session {session_id} was withdrawn before its turn: nothing was sent")
    if kind == "ending":
        return HostLost("the session host ended before this prompt's turn: it was not sent", hint=LOST_HINT)
    return _reported(message)
