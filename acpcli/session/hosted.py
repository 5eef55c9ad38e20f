"""A terminal's conversation with a live session's host, shaped like the link the REPL drives.

:class:`HostedLink` stands where the REPL's conversation (:func:`acpcli.repl.run_repl`, a
:class:`~acpcli.session.conversation.Conversation`) has an
:class:`~acpcli.session.link.AgentLink` for a session of its own: the same few things
(``features``, ``find_setting`` / ``set_by_name``, ``close``, ``login`` / ``logout``: a
:class:`~acpcli.session.conversation.ConversationLink`) and a
``turn`` (a prompt's text in, its stop reason out), each carried over the socket to the host,
which owns the agent, the queue and the writes. Its ``live`` is a mirror of the session (a
:class:`~acpcli.session.feed.SessionFeed` without a recorder) that starts from the ``state`` of
the host's ``ready`` and is kept current by the update stream, so the toolbar, completion and
views read it as they read a local one. Every turn reaches it, whoever sent it: another
terminal's is announced through ``on_other_turn``; while no turn of this terminal's is under
way, what it sends is held (:attr:`HostedLink.other`) until the REPL draws it with its live
region (:meth:`HostedLink.watch`), as it draws its own, so nothing of it lands in this
terminal's own turn or beside its input line.

This is the session's hosted backend, beside the local one
(:mod:`acpcli.session.conversation`): it draws nothing itself (the front end hands it a
``redraw`` for its status) and speaks the host's protocol of :mod:`acpcli.session.hostwire`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import anyio

from acpcli.errors import HostLost, HostReported, Interrupted
from acpcli.session.conversation import Conversation
from acpcli.session.hostwire.channel import LOST_HINT, Channel, Ready
from acpcli.session.hostwire.messages import PING_AFTER, ChannelClosed, apply_event, host_timeout

if TYPE_CHECKING:
    from collections.abc import Sequence

    from acpcli.history.index import Index
    from acpcli.model import Store
    from acpcli.protocol.settings import Choice
    from acpcli.session.feed import SessionFeed
    from acpcli.wire.negotiate import AgentFeatures


@dataclass
class OtherTurn:
    """A turn another terminal (or a script) sent, running in the host."""

    #: Its prompt's text (None: it was running when this terminal joined).
    text: str | None
    #: What the host sent of it that the REPL has not drawn yet (None: drawn as it comes).
    held: list[dict[str, Any]] | None = field(default_factory=list)
    ended: anyio.Event = field(default_factory=anyio.Event)
    #: Its stop reason once it ended (None: it failed, or the host went away).
    stop: str | None = None
    #: Running when this terminal joined: where its entries begin in the store (the REPL
    #: printed the transcript before them, and draws them as the turn goes on).
    first_entry: int | None = None


#: What the host sends of the turns, in order (held while another terminal's waits to be drawn).
_OF_THE_TURN = ("u", "note", "other-turn", "other-end")


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

    process = None
    #: What the toolbar reads of a link's services (``policy``: the run's permission policy).
    services: Any = None

    def __init__(
        self,
        channel: Channel,
        ready: Ready,
        store: Store,
        *,
        decide: Callable[[SessionFeed, dict[str, Any]], Awaitable[dict[str, Any] | None]],
        say: Callable[[str], None],
        elicit: Callable[[SessionFeed, Any], Awaitable[dict[str, Any] | None]] | None = None,
        grant: dict[str, Any] | None = None,
        redraw: Callable[[], None] = lambda: None,
    ) -> None:
        from acpcli.session.feed import SessionFeed

        #: Draw the front end's status again (the REPL's toolbar reads the mirror).
        self.redraw = redraw

        self.channel = channel
        self.ready = ready
        self.features = features_of(ready.state)
        cwd = ready.state.get("cwd")
        extra = ready.state.get("additional_directories")
        self.live = SessionFeed(
            ready.session_id, store, cwd=cwd if isinstance(cwd, str) else None,
            additional_directories=[d for d in extra if isinstance(d, str)] if isinstance(extra, list) else [],
            protocol_version=self.features.protocol_version,
        )
        self._apply_state(ready.state)
        self._decide = decide
        self._elicit = elicit
        #: What each prompt says of this terminal's policy (:func:`acpcli.host.client.grant_of`);
        #: the host applies it to the turn (None: the strictest, deny without files or terminals).
        self.grant = grant
        self._say = say
        #: Called with the text of a turn another terminal sent, as it begins, and with None
        #: when it ends (the REPL heads and closes it).
        self.on_other_turn: Callable[[str | None], None] = lambda text: None
        #: Called when the host goes away while no turn of ours waits on it.
        self.on_lost: Callable[[HostLost], None] = lambda lost: None
        #: Called when another terminal closed the session, or stopped its host (the host ends).
        self.on_closed: Callable[[], None] = lambda: None
        self.lost: HostLost | None = None
        self.closing = False
        self.closed_elsewhere = False
        #: The command that stopped the host from elsewhere (``stop``, ``close``, ``rm``), if one did.
        self.stopped_elsewhere: str | None = None
        self._calls: dict[int, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self._next_call = 0
        self._turn: tuple[anyio.Event, list[dict[str, Any]]] | None = None
        self._joined_turn = False  # the turn under way is one a prompt of ours joined (send now)
        #: Another terminal's turn under way, from its ``other-turn`` to its ``other-end``.
        #: One that was running when this terminal joined is held too: the REPL draws it first.
        self.other: OtherTurn | None = OtherTurn(None) if ready.busy else None
        self._heard = time.monotonic()  # when the host last said anything
        self._pinged: float | None = None  # when it was asked whether it is there, unanswered
        self._silent = False  # it stopped answering (the watch closed the channel)
        way = ready.state.get("send_now")
        #: How the host hands a prompt to a running turn ("send now"), as the agent says it
        #: takes one (``steering``, ``promptQueueing``); None: it does not.
        self.send_now: str | None = way if isinstance(way, str) else None
        #: A prompt of ours joined the running turn: the host runs its turn next, and may end
        #: it before :meth:`turn` waits for it (its end is kept here until then).
        self._joined: list[dict[str, Any]] | None = None

    def conversation(
        self, index: Index, agent: str, export: Callable[[str, str], None] | None = None
    ) -> HostedConversation:
        """The conversation the REPL drives over this link (``index``: read for the session's
        records, never written: the host writes)."""
        return HostedConversation(self, self.live, index, None, agent, export)

    # -- what the host says ----------------------------------------------------------------

    def _apply_state(self, state: dict[str, Any]) -> None:
        modes = state.get("modes")
        if isinstance(modes, dict):
            self.live.modes = modes
        for update in state.get("updates") or []:
            if isinstance(update, dict):
                self.live.store.apply(update)

    async def serve(self) -> None:
        """Read the host's messages until it goes away (or the terminal leaves), watching
        that it still answers (:meth:`_watch`)."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch)
            await self._read()
            tg.cancel_scope.cancel()

    async def _watch(self) -> None:
        """A host that has said nothing for a while is asked for its ``status``, which it
        answers at once whatever its agent does (a turn may be quiet for long); one that
        says nothing for :func:`~acpcli.session.hostwire.messages.host_timeout` seconds after that is
        taken for gone (stopped, hung): the channel is closed, and :meth:`_read` says so."""
        patience = host_timeout()
        while True:
            await anyio.sleep(0.25)
            now = time.monotonic()
            if self.channel.pending():  # said, and not read yet (a picker holds the reader)
                self._heard, self._pinged = now, None
            elif self._pinged is None and now - self._heard >= PING_AFTER:
                self._pinged = now
                try:
                    await self.channel.send({"t": "status"})
                except ChannelClosed:
                    return
            elif self._pinged is not None and now - self._pinged >= patience:
                self._silent = True
                with anyio.CancelScope(shield=True):
                    await self.channel.aclose()
                return

    async def _read(self) -> None:
        try:
            while True:
                message = await self.channel.receive()
                self._heard, self._pinged = time.monotonic(), None
                await self._handle(message)
        except (ChannelClosed, HostLost):  # HostLost: an answer that could not be sent
            if not self.closing:
                what = f"stopped answering (waited {host_timeout():g} s)" if self._silent else "went away"
                self.lost = HostLost(
                    f"the session host {what}" + (" mid-turn" if self._turn is not None else ""), hint=LOST_HINT
                )
            for event, _ in [*self._calls.values(), *([self._turn] if self._turn else [])]:
                event.set()  # nothing waits for an answer that cannot come
            if self.other is not None:
                self.other.ended.set()
            if self.lost is not None and self._turn is None:
                self.on_lost(self.lost)

    @property
    def in_turn(self) -> bool:
        """A turn of this terminal's is under way (:meth:`turn` has not returned)."""
        return self._turn is not None

    def _own_turn_pending(self) -> bool:
        """A prompt of this terminal's is in the host (waiting its turn, or running)."""
        return self._turn is not None and not self._turn[0].is_set()

    def _route(self, message: dict[str, Any]) -> None:
        """What the host sends of the turns (another terminal's begins and ends too): held
        while another terminal's turn waits to be drawn (:meth:`watch`), else drawn now."""
        other = self.other
        if other is not None and other.held is not None:
            other.held.append(message)
        else:
            self._of_the_turn(message)

    def _of_the_turn(self, message: dict[str, Any]) -> None:
        kind = message["t"]
        if kind == "u":
            apply_event(self.live, str(message.get("k")), str(message.get("p")))
        elif kind == "note":
            self._say(str(message.get("text")))
        elif kind == "other-turn":
            text = message.get("text")
            # drawn where this terminal's own turn (waiting behind it) draws, in order; else
            # held until the REPL draws it as a turn of its own
            self.other = OtherTurn(text if isinstance(text, str) else "", held=None if self._own_turn_pending() else [])
            if self.other.held is None:
                self.live.store.turn_boundary()
            self.on_other_turn(self.other.text)
        elif kind == "other-end":
            self.live.store.turn_boundary()
            other, self.other = self.other, None
            if other is not None:
                stop = message.get("stop")
                other.stop = stop if isinstance(stop, str) else None
                other.ended.set()
            failure = message.get("message")
            if isinstance(failure, str):
                self._say(f"the other terminal's turn failed: {failure}")
            self.on_other_turn(None)

    async def _handle(self, message: dict[str, Any]) -> None:
        kind = message["t"]
        live = self.live
        if kind in _OF_THE_TURN:
            self._route(message)
        elif kind == "start":
            live.store.turn_boundary()  # a turn's messages are its own
            if not self._joined_turn:  # (a joined turn's answer began in the turn it joined)
                live.turn_first_entry = len(live.store.entries)  # (what "no answer" looks at)
        elif kind in ("end", "error", "withdrawn", "ending"):
            for unsaved in message.get("verdicts") or []:  # a full disk: the REPL goes on, as without a host
                if isinstance(unsaved, dict):
                    self._say(f"warning: {unsaved.get('message')}; the host keeps it in memory and tries the disk again")
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
        elif kind == "stopping":  # `acpcli stop` (close, rm) from elsewhere: the host ends
            self.closing = True
            why = message.get("why")
            self.stopped_elsewhere = why if why in ("close", "rm") else "stop"
            self.on_closed()
        elif kind == "queued":
            ahead = message.get("ahead") or 0
            if ahead:
                self._say(f"waiting behind {ahead} turn{'s' if ahead != 1 else ''} on this session")
        elif kind == "state":
            self._apply_state(message)
            self.redraw()
        elif kind == "ask":
            params = message.get("params")
            with _asking(live, self.redraw):
                result = await self._decide(live, params) if isinstance(params, dict) else None
            await self._send({"t": "answer", "id": message.get("id"), "result": result})
        elif kind == "elicit":  # a request for input of this terminal's turn
            with _asking(live, self.redraw):
                answer = await self._answer_form(message)
            await self._send({"t": "answer", "id": message.get("id"), "result": answer})
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

    def find_setting(self, live: SessionFeed, key: str) -> Choice:
        """As :meth:`AgentLink.find_setting <acpcli.session.link.AgentLink.find_setting>`,
        on the mirror (it answers without the host)."""
        from acpcli.session.link import AgentLink

        return AgentLink.find_setting(self, live, key)  # type: ignore[arg-type]  # reads features only

    async def set_by_name(self, live: SessionFeed, key: str, value_text: str) -> Choice:
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
        from acpcli.env import program

        sid = shown_id(self.live.session_id)
        if self.stopped_elsewhere == "close":
            return "the session was closed from another terminal (acpcli close); its host has ended"
        if self.stopped_elsewhere == "rm":
            return "the session was deleted from another terminal; its host has ended"
        if self.stopped_elsewhere:
            how = "resume" if self.features.resume else "load" if self.features.load else None
            back = f": `acpcli {how} {sid}` continues the session" if how else ""
            return f"the session's host was stopped from another terminal (acpcli stop){back}"
        keep = self.ready.keep_alive
        how_long = f" for {keep:g} s after its last turn" if keep else ""
        acpcli = program()
        return f"bye — the session stays live{how_long}: `{acpcli} attach {sid}` rejoins it, `{acpcli} stop {sid}` ends it"

    async def leave(self) -> None:
        """This terminal goes; the host stays (for its keep-alive)."""
        self.closing = True
        with anyio.CancelScope(shield=True):
            await self.channel.aclose()

    async def watch(self, *, notice: Callable[[str], None], tick: Callable[[], None] | None = None) -> str | None:
        """Draw another terminal's turn (:attr:`other`): what was held of it first, then the
        rest as it comes, until it ends; its stop reason (None: it failed). Ctrl-C says whose
        turn it is (only the terminal that sent it cancels it); a second soon after leaves
        (:class:`~acpcli.errors.Interrupted`), the turn goes on."""
        other = self.other
        if other is None:
            return None
        held, other.held = other.held, None
        sink, entries = self.live.sink, self.live.store.entries
        if other.first_entry is not None and sink is not None:  # what it said before this terminal joined
            from acpcli.model import NewEntry

            for index in range(other.first_entry, len(entries)):
                sink.on_change(self.live, NewEntry(index, entries[index]))
        if held is not None:
            if other.text is not None:
                self.live.store.turn_boundary()  # (one running when this terminal joined began before)
            for message in held:  # no await between: nothing the host sends meanwhile overtakes them
                self._route(message)
        async def first_press() -> None:
            notice("this turn is another terminal's: it is cancelled there (Ctrl-C again leaves)")

        await _until_ended(other.ended, first_press, tick)
        if self.lost is not None:
            raise self.lost
        return other.stop

    def _draw_held(self) -> None:
        """Another terminal's turn that began as this one's prompt was being sent (held, not
        drawn yet): drawn now, where this turn draws (it runs first, this prompt waits behind it)."""
        other = self.other
        if other is None or other.held is None:
            return
        held, other.held = other.held, None
        if other.text is not None:
            self.live.store.turn_boundary()
        self.on_other_turn(other.text)  # its header, in this turn's place
        for message in held:
            self._route(message)

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
        withdraws it while it waits its turn); a second soon after leaves at once
        (:class:`~acpcli.errors.Interrupted`: the host cancels the turn of a client that left).
        ``joined``: the turn of the prompt :meth:`now` sent into the last one, which the
        host runs by itself (nothing is sent)."""
        from acpcli.session.turn import Withdrawn

        live = self.live
        live.interrupted = False
        outcome: tuple[anyio.Event, list[dict[str, Any]]] = (anyio.Event(), [])
        early, self._joined = self._joined if joined else None, None
        if early:
            outcome[1].extend(early)
            outcome[0].set()
        self._joined_turn = joined
        if joined:  # its answer began in the turn it joined: counted from its prompt on
            from acpcli.model import USER, Message

            entries = live.store.entries
            live.turn_first_entry = next(
                (i for i in range(len(entries) - 1, -1, -1)
                 if isinstance(entries[i], Message) and entries[i].kind == USER),  # type: ignore[union-attr]
                len(entries),
            )
        self._turn = outcome
        self._draw_held()
        try:
            if not joined:
                await self._send({"t": "prompt", "text": text, "settings": [], "grant": self.grant})
            async def first_press() -> None:  # the turn is cancelled; a second press leaves
                notice("cancelling… (press Ctrl-C again to leave; the session stays live)")
                live.interrupted = True
                await self._send({"t": "cancel"})

            await _until_ended(outcome[0], first_press, tick)
        finally:
            self._turn = None
        if not outcome[1]:
            raise self.lost or HostLost("the session host went away mid-turn", hint=LOST_HINT)
        message = outcome[1][0]
        if message["t"] == "withdrawn":
            raise Withdrawn("withdrawn while it waited its turn: nothing was sent")
        if message["t"] == "ending":  # its agent went away: the next command starts a new host
            raise HostLost("the session host ended before this prompt's turn: it was not sent", hint=LOST_HINT)
        if message["t"] == "error":
            raise _turn_error(message)
        if message.get("interrupted"):
            live.interrupted = True
        stop = message.get("stop")
        return stop if isinstance(stop, str) else "end_turn"


async def _until_ended(
    ended: anyio.Event, first_press: Callable[[], Awaitable[None]], tick: Callable[[], None] | None
) -> None:
    """Wait for a turn to end, the turn's keys wired in as everywhere
    (:class:`~acpcli.session.control.TurnControl`): Ctrl-C calls ``first_press``; a second
    soon after leaves (:class:`~acpcli.errors.Interrupted`: the host cancels the turn of a
    terminal that left); ``tick`` (if given) about ten times a second."""
    from acpcli.session.control import Act, TurnControl
    from acpcli.session.turn import Driver

    async def act(what: Act) -> None:
        if what is Act.LEAVE:
            raise Interrupted()
        if what is Act.CANCEL:
            await first_press()

    async with anyio.create_task_group() as tg:
        Driver(TurnControl(), act, tick=tick).start(tg)
        await ended.wait()
        tg.cancel_scope.cancel()


def _turn_error(message: dict[str, Any]) -> Exception:
    """A turn's error as the host reported it. The agent's error answer to the prompt (exit
    7, or 10 for ``auth_required``) is the :class:`~acpcli.errors.RpcError` it was, so that
    the REPL stays, keeps the line and, for ``auth_required``, offers a login (through the
    host), as without one; a refusal before the turn started (exit 2) is the
    :class:`~acpcli.errors.UsageError` it was, so that the line comes back, as without one."""
    from acpcli.errors import AuthRequired, ExitCode, RpcError, UsageError

    text, code, hint = str(message.get("message")), int(message.get("exit") or 1), message.get("hint")
    if code == int(ExitCode.USAGE):  # refused before it started (a mention outside the roots): not sent
        return UsageError(text, hint=hint if isinstance(hint, str) else None)
    kinds: dict[int, type[RpcError]] = {int(ExitCode.AGENT_ERROR): RpcError, int(ExitCode.AUTH_REQUIRED): AuthRequired}
    kind = kinds.get(code)
    if kind is None:
        return HostReported(text, code, hint=hint)
    err = kind(RpcError.AUTH_REQUIRED if kind is AuthRequired else RpcError.INTERNAL_ERROR, text)
    err.message, err.hint = text, hint if isinstance(hint, str) else None  # as the host worded it
    return err


@contextlib.contextmanager
def _asking(live: SessionFeed, redraw: Callable[[], None]) -> Iterator[None]:
    """A question of this terminal's is open (the toolbar says ``waiting for you``, as it
    does without a host: :attr:`SessionFeed.pending_permissions`)."""
    open_question = anyio.Event()
    live.pending_permissions.add(open_question)
    redraw()
    try:
        yield
    finally:
        live.pending_permissions.discard(open_question)


class HostedConversation(Conversation):
    """The hosted backend of a :class:`~acpcli.session.conversation.Conversation`: the
    socket to the session's host (:class:`HostedLink`), which resolves the prompt's mentions
    where the agent runs, runs each turn in its queue and keeps the record. This terminal
    reads no file a prompt mentions and writes nothing (it holds no writer). Built by
    :meth:`HostedLink.conversation`."""

    @property
    def host(self) -> HostedLink:
        """The link to the host."""
        return cast("HostedLink", self.link)

    @property
    def agent_link(self) -> Any:
        from acpcli.errors import UsageError
        from acpcli.text.safe import shown_id

        raise UsageError(
            "this terminal is attached to the session's host, which holds its agent",
            hint=f"`acpcli fork {shown_id(self.session_id)}` forks it",
        )

    def blocks(self, text: str) -> list[dict[str, Any]]:
        """The prompt as typed: the host reads the files it mentions, where the agent runs."""
        from acpcli.protocol.wire import text_block

        return [text_block(text)]

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
        """``text`` through the host's queue (:meth:`HostedLink.turn`); ``sent``: the hand-off
        of a prompt to the last turn (:meth:`send_now`), true when the host took it and runs
        its turn by itself, false when it went back to the queue."""
        self.live.note_prompt(blocks)  # the toolbar's title at once, as without a host
        if sent is None:
            return await self.host.turn(text, notice=notice, tick=tick)
        if not await sent:
            return "end_turn"  # not handed to the turn after all: it went back to the queue
        return await self.host.turn(text, notice=notice, tick=tick, joined=True)

    def after_turn(self) -> None:
        """Nothing: the host does the bookkeeping."""

    def title_from_prompt(self) -> None:
        """Nothing: the host titles the session."""

    async def close(self) -> Any:
        """``session/close`` by the host, which marks it closed and ends."""
        return await self.host.close(self.session_id)

    @property
    def send_now_way(self) -> str | None:
        return self.host.send_now

    def may_send_now(self) -> bool:
        return True  # the host knows whether its turn runs (it answers ``ended``)

    async def send_now(self, text: str, blocks: Sequence[dict[str, Any]], back: Callable[[str], None]) -> bool:
        """Hand ``text`` to the running turn through the host (:meth:`HostedLink.now`);
        False (and ``back(text)``: it goes first in the queue) when the host could not."""
        try:
            outcome = await self.host.now(text)
        except Exception:  # noqa: BLE001 - refused or lost: the prompt is not lost, it goes first
            outcome = "failed"
        if outcome in ("injected", "joined"):
            return True
        back(text)
        return False

    @property
    def other_turn(self) -> OtherTurn | None:
        return self.host.other

    async def watch(self, *, notice: Callable[[str], None], tick: Callable[[], None] | None = None) -> str | None:
        return await self.host.watch(notice=notice, tick=tick)

    def goodbye(self, come_back: str) -> tuple[str, list[str]]:
        """The host's line (the session stays live, or why it ended), its commands quoted."""
        import re

        said = self.host.goodbye()
        return said, re.findall(r"`[^`]+`", said)
