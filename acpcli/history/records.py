"""The event log's own records, and a session's transcript rebuilt from its log.

acpcli's records are turn starts, settings, replay brackets and its own updates.

The event log holds every ``session/update`` as received plus a few records acpcli writes
itself, whose kinds start with ``acpcli/`` (never a ``sessionUpdate`` kind). Reading the log
back (:func:`rebuild`) is the only place they are interpreted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

    from acpcli.history.index import Index, SessionRecord
    from acpcli.model import Store

#: A prompt turn starts (so a rebuilt transcript splits user messages where acpcli sent
#: separate prompts, whatever messageIds the agent uses).
TURN_START = "acpcli/turn-start"
#: A prompt turn ended: ``{"stopReason": ..., "error": ...}`` (one of them null). What the agent
#: sends after it (a mode change's note, background work) starts messages of its own.
TURN_END = "acpcli/turn-end"
#: A session setting was changed (so a fresh agent session can be given the same settings).
SETTING = "acpcli/setting"
#: Brackets around a load's replay: a replay is the whole conversation, so a transcript rebuilt
#: from the log merges in the last replay that completed, and drops one that was aborted.
REPLAY_START = "acpcli/replay-start"
REPLAY_END = "acpcli/replay-end"
REPLAY_ABORT = "acpcli/replay-abort"
#: The end of a fork's copy of its parent's events (``acpcli fork``): what follows is the
#: fork's own; payload ``{"parent": ID}``.
FORKED = "acpcli/forked"
#: An update acpcli made itself (a tool call first seen in a permission request, tool calls
#: marked cancelled): its payload is the update, applied on rebuild like the agent's.
LOCAL = "acpcli/local"

#: Event kinds that show the session had a turn (acpcli's marker; older logs: user messages).
_TURN_KINDS = frozenset((TURN_START, "user_message_chunk", "user_message"))


def rebuild(index: Index, session_id: str, *, upto: int | None = None) -> Store:
    """A session's transcript rebuilt from its event log through the store (``upto``: from
    its events up to that seq only, as a live session's host had stored them when asked)."""
    from acpcli.history.replay_merge import merge_replay
    from acpcli.model import Store

    store = Store()
    pending: Store | None = None  # a replay in progress
    events = index.events(session_id) if upto is None else _events_upto(index, session_id, upto)
    for kind, event in events:
        if kind == REPLAY_START:
            pending = Store()
        elif kind == REPLAY_END:
            if pending is not None:
                # What acpcli recorded stays the record; the replay only adds what it lacks.
                store, pending = merge_replay(store, pending), None
        elif kind == REPLAY_ABORT:
            pending = None
        elif kind == TURN_START:
            (pending or store).turn_boundary()  # each prompt acpcli sent is its own message
        elif kind == TURN_END:
            if isinstance(event, dict):  # what comes after a turn is not part of its answer
                stop, error = event.get("stopReason"), event.get("error")
                (pending or store).end_turn(
                    stop if isinstance(stop, str) else None, error if isinstance(error, str) else None
                )
        elif kind in (SETTING, FORKED):
            continue
        elif isinstance(event, dict):  # anything else is junk: skipped
            update: Any = event
            if "jsonrpc" in event:  # stored as the whole frame it arrived in
                params = event.get("params")
                update = params.get("update") if isinstance(params, dict) else None
                if not isinstance(update, dict):
                    continue
            # turn boundaries are implied by the recorded user messages
            (pending or store).apply(update)
    return store


def _events_upto(index: Index, session_id: str, upto: int) -> Iterator[tuple[str, Any]]:
    import json

    for seq, kind, payload in index.events_raw(session_id):
        if seq > upto:
            return
        try:
            yield kind, json.loads(payload)
        except (ValueError, RecursionError):
            continue  # unreadable: skipped, as rebuild skips it without a bound


def had_turns(index: Index, session_id: str) -> bool:
    """Whether acpcli ever sent a prompt in this session (or saw a user message in it); for a
    fork, in the fork itself (the parent's turns copied before :data:`FORKED` do not count)."""
    had = False
    for kind, _ in index.events(session_id):
        if kind == FORKED:
            had = False
        elif kind in _TURN_KINDS:
            had = True
    return had


def recorded_settings(index: Index, session_id: str) -> list[tuple[str, str]]:
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


def agent_filter(index: Index, name: str | None) -> str | None:
    """The recorded agent name a ``--agent`` filter means: ``name`` when sessions are
    recorded under it, else the recorded name of the agent whose display name (its own
    title, ``Claude Agent``) it is, so either name finds its sessions; else ``name`` as it is."""
    if name is None or index.count_sessions(agent=name, state=None):
        return name
    wanted = name.casefold()
    for record in index.list_sessions():
        title = (record.agent_info or {}).get("title")
        if isinstance(title, str) and title.strip().casefold() == wanted:
            return record.agent
    return name


def display_name(record: SessionRecord) -> str:
    """The agent as a person knows it: the configured name it was started by (``demo``,
    ``gemini``), or for a ``--cmd`` agent its own title (``Claude Agent`` rather than
    ``@zed-industries/claude-agent-acp``)."""
    info = record.agent_info or {}
    title = info.get("title")
    if record.agent == info.get("name") and isinstance(title, str) and title.strip():
        return title
    return record.agent


def stored(session_id: str) -> tuple[SessionRecord, Store]:
    """The index record and the rebuilt transcript of a session, read-only (SessionNotFound
    for an id that is not recorded: nothing is created)."""
    from acpcli.errors import SessionNotFound
    from acpcli.history.index import Index
    from acpcli.text.safe import shown_id

    with Index.existing() as index:
        if index is None:
            raise SessionNotFound(f"no session {shown_id(session_id)!r} in the local index")
        record = index.get(session_id)
        return record, rebuild(index, record.id)
