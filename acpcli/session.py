"""Session orchestration: new / load / resume / close / list / prompt, behind capability gates.

:class:`AgentLink` owns one connection to one agent process and the live sessions driven over
it. Updates flow ``connection -> AgentLink._on_notification -> LiveSession.feed`` which applies
them to the session's :class:`~acpcli.store.Store`, appends them to the event log, and hands
the change to the view (``Sink``) the CLI injected. Nothing here prints.

Invariants:

* A method or field the agent did not advertise is never sent: every request is built by
  :mod:`acpcli.capabilities`, which raises :class:`~acpcli.errors.CapabilityMissing` first.
* A session's view exists *before* its ``session/load`` is sent and outlives the response,
  so replayed updates that arrive after the answer (gemini) are still rendered and stored.
* A v1 turn ends with the ``session/prompt`` response; a v2 turn with ``state_update`` idle.
  v1 agents do not echo the user's prompt, so acpcli records it locally (marked in ``_meta``)
  so that transcripts read the same whichever version produced them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from acpcli import capabilities
from acpcli.errors import RpcError
from acpcli.negotiate import read_answer, read_request
from acpcli.protocol import wire

if TYPE_CHECKING:
    from acpcli.client_side import ClientServices, Refusals
    from acpcli.connection import Connection
    from acpcli.negotiate import AgentFeatures, ClientOffer, ProtocolChoice
    from acpcli.protocol.settings import Choice
    from acpcli.store import Store
    from acpcli.transport import AgentProcess

log = logging.getLogger("acpcli.session")

#: Bounds on updates kept for sessions not attached yet (see ``AgentLink.on_notification``).
_EARLY_SESSIONS = 8
_EARLY_UPDATES = 256

#: ``_meta`` marker on updates acpcli synthesized itself (v1 user prompts).
LOCAL_META = {"acpcli": {"local": True}}

#: Event-log record kinds acpcli writes itself (never ``sessionUpdate`` kinds): a prompt turn
#: starts (so a rebuilt transcript splits user messages where acpcli sent separate prompts,
#: whatever messageIds the agent uses), and a session setting was changed (so a fresh agent
#: session can be given the same settings).
TURN_START = "acpcli/turn-start"
SETTING = "acpcli/setting"


class Sink(Protocol):
    """Where a live session's changes go (a renderer, a collector in tests)."""

    def on_change(self, session: LiveSession, change: Any) -> None: ...

    def begin_turn(self, store: Store | None = None) -> None: ...

    def turn_ended(self, stop_reason: str | None) -> None: ...

    def flush(self) -> None: ...


class Recorder(Protocol):
    """Where raw updates are logged (the session index's event writer)."""

    def append(self, session_id: str, kind: str, payload: str) -> object: ...


PermissionDecider = Callable[["LiveSession", dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(eq=False)
class LiveSession:
    """One session attached over a link: its store, its view, its turn state."""

    session_id: str  # the id acpcli records and shows (the user's id)
    store: Store
    sink: Sink | None = None
    recorder: Recorder | None = None
    cwd: str | None = None
    additional_directories: list[str] = field(default_factory=list)
    response: dict[str, Any] = field(default_factory=dict)
    modes: dict[str, Any] | None = None  # v1 SessionModeState from the setup response
    _turn_idle: anyio.Event | None = field(default=None, repr=False)
    _pending_permissions: set[anyio.Event] = field(default_factory=set, repr=False)
    cancel_requested: bool = False
    interrupted: bool = False  # the person pressed Ctrl-C during the current turn
    turn_active: bool = False  # a run_turn is in progress (the supervisor cancels it on SIGTERM)
    output_error: BaseException | None = None
    updates_seen: int = 0
    output_lost: anyio.Event = field(default_factory=anyio.Event, repr=False)
    #: The agent's id for this session when it differs from ``session_id`` (the agent forgot
    #: a never-prompted session and a fresh one stands in for it under the user's id).
    wire_id: str | None = None

    @property
    def agent_id(self) -> str:
        """The id requests for this session carry."""
        return self.wire_id or self.session_id

    def mark(self, kind: str, payload: dict[str, Any] | None = None) -> None:
        """Append one of acpcli's own records (``TURN_START``, ``SETTING``) to the event log."""
        if self.recorder is not None:
            self.recorder.append(self.session_id, kind, json.dumps(payload or {}))

    def settings(self) -> list[Choice]:
        """The settings this session offers now (:class:`acpcli.protocol.settings.Choice`)."""
        from acpcli.protocol import settings

        store = self.store
        return settings.choices(
            store.config_options, self.modes, store.current_mode_id, store.available_models, store.current_model_id
        )

    def feed(self, update: Any, frame_text: str | None = None) -> None:
        """Apply one ``session/update`` payload: store, event log, view, turn state.

        ``frame_text`` is the whole notification as received; when given, the event log
        stores it as is (readers unwrap ``params.update``) instead of re-encoding the update.
        """
        if not isinstance(update, dict):
            log.debug("ignoring a session/update whose update is %s", type(update).__name__)
            return
        self.updates_seen += 1
        change = self.store.apply(update)
        if self.recorder is not None:
            kind = update.get("sessionUpdate")
            payload = frame_text if frame_text is not None else json.dumps(update)
            try:
                self.recorder.append(self.session_id, kind if isinstance(kind, str) else "?", payload)
            except Exception:
                # A failed store must never drop the update from the view or the turn's state
                # (a lost v2 ``idle`` would leave the turn waiting forever).
                log.exception("storing an update of %s failed", self.session_id)
        if change is not None and self.sink is not None:
            try:
                self.sink.on_change(self, change)
            except BrokenPipeError as err:
                # Whoever reads our output has gone (`| head -1`): stop rendering, and let
                # the turn's owner end the command (run_turn watches `output_lost`).
                self.sink = None
                self.output_error = err
                self.output_lost.set()
            except OSError as err:
                # The output cannot be written (a full disk under -o FILE or stdout): the same,
                # with an error that says so (exit 17).
                from acpcli.errors import OutputError

                self.sink = None
                self.output_error = OutputError(f"cannot write the transcript: {err.strerror or err}")
                self.output_lost.set()
        if self._turn_idle is not None and update.get("sessionUpdate") == "state_update" and self.store.state == "idle":
            self._turn_idle.set()


def _seed_settings(live: LiveSession, result: Any) -> None:
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
    _settings_changed(live, result.get("configOptions"), modes.get("currentModeId") if isinstance(modes, dict) else None)
    models = result.get("models")
    if isinstance(models, dict):
        _settings_changed(live, models=models)


def _settings_changed(live: LiveSession, options: Any = None, mode: Any = None, models: Any = None) -> None:
    """Settings learnt from an answer (not an update) go through the store's own reducer,
    as the updates that would say the same do: one place validates and keeps them."""
    if options is not None:
        live.store.apply({"sessionUpdate": "config_option_update", "configOptions": options})
    if mode is not None:
        live.store.apply({"sessionUpdate": "current_mode_update", "currentModeId": mode})
    if models is not None:
        live.store.apply({"sessionUpdate": "current_model_update", **models})


def _flush_recorder(live: LiveSession) -> None:
    flush = getattr(live.recorder, "flush", None)
    if flush is not None:
        try:
            flush()
        except Exception:
            log.exception("storing the prompt of %s failed", live.session_id)


def _is_cancelled(result: Any) -> bool:
    outcome = result.get("outcome") if isinstance(result, dict) else None
    return isinstance(outcome, dict) and outcome.get("outcome") == "cancelled"


def _user_echo(blocks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"sessionUpdate": "user_message_chunk", "content": block, "_meta": LOCAL_META} for block in blocks
    ]


class AgentLink:
    """A connection to one initialized agent, and the sessions driven over it."""

    def __init__(
        self,
        conn: Connection,
        features: AgentFeatures,
        *,
        store_factory: Callable[[], Store],
        decide_permission: PermissionDecider | None = None,
    ) -> None:
        self.conn = conn
        self.features = features
        self.sessions: dict[str, LiveSession] = {}
        self._store_factory = store_factory
        self._decide_permission = decide_permission
        self.process: AgentProcess | None = None  # the AgentProcess, when the link spawned one
        self._early: dict[str, list[tuple[Any, str | None]]] = {}  # updates before attach
        self.services: ClientServices | None = None  # the ClientServices answering fs/terminal requests

    def kill(self) -> None:
        """Kill the agent's process group at once (no grace periods)."""
        if self.process is not None:
            self.process.kill()

    # -- notifications and agent requests -------------------------------------------------

    def on_notification(self, method: str, params: Any) -> None:
        """The connection's notification callback (arrival order, inline)."""
        if method != "session/update" or not isinstance(params, dict):
            log.debug("ignoring notification %s", method)
            return
        session_id = params.get("sessionId")
        live = self.sessions.get(session_id)  # type: ignore[arg-type]
        if live is None:
            # An agent may send updates for a new session in the same write as the
            # session/new answer, before `new()` has attached it: keep a few, replay them
            # on attach (`_attach`).
            if isinstance(session_id, str) and (session_id in self._early or len(self._early) < _EARLY_SESSIONS):
                early = self._early.setdefault(session_id, [])
                if len(early) < _EARLY_UPDATES:
                    early.append((params.get("update"), self.conn.frame_text))
                    return
            log.debug("update for a session this link does not hold: %r", session_id)
            return
        live.feed(params.get("update"), self.conn.frame_text)

    async def on_request_permission(self, params: Any) -> dict[str, Any]:
        """``session/request_permission``: show the tool call, ask the decider."""
        if not isinstance(params, dict):
            raise RpcError(RpcError.INVALID_PARAMS, "params must be an object")
        read_request(self.features.protocol_version, "session/request_permission", params)
        live = self.sessions.get(params.get("sessionId"))  # type: ignore[arg-type]
        if live is None:
            raise RpcError(RpcError.INVALID_PARAMS, f"unknown session {params.get('sessionId')!r}")
        tool_call = params.get("toolCall")
        if isinstance(tool_call, dict):
            # gemini asks about tool calls it never announced: make sure the entry exists.
            change = live.store.upsert_tool_call(tool_call)
            if change is not None and live.sink is not None:
                live.sink.on_change(live, change)
        if live.cancel_requested or self._decide_permission is None:
            return {"outcome": {"outcome": "cancelled"}}
        cancelled = anyio.Event()
        live._pending_permissions.add(cancelled)
        try:
            result: dict[str, Any] | None = None
            async with anyio.create_task_group() as tg:

                async def ask() -> None:
                    nonlocal result
                    result = await self._decide_permission(live, params)  # type: ignore[misc]
                    tg.cancel_scope.cancel()

                async def watch() -> None:
                    await cancelled.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(ask)
                tg.start_soon(watch)
            if result is None or _is_cancelled(result):
                if not live.cancel_requested:
                    # The person dismissed the question (Ctrl-C) or no option could be
                    # chosen: "cancelled" only means something for a cancelled turn (spec),
                    # so cancel the turn too rather than leave the agent guessing.
                    await self.cancel(live)
                return {"outcome": {"outcome": "cancelled"}}
            return result
        finally:
            live._pending_permissions.discard(cancelled)

    def handlers(self) -> dict[str, Callable[[Any], Awaitable[Any]]]:
        """Agent→client request handlers this link implements."""
        return {"session/request_permission": self.on_request_permission}

    # -- lifecycle ------------------------------------------------------------------------

    def _attach(
        self, session_id: str, sink: Sink | None, recorder: Recorder | None, local_id: str | None = None
    ) -> LiveSession:
        live = LiveSession(session_id=session_id, store=self._store_factory(), sink=sink, recorder=recorder)
        if local_id is not None and local_id != session_id:
            live.session_id, live.wire_id = local_id, session_id
        self.sessions[session_id] = live
        for update, frame_text in self._early.pop(session_id, ()):
            live.feed(update, frame_text)
        return live

    async def new(
        self,
        cwd: str,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[dict[str, Any]] = (),
        *,
        sink: Sink | None = None,
        recorder: Recorder | None = None,
    ) -> LiveSession:
        """``session/new``."""
        params = capabilities.new_params(self.features, cwd, additional_directories, mcp_servers)
        result = read_answer(self.features.protocol_version, "session/new", await self.conn.request("session/new", params))
        session_id = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(session_id, str) or not session_id:
            raise RpcError(RpcError.INTERNAL_ERROR, "session/new answered without a sessionId", method="session/new")
        live = self._attach(session_id, sink, recorder)
        live.cwd, live.additional_directories = cwd, list(additional_directories)
        live.response = result
        _seed_settings(live, result)
        return live

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
    ) -> LiveSession:
        """Load with replay; the replay is over when the response arrives (``null`` or ``{}``).
        ``local_id``: the id acpcli records the session under, when the agent's differs."""
        method, params = capabilities.load_params(self.features, session_id, cwd, additional_directories, mcp_servers)
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
    ) -> LiveSession:
        """``session/resume`` (no replay expected; a replay is tolerated and rendered)."""
        params = capabilities.resume_params(self.features, session_id, cwd, additional_directories, mcp_servers)
        return await self._reattach("session/resume", params, sink, recorder, local_id)

    async def _reattach(
        self,
        method: str,
        params: dict[str, Any],
        sink: Sink | None,
        recorder: Recorder | None,
        local_id: str | None = None,
    ) -> LiveSession:
        """Send a load/resume whose view exists first (the replay arrives before the answer,
        or after it); forget the view again if the agent refuses."""
        session_id = params["sessionId"]
        live = self._attach(session_id, sink, recorder, local_id)
        live.cwd, live.additional_directories = params["cwd"], list(params.get("additionalDirectories", []))
        try:
            result = read_answer(self.features.protocol_version, method, await self.conn.request(method, params))
        except BaseException:
            self.sessions.pop(session_id, None)
            raise
        live.response = result if isinstance(result, dict) else {}
        _seed_settings(live, result)
        return live

    async def settle(
        self, live: LiveSession, *, quiet: float = 0.1, first: float = 1.0, limit: float = 10.0
    ) -> None:
        """Wait while the session's replay is still arriving, then return.

        Some agents answer ``session/load`` first and replay afterwards (gemini), so the
        answer does not mean the replay is over. Returns once no update has arrived for
        ``quiet`` seconds; when none has arrived at all yet, the first may take up to
        ``first`` seconds (a late replay) before the session counts as quiet; never waits
        longer than ``limit`` seconds in all, nor after the connection closed. An agent
        whose replay came before its answer costs one ``quiet`` period, not a fixed pause.
        """
        step = min(0.02, quiet)
        seen = live.updates_seen
        gap = quiet if seen else max(first, quiet)
        last = anyio.current_time()
        with anyio.move_on_after(limit):
            while not self.conn.closed:
                await anyio.sleep(step)
                now = anyio.current_time()
                if live.updates_seen != seen:
                    seen, last, gap = live.updates_seen, now, quiet
                elif now - last >= gap:
                    return

    async def close(self, session_id: str) -> Any:
        """``session/close``; returns exactly what the agent answered. ``session_id`` may be
        the recorded id of a session attached here under another agent id."""
        for agent_id, live in self.sessions.items():
            if live.session_id == session_id:
                session_id = agent_id
                break
        result = await self.conn.request("session/close", capabilities.close_params(self.features, session_id))
        read_answer(self.features.protocol_version, "session/close", result)  # checked, returned as answered
        self.sessions.pop(session_id, None)
        return result

    async def list_remote(self, cwd: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """``session/list``, following ``nextCursor`` until the agent says there is no more."""
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            result = read_answer(self.features.protocol_version, "session/list", await self.conn.request("session/list", capabilities.list_params(self.features, cwd, cursor)))
            sessions = result.get("sessions") if isinstance(result, dict) else None
            for info in sessions if isinstance(sessions, list) else []:
                if isinstance(info, dict):
                    yield info
            cursor = result.get("nextCursor") if isinstance(result, dict) else None
            if not isinstance(cursor, str) or not cursor or cursor in seen:
                return  # no more pages (or an agent repeating a cursor: stop, do not loop)
            seen.add(cursor)

    # -- settings and authentication ---------------------------------------------------------

    def find_setting(self, live: LiveSession, key: str) -> Choice:
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

    async def set_by_name(self, live: LiveSession, key: str, value_text: str) -> Choice:
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

    async def change_setting(self, live: LiveSession, choice: Choice, value: str | bool) -> None:
        """Set a mode or config option (a :class:`~acpcli.protocol.settings.Choice`).

        A ``set_config_option`` answer carries the complete option list, which replaces ours;
        a ``set_mode`` answer carries nothing, so the mode we asked for becomes current.
        """
        from acpcli.protocol import settings

        method, params = capabilities.change_request(self.features, live.agent_id, choice, value)
        result = read_answer(self.features.protocol_version, method, await self.conn.request(method, params))
        live.mark(SETTING, {"key": choice.key, "value": value})
        if method == "session/set_mode":
            _settings_changed(live, mode=value)
            return
        if method == "session/set_model":  # answers nothing: the model we asked for is current
            _settings_changed(live, models={"currentModelId": value})
            return
        options = result.get("configOptions") if isinstance(result, dict) else None
        if not isinstance(options, list):  # an agent that answered {}: record what we asked for
            options = [
                {**option, "currentValue": value} if settings.option_id(option) == choice.key else option
                for option in live.store.config_options
            ]
        _settings_changed(live, options, value if choice.category == settings.MODE else None)

    async def login(self, method_id: str) -> Any:
        """``authenticate`` (v1) / ``auth/login`` (v2) with an advertised method."""
        method, params = capabilities.login_request(self.features, method_id)
        return await self.conn.request(method, params, bounded=False)  # a person may be logging in

    async def logout(self) -> Any:
        """``logout`` (v1, when advertised) / ``auth/logout`` (v2)."""
        method, params = capabilities.logout_request(self.features)
        return await self.conn.request(method, params)

    # -- prompt turn ----------------------------------------------------------------------

    async def prompt(self, live: LiveSession, blocks: Sequence[dict[str, Any]]) -> str:
        """Run one turn and return its stop reason.

        v1: the ``session/prompt`` response carries ``stopReason``. v2: the response only
        acknowledges; the turn ends with ``state_update`` ``idle`` and its ``stopReason``.
        """
        live.store.turn_boundary()
        live.mark(TURN_START)
        live.cancel_requested = live.interrupted = False
        if self.features.protocol_version == 1:
            for update in _user_echo(blocks):
                live.feed(update)
            _flush_recorder(live)  # the prompt is on disk before the agent answers
            result = read_answer(1, "session/prompt", await self.conn.request("session/prompt", wire.prompt_params(live.agent_id, blocks), bounded=False))
            stop = result.get("stopReason") if isinstance(result, dict) else None
            live.store.turn_boundary()
            return stop if isinstance(stop, str) else "end_turn"
        idle = live._turn_idle = anyio.Event()
        gone: list[Exception] = []
        try:
            await self.conn.request("session/prompt", wire.prompt_params(live.agent_id, blocks), bounded=False)
            async with anyio.create_task_group() as tg:

                async def until_idle() -> None:
                    await idle.wait()
                    tg.cancel_scope.cancel()

                async def until_closed() -> None:
                    gone.append(await self.conn.wait_closed("session/prompt"))
                    tg.cancel_scope.cancel()

                tg.start_soon(until_idle)
                tg.start_soon(until_closed)
        finally:
            live._turn_idle = None
        if gone and not idle.is_set():
            raise gone[0]
        live.store.turn_boundary()
        stop = live.store.stop_reason
        return stop if isinstance(stop, str) else "end_turn"

    async def cancel(self, live: LiveSession) -> None:
        """``session/cancel``; pending permission requests are answered ``cancelled``."""
        live.cancel_requested = True
        for pending in list(live._pending_permissions):
            pending.set()
        await self.conn.notify("session/cancel", wire.cancel_params(live.agent_id))


async def run_turn(
    link: AgentLink,
    live: LiveSession,
    blocks: Sequence[dict[str, Any]],
    *,
    notice: Callable[[str], None],
    tick: Callable[[], None] | None = None,
    double_interrupt_seconds: float = 3.0,
) -> str:
    """One turn with Ctrl-C wired in: the first SIGINT sends ``session/cancel`` and the turn
    waits for the agent to confirm; a second within ``double_interrupt_seconds`` kills the
    agent's process group and raises :class:`~acpcli.errors.Interrupted` (exit 130 at the CLI).

    ``notice`` receives the one-line status messages ("cancelling…") for the caller to show;
    ``tick`` (if given) is called about ten times a second while the turn runs, so a view
    can redraw its live part even when the stream pauses.
    """
    live.turn_active = True
    try:
        return await _turn_tasks(link, live, blocks, notice, tick, double_interrupt_seconds)
    finally:
        live.turn_active = False


async def _turn_tasks(
    link: AgentLink,
    live: LiveSession,
    blocks: Sequence[dict[str, Any]],
    notice: Callable[[str], None],
    tick: Callable[[], None] | None,
    double_interrupt_seconds: float,
) -> str:
    import signal
    import time

    from acpcli.errors import Interrupted

    stop = "end_turn"
    last = 0.0
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            nonlocal stop
            stop = await link.prompt(live, blocks)
            tg.cancel_scope.cancel()

        async def watch() -> None:
            nonlocal last
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    now = time.monotonic()
                    if last and now - last < double_interrupt_seconds:
                        notice("interrupted again: killing the agent")
                        link.kill()
                        raise Interrupted()
                    last = now
                    notice("cancelling… (press Ctrl-C again to kill the agent)")
                    live.interrupted = True
                    await link.cancel(live)

        async def watch_output() -> None:
            await live.output_lost.wait()
            assert live.output_error is not None
            if not isinstance(live.output_error, BrokenPipeError):
                link.kill()  # nobody will see the rest of this turn
            raise live.output_error

        async def ticker() -> None:
            assert tick is not None
            while True:
                await anyio.sleep(0.1)
                tick()

        tg.start_soon(run)
        tg.start_soon(watch)
        tg.start_soon(watch_output)
        if tick is not None:
            tg.start_soon(ticker)
    return stop


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
    extra_handlers: dict[str, Callable[[Any], Awaitable[Any]]] | None = None,
    tap: Any = None,
    policy: str | None = None,
    refusals: Refusals | None = None,
    step_timeout: float | None = None,
) -> AsyncIterator[AgentLink]:
    """Spawn the agent, connect, ``initialize``; yield the link; shut everything down.

    The client services (file system inside each session's root set, terminals) are served
    as the ``offer`` advertises, and only on v1 connections (v2 has no such methods).
    Terminals outlive nothing: they are killed after the connection stops. ``policy`` (the
    resolved ``--permissions``) and ``refusals`` go to :class:`~acpcli.client_side.ClientServices`:
    ``deny`` and ``read-only`` refuse file writes and terminals. ``step_timeout`` bounds every
    request but a turn and a login (:meth:`~acpcli.connection.Connection.request`).
    """
    from acpcli.client_side import ClientServices, roots_of
    from acpcli.connection import Connection
    from acpcli.negotiate import ClientOffer, initialize
    from acpcli.store import Store
    from acpcli.transport import AgentProcess
    from acpcli.wiretap import WireTap

    offer = offer or ClientOffer()
    if tap is None:  # an explicit tap (``--raw``) wins over the log file
        tap = WireTap(log_file) if log_file is not None else WireTap.from_env()
    link_box: list[AgentLink] = []
    services = ClientServices.for_offer(
        roots_of(lambda: link_box[0].sessions if link_box else None), offer, policy=policy, refusals=refusals
    )

    def on_notification(method: str, params: Any) -> None:
        if link_box:
            link_box[0].on_notification(method, params)

    async def permission(params: Any) -> Any:
        if not link_box:
            raise RpcError(RpcError.INVALID_PARAMS, "no session exists yet")
        return await link_box[0].on_request_permission(params)

    handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {"session/request_permission": permission}
    handlers.update(services.handlers())
    handlers.update(extra_handlers or {})
    async with services, AgentProcess.spawn(argv, env_extra=env_extra, stderr_log=stderr_log) as proc:
        async with Connection(
            proc, handlers=handlers, on_notification=on_notification, tap=tap, step_timeout=step_timeout
        ) as conn:
            features = await initialize(conn, choice=choice, offer=offer)
            services.restrict(features)
            link = AgentLink(conn, features, store_factory=Store, decide_permission=decide_permission)
            link.process = proc
            link.services = services
            link_box.append(link)
            yield link
