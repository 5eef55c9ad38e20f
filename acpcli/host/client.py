"""What a command does to use a live session: find its host, or start one, and talk to it.

:func:`prompt` is ``acpcli prompt --session ID`` with keep-alive on: the prompt goes to the
session's host (started here when there is none: the cold path), and the turn comes back as
the updates the host stored, applied to a store of this command's own and drawn by this
command's own view, in whatever format it was asked for. Exit codes are those of a prompt
without a host, plus :data:`~acpcli.errors.ExitCode.HOST_LOST` when the host is killed
mid-turn.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acpcli.errors import HostLost, HostReported, Interrupted
from acpcli.session.hostwire import address
from acpcli.session.hostwire.messages import (
    PING_AFTER,
    BlockingChannel,
    ChannelClosed,
    apply_event,
    connect_blocking,
    host_timeout,
)
from acpcli.session.hostwire.start import spec_for, start_host

if TYPE_CHECKING:
    from collections.abc import Callable

    from acpcli.history.index import SessionRecord
    from acpcli.model import Store
    from acpcli.session.context import Invocation
    from acpcli.session.inputs import Options

def open_host(session_id: str, make_spec: Callable[[], dict[str, Any]], *, say: Any = None) -> BlockingChannel:
    """A channel to ``session_id``'s host, started from ``make_spec()`` if none is running
    (the spec is made only then: it checks the command line's session options). Two commands
    racing to start one end up with one: the second waits on the first's start, then finds it.
    A host that is ending (its socket gone, its lock still held) is waited for first."""
    path = str(address.socket_path(session_id))
    try:
        return connect_blocking(path)
    except OSError:
        pass
    spec = make_spec()
    error: OSError | None = None
    for _attempt in range(3):
        with address.starting(session_id):
            try:
                return connect_blocking(path)
            except OSError:
                pass
            wait_ended(session_id)
            answer = start_host(spec, say=say)
            if answer.get("t") == "error":
                raise HostReported(str(answer.get("message")), int(answer.get("exit") or 1), hint=answer.get("hint"))
            try:
                return connect_blocking(path)
            except OSError as err:
                error = err
        if answer.get("t") != "exists":  # (exists: a host that was ending when we looked)
            break
    raise HostLost(f"the session host started but cannot be reached: {error}") from None


def wait_ended(session_id: str, pid: int | None = None, seconds: float = 30.0) -> None:
    """Wait (up to ``seconds``) for a host of ``session_id`` that is ending to be gone (its
    lock let go), or for a host to be reachable again; ``pid``: the ending host's."""
    import time

    path = str(address.socket_path(session_id))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        info = address.holder(address.lock_path(session_id))
        if info is None or (pid is not None and info.pid != pid) or _reachable(path):
            return
        time.sleep(0.05)


class _Restart(Exception):
    """The host this command reached is ending and took nothing of its prompt: the prompt
    goes to a new host."""


def hello(channel: BlockingChannel, session_id: str, role: str = "prompt") -> dict[str, Any]:
    """Say hello and read the host's ``ready`` (waiting no longer than
    :func:`~acpcli.session.hostwire.messages.host_timeout`), checking that it holds ``session_id``.
    :class:`_Restart` when the host closed on us first (it was ending)."""
    import time

    from acpcli.errors import ExitCode
    from acpcli.text.safe import safe_line, shown_id

    patience = host_timeout()
    deadline = time.monotonic() + patience
    try:
        channel.send({"t": "hello", "pid": os.getpid(), "role": role})
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise HostLost(
                    f"the session host does not answer (waited {patience:g} s)",
                    hint=f"`acpcli stop {shown_id(session_id)}` ends it; the next command starts a new host",
                )
            ready = channel.receive(timeout=min(left, _TICK * 5))
            if ready is None:
                continue
            if ready["t"] == "ready":
                break
            if ready["t"] == "ending":
                raise _Restart()
            if ready["t"] == "error":  # refused (too many connections)
                raise HostReported(str(ready.get("message")), int(ready.get("exit") or 1), hint=ready.get("hint"))
    except ChannelClosed:
        raise _Restart() from None
    if ready.get("session") != session_id:
        held = ready.get("session")
        raise HostReported(
            f"the host reached for {shown_id(session_id)} holds another session"
            f" ({safe_line(shown_id(held)) if isinstance(held, str) else 'unknown'}): nothing was sent",
            int(ExitCode.DAMAGED),
            hint=f"its socket is {address.socket_path(session_id)}: `acpcli stop --all` ends every host",
        )
    return ready


def join(session_id: str) -> BlockingChannel | None:
    """A channel to ``session_id``'s host when one runs, else None (nothing is started, nor
    made: no host ever ran here without its ``run`` directory)."""
    from acpcli.errors import AcpcliError
    from acpcli.paths import home_dir

    if not (home_dir() / "run").is_dir():
        return None
    try:
        return connect_blocking(str(address.socket_path(session_id)))
    except (OSError, AcpcliError):  # none listening, or none could (run/ unusable: no host ran there)
        return None


def host_log(session_id: str) -> Path:
    """``ACPCLI_HOME/logs/host-<key>.log``: the log of ``session_id``'s hosts."""
    return address.host_log(session_id)


def new_session(options: Options, run: Invocation, *, agent: Any, keep_alive: float) -> int:
    """``acpcli new --no-repl`` with keep-alive on: a host makes the session and keeps its
    agent for the prompts that follow; its id is printed as without a host."""
    from acpcli.errors import ExitCode, UnprintableId
    from acpcli.text.safe import safe_line

    unsaved: list[dict[str, Any]] = []
    session_id = hosted_session(options, run, agent=agent, keep_alive=keep_alive, unsaved=unsaved)
    if safe_line(session_id) != session_id:
        raise UnprintableId(session_id)
    run.env.stdout.write(session_id + "\n")
    run.env.stdout.flush()
    reported_unsaved(unsaved, ending_well=True)  # made on a full disk: exit 16, as without a host
    return int(ExitCode.OK)


def hosted_session(
    options: Options, run: Invocation, *, agent: Any, keep_alive: float, unsaved: list[dict[str, Any]] | None = None
) -> str:
    """A new session made by a host of its own, which keeps the agent; the session's id.
    ``unsaved``: a list to add what the host could not save of it to (a full disk)."""
    from acpcli.session.policy import decider_for

    policy = decider_for(run, agent).policy
    with _starting(run, agent):
        answer = start_host(spec_for(None, options, policy, run, keep_alive))
    if answer.get("t") != "ready" or not isinstance(answer.get("session"), str):
        raise HostReported(str(answer.get("message")), int(answer.get("exit") or 1), hint=answer.get("hint"))
    if unsaved is not None:
        unsaved.extend(v for v in answer.get("verdicts") or [] if isinstance(v, dict))
    return str(answer["session"])


def hosted_reattach(
    command: str, session_id: str, options: Options, run: Invocation, *, agent: Any, keep_alive: float
) -> bool:
    """``load``/``resume ID`` with keep-alive on: a host that did the load (its replay
    stored) or the resume keeps the agent; a session whose host runs already is joined
    instead (no second agent). Whether a host was started here."""
    from acpcli.session.policy import decider_for

    path = str(address.socket_path(session_id))
    if _reachable(path):
        return False
    spec = spec_for(session_id, options, decider_for(run, agent).policy, run, keep_alive, command)
    with address.starting(session_id), _starting(run, agent):
        if _reachable(path):
            return False
        answer = start_host(spec, say=run.say)
    if answer.get("t") == "error":
        raise HostReported(str(answer.get("message")), int(answer.get("exit") or 1), hint=answer.get("hint"))
    return answer.get("t") == "ready"


@contextlib.contextmanager
def _starting(run: Invocation, agent: Any) -> Iterator[None]:
    """The person's ``starting NAME…`` line while a host starts the agent (as without a host:
    a slow agent's seconds are not a blank screen); gone before what follows is drawn."""
    person = run.person
    if person is None or agent is None:
        yield
        return
    from acpcli.session.agent import starting_name

    person.starting(starting_name(agent))
    try:
        yield
    finally:
        person.starting(None)


def _reachable(path: str) -> bool:
    try:
        connect_blocking(path).close()
    except OSError:
        return False
    return True


def print_stored(session_id: str, run: Invocation) -> None:
    """What ``load --no-repl`` prints: the session's transcript as the store has it (the
    host stored the replay merged with the record, as ``show`` has it)."""
    from acpcli.history.index import Index
    from acpcli.history.records import rebuild
    from acpcli.render import make_view

    with Index.open(read_only=True) as index:
        store = rebuild(index, session_id)
    view = make_view(run.env, final_only=True)
    view.print_store(store)
    view.close()


class Mirror:
    """This command's own copy of the session as its turn arrives from the host: a store and
    the view it feeds (the part of :class:`~acpcli.session.feed.SessionFeed` a command that
    only watches needs; views read ``store`` and ``session_id``)."""

    def __init__(self, session_id: str, store: Store, sink: Any = None) -> None:
        self.session_id = session_id
        self.store = store
        self.sink = sink
        #: What the host could not save of the turn (its ``end``): :func:`reported_unsaved`.
        self.unsaved: list[dict[str, Any]] = []

    def feed(self, update: Any, frame_text: str | None = None, *, local: bool = False) -> None:
        if not isinstance(update, dict):
            return
        change = self.store.apply(update)
        if change is not None and self.sink is not None:
            self.sink.on_change(self, change)


def prompt(
    record: SessionRecord,
    options: Options,
    run: Invocation,
    text: str,
    *,
    output_format: str,
    quiet: bool,
    settings: Sequence[tuple[str, str]] = (),
    keep_alive: float,
    piped: str | None = None,
    channel: BlockingChannel | None = None,
) -> int:
    """One turn on the live session ``record`` (see the module docstring); ``piped``: text
    piped on standard input, sent with the prompt as context (the host builds its block);
    ``channel``: to the session's running host (:func:`join`), else it is found or started."""
    from acpcli.session.agent import AgentChoice
    from acpcli.session.policy import decider_for

    session_id = record.id
    decider = decider_for(run, AgentChoice(record.agent, list(record.argv)))
    if record.state == "closed":  # the host that is started for it reopens it (its attach)
        from acpcli.session.outcome import reopened_line

        run.say(reopened_line(session_id))

    def make_spec() -> dict[str, Any]:
        from acpcli.session.inputs import for_prompt

        for_prompt(options, session_id, False)  # the options checked here, as without a host
        return spec_for(session_id, options, decider.policy, run, keep_alive)

    from acpcli.model import Store
    from acpcli.render import make_view

    if channel is None:
        channel = open_host(session_id, make_spec, say=run.say)
    view: Any
    if run.raw:  # stdout carries the turn's frames, as the host forwards them: nothing else
        from acpcli.render import SilentView

        view = SilentView()
    else:
        view = make_view(run.env, format=output_format, quiet=quiet)
    mirror = Mirror(session_id, Store(), sink=view)
    restarts = 0
    try:
        while True:
            host_pid = None
            try:
                host_pid = hello(channel, session_id).get("pid")
                message: dict[str, Any] = {
                    "t": "prompt", "text": text, "settings": [list(pair) for pair in settings], "wait": run.wait,
                    "raw": run.raw, "grant": grant_of(decider, run), "log_file": _wire_log_path(options),
                    "checkpoints": run.checkpoints,
                }
                if piped is not None:
                    message["stdin"] = piped  # (the host builds its block)
                try:
                    channel.send(message)
                except ChannelClosed:
                    raise _Restart() from None
                stop, interrupted, timed_out = _follow(channel, mirror, view, decider, run)
                break
            except _Restart:  # the host was ending: nothing was sent; a new host takes the prompt
                restarts += 1
                channel.close()
                if restarts > 3:
                    raise HostLost(
                        "the session host kept ending before this prompt's turn: it was not sent",
                        hint="try again; `acpcli sessions --live` shows the session's host",
                    ) from None
                wait_ended(session_id, host_pid if isinstance(host_pid, int) else None)
                channel = open_host(session_id, make_spec, say=run.say)
    finally:
        try:
            view.close()
        finally:
            channel.close()  # a turn still running is cancelled by the host: its client left
    from acpcli.session.outcome import said_anything, turn_exit

    try:
        code = turn_exit(
            stop, run, session_id, interrupted=interrupted, timed_out=timed_out, answered=stop == "cancelled",
            said=said_anything(mirror.store.entries),  # the mirror holds this turn only
        )
    except BaseException:
        reported_unsaved(mirror.unsaved, ending_well=False)
        raise
    reported_unsaved(mirror.unsaved, ending_well=True)
    return code


def _wire_log_path(options: Options) -> str | None:
    """The turn's wire log, as without a host: ``--log-file``, else ``ACPCLI_LOG_FILE``,
    resolved against this command's working directory (the host opens it: its own is not
    this one's)."""
    from acpcli.wire.wiretap import ENV_VAR

    path = os.fspath(options.log_file) if options.log_file is not None else os.environ.get(ENV_VAR) or None
    return os.path.abspath(os.path.expanduser(path)) if path else None


def reported_unsaved(verdicts: Any, *, ending_well: bool) -> None:
    """What the host could not save of this command's turn (a full disk, a read-only home:
    :func:`~acpcli.history.guarded.unsaved_error`), reported as without a host: raised (its
    exit code and one line) when the command is otherwise ending well, else a warning line
    beside the error on its way out."""
    errors = [
        HostReported(str(v.get("message")), int(v.get("exit") or 1), hint=v.get("hint") if isinstance(v.get("hint"), str) else None)
        for v in verdicts or [] if isinstance(v, dict)
    ]
    if not errors:
        return
    first, rest = (errors[0], errors[1:]) if ending_well else (None, errors)
    for error in rest:
        sys.stderr.write(f"acpcli: warning: {error.message}\n")
    if first is not None:
        raise first


def grant_of(decider: Any, run: Invocation) -> dict[str, Any]:
    """What a prompt message says of its sender's policy, for the host to apply to its turn
    (:class:`~acpcli.services.permissions.Grant`): the policy as ``decider`` resolved it
    here, ``--no-fs`` / ``--no-terminal``, whether anybody can be asked here."""
    from acpcli.services.permissions import Grant

    return Grant.of(decider, fs=run.fs, terminal=run.terminal).message()


#: How often the loop looks at signals, the deadline and the view's clock while waiting.
_TICK = 0.1


def _follow(channel: BlockingChannel, mirror: Mirror, view: Any, decider: Any, run: Invocation) -> tuple[str, bool, bool]:
    """Read the host's messages until this command's turn ends: its stop reason, whether it
    was interrupted here, whether it outlasted ``--timeout``, as its
    :class:`~acpcli.session.control.TurnControl` says. Ctrl-C cancels it (a second one soon
    after leaves: the host cancels the turn of a client that left); ``--timeout`` cancels it
    when it has run that long, with the grace for the host to stop an agent that ignores it;
    SIGTERM and SIGHUP leave as the command would without a host (exit 143, 129)."""
    import signal
    import time

    from acpcli.errors import Terminated
    from acpcli.services.permissions import note_on_screen
    from acpcli.session.control import Act, TurnControl
    from acpcli.text.safe import shown_id

    presses: list[float] = []

    def on_interrupt(signum: int, frame: Any) -> None:
        presses.append(time.monotonic())

    def on_stop(signum: int, frame: Any) -> None:
        raise Terminated(signum)

    previous = {sig: signal.signal(sig, handler) for sig, handler in (
        (signal.SIGINT, on_interrupt), (signal.SIGTERM, on_stop), (signal.SIGHUP, on_stop),
    )}
    started = False
    control = TurnControl(run.timeout, kills=False)  # the host keeps the grace: it stops the agent
    frames = None
    if run.raw:
        from acpcli.wire.wiretap import StreamTap

        frames = StreamTap(run.env.stdout)
    handled = 0
    tick = getattr(view, "tick", None)
    patience = host_timeout()
    heard = time.monotonic()
    pinged: float | None = None

    try:
        while True:
            while handled < len(presses):  # Ctrl-C, in the loop rather than in the handler
                handled += 1
                act = control.press(presses[handled - 1])
                if act is Act.LEAVE:
                    raise Interrupted()  # leaving: the host cancels the turn of a client that left
                if act is Act.CANCEL:
                    line = "cancelling… (press Ctrl-C again to leave at once)"
                    if not note_on_screen(view, line, "yellow"):  # drawn by a terminal view, in order
                        run.env.note(line, style="yellow")
                    channel.send({"t": "cancel"})
            if control.due(time.monotonic()) is Act.TIME_OUT:
                channel.send({"t": "cancel", "kill_after": control.grace})
            try:
                message = channel.receive(timeout=_TICK)
            except ChannelClosed:
                raise HostLost(
                    "the session host went away" + (" mid-turn" if started else ""),
                    hint="what arrived before is stored (acpcli show); the next command starts a new host",
                ) from None
            if message is None:
                if started and tick is not None:
                    tick()
                # Is the host still there? It answers `status` at once, whatever its agent
                # does (a turn may be quiet for long): only a host that says nothing at all
                # for `patience` seconds is taken for gone.
                now = time.monotonic()
                if pinged is None and now - heard >= PING_AFTER:
                    channel.send({"t": "status"})
                    pinged = now
                elif pinged is not None and now - pinged >= patience:
                    raise HostLost(
                        f"the session host stopped answering (waited {patience:g} s)"
                        + (" mid-turn" if started else ""),
                        hint=f"what arrived before is stored (acpcli show); `acpcli stop {shown_id(mirror.session_id)}` ends the host",
                    )
                continue
            heard, pinged = time.monotonic(), None
            kind = message["t"]
            if kind == "ending" and not started:  # the host is ending: the prompt was not sent
                raise _Restart()
            if kind == "u":
                apply_event(mirror, str(message.get("k")), str(message.get("p")))
            elif kind == "frame" and frames is not None:  # --raw: redacted by the host already
                frame = str(message.get("f")).encode("utf-8", "surrogatepass")
                frames.sent(frame) if message.get("d") == "send" else frames.received(frame)
            elif kind == "queued":
                ahead = message.get("ahead") or 0
                if ahead:
                    turns = "turn" if ahead == 1 else "turns"
                    run.say(f"acpcli: waiting behind {ahead} {turns} on this session (Ctrl-C withdraws the prompt)")
            elif kind == "start":
                started = True
                control.start(time.monotonic())
                title = message.get("title")
                if isinstance(title, str):  # the session's, from before this turn: not drawn
                    mirror.store.apply({"sessionUpdate": "session_info_update", "title": title})
                view.begin_turn(mirror.store)
            elif kind == "ask":
                params = message.get("params")
                result = _decide(decider, mirror, params) if isinstance(params, dict) else None
                channel.send({"t": "answer", "id": message.get("id"), "result": result})
            elif kind == "elicit":
                channel.send({"t": "answer", "id": message.get("id"), "result": _elicit(run, mirror, view, message.get("params"), message.get("agent"))})
            elif kind == "note":
                if not note_on_screen(view, str(message.get("text"))):
                    run.say(str(message.get("text")))
            elif kind == "end":
                mirror.unsaved = message.get("verdicts") or []
                stop = message.get("stop")
                stop = stop if isinstance(stop, str) else "end_turn"
                view.turn_ended(stop)
                control.stopped()
                # (what the agent still says of the turn, "late": the host stores it; an
                # attached terminal draws it; this command has its answer)
                return stop, bool(message.get("interrupted")) or control.interrupted, control.timed_out is not None
            elif kind == "withdrawn":
                raise Interrupted("withdrawn")
            elif kind == "error":
                if control.timed_out is not None:  # the agent ignored the cancel and was stopped
                    view.turn_ended(None)
                    mirror.unsaved = message.get("verdicts") or []
                    return "cancelled", False, True
                reported_unsaved(message.get("verdicts"), ending_well=False)
                raise HostReported(str(message.get("message")), int(message.get("exit") or 1), hint=message.get("hint"))
    except ChannelClosed:  # a message to the host could not be sent (receiving says so itself)
        raise HostLost(
            "the session host went away" + (" mid-turn" if started else ""),
            hint="what arrived before is stored (acpcli show); the next command starts a new host",
        ) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _decide(decider: Any, mirror: Mirror, params: dict[str, Any]) -> dict[str, Any] | None:
    """A permission request of this command's turn, decided as without a host. A policy
    decides at once (its coroutine never waits: it is run to its end here); a person asked
    at this terminal (``ask``) gets the picker, which needs an event loop for its time."""
    if getattr(decider, "policy", None) == "ask":
        import anyio

        async def ask() -> Any:
            return await decider(mirror, params)

        answer: Any = anyio.run(ask)
        return answer if isinstance(answer, dict) else None
    coroutine = decider(mirror, params)
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value if isinstance(done.value, dict) else None
    coroutine.close()  # a policy that waits for something: not one of ours
    return None


def _elicit(run: Invocation, mirror: Mirror, view: Any, params: Any, agent: Any = None) -> dict[str, Any]:
    """A request for input of this command's turn (the host read it already), answered as
    without a host (:func:`~acpcli.session.policy.elicitor_for`): the script's ``--answer``s
    or a decline, or the form at this terminal (which needs an event loop for its time); the
    view shows it (jsonl) as it would without a host."""
    from acpcli.services import elicitation as el
    from acpcli.session.policy import elicitor_for

    try:
        request = el.read_request(params)
    except ValueError:  # the host read it: not expected
        return el.answer(el.DECLINE)
    request.agent = agent if isinstance(agent, str) else ""
    elicit = elicitor_for(run)
    result: Any = None
    if run.answers is None and run.form_filler is not None:
        import anyio

        async def ask() -> Any:
            return await elicit(mirror, request)

        result = anyio.run(ask)
    else:
        coroutine: Any = elicit(mirror, request)
        try:
            coroutine.send(None)
        except StopIteration as done:  # a script's answer never waits
            result = done.value
        else:
            coroutine.close()  # an elicitor that waits for something: not one of ours
    settled = el.settled(request, result)
    show = getattr(view, "elicitation", None)
    if show is not None:
        show(request, settled)
    return settled


#: How long ``stop`` waits, after the host said it is stopping, to hear what it could not save.
_STORED_WAIT = 10.0


def _exchange(
    session_id: str, role: str, said: list[dict[str, Any]], wanted: str, *, then: str | None = None
) -> tuple[bool, dict[str, Any] | None]:
    """Say ``said`` to ``session_id``'s host as a ``role`` client and wait up to 5 s for its
    ``wanted`` message: whether a host answered the connection, and that message (None if it
    did not come). With ``then``, once ``wanted`` came, wait up to :data:`_STORED_WAIT` for
    that message instead (None if it did not come)."""
    import time

    from acpcli.errors import StorageError

    try:
        channel = connect_blocking(str(address.socket_path(session_id)))
    except (OSError, StorageError):  # none there, or no host can be there (run/ unusable)
        return False, None
    try:
        for message in [{"t": "hello", "pid": os.getpid(), "role": role}, *said]:
            channel.send(message)
        deadline = time.monotonic() + 5
        while (left := deadline - time.monotonic()) > 0:
            answer = channel.receive(timeout=left)
            if answer is None:
                break
            if answer["t"] == wanted and then is None:
                return True, answer
            if answer["t"] == wanted and then is not None:
                wanted, then, deadline = then, None, time.monotonic() + _STORED_WAIT
    except ChannelClosed:
        pass
    finally:
        channel.close()
    return True, None


def ask_stop(session_id: str, why: str = "stop") -> BlockingChannel | None:
    """Tell ``session_id``'s host to stop (``why``: the command that asks, ``stop``, ``close``
    or ``rm``, which the attached terminals are told), without waiting: the channel its answers
    come on (``stopping``, then ``stored`` with what it could not save; to close once it is
    gone), or None when no host could be reached."""
    try:
        channel = connect_blocking(str(address.socket_path(session_id)))
    except OSError:
        return None
    try:
        channel.send({"t": "hello", "pid": os.getpid(), "role": "stop"})
        channel.send({"t": "stop", "why": why})
    except ChannelClosed:
        channel.close()
        return None
    return channel


def stop_host(session_id: str, why: str = "stop", unsaved: list[dict[str, Any]] | None = None) -> bool:
    """Ask ``session_id``'s host to end; False when it was not running. ``why``: the command
    that asks (``stop``, ``close``, ``rm``), which the attached terminals are told. With
    ``unsaved``, wait for the host to say what it could not save (a full disk: the updates it
    held in memory are lost with it) and add that to the list (the exit code and line of each)."""
    running, answer = _exchange(
        session_id, "stop", [{"t": "stop", "why": why}], "stopping", then="stored" if unsaved is not None else None
    )
    if unsaved is not None and answer is not None and answer.get("t") == "stored":
        unsaved.extend(v for v in answer.get("verdicts") or [] if isinstance(v, dict))
    return running


def status(session_id: str) -> dict[str, Any] | None:
    """What ``session_id``'s host says of itself (None: not running)."""
    return _exchange(session_id, "status", [], "ready")[1]
