"""What each session command does once its arguments are parsed.

``new``/``load``/``resume``/``fork``: :func:`lifecycle` (by way of :func:`new`,
:func:`reattach`, :func:`fork`); ``prompt``: :func:`prompt`; ``close``: :func:`close`.

Each runs under a :class:`~acpcli.processes.supervisor.Supervisor` (signals, timed flushes), opens the
index, links the agent (:func:`~acpcli.session.launch.link_for`), attaches the session
(:mod:`~acpcli.session.attach`), runs the turn or hands over to the person
(:class:`~acpcli.session.context.Person`), and returns an :class:`Outcome` (``new``,
``load``, ``resume``, ``fork``) or an exit code (``prompt``, ``close``), or raises an
:class:`~acpcli.errors.AcpcliError`; it prints no result: ``cli/`` writes them and maps both
to the exit.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING

from acpcli.errors import RpcError, SessionNotFound
from acpcli.session.agent import (
    AgentChoice,
    agent_arg,
    agent_label,
    starting_name,
)
from acpcli.session.context import Invocation, Lifecycle
from acpcli.session.inputs import (
    Options,
    SessionInputs,
    for_reattach,
    lookup,
    refuse_unadvertised,
)
from acpcli.session.launch import link_for
from acpcli.text.safe import shown_id

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from acpcli.history.eventlog import EventWriter
    from acpcli.history.guarded import SafeIndex
    from acpcli.history.index import Index, SessionRecord
    from acpcli.history.lock import SessionLock
    from acpcli.model import Store
    from acpcli.processes.supervisor import Supervisor
    from acpcli.render import View
    from acpcli.session.link import AgentLink


#: The command bodies (the command tree's commands call them).
__all__ = [
    "Outcome",
    "close",
    "fork",
    "lifecycle",
    "new",
    "prompt",
    "reattach",
    "refuse_close",
]


@dataclass(frozen=True)
class Outcome:
    """How a session command ended: its exit code (``cli/`` exits with it) and the session it
    set up (the new one of ``new`` and ``fork``; None when it failed before)."""

    exit_code: int
    session_id: str | None = None


@contextmanager
def _auth_hinted(agent: AgentChoice) -> Iterator[None]:
    """An ``auth_required`` error leaves with how to log in outside a session."""
    from acpcli.errors import AuthRequired, leaf_error

    try:
        yield
    except BaseException as err:
        leaf = leaf_error(err)
        if isinstance(leaf, AuthRequired) and not leaf.hint:
            leaf.hint = f"log in with `acpcli auth {agent_arg(agent)}`, then run this again"
        raise


@contextmanager
def _given_up(supervisor: Supervisor) -> Iterator[None]:
    """Ctrl-C while the agent had not answered a setup step (``initialize``, ``session/new``,
    a slow ``session/load``): that request was abandoned with ``$/cancel_request`` (see
    :mod:`acpcli.wire.connection`), the agent stopped; one line says so (exit 130)."""
    from acpcli.errors import Interrupted

    try:
        yield
    except KeyboardInterrupt:
        if not supervisor.cancelled:
            raise
        what = ", ".join(dict.fromkeys(supervisor.cancelled))
        raise Interrupted(f"interrupted: gave up waiting for {what} (the agent was asked to cancel it)") from None


def _link(inputs: SessionInputs, run: Invocation) -> AbstractAsyncContextManager[AgentLink]:
    """The link of a session command: one-shot (the agent stopped promptly once the command
    is done) unless a person converses over it."""
    return link_for(inputs.agent, protocol=inputs.protocol, log_file=inputs.log_file, run=run, one_shot=run.person is None)


@asynccontextmanager
async def _starting_link(inputs: SessionInputs, run: Invocation) -> AsyncIterator[AgentLink]:
    """:func:`_link` for a person: the line saying the agent starts names it as it calls
    itself once it has answered ``initialize``, and is gone before the agent is stopped
    after an error (which can take seconds), not after."""
    person = run.person
    async with _link(inputs, run) as link:
        if person is not None:
            person.starting(link.features.display_name)
        try:
            yield link
        except BaseException:
            if person is not None:
                person.starting(None)
            raise


def lifecycle(command: Lifecycle, inputs: SessionInputs, run: Invocation, session_id: str | None = None) -> Outcome:
    """``new``, ``fork``, ``load`` or ``resume``: start the agent, set the session up, record
    it, then hand over to the person or give a script what it needs (``new`` and ``fork``: the
    new id, told to ``run.created`` as soon as the agent chose it; ``load``: the session's
    transcript as ``show`` has it, the record merged with the replay, drawn by the view;
    ``resume``: nothing). ``session_id``: the session loaded, resumed or forked."""
    import anyio

    from acpcli.errors import ExitCode
    from acpcli.processes.supervisor import Supervisor

    supervisor = run.supervisor = Supervisor()
    person = run.person
    lock: SessionLock | None = None
    ran: str | None = None  # the session set up (the new one of new and fork)

    async def main() -> int:
        nonlocal lock, ran
        if person is not None:  # at once: a slow agent's start is not a blank screen
            person.starting(starting_name(inputs.agent))
        from acpcli.history.guarded import open_index
        from acpcli.render import make_view
        from acpcli.session.attach import attach

        def storage_failed(message: str) -> None:
            if person is not None:  # a person is watching: say it now, the session goes on
                run.env.note(f"acpcli: warning: {message}; this session goes on in memory (the disk is tried again every few seconds)", style="yellow")

        index = open_index(on_failure=storage_failed)
        writer = supervisor.writer = index.writer()
        reattaching = person is not None and command in ("load", "resume", "fork")  # the replay is drawn whole
        view: View | None
        if reattaching:
            assert person is not None
            view = person.held_view()
        else:
            view = make_view(run.env, final_only=person is None) if (command != "resume" or person) else None
        try:
            async with _starting_link(inputs, run) as link:
                supervisor.link = link
                local = None
                if session_id is not None:
                    from acpcli.wire import capabilities

                    # Refused before anything is shown, and before it waits for anyone; then
                    # the replay is written by one writer (another acpcli's turn ends first).
                    capabilities.require(link.features, f"session/{command}")
                    if command != "fork":  # a fork writes only its own, new session
                        lock = await _claimed(session_id, run)
                if reattaching and command != "fork":
                    assert session_id is not None and person is not None
                    local = _local_store(index, session_id) if command == "resume" else None
                    person.banner(session_id, link.features)
                if command == "load":
                    assert session_id is not None
                    # What acpcli recorded before this replay: the replay is merged into it and
                    # drawn as `show` would draw it, not as the agent sent it (see replay_merge).
                    # A replay that has not begun when the load settles is drawn as it comes.
                    local = _local_store(index, session_id)
                    live = await attach(link, command, inputs, run, index, writer, None, session_id)
                    local = _replay_merged(local, live.store) if live.store.entries else None
                    if view is not None and person is None and local is not None:
                        view.print_store(local)
                else:
                    live = await attach(link, command, inputs, run, index, writer, view, session_id)
                if command == "fork" and person is not None:
                    person.banner(live.session_id, link.features, forked_from=session_id)  # the new session's id
                    local = _local_store(index, live.session_id)  # the conversation so far, copied
                lock = live.lock = lock or live.lock  # load/resume: ours; new: taken as it was recorded
                live.lock_wait = run.wait
                ran = live.session_id
                if person is not None:
                    from acpcli.render.export import exporter
                    from acpcli.session.conversation import Conversation

                    conversation = Conversation(
                        link, live, index, writer, agent_label(inputs.agent, link.features), exporter(live.session_id)
                    )
                    if reattaching:
                        assert view is not None
                        shown = "load" if command == "fork" else command  # drawn as a load's record
                        view = await person.show_replay(conversation, shown, view, local)
                    writer.flush()
                    if lock is not None:
                        lock.release()  # between turns nobody writes: each turn takes it again
                    return await person.converse(conversation, banner=not reattaching)
                if view is not None:
                    view.close()
                    view = None
                if command in ("new", "fork") and run.created is not None:
                    run.created(live.session_id)  # at once: a later failure (exit 16, 17) still leaves it said
                if live.store.title:
                    index.set_title(live.session_id, live.store.title)
                return int(ExitCode.OK)
        finally:
            supervisor.link = None
            if person is not None:
                person.starting(None)  # gone before an error is reported
            try:
                if view is not None:
                    view.close()
            finally:
                _put_away(writer, index)

    try:
        with _auth_hinted(inputs.agent), _given_up(supervisor):
            return Outcome(anyio.run(supervisor.run, main), ran)
    finally:
        if person is not None:
            person.starting(None)  # main may not have run its finally (a start failure)
        if lock is not None:
            lock.release()  # after _put_away: what the command wrote is in


async def _claimed(session_id: str, run: Invocation) -> SessionLock:
    """The writer lock of a recorded session (:func:`~acpcli.session.turn.claim`), taken
    before its first write: while another acpcli runs a turn on it, wait (one line on
    stderr), or with ``--no-wait`` SessionBusy (exit 18)."""
    from acpcli.history.lock import SessionLock
    from acpcli.session.turn import claim

    lock = SessionLock(session_id)
    await claim(lock, wait=run.wait, notice=run.say)
    return lock


def new(options: Options, run: Invocation) -> Outcome:
    """``acpcli new``: the inputs checked, then :func:`lifecycle`."""
    return lifecycle("new", options.inputs(), run)


def fork(session_id: str, options: Options, run: Invocation) -> Outcome:
    """``acpcli fork ID``: the recorded session (exit 8 when it is not) forked on its agent
    (``session/fork``, refused with exit 6 when not advertised), then :func:`lifecycle`."""

    record = lookup(session_id)
    refuse_unadvertised(record, options, "session/fork")  # before an agent starts
    return lifecycle("fork", options.inputs(record), run, session_id=record.id)


def reattach(command: Lifecycle, session_id: str, options: Options, run: Invocation, *, new_if_missing: bool = False) -> Outcome:
    """``acpcli load|resume ID``: the session and inputs resolved
    (:func:`~acpcli.session.inputs.for_reattach`, before anything starts), then
    :func:`lifecycle`; with ``new_if_missing``, an agent's error starts a new session
    instead, saying so."""

    inputs, record = for_reattach(command, session_id, options)
    if record is not None:
        refuse_unadvertised(record, options, f"session/{command}")  # before an agent starts
    sid = record.id if record is not None else session_id
    try:
        return lifecycle(command, inputs, run, session_id=sid)
    except RpcError as err:
        if not new_if_missing:
            raise
        run.say(f"acpcli: {command} of {shown_id(sid)} failed ({err}); starting a new session (--new-if-missing)")
        return lifecycle("new", inputs, run)


def _put_away(writer: EventWriter, index: SafeIndex) -> None:
    """The command's storage, closed: what is buffered written, then the verdict on it (a
    storage failure met on the way becomes exit 16, :mod:`acpcli.history.guarded`)."""
    from acpcli.history.guarded import verdict

    writer.close()
    index.close()
    verdict(index)
    if sys.exc_info()[1] is None:  # (called from a finally: not over another error)
        from acpcli.session import checkpointing

        checkpointing.verdict()  # a checkpoint the disk had no room for: exit 16 too


def _replay_merged(local: Store | None, replay: Store) -> Store:
    """What a load shows: the local record with what the replay adds, as ``show`` has it
    once the load is stored (:func:`~acpcli.history.replay_merge.merge_replay`)."""
    from acpcli.history.replay_merge import merge_replay
    from acpcli.model import Store

    return merge_replay(local if local is not None else Store(), replay)


def _local_store(index: Index, session_id: str) -> Store | None:
    """The transcript acpcli recorded for ``session_id`` (``None`` for a session it does not know)."""
    from acpcli.history.records import rebuild

    try:
        known = index.get(session_id)
    except SessionNotFound:
        return None
    return rebuild(index, known.id)


def close(session_id: str, options: Options, run: Invocation) -> int:
    """``acpcli close ID``: the recorded session (exit 8 when it is not), then :func:`_close`."""

    record = lookup(session_id)
    if record.state == "closed":  # nothing to do, and no agent to start for it
        run.env.err.print(f"{shown_id(record.id)} is already closed", markup=False, highlight=False)
        return 0
    return _close(record, options.inputs(record), run)


def refuse_close(session_id: str, options: Options, stop_host: Callable[[str], int | None]) -> None:
    """``acpcli close ID`` of a session whose agent did not advertise ``session/close`` (as
    its record says: gemini): refused at once, as the agent's own answer would refuse it
    (exit 6), and closed here all the same, with no agent started for it. A live session's
    host is stopped with its agent (``stop_host``: its pid, None when none ran), and the one
    error line says so; no line before it says the host was stopped."""
    from acpcli.errors import CapabilityMissing

    try:
        record = lookup(session_id)
    except SessionNotFound:
        return  # close says so
    if record.state == "closed":
        return
    try:
        refuse_unadvertised(record, options, "session/close", again="")
    except CapabilityMissing as err:
        pid = stop_host(record.id)
        _mark_closed(record.id)
        if pid is None:
            err.message += " (marked closed locally)"
        else:
            err.message += f" (marked closed locally; its host, pid {pid}, and agent were stopped)"
            err.hint = None  # (the agent no longer keeps it: it has exited)
        raise


def _mark_closed(session_id: str) -> None:
    """Record the close; a lock held past the wait is :class:`~acpcli.errors.DatabaseLocked`
    (one line naming the holder), or a warning when another error is already on its way out."""
    import sys

    from acpcli.errors import DatabaseLocked
    from acpcli.history.index import Index, locks_reported

    in_flight = sys.exc_info()[1] is not None  # called from a finally: another error leaving
    try:
        with locks_reported(), Index.open() as index:
            index.mark_closed(session_id)
    except DatabaseLocked as err:
        err.message = f"{session_id} not marked closed locally: {err.message}"
        if not in_flight:
            raise
        sys.stderr.write(f"acpcli: warning: {err.message}\n")


def _close(record: SessionRecord, inputs: SessionInputs, run: Invocation) -> int:
    """Make the session active (resume if supported), then ``session/close``."""
    import anyio

    from acpcli.errors import CapabilityMissing, ExitCode

    async def main() -> int:
        from acpcli.history.index import Index
        from acpcli.history.records import had_turns
        from acpcli.session import forgotten
        from acpcli.session.attach import raise_if_unknown
        from acpcli.wire import capabilities

        async with _link(inputs, run) as link:
            try:
                capabilities.require(link.features, "session/close")
                try:
                    if link.features.resume:
                        await link.resume(
                            record.wire_id, inputs.cwd, inputs.additional_directories, inputs.mcp_servers,
                            local_id=record.id,
                        )
                    answer = await link.close(record.id)
                except BaseException as err:
                    if not forgotten.agent_forgot(err):
                        raise
                    with Index.open(read_only=True) as reader:
                        turns = had_turns(reader, record.id)
                    if turns:
                        raise_if_unknown(err, record.id, record, link.features.display_name)
                        raise
                    # Never prompted: the agent holds nothing of it, so there is nothing to close there.
                    run.env.err.print(
                        f"closed {shown_id(record.id)}: {link.features.display_name} no longer knew it "
                        "(it never had a turn), so it is closed here only",
                        markup=False,
                        highlight=False,
                    )
                    return int(ExitCode.OK)
            finally:
                _mark_closed(record.id)
        from acpcli.session.outcome import closed_line

        run.env.err.print(closed_line(record.id, answer), markup=False, highlight=False)
        return int(ExitCode.OK)

    from acpcli.processes.supervisor import Supervisor

    try:
        return anyio.run(Supervisor().run, main)  # SIGTERM/SIGHUP: stop the agent, exit 143/129
    except CapabilityMissing as err:
        err.message += " (marked closed locally)"
        raise


def prompt(
    inputs: SessionInputs,
    run: Invocation,
    text: str,
    *,
    session_id: str | None,
    output_format: str,
    quiet: bool,
    settings: Sequence[tuple[str, str]] = (),
    piped: str | None = None,
) -> int:
    """One turn: a new session (or ``--session``: resume if supported, else load without
    printing the replay), the prompt (with ``piped``: text piped on standard input, sent as
    context), the streamed answer; the exit code follows the stop reason."""
    import anyio

    from acpcli.processes.supervisor import Supervisor, output_error

    supervisor = run.supervisor = Supervisor()
    try:
        supervisor.stdout_fd = run.env.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        pass  # not a real file (tests), nothing to watch
    # One writer per session: held from before the agent starts (--session/--last) or from the
    # moment a new session is recorded, to the end of the command.
    lock: SessionLock | None = None

    async def main() -> int:
        nonlocal lock
        from acpcli.history.guarded import open_index
        from acpcli.render import make_view
        from acpcli.services.mentions import build_prompt
        from acpcli.services.permissions import note_on_screen
        from acpcli.session.attach import attach, continued_by
        from acpcli.session.outcome import said_anything, turn_exit
        from acpcli.session.turn import after_turn, collect_late, run_turn, title_from_prompt

        if session_id is not None:
            lock = await _claimed(session_id, run)
        index = open_index()
        writer = supervisor.writer = index.writer()
        view: View
        if run.raw:
            from acpcli.render import SilentView

            view = SilentView()  # stdout carries the frames: nothing else may write there
        else:
            view = make_view(run.env, format=output_format, quiet=quiet)
        try:
            if session_id is not None:
                index.get(session_id)  # SessionNotFound: `sessions rm` deleted it while we waited
            async with _link(inputs, run) as link:
                supervisor.link = link
                command = "new" if session_id is None else continued_by(link.features, hint="drop --session to start a new one")
                # Mentions are checked before the session is touched: a bad one costs nothing.
                blocks = build_prompt(
                    text, inputs.cwd, [inputs.cwd, *inputs.additional_directories], link.features, strict=False,
                    piped=piped,
                )
                # A load's replay is context, not output: attach without a view first.
                live = await attach(link, command, inputs, run, index, writer, None, session_id)
                lock = live.lock = lock or live.lock  # held to the end of the command
                if command == "new":  # first, so a bad --set below still names the session
                    run.env.note(f"session {shown_id(live.session_id)}", style="dim")
                for key, value in settings:  # before the turn, so the prompt runs with them
                    await link.set_by_name(live, key, value)
                live.sink = view
                if run.refusals is not None:  # drawn by a terminal view, in order (not wiped by it)
                    run.refusals.screen = lambda line: note_on_screen(view, line)
                view.begin_turn(live.store)
                try:
                    stop = await run_turn(
                        link,
                        live,
                        blocks,
                        notice=lambda m: None if note_on_screen(view, m, "yellow") else run.env.note(m, style="yellow"),
                        tick=getattr(view, "tick", None),
                        limit=run.timeout,
                    )
                except BaseException:
                    title_from_prompt(index, live)  # a failed first prompt still titles the session
                    raise
                view.turn_ended(stop)
                await collect_late(link, live, stop)  # what the agent still says of it is kept
                for warning in live.take_warnings():  # the context nearly full: one line on stderr
                    run.env.note(f"acpcli: warning: {warning}", style="yellow")
                writer.flush()
                after_turn(index, live)
                return turn_exit(
                    stop, run, live.session_id, interrupted=live.interrupted,
                    timed_out=bool(live.timed_out), answered=live.timed_out == "cancelled",
                    said=said_anything(islice(live.store.entries, live.turn_first_entry, None)),
                )
        finally:
            supervisor.link = None
            failing = sys.exc_info()[1]
            try:
                view.close()
            except BrokenPipeError:
                raise
            except OSError as err:
                if failing is None:
                    raise output_error(_stdout_name(run), err) from None
            finally:
                _put_away(writer, index)

    try:
        with _auth_hinted(inputs.agent), _given_up(supervisor):
            return anyio.run(supervisor.run, main)
    finally:
        if lock is not None:
            lock.release()  # after _put_away: the turn is in the event log


def _stdout_name(run: Invocation) -> str:
    name = getattr(run.env.stdout, "name", None)
    return name if isinstance(name, str) and not name.startswith("<") else "standard output"
