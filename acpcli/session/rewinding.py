"""Rewinding a session's conversation to a turn (``acpcli rewind ID --to TURN``, ``/rewind``,
``Session.rewind``): a new session holding the turns before TURN; the old one stays as it was.

ACP's ``session/fork`` (unstable upstream) copies the whole conversation: it has no way to name
the message to fork at. So the agent forks (:data:`FORKED_BY_AGENT`) only when the turns kept are
all of them and it advertises forking; otherwise the new session is a plain ``session/new`` on
the same agent, cwd, roots and MCP servers (:data:`FROM_TRANSCRIPT`), and the transcript of the
turns kept is *carried*: sent to the agent as context with the new session's first prompt, by
whichever acpcli sends it (:mod:`acpcli.session.carried`),
and forgotten once the agent took that prompt. Either way the new session's local record is a
copy of the parent's events before TURN (``show NEW`` has exactly those turns), its parent
named, as a fork's is.

Turns are counted as acpcli sent them: the Nth prompt of the session's record (its copied
turns included, for a fork), as its checkpoints count them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acpcli.errors import UsageError
from acpcli.history.records import FORKED, TURN_START
from acpcli.session import carried
from acpcli.text.safe import safe_line, shown_id

if TYPE_CHECKING:
    from acpcli.history.eventlog import EventWriter
    from acpcli.history.index import Index, SessionRecord
    from acpcli.session.context import Invocation
    from acpcli.session.feed import SessionFeed
    from acpcli.session.inputs import SessionInputs
    from acpcli.session.link import AgentLink

#: How the new session came to hold the conversation: the agent forked it (``session/fork``).
FORKED_BY_AGENT = "fork"
#: ... or it is a new agent session given the transcript of the turns kept with its first prompt.
FROM_TRANSCRIPT = "transcript"
#: ... or no turn is kept (a rewind to turn 1): a new, empty session.
EMPTY = "empty"



@dataclass(frozen=True)
class Rewound:
    """A conversation rewound: ``live`` the new session, ``how`` (:data:`FORKED_BY_AGENT`,
    :data:`FROM_TRANSCRIPT`, :data:`EMPTY`), ``kept`` how many turns it holds, ``parent`` the
    session it came from, ``agent`` the agent's name as it calls itself, ``forks`` whether it
    advertises ``session/fork``."""

    live: SessionFeed
    how: str
    kept: int
    parent: str
    agent: str = "the agent"
    forks: bool = False

    @property
    def session_id(self) -> str:
        """The new session's id."""
        return self.live.session_id

    def line(self) -> str:
        """What happened, in one line for stderr."""
        new, old = shown_id(self.session_id), shown_id(self.parent)
        if self.how == FORKED_BY_AGENT:
            return f"acpcli: {new} is a fork of {old} (session/fork) with all its {self.kept} turns"
        if self.how == EMPTY:
            return f"acpcli: {new} is a new session on the same agent and folder as {old}, with no turn yet"
        why = "forks only whole conversations" if self.forks else "cannot fork a conversation"
        turns = "turn 1" if self.kept == 1 else f"turns 1-{self.kept}"
        return (
            f"acpcli: {safe_line(self.agent)} {why}: {new} is a new session that starts from the transcript of "
            f"{turns} of {old}, sent to the agent as context with its first prompt"
        )


def turn_starts(index: Index, session_id: str) -> list[int]:
    """The seq of each turn's start in the session's event log, in order (the Nth: turn N)."""
    return [seq for seq, kind, _ in index.events_raw(session_id) if kind == TURN_START]


def check_turn(index: Index, session_id: str, turn: int) -> list[int]:
    """:func:`turn_starts`, once ``turn`` is one a conversation can be rewound to: 1 to the
    number of turns + 1 (all of them kept). :class:`~acpcli.errors.UsageError` otherwise."""
    starts = turn_starts(index, session_id)
    if not 1 <= turn <= len(starts) + 1:
        n = len(starts)
        raise UsageError(
            f"session {shown_id(session_id)} has {n} turn{'s' if n != 1 else ''}: "
            f"its conversation rewinds to a turn from 1 to {n + 1} (the turns before it are kept)"
        )
    return starts


async def rewind_conversation(
    link: AgentLink,
    index: Index,
    writer: EventWriter,
    parent: SessionRecord,
    turn: int,
    inputs: SessionInputs,
    run: Invocation,
) -> Rewound:
    """A new session over ``link`` holding ``parent``'s turns before ``turn`` (see the module
    docstring); recorded, its writer lock held (``live.lock``) as a new session's is."""
    from acpcli.session.attach import attach

    starts = check_turn(index, parent.id, turn)
    kept = turn - 1
    about = (link.features.display_name, bool(link.features.fork))
    if kept == len(starts) and link.features.fork:
        writer.flush()
        live = await attach(link, "fork", inputs, run, index, writer, None, parent.id)
        _seeded(live, index, writer)
        return Rewound(live, FORKED_BY_AGENT, kept, parent.id, *about)
    live = await attach(link, "new", inputs, run, index, writer, None, None)
    try:
        upto = starts[turn - 1] if turn <= len(starts) else None
        _copy_events(index, writer, parent, live.session_id, upto, turn)
        _seeded(live, index, writer)
        if kept == 0:
            return Rewound(live, EMPTY, kept, parent.id, *about)
        from acpcli.render.transcript import to_text

        carried.keep(live.session_id, to_text(live.store))
    except BaseException:
        if live.lock is not None:
            live.lock.release()  # (the new session stays recorded; nobody holds it)
        raise
    return Rewound(live, FROM_TRANSCRIPT, kept, parent.id, *about)


def _seeded(live: SessionFeed, index: Index, writer: EventWriter) -> None:
    """The new session's store: the turns it holds (as ``show`` has them), its settings as
    the agent answered them."""
    from acpcli.history.records import rebuild
    from acpcli.session.feed import seed_settings

    writer.flush()
    live.store = rebuild(index, live.session_id)
    seed_settings(live, live.response)


def _copy_events(index: Index, writer: EventWriter, parent: SessionRecord, session_id: str, upto: int | None, turn: int) -> None:
    """The new session's record: its parent named, its event log starting with the parent's
    events before ``upto`` (None: all), then a :data:`~acpcli.history.records.FORKED` marker."""
    index.set_parent(session_id, parent.id)
    if parent.prompt_title and turn > 1:
        index.set_prompt_title(session_id, parent.prompt_title)
    for seq, kind, payload in index.events_raw(parent.id):
        if upto is not None and seq >= upto:
            break
        writer.append(session_id, kind, payload)
    writer.append(session_id, FORKED, json.dumps({"parent": parent.id, "turn": turn}))
    writer.flush()


# -- the command ---------------------------------------------------------------------------


def rewind_command(session_id: str, turn: int, run: Invocation) -> Rewound:
    """``acpcli rewind ID --to TURN`` (the conversation part): :func:`rewind_apart` under a
    :class:`~acpcli.processes.supervisor.Supervisor` (signals stop the agent)."""
    import anyio

    from acpcli.processes.supervisor import Supervisor

    supervisor = run.supervisor = Supervisor()
    done: list[Rewound] = []

    async def main() -> int:
        done.append(await rewind_apart(session_id, turn, run))
        return 0

    anyio.run(supervisor.run, main)
    return done[0]


async def rewind_apart(session_id: str, turn: int, run: Invocation) -> Rewound:
    """The conversation of the recorded session ``session_id`` rewound to before ``turn`` by
    an agent of its own: started one-shot on the session's agent, cwd, roots and MCP servers,
    :func:`rewind_conversation`, stopped (the REPL's ``/rewind``, hosted or not, uses it too:
    the session's own agent is left alone). ``run.created`` is told the new id as soon as it
    is recorded. Nothing starts for a turn out of range (:func:`check_turn`)."""
    from acpcli.history.guarded import open_index, verdict
    from acpcli.session.inputs import Options, lookup
    from acpcli.session.launch import link_for

    record = lookup(session_id)
    inputs = Options().inputs(record)
    supervisor = run.supervisor
    index = open_index()
    writer = index.writer()
    if supervisor is not None:
        supervisor.writer = writer
    rewound: Rewound | None = None
    try:
        check_turn(index, record.id, turn)  # before the agent starts
        async with link_for(inputs.agent, protocol=inputs.protocol, log_file=inputs.log_file, run=run, one_shot=True) as link:
            if supervisor is not None:
                supervisor.link = link
            rewound = await rewind_conversation(link, index, writer, record, turn, inputs, run)
            if run.created is not None:
                run.created(rewound.session_id)
            return rewound
    finally:
        if supervisor is not None:
            supervisor.link = None
        try:
            writer.close()
            index.close()
            verdict(index)
        finally:
            if rewound is not None and rewound.live.lock is not None:
                rewound.live.lock.release()
