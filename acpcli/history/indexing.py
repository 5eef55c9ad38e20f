"""Keeping the search documents (:mod:`acpcli.history.search`) in step with what sessions stored.

A session's documents are its transcript as ``show`` rebuilds it from the event log (replays
merged as :func:`~acpcli.history.records.rebuild` merges them), so reindexing a session
means rebuilding it. That is done:

* after every turn (:func:`turn_indexed`, from the session layer's ``after_turn``):
  the turn's messages are added as they stand in the live store, without reading the log,
  when the documents already reflected everything stored before the turn but records that
  add no text (commands, modes, usage, settings...); otherwise the whole session is rebuilt;
* before a search reads (:func:`catch_up`), for every session whose log has grown past its
  documents: the sessions recorded before acpcli had search, a load's replay, and anything a
  killed process stored but did not index.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from acpcli.history.records import SETTING

if TYPE_CHECKING:
    from acpcli.history.index import Index
    from acpcli.model import Store

log = logging.getLogger("acpcli.history.search")

#: Event kinds that never add or change a transcript's text: the documents stay true across
#: them. (Anything else -- messages, tool calls, replays, acpcli's local updates -- may.)
_TEXTLESS = frozenset(
    {
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "current_model_update",
        "session_info_update",
        "usage_update",
        "state_update",
        "plan",
        "plan_update",
        SETTING,
    }
)  # not LOCAL: acpcli's own updates name tool calls and cancel them


def reindex(index: Index, session_id: str) -> None:
    """Rebuild a session's transcript from its event log and make its documents say the same."""
    from acpcli.history import search
    from acpcli.history.records import rebuild

    seq = index.last_seq(session_id)  # read first: events stored meanwhile make it stale again
    store = rebuild(index, session_id)
    index.replace_documents(session_id, search.documents(store.entries), seq)


def catch_up(index: Index, progress: Callable[[int, int], None] | None = None) -> int:
    """Reindex every session whose documents lag its event log, least recent first; call
    ``progress(done, total)`` after each. Return how many were reindexed. Also makes the FTS5
    index if this SQLite has FTS5 and the database was made without it."""
    index.ensure_fts()
    todo = index.stale_sessions()
    if not todo:
        return 0
    index.last_seq(todo[0][0])  # flushes this process's writers: none may write inside the batch
    # Sessions are indexed in batches (one transaction each: FTS5 merges what one transaction
    # added as one segment, so a transaction per session costs twice as much on a large
    # history), a fraction of a second each with a pause between them, so that another acpcli
    # recording a turn never waits for the catch-up more than a moment.
    from acpcli.history.transactions import in_batches

    total = len(todo)

    def one(item: tuple[int, tuple[str, int]]) -> None:
        done, (session_id, _last) = item
        reindex(index, session_id)
        if progress is not None:
            progress(done, total)

    in_batches(index.conn, list(enumerate(todo, 1)), one)
    return len(todo)


class Turn(Protocol):
    """What :func:`turn_indexed` reads of a session whose turn just ended (the session layer's
    live session has it: this floor names nothing above it)."""

    @property
    def session_id(self) -> str: ...  # the id the index records
    @property
    def store(self) -> Store: ...  # the session's live transcript
    @property
    def turn_seq(self) -> int | None: ...  # the seq of the turn's start record (None: none)
    @property
    def turn_first_entry(self) -> int: ...  # where the turn's entries begin in the store


def turn_indexed(index: Index, live: Turn) -> None:
    """A turn ended (its events flushed): add what it said to the session's documents.

    Cheap when the documents reflected the log up to the turn's start (the usual case): the
    turn's entries of the live store are added. Otherwise the session is reindexed whole.
    Never raises: the documents are derived, and a failure leaves the session stale, to be
    caught up by the next search.
    """
    from acpcli.history import search

    try:
        start = live.turn_seq
        indexed = index.indexed_seq(live.session_id)
        if start is not None and indexed < start and all(
            kind in _TEXTLESS for kind in index.kinds_after(live.session_id, indexed)[: start - indexed - 1]
        ):
            docs = search.documents(live.store.entries[live.turn_first_entry :])
            index.add_documents(live.session_id, docs, index.last_seq(live.session_id))
        else:
            reindex(index, live.session_id)
    except Exception:
        log.warning("could not index the turn of %s for search (the next search will)", live.session_id, exc_info=True)
