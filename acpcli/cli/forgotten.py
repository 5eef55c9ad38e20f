"""Sessions the agent no longer knows: a fresh stand-in for a never-prompted one, a true hint for the rest.

No real agent keeps a session it has not been prompted in (REAL-AGENTS.md): after
``acpcli new --no-repl`` the next process's load/resume of that id is answered "not found"
(codex and claude ``-32002``; gemini ``-32603`` whose ``data.details`` says "Invalid session
identifier", or "No previous sessions found" when the project has none). Such a session holds nothing to lose, so the id ``new`` printed keeps working:
a fresh ``session/new`` with the recorded setup (cwd, extra roots, MCP servers, the settings
changed since) stands in for it, and the index maps the user's id to the agent's new one
(``agent_session_id``). A session that had a turn is not replaced: the error says so.
"""

from __future__ import annotations

from typing import Any

from acpcli.errors import AuthRequired, ProtocolError, RpcError
from acpcli.session import SETTING, TURN_START

#: Event kinds that show the session had a turn (acpcli's marker; older logs: user messages).
_TURN_KINDS = frozenset((TURN_START, "user_message_chunk", "user_message"))


#: What gemini's ``-32603`` data says when it has no such session (REAL-AGENTS.md): another
#: session of the project exists, or none does.
_GEMINI_MARKERS = ("invalid session identifier", "no previous sessions found")


def agent_forgot(err: BaseException) -> bool:
    """True when an agent's error to a load/resume/close says it does not know the session:
    ``-32002`` (Resource not found), or another error (not "method not found") whose message
    or data says the session was not found or its identifier is invalid (gemini)."""
    if not isinstance(err, RpcError) or isinstance(err, (AuthRequired, ProtocolError)):
        return False
    if err.code == RpcError.RESOURCE_NOT_FOUND:
        return True
    if err.code == RpcError.METHOD_NOT_FOUND:
        return False
    text = f"{err.rpc_message}\n{err.data_detail()}".lower()
    return ("session" in text and "not found" in text) or any(marker in text for marker in _GEMINI_MARKERS)


def had_turns(index: Any, session_id: str) -> bool:
    """Whether acpcli ever sent a prompt in this session (or saw a user message in it)."""
    return any(kind in _TURN_KINDS for kind, _ in index.events(session_id))


def recorded_settings(index: Any, session_id: str) -> list[tuple[str, str]]:
    """The session settings changed in this session, last value per setting, in order."""
    latest: dict[str, str] = {}
    for kind, payload in index.events(session_id):
        if kind != SETTING or not isinstance(payload, dict):
            continue
        key, value = payload.get("key"), payload.get("value")
        if not isinstance(key, str):
            continue
        if isinstance(value, bool):
            latest[key] = "on" if value else "off"
        elif isinstance(value, str):
            latest[key] = value
    return list(latest.items())


async def stand_in(link: Any, known: Any, inputs: Any, run: Any, index: Any, writer: Any, view: Any) -> Any:
    """A fresh agent session for the never-prompted ``known``, recorded under its id."""
    from acpcli.errors import AcpcliError

    live = await link.new(inputs.cwd, inputs.additional_directories, inputs.mcp_servers, sink=view)
    agent_id = live.session_id
    live.session_id, live.wire_id = known.id, (agent_id if agent_id != known.id else None)
    live.recorder = writer
    index.set_agent_session_id(known.id, agent_id)
    run.env.err.print(
        f"acpcli: {link.features.display_name} no longer knows session {known.id} ({known.id} never had a turn): "
        f"started a fresh agent session with the same setup ({agent_id}); {known.id} keeps working",
        markup=False,
        highlight=False,
    )
    for key, value in recorded_settings(index, known.id):
        try:
            await link.set_by_name(live, key, value)
        except AcpcliError as err:  # a setting the new session does not offer: say so, go on
            run.env.err.print(f"acpcli: could not set {key} again: {err}", markup=False, highlight=False)
    return live


def lost_hint(record: Any, agent_name: str) -> str:
    """The hint for a session with turns that the agent no longer has (true in every part)."""
    return (
        f"{agent_name} no longer has session {record.id}; its transcript is still recorded here "
        f"(`acpcli show {record.id}`), but the agent's context is gone: continue in a new session "
        f"(`acpcli prompt` without --session/--last)"
    )


def titles_from_list(index: Any, infos: list[dict[str, Any]]) -> int:
    """Save the titles an agent's ``session/list`` answer gives to the sessions recorded here
    (matched by the agent's id); returns how many changed."""
    titles = {
        info.get("sessionId"): info.get("title")
        for info in infos
        if isinstance(info.get("sessionId"), str) and isinstance(info.get("title"), str) and info.get("title")
    }
    changed = 0
    if not titles:
        return 0
    for rec in index.list_sessions():
        title = titles.get(rec.wire_id)
        if title is not None and title != rec.title:
            index.set_title(rec.id, title)
            changed += 1
    return changed
