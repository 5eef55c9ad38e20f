"""The session host: one agent process, one session, a queue of prompts, many clients.

Started by :func:`acpcli.session.hostwire.start.start_host` as ``python -I -m acpcli.host`` in a new
process session (no terminal), with a JSON *spec* on stdin: the session's local id, the
command-line options its inputs are resolved from (as ``prompt --session`` resolves them),
the permission policy for the client services and ``keep_alive``. It answers one line on
stdout — ``{"t": "ready"}``, ``{"t": "exists"}`` (another host has the session) or
``{"t": "error", "exit": N, "message": …}`` — then stdout is closed; its log is stderr.

The conversation with a client (see :mod:`acpcli.session.hostwire.channel`)::

    client                          host
    hello {pid, role}        →
                             ←      ready {pid, session, agent, state}   (state: to a watcher)
    prompt {text, settings, wait, grant, stdin?, mentions?, attach?} →
                                                             (grant: the sender's policy, below;
                                                              stdin: text piped beside the prompt;
                                                              mentions false: @path attaches nothing;
                                                              attach: files to send, absolute paths)
                             ←      queued {ahead}            (turns before this one; wait false and
                                                               a turn ahead: error {exit 18} instead)
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
    stop {why}               →                                (end the host: the agent is stopped; why: stop, close, rm)
                             ←      stopping {why}            (to it and to watchers; queued prompts: withdrawn)
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

import errno
import json
import logging
import math
import os
import re
import stat
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from acpcli.errors import AcpcliError, CapabilityMissing, ExitCode
from acpcli.host.hostlog import HostLog
from acpcli.session.control import TurnControl
from acpcli.session.hostwire import address
from acpcli.session.hostwire.channel import Budget, Channel, same_user
from acpcli.session.hostwire.messages import (
    MAX_CLIENT_MESSAGE,
    ChannelClosed,
    encoded,
    host_timeout,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from anyio.abc import SocketStream

    from acpcli.history.eventlog import EventWriter
    from acpcli.services.permissions import Grant
    from acpcli.services.requests import TurnPolicy
    from acpcli.session.conversation import Conversation
    from acpcli.session.feed import SessionFeed
    from acpcli.session.link import AgentLink

log = logging.getLogger("acpcli.host")

CANCELLED = {"outcome": {"outcome": "cancelled"}}

#: Messages a slow client may have waiting before it is dropped (it cannot hold the turn up).
_CLIENT_BACKLOG = 200_000
#: Bytes a slow client may have waiting (beyond the message it is being sent) before it is
#: dropped. Clients share the bytes of an update, so this bounds each, not their sum.
_CLIENT_BACKLOG_BYTES = 256 * 1024 * 1024
#: Bytes all clients together may have sent of messages not yet whole: more, and the client
#: whose bytes do not fit is dropped (the largest legal message fits alone).
_INBOX_BUDGET = 2 * MAX_CLIENT_MESSAGE
#: Connections served at once, at most (and never so many that the host runs out of files).
_MAX_CONNECTIONS = 128
#: File descriptors kept free for the host's own work (its logs, locks, the index).
_SPARE_FILES = 32
#: Prompts the queue holds at most, and characters of their text (a client that floods the
#: host with prompts is told the queue is full).
_QUEUE_MAX = 1000
_QUEUE_BYTES = 64 * 1024 * 1024
#: How a host that is ending answers a prompt: nothing was sent; start a new host.
ENDING = {"t": "ending"}


def _connection_cap() -> int:
    """:data:`_MAX_CONNECTIONS`, or fewer when the open-files limit is low."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return _MAX_CONNECTIONS
    if soft == resource.RLIM_INFINITY:
        return _MAX_CONNECTIONS
    return max(2, min(_MAX_CONNECTIONS, (soft - _SPARE_FILES) // 2))


@dataclass(eq=False)
class Client:
    channel: Channel
    pid: int | None = None
    role: str = "prompt"
    outbox: Any = None  # the send side of its queue (encoded messages)
    gone: anyio.Event = field(default_factory=anyio.Event)
    lingering: bool = False  # its turn is over, and it still takes the updates after it
    backlog: int = 0  # bytes in its outbox

    def post(self, message: dict[str, Any] | bytes) -> None:
        """Queue ``message`` (or its :func:`~acpcli.session.hostwire.messages.encoded` bytes) for this
        client without waiting (a client that falls too far behind is dropped: it cannot
        hold the turn up)."""
        if self.gone.is_set():
            return
        data = message if isinstance(message, bytes) else encoded(message)
        if self.backlog and self.backlog + len(data) > _CLIENT_BACKLOG_BYTES:
            log.warning("dropping client %s: %d bytes behind", self.pid, self.backlog)
            self.gone.set()
            return
        try:
            self.outbox.send_nowait(data)
        except anyio.WouldBlock:
            log.warning("dropping client %s: %d messages behind", self.pid, _CLIENT_BACKLOG)
            self.gone.set()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.gone.set()
        else:
            self.backlog += len(data)


@dataclass(eq=False)
class Turn:
    client: Client
    text: str
    settings: list[tuple[str, str]]
    cancelled: bool = False
    wait: bool = True  # False (--no-wait): exit 18 rather than wait for another command's turn
    raw: bool = False  # --raw: the turn's wire frames (redacted) go to its client too
    grant: Grant | None = None  # its sender's policy for files and terminals (None: the strictest)
    log_file: str | None = None  # --log-file of the client's command (absolute): the turn's frames go there
    checkpoints: bool = True  # --no-checkpoints of the client's command: none around this turn
    wire_log: Any = None  # the WireTap on it, while the turn runs
    #: The answer of a prompt its client sent into the previous turn ("send now" to an agent
    #: with promptQueueing): this turn waits for it instead of sending a prompt.
    joined: Any = None
    piped: str | None = None  # text piped on its sender's standard input, sent as context
    #: ``@path`` in the text attaches the file (the CLI's way); the Python API sends False, and
    #: the files to attach by name (absolute paths) in ``attach``.
    mentions: bool = True
    attach: list[str] = field(default_factory=list)
    #: Its control (:mod:`acpcli.session.control`): a cancel with a grace stops an agent still in it.
    control: TurnControl = field(default_factory=TurnControl)


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
        if turn is None:
            return
        if turn.wire_log is not None:  # the turn's own --log-file (redacted by the tap)
            turn.wire_log.sent(frame) if direction == "send" else turn.wire_log.received(frame)
        if not turn.raw:
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
        self.live: SessionFeed | None = None
        self.agent_label = ""
        self.turns_run = 0
        self.index: Any = None  # the host's index, once open
        self._tasks: Any = None  # the serving task group, for background work
        self.frames: FrameTap | None = None  # the host's wire tap, once the agent is linked
        #: The clients that asked the host to stop: told what could not be saved, at the end.
        self.stoppers: list[Client] = []
        self.unsaved_told = 0  # of the index's unsaved updates, those a client was told of

        self.connections = 0  # being served
        self._socket: Any = None  # its path while it is ours to remove
        self.inbox = Budget(_INBOX_BUDGET)  # what they hold of messages not yet whole
        #: Set once the host is ending: "retry" (keep-alive expired, the agent went away: a
        #: prompt that comes now is answered ``ending`` and goes to a new host) or "stopped"
        #: (``stop``, ``close``: the prompts still queued are not sent).
        self.ending: str | None = None
        self._inputs: Any = None  # the session's roots, for a prompt sent into a turn
        #: A prompt sent into the running turn (promptQueueing): its client, text and answer,
        #: the client's next turn once this one ends (:meth:`_now`).
        self._joined: tuple[Client, str, Any] | None = None
        #: When the last turn ended, if the agent may still send updates of it (:meth:`_late_quiet`).
        self._late_since: float | None = None

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
        data = encoded(message)  # once, however many clients take it
        for client in list(self.clients):
            # (a client whose turn is over takes what comes after it, until the next turn starts)
            if client is current or client.role == "attach" or (client.lingering and current is None):
                client.post(data)

    def note(self, text: str) -> None:
        if self.current is not None:
            self.current.client.post({"t": "note", "text": text})

    def touch(self) -> None:
        self.last_activity = time.monotonic()
        self.wakeup.set()

    async def serve_client(self, stream: SocketStream) -> None:
        """One connection, to its end. Nothing a client does (leaving mid-write, sending
        what it should not) reaches the host: the client is dropped, its turn cancelled."""
        self.connections += 1
        try:
            await self._serve_client(stream)
        except Exception:  # (an exception group of a closed channel, a bug): the client's, never the host's
            log.exception("dropped a client")
        finally:
            self.connections -= 1

    async def _serve_client(self, stream: SocketStream) -> None:
        if not same_user(stream):
            log.warning("refused a connection from another user")
            await stream.aclose()
            return
        channel = Channel(stream, limit=MAX_CLIENT_MESSAGE, budget=self.inbox)
        send, receive = anyio.create_memory_object_stream[bytes](_CLIENT_BACKLOG)
        client = Client(channel, outbox=send)
        patience = host_timeout()  # as long as a client waits for us
        try:
            async with anyio.create_task_group() as tg:

                async def pump() -> None:
                    try:
                        async with receive:
                            async for data in receive:
                                client.backlog -= len(data)
                                await channel.send_bytes(data)
                    except ChannelClosed:  # it left while we wrote to it
                        pass
                    finally:
                        client.gone.set()

                async def until_gone() -> None:
                    await client.gone.wait()
                    tg.cancel_scope.cancel()

                async def hello_in_time() -> None:  # a connection that says nothing holds no slot for long
                    await anyio.sleep(patience)
                    if not channel.received:
                        log.warning("dropping a connection that said nothing for %g s", patience)
                        client.gone.set()

                tg.start_soon(pump)
                tg.start_soon(until_gone)
                tg.start_soon(hello_in_time)
                try:
                    await self._converse(client)
                except ChannelClosed:
                    pass
                except Exception:  # a client that says what it should not is dropped, never the host
                    log.exception("dropping a client whose message could not be handled")
                client.gone.set()
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
            if client in self.clients and kind != "status":  # (a client's "are you there?" is no activity)
                self.touch()
            if kind == "prompt" and self.ending is not None:
                client.post(ENDING)  # nothing of it was sent: the client starts a new host
            elif kind == "prompt" and self._queue_full(message):
                client.post({
                    "t": "error", "exit": int(ExitCode.BUSY),
                    "message": "the session's queue is full: send the prompt when its turns have run",
                })
            elif kind == "prompt":
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
                wait = message.get("wait") is not False
                if not wait and ahead:  # --no-wait: another command's turn runs (or waits): busy, at once
                    client.post(_error(self._busy()))
                    continue
                self.queue.append(
                    Turn(
                        client, text, [(str(k), str(v)) for k, v in settings], wait=wait,
                        raw=message.get("raw") is True, grant=Grant.read(message.get("grant")),
                        log_file=message.get("log_file") if isinstance(message.get("log_file"), str) else None,
                        checkpoints=message.get("checkpoints") is not False,
                        piped=piped if isinstance(piped, str) else None,
                        mentions=message.get("mentions") is not False,
                        attach=[a for a in message.get("attach") or [] if isinstance(a, str)],
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
                self.stoppers.append(client)  # told at the end what could not be saved
                client.post({"t": "stopping"})
                why = message.get("why") if message.get("why") in ("stop", "close", "rm") else "stop"
                self._tell_others(client, {"t": "stopping", "why": why})  # attached terminals: an end asked for, not a crash
                for queued in [t for t in self.queue if t.client is not client]:
                    # never to run: this host ends (a terminal's line comes back to its input
                    # line; a command is told its prompt was not sent, exit 20)
                    queued.client.post({"t": "withdrawn"} if queued.client.role == "attach" else _STOPPED)
                self.queue.clear()
                self.stopping.set()
                self.wakeup.set()
                if self.current is not None and self.live is not None:
                    self.live.want_cancel()  # the turn ends first (cancelled), then the host

    def _busy(self) -> AcpcliError:
        """What a ``--no-wait`` prompt is told while a turn runs or waits in this host: the
        client of the turn ahead of it named, as a command without a host names a writer."""
        from acpcli.errors import SessionBusy
        from acpcli.history.lock import busy_message

        ahead = self.current if self.current is not None else self.queue[0] if self.queue else None
        return SessionBusy(busy_message(self.session_id, ahead.client.pid if ahead is not None else None))

    def _queue_full(self, message: dict[str, Any]) -> bool:
        """Whether queuing the prompt ``message`` would make the queue hold more than
        :data:`_QUEUE_MAX` prompts or :data:`_QUEUE_BYTES` of their text."""
        text = message.get("text")
        size = len(text) if isinstance(text, str) else 0
        return len(self.queue) >= _QUEUE_MAX or size + sum(len(turn.text) for turn in self.queue) > _QUEUE_BYTES

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
        if kill_after is not None:
            current.control.cancelled(time.monotonic(), kill_after)  # its turn stops the agent then
        await self.link.cancel(self.live)

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
        from acpcli.wire.negotiate import send_now_way

        features = {f.name: getattr(link.features, f.name) for f in fields(link.features) if f.name != "raw"}
        return {
            "features": features,
            "send_now": send_now_way(link.features.raw),  # how a prompt goes into a running turn
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
            elif op == "now":
                value = await self._now(client, str(message.get("text") or ""))
            else:
                raise UsageError(f"the host does not know the call {op!r}")
        except AcpcliError as err:
            client.post({**_error(err), "t": "failed", "id": call_id})
            return
        client.post({"t": "result", "id": call_id, "value": value})

    async def _now(self, client: Client, text: str) -> str:
        """"Send now" (Alt-Enter, ``/now``) from the client whose turn runs: the prompt goes
        into that turn as the agent takes one -- ``_session/steering`` (the agent's outcome),
        or claude's promptQueueing (``joined``: its answer is the client's next turn, run
        before anything queued). ``ended`` when that turn is over (the client queues it)."""
        import asyncio

        from acpcli.services.mentions import build_prompt
        from acpcli.wire.negotiate import QUEUEING, STEERING, send_now_way

        turn, link, live, inputs = self.current, self.link, self.live, self._inputs
        if turn is None or turn.client is not client or link is None or live is None or inputs is None:
            return "ended"
        way = send_now_way(link.features.raw)
        if way not in (STEERING, QUEUEING):
            return "unsupported"
        blocks = build_prompt(text, inputs.cwd, [inputs.cwd, *inputs.additional_directories], link.features, strict=False)
        if way == STEERING:
            return await link.steer(live, blocks)
        if self._joined is not None:
            return "waiting"  # one already waits to join this turn
        self._joined = (client, text, asyncio.get_running_loop().create_task(link.send_during_turn(live, blocks)))
        return "joined"

    # -- permissions -----------------------------------------------------------------------

    async def decide(self, live: SessionFeed, params: dict[str, Any]) -> dict[str, Any]:
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

    async def elicit(self, live: SessionFeed | None, request: Any) -> dict[str, Any] | None:
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

    async def _record_when_free(self, live: SessionFeed, update: dict[str, Any]) -> None:
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
    def _record_local(live: SessionFeed, update: dict[str, Any]) -> None:
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
        from acpcli.history.guarded import open_index
        from acpcli.processes.supervisor import Supervisor
        from acpcli.session.attach import attach, continued_by
        from acpcli.session.inputs import Options, for_prompt

        options = Options(**_options(self.spec.get("options") or {}))
        making = self.spec.get("command") == "new"
        asked = self.spec.get("command") if self.spec.get("command") in ("load", "resume") else None
        if making:
            inputs = options.inputs()
        elif asked is not None:  # `load`/`resume --keep-alive`: as those commands resolve it
            from acpcli.session.inputs import for_reattach

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
                    from acpcli.session.agent import agent_label
                    from acpcli.session.conversation import Conversation

                    self.agent_label = agent_label(inputs.agent, link.features)
                    conversation = Conversation(link, live, index, writer, self.agent_label)
                    return await self._serve(conversation, inputs, report)
            finally:
                from acpcli.history.guarded import unsaved_error

                writer.close()
                index.close()
                lost = unsaved_error(index)  # to the log (stderr may be a full disk's file)
                if lost is not None:
                    log.error("%s", lost)

        return await supervisor.run(main)

    def _link(self, inputs: Any, run: Any) -> Any:
        from acpcli.config import step_timeout
        from acpcli.services.permissions import Refusals
        from acpcli.services.requests import TurnPolicy
        from acpcli.session.agent import agent_stderr_log, env_extra
        from acpcli.session.link import open_link
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
            tap=self._frames_tap(wire_log),
            turns=self.turn_policy,
            refusals=refusals,
            step_timeout=step_timeout(flag=self.spec.get("timeout")),
        )

    def _frames_tap(self, wire_log: Any) -> FrameTap:
        self.frames = FrameTap(self, wire_log)
        return self.frames

    async def _serve(self, conversation: Conversation, inputs: Any, report: Any) -> int:
        path = address.clear_socket(self.session_id)  # stale: we hold the host lock, so no live host listens there
        try:
            listener = await anyio.create_unix_listener(path, mode=0o600)
        except OSError as err:
            raise address.unusable(path, err) from None
        self._socket = path
        if self.lock is not None and self.link is not None:  # for `stop`, should this host stop answering
            address.describe(self.lock, agent_pid=getattr(getattr(self.link, "process", None), "pid", None))
        try:
            # a session made or loaded on a full disk: said as without a host (exit 16)
            report({"t": "ready", **self.status(), "verdicts": self._unsaved(conversation.index, 0)})
            async with anyio.create_task_group() as tg:
                self._tasks = tg

                async def accept() -> None:
                    async with listener:
                        await self._accept(listener, tg)

                tg.start_soon(accept)
                await self._turns(conversation, inputs)
                await self._late_quiet(conversation)
                self._end(self.ending or "stopped")
                await self._tell_stoppers(conversation)
                await self._say_goodbye()
                tg.cancel_scope.cancel()
        finally:
            self._unlink_socket()
        return 0

    async def _accept(self, listener: Any, tg: Any) -> None:
        """Serve each connection in a task of its own. Past the connection cap, or when the
        host runs out of file descriptors, the connection is refused with one line (the
        client says it) and the host serves on."""
        cap = _connection_cap()
        spare: int | None = _spare_fd()
        warned = 0.0
        while True:
            try:
                stream = await listener.accept()
            except anyio.BrokenResourceError as err:
                cause = err.__cause__
                if not isinstance(cause, OSError) or cause.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED):
                    raise
                if time.monotonic() - warned > 10:
                    warned = time.monotonic()
                    log.warning("refusing connections: %s", cause)
                if spare is not None:  # a descriptor freed for the one connection to refuse
                    os.close(spare)
                    _refuse_raw(listener)
                    spare = _spare_fd()
                await anyio.sleep(0.05)
                continue
            if self.connections >= cap:
                if time.monotonic() - warned > 10:
                    warned = time.monotonic()
                    log.warning("refusing connections: %d are served already", self.connections)
                tg.start_soon(_refuse, stream)
                continue
            tg.start_soon(self.serve_client, stream)

    async def _late_quiet(self, conversation: Conversation) -> None:
        """Ending soon after a turn the agent may still send updates of (claude's background
        subagents): what it sends until it has been quiet a moment is stored before the agent
        is stopped, as a one-shot prompt without a host waits for it
        (:func:`~acpcli.session.turn.collect_late`, :data:`~acpcli.session.turn.LATE_LIMIT`
        at most from the turn's end). A warm prompt does not wait for them: the host stores
        them as they come while it serves, and attached terminals draw them."""
        from acpcli.session.turn import LATE_LIMIT, collect_late

        since, self._late_since = self._late_since, None
        left = LATE_LIMIT - (time.monotonic() - since) if since is not None else 0.0
        if left > 0:
            await collect_late(conversation.agent_link, conversation.live, "end_turn", limit=left)

    def _end(self, why: str) -> None:
        """The host is ending (see :attr:`ending`): it takes no more prompts, and its socket
        goes at once, so that the next command starts a new host rather than reach this one."""
        if self.ending is None:
            self.ending = why
        self._unlink_socket()

    def _unlink_socket(self) -> None:
        path = self._socket
        if path is None:
            return
        self._socket = None
        try:
            path.unlink()
        except OSError:
            pass

    @staticmethod
    async def _claim(session_id: str, *, wait: bool, notice: Any) -> Any:
        """The session's writer lock (:mod:`acpcli.history.lock`): a command without a host (a
        `--keep-alive 0` prompt, a REPL) may be writing a turn of it; wait for it, or with
        ``wait`` False raise SessionBusy (exit 18 for the client)."""
        from acpcli.history.lock import SessionLock
        from acpcli.session.turn import claim

        lock = SessionLock(session_id)
        await claim(lock, wait=wait, notice=notice)
        return lock

    async def _say_goodbye(self, seconds: float = 2.0) -> None:
        """Ending: what each client is still to be told (the last turn's end or error) goes
        out before the connections close. A prompt still queued was not sent: when the host
        ends on its own (keep-alive, the agent gone) its client is told ``ending`` and starts
        a new host; on ``stop`` it is told it was not sent."""
        stopped = _STOPPED
        waiting = {turn.client for turn in self.queue}
        self.queue.clear()
        for client in list(self.clients):
            if client in waiting:
                client.post(stopped if self.ending == "stopped" else ENDING)
            elif client.role == "prompt" and not client.lingering:
                client.post(ENDING)  # a prompt it sent may be unread: it was not sent
            client.outbox.close()  # its pump sends what is queued, then lets it go
        with anyio.move_on_after(seconds):
            while any(not client.gone.is_set() for client in self.clients):  # noqa: ASYNC110 - a few pumps draining
                await anyio.sleep(0.02)

    async def _turns(self, conversation: Conversation, inputs: Any) -> None:
        """Run queued turns in order; return when the host should end."""
        while not self.stopping.is_set():
            if conversation.agent_link.conn.closed or _exited(conversation.agent_link):
                with anyio.move_on_after(2):  # what it said before it went is read first
                    while not conversation.agent_link.conn.closed:  # noqa: ASYNC110 - the reader's flag, for at most 2 s
                        await anyio.sleep(0.02)
                log.info("the agent went away: ending")
                self._end("retry")  # the next command (and the prompts queued) start a new host
                return
            if self.queue:
                turn = self.queue.popleft()
                if turn.client.gone.is_set():
                    continue
                await self._run_turn(conversation, inputs, turn)
                continue
            unsaved = self._holds_unsaved(conversation)  # the disk is tried again meanwhile
            if not self.clients and time.monotonic() - self.last_activity >= self.keep_alive and not unsaved:
                log.info("no turn and no client for %.0f s: ending", self.keep_alive)
                self._end("retry")
                return
            self.wakeup = anyio.Event()
            wait = self.keep_alive - (time.monotonic() - self.last_activity) if not self.clients and not unsaved else math.inf
            with anyio.move_on_after(min(max(wait, 0.05), 1.0)):  # and look at the agent each second
                await self.wakeup.wait()

    def _turn_log(self, turn: Turn) -> Any:
        """The wire log of ``turn``'s ``--log-file`` (``ACPCLI_LOG_FILE``), opened now: the
        path the client's command resolved against its own working directory (the same user:
        the socket lets no other in). None when it has none, or when it is the file this host
        logs every frame to already. :class:`~acpcli.errors.OutputError` (exit 17) when it
        cannot be opened, or :class:`~acpcli.errors.UsageError` for a relative path."""
        from acpcli.errors import OutputError, UsageError
        from acpcli.wire.wiretap import WireTap

        if turn.log_file is None:
            return None
        if not os.path.isabs(turn.log_file):
            raise UsageError(f"the host takes an absolute --log-file path, not {turn.log_file!r}")
        own = self.frames.log if self.frames is not None else None
        try:
            if own is not None and os.path.samefile(own.path, turn.log_file):
                return None
        except OSError:
            pass
        try:
            kind = os.stat(turn.log_file).st_mode
        except OSError:
            kind = 0  # made by the open below
        if stat.S_ISFIFO(kind) or stat.S_ISSOCK(kind):  # its reader would hold every client's turn up
            raise OutputError(
                f"cannot write the wire log {turn.log_file}: a FIFO or socket, which the session host does not wait on",
                hint=address.NO_HOST_HINT,
            )
        wire_log = WireTap(turn.log_file)
        try:
            wire_log.open()
        except OSError as err:
            raise OutputError(f"cannot write the wire log {wire_log.path}: {err.strerror or err}") from None
        return wire_log

    @staticmethod
    def _logged(turn: Turn) -> list[dict[str, Any]]:
        """The turn's wire log could not all be written (a full disk): exit 17 and its line,
        as without a host (``N frames not logged``); [] when it was."""
        from acpcli.errors import ExitCode

        wire_log = turn.wire_log
        if wire_log is None:
            return []
        wire_log.close()  # what its buffer holds is written now, or counted
        if wire_log.failure is None:
            return []
        lost = wire_log.lost
        message = f"{wire_log.failure} ({lost} frame{'s' if lost != 1 else ''} not logged)"
        return [{"t": "error", "exit": int(ExitCode.OUTPUT), "message": message, "hint": None}]

    def _holds_unsaved(self, conversation: Conversation) -> bool:
        """Between turns: the index is in memory after a storage failure (what it holds is
        on no disk). The disk is tried again when due; until it takes what memory holds, the
        host outlives its keep-alive rather than drop it (``stop`` says what is lost)."""
        from acpcli.history.guarded import SafeIndex

        index = conversation.index
        if not isinstance(index, SafeIndex) or not index.in_memory:
            return False
        index.may_write()  # writes it back when the disk is due for a try and takes it
        return index.in_memory

    async def _tell_stoppers(self, conversation: Conversation) -> None:
        """Ending on ``stop``: what the host holds that could not be saved is tried on the
        disk once more, and each client that asked for the stop is told what is lost
        (``stored`` with its exit code and line; none when all is saved) before the
        connections close."""
        if not self.stoppers:
            return
        from acpcli.history.guarded import SafeIndex, unsaved_error

        verdicts: list[dict[str, Any]] = []
        index = conversation.index
        if isinstance(index, SafeIndex):
            conversation.flush()
            index.retry_disk()
            if index.in_memory or _unsaved_count(index) > self.unsaved_told:
                error = unsaved_error(index)
                if error is not None:
                    log.error("stopped with what could not be saved: %s", error.message)
                    verdicts.append(_error(error))
        for client in self.stoppers:
            client.post({"t": "stored", "verdicts": verdicts})
            client.outbox.close()  # its pump sends it, then lets the client go
        with anyio.move_on_after(2.0):
            while any(not client.gone.is_set() for client in self.stoppers):  # noqa: ASYNC110 - a few pumps draining
                await anyio.sleep(0.02)

    def _unsaved(self, index: Any, before: int) -> list[dict[str, Any]]:
        """After a turn: what of it could not be saved, as the client reports it (its exit
        code and line, as without a host: :func:`~acpcli.history.guarded.unsaved_error`).
        The disk is tried again first: what memory holds since an earlier failure is written
        back when it can be. Said when the turn's updates are not on the disk (the index is
        in memory) or the turn cost updates; [] when all is saved."""
        from acpcli.history.guarded import SafeIndex, unsaved_error

        if not isinstance(index, SafeIndex):
            return []
        index.retry_disk()
        if not index.in_memory and _unsaved_count(index) <= before:
            return []
        error = unsaved_error(index)
        if error is None:
            return []
        self.unsaved_told = _unsaved_count(index)
        return [_error(error)]

    async def _run_turn(self, conversation: Conversation, inputs: Any, turn: Turn) -> None:
        from acpcli.errors import leaf_error
        from acpcli.services.mentions import build_prompt
        from acpcli.session.turn import late_updates_possible, run_turn

        link, live = conversation.agent_link, conversation.live
        self.current = turn
        self._inputs = inputs
        client = turn.client
        checkpoint: Callable[[str], None] | None = None  # set when the turn went through
        for other in self.clients:
            other.lingering = False  # what comes from now on is this turn's
        try:
            turn.wire_log = self._turn_log(turn)
        except AcpcliError as err:  # refused before the turn starts, as without a host
            client.post(_error(err))
            self.current = None
            self.touch()
            return
        try:
            lock = await self._claim(
                self.session_id, wait=turn.wait, notice=lambda line: client.post({"t": "note", "text": line})
            )
        except AcpcliError as err:  # --no-wait on a session another command is writing
            if turn.wire_log is not None:
                turn.wire_log.close()
            client.post(_error(err))
            self.current = None
            self.touch()
            return
        try:  # the files the prompt mentions, read here where the agent runs (its client reads none)
            blocks = [] if turn.joined is not None else build_prompt(
                turn.text, inputs.cwd, [inputs.cwd, *inputs.additional_directories], link.features, strict=False,
                piped=turn.piped, mentions=turn.mentions, attach=turn.attach,
            )  # fmt: skip
        except AcpcliError as err:  # a mention outside the roots: refused before the turn starts, nothing sent
            lock.release()
            if turn.wire_log is not None:
                turn.wire_log.close()
            client.post(_error(err))
            self.current = None
            self.touch()
            return
        unsaved_before = _unsaved_count(conversation.index)
        # what the client's own store cannot know from this turn's updates alone
        client.post({"t": "start", "title": live.store.title or _recorded_title(conversation.index, self.session_id)})
        self._tell_others(client, {"t": "other-turn", "pid": client.pid, "text": turn.text})
        try:
            for key, value in turn.settings:
                await link.set_by_name(live, key, value)
            if turn.settings:
                self._state_changed()

            def said(line: str) -> None:  # (a checkpoint's line: to the turn's client, and the log)
                log.info("%s", line)
                client.post({"t": "note", "text": line})

            # the host's starter's --no-checkpoints, else this turn's sender's
            live.checkpoints = None if turn.checkpoints and self.spec.get("checkpoints") is not False else False
            try:  # the files before the session's first turn, the turn under its control (no Ctrl-C here)
                stop = await run_turn(
                    link, live, blocks, notice=said, sent=turn.joined, interrupts=False, control=turn.control,
                    checkpoint_after=False,  # (taken below, once the turn's client has its answer)
                )
            except BaseException as caught:  # the turn's task group wraps what it raises
                failure = leaf_error(caught)
                if failure is caught or not isinstance(failure, AcpcliError):
                    raise
                raise failure from None
            live.recorder.flush() if live.recorder is not None else None
            conversation.after_turn()
            for warning in live.take_warnings():  # the context nearly full: the client says it
                client.post({"t": "note", "text": f"acpcli: warning: {warning}"})
            # "late": the agent may still say something of this turn (stored here as it comes:
            # the client returns now; an ending host waits for it, :meth:`_late_quiet`)
            late = client.lingering = late_updates_possible(link, live, stop)
            self._late_since = time.monotonic() if late else None
            client.post({
                "t": "end", "stop": stop, "interrupted": live.interrupted, "late": late,
                "verdicts": self._logged(turn) + self._unsaved(conversation.index, unsaved_before),
            })
            self._tell_others(client, {"t": "other-end", "stop": stop})
            checkpoint = said  # (taken below, once the turn is over)
        except AcpcliError as err:
            log.info("turn failed: %s", err)
            conversation.title_from_prompt()  # a failed first prompt still titles the session
            if live.recorder is not None:
                live.recorder.flush()
            # what was not saved: a warning line beside the error, as without a host
            client.post({**_error(err), "verdicts": self._logged(turn) + self._unsaved(conversation.index, unsaved_before)})
            self._tell_others(client, {"t": "other-end", "stop": None, "message": err.message})
        finally:
            if live.recorder is not None:
                live.recorder.flush()  # the turn's events are in before the next writer's
            if turn.wire_log is not None:
                turn.wire_log.close()
                turn.wire_log = None
            lock.release()
            self.turns_run += 1
            self.current = None
            live.interrupted = False
            joined, self._joined = self._joined, None
            if joined is not None:  # the prompt sent into this turn: its client's turn comes next
                self.queue.appendleft(Turn(joined[0], joined[1], [], joined=joined[2]))
            self.touch()
        if checkpoint is not None:
            # What the turn did to the files, once its command has its answer (a warm prompt
            # returns at "end") and the turn is over (a close may come now); before the next
            # turn starts (this task runs the turns one after another).
            from acpcli.session.checkpointing import checkpoint_after_turn

            await checkpoint_after_turn(live, turn.text, checkpoint)


#: What a command whose prompt was still queued when the host was stopped is told.
_STOPPED = {
    "t": "error", "exit": int(ExitCode.HOST_LOST),
    "message": "the session host was stopped before this prompt's turn: it was not sent",
}


def _unsaved_count(index: Any) -> int:
    """Session updates the index could not save so far (0 for an index that never fails)."""
    return int(getattr(index, "lost", 0) or 0)


def _exited(link: Any) -> bool:
    """Whether the agent process has exited, before its connection says so (its end of the
    pipe may not be read yet): a prompt is then not sent to it, but to a new host's agent.
    Its exit status stays for the transport to collect (``WNOWAIT``)."""
    process = getattr(link, "process", None)
    if getattr(process, "returncode", None) is not None:
        return True
    pid = getattr(process, "pid", None)
    if not isinstance(pid, int) or not hasattr(os, "waitid"):
        return False
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except OSError:
        return False


def _spare_fd() -> int | None:
    """A descriptor held in reserve, given up to refuse one connection when the host is out
    of them (None when there is none to hold)."""
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def _too_many() -> bytes:
    """What a refused connection is told."""
    return encoded({
        "t": "error", "exit": int(ExitCode.BUSY),
        "message": "the session host has too many connections: try again when some have ended",
    })


async def _refuse(stream: Any) -> None:
    """A connection past the cap: one line that says so, then closed."""
    with anyio.move_on_after(1):
        try:
            await stream.send(_too_many())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
    with anyio.CancelScope(shield=True):
        await stream.aclose()


def _refuse_raw(listener: Any) -> None:
    """Accept one waiting connection on the listener's own socket and refuse it at once."""
    from anyio.abc import SocketAttribute

    try:
        sock, _ = listener.extra(SocketAttribute.raw_socket).accept()
    except OSError:
        return
    try:
        sock.setblocking(False)
        sock.send(_too_many())
    except OSError:
        pass
    finally:
        sock.close()


def _name_log(path: Any, session_id: str) -> None:
    """A new session's host log, started under a name of its own, takes the session's
    (``host-ID.log``) once the agent has named it: renamed, the open file goes on."""
    if not isinstance(path, str):
        return
    target = address.host_log(session_id)
    try:
        if not target.exists():
            os.rename(path, target)
            if _LOG is not None:
                _LOG.renamed(target)  # its cap rotates it under the new name
    except OSError as err:
        log.warning("the log keeps its name %s: %s", path, err)


class Masking(logging.Formatter):
    """The host log's formatter: secrets never reach the log unmasked. Masked wherever they
    appear: the values of the environment variables whose names look secret
    (:func:`acpcli.wire.redact.secret_name`: the agent's API keys; not ``PWD``, the working
    directory), what :func:`acpcli.wire.redact.redact_server` masks of the session's MCP
    servers (env and header values, secret arguments, URL credentials) -- and of their URLs
    the parts on their own too (the password of ``user:password@``, a bare ``token@``, secret
    query values, as written and percent-decoded), since a message may quote them apart from the
    URL -- and the user-info of any URL in a record (``https://***@host/…``), as the wire log
    has it."""

    def __init__(self, fmt: str) -> None:
        super().__init__(fmt)
        from acpcli.wire.redact import secret_name

        self.secrets: set[str] = {
            value for name, value in os.environ.items()
            if secret_name(name) and name not in _NOT_SECRET and len(value) >= 4
        }

    def learn_servers(self, servers: Any) -> None:
        from acpcli.wire.redact import redact_server

        for server in servers or []:
            if isinstance(server, dict):
                masked = set(_strings(redact_server(server)))
                for text in _strings(server):
                    if text not in masked:
                        self.secrets.update(s for s in (text, *_url_secrets(text)) if len(s) >= 4)
                for entries in (server.get("env"), server.get("headers")):
                    self.secrets.update(s for s in _strings(entries) if len(s) >= 4 and s not in _names(entries))

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        for secret in sorted(self.secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, "***")
        return _USERINFO.sub(r"\1***@", text)


#: Environment variables whose names look secret and are not (``PWD`` holds "pwd").
_NOT_SECRET = frozenset({"PWD", "OLDPWD"})
#: The user-info of a URL anywhere in a line: ``scheme://USER[:PASSWORD]@``.
_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@]+@")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s]+")


def _url_secrets(text: str) -> set[str]:
    """The secret parts of the URLs in ``text``, each as written and percent-decoded: the
    user-info (``user:password``), the password, a bare user-info (a token), the values of
    query and fragment parameters whose names look secret."""
    from urllib.parse import parse_qsl, unquote, urlsplit

    from acpcli.wire.redact import secret_name

    found: set[str] = set()
    for url in _URL_IN_TEXT.findall(text):
        try:
            parts = urlsplit(url)
        except ValueError:
            continue
        netloc = parts.netloc
        if "@" in netloc:
            userinfo = netloc.rsplit("@", 1)[0]
            found.add(userinfo)
            found.add(userinfo.split(":", 1)[1] if ":" in userinfo else userinfo)
        for pairs in (parts.query, parts.fragment):
            found.update(value for name, value in parse_qsl(pairs) if secret_name(name))
    return found | {unquote(part) for part in found}


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


#: The host log's formatter and handler, made by :func:`main`.
_MASK: Masking | None = None
_LOG: HostLog | None = None


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
    from acpcli.env import Environment
    from acpcli.session.context import Invocation

    nowhere = open(os.devnull, "r+", encoding="utf-8")  # noqa: SIM115 - lives as long as the host
    return Invocation(
        env=Environment(stdin=nowhere, stdout=nowhere, stderr=nowhere),
        title=spec.get("title") if isinstance(spec.get("title"), str) else None,
        fs=bool(spec.get("fs", True)), terminal=bool(spec.get("terminal", True)),
        checkpoints=spec.get("checkpoints") is not False,
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
    global _MASK, _LOG
    _MASK = Masking("%(asctime)s %(name)s %(levelname)s %(message)s")
    handler = _LOG = HostLog(sys.stderr)  # capped, repeats left out (acpcli.host.hostlog)
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
    handler.use_file(spec.get("log") or (address.host_log(session_id) if session_id is not None else None))
    host = Host(spec)
    if session_id is not None:  # a new session's lock is taken once the agent names it
        try:
            host.lock = address.take_host_lock(session_id)
            if host.lock is not None:
                address.clear_socket(session_id)  # before the agent starts: nothing in the way
        except AcpcliError as err:  # a read-only home, a directory where the lock goes…
            report(_error(err))
            if host.lock is not None:
                host.lock.release()
            return int(err.exit_code)
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
