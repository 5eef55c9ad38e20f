"""Setting a session up over a link (new, fork, load, resume) with the local index kept in step.

Recorded before a replay arrives, rolled back if the agent refuses, the replay bracketed in
the event log, a forgotten never-prompted session replaced, "not found" made an exit-8 error.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

from acpcli.errors import AuthRequired, RpcError, SessionNotFound, UnknownSession
from acpcli.history.records import (
    FORKED,
    ReplayWriter,
    had_turns,
    rebuild,
)
from acpcli.session import forgotten
from acpcli.session.agent import agent_label
from acpcli.session.outcome import reopened_line
from acpcli.text.safe import shown_id

if TYPE_CHECKING:
    from acpcli.history.eventlog import EventWriter
    from acpcli.history.index import Index, SessionRecord
    from acpcli.render import View
    from acpcli.session.context import Invocation, Lifecycle
    from acpcli.session.conversation import Conversation
    from acpcli.session.feed import SessionFeed
    from acpcli.session.inputs import SessionInputs
    from acpcli.session.link import AgentLink
    from acpcli.wire.negotiate import AgentFeatures


async def attach(
    link: AgentLink,
    command: Lifecycle,
    inputs: SessionInputs,
    run: Invocation,
    index: Index,
    writer: EventWriter,
    view: View | None,
    session_id: str | None,
) -> SessionFeed:
    """Create, load or resume the session over ``link`` and keep the index in step.

    A session the index did not know is recorded before its replay arrives and removed
    again if the agent refuses it, so a failed command leaves nothing behind.
    """
    if command in ("new", "fork"):
        if command == "fork":
            assert session_id is not None
            parent = index.get(session_id)
            try:
                live = await logged_in(
                    link, run, lambda: link.fork(
                        parent.wire_id, inputs.cwd, inputs.additional_directories, inputs.mcp_servers, sink=view
                    ),
                )
            except BaseException as err:
                raise_if_unknown(err, parent.id, parent, link.features.display_name)
                raise
        else:
            live = await logged_in(
                link, run, lambda: link.new(inputs.cwd, inputs.additional_directories, inputs.mcp_servers, sink=view)
            )
        _record_new(live, inputs, link.features, run, index)
        if command == "fork":
            _copy_transcript(index, writer, parent, live.session_id)
        if run.title:
            index.set_title(live.session_id, run.title, by_user=True)
        if inputs.mcp_refs:
            index.set_mcp_refs(live.session_id, inputs.mcp_refs)
        live.recorder = writer
        live.checkpoints = None if run.checkpoints else False  # --no-checkpoints
        return live
    assert session_id is not None
    try:
        known = index.get(session_id)  # read again: this index is the one that writes
    except SessionNotFound:
        known = None
    sid = known.id if known is not None else session_id
    if command == "load":
        from acpcli.wire import capabilities

        # refused before anything is recorded or marked: a refused load leaves nothing behind
        capabilities.require(link.features, "session/load")
    if known is None:  # created elsewhere: record it from now on
        index.upsert_session(_record(inputs, sid, link.features, run.title))
    if command == "resume" and known is not None and view is not None and not run.repl:
        run.env.err.print("[dim]── stored locally by acpcli, not replayed by the agent ──[/]")
        view.print_store(rebuild(index, sid))
        run.env.err.print("[dim]── resumed ──[/]")
    # A load's replay is stored where it differs from the last one stored (bracketed as it
    # comes: nothing at all when it repeats that one whole).
    replay = ReplayWriter(writer, index, sid) if command == "load" else None
    method = link.load if command == "load" else link.resume
    wire_id = known.wire_id if known is not None else sid
    fresh = False
    try:
        live = await logged_in(
            link,
            run,
            lambda: method(
                wire_id, inputs.cwd, inputs.additional_directories, inputs.mcp_servers, sink=view,
                recorder=replay if replay is not None else writer, local_id=sid,
            ),
        )
    except BaseException as err:
        if known is None:
            writer.flush()
            index.delete(sid)
        else:
            if replay is not None:
                replay.abort()
            writer.flush()
        if known is None or not forgotten.agent_forgot(err) or had_turns(index, sid):
            raise_if_unknown(err, sid, known, link.features.display_name)
            raise
        # Never prompted: nothing to lose. A fresh agent session stands in under the same id.
        live = await logged_in(link, run, lambda: forgotten.stand_in(link, known, inputs, run, index, writer, view))
        fresh = True
    if replay is not None and not fresh:
        await link.settle(live)  # a replay may trail the response (gemini)
        replay.end()
        live.recorder = writer  # what comes from now on is the session's own
    writer.flush()
    if known is not None and inputs.mcp_refs is not None:
        # --mcp / --mcp-config / --no-mcp replaced the session's MCP servers: remember them.
        index.set_mcp_refs(sid, inputs.mcp_refs or None)
        known.mcp_servers = list(inputs.mcp_names)
        index.upsert_session(known)
    if known is not None and list(known.additional_dirs) != list(inputs.additional_directories):
        # --add-dir / --no-add-dirs replaced the roots: remember what the agent now has.
        known.additional_dirs = list(inputs.additional_directories)
        index.upsert_session(known)
    _record_protocol(index, known, link.features)
    index.touch(sid)
    if known is not None and known.state == "closed":
        # Continuing a closed session (load, resume, prompt --session) reopens it.
        index.reopen(sid)
        known.state = "active"
        run.say(reopened_line(sid))
    if run.title:
        index.set_title(sid, run.title, by_user=True)
    live.checkpoints = None if run.checkpoints else False  # --no-checkpoints
    return live


async def fork_recorded(conversation: Conversation, run: Invocation) -> SessionFeed:
    """Fork the conversation's recorded session over its link (``/fork`` in the REPL): the new
    session recorded with its parent and a copy of its transcript, as ``acpcli fork`` does;
    its writer lock is let go at once (nothing runs on it here), and the conversation stays on
    its own session. :class:`~acpcli.errors.CapabilityMissing` (nothing sent) when the agent
    cannot fork."""
    from acpcli.session.inputs import Options
    from acpcli.wire import capabilities

    capabilities.require(conversation.features, "session/fork")
    link, index, writer = conversation.agent_link, conversation.index, conversation.writer
    assert writer is not None  # (a conversation that holds its agent holds its writer)
    writer.flush()  # the transcript so far, whole, before it is copied
    parent = index.get(conversation.session_id)
    live = await attach(link, "fork", Options().inputs(parent), run, index, writer, None, parent.id)
    if live.lock is not None:
        live.lock.release()
    return live


def _copy_transcript(index: Index, writer: EventWriter, parent: SessionRecord, session_id: str) -> None:
    """A fork's local record: its parent named, and its event log starting with a copy of the
    parent's events, as stored (so ``show``, ``export`` and ``search`` have the conversation so
    far); its title is the parent's until the agent or a prompt gives it one."""
    index.set_parent(session_id, parent.id)
    if parent.prompt_title:
        index.set_prompt_title(session_id, parent.prompt_title)
    import json

    for _seq, kind, payload in index.events_raw(parent.id):
        writer.append(session_id, kind, payload)
    writer.append(session_id, FORKED, json.dumps({"parent": parent.id}))
    writer.flush()


#: How many ``ID.N`` local ids a new session whose agent id is taken tries before a random one.
_LOCAL_SUFFIXES = 100


def _local_ids(agent_id: str) -> Iterator[str]:
    """The ids a new session may be recorded under: the agent's own, then ``ID.2``, ``ID.3``…"""
    yield agent_id
    for n in range(2, _LOCAL_SUFFIXES + 2):
        yield f"{agent_id}.{n}"
    while True:
        yield f"{agent_id}.{uuid.uuid4().hex[:12]}"


def _record_new(live: SessionFeed, inputs: SessionInputs, features: AgentFeatures, run: Invocation, index: Index) -> None:
    """Record a session the agent just created, holding its writer lock (``live.lock``) from
    before it is listed, so that no other command (``prompt --last``) writes to it first.

    Session ids are the agent's, not unique across agents (nor across directories of one agent
    that reuses them): when the agent's id is recorded here already, the session gets a local id
    of its own (``ID.2``…; the agent is still addressed by its id, ``agent_session_id``), said on
    stderr, and the recorded session keeps its id, agent, cwd and transcript."""
    from acpcli.history.lock import SessionLock

    agent_id = live.session_id
    record = _record(inputs, agent_id, features, run.title)
    for local_id in _local_ids(agent_id):
        lock = SessionLock(local_id)
        if not lock.try_acquire():
            continue  # another command holds this id right now: it is not free either
        record.id = local_id
        try:
            recorded = index.insert_session(record)
        except BaseException:
            lock.release()
            raise
        if recorded:
            break
        lock.release()
    live.lock = lock
    if local_id == agent_id:
        return
    index.set_agent_session_id(local_id, agent_id)
    live.session_id, live.wire_id = local_id, agent_id
    from acpcli.text.safe import safe_line

    run.say(
        f"acpcli: {safe_line(features.display_name)} gave the new session the id {safe_line(agent_id)}, which is "
        f"already recorded here for another session: this one is recorded as {safe_line(local_id)}"
    )


def _record_protocol(index: Index, known: SessionRecord | None, features: AgentFeatures) -> None:
    """A recorded session continued over another protocol (``--protocol``) speaks that one
    from now on: record it, so the next command does not fall back to the old one."""
    from acpcli.wire.negotiate import protocol_of

    if known is None:
        return
    spoken = protocol_of(features)
    if known.protocol != spoken or known.protocol_version != features.protocol_version:
        known.protocol, known.protocol_version = spoken, features.protocol_version
        index.upsert_session(known)


def _record(inputs: SessionInputs, session_id: str, features: AgentFeatures, title: str | None) -> SessionRecord:
    from acpcli.history.index import SessionRecord
    from acpcli.wire.negotiate import protocol_of

    return SessionRecord(
        id=session_id,
        agent=agent_label(inputs.agent, features),
        argv=inputs.agent.argv,
        cwd=inputs.cwd,
        additional_dirs=inputs.additional_directories,
        mcp_servers=inputs.mcp_names,
        protocol_version=features.protocol_version,
        protocol=protocol_of(features),
        title=title,
        agent_info={
            "name": features.agent_name, "title": features.agent_title, "version": features.agent_version,
            # what it advertised of these: a later resume, close or fork it cannot do is
            # refused at once, before an agent starts (session.inputs.refuse_unadvertised)
            "advertised": {"load": features.load, "resume": features.resume, "close": features.close, "fork": features.fork},
        },
    )


async def logged_in(link: AgentLink, run: Invocation, setup: Callable[[], Awaitable[SessionFeed]]) -> SessionFeed:
    """Run a session setup; when the agent answers ``auth_required`` on a terminal, offer its
    login methods and try once more after a login (scripts get exit 10 and the hint)."""
    try:
        return await setup()
    except AuthRequired as err:
        if run.person is None or not await run.person.offer_login(link, err):
            raise
    return await setup()


def raise_if_unknown(
    err: BaseException, session_id: str, known: SessionRecord | None = None, agent_name: str = "the agent"
) -> None:
    """A load/resume answered "not found" (-32002 Resource not found, or an error whose message
    or data says the session was not found / its identifier is invalid, see
    :func:`acpcli.session.forgotten.agent_forgot`) becomes :class:`UnknownSession` (exit 8, like an
    id missing from the local index), with a hint that is true: ``known`` is the index record
    (None: the session is not recorded here). Other failures stay what they are."""
    if not isinstance(err, RpcError) or isinstance(err, UnknownSession) or not forgotten.agent_forgot(err):
        return
    unknown = UnknownSession(err.code, err.rpc_message, err.data, method=err.method)
    if known is not None:
        unknown.hint = forgotten.lost_hint(known, agent_name)
    else:
        unknown.hint = (
            f"{agent_name} does not know {shown_id(session_id)}, and it is not recorded here either: "
            "check the id (`acpcli sessions --remote` asks the agent)"
        )
    raise unknown from err


def continued_by(features: AgentFeatures, *, hint: str) -> Lifecycle:
    """How a recorded session is continued with this agent: ``resume`` when it offers that,
    else ``load``; an agent with neither is :class:`CapabilityMissing` (with ``hint``)."""
    from acpcli.errors import CapabilityMissing

    if features.resume:
        return "resume"
    if features.load:
        return "load"
    raise CapabilityMissing(f"{features.display_name} can neither resume nor load a session", hint=hint)
