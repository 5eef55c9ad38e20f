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

    from acpcli.persistence import Index, SessionRecord


def delete_local(index: Index, records: Sequence[SessionRecord]) -> None:
    """Delete ``records`` in one transaction (all or none), then their demo-agent state, then
    give the disk back when much of the file is free."""
    from acpcli.transactions import write_transaction

    conn = index.conn
    with write_transaction(conn):
        for rec in records:
            index.delete(rec.id)  # its event pages and search documents go with it
    for rec in records:
        _forget_demo_state(rec.wire_id, rec.agent_info)
    _reclaim_space(conn)


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
    does not rewrite a large index; deleting most of it gives the disk back)."""
    (free,) = conn.execute("PRAGMA freelist_count").fetchone()
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    if pages and free * 4 >= pages:
        conn.execute("VACUUM")
