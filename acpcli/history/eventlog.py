"""The raw event log: every session update as received, stored in pages.

This module owns the log's on-disk format, its writer (:class:`EventWriter`) and its
readers (:func:`events_raw`, :func:`event_count`, :func:`event_times`).
:class:`acpcli.history.index.Index` opens the database, applies the migrations and hands
out writers; its event methods delegate here.

The page format (table ``event_pages``, created by migration 2, see :data:`PAGES_SCHEMA`):

* A page is one row holding ``count`` consecutive events of one session; the i-th has
  ``seq = first_seq + i``.
* ``kinds`` is a JSON array of each event's kind (the ``sessionUpdate`` discriminator).
* ``payloads`` is the events' JSON texts, exactly as received, concatenated; ``sizes`` is
  a JSON array of their lengths in characters, which cut them back apart. There is no
  separator, so any text survives as it was.
* ``received_at`` is each event's unix time, float64 little-endian, packed.

Why pages: a row costs SQLite about a microsecond however small it is, so one row per event
was the replay's largest cost (BENCHMARKS.md); one row per flushed batch costs ~nothing.

A database still at schema 1 (one ``events`` row per event) is read as it is by a
read-only index, which never migrates: the readers take ``legacy=True`` for it.

Invariants:

* **Append-only.** A trigger rejects ``UPDATE`` of a page; events are only ever added
  (and deleted with their session).
* **Numbering.** ``seq`` counts 1, 2, 3, ... per session, without gaps or duplicates, even
  when two processes append to one session: a flush renumbers its pages past whatever
  another writer committed meanwhile, under ``BEGIN IMMEDIATE``.
* **Readers see what writers buffered.** The index flushes its own writers before every
  read, so a process always reads its own events.

Durability trade-off of :class:`EventWriter`: updates are buffered and written in batches
(one transaction per batch, ``synchronous=NORMAL`` in WAL mode, so commits do not fsync).
An agent crash loses nothing, because the writer flushes on ``flush()``/``close()``/context
exit; a SIGKILL of acpcli itself may lose the last, unflushed batch (at most ``batch_size``
updates or ``flush_interval`` seconds' worth); a power cut may also lose the last committed
batches. In every case the database stays consistent (WAL), and each batch is all or
nothing. Writers only flush when asked or on ``append``: a writer dropped without
:meth:`EventWriter.close` (or ``Index.close``) loses its buffer. A writer belongs to the
thread of its index.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from acpcli.errors import SessionNotFound

logger = logging.getLogger("acpcli.history.eventlog")

if TYPE_CHECKING:
    import sqlite3


class Database(Protocol):
    """What an :class:`EventWriter` needs of its index (:class:`acpcli.history.index.Index`):
    the open connection, and a registry that flushes its writers before every read and
    closes them when the index closes."""

    @property
    def conn(self) -> sqlite3.Connection: ...

    def register(self, writer: EventWriter) -> None: ...

    def unregister(self, writer: EventWriter) -> None: ...

# Migration 2 runs this text (acpcli.history.index.MIGRATIONS): it is shipped, never edit it;
# change the format with a new migration. SQLite keeps the text, comments included.
PAGES_SCHEMA = """
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


# --------------------------------------------------------------------------------------
# Encoding and decoding one page
# --------------------------------------------------------------------------------------


def unpack_times(blob: bytes) -> list[float]:
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


def write_pages(conn: sqlite3.Connection, rows: Iterable[tuple[str, int, float, str, str]], *, per_page: int) -> None:
    """Write ``(session_id, seq, received_at, kind, payload)`` rows as pages.

    ``rows`` come ordered by session, then seq. A page holds a run of one session's
    consecutive seqs, at most ``per_page`` events; a gap in the seqs starts a new page, so
    every event keeps its number. Rows are consumed as they come (a cursor works), never
    all held in memory. For migration 2, which copies the old ``events`` rows.
    """
    page: _Page | None = None
    for session_id, seq, received_at, kind, payload in rows:
        if page is None or page.session_id != session_id or page.next_seq != seq or len(page) >= per_page:
            if page is not None:
                page.insert(conn)
            page = _Page(session_id, seq)
        page.add(kind, payload, received_at)
    if page is not None:
        page.insert(conn)


def _last_seq(conn: sqlite3.Connection, session_id: str) -> int:
    """The highest seq stored for a session (0 if none): the end of its last page."""
    row = conn.execute(
        "SELECT first_seq + count - 1 FROM event_pages WHERE session_id = ? ORDER BY first_seq DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return 0 if row is None else int(row[0])


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------


class Unreadable:
    """The events of one session that could not be read, noted while reading and said once,
    when the reading ends (:func:`acpcli.notices.warn`: ``acpcli: warning: …`` on stderr of
    a command, and the log): how many, and which seqs. A transcript shows what can be read."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.spans: list[tuple[int, int | None]] = []  # (first seq, last seq or None: to the end)

    def add(self, first: int, last: int | None = None) -> None:
        if self.spans and self.spans[-1][1] is not None and self.spans[-1][1] + 1 == first:
            self.spans[-1] = (self.spans[-1][0], last)  # extends the previous run
        else:
            self.spans.append((first, last))

    def count(self) -> int | None:
        """How many events, None when a run's end is unknown (the rest of the log)."""
        total = 0
        for first, last in self.spans:
            if last is None:
                return None
            total += last - first + 1
        return total

    def seqs(self) -> str:
        """The runs, e.g. ``4, 7-9, 12 and after``."""
        shown = []
        for first, last in self.spans[:10]:
            shown.append(f"{first} and after" if last is None else str(first) if last == first else f"{first}-{last}")
        return ", ".join(shown) + (", …" if len(self.spans) > 10 else "")

    def report(self) -> None:
        if not self.spans:
            return
        from acpcli import notices

        n = self.count()
        many = "some stored events" if n is None else f"{n} stored event{'s' if n != 1 else ''}"
        notices.warn(
            "unreadable-events",
            f"{many} of session {self.session_id} could not be read (seq {self.seqs()}): shown without "
            "them; `acpcli doctor` checks the whole index",
        )


_PAGE_COLUMNS = "first_seq, count, kinds, sizes, payloads"


def _page_rows(conn: sqlite3.Connection, session_id: str, unreadable: Unreadable) -> Iterator[tuple[Any, ...]]:
    """The ``event_pages`` rows of a session in seq order. Where SQLite cannot read a page
    (a damaged file), the rest are read one by one: those it cannot read are noted in
    ``unreadable`` and skipped, the others still come."""
    import sqlite3

    from acpcli.history.damage import is_damage

    done = 0
    try:
        for row in conn.execute(
            f"SELECT {_PAGE_COLUMNS} FROM event_pages WHERE session_id = ? ORDER BY first_seq", (session_id,)
        ):
            yield row
            done = row[0]
        return
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        logger.warning("reading the events of %s one page at a time: %s", session_id, exc)
    keys: list[tuple[int, int]] = []
    try:  # the (session_id, first_seq) index names every page's rowid, without reading the pages
        keys = conn.execute(
            "SELECT id, first_seq FROM event_pages WHERE session_id = ? AND first_seq > ? ORDER BY first_seq",
            (session_id, done),
        ).fetchall()
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        try:  # the index is damaged too: scan the table as far as it reads
            for key in conn.execute(
                "SELECT id, first_seq FROM event_pages NOT INDEXED WHERE session_id = ? AND first_seq > ?",
                (session_id, done),
            ):
                keys.append(key)
        except sqlite3.DatabaseError:
            unreadable.add(done + 1 if not keys else max(k[1] for k in keys) + 1)
        keys.sort(key=lambda key: key[1])
    for i, (rowid, first) in enumerate(keys):
        try:
            row = conn.execute(f"SELECT {_PAGE_COLUMNS} FROM event_pages WHERE id = ?", (rowid,)).fetchone()
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            row = None
        if row is None:
            unreadable.add(first, keys[i + 1][1] - 1 if i + 1 < len(keys) else None)
            continue
        yield row


def events_raw(
    conn: sqlite3.Connection, session_id: str, *, legacy: bool = False, unreadable: Unreadable | None = None
) -> Iterator[tuple[int, str, str]]:
    """``(seq, kind, payload_json_text)`` of a session's stored events, in order.

    What cannot be read (a page SQLite cannot read, a page whose kinds or sizes are not what
    it wrote) is skipped and noted in ``unreadable``; without one, it is said when the reading
    ends (:meth:`Unreadable.report`). ``legacy``: the database is at schema 1 (one ``events``
    row per event).
    """
    if legacy:
        yield from conn.execute(
            "SELECT seq, kind, payload FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        )
        return
    mine = unreadable is None
    noted = Unreadable(session_id) if unreadable is None else unreadable
    for row in _page_rows(conn, session_id, noted):
        yield from split_page(session_id, *row, unreadable=noted)
    if mine:
        noted.report()


def split_page(
    session_id: str, seq: int, count: Any, kinds: Any, sizes: Any, payloads: Any, *, unreadable: Unreadable
) -> Iterator[tuple[int, str, str]]:
    """``(seq, kind, payload_json_text)`` of one ``event_pages`` row; what of it cannot be cut
    apart (kinds or sizes that are not what acpcli wrote) is noted in ``unreadable``."""
    try:
        kind_list, size_list = json.loads(kinds), json.loads(sizes)
    except (TypeError, ValueError, RecursionError):
        kind_list = size_list = None
    if not isinstance(kind_list, list) or not isinstance(size_list, list) or not isinstance(payloads, str):
        logger.warning("skipped a damaged event page of session %s (seq %s)", session_id, seq)
        unreadable.add(seq, seq + max(count if isinstance(count, int) else 1, 1) - 1)
        return
    start = 0
    last = seq + count - 1 if isinstance(count, int) and count >= 1 else seq + len(size_list) - 1
    for kind, size in zip(kind_list, size_list, strict=False):
        if not isinstance(size, int) or size < 0:
            logger.warning("skipped the rest of a damaged event page of session %s (seq %s)", session_id, seq)
            unreadable.add(seq, max(seq, last))
            return
        end = start + size
        yield seq, kind if isinstance(kind, str) else "?", payloads[start:end]
        seq += 1
        start = end
    if seq <= last:  # fewer kinds or sizes than the page holds
        unreadable.add(seq, last)


def events(conn: sqlite3.Connection, session_id: str, *, legacy: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(kind, payload)`` of a session's stored events, payloads parsed, in order.

    A payload that is not JSON (a damaged or tampered database) is skipped: a transcript
    shows what can be read; what could not be is said once the reading ends
    (:class:`Unreadable`). Payloads are usually objects, but not always.
    """
    unreadable = Unreadable(session_id)
    for seq, kind, payload in events_raw(conn, session_id, legacy=legacy, unreadable=unreadable):
        try:
            value = json.loads(payload)
        except (TypeError, ValueError, RecursionError):
            logger.warning("skipped an unreadable event of session %s (seq %s)", session_id, seq)
            unreadable.add(seq, seq)
            continue
        yield kind, value
    unreadable.report()


def events_between(
    conn: sqlite3.Connection, session_id: str, first: int, last: int, *, legacy: bool = False
) -> Iterator[tuple[int, str, str]]:
    """``(seq, kind, payload_json_text)`` of a session's stored events ``first`` to ``last``
    (seqs, both included), in order; only the pages that hold them are read."""
    if legacy:
        yield from conn.execute(
            "SELECT seq, kind, payload FROM events WHERE session_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
            (session_id, first, last),
        )
        return
    noted = Unreadable(session_id)
    rows = conn.execute(
        f"SELECT {_PAGE_COLUMNS} FROM event_pages WHERE session_id = ? AND first_seq <= ? "
        "AND first_seq + count - 1 >= ? ORDER BY first_seq",
        (session_id, last, first),
    )
    for row in rows:
        for event in split_page(session_id, *row, unreadable=noted):
            if first <= event[0] <= last:
                yield event
    noted.report()


def replay_marks(conn: sqlite3.Connection, session_id: str, *, legacy: bool = False) -> list[tuple[int, str, str]]:
    """``(seq, kind, payload_json_text)`` of a session's replay brackets (the kinds
    ``acpcli/replay-…``: :mod:`acpcli.history.records`), in order; only the pages that hold
    one are cut apart."""
    if legacy:
        return conn.execute(
            "SELECT seq, kind, payload FROM events WHERE session_id = ? AND kind LIKE 'acpcli/replay-%' ORDER BY seq",
            (session_id,),
        ).fetchall()
    noted = Unreadable(session_id)
    marks = [
        event
        for row in conn.execute(
            f"SELECT {_PAGE_COLUMNS} FROM event_pages WHERE session_id = ? AND kinds LIKE '%acpcli/replay-%' "
            "ORDER BY first_seq",
            (session_id,),
        )
        for event in split_page(session_id, *row, unreadable=noted)
        if event[1].startswith("acpcli/replay-")
    ]
    noted.report()
    return marks


def event_count(conn: sqlite3.Connection, session_id: str, *, legacy: bool = False) -> int:
    """How many events are stored for a session."""
    sql = "SELECT COALESCE(SUM(count), 0) FROM event_pages WHERE session_id = ?"
    if legacy:
        sql = "SELECT count(*) FROM events WHERE session_id = ?"
    (n,) = conn.execute(sql, (session_id,)).fetchone()
    return int(n)


def last_seq(conn: sqlite3.Connection, session_id: str) -> int:
    """The seq of a session's last stored event (0 if none)."""
    return _last_seq(conn, session_id)


def kinds_after(conn: sqlite3.Connection, session_id: str, seq: int) -> list[str]:
    """The kinds of a session's stored events after ``seq``, in order (payloads are not read)."""
    kinds: list[str] = []
    for first, count, page_kinds in conn.execute(
        "SELECT first_seq, count, kinds FROM event_pages WHERE session_id = ? AND first_seq + count - 1 > ? "
        "ORDER BY first_seq",
        (session_id, seq),
    ):
        try:
            listed = json.loads(page_kinds)
        except (TypeError, ValueError, RecursionError):
            listed = None
        if not isinstance(listed, list):
            listed = ["?"] * int(count)  # a damaged page: its kinds are unknown
        kinds.extend(str(k) for k in listed[max(0, seq + 1 - first) :])
    return kinds


def event_times(conn: sqlite3.Connection, session_id: str, *, legacy: bool = False) -> list[float]:
    """When each of a session's stored events was received (unix seconds), in seq order."""
    if legacy:
        sql = "SELECT received_at FROM events WHERE session_id = ? ORDER BY seq"
        return [t for (t,) in conn.execute(sql, (session_id,))]
    times: list[float] = []
    for (blob,) in conn.execute(
        "SELECT received_at FROM event_pages WHERE session_id = ? ORDER BY first_seq", (session_id,)
    ):
        times.extend(unpack_times(blob))
    return times


# --------------------------------------------------------------------------------------
# Writing: the hot path
# --------------------------------------------------------------------------------------


class EventWriter:
    """Buffered, batched appends of raw session updates.

    ``append`` takes the JSON text the connection already has (no re-serializing) and costs
    a few list appends; the buffered events reach the database in one transaction per
    batch -- one ``event_pages`` row per session in it -- when ``batch_size`` events are
    pending, when ``flush_interval`` seconds have passed since the oldest pending one
    (checked on ``append`` and :meth:`flush_if_due`), and on :meth:`flush`, :meth:`close`
    and context exit. See the module docstring for what a crash can lose.

    The writer registers with ``index``, which flushes it before every read and closes it
    on ``Index.close``. The session row must exist (``Index.upsert_session``) before its
    first event. ``clock`` (unix seconds) stamps each event's receipt and times the flushes.
    """

    def __init__(
        self,
        index: Database,
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
        # The index and its writers are one unit: it owns the registry.
        index.register(self)

    @property
    def pending(self) -> int:
        """Events buffered but not yet written."""
        return self._pending

    def append(self, session_id: str, kind: str, payload: str) -> int:
        """Buffer one update (its JSON text as received); return its per-session ``seq`` --
        provisional: if another process appended to the session meanwhile, :meth:`flush`
        numbers the page after those events instead.

        Raises :class:`SessionNotFound` on the first append for an unknown session.
        """
        now = self._clock()
        page = self._pages.get(session_id)
        if page is None:
            page = self._open_page(session_id)
        payloads = page.payloads
        seq = page.first_seq + len(payloads)
        pending = self._pending
        if not pending:
            self._oldest = now
        page.kinds.append(kind)
        payloads.append(payload)
        page.times.append(now)
        self._pending = pending = pending + 1
        if pending >= self._batch_size or now - self._oldest >= self._interval:
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

    def forget(self, session_id: str) -> None:
        """The session was deleted (``Index.delete``): its numbering starts afresh."""
        self._next_seq.pop(session_id, None)
        self._stored.pop(session_id, None)

    def flush_if_due(self) -> bool:
        """Flush if the oldest pending event is older than ``flush_interval``; say whether.

        The command's :class:`~acpcli.processes.supervisor.Supervisor` calls it on a timer, so a quiet
        stream still reaches the disk promptly.
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
            self._index.unregister(self)

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
