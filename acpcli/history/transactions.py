"""Write transactions on an index connection.

:func:`write_transaction`: ``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error; inside
a transaction the caller already holds, part of the caller's.

:func:`in_batches`: long work (the search catch-up, ``sessions prune``) in short transactions
with a pause between them, so that another acpcli's writes (a turn being recorded) never wait
for it more than a moment: a waiting writer polls the lock at least every 100 ms and gets in
during the pause.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import sqlite3

T = TypeVar("T")

#: The longest :func:`in_batches` holds the write lock at a time (seconds).
BATCH_SECONDS = 0.25
#: The pause between two batches, long enough for a writer polling the lock to take it.
YIELD_SECONDS = 0.15


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


def in_batches(
    conn: sqlite3.Connection,
    items: Sequence[T],
    each: Callable[[T], None],
    *,
    seconds: float = BATCH_SECONDS,
    pause: float = YIELD_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Call ``each(item)`` for every item, in order, in write transactions of about
    ``seconds`` at most (at least one item each), sleeping ``pause`` between them with the
    lock released. Each transaction is all or nothing; an error rolls back the one it
    happened in (the earlier ones stay committed) and is raised."""
    done = 0
    while done < len(items):
        if done:
            sleep(pause)  # the lock is free: another process's waiting writer takes it now
        started = time.monotonic()
        with write_transaction(conn):
            while done < len(items):
                each(items[done])
                done += 1
                if time.monotonic() - started >= seconds:
                    break
