"""Local storage that never stops a session: the index and event writer of live commands.

A full disk, a read-only home or a database file without write permission must not stop
the live view or the turn: the answer still streams to the person. :class:`SafeIndex` (an
:class:`~acpcli.persistence.Index`) and its :class:`SafeWriter` catch every failed write;
on the first one they

* remember one line saying what could not be saved and where (:attr:`SafeIndex.failure`),
  and tell ``on_failure`` (the REPL shows it at once);
* move to an in-memory database holding a copy of the session rows, so the rest of the
  command (the REPL's ``/export``, titles, numbering) goes on working;
* count the updates that did not reach the disk (:attr:`SafeIndex.lost`).

The command ends with :func:`verdict`: :class:`~acpcli.errors.StorageError` (exit 16) when
something was lost and nothing worse happened, else one warning line beside the other error.

What counts as a storage failure: any ``OSError`` and SQLite's "disk full", "read-only",
"unable to open" and I/O errors. A database that is not a database (corrupt) stays a
:class:`~acpcli.errors.ConfigError`, as before.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from acpcli.errors import ConfigError, StorageError
from acpcli.eventlog import EventWriter
from acpcli.persistence import Index, migrate

log = logging.getLogger("acpcli.safestore")

_SQLITE_STORAGE_WORDS = ("full", "readonly", "read-only", "unable to open", "disk i/o", "disk", "permission")


def storage_reason(exc: BaseException) -> str | None:
    """Why ``exc`` (or what caused it) is a storage failure, in a few words; ``None`` if it
    is not one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError):
            return current.strerror or str(current)
        if isinstance(current, sqlite3.OperationalError):
            text = str(current)
            if any(word in text.lower() for word in _SQLITE_STORAGE_WORDS):
                return text
        current = current.__cause__ or current.__context__
    return None


class SafeIndex(Index):
    """An index whose writes never raise for a storage failure (see the module docstring)."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        read_only: bool = False,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(path, read_only=read_only)
        self.on_failure = on_failure
        self.failure: str | None = None  # one line: what could not be saved, where, why
        self.lost = 0  # session updates that did not reach the disk
        self.in_memory = False

    # -- opening --------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        try:
            return super()._open()
        except (ConfigError, OSError, sqlite3.Error) as exc:
            reason = storage_reason(exc)
            if reason is None or self._read_only:
                raise
            self._note_failure(reason)
            self.in_memory = True
            return _memory_connection()

    # -- failing over ---------------------------------------------------------------------

    def _note_failure(self, reason: str) -> None:
        if self.failure is not None:
            return
        self.failure = f"cannot save sessions to {self.path}: {reason}"
        log.warning("%s; going on in memory", self.failure)
        if self.on_failure is not None:
            try:
                self.on_failure(self.failure)
            except Exception:
                log.exception("reporting the storage failure failed")

    def storage_failed(self, exc: BaseException) -> None:
        """A write failed: record why, count what is lost, go on in memory. Re-raises what
        is not a storage failure only when already in memory (a bug, not the disk)."""
        reason = storage_reason(exc) or f"{type(exc).__name__}: {exc}"
        if self.in_memory:
            log.error("a write to the in-memory index failed: %s", reason)
            return
        self._note_failure(reason)
        # Whatever the writers still hold never reached the disk.
        self.lost += sum(writer.pending for writer in list(self._writers))
        old = self._conn
        memory = _memory_connection()
        if old is not None:
            try:
                rows = old.execute("SELECT * FROM sessions").fetchall()
                if rows:
                    marks = ", ".join("?" * len(rows[0]))
                    memory.executemany(f"INSERT OR IGNORE INTO sessions VALUES ({marks})", rows)
            except sqlite3.Error as err:
                log.warning("could not copy the session rows into memory: %s", err)
            try:
                if old.in_transaction:
                    old.execute("ROLLBACK")
                old.close()
            except sqlite3.Error:
                pass
        self._conn = memory
        self.in_memory = True

    def _guarded(self, operation: Callable[..., Any], *args: Any) -> Any:
        try:
            return operation(*args)
        except (OSError, sqlite3.Error) as exc:
            if self.in_memory:
                log.error("a write to the in-memory index failed: %s", exc)
                return None
            self.storage_failed(exc)
            return self._guarded(operation, *args)

    # -- writes ---------------------------------------------------------------------------

    def upsert_session(self, rec: Any) -> None:
        self._guarded(super().upsert_session, rec)

    def insert_session(self, rec: Any) -> bool:
        recorded = self._guarded(super().insert_session, rec)
        return recorded is not False  # None: not even memory took it; do not try other ids

    def touch(self, session_id: str, when: float | None = None) -> None:
        self._guarded(super().touch, session_id, when)

    def set_title(self, session_id: str, title: str | None, *, by_user: bool = False) -> None:
        self._guarded(partial(super().set_title, by_user=by_user), session_id, title)

    def mark_closed(self, session_id: str) -> None:
        self._guarded(super().mark_closed, session_id)

    def delete(self, session_id: str) -> None:
        self._guarded(super().delete, session_id)

    def writer(self, *, batch_size: int = 500, flush_interval: float = 0.1, clock: Any = None) -> SafeWriter:
        import time

        return SafeWriter(self, batch_size=batch_size, flush_interval=flush_interval, clock=clock or time.time)


class SafeWriter(EventWriter):
    """An event writer whose appends and flushes never raise: a failure goes to its
    :class:`SafeIndex`, which fails over to memory; the batch is then written there."""

    _index: SafeIndex

    def append(self, session_id: str, kind: str, payload: str) -> int:
        index = self._index
        counted = index.in_memory
        try:
            seq = _append(self, session_id, kind, payload)  # EventWriter's (no super() per update)
        except Exception as exc:  # noqa: BLE001 - storing must never stop the turn
            index.storage_failed(exc)
            if self.pending == 0:  # not even buffered (the session row was missing)
                index.lost += 1
            self._retry()
            return 0
        if counted:
            index.lost += 1
        return seq

    def flush(self) -> None:
        try:
            super().flush()
        except Exception as exc:  # noqa: BLE001 - storing must never stop the turn
            self._index.storage_failed(exc)
            self._retry()

    def _retry(self) -> None:
        """Write the buffer again (now into memory); drop it if even that fails."""
        try:
            EventWriter.flush(self)
        except Exception as exc:  # noqa: BLE001 - see above
            log.error("dropping %d buffered updates: %s", self.pending, exc)
            self._pages = {}
            self._pending = 0


_append = EventWriter.append


def _memory_connection() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    return conn


def open_index(on_failure: Callable[[str], None] | None = None) -> SafeIndex:
    """The index of a live command, opened now (falls back to memory, never raises for a
    storage failure)."""
    index = SafeIndex(on_failure=on_failure)
    index.conn  # noqa: B018 - opening is the point
    return index


def verdict(index: SafeIndex) -> None:
    """At the end of a command: :class:`StorageError` (exit 16) if updates were lost and the
    command is otherwise ending well; a warning line if another error is on its way out."""
    if index.failure is None:
        return
    message = index.failure
    if index.lost:
        message += f" ({index.lost} session update{'s' if index.lost != 1 else ''} not saved)"
    if sys.exc_info()[1] is not None:
        sys.stderr.write(f"acpcli: warning: {message}\n")
        return
    raise StorageError(message)
