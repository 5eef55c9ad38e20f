"""Local state: one root directory, a SQLite session index and a raw event log.

Invariants this module keeps:

* **One root.** Every path acpcli reads or writes derives from :func:`home_dir`
  (``$ACPCLI_HOME`` if set, else the platform's config directory). Nothing is created on
  import; directories are created with mode 0700 on first write (:func:`ensure_dir`), the
  database file with mode 0600 (SQLite gives its ``-wal``/``-shm`` files the same mode).
* **Lazy.** :class:`Index` opens the database on first use (or :meth:`Index.open`), so
  ``acpcli --help`` never touches the disk; completion uses a read-only index.
* **Migrations are an append-only list.** ``MIGRATIONS[i]`` takes the schema from version
  ``i`` to ``i + 1``; the applied version is ``PRAGMA user_version``. Applying runs inside
  ``BEGIN IMMEDIATE`` and re-reads the version under that lock, so two processes opening a
  fresh database at once apply each migration exactly once. Never edit a shipped entry:
  append a new one.
* **No secrets.** The index stores MCP server *names* only (:meth:`Index.upsert_session`
  rejects anything else); :func:`redact_mcp` masks env/header values for display and logs.
* **Events are append-only** (a trigger rejects ``UPDATE``) and numbered per session by
  ``seq`` (1, 2, 3, ...), unique per session even when two processes append to one session.
  They are stored in pages: one ``event_pages`` row holds a flushed batch of one session's
  consecutive events (:class:`EventWriter`); :meth:`Index.events_raw` reads them back one
  by one.

Durability trade-off of :class:`EventWriter`: updates are buffered and written in batches
(one transaction per batch, ``synchronous=NORMAL`` in WAL mode, so commits do not fsync).
An agent crash loses nothing, because the writer flushes on ``flush()``/``close()``/context
exit; a SIGKILL of acpcli itself may lose the last, unflushed batch (at most ``batch_size``
updates or ``flush_interval`` seconds' worth); a power cut may also lose the last committed
batches. In every case the database stays consistent (WAL), and each batch is all or
nothing. Writers only flush when asked or on ``append``: a writer dropped without
:meth:`EventWriter.close` (or :meth:`Index.close`) loses its buffer.

Concurrency: several acpcli processes may use one database at once (WAL mode, a 5 s busy
timeout, writers serialized by ``BEGIN IMMEDIATE``). An :class:`Index` and its writers
belong to one thread.
"""

from __future__ import annotations

import json
import os
import sys
import time
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acpcli.errors import ConfigError, SessionNotFound, UsageError

if TYPE_CHECKING:
    import sqlite3

# sqlite3 and urllib.parse are imported where used: config.py needs config_path() from
# here, and the CLI's start-up path and completion must stay cheap.

APP_NAME = "acpcli"
BUSY_TIMEOUT_MS = 5000
# Event rows are ~250 bytes; 8 KB pages (SQLite's default is 4 KB) mean fewer page splits
# per appended row (about 15% less insert CPU). Only takes effect on a new database.
PAGE_SIZE = 8192
WAL_AUTOCHECKPOINT_PAGES = (64 << 20) // PAGE_SIZE  # let the WAL reach 64 MB
SESSION_STATES = ("active", "closed")
REDACTED = "***"

# --------------------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------------------


def home_dir() -> Path:
    """The root of all acpcli state: ``$ACPCLI_HOME``, else the platform config dir.

    Linux and other Unixes: ``$XDG_CONFIG_HOME/acpcli`` (when absolute) or
    ``~/.config/acpcli``; macOS: ``~/Library/Application Support/acpcli``; Windows:
    ``%APPDATA%\\acpcli``. The directory is not created here.
    """
    override = os.environ.get("ACPCLI_HOME")
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        base = Path(appdata) if appdata else Path.home() / "AppData" / "Roaming"
        return base / APP_NAME
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP_NAME
    xdg = os.environ.get("XDG_CONFIG_HOME")
    # The XDG spec says relative values are invalid and must be ignored.
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / APP_NAME
    return Path.home() / ".config" / APP_NAME


def db_path() -> Path:
    """The session index and event log: ``<home>/acpcli.db``."""
    return home_dir() / "acpcli.db"


def config_path() -> Path:
    """The user configuration: ``<home>/config.toml``."""
    return home_dir() / "config.toml"


def log_dir() -> Path:
    """Where diagnostic logs go: ``<home>/logs/`` (not created here)."""
    return home_dir() / "logs"


def history_dir() -> Path:
    """Where REPL input history goes: ``<home>/history/`` (not created here)."""
    return home_dir() / "history"


def ensure_dir(path: Path) -> Path:
    """Create ``path`` and any missing parents with mode 0700; return it.

    Existing directories keep their mode: we only tighten what we create. The explicit
    chmod is there because ``mkdir``'s mode is filtered by the umask.
    """
    missing: list[Path] = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:  # another process won the race; leave its mode alone
            continue
        os.chmod(d, 0o700)
    return path


# --------------------------------------------------------------------------------------
# Secrets
# --------------------------------------------------------------------------------------


def redact_mcp(
    servers: Iterable[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Copies of MCP server definitions with every secret-bearing value replaced by ``***``.

    Accepts either ACP wire shapes (a list; ``env``/``headers`` as ``[{name, value}]``) or
    the named config shape (a mapping name → entry; ``env``/``headers`` as mappings).
    Masks env values, header values, and a URL's password and query values. ``args`` are
    kept as they are: avoid putting secrets in arguments.
    """
    if isinstance(servers, Mapping):
        items = [{"name": name, **dict(entry)} for name, entry in servers.items()]
    else:
        items = [dict(s) for s in servers]
    out: list[dict[str, Any]] = []
    for server in items:
        for key in ("env", "headers"):
            value = server.get(key)
            if isinstance(value, Mapping):
                server[key] = {k: REDACTED for k in value}
            elif isinstance(value, list):
                server[key] = [
                    {**item, "value": REDACTED} if isinstance(item, Mapping) else REDACTED
                    for item in value
                ]
        if isinstance(server.get("url"), str):
            server["url"] = _redact_url(server["url"])
        out.append(server)
    return out


def _redact_url(url: str) -> str:
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{REDACTED}@{host}" if ":" in userinfo else f"{user}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, REDACTED) for k, _ in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


# --------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------

# A page holds consecutive events of one session: the i-th has seq first_seq + i. Its
# payloads are concatenated, cut back apart by their lengths (any text survives: no
# separator to escape). A row costs SQLite about a microsecond however small it is, so one
# row per event was the replay's largest cost (BENCHMARKS.md); one per batch costs ~nothing.
_PAGES_SCHEMA = """
CREATE TABLE event_pages (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    first_seq   INTEGER NOT NULL CHECK (first_seq >= 1),  -- seq of the page's first event
    count       INTEGER NOT NULL CHECK (count >= 1),      -- events in the page
    kinds       TEXT NOT NULL,      -- JSON array: each event's kind (the sessionUpdate discriminator)
    sizes       TEXT NOT NULL,      -- JSON array: each payload's length in characters
    payloads    TEXT NOT NULL,      -- the payloads (JSON texts as received), concatenated
    received_at BLOB NOT NULL,      -- each event's unix time, float64 little-endian
    UNIQUE (session_id, first_seq)
);
CREATE TRIGGER event_pages_are_append_only BEFORE UPDATE ON event_pages
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;
"""
_PAGE_EVENTS = 500  # events per page when old rows are copied into pages


def _events_into_pages(conn: sqlite3.Connection) -> None:
    """Migration 2: create ``event_pages``, copy every ``events`` row into it (runs of
    consecutive seqs of a session, up to ``_PAGE_EVENTS`` a page), drop ``events``."""
    for statement in _statements(_PAGES_SCHEMA):
        conn.execute(statement)
    page: _Page | None = None
    rows = conn.execute("SELECT session_id, seq, received_at, kind, payload FROM events ORDER BY session_id, seq")
    for session_id, seq, received_at, kind, payload in rows:  # a cursor: not all in memory
        if page is None or page.session_id != session_id or page.next_seq != seq or len(page) >= _PAGE_EVENTS:
            if page is not None:
                page.insert(conn)
            page = _Page(session_id, seq)
        page.add(kind, payload, received_at)
    if page is not None:
        page.insert(conn)
    conn.execute("DROP TABLE events")  # its trigger goes with it


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


_COLUMNS = (
    "id, agent, argv, cwd, additional_dirs, mcp_servers, protocol_version, title, "
    "created_at, last_used_at, state, agent_info"
)


def _record(row: tuple[Any, ...]) -> SessionRecord:
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
    )


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
        if self._read_only:
            return self._open_read_only(path)
        ensure_dir(path.parent)
        try:
            # Create the file ourselves so it is 0600 from the first byte (SQLite would use
            # 0644 minus umask). O_EXCL: if another process created it first, keep theirs.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise ConfigError(f"cannot create the session index {path}: {exc.strerror}") from exc
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves.
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open the session index {path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a no-op once the file has pages
            _enable_wal(conn)
            # WAL + NORMAL: commits skip fsync; no corruption on crash, see module docstring.
            conn.execute("PRAGMA synchronous = NORMAL")
            # Checkpoints (copy WAL pages into the db, fsync) are the costliest part of a
            # long replay; let the WAL reach 64 MB before one runs on the hot path. SQLite
            # checkpoints anyway when the last connection closes.
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise ConfigError(f"the session index {path} is unusable: {exc}") from exc
        except ConfigError as exc:
            conn.close()
            raise ConfigError(f"{path}: {exc.message}") from exc
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
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open the session index {path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            (version,) = conn.execute("PRAGMA user_version").fetchone()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise ConfigError(f"the session index {path} is unusable: {exc}") from exc
        if version == 0:
            # Another process is creating the index right now (the file exists, the schema
            # not yet): to a reader that is an empty index, not an error.
            conn.close()
            empty = sqlite3.connect(":memory:", isolation_level=None)
            migrate(empty)
            return empty
        if version == 1:
            self._schema = 1  # not migrated by a reader: read the old events table
        elif version != len(MIGRATIONS):
            conn.close()
            raise ConfigError(
                f"the session index {path} is at schema {version}, not {len(MIGRATIONS)}; "
                "open it read-write once to migrate it"
            )
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
            except BaseException as exc:  # re-raised below, after the others
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

    def upsert_session(self, rec: SessionRecord) -> None:
        """Insert or update a session; ``created_at`` of an existing row is kept."""
        if rec.state not in SESSION_STATES:
            raise ValueError(f"state must be one of {SESSION_STATES}, not {rec.state!r}")
        if not all(isinstance(n, str) for n in rec.mcp_servers):
            # Definitions carry env values and headers: secrets never reach the index.
            raise ValueError("SessionRecord.mcp_servers holds MCP server names only")
        self.conn.execute(
            f"INSERT INTO sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET agent = excluded.agent, argv = excluded.argv, "
            "cwd = excluded.cwd, additional_dirs = excluded.additional_dirs, "
            "mcp_servers = excluded.mcp_servers, protocol_version = excluded.protocol_version, "
            "title = excluded.title, last_used_at = excluded.last_used_at, "
            "state = excluded.state, agent_info = excluded.agent_info",
            (
                rec.id,
                rec.agent,
                json.dumps(list(rec.argv)),
                rec.cwd,
                json.dumps(list(rec.additional_dirs)),
                json.dumps(list(rec.mcp_servers)),
                rec.protocol_version,
                rec.title,
                rec.created_at,
                rec.last_used_at,
                rec.state,
                json.dumps(rec.agent_info) if rec.agent_info is not None else None,
            ),
        )

    def get(self, id_or_prefix: str) -> SessionRecord:
        """The session with this id, or the only one whose id starts with it.

        Raises :class:`SessionNotFound` when nothing matches and :class:`UsageError` (listing
        the candidates) when a prefix matches several sessions.
        """
        if not id_or_prefix:
            raise UsageError("empty session id")
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (id_or_prefix,)
        ).fetchone()
        if row is not None:
            return _record(row)
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM sessions WHERE substr(id, 1, ?) = ? "
            "ORDER BY last_used_at DESC LIMIT 11",
            (len(id_or_prefix), id_or_prefix),
        ).fetchall()
        if not rows:
            raise SessionNotFound(f"no session {id_or_prefix!r} in the local index")
        if len(rows) > 1:
            shown = ", ".join(r[0] for r in rows[:10])
            more = " and more" if len(rows) > 10 else ""
            raise UsageError(f"session id prefix {id_or_prefix!r} is ambiguous: {shown}{more}")
        return _record(rows[0])

    def list_sessions(
        self,
        agent: str | None = None,
        cwd: str | None = None,
        state: str | None = None,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        """Sessions matching every given filter, most recently used first."""
        where: list[str] = []
        params: list[Any] = []
        for column, value in (("agent", agent), ("cwd", cwd), ("state", state)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        sql = f"SELECT {_COLUMNS} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY last_used_at DESC, rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_record(r) for r in self.conn.execute(sql, params)]

    def _update(self, session_id: str, sql: str, params: tuple[Any, ...]) -> None:
        cur = self.conn.execute(sql, (*params, session_id))
        if cur.rowcount == 0:
            raise SessionNotFound(f"no session {session_id!r} in the local index")

    def touch(self, session_id: str, when: float | None = None) -> None:
        """Mark a session as used now (it moves to the top of :meth:`list_sessions`)."""
        now = time.time() if when is None else when
        self._update(session_id, "UPDATE sessions SET last_used_at = ? WHERE id = ?", (now,))

    def set_title(self, session_id: str, title: str | None) -> None:
        """Set (or clear, with ``None``) a session's title."""
        self._update(session_id, "UPDATE sessions SET title = ? WHERE id = ?", (title,))

    def mark_closed(self, session_id: str) -> None:
        """Record that the session was closed (``state = 'closed'``)."""
        self._update(session_id, "UPDATE sessions SET state = 'closed' WHERE id = ?", ())

    def delete(self, session_id: str) -> None:
        """Forget a session and its events."""
        for writer in list(self._writers):
            writer.flush()  # so no buffered row of this session lands after the delete
            writer._forget(session_id)
        self._update(session_id, "DELETE FROM sessions WHERE id = ?", ())

    # -- events -------------------------------------------------------------------------

    def writer(
        self,
        *,
        batch_size: int = 500,
        flush_interval: float = 0.1,
        clock: Callable[[], float] = time.time,
    ) -> EventWriter:
        """A buffered :class:`EventWriter` on this index."""
        return EventWriter(self, batch_size=batch_size, flush_interval=flush_interval, clock=clock)

    def _flush_writers(self) -> None:
        for writer in list(self._writers):
            writer.flush()

    def _legacy(self) -> bool:
        """A read-only index on a schema-1 file: events are rows of the old ``events`` table."""
        self.conn  # noqa: B018 - opening decides the schema
        return self._schema == 1

    def events_raw(self, session_id: str) -> Iterator[tuple[int, str, str]]:
        """``(seq, kind, payload_json_text)`` of a session's events, in order."""
        self._flush_writers()
        if self._legacy():
            yield from self.conn.execute(
                "SELECT seq, kind, payload FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
            )
            return
        cur = self.conn.execute(
            "SELECT first_seq, kinds, sizes, payloads FROM event_pages WHERE session_id = ? ORDER BY first_seq",
            (session_id,),
        )
        for seq, kinds, sizes, payloads in cur:
            start = 0
            for kind, size in zip(json.loads(kinds), json.loads(sizes)):
                end = start + size
                yield seq, kind, payloads[start:end]
                seq += 1
                start = end

    def events(self, session_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(kind, payload)`` of a session's events, in the order they were received."""
        for _seq, kind, payload in self.events_raw(session_id):
            yield kind, json.loads(payload)

    def event_count(self, session_id: str) -> int:
        """How many events are stored for a session."""
        self._flush_writers()
        sql = "SELECT COALESCE(SUM(count), 0) FROM event_pages WHERE session_id = ?"
        if self._legacy():
            sql = "SELECT count(*) FROM events WHERE session_id = ?"
        (n,) = self.conn.execute(sql, (session_id,)).fetchone()
        return int(n)

    def event_times(self, session_id: str) -> list[float]:
        """When each of a session's events was received (unix seconds), in seq order."""
        self._flush_writers()
        if self._legacy():
            sql = "SELECT received_at FROM events WHERE session_id = ? ORDER BY seq"
            return [t for (t,) in self.conn.execute(sql, (session_id,))]
        times: list[float] = []
        for (blob,) in self.conn.execute(
            "SELECT received_at FROM event_pages WHERE session_id = ? ORDER BY first_seq", (session_id,)
        ):
            times.extend(_unpack_times(blob))
        return times


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch the database to WAL mode (persistent in the file), retrying while locked.

    The switch needs an exclusive lock, and SQLite reports "database is locked" at once,
    without calling the busy handler, when several processes make it on a fresh database
    together; so retry with a short backoff, up to the busy timeout.
    """
    import sqlite3

    if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
        return
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
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
            raise ConfigError(
                f"the session index was written by a newer acpcli (schema {version}, "
                f"this one knows {target})"
            )
        for step in MIGRATIONS[version:]:
            if callable(step):
                step(conn)
                continue
            for statement in _statements(step):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {target}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return target


# --------------------------------------------------------------------------------------
# The hot path
# --------------------------------------------------------------------------------------


def _unpack_times(blob: bytes) -> list[float]:
    """The float64 little-endian unix times of a page's ``received_at``."""
    times = array("d")
    times.frombytes(blob)
    if sys.byteorder != "little":
        times.byteswap()
    return times.tolist()


class _Page:
    """A session's events waiting to be written: one ``event_pages`` row."""

    __slots__ = ("first_seq", "kinds", "payloads", "session_id", "times")

    def __init__(self, session_id: str, first_seq: int) -> None:
        self.session_id = session_id
        self.first_seq = first_seq
        self.kinds: list[str] = []
        self.payloads: list[str] = []
        self.times = array("d")

    def __len__(self) -> int:
        return len(self.payloads)

    @property
    def next_seq(self) -> int:
        """The seq the next event added to this page gets."""
        return self.first_seq + len(self.payloads)

    def add(self, kind: str, payload: str, received_at: float) -> None:
        self.kinds.append(kind)
        self.payloads.append(payload)
        self.times.append(received_at)

    def insert(self, conn: sqlite3.Connection) -> None:
        """Write the page as it is (numbered from ``first_seq``)."""
        times = self.times
        if sys.byteorder != "little":
            times = array("d", times)
            times.byteswap()
        conn.execute(
            "INSERT INTO event_pages (session_id, first_seq, count, kinds, sizes, payloads, received_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                self.session_id,
                self.first_seq,
                len(self.payloads),
                json.dumps(self.kinds),
                json.dumps(list(map(len, self.payloads))),
                "".join(self.payloads),
                times.tobytes(),
            ),
        )


class EventWriter:
    """Buffered, batched appends of raw session updates.

    ``append`` takes the JSON text the connection already has (no re-serializing) and costs
    a few list appends; the buffered events reach the database in one transaction per
    batch -- one ``event_pages`` row per session in it -- when ``batch_size`` events are
    pending, when ``flush_interval`` seconds have passed since the oldest pending one
    (checked on ``append`` and :meth:`flush_if_due`), and on :meth:`flush`, :meth:`close`
    and context exit. See the module docstring for what a crash can lose.

    The session row must exist (:meth:`Index.upsert_session`) before its first event.
    ``clock`` (unix seconds) stamps each event's receipt and times the flushes.
    """

    def __init__(
        self,
        index: Index,
        *,
        batch_size: int = 500,
        flush_interval: float = 0.1,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._index = index
        self._clock = clock
        self._batch_size = batch_size
        self._interval = flush_interval
        self._pages: dict[str, _Page] = {}  # session id -> its pending events
        self._pending = 0
        self._oldest = 0.0
        self._next_seq: dict[str, int] = {}  # session id -> next seq to hand out
        self._stored: dict[str, int] = {}  # session id -> last seq known to be in the db
        self._closed = False
        index._writers.add(self)

    @property
    def pending(self) -> int:
        """Events buffered but not yet written."""
        return self._pending

    def append(self, session_id: str, kind: str, payload: str) -> int:
        """Buffer one update (its JSON text as received); return its per-session ``seq``.

        Raises :class:`SessionNotFound` on the first append for an unknown session.
        """
        now = self._clock()
        page = self._pages.get(session_id)
        if page is None:
            page = self._open_page(session_id)
        seq = page.first_seq + len(page.payloads)
        if not self._pending:
            self._oldest = now
        page.kinds.append(kind)
        page.payloads.append(payload)
        page.times.append(now)
        self._pending += 1
        if self._pending >= self._batch_size or now - self._oldest >= self._interval:
            self.flush()
        return seq

    def _open_page(self, session_id: str) -> _Page:
        if self._closed:
            raise ValueError("append on a closed EventWriter")
        seq = self._next_seq.get(session_id)
        if seq is None:
            seq = self._start(session_id)
        page = self._pages[session_id] = _Page(session_id, seq)
        return page

    def _start(self, session_id: str) -> int:
        conn = self._index.conn
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise SessionNotFound(
                f"no session {session_id!r} in the local index (record it before its events)"
            )
        last = _last_seq(conn, session_id)
        self._next_seq[session_id] = last + 1
        self._stored[session_id] = last
        return last + 1

    def _forget(self, session_id: str) -> None:
        self._next_seq.pop(session_id, None)
        self._stored.pop(session_id, None)

    def flush_if_due(self) -> bool:
        """Flush if the oldest pending event is older than ``flush_interval``; say whether.

        For an event loop's timer, so a quiet stream still reaches the disk promptly.
        """
        if self._pending and self._clock() - self._oldest >= self._interval:
            self.flush()
            return True
        return False

    def flush(self) -> None:
        """Write every pending event in one transaction."""
        pages = self._pages
        if not pages:
            return
        conn = self._index.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have appended to one of our sessions since we numbered
            # our events: shift ours past theirs (rare; costs one indexed lookup per page).
            shift: dict[str, int] = {}
            for session_id, page in pages.items():
                last = _last_seq(conn, session_id)
                if last != self._stored[session_id]:
                    shift[session_id] = last - self._stored[session_id]
                    page.first_seq += shift[session_id]
                page.insert(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for session_id, delta in shift.items():
                pages[session_id].first_seq -= delta  # numbered as before the attempt
            raise
        for session_id, page in pages.items():
            self._next_seq[session_id] = page.next_seq
            self._stored[session_id] = page.next_seq - 1
        self._pages = {}
        self._pending = 0

    def close(self) -> None:
        """Flush and stop accepting appends. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self.flush()
        finally:
            self._pages = {}
            self._pending = 0
            self._index._writers.discard(self)

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _last_seq(conn: sqlite3.Connection, session_id: str) -> int:
    """The highest seq stored for a session (0 if none): the end of its last page."""
    row = conn.execute(
        "SELECT first_seq + count - 1 FROM event_pages WHERE session_id = ? ORDER BY first_seq DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return 0 if row is None else int(row[0])
