"""SafeIndex / SafeWriter (acpcli.history.guarded) and the Supervisor's clock (acpcli.processes.supervisor),
in process. The end-to-end cases (a real full disk, read-only mounts) are in
tests/cli/test_storage.py; these pin the mechanisms: failing over to memory, counting what
was lost, saying it once, and flushing by time."""

from __future__ import annotations

import ast
import inspect
import re
import sqlite3
import time
from pathlib import Path

import anyio
import pytest

from acpcli.errors import StorageError
from acpcli.history import eventlog
from acpcli.history.guarded import SafeIndex, storage_reason, verdict
from acpcli.history.index import Index
from acpcli.model import Store
from acpcli.processes.supervisor import Supervisor
from acpcli.session.feed import SessionFeed
from tests.helpers.records import rec


def _make_read_only(index: SafeIndex) -> None:
    """From now on every write to the open database fails as on a read-only file."""
    index.conn.execute("PRAGMA query_only = ON")


def test_a_database_that_cannot_be_created_falls_back_to_memory(tmp_path: Path) -> None:
    said: list[str] = []
    # /proc takes no new files, whoever we are (root ignores modes, not this).
    index = SafeIndex(Path("/proc/acpcli-test.db"), on_failure=said.append)
    index.upsert_session(rec("s1"))
    writer = index.writer()
    writer.append("s1", "agent_message_chunk", '{"a": 1}')
    writer.close()
    assert index.in_memory
    assert [kind for kind, _ in index.events("s1")] == ["agent_message_chunk"]  # kept in memory
    assert index.lost == 1
    assert len(said) == 1 and said[0].startswith("cannot save sessions to /proc/acpcli-test.db: ")
    index.close()


def test_writes_that_start_failing_move_to_memory_and_count_the_loss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said: list[str] = []
    path = tmp_path / "acpcli.db"
    # The read-only state below is the connection's own: a new one could write, so the disk
    # must stay broken for the retries too (see the write-back test for when it comes back).
    monkeypatch.setattr(SafeIndex, "_try_disk", lambda self: None)
    index = SafeIndex(path, on_failure=said.append)
    index.upsert_session(rec("s1"))
    writer = index.writer(batch_size=2)
    for n in range(2):  # one full batch reaches the disk
        writer.append("s1", "agent_message_chunk", f'{{"n": {n}}}')
    _make_read_only(index)
    for n in range(2, 7):
        writer.append("s1", "agent_message_chunk", f'{{"n": {n}}}')  # never raises
    index.set_title("s1", "still works")  # nor do the index's own writes
    writer.close()
    assert index.in_memory
    assert index.lost == 5
    assert said == [f"cannot save sessions to {path}: attempt to write a readonly database"]
    assert index.get("s1").title == "still works"
    with pytest.raises(StorageError, match=r"\(5 session updates not saved\)"):
        verdict(index)
    index.close()
    # The disk holds what was written before the failure, intact.
    with Index.open(path, read_only=True) as disk:
        assert [payload for _kind, payload in disk.events("s1")] == [{"n": 0}, {"n": 1}]


def test_a_disk_that_can_be_written_again_gets_what_memory_held_in_order(tmp_path: Path) -> None:
    """A storage failure is not for the rest of the run: the disk is tried again, and what
    went to memory meanwhile (session rows, updates) is written back after what the disk had."""
    path = tmp_path / "acpcli.db"
    index = SafeIndex(path)
    index.upsert_session(rec("s1"))
    writer = index.writer(batch_size=2)
    for n in range(2):
        writer.append("s1", "agent_message_chunk", f'{{"n": {n}}}')
    _make_read_only(index)  # this connection only: a new one can write again
    for n in range(2, 5):
        writer.append("s1", "agent_message_chunk", f'{{"n": {n}}}')
    index.set_title("s1", "titled in memory")
    assert index.in_memory and index.lost == 3
    index._next_disk_try = 0.0  # due now (DISK_RETRY_SECONDS in a real run)
    writer.flush_if_due()
    assert not index.in_memory and index.lost == 0
    for n in range(5, 7):  # and on the disk again from here on, numbered after the rest
        writer.append("s1", "agent_message_chunk", f'{{"n": {n}}}')
    writer.close()
    index.close()
    verdict(index)  # nothing lost: no error
    with Index.open(path, read_only=True) as disk:
        assert [payload for _kind, payload in disk.events("s1")] == [{"n": n} for n in range(7)]
        assert disk.get("s1").title == "titled in memory"


def test_verdict_only_warns_beside_another_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = SafeIndex(Path("/proc/acpcli-test.db"))
    index.upsert_session(rec("s1"))
    try:
        raise ValueError("the command's own failure")
    except ValueError:
        verdict(index)  # must not replace the error on its way out
    assert capsys.readouterr().err.startswith("acpcli: warning: cannot save sessions to /proc/acpcli-test.db")
    index.close()


def test_a_healthy_index_has_no_verdict(tmp_path: Path) -> None:
    index = SafeIndex(tmp_path / "acpcli.db")
    index.upsert_session(rec("s1"))
    index.writer().append("s1", "x", "{}")
    index.close()
    verdict(index)
    assert index.failure is None and index.lost == 0


def test_storage_reason_tells_storage_from_corruption() -> None:
    assert storage_reason(OSError(28, "No space left on device")) == "No space left on device"
    assert storage_reason(sqlite3.OperationalError("database or disk is full")) == "database or disk is full"
    assert storage_reason(sqlite3.DatabaseError("file is not a database")) is None


def test_a_failing_recorder_never_loses_the_turn_end() -> None:
    """The v2 hang on a full disk: the final ``idle`` update was dropped together with its
    failed store write, so the turn waited forever."""

    class Broken:
        def append(self, session_id: str, kind: str, payload_json: str) -> None:
            raise sqlite3.OperationalError("database or disk is full")

    live = SessionFeed(session_id="s1", store=Store(), recorder=Broken())
    live.turn_idle = anyio.Event()
    live.feed({"sessionUpdate": "state_update", "state": "running"})
    live.feed({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
    assert live.turn_idle.is_set()


def test_the_supervisor_flushes_a_paused_stream_within_100_ms(tmp_path: Path) -> None:
    path = tmp_path / "acpcli.db"
    index = SafeIndex(path)
    index.upsert_session(rec("s1"))
    writer = index.writer()
    supervisor = Supervisor()
    supervisor.writer = writer
    seen_after: list[float] = []

    async def body() -> None:
        writer.append("s1", "agent_message_chunk", "{}")
        start = time.monotonic()
        reader = sqlite3.connect(path)
        try:
            while time.monotonic() - start < 2:  # the stream pauses: no more appends
                if eventlog.event_count(reader, "s1"):
                    seen_after.append(time.monotonic() - start)
                    return
                await anyio.sleep(0.01)
        finally:
            reader.close()

    anyio.run(supervisor.run, body)
    index.close()
    assert seen_after, "the paused batch never reached the disk"
    assert seen_after[0] < 0.3, seen_after  # 0.1 s bound + the ticker + a loaded machine


# -- locks ------------------------------------------------------------------------------------


def _hold_lock(path: Path) -> sqlite3.Connection:
    """Another connection (as another process) holding the write lock of ``path``."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    return holder


def test_a_lock_keeps_writes_in_order_and_writes_them_when_free(tmp_path: Path) -> None:
    path = tmp_path / "acpcli.db"
    Index.open(path).close()
    index = SafeIndex(path)
    index.conn  # noqa: B018 - opened before the lock, as a live command is
    holder = _hold_lock(path)
    index.upsert_session(rec("s1"))  # kept: the row is not on the disk yet
    writer = index.writer(batch_size=1)
    for n in range(3):
        writer.append("s1", "agent_message_chunk", f'{{"n": {n}}}')  # numbered, kept, never raises
    index.set_title("s1", "kept too")
    assert index.locked and not index.in_memory and writer.pending == 3
    holder.execute("ROLLBACK")
    holder.close()
    index._next_try = 0.0  # due now (RETRY_SECONDS in a real run)
    writer.flush_if_due()
    assert not index.locked and writer.pending == 0
    writer.close()
    index.close()
    verdict(index)  # nothing lost
    with Index.open(path, read_only=True) as disk:
        assert [payload for _kind, payload in disk.events("s1")] == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert disk.get("s1").title == "kept too"


def test_past_the_bound_a_lock_is_waited_for_then_what_it_kept_is_counted_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acpcli.errors import DatabaseLocked
    from acpcli.history import guarded

    monkeypatch.setattr(guarded, "MAX_PENDING", 5)
    monkeypatch.setenv("ACPCLI_LOCK_WAIT", "0.2")
    path = tmp_path / "acpcli.db"
    index = SafeIndex(path)
    index.upsert_session(rec("s1"))
    writer = index.writer(batch_size=1)
    holder = _hold_lock(path)
    for n in range(5):
        writer.append("s1", "agent_message_chunk", f'{{"n": {n}}}')
    assert writer.pending == 0 and index.lost == 5  # waited 0.2 s at the bound, then gave them up
    writer.append("s1", "agent_message_chunk", '{"n": 5}')  # kept again, from here on
    holder.execute("ROLLBACK")
    holder.close()
    writer.close()
    index.close()
    with pytest.raises(DatabaseLocked, match=r"locked by another process.*\(5 session updates not saved\)"):
        verdict(index)
    with Index.open(path, read_only=True) as disk:
        assert [payload for _kind, payload in disk.events("s1")] == [{"n": 5}]


# -- every writer of the index is guarded --------------------------------------------------------

#: SQL that changes the database (uppercase, as this project writes its SQL).
_SQL_WRITE = re.compile(r"\b(INSERT|UPDATE|DELETE|REPLACE|DROP|CREATE|ALTER)\b")
#: Functions of acpcli.history.search that run write statements but change nothing: FTS5's
#: integrity check, rolled back.
_CHANGES_NOTHING = {"broken"}


def _writing(functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef], outside: dict[str, set[str]]) -> set[str]:
    """The names of ``functions`` that run SQL that writes: a write statement in their code
    (not their docstring), a write transaction, a writing function of another module
    (``outside``: module name -> its writing functions), or one of ``functions`` that writes
    (called by name, or as ``self.NAME(...)``)."""
    direct: set[str] = set()
    calls: dict[str, set[str]] = {}
    for name, node in functions.items():
        body = node.body[1:] if ast.get_docstring(node) is not None else node.body
        calls[name] = set()
        for sub in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and _SQL_WRITE.search(sub.value):
                direct.add(name)
            if not isinstance(sub, ast.Call):
                continue
            func = sub.func
            if isinstance(func, ast.Name):
                if func.id == "write_transaction":
                    direct.add(name)
                calls[name].add(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                if func.attr in outside.get(func.value.id, set()):
                    direct.add(name)
                if func.value.id == "self":
                    calls[name].add(func.attr)
    writers = set(direct)
    while True:
        more = {name for name, called in calls.items() if name not in writers and called & writers}
        if not more:
            return writers
        writers |= more


def _module_functions(module: object) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _index_writers() -> set[str]:
    """The public methods of Index that write, read off their code."""
    from acpcli.history import search

    outside = {
        "search": _writing(_module_functions(search), {}) - _CHANGES_NOTHING,
        "eventlog": _writing(_module_functions(eventlog), {}),
    }
    (cls,) = [n for n in ast.parse(inspect.getsource(Index)).body if isinstance(n, ast.ClassDef)]
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    return {name for name in _writing(methods, outside) if not name.startswith("_")}


def test_the_scan_finds_what_writes_and_only_that() -> None:
    """The scan below is worth trusting: it finds the writers known to write (through a
    private helper, a transaction, or another module) and none of the readers."""
    found = _index_writers()
    assert {"upsert_session", "set_title", "touch", "delete", "replace_documents", "discard_search_index"} <= found
    assert not found & {"get", "list_sessions", "count_sessions", "events", "last_seq", "search", "search_damage", "stale_sessions", "close"}


def test_every_method_of_the_index_that_writes_is_marked_so_the_guard_covers_it() -> None:
    from acpcli.history.index import WRITERS

    unmarked = _index_writers() - set(WRITERS)
    assert not unmarked, f"mark these writing methods of Index with @writes or @writes_derived: {sorted(unmarked)}"
    assert set(WRITERS) <= _index_writers()  # a mark on a method that writes nothing misleads


def test_safe_index_guards_every_marked_writer() -> None:
    from acpcli.history.index import WRITERS

    assert WRITERS, "no writing method found: the marks are gone"
    for name in WRITERS:
        assert name in vars(SafeIndex), f"SafeIndex does not guard Index.{name}"
        assert getattr(SafeIndex, name) is not getattr(Index, name)


def _arguments(name: str) -> list[object]:
    """Positional arguments good enough for a writer whose work is replaced (the session's
    record, its id, else None)."""
    params = list(inspect.signature(getattr(Index, name)).parameters.values())[1:]
    required = [p for p in params if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    return [rec("s1") if p.name == "rec" else "s1" if p.name == "session_id" else None for p in required]


def test_a_lock_keeps_every_record_writer_and_derived_writers_wait_for_the_next_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acpcli.history.index import DERIVED, RECORD, WRITERS

    index = SafeIndex(tmp_path / "acpcli.db")
    index.conn  # noqa: B018
    arguments = {name: _arguments(name) for name in WRITERS}
    ran: list[str] = []
    for name in WRITERS:

        def locked(self: Index, *args: object, _name: str = name, **kwargs: object) -> None:
            ran.append(_name)
            raise sqlite3.OperationalError("database is locked")

        monkeypatch.setattr(Index, name, locked)
    records = [name for name, kind in WRITERS.items() if kind == RECORD]
    derived = [name for name, kind in WRITERS.items() if kind == DERIVED]
    assert records and derived
    for name in records:
        getattr(index, name)(*arguments[name])  # never raises: kept
    assert index.locked and len(index._kept) == len(records)
    assert ran == records[:1]  # the first met the lock; the others queued behind it, in order
    for name in derived:
        getattr(index, name)(*arguments[name])  # left to the next search while writes are kept
    assert ran == records[:1] and len(index._kept) == len(records)
    index.give_up_kept()  # (closing would wait for the lock)
    index.close()


def test_derived_writes_are_not_kept_in_memory(tmp_path: Path) -> None:
    """After a storage failure the search documents are not written into memory (they would
    not be written back): the session stays stale, and the next search indexes it."""
    index = SafeIndex(tmp_path / "acpcli.db")
    index.upsert_session(rec("s1"))
    with index.writer() as writer:
        writer.append("s1", "agent_message_chunk", '{"sessionUpdate": "agent_message_chunk"}')
    _make_read_only(index)
    index.set_title("s1", "in memory")  # fails over
    assert index.in_memory
    index.add_documents("s1", [("agent", "lost otherwise")], 1)
    assert index.indexed_seq("s1") == 0 and index.ensure_fts() is False
    assert index.conn.execute("SELECT count(*) FROM search_docs").fetchone() == (0,)
    index.close()
