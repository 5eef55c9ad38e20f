"""Local state: the SQLite session index and its migrations.

Invariants this module keeps:

* **Under the one root.** The database is ``db_path()`` (:mod:`acpcli.paths` owns the
  root and creates directories 0700); the database file is created with mode 0600 (SQLite
  gives its ``-wal``/``-shm`` files the same mode).
* **Lazy.** :class:`Index` opens the database on first use (or :meth:`Index.open`), so
  ``acpcli --help`` never touches the disk; completion uses a read-only index.
* **Migrations are an append-only list.** ``MIGRATIONS[i]`` takes the schema from version
  ``i`` to ``i + 1``; the applied version is ``PRAGMA user_version``. Applying runs inside
  ``BEGIN IMMEDIATE`` and re-reads the version under that lock, so two processes opening a
  fresh database at once apply each migration exactly once. Never edit a shipped entry:
  append a new one. Applying is robust to what is already there (:func:`_apply`: a column,
  table, index or trigger that exists is left as it is), so a half-migrated index, or one
  whose ``user_version`` lags its schema, migrates rather than failing on "duplicate column".
* **Only acpcli's schema.** A trigger or view acpcli did not create (:func:`unknown_objects`,
  against what the migrations make) would run on our writes: an index holding one is not
  written (:class:`~acpcli.errors.DamagedState`, ``acpcli doctor --repair`` drops it).
* **The user's own.** The home and the index are refused when another user owns them or may
  write them (:func:`acpcli.paths.state_refusal`), unless ``ACPCLI_ALLOW_SHARED_HOME`` says so.
* **Every writer marked.** A method of :class:`Index` that writes is marked :func:`writes`
  (the index's own records) or :func:`writes_derived` (search documents); the guarded index
  (:class:`~acpcli.history.guarded.SafeIndex`) guards each one (:data:`WRITERS`), and a test
  reads this class's code for writers left unmarked. Callers outside :mod:`acpcli.history`
  never touch the connection: what they need is a method here.
* **No secrets.** The index stores MCP server *names* only (:meth:`Index.upsert_session`
  rejects anything else); the wire log and ``--raw`` mask definitions with
  :func:`acpcli.wire.redact.redact_frame`.

The event log -- its page format, :class:`~acpcli.history.eventlog.EventWriter` and the reading
of pages -- lives in :mod:`acpcli.history.eventlog`; :class:`Index` hands out writers, flushes them
before every read, and delegates its event methods there.

Concurrency: several acpcli processes may use one database at once (WAL mode, writers
serialized by ``BEGIN IMMEDIATE``; readers never wait). A write waits for another process's
write lock up to :func:`lock_wait` (``ACPCLI_LOCK_WAIT`` seconds, default 15); a lock held
longer is :class:`~acpcli.errors.DatabaseLocked` (exit 18, naming the holder's pid where
:func:`lock_holder` finds it), never a storage failure. Live commands wait much less at a
time and buffer instead (:mod:`acpcli.history.guarded`). An :class:`Index` and its writers belong
to one thread.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from acpcli.errors import (
    AcpcliError,
    ConfigError,
    DamagedState,
    DatabaseLocked,
    SessionNotFound,
    StorageError,
    UsageError,
)
from acpcli.history.damage import REPAIR_HINT, damaged, is_damage
from acpcli.paths import Refusal, db_path, ensure_dir, home_refusal, state_refusal, tighten
from acpcli.text.safe import escape_surrogates, shown_id

if TYPE_CHECKING:
    import sqlite3

    from acpcli.errors import DatabaseLocked
    from acpcli.history.eventlog import EventWriter
    from acpcli.history.search import Hit

# sqlite3, urllib.parse and acpcli.history.eventlog are imported where used: the CLI's start-up path
# and completion (which lists sessions, never reads events) must stay cheap.

#: How long a write waits for another process's write lock unless ``ACPCLI_LOCK_WAIT`` says
#: otherwise (:func:`lock_wait`).
BUSY_TIMEOUT_MS = 15000
LOCK_WAIT_ENV = "ACPCLI_LOCK_WAIT"
# Event rows are ~250 bytes; 8 KB pages (SQLite's default is 4 KB) mean fewer page splits
# per appended row (about 15% less insert CPU). Only takes effect on a new database.
PAGE_SIZE = 8192
WAL_AUTOCHECKPOINT_PAGES = (64 << 20) // PAGE_SIZE  # let the WAL reach 64 MB
SESSION_STATES = ("active", "closed")

# --------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------

_PAGE_EVENTS = 500  # events per page when old rows are copied into pages


def _events_into_pages(conn: sqlite3.Connection) -> None:
    """Migration 2: create ``event_pages``, copy every ``events`` row into it (runs of
    consecutive seqs of a session, up to ``_PAGE_EVENTS`` a page), drop ``events``."""
    from acpcli.history import eventlog

    for statement in _statements(eventlog.PAGES_SCHEMA):
        _apply(conn, statement)
    if not _exists(conn, "events"):  # a half-migrated index: copied and dropped already
        return
    rows = conn.execute("SELECT session_id, seq, received_at, kind, payload FROM events ORDER BY session_id, seq")
    eventlog.write_pages(conn, rows, per_page=_PAGE_EVENTS)  # a cursor: not all in memory
    conn.execute("DROP TABLE events")  # its trigger goes with it


#: The longest title taken from a prompt's first line (longer ones end with "…").
PROMPT_TITLE_CHARS = 80
_USER_KINDS = ("user_message_chunk", "user_message")


def prompt_title(text: str) -> str | None:
    """A title from a prompt: its first non-blank line, trimmed to ``PROMPT_TITLE_CHARS``."""
    for line in text.splitlines():
        line = " ".join(line.split())
        if line:
            return line if len(line) <= PROMPT_TITLE_CHARS else line[: PROMPT_TITLE_CHARS - 1].rstrip() + "…"
    return None


def _user_text(kind: str, payload: Any) -> str | None:
    """The text of a stored user message event (an update, or its whole session/update frame)."""
    if kind not in _USER_KINDS or not isinstance(payload, dict):
        return None
    if "sessionUpdate" not in payload:
        params = payload.get("params")
        payload = params.get("update") if isinstance(params, dict) else None
        if not isinstance(payload, dict):
            return None
    content = payload.get("content")
    blocks = content if isinstance(content, list) else [content]
    texts = [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    return "".join(texts) or None


def _prompt_titles(conn: sqlite3.Connection) -> None:
    """Migration 6: ``prompt_title``, the first line of a session's first prompt (the title
    shown while the agent has given none), filled in for the untitled sessions recorded so far
    from their stored events (read up to the first user message only)."""
    from acpcli.history import eventlog

    _apply(conn, "ALTER TABLE sessions ADD COLUMN prompt_title TEXT")
    untitled = [row[0] for row in conn.execute("SELECT id FROM sessions WHERE title IS NULL")]
    for session_id in untitled:
        for kind, payload in eventlog.events(conn, session_id):
            text = _user_text(kind, payload)
            title = prompt_title(text) if text else None
            if title:
                conn.execute("UPDATE sessions SET prompt_title = ? WHERE id = ?", (title, session_id))
                break


def _search_index(conn: sqlite3.Connection) -> None:
    """Migration 7: the search documents, and their FTS5 index where SQLite has FTS5
    (:mod:`acpcli.history.search`); the first search fills them in for the sessions recorded so far."""
    from acpcli.history import search

    for statement in search.DOCS_SCHEMA:  # search.create, robust to what exists (_apply)
        _apply(conn, statement)
    search.ensure_fts(conn)


# Append-only. Entry i migrates user_version i -> i + 1: an SQL script, or a function of the
# connection for what SQL cannot do. Never edit a shipped entry.
MIGRATIONS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    # 1: the session index and the raw event log
    """
    CREATE TABLE sessions (
        id               TEXT PRIMARY KEY,
        agent            TEXT NOT NULL,
        argv             TEXT NOT NULL DEFAULT '[]',   -- JSON list of strings
        cwd              TEXT NOT NULL,
        additional_dirs  TEXT NOT NULL DEFAULT '[]',   -- JSON list of absolute paths
        mcp_servers      TEXT NOT NULL DEFAULT '[]',   -- JSON list of server NAMES only
        protocol_version INTEGER,
        title            TEXT,
        created_at       REAL NOT NULL,                -- unix seconds
        last_used_at     REAL NOT NULL,
        state            TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'closed')),
        agent_info       TEXT                          -- JSON object or NULL
    );
    CREATE INDEX sessions_by_last_used ON sessions (last_used_at DESC);
    CREATE TABLE events (
        id          INTEGER PRIMARY KEY,
        session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq         INTEGER NOT NULL,
        received_at REAL NOT NULL,
        kind        TEXT NOT NULL,                     -- the sessionUpdate discriminator
        payload     TEXT NOT NULL,                     -- the update's JSON, or its whole session/update frame as received
        UNIQUE (session_id, seq)
    );
    CREATE TRIGGER events_are_append_only BEFORE UPDATE ON events
    BEGIN
        SELECT RAISE(ABORT, 'events are append-only');
    END;
    """,
    # 2: the event log in pages (one row per batch of a session's events); events copied
    _events_into_pages,
    # 3: the agent's id for a session when it differs from the user's (a fresh agent session
    # replaced one the agent forgot), and the MCP references to resolve again on load/resume
    """
    ALTER TABLE sessions ADD COLUMN agent_session_id TEXT;   -- NULL: the same as id
    ALTER TABLE sessions ADD COLUMN mcp_refs TEXT;           -- JSON {"config": path|null, "names": [...]} or NULL
    """,
    # 4: the --protocol choice a session speaks ("1", "2", "2-latest"), so resume/load/
    # prompt --session/close speak it again; protocol_version stays the number
    """
    ALTER TABLE sessions ADD COLUMN protocol TEXT;
    """,
    # 5: indexes for the filters of `acpcli sessions` (--state, --agent, --cwd, each with the
    # recency order, so a page of the newest and its count read a slice, not the table)
    """
    CREATE INDEX sessions_by_state ON sessions (state, last_used_at DESC);
    CREATE INDEX sessions_by_agent ON sessions (agent, last_used_at DESC);
    CREATE INDEX sessions_by_cwd ON sessions (cwd, last_used_at DESC);
    """,
    # 6: the title a session's first prompt gives it (shown while the agent has given none);
    # filled in for existing sessions from their events
    _prompt_titles,
    # 7: full-text search: a document per message and tool call title of each transcript,
    # the FTS5 index over them, and how far each session's documents reach (search_seq)
    _search_index,
    # 8: who gave a session its title: 'user' (--title), which the agent's titles never
    # replace; NULL: the agent (session_info_update, session/list)
    """
    ALTER TABLE sessions ADD COLUMN title_source TEXT CHECK (title_source IS NULL OR title_source = 'user');
    """,
    # 9: a recorded session is never taken over: its agent and cwd are its own (an agent that
    # answers session/new with an id recorded here gets a local id of its own, the agent's
    # kept in agent_session_id); an UPDATE that would change them is refused
    """
    CREATE TRIGGER IF NOT EXISTS sessions_keep_their_owner BEFORE UPDATE OF agent, cwd ON sessions
    WHEN NEW.agent IS NOT OLD.agent OR NEW.cwd IS NOT OLD.cwd
    BEGIN
        SELECT RAISE(ABORT, 'a recorded session keeps its agent and cwd');
    END;
    """,
    # 10: the session's token usage and cost as its agent last reported them (usage_update:
    # the context used and its size, the session's running cost)
    """
    ALTER TABLE sessions ADD COLUMN usage TEXT;   -- JSON {"used", "size", "cost"} or NULL
    """,
    # 11: the session a fork was made from (`acpcli fork`, /fork); no foreign key: deleting
    # the parent leaves its forks, which still name it
    """
    ALTER TABLE sessions ADD COLUMN parent_id TEXT;
    """,
)


def _statements(script: str) -> Iterator[str]:
    """Split a script into statements (trigger bodies included) without executescript.

    ``executescript`` commits first, which would break the BEGIN IMMEDIATE that makes
    concurrent migration safe.
    """
    import sqlite3
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending.strip()
            pending = ""
    if pending.strip():
        raise ValueError(f"incomplete SQL statement in migration: {pending.strip()[:60]!r}")


_ADD_COLUMN = re.compile(r"ALTER\s+TABLE\s+(\w+)\s+ADD\s+(?:COLUMN\s+)?(\w+)", re.IGNORECASE)
_CREATE = re.compile(
    r"CREATE\s+(?:UNIQUE\s+|VIRTUAL\s+)?(?:TABLE|INDEX|TRIGGER|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE
)


def _exists(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the schema has an object (table, index, trigger, view) called ``name``."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _apply(conn: sqlite3.Connection, statement: str) -> None:
    """Run one migration statement unless what it makes is there already: a column its table
    has, an object of its name. A half-migrated index (or one whose ``user_version`` was
    set back) then migrates instead of failing on "duplicate column name"."""
    added = _ADD_COLUMN.match(statement)
    if added is not None:
        table, column = added.groups()
        if any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})")):
            return
    created = _CREATE.match(statement)
    if created is not None and _exists(conn, created.group(1)):
        return
    conn.execute(statement)


def _run_migration(conn: sqlite3.Connection, step: str | Callable[[sqlite3.Connection], None]) -> None:
    if callable(step):
        step(conn)
        return
    for statement in _statements(step):
        _apply(conn, statement)


# --------------------------------------------------------------------------------------
# The schema acpcli makes, and what else a file may hold
# --------------------------------------------------------------------------------------

_known: dict[str, dict[str, set[str]]] = {}


def _normal_sql(sql: str | None) -> str:
    return " ".join((sql or "").split())


def known_schema() -> dict[str, dict[str, set[str]]]:
    """Every schema object some version of acpcli's schema has: name -> {type: its SQL texts,
    whitespace folded}, SQLite's own (``sqlite_*``) left out. Made once, by applying the
    migrations one by one in memory: an index at any version, or whose ``user_version`` lags
    what it holds (half-migrated), has nothing unknown."""
    import sqlite3

    if not _known:
        known: dict[str, dict[str, set[str]]] = {}
        conn = sqlite3.connect(":memory:", isolation_level=None)
        try:
            for step in MIGRATIONS:
                _run_migration(conn, step)
                for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master"):
                    if not name.startswith("sqlite_"):
                        known.setdefault(name, {}).setdefault(kind, set()).add(_normal_sql(sql))
            _current.update(
                (name, (kind, _normal_sql(sql)))
                for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master WHERE type IN ('trigger', 'index')")
                if sql is not None
            )
        finally:
            conn.close()
        _known.update(known)
    return _known


#: The triggers and indexes of the current schema: name -> (type, SQL) (see :func:`missing_objects`).
_current: dict[str, tuple[str, str]] = {}


def missing_objects(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    """``(type, name, SQL)`` of each trigger and index of the current schema that an index
    at the current version lacks (acpcli's own trigger dropped lets a session be taken over)."""
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version != len(MIGRATIONS):
        return []
    known_schema()
    have = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    return [(kind, name, sql) for name, (kind, sql) in sorted(_current.items()) if name not in have]


def unknown_objects(conn: sqlite3.Connection, *, code_only: bool = False) -> list[tuple[str, str, str]]:
    """``(type, name, table)`` of each schema object of ``conn``'s database that acpcli's
    migrations do not make (:func:`known_schema`): a trigger or view whose name or SQL
    is not acpcli's, a table or index of a name acpcli does not use. ``code_only``: triggers
    and views alone (what runs when we write). Empty for a version newer than this acpcli."""
    from acpcli.history.search import _SEARCH_TABLES

    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version > len(MIGRATIONS):
        return []
    where = " WHERE type IN ('trigger', 'view')" if code_only else ""
    rows = conn.execute(f"SELECT type, name, tbl_name, sql FROM sqlite_master{where}").fetchall()
    known = known_schema()
    unknown = []
    for kind, name, table, sql in rows:
        if not isinstance(name, str) or name.startswith("sqlite_"):
            continue
        if kind == "table" and name in _SEARCH_TABLES:  # FTS5's tables: a file made where SQLite has FTS5
            continue
        made = known.get(name, {})
        if kind not in made or (kind in ("trigger", "view") and _normal_sql(sql) not in made[kind]):
            unknown.append((str(kind), name, str(table)))
    return unknown


def planted_error(path: Path, unknown: Sequence[tuple[str, str, str]]) -> DamagedState:
    """The one line refusing to write to an index holding triggers or views acpcli did not make."""
    from acpcli.text.safe import safe_line

    kind, name, table = unknown[0]
    more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
    return DamagedState(
        f"the session index {path} holds a {kind} acpcli did not create ({safe_line(name)!r} on "
        f"{safe_line(table)!r}){more}: refusing to write to it",
        hint=REPAIR_HINT,
    )


# --------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------


@dataclass
class SessionRecord:
    """One row of the session index. Times are unix seconds."""

    id: str
    agent: str
    cwd: str
    argv: list[str] = field(default_factory=list)
    additional_dirs: list[str] = field(default_factory=list)
    mcp_servers: list[str] = field(default_factory=list)  # names only, never definitions
    protocol_version: int | None = None
    title: str | None = None
    created_at: float = field(default_factory=time.time)
    last_used_at: float = field(default_factory=time.time)
    state: str = "active"
    agent_info: dict[str, Any] | None = None
    # Kept by their own setters (upsert_session leaves them as they are):
    agent_session_id: str | None = None  # the agent's id for this session when not ``id``
    mcp_refs: dict[str, Any] | None = None  # {"config": path or None, "names": [...]}: no secrets
    #: The protocol choice the session was made with ("1", "2" or "2-latest"); None when
    #: recorded before acpcli kept it (see :meth:`protocol_choice`).
    protocol: str | None = None
    #: The first line of the session's first prompt (set once, by :meth:`Index.set_prompt_title`).
    prompt_title: str | None = None
    #: The user gave :attr:`title` (``--title``): the agent's titles do not replace it.
    titled_by_user: bool = False
    #: Token usage and cost as the agent last reported them (``usage_update``: ``used``,
    #: ``size``, ``cost``, the cost being the agent's running total for the session); None:
    #: never reported (set by :meth:`Index.set_usage`).
    usage: dict[str, Any] | None = None
    #: The session this one was forked from (``acpcli fork``), if any (set by :meth:`Index.set_parent`).
    parent_id: str | None = None

    @property
    def shown_title(self) -> str | None:
        """The title to show: the agent's (or ``--title``), else the first prompt's first line."""
        return self.title or self.prompt_title

    @property
    def title_source(self) -> str | None:
        """Where :attr:`shown_title` comes from: ``"user"`` (``--title``), ``"agent"``,
        ``"prompt"`` (the first line of the first prompt), or None (no title)."""
        if self.title:
            return "user" if self.titled_by_user else "agent"
        return "prompt" if self.prompt_title else None

    @property
    def wire_id(self) -> str:
        """The id the agent knows this session by."""
        return self.agent_session_id or self.id

    def protocol_choice(self) -> str | None:
        """The recorded protocol choice, else the one the recorded version implies."""
        if self.protocol:
            return self.protocol
        return str(self.protocol_version) if self.protocol_version in (1, 2) else None


_COLUMNS = (
    "id, agent, argv, cwd, additional_dirs, mcp_servers, protocol_version, title, "
    "created_at, last_used_at, state, agent_info"
)
#: Read after ``_COLUMNS``, in this order, from the schema that added each (an older file
#: read as it is lacks them); written by their own setters, not by ``upsert_session``'s insert.
_EXTRA_COLUMNS = (
    (3, "agent_session_id"), (3, "mcp_refs"), (4, "protocol"), (6, "prompt_title"), (8, "title_source"),
    (10, "usage"),
    (11, "parent_id"),
)
_PROTOCOL_COLUMN = "protocol"


def _record(row: tuple[Any, ...]) -> SessionRecord:
    at = _COLUMNS.count(",") + 1  # the extras come right after _COLUMNS, however many those are
    extra = dict(zip((name for _, name in _EXTRA_COLUMNS), row[at:], strict=False))  # an older file has fewer
    refs = extra.get("mcp_refs")
    protocol = extra.get("protocol")
    usage = extra.get("usage")
    return SessionRecord(
        id=row[0],
        agent=row[1],
        argv=json.loads(row[2]),
        cwd=row[3],
        additional_dirs=json.loads(row[4]),
        mcp_servers=json.loads(row[5]),
        protocol_version=row[6],
        title=row[7],
        created_at=row[8],
        last_used_at=row[9],
        state=row[10],
        agent_info=json.loads(row[11]) if row[11] is not None else None,
        agent_session_id=extra.get("agent_session_id"),
        mcp_refs=json.loads(refs) if isinstance(refs, str) else None,
        protocol=protocol if isinstance(protocol, str) else None,
        prompt_title=extra.get("prompt_title"),
        titled_by_user=extra.get("title_source") == "user",
        usage=json.loads(usage) if isinstance(usage, str) else None,
        parent_id=extra.get("parent_id"),
    )


# --------------------------------------------------------------------------------------
# Writing methods, marked
# --------------------------------------------------------------------------------------

F = TypeVar("F", bound=Callable[..., Any])

#: The mark :func:`writes` and :func:`writes_derived` leave on a method of :class:`Index`.
_WRITES = "_acpcli_writes"
#: Kinds of write: the index's own records (sessions and their rows), and derived data (the
#: search documents, which the next search makes again from the event log).
RECORD, DERIVED = "record", "derived"


def writes(method: F) -> F:
    """Mark a method of :class:`Index` that writes the index's own records:
    :class:`~acpcli.history.guarded.SafeIndex` keeps it while the database is locked and
    writes it into memory after a storage failure. Every method that writes is marked (a
    test holds it), so the guard covers every writer by construction (:data:`WRITERS`)."""
    setattr(method, _WRITES, RECORD)
    return method


def writes_derived(method: F) -> F:
    """Mark a method of :class:`Index` that writes derived data (search documents):
    :class:`~acpcli.history.guarded.SafeIndex` leaves it to the next search, not to memory
    or to a queue (see :func:`writes`)."""
    setattr(method, _WRITES, DERIVED)
    return method


# --------------------------------------------------------------------------------------
# The index
# --------------------------------------------------------------------------------------


class Index:
    """The session index and event log in one SQLite file, opened on first use.

    Mutators take exact session ids (resolve user input with :meth:`get` first); ``get``
    also accepts a unique prefix. Use as a context manager, or call :meth:`close`.
    A ``read_only`` index never creates, migrates or writes anything (for completion and
    listings); writing through it raises ``sqlite3.OperationalError``. It reads a file still
    at schema 1 (one ``events`` row per event) as it is.
    """

    def __init__(self, path: Path | None = None, *, read_only: bool = False) -> None:
        self._path = path
        self._read_only = read_only
        self._conn: sqlite3.Connection | None = None
        # The schema of the open database: the current one, except that a read-only index
        # also reads a schema-1 file (events one row each) rather than refusing it.
        self._schema = len(MIGRATIONS)
        self._writers: weakref.WeakSet[EventWriter] = weakref.WeakSet()

    @classmethod
    def open(cls, path: Path | None = None, *, read_only: bool = False) -> Index:
        """An index whose database is opened now rather than on first use.

        Raises :class:`ConfigError` if the database is unusable, or (``read_only``) missing
        or not yet at this acpcli's schema version.
        """
        index = cls(path, read_only=read_only)
        index.conn  # noqa: B018 - opening is the point
        return index

    @classmethod
    @contextmanager
    def existing(cls, path: Path | None = None, *, read_only: bool = True) -> Iterator[Index | None]:
        """The index opened now (read-only unless told otherwise) and closed after the block,
        or ``None`` when there is no database yet: nothing is created, and a reader takes
        that as no sessions recorded. Raises as :meth:`open` does."""
        _check_place(path)
        if not (path if path is not None else db_path()).exists():
            yield None
            return
        with cls.open(path, read_only=read_only) as index:
            yield index

    @property
    def outdated(self) -> bool:
        """A read-only index reading a file an older acpcli wrote, which it does not migrate."""
        self.conn  # noqa: B018 - opening decides the schema
        return self._schema < len(MIGRATIONS)

    @property
    def path(self) -> Path:
        """The database file (``db_path()`` unless given)."""
        return self._path if self._path is not None else db_path()

    # -- connection ---------------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection, opening (and migrating) the database on first use."""
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        import sqlite3

        path = self.path
        self._schema = len(MIGRATIONS)
        _check_place(self._path)
        if self._read_only:
            return self._open_read_only(path)
        ensure_dir(path.parent)
        try:
            # Create the file ourselves so it is 0600 from the first byte (SQLite would use
            # 0644 minus umask). O_EXCL: if another process created it first, keep theirs.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            tighten(path, fd)  # 0600 whatever the umask
            os.close(fd)
        except FileExistsError:
            tighten(path)  # a database made by an older acpcli, or copied in
        except OSError as exc:
            raise ConfigError(f"cannot create the session index {path}: {exc.strerror}") from exc
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves.
            conn = sqlite3.connect(path, timeout=lock_wait(), isolation_level=None)
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open the session index {path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {lock_wait_ms()}")
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a no-op once the file has pages
            _enable_wal(conn)
            # WAL + NORMAL: commits skip fsync; no corruption on crash, see module docstring.
            conn.execute("PRAGMA synchronous = NORMAL")
            # Checkpoints (copy WAL pages into the db, fsync) are the costliest part of a
            # long replay; let the WAL reach 64 MB before one runs on the hot path. SQLite
            # checkpoints anyway when the last connection closes.
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
            conn.execute("PRAGMA foreign_keys = ON")
            planted = unknown_objects(conn, code_only=True)
            if planted:
                raise planted_error(path, planted)  # before a migration's writes set them off
            migrate(conn)
            for suffix in ("-wal", "-shm"):  # SQLite copies the db's mode; older files may differ
                tighten(f"{path}{suffix}")
        except sqlite3.OperationalError as exc:
            conn.close()
            if is_locked(exc):
                raise locked_error(path) from exc
            raise ConfigError(f"the session index {path} is unusable: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            conn.close()
            if is_damage(exc):
                raise damaged(path, exc) from exc
            raise ConfigError(f"the session index {path} is unusable: {exc}") from exc
        except ConfigError as exc:
            conn.close()
            if str(path) in exc.message:
                raise
            raise ConfigError(f"{path}: {exc.message}", hint=exc.hint) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_read_only(self, path: Path) -> sqlite3.Connection:
        import sqlite3

        if not path.is_file():
            raise ConfigError(f"no session index at {path} yet")
        try:
            uri = path.resolve().as_uri() + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=lock_wait(), isolation_level=None)
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open the session index {path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {lock_wait_ms()}")
            (version,) = conn.execute("PRAGMA user_version").fetchone()
        except sqlite3.DatabaseError as exc:
            conn.close()
            # A full disk or a read-only directory: a WAL reader cannot create its shared-memory
            # file. Reading the file as immutable still shows what was checkpointed into it.
            conn = _read_immutable(path, exc)
            (version,) = conn.execute("PRAGMA user_version").fetchone()
        if version == 0:
            # Another process is creating the index right now (the file exists, the schema
            # not yet): to a reader that is an empty index, not an error.
            conn.close()
            empty = sqlite3.connect(":memory:", isolation_level=None)
            migrate(empty)
            return empty
        if version < len(MIGRATIONS):
            # not migrated by a reader: read it as it is (schema 1: the old events table;
            # before 3: no agent_session_id / mcp_refs columns)
            self._schema = version
        elif version != len(MIGRATIONS):
            conn.close()
            raise newer_error(path, version)
        return conn

    def close(self) -> None:
        """Flush every open writer and close the connection. Safe to call twice.

        Every writer gets its chance and the connection is closed even if a final flush
        fails; the first such error is then re-raised.
        """
        error: BaseException | None = None
        for writer in list(self._writers):
            try:
                writer.close()
            except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others
                error = error or exc
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if error is not None:
            raise error

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions -----------------------------------------------------------------------

    @writes
    def upsert_session(self, rec: SessionRecord) -> None:
        """Insert or update a session; ``created_at`` of an existing row is kept, and so are
        its agent and cwd (changing them raises ``sqlite3.IntegrityError``: a recorded session
        is never taken over, see :meth:`insert_session`)."""
        self._write_session(
            rec,
            "ON CONFLICT (id) DO UPDATE SET agent = excluded.agent, argv = excluded.argv, "
            "cwd = excluded.cwd, additional_dirs = excluded.additional_dirs, "
            "mcp_servers = excluded.mcp_servers, protocol_version = excluded.protocol_version, "
            "title = excluded.title, last_used_at = excluded.last_used_at, "
            "state = excluded.state, agent_info = excluded.agent_info",
        )

    @writes
    def insert_session(self, rec: SessionRecord) -> bool:
        """Record a new session under ``rec.id`` unless that id is recorded already (then
        nothing changes); True when it was recorded. Session ids are the agents', not unique
        across agents: a new session whose id is taken is recorded under another local id
        (:func:`acpcli.session.attach.attach`), never over the session that has it."""
        return self._write_session(rec, "ON CONFLICT (id) DO NOTHING")

    def _write_session(self, rec: SessionRecord, on_conflict: str) -> bool:
        if rec.state not in SESSION_STATES:
            raise ValueError(f"state must be one of {SESSION_STATES}, not {rec.state!r}")
        if not all(isinstance(n, str) for n in rec.mcp_servers):
            # Definitions carry env values and headers: secrets never reach the index.
            raise ValueError("SessionRecord.mcp_servers holds MCP server names only")
        cur = self.conn.execute(
            f"INSERT INTO sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) {on_conflict}",
            (
                rec.id,
                rec.agent,
                json.dumps(list(rec.argv)),
                rec.cwd,
                json.dumps(list(rec.additional_dirs)),
                json.dumps(list(rec.mcp_servers)),
                rec.protocol_version,
                escape_surrogates(rec.title) if rec.title is not None else None,
                rec.created_at,
                rec.last_used_at,
                rec.state,
                json.dumps(rec.agent_info) if rec.agent_info is not None else None,
            ),
        )
        if cur.rowcount == 0:
            return False
        if rec.protocol is not None:
            self.conn.execute(f"UPDATE sessions SET {_PROTOCOL_COLUMN} = ? WHERE id = ?", (rec.protocol, rec.id))
        return True

    def get(self, id_or_prefix: str) -> SessionRecord:
        """The session with this id, or the only one whose id starts with it.

        Raises :class:`SessionNotFound` when nothing matches and :class:`UsageError` (listing
        the candidates) when a prefix matches several sessions.
        """
        if not id_or_prefix:
            raise UsageError("empty session id")
        row = self.conn.execute(
            f"SELECT {self._columns()} FROM sessions WHERE id = ?", (id_or_prefix,)
        ).fetchone()
        if row is not None:
            return _record(row)
        rows = self.conn.execute(
            f"SELECT {self._columns()} FROM sessions WHERE substr(id, 1, ?) = ? "
            "ORDER BY last_used_at DESC LIMIT 11",
            (len(id_or_prefix), id_or_prefix),
        ).fetchall()
        if not rows:
            raise SessionNotFound(f"no session {shown_id(id_or_prefix)!r} in the local index")
        if len(rows) > 1:
            shown = ", ".join(shown_id(r[0]) for r in rows[:10])
            more = " and more" if len(rows) > 10 else ""
            raise UsageError(f"session id prefix {shown_id(id_or_prefix)!r} is ambiguous: {shown}{more}")
        return _record(rows[0])

    def unique_prefixes(self, ids: list[str], minimum: int = 8) -> dict[str, str]:
        """Each of ``ids`` by its shortest prefix no other stored session's id starts with
        (at least ``minimum`` characters, or the whole id): what :meth:`get` finds it by.
        Two look-ups an id, on the primary key: the ids next to it in sorted order share
        the longest prefixes with it."""
        shortest = {}
        for sid in ids:
            longest_shared = 0
            for sql in (
                "SELECT id FROM sessions WHERE id < ? ORDER BY id DESC LIMIT 1",
                "SELECT id FROM sessions WHERE id > ? ORDER BY id LIMIT 1",
            ):
                row = self.conn.execute(sql, (sid,)).fetchone()
                if row is not None:
                    other = row[0]
                    shared = 0
                    for a, b in zip(sid, other, strict=False):
                        if a != b:
                            break
                        shared += 1
                    longest_shared = max(longest_shared, shared)
            shortest[sid] = sid[: max(minimum, longest_shared + 1)]
        return shortest

    def list_sessions(
        self,
        agent: str | None = None,
        cwd: str | None = None,
        state: str | None = None,
        limit: int | None = None,
        since: float | None = None,
        before: float | None = None,
        prompted: bool | None = None,
    ) -> list[SessionRecord]:
        """Sessions matching every given filter, most recently used first.

        ``since``: used at or after this time (unix seconds); ``before``: last used before
        it. ``limit``: at most this many. ``prompted``: only the sessions a prompt (or a title)
        was given (True), or only those never prompted (False; see :meth:`_prompted`).
        """
        conn = self.conn  # opened first: the columns read depend on the file's schema
        where, params = session_filters(agent=agent, cwd=cwd, state=state, since=since, before=before)
        where = self._prompted(where, prompted)
        sql = f"SELECT {self._columns()} FROM sessions{where} ORDER BY last_used_at DESC, rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_record(r) for r in conn.execute(sql, params)]

    def count_sessions(
        self,
        agent: str | None = None,
        cwd: str | None = None,
        state: str | None = None,
        since: float | None = None,
        prompted: bool | None = None,
    ) -> int:
        """How many sessions :meth:`list_sessions` with these filters (and no limit) returns."""
        where, params = session_filters(agent=agent, cwd=cwd, state=state, since=since)
        where = self._prompted(where, prompted)
        (count,) = self.conn.execute(f"SELECT count(*) FROM sessions{where}", params).fetchone()
        return int(count)

    def _prompted(self, where: str, prompted: bool | None) -> str:
        """``where`` narrowed to the sessions that were prompted (``prompted`` True) or never
        were (False): a session is prompted once its first prompt titled it (the first line,
        kept even when the turn failed; a fork has its parent's), or when it has a title (the
        agent's or the user's). Created and left (a REPL opened and closed at once), it has
        neither. An older file without prompt titles counts every session as prompted."""
        if prompted is None:
            return where
        self.conn  # noqa: B018 - opening decides the schema
        named = "(title IS NOT NULL OR prompt_title IS NOT NULL)" if self._schema >= 6 else "1"
        condition = named if prompted else f"NOT {named}"
        return f"{where} AND {condition}" if where else f" WHERE {condition}"

    def _columns(self) -> str:
        """The columns a record is read from (an old schema read as it is lacks the extras)."""
        self.conn  # noqa: B018 - opening decides the schema
        return _COLUMNS + "".join(f", {name}" for since, name in _EXTRA_COLUMNS if self._schema >= since)

    @writes
    def set_agent_session_id(self, session_id: str, agent_session_id: str | None) -> None:
        """Record the agent's id for a session (``None``, or the session's own id: the same)."""
        value = None if agent_session_id == session_id else agent_session_id
        self._update(session_id, "UPDATE sessions SET agent_session_id = ? WHERE id = ?", (value,))

    @writes
    def set_parent(self, session_id: str, parent_id: str) -> None:
        """Record that ``session_id`` was forked from ``parent_id``."""
        self._update(session_id, "UPDATE sessions SET parent_id = ? WHERE id = ?", (parent_id,))

    @writes
    def set_mcp_refs(self, session_id: str, refs: Mapping[str, Any] | None) -> None:
        """Record where a session's MCP servers come from: ``{"config": PATH or None,
        "names": [NAME, ...]}`` (references resolved again at use, never definitions)."""
        if refs is not None:
            config = refs.get("config")
            names = refs.get("names", [])
            if (config is not None and not isinstance(config, str)) or not all(isinstance(n, str) for n in names):
                raise ValueError("mcp_refs holds a config path and server names only")
            refs = {"config": config, "names": list(names)}
        value = json.dumps(refs) if refs is not None else None
        self._update(session_id, "UPDATE sessions SET mcp_refs = ? WHERE id = ?", (value,))

    def _update(self, session_id: str, sql: str, params: tuple[Any, ...]) -> None:
        cur = self.conn.execute(sql, (*params, session_id))
        if cur.rowcount == 0:
            raise SessionNotFound(f"no session {shown_id(session_id)!r} in the local index")

    @writes
    def touch(self, session_id: str, when: float | None = None) -> None:
        """Mark a session as used now (it moves to the top of :meth:`list_sessions`)."""
        now = time.time() if when is None else when
        self._update(session_id, "UPDATE sessions SET last_used_at = ? WHERE id = ?", (now,))

    @writes
    def set_title(self, session_id: str, title: str | None, *, by_user: bool = False) -> None:
        """Set (or clear, with ``None``) a session's title. ``by_user``: the user's own
        (``--title``), which a title from the agent (``by_user=False``) never replaces.
        Lone surrogates (an agent's ``"\\ud800"``) are stored as shown: ``\\ud800``."""
        if title is not None:
            title = escape_surrogates(title)
        if by_user:
            sql = "UPDATE sessions SET title = ?, title_source = 'user' WHERE id = ?"
            self._update(session_id, sql, (title,))
            return
        sql = "UPDATE sessions SET title = ? WHERE id = ? AND title_source IS NULL"
        if self.conn.execute(sql, (title, session_id)).rowcount == 0:
            self.get(session_id)  # SessionNotFound, unless the user's title stays

    @writes
    def set_prompt_title(self, session_id: str, prompt: str) -> None:
        """Title the session after this prompt's first line, unless a prompt already did
        (the first prompt's stays: one cheap UPDATE that changes nothing after the first)."""
        title = prompt_title(prompt)
        if title:
            title = escape_surrogates(title)
            self.conn.execute(
                "UPDATE sessions SET prompt_title = ? WHERE id = ? AND prompt_title IS NULL", (title, session_id)
            )

    @writes
    def set_usage(self, session_id: str, usage: dict[str, Any]) -> None:
        """Record the session's usage as its agent last reported it (:attr:`SessionRecord.usage`)."""
        self.conn.execute("UPDATE sessions SET usage = ? WHERE id = ?", (json.dumps(usage), session_id))

    @writes
    def mark_closed(self, session_id: str) -> None:
        """Record that the session was closed (``state = 'closed'``)."""
        self._update(session_id, "UPDATE sessions SET state = 'closed' WHERE id = ?", ())

    @writes
    def reopen(self, session_id: str) -> None:
        """Record that a closed session is in use again (``state = 'active'``)."""
        self._update(session_id, "UPDATE sessions SET state = 'active' WHERE id = ?", ())

    @writes
    def delete(self, session_id: str) -> None:
        """Forget a session, its events and its search documents (one transaction)."""
        from acpcli.history import search

        for writer in list(self._writers):
            writer.flush()  # so no buffered row of this session lands after the delete
            writer.forget(session_id)
        from acpcli.history.transactions import write_transaction

        with write_transaction(self.conn):
            search.forget(self.conn, session_id)  # out of the FTS5 index first; the rows go with the session
            self._update(session_id, "DELETE FROM sessions WHERE id = ?", ())  # events: ON DELETE CASCADE

    # -- events -------------------------------------------------------------------------

    def writer(
        self,
        *,
        batch_size: int = 500,
        flush_interval: float = 0.1,
        clock: Callable[[], float] = time.time,
    ) -> EventWriter:
        """A buffered :class:`~acpcli.history.eventlog.EventWriter` on this index."""
        from acpcli.history.eventlog import EventWriter

        return EventWriter(self, batch_size=batch_size, flush_interval=flush_interval, clock=clock)

    def register(self, writer: EventWriter) -> None:
        """A writer on this index: flushed before every read, closed with the index."""
        self._writers.add(writer)

    def unregister(self, writer: EventWriter) -> None:
        self._writers.discard(writer)

    def _flush_writers(self) -> None:
        for writer in list(self._writers):
            writer.flush()

    def _legacy(self) -> bool:
        """A read-only index on a schema-1 file: events are rows of the old ``events`` table."""
        self.conn  # noqa: B018 - opening decides the schema
        return self._schema == 1

    def events_raw(self, session_id: str) -> Iterator[tuple[int, str, str]]:
        """``(seq, kind, payload_json_text)`` of a session's events, in order."""
        from acpcli.history import eventlog

        self._flush_writers()
        yield from eventlog.events_raw(self.conn, session_id, legacy=self._legacy())

    def events_between(self, session_id: str, first: int, last: int) -> Iterator[tuple[int, str, str]]:
        """``(seq, kind, payload_json_text)`` of a session's events ``first`` to ``last`` (seqs)."""
        from acpcli.history import eventlog

        self._flush_writers()
        yield from eventlog.events_between(self.conn, session_id, first, last, legacy=self._legacy())

    def replay_marks(self, session_id: str) -> list[tuple[int, str, str]]:
        """``(seq, kind, payload_json_text)`` of a session's replay brackets, in order."""
        from acpcli.history import eventlog

        self._flush_writers()
        return eventlog.replay_marks(self.conn, session_id, legacy=self._legacy())

    def events(self, session_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(kind, payload)`` of a session's events, in the order they were received."""
        from acpcli.history import eventlog

        self._flush_writers()
        yield from eventlog.events(self.conn, session_id, legacy=self._legacy())

    def event_count(self, session_id: str) -> int:
        """How many events are stored for a session."""
        from acpcli.history import eventlog

        self._flush_writers()
        return eventlog.event_count(self.conn, session_id, legacy=self._legacy())

    def last_seq(self, session_id: str) -> int:
        """The seq of a session's last stored event (0 if none)."""
        from acpcli.history import eventlog

        self._flush_writers()
        return eventlog.last_seq(self.conn, session_id)

    def kinds_after(self, session_id: str, seq: int) -> list[str]:
        """The kinds of a session's events after ``seq``, in order."""
        from acpcli.history import eventlog

        self._flush_writers()
        return eventlog.kinds_after(self.conn, session_id, seq)

    # -- search -------------------------------------------------------------------------

    # The documents are derived data (:mod:`acpcli.history.search` owns their tables); these
    # are what the indexing (:mod:`acpcli.history.indexing`) and the commands that repair the
    # search index need, so that no SQL is written outside this package.

    @writes_derived
    def replace_documents(self, session_id: str, docs: Sequence[tuple[str, str]], seq: int) -> None:
        """A session's search documents are now ``docs``, reflecting its events up to ``seq``
        (:func:`acpcli.history.search.replace`)."""
        from acpcli.history import search

        search.replace(self.conn, session_id, docs, seq)

    @writes_derived
    def add_documents(self, session_id: str, docs: Sequence[tuple[str, str]], seq: int) -> None:
        """Add ``docs`` to a session's search documents, which now reflect its events up to
        ``seq`` (:func:`acpcli.history.search.extend`)."""
        from acpcli.history import search

        search.extend(self.conn, session_id, docs, seq)

    def indexed_seq(self, session_id: str) -> int:
        """The seq of the last event the session's search documents reflect (0: none yet)."""
        from acpcli.history import search

        return search.indexed_seq(self.conn, session_id)

    def stale_sessions(self) -> list[tuple[str, int]]:
        """``(session id, its last event seq)`` of the sessions whose search documents lag
        their event log, least recently used first (:func:`acpcli.history.search.stale`)."""
        from acpcli.history import search

        return search.stale(self.conn)

    def has_fts(self) -> bool:
        """Whether the database has its FTS5 index (without one, search scans)."""
        from acpcli.history import search

        return search.has_fts(self.conn)

    @writes_derived
    def ensure_fts(self) -> bool:
        """Make the FTS5 index if it is missing and this SQLite has FTS5; say whether the
        database has one now (:func:`acpcli.history.search.ensure_fts`)."""
        from acpcli.history import search

        return search.ensure_fts(self.conn)

    def search_damage(self) -> str | None:
        """What is wrong with the search index, in a few words, or ``None`` when it reads
        whole (:func:`acpcli.history.search.broken`: a read of the whole search index)."""
        from acpcli.history import search

        return search.broken(self.conn)

    @writes_derived
    def discard_search_index(self) -> None:
        """Drop the search index and make it again, empty: the next search indexes every
        session again (:func:`acpcli.history.search.discard`; nothing is lost)."""
        from acpcli.history import search

        search.discard(self.conn)

    def search(
        self,
        words: Sequence[str],
        *,
        kinds: Sequence[str] | None = None,
        agent: str | None = None,
        cwd: str | None = None,
        since: float | None = None,
        limit: int | None = 20,
    ) -> list[tuple[SessionRecord, Hit]]:
        """The sessions whose documents match ``words`` (:func:`acpcli.history.search.find`), best
        first, with their records. Documents are as fresh as the last indexing
        (:mod:`acpcli.history.indexing`)."""
        from acpcli.history import search

        where, params = session_filters(agent=agent, cwd=cwd, state=None, since=since, table="s")
        hits = search.find(
            self.conn, words, kinds=kinds or search.DEFAULT_KINDS, sessions=(where, params), limit=limit
        )
        return [(self.get(hit.session_id), hit) for hit in hits]

    def event_times(self, session_id: str) -> list[float]:
        """When each of a session's events was received (unix seconds), in seq order."""
        from acpcli.history import eventlog

        self._flush_writers()
        return eventlog.event_times(self.conn, session_id, legacy=self._legacy())


#: Every method of :class:`Index` that writes, by name, and what it writes (:data:`RECORD`
#: or :data:`DERIVED`): what :class:`~acpcli.history.guarded.SafeIndex` guards.
WRITERS: dict[str, str] = {
    name: getattr(member, _WRITES) for name, member in vars(Index).items() if hasattr(member, _WRITES)
}

def session_filters(
    *,
    agent: str | None,
    cwd: str | None,
    state: str | None,
    since: float | None,
    before: float | None = None,
    table: str = "",
) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause (with its leading space, or empty) and parameters of a listing of
    sessions; ``table``: the alias the sessions table has in the query."""
    where: list[str] = []
    params: list[Any] = []
    at = f"{table}." if table else ""
    for column, value in (("agent", agent), ("cwd", cwd), ("state", state)):
        if value is not None:
            where.append(f"{at}{column} = ?")
            params.append(value)
    if since is not None:
        where.append(f"{at}last_used_at >= ?")
        params.append(since)
    if before is not None:
        where.append(f"{at}last_used_at < ?")
        params.append(before)
    return (" WHERE " + " AND ".join(where) if where else ""), params


def _read_immutable(path: Path, cause: Exception) -> sqlite3.Connection:
    """``path`` opened read-only as immutable (no locks, no -shm file), or the ConfigError
    for ``cause`` when even that fails (then the file is really unusable); a damaged file is
    :class:`DamagedState`."""
    import sqlite3

    if is_damage(cause):
        raise damaged(path, cause) from cause
    if not isinstance(cause, sqlite3.OperationalError):
        raise ConfigError(f"the session index {path} is unusable: {cause}") from cause
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True, isolation_level=None)
        conn.execute("PRAGMA user_version").fetchone()
    except sqlite3.Error:
        raise ConfigError(f"the session index {path} is unusable: {cause}") from cause
    return conn


# --------------------------------------------------------------------------------------
# Locks
# --------------------------------------------------------------------------------------


def refused(refusal: Refusal | None) -> None:
    """Raise the :class:`ConfigError` (exit 3) of a refusal of :mod:`acpcli.paths`, if any."""
    if refusal is not None:
        raise ConfigError(refusal[0], hint=refusal[1])


def check_home(db: Path | None = None) -> None:
    """Refuse a home, or a session index ``db`` in it, that is the wrong kind of thing or not
    the user's own (:func:`acpcli.paths.home_refusal`): :class:`ConfigError`, exit 3."""
    refused(home_refusal(db))


def _check_place(path: Path | None) -> None:
    """Refuse an index (``None``: the one in the home) in a place that is not the user's own
    or is the wrong kind of thing (:func:`acpcli.paths.state_refusal`)."""
    if path is None:
        check_home()
        return
    refused(state_refusal(path.parent, directory=True, name=f"the directory {path.parent}"))
    refused(state_refusal(path, directory=False, name=f"the session index {path}"))


def newer_error(path: Path | None, version: int) -> ConfigError:
    """The one line for an index a newer acpcli wrote (schema ``version``): not read, not written."""
    where = f"the session index {path}" if path is not None else "the session index"
    return ConfigError(
        f"{where} was written by a newer acpcli (schema {version}; this acpcli knows {len(MIGRATIONS)}): "
        "refusing to use it",
        hint="use the newer acpcli, or upgrade this one",
    )


def lock_wait() -> float:
    """Seconds a write waits for another process's write lock: ``ACPCLI_LOCK_WAIT`` (a number
    of seconds, 0 or more), else ``BUSY_TIMEOUT_MS``. A value that is not a number is a
    :class:`ConfigError`."""
    raw = os.environ.get(LOCK_WAIT_ENV, "").strip()
    if not raw:
        return BUSY_TIMEOUT_MS / 1000
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):  # also refuses nan
        raise ConfigError(f"{LOCK_WAIT_ENV} must be a number of seconds, 0 or more; got {raw!r}")
    return seconds


def lock_wait_ms() -> int:
    """:func:`lock_wait` in whole milliseconds (SQLite's ``busy_timeout``)."""
    return int(lock_wait() * 1000)


def is_locked(exc: BaseException) -> bool:
    """``exc`` is SQLite's "database is locked" / "database table is locked" (SQLITE_BUSY or
    SQLITE_LOCKED): another connection holds the lock. Not a failure of the storage."""
    import sqlite3

    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (extended codes keep them in the low byte)
    return "is locked" in str(exc)


#: The byte of the ``-shm`` file SQLite locks for writing in WAL mode (``WALINDEX_LOCK_OFFSET``).
_WAL_WRITE_LOCK_BYTE = 120


def lock_holder(path: Path) -> str:
    """Who holds the write lock of the database at ``path``: ``another acpcli (pid N)``,
    ``another process (pid N)``, or ``another process`` when that cannot be told.

    SQLite does not say. On Linux, ``/proc/locks`` lists the POSIX lock SQLite takes on the
    ``-shm`` file's write-lock byte, with the pid of its owner; failing that, a single other
    process of this user with the file open (``/proc/*/fd``) is named. Elsewhere: unknown.
    """
    pids = _write_lockers(path) or _openers(path)
    if len(pids) != 1:
        return "another process"
    (pid,) = pids
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        argv = []
    return f"another {'acpcli' if _is_acpcli(argv) else 'process'} (pid {pid})"


def _is_acpcli(argv: list[bytes]) -> bool:
    """``acpcli …``, ``python /…/bin/acpcli …`` or ``python -m acpcli …``."""
    names = [os.path.basename(part) for part in argv[:2]]
    if b"acpcli" in names:
        return True
    return any(a == b"-m" and b == b"acpcli" for a, b in itertools.pairwise(argv))


def _write_lockers(path: Path) -> set[int]:
    """Pids holding a write lock on the write-lock byte of ``path``'s ``-shm`` (``/proc/locks``)."""
    try:
        st = os.stat(f"{path}-shm")
        text = Path("/proc/locks").read_text()
    except OSError:
        return set()
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = set()
    for line in text.splitlines():
        # "1: POSIX  ADVISORY  WRITE 4242 00:2e:123456 120 120" (a blocked waiter's line has "->")
        fields = line.split()
        if "->" in fields or len(fields) < 8 or fields[1] != "POSIX" or fields[3] != "WRITE":
            continue
        pid, where, start, end = fields[4], fields[5], fields[6], fields[7]
        if where != inode or not pid.isdigit():
            continue
        try:
            covered = int(start) <= _WAL_WRITE_LOCK_BYTE and (end == "EOF" or int(end) >= _WAL_WRITE_LOCK_BYTE)
        except ValueError:
            continue
        if covered and int(pid) != os.getpid():
            pids.add(int(pid))
    return pids


def _openers(path: Path) -> set[int]:
    """Other processes (of this user: others' fds cannot be read) with ``path`` open."""
    try:
        target = os.stat(path)
        entries = os.listdir("/proc")
    except OSError:
        return set()
    pids = set()
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(f"/proc/{entry}/fd/{fd}")
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                pids.add(int(entry))
                break
    return pids


def locked_error(path: Path, waited: float | None = None) -> DatabaseLocked:
    """The one-line :class:`DatabaseLocked` for the database at ``path`` (after ``waited``
    seconds, :func:`lock_wait` unless given)."""
    from acpcli.errors import DatabaseLocked

    seconds = lock_wait() if waited is None else waited
    return DatabaseLocked(
        f"the session index {path} is locked by {lock_holder(path)} (waited {seconds:g} s)",
        hint=f"try again when it is done, or wait longer: {LOCK_WAIT_ENV}=SECONDS",
    )


@contextmanager
def locks_reported(path: Path | None = None) -> Iterator[None]:
    """Within the block, SQLite's "database is locked" (a write that waited
    :func:`lock_wait` in vain) becomes :func:`locked_error`: one line naming the holder."""
    import sqlite3

    try:
        yield
    except sqlite3.OperationalError as exc:
        if not is_locked(exc):
            raise
        raise locked_error(path or db_path()) from exc


def database_file(conn: sqlite3.Connection) -> Path | None:
    """The file of ``conn``'s main database (None in memory)."""
    for _seq, name, file in conn.execute("PRAGMA database_list"):
        if name == "main":
            return Path(file) if file else None
    return None


# --------------------------------------------------------------------------------------
# Errors: what a failed read or write of the index means to the person
# --------------------------------------------------------------------------------------


def storage_error(exc: BaseException, path: Path | None = None) -> AcpcliError:
    """An SQLite error that reached a command, as the one line it means: the database is
    locked by another acpcli (:class:`DatabaseLocked`), cannot be written or read
    (:class:`StorageError`: full, read-only, I/O), or else damaged (:class:`DamagedState`)."""
    from acpcli.history.damage import STORAGE_WORDS, is_busy

    where = path if path is not None else db_path()
    text = str(exc)
    if is_damage(exc):
        return damaged(where, text)
    if is_busy(exc):
        return locked_error(where)  # one line naming who holds it
    if any(word in text.lower() for word in STORAGE_WORDS):
        return StorageError(f"cannot use the session index {where}: {text}")
    return damaged(where, text)


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch the database to WAL mode (persistent in the file), retrying while locked.

    The switch needs an exclusive lock, and SQLite reports "database is locked" at once,
    without calling the busy handler, when several processes make it on a fresh database
    together; so retry with a short backoff, up to the busy timeout.
    """
    import sqlite3

    if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
        return
    deadline = time.monotonic() + lock_wait()
    delay = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to ``len(MIGRATIONS)``; return the version. Idempotent.

    Safe under concurrency: the version is re-read after ``BEGIN IMMEDIATE`` takes the
    write lock, so a migration another process just applied is not applied again.
    """
    target = len(MIGRATIONS)
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version == target:
        return target
    conn.execute("BEGIN IMMEDIATE")
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        if version > target:
            raise newer_error(database_file(conn), version)
        for step in MIGRATIONS[version:]:
            _run_migration(conn, step)
        conn.execute(f"PRAGMA user_version = {target}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return target
