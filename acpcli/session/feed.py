"""One live session: its store, its view, its event log, its turn state; where every update lands.

Every update the user sees goes through :meth:`SessionFeed.feed` -- those the agent sends and
those acpcli makes itself (the v1 echo of a prompt, a tool call first seen in a permission
request, tool calls marked cancelled when a turn is cancelled or ends with them unfinished) -- so what the screen showed,
what the event log holds and what ``show``/``export`` rebuild are the same. Updates acpcli
made are stored under the event kind :data:`~acpcli.history.records.LOCAL` (a user message
also carries :data:`LOCAL_META` in its ``_meta``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from acpcli.history.records import LOCAL, TURN_END, TURN_START

if TYPE_CHECKING:
    from acpcli.history.lock import SessionLock
    from acpcli.model import Change, Store
    from acpcli.protocol.settings import Choice

log = logging.getLogger("acpcli.session")

#: ``_meta`` marker on the user messages acpcli records for a v1 prompt (agents do not echo it).
LOCAL_META = {"acpcli": {"local": True}}


class Sink(Protocol):
    """Where a live session's changes go: a view of :mod:`acpcli.render` (or the REPL's
    wrapper that draws above the input line)."""

    def on_change(self, session: SessionFeed, change: Change) -> None: ...

    def begin_turn(self, store: Store | None = None) -> None: ...

    def turn_ended(self, stop_reason: str | None) -> None: ...

    def flush(self) -> None: ...


class Recorder(Protocol):
    """Where raw updates are logged: the index's :class:`~acpcli.history.eventlog.EventWriter`."""

    def append(self, session_id: str, kind: str, payload: str) -> object: ...

    def flush(self) -> None: ...


@dataclass(eq=False)
class SessionFeed:
    """One session attached over a link: its store, its view, its turn state."""

    session_id: str  # the id acpcli records and shows (the user's id)
    store: Store
    sink: Sink | None = None
    recorder: Recorder | None = None
    cwd: str | None = None
    additional_directories: list[str] = field(default_factory=list)
    response: dict[str, Any] = field(default_factory=dict)
    modes: dict[str, Any] | None = None  # v1 SessionModeState from the setup response
    protocol_version: int = 1  # the ACP version the session is spoken over (its link's)
    #: Set by a v2 ``state_update`` idle while a turn waits for it.
    turn_idle: anyio.Event | None = field(default=None, repr=False)
    #: One event per permission question being asked; set to withdraw it (the turn is cancelled).
    pending_permissions: set[anyio.Event] = field(default_factory=set, repr=False)
    #: Set when something other than the turn's owner wants the turn cancelled (a dismissed
    #: permission question); the turn's owner sends ``session/cancel`` (:meth:`AgentLink.prompt`).
    cancel_wanted: anyio.Event = field(default_factory=anyio.Event, repr=False)
    #: Set once this turn's ``session/cancel`` has been sent.
    cancel_sent: anyio.Event = field(default_factory=anyio.Event, repr=False)
    prompting: bool = False  # a ``session/prompt`` of this session is in flight (AgentLink.prompt)
    cancel_requested: bool = False
    interrupted: bool = False  # the person pressed Ctrl-C during the current turn
    #: The current turn outlasted its bound (run_turn's ``limit``): "cancelled" (the agent
    #: ended it on session/cancel) or "killed" (it did not, and was stopped); None: it did not.
    timed_out: str | None = None
    turn_active: bool = False  # a run_turn is in progress (the supervisor cancels it on SIGTERM)
    #: Checkpoints of the files around its turns (:mod:`acpcli.session.checkpointing`): None
    #: as the config says, False off (``--no-checkpoints``).
    checkpoints: bool | None = None
    output_error: BaseException | None = None
    updates_seen: int = 0
    output_lost: anyio.Event = field(default_factory=anyio.Event, repr=False)
    #: The agent's id for this session when it differs from ``session_id`` (the agent forgot
    #: a never-prompted session and a fresh one stands in for it under the user's id).
    wire_id: str | None = None
    #: The text of the session's first prompt as far as this process knows it (the first
    #: replayed user message of a load, else the first prompt sent here), for the index's
    #: prompt title; None until a prompt is sent.
    first_prompt: str | None = None
    #: The event seq of the current turn's start record (None: no turn, or nothing recorded),
    #: and where the turn's entries begin in the store: what search indexes after the turn.
    turn_seq: int | None = None
    turn_first_entry: int = 0
    #: The session's writer lock (one writer per session, :mod:`acpcli.history.lock`): a turn
    #: takes it unless its command holds it already; ``lock_wait`` False (``--no-wait``): a
    #: turn on a busy session raises SessionBusy instead of waiting.
    lock: SessionLock | None = field(default=None, repr=False)
    lock_wait: bool = True
    #: One-line warnings for the person, to be shown by the command when the turn ends
    #: (:meth:`take_warnings`): the context window passing 90 % (once per session here).
    warnings: list[str] = field(default_factory=list)
    context_warned: bool = False
    #: A v1 prompt sent during the turn to an agent that takes it into the turn (claude's
    #: promptQueueing), not recorded yet: it is recorded where the agent takes it up -- before
    #: the first update that does not go on with the message streaming when it was sent (the
    #: agent's next step; claude ends each answer with a usage update), at the latest when the
    #: turn ends -- so it never cuts the agent's sentence in two (:meth:`join_prompt`).
    joining: list[dict[str, Any]] | None = None
    #: Where the last joined prompt was recorded in the store: the turn that waits for its
    #: answer begins there (claude streams that answer before it ends the turn it joined).
    joined_at: int | None = None

    @property
    def agent_id(self) -> str:
        """The id requests for this session carry."""
        return self.wire_id or self.session_id

    def mark(self, kind: str, payload: dict[str, Any] | None = None) -> int | None:
        """Append one of acpcli's own records (``TURN_START``, ``SETTING``) to the event log;
        return its seq (None when nothing records this session)."""
        if self.recorder is None:
            return None
        seq = self.recorder.append(self.session_id, kind, json.dumps(payload or {}))
        return seq if isinstance(seq, int) else None

    def settings(self) -> list[Choice]:
        """The settings this session offers now (:class:`acpcli.protocol.settings.Choice`)."""
        from acpcli.protocol import settings

        store = self.store
        return settings.choices(
            store.config_options, self.modes, store.current_mode_id, store.available_models, store.current_model_id
        )

    def feed(self, update: Any, frame_text: str | None = None, *, local: bool = False) -> None:
        """Apply one ``session/update`` payload: store, event log, view, turn state.

        ``frame_text`` is the whole notification as received; when given, the event log
        stores it as is (readers unwrap ``params.update``) instead of re-encoding the update.
        ``local``: acpcli made this update (not the agent); the event log says so
        (:data:`~acpcli.history.records.LOCAL`).
        """
        if not isinstance(update, dict):
            log.debug("ignoring a session/update whose update is %s", type(update).__name__)
            return
        # The hot path of replay and streaming: the kind is read once, attributes once each.
        self.updates_seen += 1
        kind = update.get("sessionUpdate")
        if self.joining is not None and kind != "agent_message_chunk":
            self.place_joined()  # the agent's next step: where it takes the joined prompt up
        store = self.store
        change = store.apply(update)
        recorder = self.recorder
        if recorder is not None:
            payload = frame_text if frame_text is not None else json.dumps(update)
            try:
                recorder.append(self.session_id, LOCAL if local else kind if type(kind) is str else "?", payload)
            except Exception:
                # A failed store must never drop the update from the view or the turn's state
                # (a lost v2 ``idle`` would leave the turn waiting forever).
                log.exception("storing an update of %s failed", self.session_id)
        if change is not None:
            sink = self.sink
            if sink is not None:
                try:
                    sink.on_change(self, change)
                except OSError as err:
                    self._output_failed(err)
        if kind == "state_update" and self.turn_idle is not None and store.state == "idle":
            self.turn_idle.set()
        elif kind == "usage_update" and not self.context_warned:
            self._check_context()

    def _check_context(self) -> None:
        """The context window has just passed 90 %: say so, once."""
        from acpcli.render.usage import context_warning

        text = context_warning(self.store.usage)
        if text is not None:
            self.context_warned = True
            self.warnings.append(text)

    def take_warnings(self) -> list[str]:
        """The warnings not shown yet (see :attr:`warnings`); the caller shows them."""
        taken, self.warnings = self.warnings, []
        return taken

    def _output_failed(self, err: OSError) -> None:
        """The view could not write: stop rendering, let the turn's owner end the command."""
        if isinstance(err, BrokenPipeError):
            # Whoever reads our output has gone (`| head -1`): stop rendering, and let
            # the turn's owner end the command (run_turn watches `output_lost`).
            self.sink = None
            self.output_error = err
            self.output_lost.set()
            return
        # The output cannot be written (a full disk under -o FILE or stdout): the same,
        # with an error that says so (exit 17).
        from acpcli.errors import OutputError

        self.sink = None
        self.output_error = OutputError(f"cannot write the transcript: {err.strerror or err}")
        self.output_lost.set()

    # -- updates acpcli makes: through feed, like the agent's -------------------------------

    def echo_prompt(self, blocks: Sequence[dict[str, Any]]) -> None:
        """Record the user's prompt as user message chunks (v1 agents do not echo it), and
        have it on disk before the agent answers."""
        for block in blocks:
            self.feed({"sessionUpdate": "user_message_chunk", "content": block, "_meta": LOCAL_META})
        if self.recorder is not None:
            try:
                self.recorder.flush()
            except Exception:
                log.exception("storing the prompt of %s failed", self.session_id)

    def note_prompt(self, blocks: Sequence[dict[str, Any]]) -> None:
        """A prompt is being sent (any protocol version): the first one, or the first user
        message a load replayed, becomes :attr:`first_prompt`. Called before it is echoed."""
        if self.first_prompt is None:
            self.first_prompt = _first_user_text(self.store) or "".join(
                b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
            )

    def join_prompt(self, blocks: Sequence[dict[str, Any]]) -> None:
        """A prompt is sent into the running turn (see :attr:`joining`): noted now, recorded
        (v1: echoed) where the agent takes it up."""
        self.note_prompt(blocks)
        self.joined_at = None
        if self.protocol_version == 1:
            self.joining = list(blocks)

    def place_joined(self) -> None:
        """Record the joined prompt here, if one waits (see :attr:`joining`)."""
        blocks, self.joining = self.joining, None
        if blocks is not None:
            self.joined_at = len(self.store.entries)
            self.echo_prompt(blocks)

    def asked_about(self, tool_call: Any) -> None:
        """A permission request's ``toolCall``: the tool call it names exists from now on,
        with what the request says of it (gemini asks about calls it never announced)."""
        update = self.store.asked_tool_call(tool_call)
        if update is not None:
            self.feed(update, local=True)

    def cancel_unfinished_tools(self) -> None:
        """``session/cancel`` was sent: tool calls still pending or running are marked
        cancelled (the protocol asks the client to); later updates from the agent still apply."""
        for update in self.store.cancelled_tool_calls():
            self.feed(update, local=True)

    def start_turn(self, joined: bool = False) -> None:
        """A prompt turn begins: its own messages, its own record, a fresh cancel state.
        ``joined``: the turn of a prompt sent during the last one, which begins where that
        prompt was recorded (:attr:`joined_at`)."""
        self.store.turn_boundary()
        self.turn_first_entry = self.joined_at if joined and self.joined_at is not None else len(self.store.entries)
        self.joined_at = None
        self.turn_seq = self.mark(TURN_START)
        self.cancel_requested = self.interrupted = False
        self.cancel_wanted = anyio.Event()
        self.cancel_sent = anyio.Event()

    def end_turn(self, stop_reason: str | None, error: str | None = None) -> None:
        """A prompt turn ended (``stop_reason``), or failed (``error``): recorded, and what the
        agent sends from now on starts messages of its own (a chunk without ``messageId`` does
        not continue the turn's answer). A tool call of the turn the agent left pending (a
        refused permission, a call announced after a cancel) is marked cancelled first, as on a
        cancel -- and one left running too, unless the turn ended normally (``end_turn``: a
        background task may report after the turn, as claude's do): shown and stored."""
        self.place_joined()  # (a prompt joined and not taken up yet: it ends this turn)
        unfinished = self.store.cancelled_tool_calls(self.turn_first_entry, running=stop_reason != "end_turn")
        for update in unfinished:
            try:
                self.feed(update, local=True)
            except Exception:  # the turn's end is recorded whatever the view does with it
                log.exception("marking the unfinished tool calls of %s failed", self.session_id)
        self.store.end_turn(stop_reason, error)
        try:
            self.mark(TURN_END, {"stopReason": stop_reason, "error": error})
        except Exception:  # a failed store never hides how the turn ended: it is on its way out
            log.exception("storing the end of a turn of %s failed", self.session_id)

    def want_cancel(self) -> None:
        """Ask the turn's owner to cancel the turn (see :attr:`cancel_wanted`)."""
        self.cancel_wanted.set()


def _first_user_text(store: Store) -> str | None:
    """The text of the first user message in the transcript (a replayed one), if any."""
    from acpcli.model import USER, Message

    for entry in store.entries:
        if isinstance(entry, Message) and entry.kind == USER:
            return entry.text or None
    return None


def seed_settings(live: SessionFeed, result: Any) -> None:
    """Take the session's settings from a setup response (v1 ``modes`` and ``models``,
    ``configOptions``), whichever setup it answers (new, load, resume).

    Updates that arrived before the response (a replayed ``config_option_update``) are newer
    than nothing but older than the response, so the response wins when it has the field.
    """
    if not isinstance(result, dict):
        return
    modes = result.get("modes")
    if isinstance(modes, dict):
        live.modes = modes
    settings_changed(live, result.get("configOptions"), modes.get("currentModeId") if isinstance(modes, dict) else None)
    models = result.get("models")
    if isinstance(models, dict):
        settings_changed(live, models=models)


def settings_changed(live: SessionFeed, options: Any = None, mode: Any = None, models: Any = None) -> None:
    """Settings learnt from an answer (not an update) go through the store's own reducer,
    as the updates that would say the same do: one place validates and keeps them."""
    if options is not None:
        live.store.apply({"sessionUpdate": "config_option_update", "configOptions": options})
    if mode is not None:
        live.store.apply({"sessionUpdate": "current_mode_update", "currentModeId": mode})
    if models is not None:
        live.store.apply({"sessionUpdate": "current_model_update", **models})
