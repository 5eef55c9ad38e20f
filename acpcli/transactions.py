"""A write transaction on an index connection: ``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back
on any error; inside a transaction the caller already holds, part of the caller's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """Hold the write lock for the block (connections opened with ``isolation_level=None``)."""
    if conn.in_transaction:  # the caller's: it commits or rolls back
        yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
