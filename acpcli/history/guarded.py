"""Local storage that never stops a session: the index and event writer of live commands.

Two kinds of trouble, handled differently.

**A lock** (another process holds the database's write lock: SQLITE_BUSY, "database is
locked") is not a failure: the database is fine and will be free again. A live command's
writes wait for it only :data:`ATTEMPT_MS` at a time (the turn's event loop goes on, the
answer keeps streaming); what cannot be written yet is kept, in order -- the index's own
writes (:class:`SafeIndex` queues them) and the event writer's buffer (:class:`SafeWriter`)
-- and tried again every :data:`RETRY_SECONDS`, then written as soon as the lock is free. At
the end of the command acpcli waits for the lock up to :func:`~acpcli.history.index.lock_wait`
(``ACPCLI_LOCK_WAIT``, default 15 s). The buffer is bounded: past :data:`MAX_PENDING` updates
or :data:`MAX_PENDING_BYTES` of them the writer waits for the lock (the stream pauses; the
agent's output waits in its pipe) up to the same wait, and if the lock is still held the
buffered updates are given up and counted as not saved. Updates that could not be saved
because of a lock end the command with :class:`~acpcli.errors.DatabaseLocked` (exit 18),
naming the holder's pid where it can be found.

**A storage failure** (a full disk, a read-only home or file, an I/O error) goes on in
memory: on the first one :class:`SafeIndex` and its writer

* remember one line saying what could not be saved and where (:attr:`SafeIndex.failure`),
  and tell ``on_failure`` (the REPL shows it at once);
* move to an in-memory database holding a copy of the session rows, so the rest of the
  command (the REPL's ``/export``, titles, numbering) goes on working;
* count the updates that did not reach the disk (:attr:`SafeIndex.lost`);
* try the disk again every :data:`DISK_RETRY_SECONDS`; when it can be written again, what
  the memory holds (session rows, then each session's updates in order) is written back in
  one transaction, and the command goes on on the disk.

The command ends with :func:`verdict`: :class:`~acpcli.errors.StorageError` (exit 16) when
something was lost and nothing worse happened, else one warning line beside the other error.
A live-session host, whose index outlives many turns, asks :func:`unsaved_error` at the end
of each turn instead (after :meth:`SafeIndex.retry_disk`), and its client ends the turn with
that code and line; the host says it again to ``acpcli stop`` if memory still holds updates
then (:mod:`acpcli.host.server`).

What counts as a storage failure: any ``OSError`` and SQLite's "disk full", "read-only",
"unable to open" and I/O errors. A database that is not a database (corrupt) stays a
:class:`~acpcli.errors.ConfigError`, as before.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from acpcli.errors import AcpcliError, ConfigError, DatabaseLocked, SessionNotFound, StorageError
from acpcli.history.eventlog import EventWriter
from acpcli.history.index import Index, is_locked, lock_holder, lock_wait, migrate

log = logging.getLogger("acpcli.history.guarded")

_SQLITE_STORAGE_WORDS = ("full", "readonly", "read-only", "unable to open", "disk i/o", "disk", "permission")

#: The longest one write of a live command waits for another process's lock (milliseconds):
#: the turn's event loop is blocked meanwhile.
ATTEMPT_MS = 50
#: While locked, how often the kept writes are tried again.
RETRY_SECONDS = 0.25
#: In memory after a storage failure, how often the disk is tried again.
DISK_RETRY_SECONDS = 5.0
#: The bound of what a writer keeps while the database is locked: updates, and their bytes.
MAX_PENDING = 100_000
MAX_PENDING_BYTES = 64 << 20
_WAIT_SLICE = 0.25  # seconds of one blocking wait for the lock (signals are handled between)


def storage_reason(exc: BaseException) -> str | None:
    """Why ``exc`` (or what caused it) is a storage failure, in a few words; ``None`` if it
    is not one (a lock is not: see :func:`~acpcli.history.index.is_locked`)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError):
            return current.strerror or str(current)
        if isinstance(current, sqlite3.OperationalError) and not is_locked(current):
            text = str(current)
            if any(word in text.lower() for word in _SQLITE_STORAGE_WORDS):
                return text
        current = current.__cause__ or current.__context__
    return None


class SafeIndex(Index):
    """An index whose writes never raise for a storage failure or a lock (see the module
    docstring)."""

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
        self.recovered = False  # in memory once, then written back to the disk
        # While the database is locked: the index's own writes, kept in order, and when the
        # lock was first met (monotonic) and the kept writes are next tried.
        self._kept: deque[Callable[[], Any]] = deque()
        self._kept_sessions: set[str] = set()  # whose upsert is among them
        self.locked_since: float | None = None
        self._next_try = 0.0
        self._next_disk_try = 0.0
        self.lock_failure: str | None = None  # one line, when a lock cost updates
        self.lock_lost = 0  # of :attr:`lost`, those a lock cost
        self.damaged = False  # the failure was a damaged file (``acpcli doctor``), not the disk

    # -- opening --------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        try:
            conn = super()._open()
        except (ConfigError, OSError, sqlite3.Error) as exc:
            reason = storage_reason(exc)
            if reason is None or self._read_only:
                raise
            self._note_failure(reason)
            self.in_memory = True
            self._next_disk_try = time.monotonic() + DISK_RETRY_SECONDS
            return _memory_connection()
        if not self._read_only:
            conn.execute(f"PRAGMA busy_timeout = {ATTEMPT_MS}")  # a live command never waits long
        return conn

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
        if self.failure is None:
            from acpcli.history.damage import is_damage

            self.damaged = is_damage(exc)
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
        self._next_disk_try = time.monotonic() + DISK_RETRY_SECONDS
        # What a lock kept goes into memory too, in order (the writers' buffers follow).
        self.locked_since = None
        kept, self._kept = self._kept, deque()
        self._kept_sessions.clear()
        for operation in kept:
            self._guarded(operation)

    def retry_disk(self) -> None:
        """In memory after a storage failure: try the disk now, whatever the schedule (a
        live-session host at the end of each turn and when it is stopped)."""
        if self.in_memory:
            self._next_disk_try = 0.0
            self._try_disk()

    def _try_disk(self) -> None:
        """In memory after a storage failure: when due, open the disk again and write back
        what the memory holds (session rows, then every session's updates after those already
        on the disk, in order, in one transaction); on success go on on the disk."""
        if not self.in_memory or time.monotonic() < self._next_disk_try:
            return
        self._next_disk_try = time.monotonic() + DISK_RETRY_SECONDS
        memory = self._conn
        try:
            disk = Index._open(self)
        except (AcpcliError, OSError, sqlite3.Error) as exc:
            log.info("the disk still cannot be written: %s", exc)
            return
        try:
            disk.execute(f"PRAGMA busy_timeout = {ATTEMPT_MS}")
            copied = _write_back(memory, disk) if memory is not None else 0
        except (OSError, sqlite3.Error) as exc:
            log.info("writing back to the disk failed, staying in memory: %s", exc)
            disk.close()
            return
        if memory is not None:
            memory.close()
        self._conn = disk
        self.in_memory = False
        self.recovered = True
        # Counted as lost: what memory held (now copied) and what the writers buffered since
        # (it goes to the disk with their next flush).
        self.lost = max(0, self.lost - copied - sum(writer.pending for writer in list(self._writers)))
        log.warning("the disk can be written again: %d updates written back to %s", copied, self.path)

    # -- locks ----------------------------------------------------------------------------

    def _met_lock(self) -> None:
        now = time.monotonic()
        if self.locked_since is None:
            self.locked_since = now
            log.warning("%s is locked by another process: keeping this session's writes until it is free", self.path)
        self._next_try = now + RETRY_SECONDS

    @property
    def locked(self) -> bool:
        """Writes are being kept because of a lock (or kept writes wait for their turn)."""
        return self.locked_since is not None or bool(self._kept)

    def may_write(self) -> bool:
        """Not locked, or the next try is due; in memory, maybe the disk is back."""
        self._try_disk()
        return self.locked_since is None or time.monotonic() >= self._next_try

    def write_kept(self) -> bool:
        """Write the kept index writes, in order; ``True`` when none is left. Stops at a lock."""
        while self._kept:
            operation = self._kept[0]
            try:
                operation()
            except (OSError, sqlite3.Error) as exc:
                if is_locked(exc):
                    self._met_lock()
                    return False
                self.storage_failed(exc)  # they are written into memory there
                return not self._kept
            except Exception:  # a kept write is nobody's to raise to any more
                log.exception("a kept write of the index failed")
            self._kept.popleft()
        self._kept_sessions.clear()
        return True

    def catch_up(self) -> bool:
        """Try what is kept now (the index's writes, then the writers' buffers); ``True``
        when everything is on the disk (or in memory)."""
        if not self.may_write():
            return False
        if not self.write_kept():
            return False
        for writer in list(self._writers):
            writer.flush()
        self.wrote()
        return not self.locked

    def wrote(self) -> None:
        """A write went through: if nothing is kept any more, the lock is over."""
        if self.locked_since is not None and not self._kept and not any(w.pending for w in self._writers):
            log.warning("%s is free again: kept writes saved", self.path)
            self.locked_since = None

    def kept_session(self, session_id: str) -> bool:
        """The session's row is among the kept writes (not yet on the disk)."""
        return session_id in self._kept_sessions

    def wait_for_lock(self, seconds: float) -> bool:
        """Wait (blocking) up to ``seconds`` for the lock and write what is kept; ``True``
        when everything is written. Waits in slices of :data:`_WAIT_SLICE`, so that a signal
        (Ctrl-C) is handled between them."""
        conn = self._conn
        if conn is None or self.in_memory:
            return not self.locked
        deadline = time.monotonic() + seconds
        try:
            while True:
                left = deadline - time.monotonic()
                conn.execute(f"PRAGMA busy_timeout = {max(1, int(min(left, _WAIT_SLICE) * 1000))}")
                self._next_try = 0.0
                if self.catch_up():
                    return True
                if left <= 0:
                    return False
        finally:
            if self._conn is conn:
                conn.execute(f"PRAGMA busy_timeout = {ATTEMPT_MS}")

    def give_up_kept(self) -> None:
        """The lock outlasted the wait: count what is kept as lost, say so once."""
        pending = sum(writer.pending for writer in list(self._writers))
        if self.lock_failure is None:
            self.lock_failure = f"cannot save sessions to {self.path}: it is locked by {lock_holder(self.path)}"
            log.error("%s", self.lock_failure)
        self.lost += pending
        self.lock_lost += pending
        for writer in list(self._writers):
            if isinstance(writer, SafeWriter):
                writer.drop()
        if self._kept:
            log.error("%d writes of the index given up: the database stayed locked", len(self._kept))
        self._kept.clear()
        self._kept_sessions.clear()
        self.locked_since = None

    # -- writes ---------------------------------------------------------------------------

    def _guarded(self, operation: Callable[[], Any], session: str | None = None) -> Any:
        if (self._kept or self.locked_since is not None) and not (self.may_write() and self.write_kept()):
            self._keep(operation, session)  # after what is kept already, in order
            return None
        try:
            result = operation()
        except (OSError, sqlite3.Error) as exc:
            if is_locked(exc):
                self._met_lock()
                self._keep(operation, session)
                return None
            if self.in_memory:
                log.error("a write to the in-memory index failed: %s", exc)
                return None
            self.storage_failed(exc)
            return self._guarded(operation, session)
        if self.locked_since is not None:
            self.wrote()
        return result

    def _keep(self, operation: Callable[[], Any], session: str | None) -> None:
        self._kept.append(operation)
        if session is not None:
            self._kept_sessions.add(session)

    def upsert_session(self, rec: Any) -> None:
        self._guarded(partial(super().upsert_session, rec), rec.id)

    def insert_session(self, rec: Any) -> bool:
        recorded = self._guarded(partial(super().insert_session, rec), rec.id)
        return recorded is not False  # None: not even memory took it; do not try other ids

    def touch(self, session_id: str, when: float | None = None) -> None:
        self._guarded(partial(super().touch, session_id, when if when is not None else time.time()))

    # The other writing methods of Index are guarded alike, each by the kind its mark says
    # (:data:`~acpcli.history.index.WRITERS`): see :func:`_guard_every_writer` below.

    def _derived(self, operation: Callable[[], Any]) -> Any:
        """A write of derived data (search documents, made again from the event log by the
        next search): written on the disk, or not at all. While the index's own writes are
        kept for a lock, or go to memory, it is left out (``None``) and the session stays
        stale; otherwise it raises as :class:`Index` does, for its caller to leave it so."""
        if self.in_memory or self.locked:
            log.info("search documents not written (%s): the next search indexes them", "in memory" if self.in_memory else "locked")
            return None
        return operation()

    def ensure_fts(self) -> bool:
        return self._derived(super().ensure_fts) is True  # left out: no FTS5 index made now

    def writer(self, *, batch_size: int = 500, flush_interval: float = 0.1, clock: Any = None) -> SafeWriter:
        return SafeWriter(self, batch_size=batch_size, flush_interval=flush_interval, clock=clock or time.time)

    def _flush_writers(self) -> None:
        """Before a read: what is kept is tried once (without waiting for a lock)."""
        if self.locked:
            self.catch_up()
            return
        super()._flush_writers()

    def close(self) -> None:
        """Wait for a lock up to :func:`~acpcli.history.index.lock_wait` so that what is kept
        is written (else it is counted as lost), then close."""
        if self._conn is not None and not self._read_only:
            if self.in_memory:
                self._next_disk_try = 0.0  # one last try of the disk
                self._try_disk()
            if (self.locked or any(w.pending for w in self._writers)) and not self.wait_for_lock(lock_wait()):
                self.give_up_kept()
        super().close()


class SafeWriter(EventWriter):
    """An event writer whose appends and flushes never raise: a lock keeps the buffer (see
    the module docstring); a storage failure goes to its :class:`SafeIndex`, which fails over
    to memory, and the batch is then written there."""

    _index: SafeIndex

    def __init__(self, index: SafeIndex, **kwargs: Any) -> None:
        super().__init__(index, **kwargs)
        self._bytes = 0  # of the payloads pending

    def append(self, session_id: str, kind: str, payload: str) -> int:
        index = self._index
        counted = index.in_memory
        self._bytes += len(payload)
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
        if self._pending >= MAX_PENDING or self._bytes >= MAX_PENDING_BYTES:
            self._over_the_bound()
        return seq

    def _over_the_bound(self) -> None:
        """The buffer a lock made reached its bound: wait for the lock (the stream pauses),
        up to the lock wait; still locked, give the buffer up (counted as not saved)."""
        index = self._index
        if not index.locked:
            return
        log.warning("%d updates kept while %s is locked: waiting for the lock", self._pending, index.path)
        if not index.wait_for_lock(lock_wait()):
            index.give_up_kept()

    def _start(self, session_id: str) -> int:
        try:
            return super()._start(session_id)
        except SessionNotFound:
            if not self._index.kept_session(session_id):
                raise
        # The session's row waits for a lock: its updates are numbered from the start (a
        # flush renumbers them past whatever another process stored meanwhile).
        self._next_seq[session_id] = 1
        self._stored[session_id] = 0
        return 1

    def flush(self) -> None:
        index = self._index
        if not self._pages:
            return
        if index.locked and not (index.may_write() and index.write_kept()):
            return  # kept: tried again later, in order after the index's own writes
        try:
            super().flush()
        except Exception as exc:  # noqa: BLE001 - storing must never stop the turn
            if is_locked(exc):
                index._met_lock()
                return
            self._index.storage_failed(exc)
            self._retry()
            return
        self._bytes = 0
        if index.locked_since is not None:
            index.wrote()

    def flush_if_due(self) -> bool:
        index = self._index
        if index.locked:
            if index.may_write():
                index.catch_up()
            return True
        if index.in_memory:
            index.may_write()  # the disk is tried again when due
        return super().flush_if_due()

    def close(self) -> None:
        """Flush and stop accepting appends; a lock is waited for first (up to the lock
        wait), so that what it kept is written rather than dropped."""
        index = self._index
        if not self._closed and self._pages and index.locked and not index.wait_for_lock(lock_wait()):
            index.give_up_kept()
        super().close()

    def drop(self) -> None:
        """Give up what is buffered (a lock outlasted every wait)."""
        self._pages = {}
        self._pending = 0
        self._bytes = 0

    def _retry(self) -> None:
        """Write the buffer again (now into memory); drop it if even that fails."""
        try:
            EventWriter.flush(self)
        except Exception as exc:  # noqa: BLE001 - see above
            log.error("dropping %d buffered updates: %s", self.pending, exc)
            self.drop()
        self._bytes = 0


_append = EventWriter.append


def _guard_every_writer() -> None:
    """Give :class:`SafeIndex` a guarded form of every writing method of :class:`Index`
    (:data:`~acpcli.history.index.WRITERS`) that it does not define itself: the index's own
    records through :meth:`SafeIndex._guarded`, derived data through
    :meth:`SafeIndex._derived`. A method marked in :class:`Index` is guarded by that alone."""
    from acpcli.history.index import RECORD, WRITERS

    for name, kind in WRITERS.items():
        if name in vars(SafeIndex):
            continue  # its own form (the session it writes, a time fixed now...)
        guard = SafeIndex._guarded if kind == RECORD else SafeIndex._derived

        def guarded(self: SafeIndex, *args: Any, _name: str = name, _guard: Any = guard, **kwargs: Any) -> Any:
            return _guard(self, partial(getattr(super(SafeIndex, self), _name), *args, **kwargs))

        guarded.__name__ = guarded.__qualname__ = name
        guarded.__doc__ = getattr(Index, name).__doc__
        setattr(SafeIndex, name, guarded)


_guard_every_writer()


def _write_back(memory: sqlite3.Connection, disk: sqlite3.Connection) -> int:
    """Copy what ``memory`` holds into ``disk`` in one transaction: every session row (an
    existing one updated), then each session's updates after those the disk holds, in order.
    Return how many updates were copied."""
    from acpcli.history import eventlog
    from acpcli.history.transactions import write_transaction

    columns = [row[1] for row in memory.execute("PRAGMA table_info(sessions)")]
    names = ", ".join(columns)
    marks = ", ".join("?" * len(columns))
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in ("id", "created_at"))
    copied = 0
    with write_transaction(disk):
        for row in memory.execute(f"SELECT {names} FROM sessions"):
            disk.execute(f"INSERT INTO sessions ({names}) VALUES ({marks}) ON CONFLICT (id) DO UPDATE SET {updates}", row)
        sessions = [r[0] for r in memory.execute("SELECT DISTINCT session_id FROM event_pages ORDER BY session_id")]
        for session_id in sessions:
            start = eventlog._last_seq(disk, session_id)
            events = zip(eventlog.events_raw(memory, session_id), eventlog.event_times(memory, session_id), strict=False)
            rows = [(session_id, start + i, at, kind, payload) for i, ((_seq, kind, payload), at) in enumerate(events, 1)]
            eventlog.write_pages(disk, rows, per_page=500)
            copied += len(rows)
    return copied


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


def unsaved_error(index: SafeIndex) -> AcpcliError | None:
    """What :func:`verdict` raises for ``index``, or None when everything reached the disk:
    :class:`DatabaseLocked` (exit 18) if a lock cost updates, else :class:`StorageError`
    (exit 16) if a storage failure did (or the disk never came back), or
    :class:`~acpcli.errors.DamagedState` (exit 19) when the file is damaged rather than full.
    The live-session host asks this at the end of each turn and when it is stopped."""
    error: StorageError
    if index.lock_failure is not None:
        message = index.lock_failure
        if index.lost:
            message += f" ({index.lost} session update{'s' if index.lost != 1 else ''} not saved)"
        error = DatabaseLocked(message, hint="run it again when the other process is done, or wait longer: ACPCLI_LOCK_WAIT=SECONDS")
    elif index.failure is not None and not (index.recovered and not index.in_memory and index.lost == 0):
        message = index.failure
        if index.lost:
            message += f" ({index.lost} session update{'s' if index.lost != 1 else ''} not saved)"
        error = StorageError(message)
    else:
        return None
    if index.damaged and not isinstance(error, DatabaseLocked):
        from acpcli.errors import DamagedState
        from acpcli.history.damage import DOCTOR_HINT

        return DamagedState(error.message, hint=DOCTOR_HINT)  # exit 19: the file is damaged, not full
    return error


def verdict(index: SafeIndex) -> None:
    """At the end of a command: :func:`unsaved_error` raised when the command is otherwise
    ending well; a warning line if another error is on its way out."""
    error = unsaved_error(index)
    if error is None:
        return
    if sys.exc_info()[1] is not None:
        try:
            sys.stderr.write(f"acpcli: warning: {error.message}\n")
        except (OSError, ValueError):  # stderr on the same full disk: the error on its way out stays
            pass
        return
    raise error
