"""Session records for index and event-log tests."""

from __future__ import annotations

from acpcli.history.index import SessionRecord


def rec(sid: str, **kw: object) -> SessionRecord:
    """A session record with test defaults (agent ``demo``, cwd ``/work``)."""
    fields: dict[str, object] = {"agent": "demo", "cwd": "/work"}
    fields.update(kw)
    return SessionRecord(id=sid, **fields)  # type: ignore[arg-type]
