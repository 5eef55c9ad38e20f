"""Telling a damaged index from a busy, full or read-only one, and saying what to do.

SQLite reports a page overwritten with garbage as "database disk image is malformed"
(``SQLITE_CORRUPT``), a file that is not a database as ``SQLITE_NOTADB``, and a table that
went missing or a broken FTS5 table as plain errors ("no such table", "vtable constructor
failed"). Those are *damage*: waiting or freeing disk space will not help; ``acpcli doctor``
says what is damaged and ``acpcli doctor --repair`` salvages what is readable
(:mod:`acpcli.history.doctor`). Everything else (locked, busy, full, read-only, I/O) is not.

Pure and small: the event log's readers, the index and the CLI all ask it.
"""

from __future__ import annotations

from pathlib import Path

from acpcli.errors import DamagedState

#: What to do about a damaged index (the hint of every :class:`DamagedState` about it).
DOCTOR_HINT = (
    "`acpcli doctor` says what is damaged; `acpcli doctor --repair` salvages what is readable "
    "into a fresh index (the damaged file is kept)"
)
#: What to do about an index holding schema objects acpcli did not create (planted triggers).
REPAIR_HINT = "`acpcli doctor` lists what acpcli did not create; `acpcli doctor --repair` removes it"
#: SQLite's words for a database that is fine but cannot be used now (full, read-only, locked).
STORAGE_WORDS = ("full", "readonly", "read-only", "unable to open", "disk i/o", "permission", "out of memory")
_BUSY_WORDS = ("locked", "busy")
_DAMAGE_WORDS = ("malformed", "not a database", "corrupt", "vtable constructor failed", "no such table", "no such column")


def is_damage(exc: BaseException) -> bool:
    """Whether an SQLite error says the database file is damaged (a page overwritten, a file
    that is not a database, a table missing), not that it is busy, full or read-only."""
    import sqlite3

    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    name = getattr(exc, "sqlite_errorname", "") or ""  # Python 3.11+
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return True
    text = str(exc).lower()
    if any(word in text for word in (*STORAGE_WORDS, *_BUSY_WORDS)):
        return False
    return any(word in text for word in _DAMAGE_WORDS)


def is_busy(exc: BaseException) -> bool:
    """Whether an SQLite error is another connection holding a lock."""
    text = str(exc).lower()
    return any(word in text for word in _BUSY_WORDS)


def damaged(path: Path, what: BaseException | str) -> DamagedState:
    """The error for a damaged index file: one line naming it and what SQLite said, and the
    hint saying what to do."""
    return DamagedState(f"the session index {path} is damaged ({what})", hint=DOCTOR_HINT)
