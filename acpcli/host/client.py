"""What a command does to use a live session: find its host, or start one, and talk to it.

:func:`prompt` is ``acpcli prompt --session ID`` with keep-alive on: the prompt goes to the
session's host (started here when there is none: the cold path), and the turn comes back as
the updates the host stored, applied to a store of this command's own and drawn by this
command's own view, in whatever format it was asked for. Exit codes are those of a prompt
without a host, plus :data:`~acpcli.errors.ExitCode.HOST_LOST` when the host is killed
mid-turn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acpcli.errors import HostLost, HostReported, Interrupted
from acpcli.history.records import LOCAL
from acpcli.host import address
from acpcli.host.messages import BlockingChannel, ChannelClosed, connect_blocking

if TYPE_CHECKING:
    from collections.abc import Callable

    from acpcli.api.frontends import Invocation, Options
    from acpcli.history.index import SessionRecord
    from acpcli.history.store import Store

#: How long a started host may take to link the agent and attach the session, beyond the
#: setup steps' own timeout (spawning, initialize, resume or load each get that timeout).
_START_MARGIN = 15.0


def spec_for(
    session_id: str | None, options: Options, policy: str | None, run: Invocation, keep_alive: float,
    command: str | None = None,
) -> dict[str, Any]:
    """What a new host needs to attach ``session_id`` as this command would (paths made
    absolute: the host resolves them as the command line meant them). ``command``: ``load``
    or ``resume`` (else a new session, or a recorded one continued as ``prompt`` does)."""

    def absolute(path: Path | None) -> str | None:
        return os.path.abspath(os.fspath(path)) if path is not None else None

    return {
        "command": command or ("continue" if session_id is not None else "new"),
        "session_id": session_id,
        "title": run.title,
        "timeout": run.timeout,  # --timeout: the host's setup steps (turns: the client's own)
        "keep_alive": keep_alive,
        "policy": policy,
        "fs": run.fs,
        "terminal": run.terminal,
        "options": {
            "agent": options.agent,
            "cmd": options.cmd,
            "cwd": absolute(options.cwd),
            "add_dir": [absolute(p) for p in options.add_dir] if options.add_dir else None,
            "no_add_dirs": options.no_add_dirs,
            "mcp_config": absolute(options.mcp_config),
            "mcp": list(options.mcp) if options.mcp else None,
            "no_mcp": options.no_mcp,
            "protocol": options.protocol,
            "log_file": absolute(options.log_file),
        },
    }


def open_host(session_id: str, make_spec: Callable[[], dict[str, Any]], *, say: Any = None) -> BlockingChannel:
    """A channel to ``session_id``'s host, started from ``make_spec()`` if none is running
    (the spec is made only then: it checks the command line's session options). Two commands
    racing to start one end up with one: the second waits on the first's start, then finds it."""
    path = str(address.socket_path(session_id))
    try:
        return connect_blocking(path)
    except OSError:
        pass
    spec = make_spec()
    with address.starting(session_id):
        try:
            return connect_blocking(path)
        except OSError:
            pass
        answer = start_host(spec, say=say)
        if answer.get("t") == "error":
            raise HostReported(str(answer.get("message")), int(answer.get("exit") or 1), hint=answer.get("hint"))
        try:
            return connect_blocking(path)
        except OSError as err:
            raise HostLost(f"the session host started but cannot be reached: {err}") from None


def join(session_id: str) -> BlockingChannel | None:
    """A channel to ``session_id``'s host when one runs, else None (nothing is started, nor
    made: no host ever ran here without its ``run`` directory)."""
    from acpcli.paths import home_dir

    if not (home_dir() / "run").is_dir():
        return None
    try:
        return connect_blocking(str(address.socket_path(session_id)))
    except OSError:
        return None


def host_log(session_id: str) -> Path:
    """``ACPCLI_HOME/logs/host-<key>.log``: the log of ``session_id``'s hosts."""
    return address.host_log(session_id)


def start_host(spec: dict[str, Any], *, say: Any = None) -> dict[str, Any]:
    """Start a host process (detached: its own process session, no terminal) and return its
    first line: ready, exists, or an error."""
    from acpcli.config import step_timeout
    from acpcli.paths import open_private

    if spec["session_id"]:
        log = host_log(spec["session_id"])
    else:  # a new session's: its own file, renamed by the host once the agent names the session
        import secrets

        log = host_log(f"new-{secrets.token_hex(6)}")
        spec = {**spec, "log": str(log)}
    with open_private(log, "ab") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-I", "-m", "acpcli.host"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
            close_fds=True,
        )
    _spare(process.pid)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(spec).encode())
    process.stdin.close()
    step = step_timeout()
    limit = (step * 4 + _START_MARGIN) if step else None
    try:
        line = _read_line(process.stdout, limit)
    except BaseException:
        process.terminate()  # given up on (Ctrl-C): the host stops its agent and ends
        raise
    finally:
        process.stdout.close()
    if not line:
        process.terminate()  # silent past the limit: not a host anyone can use
        code = process.poll()
        return {
            "t": "error",
            "exit": 1,
            "message": f"the session host could not start (exit {code}); its log: {log}",
        }
    try:
        answer = json.loads(line)
    except ValueError:
        return {"t": "error", "exit": 1, "message": f"the session host said {line[:200]!r}; its log: {log}"}
    return answer if isinstance(answer, dict) else {"t": "error", "exit": 1, "message": "no answer from the host"}


def _spare(pid: int) -> None:
    """The host outlives this command on purpose: the end-of-run sweep of what acpcli started
    (:mod:`acpcli.processes.children`) must not take it for a leftover."""
    from acpcli.processes import children

    children.manage(pid)


def _read_line(stream: Any, limit: float | None) -> str:
    import selectors
    import time

    deadline = None if limit is None else time.monotonic() + limit
    selector = selectors.DefaultSelector()
    selector.register(stream, selectors.EVENT_READ)
    data = b""
    try:
        while b"\n" not in data:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            if not selector.select(left):
                break
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                break
            data += chunk
    finally:
        selector.close()
    return data.split(b"\n", 1)[0].decode("utf-8", "replace")


def new_session(options: Options, run: Invocation, *, agent: Any, keep_alive: float) -> int:
    """``acpcli new --no-repl`` with keep-alive on: a host makes the session and keeps its
    agent for the prompts that follow; its id is printed as without a host."""
    from acpcli.errors import ExitCode
    from acpcli.text.safe import safe_line

    session_id = hosted_session(options, run, agent=agent, keep_alive=keep_alive)
    run.env.stdout.write(safe_line(session_id) + "\n")
    run.env.stdout.flush()
    return int(ExitCode.OK)


def hosted_session(options: Options, run: Invocation, *, agent: Any, keep_alive: float) -> str:
    """A new session made by a host of its own, which keeps the agent; the session's id."""
    from acpcli.api.frontends import decider_for

    policy = decider_for(run, agent).policy
    answer = start_host(spec_for(None, options, policy, run, keep_alive))
    if answer.get("t") != "ready" or not isinstance(answer.get("session"), str):
        raise HostReported(str(answer.get("message")), int(answer.get("exit") or 1), hint=answer.get("hint"))
    return str(answer["session"])


def hosted_reattach(
    command: str, session_id: str, options: Options, run: Invocation, *, agent: Any, keep_alive: float
) -> bool:
    """``load``/``resume ID`` with keep-alive on: a host that did the load (its replay
    stored) or the resume keeps the agent; a session whose host runs already is joined
    instead (no second agent). Whether a host was started here."""
    from acpcli.api.frontends import decider_for

    path = str(address.socket_path(session_id))
    if _reachable(path):
        return False
    spec = spec_for(session_id, options, decider_for(run, agent).policy, run, keep_alive, command)
    with address.starting(session_id):
        if _reachable(path):
            return False
        answer = start_host(spec, say=run.say)
    if answer.get("t") == "error":
        raise HostReported(str(answer.get("message")), int(answer.get("exit") or 1), hint=answer.get("hint"))
    return answer.get("t") == "ready"


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
    the view it feeds (the part of :class:`~acpcli.session.live.LiveSession` a command that
    only watches needs; views read ``store`` and ``session_id``)."""

    def __init__(self, session_id: str, store: Store, sink: Any = None) -> None:
        self.session_id = session_id
        self.store = store
        self.sink = sink

    def feed(self, update: Any, frame_text: str | None = None, *, local: bool = False) -> None:
        if not isinstance(update, dict):
            return
        change = self.store.apply(update)
        if change is not None and self.sink is not None:
            self.sink.on_change(self, change)


def apply_event(live: Any, kind: str, payload: str) -> None:
    """One update as the host stored it, applied to this command's own session mirror (so
    its view draws it); acpcli's own records but :data:`LOCAL` are bookkeeping."""
    if kind.startswith("acpcli/") and kind != LOCAL:
        return
    try:
        event = json.loads(payload)
    except ValueError:
        return
    if not isinstance(event, dict):
        return
    if "jsonrpc" in event:  # the whole frame, as it arrived from the agent
        params = event.get("params")
        event = params.get("update") if isinstance(params, dict) else None
        if not isinstance(event, dict):
            return
    live.feed(event)


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
    from acpcli.api.frontends import AgentChoice, decider_for

    session_id = record.id
    decider = decider_for(run, AgentChoice(record.agent, list(record.argv)))
    if record.state == "closed":  # the host that is started for it reopens it (its attach)
        from acpcli.api.frontends import reopened_line

        run.say(reopened_line(session_id))

    def make_spec() -> dict[str, Any]:
        from acpcli.api.frontends import for_prompt

        for_prompt(options, session_id, False)  # the options checked here, as without a host
        return spec_for(session_id, options, decider.policy, run, keep_alive)

    from acpcli.history.store import Store
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
    try:
        channel.send({"t": "hello", "pid": os.getpid(), "role": "prompt"})
        message: dict[str, Any] = {
            "t": "prompt", "text": text, "settings": [list(pair) for pair in settings], "wait": run.wait,
            "raw": run.raw, "grant": grant_of(decider, run),
        }
        if piped is not None:
            message["stdin"] = piped
        channel.send(message)
        stop, interrupted, timed_out = _follow(channel, mirror, view, decider, run)
    finally:
        try:
            view.close()
        finally:
            channel.close()  # a turn still running is cancelled by the host: its client left
    from acpcli.api.frontends import said_anything, turn_exit

    return turn_exit(
        stop, run, session_id, interrupted=interrupted, timed_out=timed_out, answered=stop == "cancelled",
        said=said_anything(mirror.store.entries),  # the mirror holds this turn only
    )


def grant_of(decider: Any, run: Invocation) -> dict[str, Any]:
    """What a prompt message says of its sender's policy, for the host to apply to its turn
    (:class:`~acpcli.services.permissions.Grant`): the policy as ``decider`` resolved it
    here, ``--no-fs`` / ``--no-terminal``, whether anybody can be asked here."""
    from acpcli.services.permissions import Grant

    return Grant.of(decider, fs=run.fs, terminal=run.terminal).message()


#: Seconds a turn cancelled for outlasting ``--timeout`` has to end before the host stops the agent.
_TIMEOUT_GRACE = 3.0
#: How often the loop looks at signals, the deadline and the view's clock while waiting.
_TICK = 0.1


def _follow(channel: BlockingChannel, mirror: Mirror, view: Any, decider: Any, run: Invocation) -> tuple[str, bool, bool]:
    """Read the host's messages until this command's turn ends: its stop reason, whether it
    was interrupted here, whether it outlasted ``--timeout``. Ctrl-C cancels it (a second one
    within 3 s leaves: the host cancels the turn of a client that left); ``--timeout`` cancels
    it when it has run that long (and the host stops an agent that ignores the cancel);
    SIGTERM and SIGHUP leave as the command would without a host (exit 143, 129)."""
    import signal
    import time

    from acpcli.errors import Terminated
    from acpcli.services.permissions import note_on_screen

    presses: list[float] = []

    def on_interrupt(signum: int, frame: Any) -> None:
        presses.append(time.monotonic())

    def on_stop(signum: int, frame: Any) -> None:
        raise Terminated(signum)

    previous = {sig: signal.signal(sig, handler) for sig, handler in (
        (signal.SIGINT, on_interrupt), (signal.SIGTERM, on_stop), (signal.SIGHUP, on_stop),
    )}
    interrupted = timed_out = started = False
    deadline: float | None = None
    frames = None
    if run.raw:
        from acpcli.wire.wiretap import StreamTap

        frames = StreamTap(run.env.stdout)
    handled = 0
    tick = getattr(view, "tick", None)
    try:
        while True:
            while handled < len(presses):  # Ctrl-C, in the loop rather than in the handler
                handled += 1
                if handled > 1 and presses[handled - 1] - presses[handled - 2] < 3.0:
                    raise Interrupted()  # leaving: the host cancels the turn of a client that left
                interrupted = True
                line = "cancelling… (press Ctrl-C again to leave at once)"
                if not note_on_screen(view, line, "yellow"):  # drawn by a terminal view, in order
                    run.env.note(line, style="yellow")
                channel.send({"t": "cancel"})
            if deadline is not None and not timed_out and time.monotonic() >= deadline:
                timed_out = True
                channel.send({"t": "cancel", "kill_after": _TIMEOUT_GRACE})
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
                continue
            kind = message["t"]
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
                if run.timeout:
                    deadline = time.monotonic() + run.timeout
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
                stop = message.get("stop")
                stop = stop if isinstance(stop, str) else "end_turn"
                view.turn_ended(stop)
                if message.get("late"):
                    _linger(channel, mirror)
                return stop, bool(message.get("interrupted")) or interrupted, timed_out
            elif kind == "withdrawn":
                raise Interrupted("withdrawn")
            elif kind == "error":
                if timed_out:  # the agent ignored the cancel and was stopped
                    view.turn_ended(None)
                    return "cancelled", False, True
                raise HostReported(str(message.get("message")), int(message.get("exit") or 1), hint=message.get("hint"))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _linger(channel: BlockingChannel, mirror: Mirror) -> None:
    """Updates after the turn (:func:`~acpcli.session.turn.collect_late`): drawn as they come
    until the host has sent nothing for a moment (the host stores them either way)."""
    import time

    from acpcli.api.frontends import LATE_LIMIT, LATE_QUIET

    start = last = time.monotonic()
    while True:
        now = time.monotonic()
        left = min(LATE_QUIET - (now - last), LATE_LIMIT - (now - start))
        if left <= 0:
            return
        try:
            message = channel.receive(timeout=left)
        except ChannelClosed:
            return
        if message is not None and message.get("t") == "u":
            apply_event(mirror, str(message.get("k")), str(message.get("p")))
            last = time.monotonic()


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
    from acpcli.api.frontends import elicitor_for
    from acpcli.services import elicitation as el

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


def _exchange(session_id: str, role: str, said: list[dict[str, Any]], wanted: str) -> tuple[bool, dict[str, Any] | None]:
    """Say ``said`` to ``session_id``'s host as a ``role`` client and wait up to 5 s for its
    ``wanted`` message: whether a host answered the connection, and that message (None if it
    did not come)."""
    import time

    try:
        channel = connect_blocking(str(address.socket_path(session_id)))
    except OSError:
        return False, None
    try:
        for message in [{"t": "hello", "pid": os.getpid(), "role": role}, *said]:
            channel.send(message)
        deadline = time.monotonic() + 5
        while (left := deadline - time.monotonic()) > 0:
            answer = channel.receive(timeout=left)
            if answer is None:
                break
            if answer["t"] == wanted:
                return True, answer
    except ChannelClosed:
        pass
    finally:
        channel.close()
    return True, None


def stop_host(session_id: str) -> bool:
    """Ask ``session_id``'s host to end; False when it was not running."""
    running, _ = _exchange(session_id, "stop", [{"t": "stop"}], "stopping")
    return running


def status(session_id: str) -> dict[str, Any] | None:
    """What ``session_id``'s host says of itself (None: not running)."""
    return _exchange(session_id, "status", [], "ready")[1]
