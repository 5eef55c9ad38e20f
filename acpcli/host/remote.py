"""A terminal's conversation with a live session's host, shaped like the link the REPL drives.

:class:`HostedLink` stands where the REPL's conversation (:func:`acpcli.repl.run_repl`, a
:class:`~acpcli.session.conversation.Conversation`) has an
:class:`~acpcli.session.link.AgentLink` for a session of its own: the same few things
(``features``, ``find_setting`` / ``set_by_name``, ``close``, ``login`` / ``logout``: a
:class:`~acpcli.session.conversation.ConversationLink`) and a
``turn`` (a prompt's text in, its stop reason out), each carried over the socket to the host,
which owns the agent, the queue and the writes. Its ``live`` is a mirror of the session (a
:class:`~acpcli.session.live.LiveSession` without a recorder) that starts from the ``state`` of
the host's ``ready`` and is kept current by the update stream, so the toolbar, completion and
views read it as they read a local one. Every turn reaches it, whoever sent it: another
terminal's is announced through ``on_other_turn`` and drawn as it streams.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from acpcli.errors import HostLost, HostReported, Interrupted
from acpcli.host.channel import Channel, ChannelClosed
from acpcli.host.client import apply_event

if TYPE_CHECKING:
    from acpcli.api.frontends import LiveSession
    from acpcli.history.store import Store
    from acpcli.protocol.settings import Choice
    from acpcli.wire.negotiate import AgentFeatures

#: A second Ctrl-C within so many seconds leaves the turn (the host cancels it; the session stays).
_DOUBLE_INTERRUPT = 3.0

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


async def join(channel: Channel) -> Ready:
    """Say hello as a watcher (every turn reaches it) and read the host's ``ready``."""
    await channel.send({"t": "hello", "pid": os.getpid(), "role": "attach"})
    try:
        ready = await channel.receive()
    except ChannelClosed:
        raise HostLost("the session host went away", hint=LOST_HINT) from None
    if ready.get("t") != "ready":
        raise HostLost("the session host did not answer", hint=LOST_HINT)
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


def features_of(state: dict[str, Any]) -> AgentFeatures:
    """The agent's features as the host negotiated them (fields it does not name: defaults)."""
    from dataclasses import fields

    from acpcli.wire.negotiate import AgentFeatures

    said = state.get("features")
    said = said if isinstance(said, dict) else {}
    known = {f.name for f in fields(AgentFeatures)} - {"raw"}
    values = {name: value for name, value in said.items() if name in known}
    if isinstance(values.get("auth_methods"), list):
        values["auth_methods"] = tuple(m for m in values["auth_methods"] if isinstance(m, dict))
    values.setdefault("protocol_version", 1)
    values.setdefault("reading", "v1")
    try:
        return AgentFeatures(**values)
    except TypeError:
        return AgentFeatures(protocol_version=1, reading="v1")


class HostedLink:
    """See the module docstring. :meth:`serve` reads the host's messages for as long as the
    terminal stays; run it in a task beside the REPL."""

    #: The REPL's marker: turns go through :meth:`turn`, the host does the bookkeeping.
    hosted = True
    process = None
    #: What the toolbar reads of a link's services (``policy``: the run's permission policy).
    services: Any = None

    def __init__(
        self,
        channel: Channel,
        ready: Ready,
        store: Store,
        *,
        decide: Callable[[LiveSession, dict[str, Any]], Awaitable[dict[str, Any] | None]],
        say: Callable[[str], None],
        elicit: Callable[[LiveSession, Any], Awaitable[dict[str, Any] | None]] | None = None,
    ) -> None:
        from acpcli.api.frontends import LiveSession

        self.channel = channel
        self.ready = ready
        self.features = features_of(ready.state)
        cwd = ready.state.get("cwd")
        extra = ready.state.get("additional_directories")
        self.live = LiveSession(
            ready.session_id, store, cwd=cwd if isinstance(cwd, str) else None,
            additional_directories=[d for d in extra if isinstance(d, str)] if isinstance(extra, list) else [],
            protocol_version=self.features.protocol_version,
        )
        self._apply_state(ready.state)
        self._decide = decide
        self._elicit = elicit
        self._say = say
        #: Called with the text of a turn another terminal sent, as it begins, and with None
        #: when it ends (the REPL heads and closes it).
        self.on_other_turn: Callable[[str | None], None] = lambda text: None
        #: Called when the host goes away while no turn of ours waits on it.
        self.on_lost: Callable[[HostLost], None] = lambda lost: None
        #: Called when another terminal closed the session (the host ends).
        self.on_closed: Callable[[], None] = lambda: None
        self.lost: HostLost | None = None
        self.closing = False
        self.closed_elsewhere = False
        self._calls: dict[int, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self._next_call = 0
        self._turn: tuple[anyio.Event, list[dict[str, Any]]] | None = None
        way = ready.state.get("send_now")
        #: How the host hands a prompt to a running turn ("send now"), as the agent says it
        #: takes one (``steering``, ``promptQueueing``); None: it does not.
        self.send_now: str | None = way if isinstance(way, str) else None
        #: A prompt of ours joined the running turn: the host runs its turn next, and may end
        #: it before :meth:`turn` waits for it (its end is kept here until then).
        self._joined: list[dict[str, Any]] | None = None

    # -- what the host says ----------------------------------------------------------------

    def _apply_state(self, state: dict[str, Any]) -> None:
        modes = state.get("modes")
        if isinstance(modes, dict):
            self.live.modes = modes
        for update in state.get("updates") or []:
            if isinstance(update, dict):
                self.live.store.apply(update)

    async def serve(self) -> None:
        """Read the host's messages until it goes away (or the terminal leaves)."""
        try:
            while True:
                message = await self.channel.receive()
                await self._handle(message)
        except (ChannelClosed, HostLost):  # HostLost: an answer that could not be sent
            if self.closing:
                return
            self.lost = HostLost(
                "the session host went away" + (" mid-turn" if self._turn is not None else ""), hint=LOST_HINT
            )
            for event, _ in [*self._calls.values(), *([self._turn] if self._turn else [])]:
                event.set()
            if self._turn is None:
                self.on_lost(self.lost)

    async def _handle(self, message: dict[str, Any]) -> None:
        kind = message["t"]
        live = self.live
        if kind == "u":
            apply_event(live, str(message.get("k")), str(message.get("p")))
        elif kind in ("start", "other-turn"):
            live.store.turn_boundary()  # a turn's messages are its own
            if kind == "other-turn":
                text = message.get("text")
                self.on_other_turn(text if isinstance(text, str) else "")
        elif kind == "other-end":
            live.store.turn_boundary()
            self.on_other_turn(None)
            failure = message.get("message")
            if isinstance(failure, str):
                self._say(f"the other terminal's turn failed: {failure}")
        elif kind in ("end", "error", "withdrawn"):
            if self._turn is None and self._joined is not None:
                self._joined.append(message)  # the joined turn, over before we waited for it
            elif self._turn is not None:
                self._turn[1].append(message)
                self._turn[0].set()
            elif kind == "error":
                self._say(f"error: {message.get('message')}")
        elif kind == "closed":
            self.closing = self.closed_elsewhere = True  # the host's end that follows is no loss
            self.on_closed()
        elif kind == "queued":
            ahead = message.get("ahead") or 0
            if ahead:
                self._say(f"waiting behind {ahead} turn{'s' if ahead != 1 else ''} on this session")
        elif kind == "note":
            self._say(str(message.get("text")))
        elif kind == "state":
            self._apply_state(message)
            _redraw()
        elif kind == "ask":
            params = message.get("params")
            result = await self._decide(live, params) if isinstance(params, dict) else None
            await self._send({"t": "answer", "id": message.get("id"), "result": result})
        elif kind == "elicit":  # a request for input of this terminal's turn
            await self._send({"t": "answer", "id": message.get("id"), "result": await self._answer_form(message)})
        elif kind in ("result", "failed"):
            waiting = self._calls.get(message.get("id"))  # type: ignore[arg-type]
            if waiting is not None:
                waiting[1].append(message)
                waiting[0].set()

    async def _answer_form(self, message: dict[str, Any]) -> dict[str, Any]:
        """The agent's request for input (the host read it already), asked here (a decline
        when this terminal has nobody to ask)."""
        from acpcli.services import elicitation as el

        try:
            request = el.read_request(message.get("params"))
        except ValueError:
            return el.answer(el.DECLINE)
        agent = message.get("agent")
        request.agent = agent if isinstance(agent, str) else ""
        answer = await self._elicit(self.live, request) if self._elicit is not None else None
        return el.settled(request, answer)

    async def _send(self, message: dict[str, Any]) -> None:
        if self.lost is not None:
            raise self.lost
        try:
            await self.channel.send(message)
        except ChannelClosed:
            mid_turn = " mid-turn" if self._turn is not None else ""
            raise self.lost or HostLost(f"the session host went away{mid_turn}", hint=LOST_HINT) from None

    async def _call(self, op: str, **fields: Any) -> Any:
        self._next_call += 1
        call_id = self._next_call
        answered: tuple[anyio.Event, list[dict[str, Any]]] = (anyio.Event(), [])
        self._calls[call_id] = answered
        try:
            await self._send({"t": "call", "id": call_id, "op": op, **fields})
            await answered[0].wait()
        finally:
            del self._calls[call_id]
        if not answered[1]:
            raise self.lost or HostLost("the session host went away", hint=LOST_HINT)
        answer = answered[1][0]
        if answer["t"] == "failed":
            raise HostReported(str(answer.get("message")), int(answer.get("exit") or 1), hint=answer.get("hint"))
        return answer.get("value")

    # -- what the REPL asks of a link ------------------------------------------------------

    def find_setting(self, live: LiveSession, key: str) -> Choice:
        """As :meth:`AgentLink.find_setting <acpcli.session.link.AgentLink.find_setting>`,
        on the mirror (it answers without the host)."""
        from acpcli.api.frontends import AgentLink

        return AgentLink.find_setting(self, live, key)  # type: ignore[arg-type]  # reads features only

    async def set_by_name(self, live: LiveSession, key: str, value_text: str) -> Choice:
        """The host sets it (between turns); the mirror has the new state before the answer."""
        self.find_setting(live, key)  # the same error, before anything is sent, as without a host
        from acpcli.protocol import settings

        value = await self._call("set", key=key, value=value_text)
        found_key = value.get("key") if isinstance(value, dict) else key
        found = settings.find(live.settings(), str(found_key))
        return found if found is not None else self.find_setting(live, key)

    async def close(self, session_id: str) -> Any:
        """``session/close`` by the host, which then ends (its agent with it)."""
        self.closing = True
        try:
            return await self._call("close")
        except BaseException:
            self.closing = False
            raise

    async def login(self, method_id: str) -> Any:
        return await self._call("login", method=method_id)

    async def logout(self) -> Any:
        return await self._call("logout")

    def goodbye(self) -> str:
        """The line Ctrl-D leaves with: the session stays in its host, and how to come back."""
        from acpcli.text.safe import shown_id

        if self.closed_elsewhere:
            return "the session was closed from another terminal; its host has ended"
        sid = shown_id(self.live.session_id)
        keep = self.ready.keep_alive
        how_long = f" for {keep:g} s after its last turn" if keep else ""
        return f"bye — the session stays live{how_long}: `acpcli attach {sid}` rejoins it, `acpcli stop {sid}` ends it"

    async def leave(self) -> None:
        """This terminal goes; the host stays (for its keep-alive)."""
        self.closing = True
        with anyio.CancelScope(shield=True):
            await self.channel.aclose()

    async def now(self, text: str) -> str:
        """"Send now": ``text`` into our running turn, through the host (see
        :attr:`send_now`); the outcome: ``injected`` (steered), ``joined`` (its answer is
        our next turn: :meth:`turn` with ``joined``), else why not (``ended``...)."""
        outcome = str(await self._call("now", text=text))
        if outcome == "joined":
            self._joined = []
        return outcome

    async def turn(
        self, text: str, *, notice: Callable[[str], None], tick: Callable[[], None] | None = None, joined: bool = False
    ) -> str:
        """One prompt through the host's queue; its stop reason. Ctrl-C cancels it (or
        withdraws it while it waits its turn); a second within 3 s leaves at once
        (:class:`~acpcli.errors.Interrupted`: the host cancels the turn of a client that left).
        ``joined``: the turn of the prompt :meth:`now` sent into the last one, which the
        host runs by itself (nothing is sent)."""
        from acpcli.api.frontends import Withdrawn

        live = self.live
        live.interrupted = False
        outcome: tuple[anyio.Event, list[dict[str, Any]]] = (anyio.Event(), [])
        early, self._joined = self._joined if joined else None, None
        if early:
            outcome[1].extend(early)
            outcome[0].set()
        self._turn = outcome
        try:
            if not joined:
                await self._send({"t": "prompt", "text": text, "settings": []})
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async with anyio.create_task_group() as tg:

                    async def interrupts() -> None:
                        last = 0.0
                        async for _ in signals:
                            now = time.monotonic()
                            if last and now - last < _DOUBLE_INTERRUPT:
                                raise Interrupted()
                            last = now
                            notice("cancelling… (press Ctrl-C again to leave; the session stays live)")
                            live.interrupted = True
                            await self._send({"t": "cancel"})

                    async def ticker() -> None:
                        assert tick is not None
                        while True:
                            await anyio.sleep(0.1)
                            tick()

                    tg.start_soon(interrupts)
                    if tick is not None:
                        tg.start_soon(ticker)
                    await outcome[0].wait()
                    tg.cancel_scope.cancel()
        finally:
            self._turn = None
        if not outcome[1]:
            raise self.lost or HostLost("the session host went away mid-turn", hint=LOST_HINT)
        message = outcome[1][0]
        if message["t"] == "withdrawn":
            raise Withdrawn("withdrawn while it waited its turn: nothing was sent")
        if message["t"] == "error":
            raise _turn_error(message)
        if message.get("interrupted"):
            live.interrupted = True
        stop = message.get("stop")
        return stop if isinstance(stop, str) else "end_turn"


def _turn_error(message: dict[str, Any]) -> Exception:
    """A turn's error as the host reported it. The agent's error answer to the prompt (exit
    7, or 10 for ``auth_required``) is the :class:`~acpcli.errors.RpcError` it was, so that
    the REPL stays, keeps the line and, for ``auth_required``, offers a login (through the
    host), as without one."""
    from acpcli.errors import AuthRequired, ExitCode, RpcError

    text, code, hint = str(message.get("message")), int(message.get("exit") or 1), message.get("hint")
    kinds: dict[int, type[RpcError]] = {int(ExitCode.AGENT_ERROR): RpcError, int(ExitCode.AUTH_REQUIRED): AuthRequired}
    kind = kinds.get(code)
    if kind is None:
        return HostReported(text, code, hint=hint)
    err = kind(RpcError.AUTH_REQUIRED if kind is AuthRequired else RpcError.INTERNAL_ERROR, text)
    err.message, err.hint = text, hint if isinstance(hint, str) else None  # as the host worded it
    return err


def _redraw() -> None:
    """The toolbar reads the mirror: draw it again."""
    from prompt_toolkit.application.current import get_app_or_none

    app = get_app_or_none()
    if app is not None and app.is_running:
        app.invalidate()
