"""Sessions the agent no longer knows: a fresh stand-in for a never-prompted one, a true hint for the rest.

No real agent keeps a session it has not been prompted in (observed: codex, claude, gemini): after
``acpcli new --no-repl`` the next process's load/resume of that id is answered "not found"
(codex and claude ``-32002``; gemini ``-32603`` whose ``data.details`` says "Invalid session
identifier", or "No previous sessions found" when the project has none). Such a session holds nothing to lose, so the id ``new`` printed keeps working:
a fresh ``session/new`` with the recorded setup (cwd, extra roots, MCP servers, the settings
changed since) stands in for it, and the index maps the user's id to the agent's new one
(``agent_session_id``). A fork (``acpcli fork``) that never had a turn of its own is
forked from its parent again instead, so it keeps the conversation it was made with (but a
rewound conversation, which starts from a transcript of the turns it kept, starts anew). A
session that had a turn is not replaced: the error says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpcli.errors import AuthRequired, ProtocolError, RpcError
from acpcli.history.records import recorded_settings
from acpcli.text.safe import shown_id

if TYPE_CHECKING:
    from acpcli.history.eventlog import EventWriter
    from acpcli.history.index import Index, SessionRecord
    from acpcli.render import View
    from acpcli.session.context import Invocation
    from acpcli.session.feed import SessionFeed
    from acpcli.session.inputs import SessionInputs
    from acpcli.session.link import AgentLink

#: What gemini's ``-32603`` data says when it has no such session (gemini-cli 0.61.0): another
#: session of the project exists, or none does.
_GEMINI_MARKERS = ("invalid session identifier", "no previous sessions found")


def agent_forgot(err: BaseException) -> bool:
    """True when an agent's error to a load/resume/close says it does not know the session.

    By code: ``-32002`` (Resource not found), what the protocol gives for it (codex, claude).
    gemini answers ``-32603`` (Internal error) instead, and only its ``data`` tells this case
    from a real internal error: for that code alone, the data is read for gemini's words."""
    if not isinstance(err, RpcError) or isinstance(err, (AuthRequired, ProtocolError)):
        return False
    if err.code == RpcError.RESOURCE_NOT_FOUND:
        return True
    if err.code != RpcError.INTERNAL_ERROR:
        return False
    text = f"{err.rpc_message}\n{err.data_detail()}".lower()
    return any(marker in text for marker in _GEMINI_MARKERS)


async def stand_in(
    link: AgentLink,
    known: SessionRecord,
    inputs: SessionInputs,
    run: Invocation,
    index: Index,
    writer: EventWriter,
    view: View | None,
) -> SessionFeed:
    """A fresh agent session for the never-prompted ``known``, recorded under its id: for a
    fork whose parent is recorded and an agent that forks, a fork of the parent again (not for a
    rewound conversation: its transcript still waits to go with its first prompt)."""
    from acpcli.errors import AcpcliError, SessionNotFound
    from acpcli.session import carried

    parent = None
    # A rewound conversation starts from the transcript of the turns it kept (sent with its
    # first prompt): a fork of the parent would hold the turns the rewind left out.
    if known.parent_id and link.features.fork and carried.pending(known.id) is None:
        try:
            parent = index.get(known.parent_id)
        except SessionNotFound:
            parent = None  # deleted since: a fresh session is what is left
    if parent is not None:
        live = await link.fork(parent.wire_id, inputs.cwd, inputs.additional_directories, inputs.mcp_servers, sink=view)
    else:
        live = await link.new(inputs.cwd, inputs.additional_directories, inputs.mcp_servers, sink=view)
    agent_id = live.session_id
    live.session_id, live.wire_id = known.id, (agent_id if agent_id != known.id else None)
    live.recorder = writer
    index.set_agent_session_id(known.id, agent_id)
    sid = shown_id(known.id)
    how = (
        f"forked {shown_id(parent.id)} again ({shown_id(agent_id)})"
        if parent is not None
        else f"started a fresh agent session with the same setup ({shown_id(agent_id)})"
    )
    run.env.err.print(
        f"acpcli: {link.features.display_name} no longer knows session {sid} ({sid} never had a turn): "
        f"{how}; {sid} keeps working",
        markup=False,
        highlight=False,
    )
    for key, value in recorded_settings(index, known.id):
        try:
            await link.set_by_name(live, key, value)
        except AcpcliError as err:  # a setting the new session does not offer: say so, go on
            run.env.err.print(f"acpcli: could not set {key} again: {err}", markup=False, highlight=False)
    return live


def lost_hint(record: SessionRecord, agent_name: str) -> str:
    """The hint for a session with turns that the agent no longer has (true in every part)."""
    return (
        f"{agent_name} no longer has session {shown_id(record.id)}; its transcript is still recorded here "
        f"(`acpcli show {shown_id(record.id)}`), but the agent's context is gone: continue in a new session "
        f"(`acpcli prompt` without --session/--last)"
    )
