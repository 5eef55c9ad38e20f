"""Full-text search over stored conversations: the search documents, their FTS5 index, queries.

A session's *documents* are the texts of its transcript as ``show`` rebuilds it: each user
message, agent message, thought and tool call title, one row each of ``search_docs``
(migration 7). ``search_fts`` is an SQLite FTS5 index over them (external content), made
when this Python's SQLite has FTS5 -- the standard builds on Linux, macOS and Windows do.
Without it :func:`find` scans ``search_docs`` instead: the same matches, slower, newest
first.

``sessions.search_seq`` is the seq of the last event a session's documents reflect: a session
whose event log has grown past it is *stale* (:func:`stale`), and
:mod:`acpcli.history.indexing` indexes it again before a search reads. Documents go with
their session (:func:`forget`, from ``Index.delete``).

Documents are data: nothing here parses events. :func:`documents` reads them off a
:class:`~acpcli.model.Store`'s entries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from acpcli.errors import UsageError
from acpcli.history.transactions import write_transaction
from acpcli.model import AGENT, THOUGHT, USER
from acpcli.text.safe import escape_surrogates

if TYPE_CHECKING:
    import sqlite3

    from acpcli.model import Entry

#: Document kinds, as stored and as ``--json`` reports them: the store's message kinds, and
#: a tool call's title.
TOOL = "tool"
KINDS = (USER, AGENT, THOUGHT, TOOL)
#: Searched unless asked otherwise (thoughts are opt-in: they are the model's scratch work).
DEFAULT_KINDS = (USER, AGENT, TOOL)

#: Marks around a matched term in a snippet (the control characters a stored text cannot
#: bring along: :func:`documents` turns them into spaces).
HIT_START, HIT_END = "\x02", "\x03"
SNIPPET_TOKENS = 14  # words of context in a snippet (FTS5 counts tokens)
_FALLBACK_CONTEXT = 60  # characters either side of the first match, without FTS5

#: The FTS5 index over ``search_docs`` (external content: the text is stored once). It is
#: kept in step by :func:`replace`, :func:`extend` and :func:`forget`, not by triggers: an
#: FTS5 insert from a trigger costs about six times a direct one.
_FTS = (
    "CREATE VIRTUAL TABLE search_fts USING fts5("
    "text, content='search_docs', content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
)

#: Migration 7 runs these (acpcli.history.index.MIGRATIONS), then :func:`ensure_fts`. Shipped:
#: never edit them.
DOCS_SCHEMA = (
    "ALTER TABLE sessions ADD COLUMN search_seq INTEGER NOT NULL DEFAULT 0",
    "CREATE TABLE search_docs ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, "  # never reused: an FTS5 entry can only name its own
    "session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE, "
    "kind TEXT NOT NULL, "  # user, agent, thought or tool (a tool call's title)
    "text TEXT NOT NULL)",
    "CREATE INDEX search_docs_by_session ON search_docs (session_id)",
)


def has_fts(conn: sqlite3.Connection) -> bool:
    """Whether the database has its FTS5 index (``search_fts``)."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'search_fts'").fetchone()
    return row is not None


def ensure_fts(conn: sqlite3.Connection) -> bool:
    """Make the FTS5 index if it is missing and this SQLite has FTS5 (filled from the
    documents already stored); say whether the database has one now. Run inside a
    transaction by migration 7, or on its own (a database first opened without FTS5)."""
    import sqlite3

    if has_fts(conn):
        return True
    with write_transaction(conn):
        if has_fts(conn):  # another process made it meanwhile
            return True
        conn.execute("SAVEPOINT fts")
        try:
            for statement in _FTS:
                conn.execute(statement)
        except sqlite3.OperationalError as exc:
            conn.execute("ROLLBACK TO fts")
            conn.execute("RELEASE fts")
            if "fts5" in str(exc):
                return False  # "no such module: fts5": search scans instead
            raise
        conn.execute("INSERT INTO search_fts (search_fts) VALUES ('rebuild')")
        conn.execute("RELEASE fts")
    return True


def create(conn: sqlite3.Connection) -> None:
    """Migration 7: the documents table, ``sessions.search_seq`` (0: every session recorded
    so far is indexed by the first search), and the FTS5 index where SQLite has it."""
    for statement in DOCS_SCHEMA:
        conn.execute(statement)
    ensure_fts(conn)


# --------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------

_MARKS = str.maketrans({HIT_START: " ", HIT_END: " "})


def documents(entries: Iterable[Entry]) -> list[tuple[str, str]]:
    """``(kind, text)`` of the transcript entries worth finding: messages with text, and
    tool calls with a title (plans are skipped)."""
    from acpcli.model import Message, ToolCall

    docs: list[tuple[str, str]] = []
    for entry in entries:
        if isinstance(entry, Message):
            text, kind = entry.text, entry.kind
        elif isinstance(entry, ToolCall):
            text, kind = entry.title or "", TOOL
        else:
            continue
        if kind in KINDS and text.strip():
            if HIT_START in text or HIT_END in text:
                text = text.translate(_MARKS)
            # Lone surrogates (an agent's "\\ud800") cannot be stored: written as shown.
            docs.append((kind, escape_surrogates(text)))
    return docs


def replace(conn: sqlite3.Connection, session_id: str, docs: Sequence[tuple[str, str]], seq: int) -> None:
    """A session's documents are now ``docs``, reflecting its events up to ``seq``. One
    transaction (the caller's, if it holds one)."""
    with write_transaction(conn):
        fts = has_fts(conn)
        _remove(conn, session_id, fts)
        _insert(conn, session_id, docs, seq, fts)


def extend(conn: sqlite3.Connection, session_id: str, docs: Sequence[tuple[str, str]], seq: int) -> None:
    """Add ``docs`` to a session's documents, which now reflect its events up to ``seq``."""
    with write_transaction(conn):
        _insert(conn, session_id, docs, seq, has_fts(conn))


def forget(conn: sqlite3.Connection, session_id: str) -> None:
    """Remove a session's documents (and their FTS5 entries): before the session is deleted."""
    with write_transaction(conn):
        _remove(conn, session_id, has_fts(conn))


# --------------------------------------------------------------------------------------
# A damaged search index: found, and made again
# --------------------------------------------------------------------------------------

#: The tables of the search index (FTS5 makes the ``search_fts_*`` ones).
_SEARCH_TABLES = ("search_fts", "search_fts_data", "search_fts_idx", "search_fts_docsize", "search_fts_config", "search_docs")


def broken(conn: sqlite3.Connection) -> str | None:
    """What is wrong with the search index, in a few words, or None when it reads whole:
    every document and every page of the FTS5 index read, and FTS5's own integrity check
    (the index says what the documents say). Costs a read of the whole index."""
    import sqlite3

    try:
        conn.execute("SELECT count(*), sum(length(text)) FROM search_docs NOT INDEXED").fetchone()
        conn.execute("SELECT count(*) FROM search_docs WHERE session_id > ''").fetchone()  # its index
        if has_fts(conn):
            for table in _SEARCH_TABLES[1:5]:
                conn.execute(f"SELECT count(*) FROM {table}").fetchone()
            with write_transaction(conn):
                conn.execute("SAVEPOINT fts_check")
                try:
                    conn.execute("INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 0)")
                finally:
                    conn.execute("ROLLBACK TO fts_check")
                    conn.execute("RELEASE fts_check")
    except sqlite3.DatabaseError as exc:
        from acpcli.history.damage import is_damage

        if not is_damage(exc):
            raise
        return str(exc)
    return None


def discard(conn: sqlite3.Connection) -> None:
    """Drop the search index (documents and FTS5 tables) and make it again, empty: every
    session is then indexed again by the next search (:func:`stale`). The index is derived
    from the event log, so nothing is lost. Tables SQLite cannot drop (their pages are
    damaged) are taken out of the schema and their pages given back by a VACUUM.
    Not inside a transaction."""
    import sqlite3

    from acpcli.history.damage import is_damage

    cut = False
    for table in ("search_fts", "search_docs"):
        try:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            cut = True
    if cut:
        # What DROP cannot read it cannot free: remove the tables from the schema (their
        # pages are then unused), make every connection read the schema again, VACUUM.
        marks = ",".join("?" * len(_SEARCH_TABLES))
        with write_transaction(conn):
            (version,) = conn.execute("PRAGMA schema_version").fetchone()
            conn.execute("PRAGMA writable_schema = ON")
            try:
                conn.execute(f"DELETE FROM sqlite_master WHERE tbl_name IN ({marks})", _SEARCH_TABLES)
            finally:
                conn.execute("PRAGMA writable_schema = OFF")
            conn.execute(f"PRAGMA schema_version = {int(version) + 1}")
        conn.execute("VACUUM")
    with write_transaction(conn):
        for statement in DOCS_SCHEMA[1:]:  # not the ALTER TABLE: sessions keeps search_seq
            conn.execute(statement)
        conn.execute("UPDATE sessions SET search_seq = 0")
    ensure_fts(conn)


def _remove(conn: sqlite3.Connection, session_id: str, fts: bool) -> None:
    if fts:
        conn.execute(
            "INSERT INTO search_fts (search_fts, rowid, text) "
            "SELECT 'delete', id, text FROM search_docs WHERE session_id = ?",
            (session_id,),
        )
    conn.execute("DELETE FROM search_docs WHERE session_id = ?", (session_id,))


def _insert(conn: sqlite3.Connection, session_id: str, docs: Sequence[tuple[str, str]], seq: int, fts: bool) -> None:
    if docs:
        # Ids numbered here, past every id ever given (AUTOINCREMENT's own counter included),
        # so the FTS5 rows are written with them directly: reading them back costs twice that.
        (last,) = conn.execute(
            "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'search_docs'), 0), "
            "COALESCE((SELECT MAX(id) FROM search_docs), 0))"
        ).fetchone()
        rows = [(last + i, kind, text) for i, (kind, text) in enumerate(docs, 1)]
        conn.executemany(
            "INSERT INTO search_docs (id, session_id, kind, text) VALUES (?, ?, ?, ?)",
            [(i, session_id, kind, text) for i, kind, text in rows],
        )
        if fts:
            conn.executemany("INSERT INTO search_fts (rowid, text) VALUES (?, ?)", [(i, text) for i, _, text in rows])
    conn.execute("UPDATE sessions SET search_seq = ? WHERE id = ?", (seq, session_id))


def indexed_seq(conn: sqlite3.Connection, session_id: str) -> int:
    """The seq of the last event the session's documents reflect (0: none yet)."""
    row = conn.execute("SELECT search_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return 0 if row is None else int(row[0])


def stale(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    """``(session id, its last event seq)`` of the sessions whose documents lag their event
    log, least recently used first (indexed in that order, the sessions used last get the
    newest document ids, which :func:`find` reads first for words too common to rank)."""
    rows = conn.execute(
        "SELECT id, last FROM (SELECT s.id, s.search_seq, s.last_used_at, "
        "(SELECT p.first_seq + p.count - 1 FROM event_pages p WHERE p.session_id = s.id "
        "ORDER BY p.first_seq DESC LIMIT 1) AS last FROM sessions s) "
        "WHERE last > search_seq ORDER BY last_used_at, id"
    )
    return [(sid, int(last)) for sid, last in rows]


# --------------------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------------------

#: A word as SQLite's unicode61 tokenizer sees one: letters and digits (``_`` separates).
_TOKEN = re.compile(r"[^\W_]+")


def terms(text: str) -> list[str]:
    """The words of a query: split on white space, surrounding quotes dropped; a word
    ending in ``*`` matches as a prefix. Words without a letter or digit are dropped.

    Raises :class:`UsageError` when nothing is left to look for.
    """
    words = [w.strip("\"'") for w in text.split()]
    words = [w for w in words if _TOKEN.search(w)]
    if not words:
        raise UsageError(f"nothing to search for in {text!r}: give at least one word")
    return words


def _prefix(word: str) -> bool:
    return word.endswith("*")


def fts_query(words: Sequence[str]) -> str:
    """An FTS5 query matching documents that hold every word. A word is the phrase of its
    letter-and-digit runs (``a-b`` is ``a`` then ``b``), quoted, so FTS5's operators and
    punctuation in it are never read as syntax."""
    return " AND ".join('"' + " ".join(_TOKEN.findall(w)) + '"' + ("*" if _prefix(w) else "") for w in words)


def _fold(text: str) -> str:
    """Case and accents dropped, as the FTS5 tokenizer drops them."""
    if text.isascii():
        return text.lower()
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()


@lru_cache(maxsize=32)
def _patterns(words: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """One regular expression per word over :func:`_fold`-ed text, matching as FTS5 does:
    whole words (or a prefix, for ``word*``), a word's runs in order with separators between."""
    patterns = []
    for word in words:
        body = r"[\W_]+".join(re.escape(_fold(t)) for t in _TOKEN.findall(word))
        patterns.append(re.compile(r"(?<![^\W_])" + body + ("" if _prefix(word) else r"(?![^\W_])")))
    return tuple(patterns)


def matches(text: str, words: Sequence[str]) -> bool:
    """Whether ``text`` holds every word, as an FTS5 search would find it: the test of
    ``show --grep`` and of a search without FTS5."""
    folded = _fold(text)
    return all(p.search(folded) for p in _patterns(tuple(words)))


@dataclass
class Hit:
    """A session that matches: its best matching document and how many of its documents match."""

    session_id: str
    kind: str  # the best document's kind
    snippet: str  # around the match, the words between HIT_START and HIT_END
    matches: int  # documents of the session that match
    score: float | None  # FTS5 bm25 of the best document (lower is better); None when not ranked
    #: Ranked by relevance; False: newest first (no FTS5, or words too common to rank, see
    #: :data:`RANKED_UP_TO`), and the document shown is the session's newest match.
    ranked: bool = True


#: FTS5 ranks (bm25) at most this many matching documents, about 2 µs each; words held by more
#: are not worth ranking ("the", a project's name): their sessions come newest first, found
#: without reading every match.
RANKED_UP_TO = 20_000
_WINDOW = 1024  # matches read at a time, newest first, when not ranking


def find(
    conn: sqlite3.Connection,
    words: Sequence[str],
    *,
    kinds: Sequence[str] = DEFAULT_KINDS,
    sessions: tuple[str, Sequence[Any]] = ("", ()),
    limit: int | None = 20,
) -> list[Hit]:
    """Sessions with a document holding every word, at most ``limit`` (None or 0: all).

    Best first: FTS5's bm25 of the session's best document, most recently used first on ties.
    Without FTS5, or for words in more than :data:`RANKED_UP_TO` documents, most recently used
    first (``Hit.ranked`` is False). ``sessions``: a ``WHERE`` clause on the sessions table
    (aliased ``s``) and its parameters (:func:`acpcli.history.index.session_filters`).
    """
    if not has_fts(conn):
        return _scanned(conn, words, kinds, sessions, limit)
    query = fts_query(words)
    (count,) = conn.execute("SELECT count(*) FROM search_fts WHERE search_fts MATCH ?", (query,)).fetchone()
    if count > RANKED_UP_TO:
        return _newest(conn, words, query, kinds, sessions, limit)
    where, params = sessions
    marks = ",".join("?" * len(kinds))
    sql = (
        "WITH best AS (SELECT session_id, min(r) AS score, count(*) AS n, doc FROM ("
        "SELECT d.session_id, f.rank AS r, d.id AS doc FROM search_fts f JOIN search_docs d ON d.id = f.rowid "
        f"WHERE search_fts MATCH ? AND d.kind IN ({marks})) GROUP BY session_id) "
        f"SELECT best.session_id, best.score, best.n, best.doc FROM best JOIN sessions s ON s.id = best.session_id"
        f"{where} ORDER BY best.score, s.last_used_at DESC, s.rowid DESC"
    )
    args: list[Any] = [query, *kinds, *params]
    if limit:
        sql += " LIMIT ?"
        args.append(limit)
    return [
        Hit(session_id, *_snippet(conn, doc, query, words), int(n), score)
        for session_id, score, n, doc in conn.execute(sql, args).fetchall()
    ]


def _scanned(
    conn: sqlite3.Connection,
    words: Sequence[str],
    kinds: Sequence[str],
    sessions: tuple[str, Sequence[Any]],
    limit: int | None,
) -> list[Hit]:
    """:func:`find` without FTS5: every document of the kinds read and matched in Python."""
    where, params = sessions
    marks = ",".join("?" * len(kinds))
    conn.create_function("acpcli_matches", 1, lambda text: matches(text, words), deterministic=True)
    sql = (
        "WITH best AS (SELECT d.session_id, count(*) AS n, max(d.id) AS doc FROM search_docs d "
        f"WHERE d.kind IN ({marks}) AND acpcli_matches(d.text) GROUP BY d.session_id) "
        "SELECT best.session_id, best.n, best.doc FROM best JOIN sessions s ON s.id = best.session_id"
        f"{where} ORDER BY s.last_used_at DESC, s.rowid DESC"
    )
    args: list[Any] = [*kinds, *params]
    if limit:
        sql += " LIMIT ?"
        args.append(limit)
    return [
        Hit(session_id, *_snippet(conn, doc, "", words), int(n), None, ranked=False)
        for session_id, n, doc in conn.execute(sql, args).fetchall()
    ]


def _newest(
    conn: sqlite3.Connection,
    words: Sequence[str],
    query: str,
    kinds: Sequence[str],
    sessions: tuple[str, Sequence[Any]],
    limit: int | None,
) -> list[Hit]:
    """:func:`find` for words too common to rank: matches read newest document first (FTS5
    walks its rowids backwards, and a session's documents are numbered when it is indexed, so
    the newest are those of the sessions used last) until ``limit`` sessions pass the filters;
    those are shown most recently used first, each with its newest match and an exact count."""
    import json

    where, params = sessions
    marks = ",".join("?" * len(kinds))
    pick = (
        "SELECT c.session_id, c.id FROM (SELECT d.session_id, d.id FROM search_docs d "
        f"WHERE d.id IN (SELECT value FROM json_each(?)) AND d.kind IN ({marks})) c "
        f"JOIN sessions s ON s.id = c.session_id{where} ORDER BY c.id DESC"
    )
    found: dict[str, int] = {}  # session -> its newest matching document, in the order found
    below = None
    while not limit or len(found) < limit:
        ids = [
            rowid
            for (rowid,) in conn.execute(
                "SELECT rowid FROM search_fts WHERE search_fts MATCH ? AND rowid < ? ORDER BY rowid DESC LIMIT ?",
                (query, below if below is not None else 1 << 62, _WINDOW),
            )
        ]
        if not ids:
            break
        below = ids[-1]
        for session_id, doc in conn.execute(pick, [json.dumps(ids), *kinds, *params]):
            found.setdefault(session_id, doc)
    chosen = list(found.items())[:limit] if limit else list(found.items())
    used = dict(conn.execute(
            "SELECT id, last_used_at FROM sessions WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps([sid for sid, _ in chosen]),),
        ))
    chosen.sort(key=lambda item: used.get(item[0], 0.0), reverse=True)
    hits = []
    for session_id, doc in chosen:
        texts = conn.execute(
            f"SELECT text FROM search_docs WHERE session_id = ? AND kind IN ({marks})", (session_id, *kinds)
        )
        count = sum(1 for (text,) in texts if matches(text, words))
        hits.append(Hit(session_id, *_snippet(conn, doc, query, words), max(count, 1), None, ranked=False))
    return hits


def _snippet(conn: sqlite3.Connection, doc: int, query: str, words: Sequence[str]) -> tuple[str, str]:
    """The kind of document ``doc`` and a snippet of it around the match."""
    (kind, text) = conn.execute("SELECT kind, text FROM search_docs WHERE id = ?", (doc,)).fetchone()
    if query:
        row = conn.execute(
            "SELECT snippet(search_fts, 0, ?, ?, '…', ?) FROM search_fts WHERE search_fts MATCH ? AND rowid = ?",
            (HIT_START, HIT_END, SNIPPET_TOKENS, query, doc),
        ).fetchone()
        if row is not None:
            return kind, row[0]
    return kind, scan_snippet(text, words)


def scan_snippet(text: str, words: Sequence[str]) -> str:
    """A snippet of ``text`` around its first match of ``words`` (as :func:`matches` finds
    them), every match marked: for a search without FTS5."""
    folded = _fold(text)
    if len(folded) != len(text):  # folding moved the offsets: a snippet from the start, unmarked
        return text[: _FALLBACK_CONTEXT * 3] + ("…" if len(text) > _FALLBACK_CONTEXT * 3 else "")
    spans = sorted(m.span() for p in _patterns(tuple(words)) for m in p.finditer(folded) if m.end() > m.start())
    first = spans[0][0] if spans else 0
    start, end = max(0, first - _FALLBACK_CONTEXT), min(len(text), first + _FALLBACK_CONTEXT * 2)
    out, at = [], start
    for a, b in spans:
        if a < at or b > end:
            continue
        out += [text[at:a], HIT_START, text[a:b], HIT_END]
        at = b
    out.append(text[at:end])
    return ("…" if start else "") + "".join(out) + ("…" if end < len(text) else "")
