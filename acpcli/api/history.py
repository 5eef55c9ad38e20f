"""The history without an agent: ``acpcli.sessions()``, ``acpcli.search()``,
``acpcli.transcript(id)`` — what ``acpcli sessions``, ``search`` and ``show`` read, typed.

Nothing here starts an agent or writes to the index (a search indexes first what sessions
stored since the last search, as the CLI's does). ``home`` is the state folder to read (default:
the connection's, else ``$ACPCLI_HOME``, else the platform's), as :func:`acpcli.connect` takes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from acpcli.api.types import Transcript
    from acpcli.history.index import SessionRecord

#: A session's state in the index.
SessionState = Literal["active", "closed"]


@dataclass(frozen=True)
class StoredSession:
    """A session as acpcli recorded it (``acpcli sessions``)."""

    id: str
    #: The name it is recorded under (a configured name, or the agent's own for ``--cmd``).
    agent: str
    #: The agent as a person knows it (``Claude Agent`` for ``@zed-industries/claude-agent-acp``).
    agent_title: str
    title: str | None
    cwd: str
    state: str
    created_at: datetime
    last_used_at: datetime
    protocol_version: int | None
    #: The session this one was forked from, if any.
    parent_id: str | None


@dataclass(frozen=True)
class SearchHit:
    """A session whose messages hold every word searched (``acpcli search``)."""

    session: StoredSession
    #: What the best match is: ``user``, ``agent``, ``thought`` or ``tool``.
    kind: str
    #: Its words around the match (the matching words are not marked).
    snippet: str
    #: How many of the session's messages match.
    matches: int


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def _stored(record: SessionRecord) -> StoredSession:
    from acpcli.history.records import display_name

    return StoredSession(
        record.id, record.agent, display_name(record), record.shown_title, record.cwd, record.state, _when(record.created_at),
        _when(record.last_used_at), record.protocol_version, record.parent_id,
    )


@contextmanager
def _home(home: str | os.PathLike[str] | None) -> Iterator[None]:
    if home is None:
        yield
        return
    from acpcli import paths

    with paths.home_for(Path(os.path.abspath(os.path.expanduser(os.fspath(home))))):
        yield


def sessions(
    *,
    agent: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    state: SessionState | None = "active",
    since: datetime | None = None,
    limit: int | None = 20,
    home: str | os.PathLike[str] | None = None,
) -> list[StoredSession]:
    """The recorded sessions, most recently used first: ``agent`` (the name recorded, or the
    agent's display name), ``cwd``, ``state`` (None: any) and ``since`` filter them; ``limit``
    None: all of them."""
    from acpcli.history.index import Index
    from acpcli.history.records import agent_filter

    with _home(home), Index.existing(read_only=True) as index:
        if index is None:
            return []
        folder = os.path.abspath(os.fspath(cwd)) if cwd is not None else None
        after = since.timestamp() if since is not None else None
        rows = index.list_sessions(agent=agent_filter(index, agent), cwd=folder, state=state, limit=limit, since=after)
        return [_stored(r) for r in rows]


def search(
    text: str,
    *,
    agent: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    since: datetime | None = None,
    thoughts: bool = False,
    limit: int | None = 20,
    home: str | os.PathLike[str] | None = None,
) -> list[SearchHit]:
    """The sessions whose messages hold every word of ``text`` (``word*`` for a prefix), best
    match first, as ``acpcli search`` finds them; ``thoughts``: the agents' thoughts too."""
    from acpcli.history.index import Index
    from acpcli.history.indexing import catch_up
    from acpcli.history.records import agent_filter
    from acpcli.history.search import DEFAULT_KINDS, HIT_END, HIT_START, KINDS, terms

    words = terms(text)
    with _home(home), Index.existing(read_only=False) as index:
        if index is None or not words:
            return []
        catch_up(index)
        folder = os.path.abspath(os.fspath(cwd)) if cwd is not None else None
        hits = index.search(
            words, kinds=KINDS if thoughts else DEFAULT_KINDS, agent=agent_filter(index, agent), cwd=folder,
            since=since.timestamp() if since is not None else None, limit=limit,
        )
    return [
        SearchHit(_stored(record), hit.kind, hit.snippet.replace(HIT_START, "").replace(HIT_END, ""), hit.matches)
        for record, hit in hits
    ]


def transcript(session_id: str, *, home: str | os.PathLike[str] | None = None) -> Transcript:
    """A recorded session's transcript (an id or a unique prefix of one), as ``acpcli show``
    reads it: no agent is started. :class:`~acpcli.errors.SessionNotFound` when not recorded."""
    from acpcli.api.types import Transcript
    from acpcli.history.records import stored

    with _home(home):
        record, store = stored(session_id)
    return Transcript(store, record.id, record.shown_title)
