"""Deleting sessions' local records: what ``sessions rm`` and ``sessions prune`` do.

Only what acpcli keeps is deleted: index rows, stored events and search documents (with their
session), and the demo agent's own state of demo sessions. Nothing is ever sent to an agent.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

    from acpcli.history.index import Index, SessionRecord


def delete_local(index: Index, records: Sequence[SessionRecord], *, skip_busy: bool = False) -> list[SessionRecord]:
    """Delete ``records``, then their demo-agent state, then give the disk back when much of
    the file is free; returns what was deleted.

    One writer per session: a session another acpcli is running a turn on (its writer lock is
    held, :mod:`acpcli.history.lock`) is not deleted under it. Then nothing is deleted and
    :class:`~acpcli.errors.SessionBusy` says which (``sessions rm``), or with ``skip_busy`` the
    busy ones are left out (``sessions prune``). The locks of the others are held through the
    delete, so no turn starts on them meanwhile.

    The deletions run in short transactions with pauses between them
    (:func:`~acpcli.history.transactions.in_batches`), so a turn another acpcli is recording meanwhile
    never waits long; a few sessions (``sessions rm``) go in one transaction, all or none. A
    write lock another process holds past :func:`~acpcli.history.index.lock_wait` is
    :class:`~acpcli.errors.DatabaseLocked` (what was deleted before stays deleted).
    """
    from acpcli.errors import SessionBusy
    from acpcli.history.index import locks_reported
    from acpcli.history.lock import SessionLock, holder_text
    from acpcli.history.transactions import in_batches

    held: list[SessionLock] = []
    try:
        free = []
        for rec in records:
            lock = SessionLock(rec.id)
            if not lock.try_acquire():
                if skip_busy:
                    continue
                raise SessionBusy(
                    f"session {rec.id} was not deleted: {holder_text(lock.holder())} is running a turn on it"
                    + (" (nothing was deleted)" if len(records) > 1 else "")
                )
            held.append(lock)
            free.append(rec)
        conn = index.conn
        with locks_reported(index.path):
            in_batches(conn, free, lambda rec: index.delete(rec.id))  # its events and search documents go with it
        for lock in held:
            lock.discard()
    finally:
        for lock in held:
            lock.release()
    for rec in free:
        _forget_demo_state(rec.wire_id, rec.agent_info)
    _reclaim_space(conn)
    return free


def _forget_demo_state(wire_id: str, agent_info: dict[str, object] | None) -> None:
    """The demo agent keeps its own state of a session under acpcli's home: delete it too."""
    from acpcli.paths import home_dir

    if (agent_info or {}).get("name") != "acpcli-demo-agent" or os.sep in wire_id or wire_id.startswith("."):
        return
    try:
        (home_dir() / "demo-agent" / "sessions" / f"{wire_id}.json").unlink(missing_ok=True)
    except OSError:
        pass  # the index rows are gone: a stale state file only matters to the demo agent


def _reclaim_space(conn: sqlite3.Connection) -> None:
    """VACUUM when a quarter or more of the file is free pages (deleting a few small sessions
    does not rewrite a large index; deleting most of it gives the disk back). Skipped, not
    waited for, when another process is using the database: the free pages are reused anyway."""
    import sqlite3

    from acpcli.history.index import is_locked, lock_wait_ms

    (free,) = conn.execute("PRAGMA freelist_count").fetchone()
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    if not pages or free * 4 < pages:
        return
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        conn.execute("VACUUM")
    except sqlite3.OperationalError as exc:
        if not is_locked(exc):
            raise
    finally:
        conn.execute(f"PRAGMA busy_timeout = {lock_wait_ms()}")
