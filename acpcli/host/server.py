"""The session host: one agent process, one session, a queue of prompts, many clients.

Started by :func:`acpcli.host.client.start_host` as ``python -I -m acpcli.host`` in a new
process session (no terminal), with a JSON *spec* on stdin: the session's local id, the
command-line options its inputs are resolved from (as ``prompt --session`` resolves them),
the permission policy for the client services and ``keep_alive``. It answers one line on
stdout — ``{"t": "ready"}``, ``{"t": "exists"}`` (another host has the session) or
``{"t": "error", "exit": N, "message": …}`` — then stdout is closed; its log is stderr.

The conversation with a client (see :mod:`acpcli.host.channel`)::

    client                          host
    hello {pid, role}        →
                             ←      ready {pid, session, agent, state}   (state: to a watcher)
    prompt {text, settings, grant, stdin?} →                  (grant: the sender's policy, below;
                                                              stdin: text piped beside the prompt)
                             ←      queued {ahead}            (turns before this one)
                             ←      start                     (this prompt's turn begins)
                             ←      u {k, p}                  (each update, as the event log stores it)
                             ←      ask {id, params}          (a permission, to the turn's client only)
                             ←      elicit {id, params}       (a request for input, likewise)
    answer {id, result}      →
                             ←      note {text}               (a line for stderr: refusals)
                             ←      end {stop} | error {exit, message, hint}
    cancel                   →                                (cancel my running turn, or withdraw my queued prompt)
    call {id, op, …}         →                                (outside a turn: set KEY VALUE, close, login METHOD, logout)
                             ←      result {id, value} | failed {id, exit, message, hint}
                             ←      state {…}                 (to watchers: settings changed outside the update stream)
                             ←      closed                    (to watchers: another client closed the session; the host ends)
    stop                     →                                (end the host: the agent is stopped)
    status                   →
                             ←      status {…}

Permissions: each turn runs under the policy of the command or terminal that sent it. Its
prompt message carries a ``grant`` (:class:`~acpcli.services.permissions.Grant`: the policy
as the sender's own decider resolved it, ``--no-fs`` / ``--no-terminal``, whether anybody can
be asked there); a missing or malformed one reads as the strictest (deny, no files, no
terminals), never as the policy the host was started with. The client services apply it to
the agent's file and terminal requests for that turn only (:class:`~acpcli.services.requests.TurnPolicy`),
refusals going to that turn's client as ``note``; a permission request is asked of that
client, which decides with its own decider. Between turns nobody is there: file and terminal
requests are refused and recorded (``show`` has them), permission requests answered
``cancelled``. Only ``prompt`` and ``attach`` clients may send prompts (a ``status`` or
``stop`` client is a look: it is not watched for leaving, so nothing may wait on it); the
others get ``error``. ``close`` is refused (exit 18) while a turn runs or waits in the queue:
another terminal's turn, or its person's answer, must not be cut off.

Invariants: turns run one at a time in arrival order, so nothing of two turns interleaves in
the store, the event log or ``show``; every update goes to the event log before it goes to
any client; a client that goes away withdraws its queued prompts and cancels its running
turn; the host ends ``keep_alive`` seconds after the last turn ended and the last client left,
and on ``stop``, SIGTERM or the agent's exit, stopping the agent's process group as ``close``
does and removing its socket and lock.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from acpcli.errors import AcpcliError, CapabilityMissing, ExitCode
from acpcli.host import address
from acpcli.host.channel import Channel, ChannelClosed, same_user

if TYPE_CHECKING:
    from anyio.abc import SocketStream

    from acpcli.api.frontends import AgentLink, Conversation, LiveSession
    from acpcli.history.index import EventWriter
    from acpcli.services.permissions import Grant
    from acpcli.services.requests import TurnPolicy

log = logging.getLogger("acpcli.host")

CANCELLED = {"outcome": {"outcome": "cancelled"}}

#: Messages a slow client may have waiting before it is dropped (it cannot hold the turn up).
_CLIENT_BACKLOG = 200_000


@dataclass(eq=False)
class Client:
    channel: Channel
    pid: int | None = None
    role: str = "prompt"
    outbox: Any = None  # the send side of its queue
    gone: anyio.Event = field(default_factory=anyio.Event)
    lingering: bool = False  # its turn is over, and it still takes the updates after it

    def post(self, message: dict[str, Any]) -> None:
        """Queue ``message`` for this client without waiting (a client that falls too far
        behind is dropped: it cannot hold the turn up)."""
        if self.gone.is_set():
            return
        try:
            self.outbox.send_nowait(message)
        except anyio.WouldBlock:
            log.warning("dropping client %s: %d messages behind", self.pid, _CLIENT_BACKLOG)
            self.gone.set()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.gone.set()


@dataclass(eq=False)
class Turn:
    client: Client
    text: str
    settings: list[tuple[str, str]]
    cancelled: bool = False
    wait: bool = True  # False (--no-wait): exit 18 rather than wait for another command's turn
    raw: bool = False  # --raw: the turn's wire frames (redacted) go to its client too
    grant: Grant | None = None  # its sender's policy for files and terminals (None: the strictest)
    piped: str | None = None  # text piped on its sender's standard input, sent as context


class Tee:
    """The live session's recorder: the event log first, then every client that watches."""

    def __init__(self, writer: EventWriter, host: Host) -> None:
        self.writer = writer
        self.host = host
        self.last_seq = 0  # of the last update appended: on disk once flushed

    def append(self, session_id: str, kind: str, payload: str) -> object:
        seq = self.writer.append(session_id, kind, payload)
        if isinstance(seq, int) and seq:
            self.last_seq = seq
        self.host.broadcast({"t": "u", "k": kind, "p": payload})
        return seq

    def flush(self) -> None:
        self.writer.flush()


class FrameTap:
    """The host's wire tap: every frame to the wire log (``--log-file``, ``ACPCLI_LOG_FILE``)
    when there is one, and the frames of a ``--raw`` client's turn to that client, redacted
    as the log and ``--raw`` without a host have them (:func:`acpcli.wire.redact.redact_frame`)."""

    def __init__(self, host: Host, log: Any) -> None:
        self.host = host
        self.log = log

    def sent(self, frame: bytes) -> None:
        self._frame("send", frame)
        if self.log is not None:
            self.log.sent(frame)

    def received(self, frame: bytes) -> None:
        self._frame("receive", frame)
        if self.log is not None:
            self.log.received(frame)

    def close(self) -> None:
        if self.log is not None:
            self.log.close()

    def _frame(self, direction: str, frame: bytes) -> None:
        turn = self.host.current
        if turn is None or not turn.raw:
            return
        from acpcli.wire.redact import redact_frame

        text = redact_frame(frame).decode("utf-8", "replace")
        turn.client.post({"t": "frame", "d": direction, "f": text})


class Host:
    """See the module docstring."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        #: The session's local id; None until ``session/new`` answers for a host that makes one.
        self.session_id: str = spec.get("session_id") or ""
        self.lock: address.HostLock | None = None
        self.keep_alive = float(spec.get("keep_alive") or 0) or math.inf
        self.clients: set[Client] = set()
        self.queue: deque[Turn] = deque()
        #: The client services' policy: the running turn's sender's (see :attr:`current`).
        self.turn_policy: TurnPolicy | None = None
        self._current: Turn | None = None
        self.wakeup = anyio.Event()
        self.last_activity = time.monotonic()
        self.stopping = anyio.Event()
        self._asks: dict[int, tuple[anyio.Event, list[Any], Client]] = {}
        self._next_ask = 0
        self._refusals_between = 0
        self.link: AgentLink | None = None
        self.live: LiveSession | None = None
        self.agent_label = ""
        self.turns_run = 0
        self.index: Any = None  # the host's index, once open
        self._tasks: Any = None  # the serving task group, for background work

    @property
    def current(self) -> Turn | None:
        """The turn running. Setting it puts its sender's grant in force for the agent's
        file and terminal requests (and clearing it takes the grant away): in one place, so
        that no way a turn starts or ends can leave one turn's policy to another, or to
        the time between turns."""
        return self._current

    @current.setter
    def current(self, turn: Turn | None) -> None:
        self._current = turn
        if self.turn_policy is None:
            return
        if turn is None:
            self.turn_policy.end()
            return
        from acpcli.services.permissions import Grant, Refusals

        grant = turn.grant if turn.grant is not None else Grant()
        client = turn.client
        self.turn_policy.start(
            grant, Refusals(lambda line: client.post({"t": "note", "text": line}), change=grant.change)
        )

    # -- clients ---------------------------------------------------------------------------

    def broadcast(self, message: dict[str, Any]) -> None:
        """An update: to the client whose turn it is and to every watcher."""
        current = self.current.client if self.current is not None else None
        for client in list(self.clients):
            # (a client whose turn is over takes what comes after it, until the next turn starts)
            if client is current or client.role == "attach" or (client.lingering and current is None):
                client.post(message)

    def note(self, text: str) -> None:
        if self.current is not None:
            self.current.client.post({"t": "note", "text": text})

    def touch(self) -> None:
        self.last_activity = time.monotonic()
        self.wakeup.set()

    async def serve_client(self, stream: SocketStream) -> None:
        if not same_user(stream):
            log.warning("refused a connection from another user")
            await stream.aclose()
            return
        channel = Channel(stream)
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](_CLIENT_BACKLOG)
        client = Client(channel, outbox=send)
        try:
            async with anyio.create_task_group() as tg:

                async def pump() -> None:
                    async with receive:
                        async for message in receive:
                            await channel.send(message)
                    client.gone.set()

                async def until_gone() -> None:
                    await client.gone.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(pump)
                tg.start_soon(until_gone)
                try:
                    await self._converse(client)
                except ChannelClosed:
                    pass
                except Exception:  # a client that says what it should not is dropped, never the host
                    log.exception("dropping a client whose message could not be handled")
                client.gone.set()
        except ChannelClosed:
            pass
        finally:
            send.close()
            if client in self.clients:
                self.clients.discard(client)
                self._client_left(client)
                self.touch()
            with anyio.CancelScope(shield=True):
                await channel.aclose()

    async def _converse(self, client: Client) -> None:
        hello = await client.channel.receive()
        if hello["t"] != "hello":
            return
        client.pid = hello.get("pid") if isinstance(hello.get("pid"), int) else None
        role = hello.get("role")
        # an unknown role is a look (it may not send prompts): nothing is asked of a client
        # that is not watched for leaving
        client.role = role if role in ("prompt", "attach", "status", "stop") else "status"
        stored: int | str = 0
        if client.role == "attach" and self.live is not None and isinstance(self.live.recorder, Tee):
            # What it missed is on disk up to `stored`; what follows comes to it live. No
            # await between the two: nothing can fall between them, nor land in both.
            self.live.recorder.flush()
            # "all": nothing went through the tee yet, so all that is on disk came before
            # (the load's replay, earlier commands' turns)
            stored = self.live.recorder.last_seq or "all"
        ready: dict[str, Any] = {"t": "ready", "stored": stored, **self.status()}
        if client.role == "attach":  # a mirror of the session starts from this
            ready["state"] = self.snapshot()
        client.post(ready)
        if client.role in ("prompt", "attach"):  # a look (status, stop) keeps nothing alive
            self.clients.add(client)
            self.touch()
        while True:
            message = await client.channel.receive()
            kind = message["t"]
            if client in self.clients:
                self.touch()
            if kind == "prompt":
                text = message.get("text")
                settings = message.get("settings") or []
                if client not in self.clients:  # a look (status, stop): its leaving is not watched
                    client.post({
                        "t": "error", "exit": int(ExitCode.USAGE),
                        "message": f"a {client.role} client cannot send prompts (say hello as a prompt or attach client)",
                    })
                    continue
                if not isinstance(text, str):
                    client.post({"t": "error", "exit": int(ExitCode.USAGE), "message": "a prompt needs text"})
                    continue
                from acpcli.services.permissions import Grant

                piped = message.get("stdin")
                ahead = len(self.queue) + (1 if self.current is not None else 0)
                self.queue.append(
                    Turn(
                        client, text, [(str(k), str(v)) for k, v in settings], wait=message.get("wait") is not False,
                        raw=message.get("raw") is True, grant=Grant.read(message.get("grant")),
                        piped=piped if isinstance(piped, str) else None,
                    )
                )
                client.post({"t": "queued", "ahead": ahead})
            elif kind == "cancel":
                kill_after = message.get("kill_after")
                await self._cancel_for(client, kill_after if isinstance(kill_after, (int, float)) else None)
            elif kind == "answer":
                ask_id = message.get("id")
                waiting = self._asks.get(ask_id) if isinstance(ask_id, int) else None
                if waiting is not None and waiting[2] is client:
                    waiting[1].append(message.get("result"))
                    waiting[0].set()
            elif kind == "call":
                await self._call(client, message)
            elif kind == "status":
                client.post({"t": "status", **self.status()})
            elif kind == "stop":
                client.post({"t": "stopping"})
                self.stopping.set()
                self.wakeup.set()
                if self.current is not None and self.live is not None:
                    self.live.want_cancel()  # the turn ends first (cancelled), then the host

    def _client_left(self, client: Client) -> None:
        """A client went away: its queued prompts are withdrawn, its running turn cancelled,
        its permission questions answered "cancelled"."""
        for turn in [t for t in self.queue if t.client is client]:
            self.queue.remove(turn)
        for event, _result, asker in list(self._asks.values()):
            if asker is client:
                event.set()
        if self.current is not None and self.current.client is client and not self.current.cancelled:
            self.current.cancelled = True
            if self.link is not None and self.live is not None:
                self.live.want_cancel()

    async def _cancel_for(self, client: Client, kill_after: float | None = None) -> None:
        """The client's queued prompts withdrawn, its running turn cancelled; with
        ``kill_after``, an agent still in that turn so many seconds later is stopped (the
        host ends with it: the next command starts a new one)."""
        for turn in [t for t in self.queue if t.client is client]:
            self.queue.remove(turn)
            client.post({"t": "withdrawn"})
        current = self.current
        if current is None or current.client is not client or self.link is None or self.live is None:
            return
        self.live.interrupted = True
        await self.link.cancel(self.live)
        if kill_after is not None and self._tasks is not None:
            link = self.link

            async def stop_if_still_running() -> None:
                await anyio.sleep(kill_after)
                if self.current is current:
                    log.warning("the agent did not end a cancelled turn in %s s: stopping it", kill_after)
                    link.kill()

            self._tasks.start_soon(stop_if_still_running)

    def status(self) -> dict[str, Any]:
        idle = 0.0 if self.current is not None else time.monotonic() - self.last_activity
        return {
            "session": self.session_id,
            "pid": os.getpid(),
            "agent": self.agent_label,
            "agent_pid": getattr(getattr(self.link, "process", None), "pid", None),
            "busy": self.current is not None,
            "queued": len(self.queue),
            "clients": len(self.clients),
            "idle": round(idle, 1),
            "keep_alive": None if math.isinf(self.keep_alive) else self.keep_alive,
            "turns": self.turns_run,
        }

    def snapshot(self) -> dict[str, Any]:
        """What a watcher's mirror of the session starts from, and is set right with when a
        setting changes outside the update stream: the agent's features, the v1 modes, and
        the settings, commands, title and usage as updates the store's reducer takes."""
        live, link = self.live, self.link
        if live is None or link is None:
            return {}
        from dataclasses import fields

        store = live.store
        updates: list[dict[str, Any]] = [
            {"sessionUpdate": "config_option_update", "configOptions": store.config_options},
            {"sessionUpdate": "available_commands_update", "availableCommands": store.available_commands},
            {"sessionUpdate": "current_model_update", "currentModelId": store.current_model_id,
             "availableModels": store.available_models},
        ]
        if store.current_mode_id is not None:
            updates.append({"sessionUpdate": "current_mode_update", "currentModeId": store.current_mode_id})
        if store.title is not None:
            updates.append({"sessionUpdate": "session_info_update", "title": store.title})
        if store.usage is not None:
            updates.append({"sessionUpdate": "usage_update", **store.usage})
        features = {f.name: getattr(link.features, f.name) for f in fields(link.features) if f.name != "raw"}
        return {
            "features": features,
            "modes": live.modes,
            "updates": updates,
            "cwd": live.cwd,
            "additional_directories": list(live.additional_directories),
        }

    def _state_changed(self) -> None:
        """Settings changed outside the update stream (a set answered): watchers' mirrors
        are set right."""
        state = {"t": "state", **self.snapshot()}
        for client in list(self.clients):
            if client.role == "attach":
                client.post(state)

    async def _call(self, client: Client, message: dict[str, Any]) -> None:
        """A client's request outside its turns: ``set`` a setting by name (mode, model, a
        config option), ``close`` the session (then the host ends), ``login`` / ``logout``.
        Answered ``result`` with the agent's answer, or ``failed`` with the error."""
        from acpcli.errors import UsageError

        call_id = message.get("id")
        op = message.get("op")
        link, live = self.link, self.live
        try:
            if link is None or live is None:
                raise CapabilityMissing("the session is not attached yet")
            value: Any = None
            if op == "set":

                def notice(line: str) -> None:
                    client.post({"t": "note", "text": line})

                lock = await self._claim(self.session_id, wait=True, notice=notice)
                try:
                    choice = await link.set_by_name(live, str(message.get("key")), str(message.get("value")))
                finally:
                    if live.recorder is not None:
                        live.recorder.flush()
                    lock.release()
                self._state_changed()
                value = {"key": choice.key}
            elif op == "close":
                if not link.features.close:
                    raise CapabilityMissing(f"{link.features.display_name} does not support session/close")
                if self.current is not None or self.queue:
                    from acpcli.errors import SessionBusy

                    # a turn (maybe another terminal's, maybe waiting on its person's answer)
                    # would be cut off, and the prompts after it dropped
                    raise SessionBusy(
                        "the session has a turn running or waiting (maybe another terminal's): not closed",
                        hint="close it once the turn is over",
                    )
                value = await link.close(live.session_id)
                if self.index is not None:
                    self.index.mark_closed(live.session_id)
                log.info("the session was closed by a client: ending")
                self._tell_others(client, {"t": "closed"})
                self.stopping.set()
                self.wakeup.set()
            elif op == "login":
                value = await link.login(str(message.get("method")))
            elif op == "logout":
                value = await link.logout()
            else:
                raise UsageError(f"the host does not know the call {op!r}")
        except AcpcliError as err:
            client.post({**_error(err), "t": "failed", "id": call_id})
            return
        client.post({"t": "result", "id": call_id, "value": value})

    # -- permissions -----------------------------------------------------------------------

    async def decide(self, live: LiveSession, params: dict[str, Any]) -> dict[str, Any]:
        """A permission request: asked of the client whose prompt started the turn, which
        decides it with its own decider (its policy, or its person); ``cancelled`` between
        turns (recorded: nobody was there) and when that client leaves."""
        turn = self.current
        if turn is None:
            self._refused_between(f"permission for {_asked_title(params)}")
            return CANCELLED
        if turn.client.gone.is_set():
            return CANCELLED
        self._next_ask += 1
        ask_id = self._next_ask
        answered = anyio.Event()
        result: list[Any] = []
        self._asks[ask_id] = (answered, result, turn.client)
        title = _asked_title(params)
        self._tell_watchers(turn.client, f"a permission is asked of the terminal that sent this prompt: {title}")
        try:
            turn.client.post({"t": "ask", "id": ask_id, "params": params})
            await _answered(answered, turn.client)
        finally:
            del self._asks[ask_id]
        chosen = result[0] if result else None
        answer = chosen if isinstance(chosen, dict) else CANCELLED
        self._tell_watchers(turn.client, f"permission for {title}: {_outcome(params, answer)}")
        return answer

    async def elicit(self, live: LiveSession | None, request: Any) -> dict[str, Any] | None:
        """A request for input (:mod:`acpcli.services.elicitation`): asked of the client whose prompt
        started the turn, which answers it as it would without a host (its form, its
        ``--answer``s, or a decline); None (``cancel``) when no turn's client is there. The
        answer is checked against the form again by the dispatcher."""
        from acpcli.services.elicitation import described

        turn = self.current
        if turn is None or turn.client.gone.is_set():
            return None
        self._next_ask += 1
        ask_id = self._next_ask
        answered = anyio.Event()
        result: list[Any] = []
        self._asks[ask_id] = (answered, result, turn.client)
        self._tell_watchers(turn.client, f"the agent asks the terminal that sent this prompt for input: {described(request)}")
        try:
            turn.client.post({"t": "elicit", "id": ask_id, "params": request.raw, "agent": request.agent})
            await _answered(answered, turn.client)
        finally:
            del self._asks[ask_id]
        chosen = result[0] if result else None
        return chosen if isinstance(chosen, dict) else None

    def _refused_between(self, what: str) -> None:
        """The agent asked for a file, a terminal or a permission while no turn ran: refused
        (nobody is there), logged, and recorded in the session as a failed tool call of
        acpcli's own (``show`` has it; attached terminals draw it)."""
        from acpcli.services.permissions import shown

        line = f"refused {shown(what)}: no prompt turn was running"
        log.warning("%s", line)
        live = self.live
        if live is None or live.recorder is None:
            return
        self._refusals_between += 1
        update = {
            "sessionUpdate": "tool_call", "toolCallId": f"acpcli-refused-{os.getpid()}-{self._refusals_between}",
            "title": f"acpcli {line}", "kind": "other", "status": "failed",
        }
        from acpcli.history.lock import SessionLock

        lock = SessionLock(self.session_id)
        if lock.try_acquire():  # no await before the write: no turn can start in between
            try:
                self._record_local(live, update)
            finally:
                lock.release()
        elif self._tasks is not None:  # another command writes a turn of it: after that one
            self._tasks.start_soon(self._record_when_free, live, update)

    async def _record_when_free(self, live: LiveSession, update: dict[str, Any]) -> None:
        try:
            lock = await self._claim(self.session_id, wait=True, notice=lambda line: log.info("%s", line))
        except AcpcliError as err:  # (a background task: it must not take the host down)
            log.warning("could not record a refusal between turns: %s", err)
            return
        try:
            self._record_local(live, update)
        finally:
            lock.release()

    @staticmethod
    def _record_local(live: LiveSession, update: dict[str, Any]) -> None:
        try:
            live.feed(update, local=True)
            if live.recorder is not None:
                live.recorder.flush()
        except Exception:  # a record that cannot be written: the host log has the line
            log.exception("could not record a refusal between turns")

    def _tell_watchers(self, asker: Client, text: str) -> None:
        self._tell_others(asker, {"t": "note", "text": text})

    def _tell_others(self, sender: Client, message: dict[str, Any]) -> None:
        """To every attached client but ``sender`` (what a turn of someone else's does)."""
        for client in list(self.clients):
            if client is not sender and client.role == "attach":
                client.post(message)

    # -- the session -----------------------------------------------------------------------

    async def run(self, report: Any) -> int:
        """Link the agent, attach the session, report ready, serve until the end."""
        from acpcli.api.frontends import Options, attach, continued_by, for_prompt
        from acpcli.history.guarded import open_index
        from acpcli.processes.supervisor import Supervisor

        options = Options(**_options(self.spec.get("options") or {}))
        making = self.spec.get("command") == "new"
        asked = self.spec.get("command") if self.spec.get("command") in ("load", "resume") else None
        if making:
            inputs = options.inputs()
        elif asked is not None:  # `load`/`resume --keep-alive`: as those commands resolve it
            from acpcli.api.frontends import for_reattach

            inputs = for_reattach(asked, self.session_id, options)[0]
        else:
            inputs = for_prompt(options, self.session_id, False)[0]
        if _MASK is not None:  # before anything is logged that may quote them
            _MASK.learn_servers(inputs.mcp_servers)
        run = _quiet_run(self.spec)
        supervisor = run.supervisor = Supervisor()

        async def main() -> int:
            index = self.index = open_index()
            writer = supervisor.writer = index.writer()
            try:
                async with self._link(inputs, run) as link:
                    supervisor.link = link
                    self.link = link
                    if asked is not None:
                        from acpcli.wire import capabilities

                        capabilities.require(link.features, f"session/{asked}")
                    command = "new" if making else asked or continued_by(
                        link.features, hint="run with --keep-alive 0, or start a new session"
                    )
                    claimed = None
                    if not making:  # a replay is written by one writer, as `load` writes it
                        claimed = await self._claim(self.session_id, wait=True, notice=lambda line: log.info("%s", line))
                    live = await attach(link, command, inputs, run, index, writer, None, self.session_id or None)
                    writer.flush()
                    for held in (claimed, live.lock):
                        if held is not None:
                            held.release()  # between turns nobody writes: each turn takes it again
                    live.lock = None
                    if making:
                        self.session_id = live.session_id
                        _name_log(self.spec.get("log"), live.session_id)
                        self.lock = address.take_host_lock(live.session_id)
                        if self.lock is None:  # an agent that hands out an id in use
                            raise CapabilityMissing(f"another host already holds the session {live.session_id}")
                        if live.store.title:
                            index.set_title(live.session_id, live.store.title)
                    live.recorder = Tee(writer, self)
                    self.live = live
                    from acpcli.api.frontends import Conversation, agent_label

                    self.agent_label = agent_label(inputs.agent, link.features)
                    conversation = Conversation(link, live, index, writer, self.agent_label)
                    return await self._serve(conversation, inputs, report)
            finally:
                from acpcli.history.guarded import verdict

                writer.close()
                index.close()
                try:
                    verdict(index)
                except AcpcliError as err:
                    log.error("%s", err)

        return await supervisor.run(main)

    def _link(self, inputs: Any, run: Any) -> Any:
        from acpcli.api.frontends import agent_stderr_log, env_extra, open_link
        from acpcli.config import step_timeout
        from acpcli.services.permissions import Refusals
        from acpcli.services.requests import TurnPolicy
        from acpcli.wire.negotiate import ClientOffer
        from acpcli.wire.wiretap import WireTap

        refusals = Refusals(self.note)
        # no policy of the host's own: each turn's sender's (see the module docstring)
        self.turn_policy = TurnPolicy(between=self._refused_between)
        wire_log = WireTap(inputs.log_file) if inputs.log_file is not None else WireTap.from_env()
        if wire_log is not None:
            try:
                wire_log.open()
            except OSError as err:
                log.warning("the wire log %s cannot be written: %s", wire_log.path, err)
                wire_log = None
        offer = ClientOffer(read_text_file=run.fs, write_text_file=run.fs, terminal=run.terminal, auth_terminal=False)
        return open_link(
            inputs.agent.argv,
            env_extra=env_extra(inputs.agent),
            choice=inputs.protocol or inputs.agent.protocol or "auto",
            offer=offer,
            log_file=inputs.log_file,
            stderr_log=agent_stderr_log(inputs.agent),
            decide_permission=self.decide,
            elicit=self.elicit,
            tap=FrameTap(self, wire_log),
            turns=self.turn_policy,
            refusals=refusals,
            step_timeout=step_timeout(flag=self.spec.get("timeout")),
        )

    async def _serve(self, conversation: Conversation, inputs: Any, report: Any) -> int:
        path = address.socket_path(self.session_id)
        try:
            path.unlink()  # stale: we hold the host lock, so no live host listens there
        except FileNotFoundError:
            pass
        listener = await anyio.create_unix_listener(path, mode=0o600)
        try:
            report({"t": "ready", **self.status()})
            async with anyio.create_task_group() as tg:
                self._tasks = tg

                async def accept() -> None:
                    async with listener:
                        await listener.serve(self.serve_client, task_group=tg)

                tg.start_soon(accept)
                await self._turns(conversation, inputs)
                await self._say_goodbye()
                tg.cancel_scope.cancel()
        finally:
            try:
                path.unlink()
            except FileNotFoundError:
                pass
        return 0

    @staticmethod
    async def _claim(session_id: str, *, wait: bool, notice: Any) -> Any:
        """The session's writer lock (:mod:`acpcli.history.lock`): a command without a host (a
        `--keep-alive 0` prompt, a REPL) may be writing a turn of it; wait for it, or with
        ``wait`` False raise SessionBusy (exit 18 for the client)."""
        from acpcli.api.frontends import claim
        from acpcli.history.lock import SessionLock

        lock = SessionLock(session_id)
        await claim(lock, wait=wait, notice=notice)
        return lock

    async def _say_goodbye(self, seconds: float = 2.0) -> None:
        """Ending: what each client is still to be told (the last turn's end or error) goes
        out before the connections close."""
        for client in list(self.clients):
            client.outbox.close()  # its pump sends what is queued, then lets it go
        with anyio.move_on_after(seconds):
            while any(not client.gone.is_set() for client in self.clients):  # noqa: ASYNC110 - a few pumps draining
                await anyio.sleep(0.02)

    async def _turns(self, conversation: Conversation, inputs: Any) -> None:
        """Run queued turns in order; return when the host should end."""
        while not self.stopping.is_set():
            if conversation.agent_link.conn.closed:
                return  # the agent went away: the next command starts a new host
            if self.queue:
                turn = self.queue.popleft()
                if turn.client.gone.is_set():
                    continue
                await self._run_turn(conversation, inputs, turn)
                continue
            if not self.clients and time.monotonic() - self.last_activity >= self.keep_alive:
                log.info("no turn and no client for %.0f s: ending", self.keep_alive)
                return
            self.wakeup = anyio.Event()
            wait = self.keep_alive - (time.monotonic() - self.last_activity) if not self.clients else math.inf
            with anyio.move_on_after(min(max(wait, 0.05), 1.0)):  # and look at the agent each second
                await self.wakeup.wait()

    async def _run_turn(self, conversation: Conversation, inputs: Any, turn: Turn) -> None:
        from acpcli.api.frontends import late_updates_possible
        from acpcli.services.mentions import build_prompt

        link, live = conversation.agent_link, conversation.live
        self.current = turn
        client = turn.client
        for other in self.clients:
            other.lingering = False  # what comes from now on is this turn's
        try:
            lock = await self._claim(
                self.session_id, wait=turn.wait, notice=lambda line: client.post({"t": "note", "text": line})
            )
        except AcpcliError as err:  # --no-wait on a session another command is writing
            client.post(_error(err))
            self.current = None
            self.touch()
            return
        # what the client's own store cannot know from this turn's updates alone
        client.post({"t": "start", "title": live.store.title or _recorded_title(conversation.index, self.session_id)})
        self._tell_others(client, {"t": "other-turn", "pid": client.pid, "text": turn.text})
        try:
            blocks = build_prompt(
                turn.text, inputs.cwd, [inputs.cwd, *inputs.additional_directories], link.features, strict=False,
                piped=turn.piped,
            )
            for key, value in turn.settings:
                await link.set_by_name(live, key, value)
            if turn.settings:
                self._state_changed()
            live.turn_active = True  # SIGTERM's supervisor cancels it before stopping the agent
            try:
                stop = await link.prompt(live, blocks)
            finally:
                live.turn_active = False
            live.recorder.flush() if live.recorder is not None else None
            conversation.after_turn()
            for warning in live.take_warnings():  # the context nearly full: the client says it
                client.post({"t": "note", "text": f"acpcli: warning: {warning}"})
            # "late": the agent may still say something of this turn (a one-shot client waits a moment)
            late = client.lingering = late_updates_possible(link, live, stop)
            client.post({"t": "end", "stop": stop, "interrupted": live.interrupted, "late": late})
            self._tell_others(client, {"t": "other-end", "stop": stop})
        except AcpcliError as err:
            log.info("turn failed: %s", err)
            conversation.title_from_prompt()  # a failed first prompt still titles the session
            client.post(_error(err))
            self._tell_others(client, {"t": "other-end", "stop": None, "message": err.message})
            if live.recorder is not None:
                live.recorder.flush()
        finally:
            if live.recorder is not None:
                live.recorder.flush()  # the turn's events are in before the next writer's
            lock.release()
            self.turns_run += 1
            self.current = None
            live.interrupted = False
            self.touch()


def _name_log(path: Any, session_id: str) -> None:
    """A new session's host log, started under a name of its own, takes the session's
    (``host-ID.log``) once the agent has named it: renamed, the open file goes on."""
    if not isinstance(path, str):
        return
    target = address.host_log(session_id)
    try:
        if not target.exists():
            os.rename(path, target)
    except OSError as err:
        log.warning("the log keeps its name %s: %s", path, err)


class Masking(logging.Formatter):
    """The host log's formatter: secrets never reach the log unmasked. Masked wherever they
    appear: the values of the environment variables whose names look secret
    (:func:`acpcli.wire.redact.secret_name`: the agent's API keys), and what
    :func:`acpcli.wire.redact.redact_server` masks of the session's MCP servers (env and header
    values, secret arguments, URL credentials)."""

    def __init__(self, fmt: str) -> None:
        super().__init__(fmt)
        from acpcli.wire.redact import secret_name

        self.secrets: set[str] = {
            value for name, value in os.environ.items() if secret_name(name) and len(value) >= 4
        }

    def learn_servers(self, servers: Any) -> None:
        from acpcli.wire.redact import redact_server

        for server in servers or []:
            if isinstance(server, dict):
                masked = set(_strings(redact_server(server)))
                self.secrets.update(s for s in _strings(server) if s not in masked and len(s) >= 4)
                for entries in (server.get("env"), server.get("headers")):
                    self.secrets.update(s for s in _strings(entries) if len(s) >= 4 and s not in _names(entries))

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        for secret in sorted(self.secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, "***")
        return text


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for child in value.values() for s in _strings(child)]
    if isinstance(value, list):
        return [s for child in value for s in _strings(child)]
    return []


def _names(entries: Any) -> set[str]:
    """The names of env/header entries (kept: they say which, not what)."""
    if isinstance(entries, dict):
        return set(entries)
    if isinstance(entries, list):
        return {str(e["name"]) for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)}
    return set()


#: The host log's formatter, made by :func:`main`.
_MASK: Masking | None = None


async def _answered(answered: anyio.Event, client: Client) -> None:
    """Wait for an answer of ``client``, or for it to leave (nothing waits on a client gone)."""
    if client.gone.is_set():
        return
    async with anyio.create_task_group() as tg:

        async def gone() -> None:
            await client.gone.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(gone)
        await answered.wait()
        tg.cancel_scope.cancel()


def _asked_title(params: dict[str, Any]) -> str:
    from acpcli.text.safe import safe_line

    call = params.get("toolCall")
    title = call.get("title") if isinstance(call, dict) else None
    text = safe_line(title) if isinstance(title, str) and title else "a tool call"
    return text if len(text) <= 120 else text[:119] + "…"


def _outcome(params: dict[str, Any], answer: dict[str, Any]) -> str:
    """What was chosen, in the words of the option (or "dismissed")."""
    from acpcli.text.safe import safe_line

    outcome = answer.get("outcome")
    chosen = outcome.get("optionId") if isinstance(outcome, dict) else None
    for option in params.get("options") or []:
        if isinstance(option, dict) and option.get("optionId") == chosen:
            name = option.get("name")
            return safe_line(name) if isinstance(name, str) else safe_line(str(chosen))
    return "dismissed"


def _quiet_run(spec: dict[str, Any]) -> Any:
    """The host's :class:`~acpcli.session.context.Invocation`: nobody at a terminal (its streams go
    nowhere; what a client must see is sent to it), the services its starter offered the agent
    (``--no-fs``, ``--no-terminal``). No permission policy: each turn brings its sender's."""
    from acpcli.api.frontends import Invocation
    from acpcli.env import Environment

    nowhere = open(os.devnull, "r+", encoding="utf-8")  # noqa: SIM115 - lives as long as the host
    return Invocation(
        env=Environment(stdin=nowhere, stdout=nowhere, stderr=nowhere),
        title=spec.get("title") if isinstance(spec.get("title"), str) else None,
        fs=bool(spec.get("fs", True)), terminal=bool(spec.get("terminal", True)),
    )


def _recorded_title(index: Any, session_id: str) -> str | None:
    """The title the index shows for the session (the agent's, the user's or the first
    prompt's), for a turn whose own updates do not carry one."""
    try:
        title = index.get(session_id).title
    except AcpcliError:
        return None
    return title if isinstance(title, str) else None


def _error(err: AcpcliError) -> dict[str, Any]:
    message: dict[str, Any] = {"t": "error", "exit": int(err.exit_code), "message": err.message, "hint": err.hint}
    tail = getattr(err, "stderr_tail", None)
    if tail:
        message["stderr_tail"] = list(tail)
    return message


_OPTION_PATHS = ("cwd", "mcp_config", "log_file")


def _options(raw: dict[str, Any]) -> dict[str, Any]:
    """The spec's options as :class:`~acpcli.session.inputs.Options` takes them."""
    from pathlib import Path

    options = dict(raw)
    for name in _OPTION_PATHS:
        if options.get(name) is not None:
            options[name] = Path(options[name])
    if options.get("add_dir") is not None:
        options["add_dir"] = [Path(p) for p in options["add_dir"]]
    return options


def main() -> int:
    """``python -I -m acpcli.host``: read the spec, take the lock, serve. The one line of
    stdout says how it went; the exit code is for the log."""
    global _MASK
    _MASK = Masking("%(asctime)s %(name)s %(levelname)s %(message)s")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_MASK)
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)  # nothing else may write to the starter's pipe
    os.close(devnull)
    reported = False

    def report(message: dict[str, Any]) -> None:
        nonlocal reported
        if reported:
            return
        reported = True
        try:
            out.write(json.dumps(message) + "\n")
            out.flush()
            out.close()
        except OSError:
            pass

    try:
        spec = json.loads(sys.stdin.read())
        session_id = spec["session_id"] if spec.get("command") != "new" else None
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        report({"t": "error", "exit": int(ExitCode.USAGE), "message": f"the host was started without a spec: {err}"})
        return int(ExitCode.USAGE)
    host = Host(spec)
    if session_id is not None:  # a new session's lock is taken once the agent names it
        host.lock = address.take_host_lock(session_id)
        if host.lock is None:
            report({"t": "exists"})
            return 0
    try:
        return anyio.run(host.run, report)
    except AcpcliError as err:
        from acpcli.errors import leaf_error

        leaf = leaf_error(err)
        report(_error(leaf) if isinstance(leaf, AcpcliError) else _error(err))
        return int(err.exit_code)
    except BaseException as err:
        from acpcli.errors import leaf_error

        leaf = leaf_error(err)
        if isinstance(leaf, AcpcliError):
            report(_error(leaf))
            return int(leaf.exit_code)
        log.exception("the host failed")
        report({"t": "error", "exit": int(ExitCode.FAILURE), "message": f"the session host failed: {err!r}"})
        return int(ExitCode.FAILURE)
    finally:
        if host.lock is not None:
            host.lock.release()
