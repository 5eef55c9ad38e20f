"""acpcli's own long writes (the search catch-up, ``sessions prune``) let another writer in
between their batches, so a turn being recorded by another acpcli never waits for them more
than a moment; and the pieces of lock handling that need no subprocess."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from acpcli.errors import ConfigError
from acpcli.history import housekeeping, indexing
from acpcli.history.index import Index, is_locked, lock_wait
from acpcli.history.transactions import in_batches
from tests.helpers.records import rec

SLOW_STEP = 0.05  # each session's work, made slow: 40 sessions hold the catch-up for 2 s
SESSIONS = 40
#: How long the other writer waits for the lock, as a turn's writes may: shorter than the
#: whole job, longer than a batch.
WAITER_MS = 600


def _history(index: Index) -> None:
    for i in range(SESSIONS):
        sid = f"s{i:02}"
        index.upsert_session(rec(sid))
        with index.writer() as writer:
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"answer {i}"}}
            writer.append(sid, "agent_message_chunk", json.dumps(update))


def _other_writer_gets_in(path: Path, job: Callable[[], None], started: threading.Event) -> list[str]:
    """Run ``job`` here; meanwhile another connection (as another process would) tries one
    write, waiting up to WAITER_MS for the lock. What that writer met: ["ok"] or the error."""
    met: list[str] = []

    def other() -> None:
        started.wait(10)
        conn = sqlite3.connect(path, timeout=WAITER_MS / 1000, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE sessions SET title = 'from the other writer' WHERE id = 's00'")
            conn.execute("COMMIT")
            met.append("ok")
        except sqlite3.OperationalError as exc:
            met.append(str(exc))
        finally:
            conn.close()

    thread = threading.Thread(target=other)
    thread.start()
    try:
        job()
    finally:
        started.set()
        thread.join(10)
    return met


def test_the_search_catch_up_lets_another_writer_in(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    _history(index)
    started = threading.Event()
    real = indexing.reindex

    def slow(index: Index, session_id: str) -> None:
        started.set()
        time.sleep(SLOW_STEP)
        real(index, session_id)

    monkeypatch.setattr(indexing, "reindex", slow)
    met = _other_writer_gets_in(index.path, lambda: indexing.catch_up(index), started)
    assert met == ["ok"]
    assert index.get("s00").title == "from the other writer"


def test_prune_lets_another_writer_in(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    _history(index)
    started = threading.Event()
    real = index.delete

    def slow(session_id: str) -> None:
        started.set()
        time.sleep(SLOW_STEP)
        real(session_id)

    monkeypatch.setattr(index, "delete", slow)
    # s00 deleted last: the other writer's row is still there when it gets in
    records = [r for r in index.list_sessions() if r.id != "s00"] + [index.get("s00")]
    met = _other_writer_gets_in(index.path, lambda: housekeeping.delete_local(index, records), started)
    assert met == ["ok"]
    assert index.list_sessions() == []


def test_in_batches_commits_each_batch_and_pauses_between(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    conn.execute("CREATE TABLE t (n INTEGER)")
    pauses: list[float] = []
    seen_in_transaction: list[bool] = []

    def pause(seconds: float) -> None:
        seen_in_transaction.append(conn.in_transaction)
        pauses.append(seconds)

    def each(n: int) -> None:
        conn.execute("INSERT INTO t VALUES (?)", (n,))

    in_batches(conn, list(range(5)), each, seconds=0.0, pause=0.125, sleep=pause)
    assert conn.execute("SELECT n FROM t ORDER BY n").fetchall() == [(n,) for n in range(5)]
    assert pauses == [0.125] * 4 and seen_in_transaction == [False] * 4  # one item a batch, lock released

    def failing(n: int) -> None:
        each(10 + n)
        if n == 3:
            raise ValueError("boom")

    with pytest.raises(ValueError):
        in_batches(conn, list(range(5)), failing, seconds=0.0, sleep=lambda _s: None)
    assert [n for (n,) in conn.execute("SELECT n FROM t WHERE n >= 10 ORDER BY n")] == [10, 11, 12]
    assert not conn.in_transaction


def test_the_lock_wait_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACPCLI_LOCK_WAIT", raising=False)
    assert lock_wait() == 15.0
    monkeypatch.setenv("ACPCLI_LOCK_WAIT", "2.5")
    assert lock_wait() == 2.5
    for bad in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv("ACPCLI_LOCK_WAIT", bad)
        with pytest.raises(ConfigError, match="ACPCLI_LOCK_WAIT must be a number of seconds"):
            lock_wait()


def test_a_lock_is_told_from_a_storage_failure(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (n INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError) as caught:
        other.execute("INSERT INTO t VALUES (1)")
    assert is_locked(caught.value)
    assert not is_locked(sqlite3.OperationalError("database or disk is full"))
    holder.execute("ROLLBACK")
    holder.close()
    other.close()
