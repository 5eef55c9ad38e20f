"""Checking the local index for damage, and salvaging what is readable: ``acpcli doctor``.

:func:`check` reads the whole index without changing it: SQLite's integrity check (every
page, every index), the event log (every page cut apart and every event parsed, as ``show``
reads them), and the search index (:func:`acpcli.history.search.broken`). It says what is damaged,
in :class:`Finding` lines.

:func:`repair` salvages a damaged index into a fresh one, and never deletes anything:

* every session row and event page SQLite can still read is copied, each row read on its own
  (by rowid, found through the table and through each of its indexes, and by probing the
  rowids between), so one bad page costs the rows on it and nothing more;
* events that cannot be read (a page SQLite cannot read, a tampered row) are left out, and
  said: which sessions, which seqs; the readable events keep their numbers;
* a session whose row is lost but whose events are readable comes back from its events alone
  (agent ``unknown``), so its transcript can still be shown and exported;
* the search index is not copied: it is derived, and the next ``acpcli search`` rebuilds it;
* the damaged file (and its ``-wal``/``-shm``) is renamed ``acpcli.db.damaged-YYYYmmdd-HHMMSS``
  beside the fresh one, which takes its place;
* a schema whose entries SQLite cannot parse (a search table's row overwritten) is read past
  them (``writable_schema``): the sessions and events it still holds are kept.

:func:`check` also flags every schema object acpcli did not create (a planted trigger or view
runs on the next write: :func:`acpcli.history.index.unknown_objects`), and a file written by a
newer acpcli (:attr:`Report.newer`, which is neither checked further nor touched);
:func:`drop_unknown` removes the former in place, keeping everything else.

Run it while no other acpcli uses the index: a command that has the old file open keeps
writing to the renamed one.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

#: How many of SQLite's integrity check lines are read (it stops after that many).
INTEGRITY_LINES = 100
_MALFORMED = re.compile(r"malformed database schema \((\w+)\)")
_TREE = re.compile(r"\b(?:Tree|root page) (\d+)\b", re.IGNORECASE)


@dataclass
class Finding:
    """One thing found damaged: where (``database``, ``event log``, ``search index``) and what."""

    part: str
    text: str


@dataclass
class Report:
    """What :func:`check` found."""

    path: Path
    exists: bool = True
    sessions: int = 0
    events: int = 0
    findings: list[Finding] = field(default_factory=list)
    #: SQLite itself cannot read all of the file (not a database, a bad page, a bad index).
    database_damaged: bool = False
    #: Schema objects acpcli did not create: ``(type, name, table)``.
    unknown: list[tuple[str, str, str]] = field(default_factory=list)
    #: acpcli's own triggers and indexes that the file lacks: ``(type, name, SQL)``.
    missing: list[tuple[str, str, str]] = field(default_factory=list)
    #: The schema version of a file a newer acpcli wrote (None: not newer).
    newer: int | None = None

    @property
    def healthy(self) -> bool:
        return not self.findings


@dataclass
class Salvage:
    """What :func:`repair` kept and what it could not."""

    aside: Path  # where the damaged file now is
    sessions: int = 0  # session rows copied
    events: int = 0  # events copied
    recovered: list[str] = field(default_factory=list)  # sessions rebuilt from their events alone
    lost_rows: int = 0  # session rows or event pages SQLite could not read
    unreadable: dict[str, str] = field(default_factory=dict)  # session -> seqs of its events left out
    not_a_database: bool = False


def _connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
    import sqlite3

    from acpcli.history.index import BUSY_TIMEOUT_MS

    uri = path.resolve().as_uri() + ("?mode=ro" if read_only else "?mode=rw")
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _past_bad_schema(path: Path) -> tuple[sqlite3.Connection, list[str]] | None:
    """``path`` opened read-only past the schema entries SQLite cannot parse
    (``writable_schema``: such entries are skipped), and the names of those entries; None
    when even so nothing can be read (not a database)."""
    import sqlite3

    try:
        conn = _connect(path, read_only=True)
    except sqlite3.Error:
        return None
    try:
        conn.execute("PRAGMA writable_schema = ON")
        entries = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError:
        conn.close()
        return None
    bad = []
    for kind, name, sql in entries:
        if kind in ("table", "index", "trigger", "view") and isinstance(sql, str) and not sqlite3.complete_statement(sql + ";"):
            bad.append(str(name))
    return conn, bad


# --------------------------------------------------------------------------------------
# Checking
# --------------------------------------------------------------------------------------


def check(path: Path) -> Report:
    """Read the whole index at ``path`` and say what is damaged (see the module docstring).
    Changes nothing. Raises ``sqlite3.OperationalError`` for what is not damage (locked)."""
    import sqlite3

    from acpcli.history.damage import is_damage
    from acpcli.history.index import MIGRATIONS, Index, missing_objects, unknown_objects

    report = Report(path)
    if not path.exists():
        report.exists = False
        return report
    conn = _connect(path, read_only=False)
    try:
        try:
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            report.database_damaged = True
            _unreadable(path, exc, report)
            return report
        if version > len(MIGRATIONS):
            report.newer = int(version)  # not ours to read or change
            return report
        report.unknown = unknown_objects(conn)
        for kind, name, table in report.unknown:
            what = f"{kind} {name!r}" + (f" on {table!r}" if kind in ("trigger", "index") else "")
            report.findings.append(Finding("schema", f"{what} was not created by acpcli (`--repair` drops it)"))
        if version < len(MIGRATIONS) and not report.unknown:
            # written by an older acpcli: brought up to this schema first, as any command would
            # (not while it holds triggers of others: a migration's writes would set them off)
            conn.close()
            Index.open(path).close()
            conn = _connect(path, read_only=False)
            version = len(MIGRATIONS)
        _integrity(conn, report)
        if version == len(MIGRATIONS):  # else --repair drops what is not ours, then migrates
            report.missing = missing_objects(conn)
            for kind, name, _sql in report.missing:
                report.findings.append(Finding("schema", f"acpcli's {kind} {name!r} is missing (`--repair` makes it again)"))
            _event_log(conn, report)
            _search_index(conn, report)
    finally:
        conn.close()
    return report


def _unreadable(path: Path, exc: BaseException, report: Report) -> None:
    """The finding for a file whose schema SQLite will not read: the entries it cannot parse
    when it can be read past them, else not a database."""
    past = _past_bad_schema(path)
    if past is None:
        report.findings.append(Finding("database", f"not a readable SQLite database ({exc})"))
        return
    import sqlite3

    conn, bad = past
    try:
        (report.sessions,) = conn.execute("SELECT count(*) FROM sessions").fetchone()
    except sqlite3.Error:
        pass
    finally:
        conn.close()
    named = _MALFORMED.search(str(exc))
    if named is not None and named.group(1) not in bad:
        bad.insert(0, named.group(1))
    names = ", ".join(repr(name) for name in bad) or "?"
    report.findings.append(
        Finding("schema", f"SQLite cannot read the schema of {names} ({exc}); `--repair` keeps the sessions and events")
    )


def _tables_by_root(conn: sqlite3.Connection) -> dict[int, str]:
    import sqlite3

    try:
        return {int(root): name for name, root in conn.execute("SELECT name, rootpage FROM sqlite_master") if root}
    except sqlite3.DatabaseError:
        return {}


def _integrity(conn: sqlite3.Connection, report: Report) -> None:
    import sqlite3

    from acpcli.history.damage import is_damage

    try:
        lines = [row[0] for row in conn.execute(f"PRAGMA integrity_check({INTEGRITY_LINES})")]
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        lines = [str(exc)]
    if lines == ["ok"]:
        return
    report.database_damaged = True
    lines = [line for text in lines for line in str(text).splitlines() if not line.startswith("***")]
    roots = _tables_by_root(conn)
    where = sorted({roots.get(int(m.group(1)), f"page {m.group(1)}") for line in lines for m in _TREE.finditer(line)})
    count = f"{len(lines)}{'+' if len(lines) >= INTEGRITY_LINES else ''}"
    text = f"SQLite's integrity check found {count} problem{'s' if len(lines) != 1 else ''}"
    if where:
        text += f" (in {', '.join(where)})"
    report.findings.append(Finding("database", f"{text}; the first: {lines[0] if lines else '?'}"))


def _event_log(conn: sqlite3.Connection, report: Report) -> None:
    """Every session's events read as ``show`` reads them: what cannot be, per session."""
    import sqlite3

    from acpcli.history import eventlog
    from acpcli.history.damage import is_damage

    try:
        ids = [row[0] for row in conn.execute("SELECT id FROM sessions ORDER BY rowid")]
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        report.findings.append(Finding("sessions", f"the session list cannot be read whole ({exc})"))
        ids = []
    report.sessions = len(ids)
    for session_id in ids:
        unreadable = eventlog.Unreadable(session_id)
        for seq, _kind, payload in eventlog.events_raw(conn, session_id, unreadable=unreadable):
            try:
                json.loads(payload)
            except (TypeError, ValueError, RecursionError):
                unreadable.add(seq, seq)
                continue
            report.events += 1
        if unreadable.spans:
            n = unreadable.count()
            many = "some events" if n is None else f"{n} event{'s' if n != 1 else ''}"
            report.findings.append(
                Finding("event log", f"session {session_id}: {many} cannot be read (seq {unreadable.seqs()})")
            )


def _search_index(conn: sqlite3.Connection, report: Report) -> None:
    import sqlite3

    from acpcli.history import search

    try:
        problem = search.broken(conn)
    except sqlite3.OperationalError as exc:  # a read-only file: the FTS5 check cannot run
        if "readonly" not in str(exc) and "read-only" not in str(exc):
            raise
        return
    if problem is not None:
        report.findings.append(
            Finding("search index", f"damaged ({problem}); derived data: `acpcli search` rebuilds it")
        )


# --------------------------------------------------------------------------------------
# Salvaging
# --------------------------------------------------------------------------------------


def _rowids(conn: sqlite3.Connection, table: str) -> range:
    """The rowids to read ``table``'s rows by: every one up to the highest SQLite can find
    (through the table, through each of its indexes); the missing ones are probed in vain."""
    import sqlite3

    top = 0
    sources = [f"SELECT max(rowid) FROM {table}", f"SELECT rowid FROM {table} NOT INDEXED"]
    try:
        indexes = [row[1] for row in conn.execute(f"PRAGMA index_list({table})")]
    except sqlite3.DatabaseError:
        indexes = []
    sources += [f"SELECT rowid FROM {table} INDEXED BY {name}" for name in indexes]
    for sql in sources:
        try:
            for (rowid,) in conn.execute(sql):
                if isinstance(rowid, int) and rowid > top:
                    top = rowid
        except sqlite3.DatabaseError:
            continue  # as far as it read
    return range(1, top + 1)


def _rows(conn: sqlite3.Connection, table: str, columns: list[str]) -> Iterator[tuple[Any, ...] | None]:
    """Each row of ``table`` read on its own (None for one SQLite cannot read)."""
    import sqlite3

    sql = f"SELECT {', '.join(columns)} FROM {table} WHERE rowid = ?"
    for rowid in _rowids(conn, table):
        try:
            row = conn.execute(sql, (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            yield None
            continue
        if row is not None:
            yield row


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    import sqlite3

    try:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    except sqlite3.DatabaseError:
        return []


def repair(path: Path) -> Salvage:
    """Salvage the index at ``path`` into a fresh one, keeping the damaged file aside (see the
    module docstring). Never deletes anything."""
    import sqlite3

    from acpcli.history.index import Index

    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    fresh = path.with_name(f"{path.name}.repair-{stamp}")
    n = 1
    while aside.exists() or fresh.exists():
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
        fresh = path.with_name(f"{path.name}.repair-{stamp}-{n}")
    salvage = Salvage(aside)
    opened = _connect(path, read_only=True)
    source: sqlite3.Connection | None = opened
    try:
        opened.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError:
        opened.close()
        past = _past_bad_schema(path)  # schema entries SQLite cannot parse: read past them
        source = past[0] if past is not None else None
        salvage.not_a_database = source is None
    try:
        with Index.open(fresh) as index:
            if source is not None:
                _copy(source, index.conn, salvage)
    finally:
        if source is not None:
            source.close()
    from acpcli.paths import tighten

    for suffix in ("", "-wal", "-shm"):  # the damaged file whole, as it was (its WAL too)
        old = Path(f"{path}{suffix}")
        if old.exists():
            os.replace(old, Path(f"{aside}{suffix}"))
            tighten(Path(f"{aside}{suffix}"))
    os.replace(fresh, path)
    return salvage


def drop_unknown(
    path: Path, unknown: Sequence[tuple[str, str, str]], missing: Sequence[tuple[str, str, str]] = ()
) -> Path:
    """Drop the schema objects acpcli did not create (``unknown``, from :func:`check`) from
    the index at ``path``, in place, in one transaction, and make acpcli's own that it lacks
    (``missing``) again; the file as it was is copied first to
    ``acpcli.db.damaged-YYYYmmdd-HHMMSS`` beside it (returned). What SQLite cannot drop (a
    virtual table of a module it lacks) is taken out of the schema."""
    import sqlite3

    from acpcli.history.index import known_schema
    from acpcli.history.transactions import write_transaction
    from acpcli.paths import tighten

    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    conn = _connect(path, read_only=False)
    try:
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        tighten(aside)
        copy = sqlite3.connect(aside)
        try:
            conn.backup(copy)
        finally:
            copy.close()
        with write_transaction(conn):
            for kind, name, _table in sorted(unknown, key=lambda o: o[0] != "trigger"):  # triggers first
                quoted = '"' + name.replace('"', '""') + '"'
                try:
                    conn.execute(f"DROP {kind.upper()} IF EXISTS {quoted}")
                except sqlite3.DatabaseError:
                    (version,) = conn.execute("PRAGMA schema_version").fetchone()
                    conn.execute("PRAGMA writable_schema = ON")
                    try:
                        conn.execute("DELETE FROM sqlite_master WHERE name = ? OR tbl_name = ?", (name, name))
                    finally:
                        conn.execute("PRAGMA writable_schema = OFF")
                    conn.execute(f"PRAGMA schema_version = {int(version) + 1}")
            # acpcli's own of the same name (its owner trigger, rewritten) comes back as made
            known = known_schema()
            for kind, name, _table in unknown:
                own = sorted(known.get(name, {}).get(kind, ()))  # one text each, today
                if own and kind in ("trigger", "view", "index"):
                    conn.execute(own[-1])
            for _kind, _name, sql in missing:
                conn.execute(sql)
    finally:
        conn.close()
    return aside


def _copy(source: sqlite3.Connection, target: sqlite3.Connection, salvage: Salvage) -> None:
    from acpcli.history.transactions import write_transaction

    with write_transaction(target):
        known = _copy_sessions(source, target, salvage)
        _copy_events(source, target, salvage, known)


def _copy_sessions(source: sqlite3.Connection, target: sqlite3.Connection, salvage: Salvage) -> set[str]:
    """Copy every readable session row (the columns both schemas have); return their ids."""
    wanted = set(_columns(target, "sessions")) - {"search_seq"}  # search: indexed again
    columns = [c for c in _columns(source, "sessions") if c in wanted]
    known: set[str] = set()
    if "id" not in columns:
        return known
    insert = f"INSERT OR IGNORE INTO sessions ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    for row in _rows(source, "sessions", columns):
        if row is None:
            salvage.lost_rows += 1
            continue
        values = dict(zip(columns, row, strict=True))
        if not _session_row_ok(values):
            salvage.lost_rows += 1
            continue
        target.execute(insert, row)
        known.add(values["id"])
        salvage.sessions += 1
    return known


def _session_row_ok(values: dict[str, Any]) -> bool:
    """A session row acpcli can read back (what ``Index.get`` would choke on is left out)."""
    if not all(isinstance(values.get(k), str) and values.get(k) for k in ("id", "agent")):
        return False
    if not isinstance(values.get("cwd"), str) or not isinstance(values.get("created_at"), (int, float)):
        return False
    if not isinstance(values.get("last_used_at"), (int, float)) or values.get("state") not in ("active", "closed"):
        return False
    for key in ("argv", "additional_dirs", "mcp_servers"):
        try:
            if not isinstance(json.loads(values.get(key) or "[]"), list):
                return False
        except (TypeError, ValueError, RecursionError):
            return False
    for key in ("agent_info", "mcp_refs", "usage"):
        text = values.get(key)
        if text is not None:
            try:
                json.loads(text)
            except (TypeError, ValueError, RecursionError):
                values[key] = None
                return False
    return True


def _copy_events(source: sqlite3.Connection, target: sqlite3.Connection, salvage: Salvage, known: set[str]) -> None:
    """Copy every readable event, numbers kept, a source page at a time (memory stays that of
    a page, whatever the size of the index); sessions whose row was lost come back from their
    events alone."""
    from acpcli.history import eventlog

    columns = ["session_id", "first_seq", "count", "kinds", "sizes", "payloads", "received_at"]
    if not set(columns) <= set(_columns(source, "event_pages")):
        return
    notes: dict[str, eventlog.Unreadable] = {}
    written: dict[str, list[int]] = {}  # session -> the seqs written, as sorted [first, last, ...] runs
    times_of: dict[str, tuple[float, float]] = {}  # recovered session -> first and last event time
    for row in _rows(source, "event_pages", columns):
        if row is None:
            salvage.lost_rows += 1
            continue
        session_id, first, count, kinds, sizes, payloads, blob = row
        if not isinstance(session_id, str) or not isinstance(first, int):
            salvage.lost_rows += 1
            continue
        noted = notes.setdefault(session_id, eventlog.Unreadable(session_id))
        times = eventlog.unpack_times(blob) if isinstance(blob, bytes) and len(blob) % 8 == 0 else []
        runs = written.setdefault(session_id, [])
        page: list[tuple[str, int, float, str, str]] = []
        for i, (seq, kind, payload) in enumerate(
            eventlog.split_page(session_id, first, count, kinds, sizes, payloads, unreadable=noted)
        ):
            if _written(runs, seq):
                continue  # already written from another page (tampered pages may overlap)
            try:
                json.loads(payload)
            except (TypeError, ValueError, RecursionError):
                noted.add(seq, seq)
                continue
            page.append((session_id, seq, times[i] if i < len(times) else 0.0, kind, payload))
        if not page:
            continue
        if session_id not in known:
            _placeholder(target, session_id, page[0][2])
            salvage.recovered.append(session_id)
            known.add(session_id)
        if session_id in salvage.recovered:
            at = [t for _, _, t, _, _ in page if t] or [0.0]
            low, high = times_of.get(session_id, (min(at), max(at)))
            times_of[session_id] = (min(low, *at), max(high, *at))
        eventlog.write_pages(target, page, per_page=500)
        salvage.events += len(page)
        for _, seq, _, _, _ in page:
            _mark(runs, seq)
    for session_id, (low, high) in times_of.items():
        target.execute(
            "UPDATE sessions SET created_at = ?, last_used_at = ? WHERE id = ?", (low or time.time(), high or time.time(), session_id)
        )
    for session_id, noted in notes.items():
        # what is missing: what could not be cut apart or parsed, and the gaps between what was
        # copied (events on pages SQLite could not read)
        runs = written.get(session_id, [])
        ends = [0, *runs[1::2]]
        gaps = [(end + 1, start - 1) for end, start in zip(ends, runs[0::2], strict=False) if start > end + 1]
        missing = eventlog.Unreadable(session_id)
        for first, last in sorted(set(noted.spans) | set(gaps), key=lambda span: span[0]):
            if not missing.spans or (missing.spans[-1][1] is not None and first > missing.spans[-1][1]):
                missing.add(first, last)
        if missing.spans:
            salvage.unreadable[session_id] = missing.seqs()


def _written(runs: list[int], seq: int) -> bool:
    """Whether ``seq`` is in one of the sorted ``[first, last, first, last, ...]`` runs."""
    import bisect

    at = bisect.bisect_right(runs, seq)
    return at % 2 == 1 or (at > 0 and runs[at - 1] == seq)


def _mark(runs: list[int], seq: int) -> None:
    """Add ``seq`` to sorted ``[first, last, first, last, ...]`` runs (seqs mostly come in
    order: the last run grows)."""
    import bisect

    if runs and runs[-1] + 1 == seq:
        runs[-1] = seq
        return
    at = bisect.bisect_left(runs, seq)
    runs[at:at] = [seq, seq]


def _placeholder(target: sqlite3.Connection, session_id: str, when: float) -> None:
    """A session row for events whose own row was lost: agent and cwd unknown."""
    when = when or time.time()
    target.execute(
        "INSERT INTO sessions (id, agent, cwd, created_at, last_used_at, state) VALUES (?, 'unknown', '/', ?, ?, 'active')",
        (session_id, when, when),
    )
