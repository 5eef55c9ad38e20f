"""The event log's own records, and a session's transcript rebuilt from its log.

acpcli's records are turn starts, settings, replay brackets and its own updates.

The event log holds every ``session/update`` as received plus a few records acpcli writes
itself, whose kinds start with ``acpcli/`` (never a ``sessionUpdate`` kind). Reading the log
back (:func:`rebuild`) is the only place they are interpreted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

    from acpcli.history.eventlog import EventWriter
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
#: from the log merges in each replay that completed, and drops one that was aborted. A
#: replay's start may say it repeats the first events of an earlier one (:class:`ReplayWriter`).
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
    replays: dict[int, _Replay] | None = None  # read when a replay names its base
    events = index.events(session_id) if upto is None else _events_upto(index, session_id, upto)
    for kind, event in events:
        if kind == REPLAY_START:
            pending = Store()
            if isinstance(event, dict) and event.get("base") is not None:
                # Its first events are those of the replay it repeats (see ReplayWriter).
                if replays is None:
                    replays = _replays(index.replay_marks(session_id))
                for base_kind, base_event in _parsed(_raw_replay(index, session_id, replays, event)):
                    _apply(pending, base_kind, base_event)
        elif kind == REPLAY_END:
            if pending is not None:
                # What acpcli recorded stays the record; the replay only adds what it lacks.
                store, pending = merge_replay(store, pending), None
        elif kind == REPLAY_ABORT:
            pending = None
        else:
            _apply(pending if pending is not None else store, kind, event)
    return store


def _apply(store: Store, kind: str, event: Any) -> None:
    """One stored event (not a replay bracket) applied to ``store``."""
    if kind == TURN_START:
        store.turn_boundary()  # each prompt acpcli sent is its own message
    elif kind == TURN_END:
        if isinstance(event, dict):  # what comes after a turn is not part of its answer
            stop, error = event.get("stopReason"), event.get("error")
            store.end_turn(stop if isinstance(stop, str) else None, error if isinstance(error, str) else None)
    elif kind in (SETTING, FORKED):
        return
    elif isinstance(event, dict):  # anything else is junk: skipped
        update: Any = event
        if "jsonrpc" in event:  # stored as the whole frame it arrived in
            params = event.get("params")
            update = params.get("update") if isinstance(params, dict) else None
            if not isinstance(update, dict):
                return
        # turn boundaries are implied by the recorded user messages
        store.apply(update)


# -- replays stored against the last one ---------------------------------------------------


@dataclass
class _Replay:
    """A replay as the log brackets it: the seqs of its start and end (None: aborted, or
    not ended), and the replay whose first ``same`` events it repeats (its start's seq)."""

    start: int
    base: int | None = None
    same: int = 0
    end: int | None = None


def _replays(marks: list[tuple[int, str, str]]) -> dict[int, _Replay]:
    """A session's replays by the seq of their start, from its brackets
    (:meth:`~acpcli.history.index.Index.replay_marks`)."""
    import json

    replays: dict[int, _Replay] = {}
    current: _Replay | None = None
    for seq, kind, payload in marks:
        if kind == REPLAY_START:
            try:
                mark = json.loads(payload)
            except (ValueError, RecursionError):
                mark = None
            base, same = (mark.get("base"), mark.get("same")) if isinstance(mark, dict) else (None, None)
            current = replays[seq] = _Replay(seq)
            if isinstance(base, int) and 0 < base < seq and isinstance(same, int) and same > 0:
                current.base, current.same = base, same
        elif current is not None:  # an end, or an abort (its replay keeps no end)
            if kind == REPLAY_END:
                current.end = seq
            current = None
    return replays


def _last_whole(replays: dict[int, _Replay]) -> _Replay | None:
    """The session's last replay that ended (its record merged it)."""
    return next((r for r in reversed(replays.values()) if r.end is not None), None)


def _ranges(replays: dict[int, _Replay], replay: _Replay) -> list[tuple[int, int]]:
    """The seqs (first, last) that hold ``replay``'s events as the agent sent them: the
    first ``same`` of its base's (and so on back), then its own. Iterative: a chain of
    loads each adding a little is no deeper a walk."""
    chain: list[_Replay] = []
    at: _Replay | None = replay
    while at is not None and at.end is not None:
        chain.append(at)
        at = replays.get(at.base) if at.base is not None else None
    ranges: list[tuple[int, int]] = []
    for link in reversed(chain):  # the first stored in full, then each one that repeats it
        ranges = _first(ranges, link.same) if link.base is not None else []
        assert link.end is not None
        if link.end - 1 >= link.start + 1:
            ranges.append((link.start + 1, link.end - 1))
    return ranges


def _first(ranges: list[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """The seq ranges of the first ``count`` events ``ranges`` hold."""
    taken: list[tuple[int, int]] = []
    for first, last in ranges:
        if count <= 0:
            break
        n = min(count, last - first + 1)
        taken.append((first, first + n - 1))
        count -= n
    return taken


def _raw_replay(index: Index, session_id: str, replays: dict[int, _Replay], mark: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(kind, payload_json_text)`` of the events a replay's start ``mark`` says it repeats
    (the first ``same`` of its ``base``); none when the base is not a replay that ended."""
    base = replays.get(mark["base"]) if isinstance(mark.get("base"), int) else None
    same = mark.get("same")
    if base is None or not isinstance(same, int):
        return
    for first, last in _first(_ranges(replays, base), same):
        for _seq, kind, payload in index.events_between(session_id, first, last):
            yield kind, payload


def _parsed(events: Iterator[tuple[str, str]]) -> Iterator[tuple[str, Any]]:
    import json

    for kind, payload in events:
        try:
            yield kind, json.loads(payload)
        except (ValueError, RecursionError):
            continue  # unreadable: skipped, as rebuild skips it


class ReplayWriter:
    """The event log's side of a load: a replay is stored only where it differs from the last
    one the session's log holds, so that loading a session again and again does not store the
    agent's whole conversation each time, nor make the next rebuild read it all again.

    Each event the agent replays is compared with the next event of the last replay stored
    (read a page at a time, never parsed unless the texts differ). While they are the same,
    nothing is written. At the first difference the replay is bracketed as usual
    (``REPLAY_START`` … ``REPLAY_END``), its start saying ``{"base": SEQ, "same": N}``: its
    first N events are the replay that starts at SEQ's (:func:`rebuild` reads them there),
    only the rest follow. A replay that repeats the last one whole stores nothing at all: the
    record holds it already. The first replay of a session is stored whole.

    Used as the session's recorder while the load runs (the writer's other appends pass
    through); :meth:`end` once the replay is complete, :meth:`abort` when the load failed."""

    def __init__(self, writer: EventWriter, index: Index, session_id: str) -> None:
        self.writer = writer
        self.session_id = session_id
        replays = _replays(index.replay_marks(session_id))
        base = _last_whole(replays)
        self.base = base.start if base is not None else None
        self._stored: Iterator[tuple[str, str]] | None = None
        if base is not None:
            mark = {"base": base.start, "same": sum(last - first + 1 for first, last in _ranges(replays, base))}
            self._stored = _raw_replay(index, session_id, replays, mark)
        self.same = 0  # events that repeated the last replay's
        self.started = False  # the replay's own bracket is written

    def append(self, session_id: str, kind: str, payload: str) -> object:
        if not self.started and session_id == self.session_id:
            if self._repeats(kind, payload):
                self.same += 1
                return None
            self._start()
        return self.writer.append(session_id, kind, payload)

    def flush(self) -> None:
        self.writer.flush()

    def end(self) -> None:
        """The replay is complete: stored, or found the same as the last one (nothing to store)."""
        if not self.started:
            if self._stored is not None and next(self._stored, None) is None:
                self._stored = None
                return  # the last replay, repeated whole: the record holds it already
            self._start()  # the first replay, or fewer events than the last one
        self.writer.append(self.session_id, REPLAY_END, "{}")

    def abort(self) -> None:
        """The load failed: what was stored of its replay is marked as not to be merged."""
        self._drop()
        if self.started:
            self.writer.append(self.session_id, REPLAY_ABORT, "{}")

    def _repeats(self, kind: str, payload: str) -> bool:
        stored = self._stored
        if stored is None:
            return False
        import json

        try:
            was = next(stored, None)
        except Exception:  # noqa: BLE001 - the last replay cannot be read (a damaged page): store this one
            was = None
        if was is not None and was[0] == kind:
            if was[1] == payload:
                return True
            try:  # the same update, written otherwise (the order of its keys)
                if json.loads(was[1]) == json.loads(payload):
                    return True
            except (ValueError, RecursionError):
                pass
        self._drop()
        return False

    def _start(self) -> None:
        import json

        self._drop()
        self.started = True
        mark = {"base": self.base, "same": self.same} if self.base is not None and self.same else {}
        self.writer.append(self.session_id, REPLAY_START, json.dumps(mark))

    def _drop(self) -> None:
        stored, self._stored = self._stored, None
        close = getattr(stored, "close", None)
        if close is not None:
            close()  # its cursor


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
