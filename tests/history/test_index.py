"""The state paths (acpcli.paths), the SQLite session index and its migrations
(acpcli.history.index). The event log's own tests are in test_eventlog.py."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from acpcli.errors import ConfigError, DamagedState, ExitCode, SessionNotFound, UsageError
from acpcli.history import index as index_db
from acpcli.history.index import MIGRATIONS, Index, SessionRecord, migrate
from acpcli.paths import config_path, db_path, ensure_dir, history_dir, home_dir, log_dir
from tests.helpers.records import rec

HELPER = Path(__file__).resolve().parents[1] / "helpers" / "index_writer.py"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- paths ---------------------------------------------------------------------------------


def test_acpcli_home_overrides_everything(acpcli_home: Path) -> None:
    assert home_dir() == acpcli_home
    assert db_path() == acpcli_home / "acpcli.db"
    assert config_path() == acpcli_home / "config.toml"
    assert log_dir() == acpcli_home / "logs"
    assert history_dir().parent == acpcli_home


def test_linux_default_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ACPCLI_HOME")
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert home_dir() == tmp_path / "xdg" / "acpcli"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/is/ignored")
    assert home_dir() == tmp_path / ".config" / "acpcli"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert home_dir() == tmp_path / ".config" / "acpcli"


def test_macos_and_windows_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ACPCLI_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(sys, "platform", "darwin")
    assert home_dir() == tmp_path / "Library" / "Application Support" / "acpcli"
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    assert home_dir() == tmp_path / "Roaming" / "acpcli"


def test_nothing_is_created_until_first_write(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "not-yet"
    monkeypatch.setenv("ACPCLI_HOME", str(home))
    idx = Index()
    for p in (home_dir(), db_path(), config_path(), log_dir(), history_dir(), idx.path):
        assert p.is_relative_to(home)
    assert not home.exists()
    idx.list_sessions()
    assert db_path().is_file()
    idx.close()


def test_open_is_eager_and_read_only_creates_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "ro-home"
    monkeypatch.setenv("ACPCLI_HOME", str(home))
    with pytest.raises(ConfigError, match="no session index"):
        Index.open(read_only=True)
    assert not home.exists()
    with Index.open() as idx:  # opened (and created) at once, not on first query
        assert db_path().is_file()
        idx.upsert_session(rec("s1"))
        with Index.open(read_only=True) as ro:  # readable while a writer has it open
            assert [r.id for r in ro.list_sessions()] == ["s1"]
            assert ro.get("s").id == "s1"
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                ro.touch("s1")


def test_existing_is_none_without_a_database_and_creates_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "no-home"
    monkeypatch.setenv("ACPCLI_HOME", str(home))
    for read_only in (True, False):
        with Index.existing(read_only=read_only) as none:
            assert none is None
    assert not home.exists()  # not the directory, not the database
    with Index.open() as writer:
        writer.upsert_session(rec("s1"))
    with Index.existing() as ro:  # read-only by default: it cannot write
        assert ro is not None and [r.id for r in ro.list_sessions()] == ["s1"]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            ro.touch("s1")
    assert ro._conn is None  # closed after the block
    with Index.existing(read_only=False) as rw:
        assert rw is not None
        rw.mark_closed("s1")
    with Index.existing(tmp_path / "elsewhere.db") as other:  # a path of its own
        assert other is None
    with pytest.raises(RuntimeError), Index.existing() as closing:
        raise RuntimeError("the block fails")
    assert closing is not None and closing._conn is None  # closed even so


def test_read_only_sees_an_index_still_being_created_as_empty() -> None:
    ensure_dir(db_path().parent)
    sqlite3.connect(db_path()).close()  # an empty database, schema version 0
    with Index.open(read_only=True) as index:
        assert index.list_sessions() == []
    # ...and the reader wrote nothing: the file is still at schema 0.
    with sqlite3.connect(db_path()) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (0,)


def test_read_only_refuses_an_older_schema() -> None:
    ensure_dir(db_path().parent)
    with sqlite3.connect(db_path()) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(ConfigError, match="schema 99"):
        Index.open(read_only=True)


def test_import_and_help_do_not_touch_the_disk(tmp_path: Path) -> None:
    home = tmp_path / "fresh"
    env = {**os.environ, "ACPCLI_HOME": str(home)}
    code = "import acpcli.history.index, acpcli.config; acpcli.history.index.Index()"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    help_cmd = [sys.executable, "-m", "acpcli", "--help"]
    subprocess.run(help_cmd, env=env, check=True, timeout=60, capture_output=True)
    assert not home.exists()


def test_listing_sessions_leaves_the_event_log_unloaded() -> None:
    # completion lists sessions on every TAB: the event log module is loaded only for events
    with Index() as idx:
        idx.upsert_session(rec("s1"))
    code = (
        "import sys\n"
        "from acpcli.history.index import Index\n"
        "with Index.open(read_only=True) as index:\n"
        "    index.list_sessions()\n"
        "    print('acpcli.history.eventlog' in sys.modules)\n"
        "    index.event_count('s1')\n"
        "    print('acpcli.history.eventlog' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], check=True, timeout=60, capture_output=True, text=True)
    assert proc.stdout.split() == ["False", "True"]


def test_modes_0700_dirs_0600_db_whatever_the_umask(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "a" / "home"
    monkeypatch.setenv("ACPCLI_HOME", str(home))
    old = os.umask(0)  # the most permissive umask: modes must come from us, not from it
    try:
        with Index() as idx:
            idx.upsert_session(rec("s1"))
            with idx.writer() as w:
                w.append("s1", "k", "{}")
            assert mode(Path(str(db_path()) + "-wal")) == 0o600
        assert mode(tmp_path / "a") == 0o700
        assert mode(home) == 0o700
        assert mode(db_path()) == 0o600
        assert mode(ensure_dir(log_dir())) == 0o700
        assert mode(ensure_dir(history_dir() / "sub")) == 0o700
    finally:
        os.umask(old)


def test_ensure_dir_leaves_existing_dirs_alone(tmp_path: Path) -> None:
    existing = tmp_path / "mine"
    existing.mkdir()
    existing.chmod(0o755)
    ensure_dir(existing / "new")
    assert mode(existing) == 0o755
    assert mode(existing / "new") == 0o700


# -- opening, pragmas, migrations ------------------------------------------------------------


def test_pragmas(index: Index) -> None:
    conn = index.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == index_db.BUSY_TIMEOUT_MS
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert conn.execute("PRAGMA page_size").fetchone()[0] == index_db.PAGE_SIZE
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_migrations_are_idempotent_on_an_existing_db() -> None:
    with Index() as idx:
        idx.upsert_session(rec("keep-me"))
    with Index() as idx:  # reopening must not re-run CREATE TABLE
        assert migrate(idx.conn) == len(MIGRATIONS)
        assert migrate(idx.conn) == len(MIGRATIONS)
        assert idx.get("keep-me").agent == "demo"


def test_an_appended_migration_applies_once(monkeypatch: pytest.MonkeyPatch) -> None:
    with Index() as idx:
        idx.upsert_session(rec("old"))
    extra = "ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;"
    monkeypatch.setattr(index_db, "MIGRATIONS", (*MIGRATIONS, extra))
    for _ in range(2):  # the second open would fail with "duplicate column" if re-applied
        with Index() as idx:
            assert idx.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 1
            assert idx.conn.execute("SELECT pinned FROM sessions WHERE id = 'old'").fetchone() == (0,)


def test_a_newer_schema_is_refused() -> None:
    with Index() as idx:
        idx.conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    with pytest.raises(ConfigError, match="newer acpcli") as info:
        Index().list_sessions()
    assert str(db_path()) in str(info.value)


def test_a_file_that_is_not_a_database_is_damaged_state() -> None:
    ensure_dir(db_path().parent)
    db_path().write_bytes(b"this is not a database at all" * 200)
    for read_only in (False, True):
        with pytest.raises(DamagedState) as info:
            Index(read_only=read_only).list_sessions()
        assert str(db_path()) in str(info.value)
        assert info.value.exit_code == ExitCode.DAMAGED
        assert info.value.hint is not None and "acpcli doctor --repair" in info.value.hint


def test_statement_splitter_keeps_trigger_bodies_whole() -> None:
    statements = list(index_db._statements(MIGRATIONS[0]))
    trigger = [s for s in statements if s.startswith("CREATE TRIGGER")]
    assert len(trigger) == 1 and trigger[0].endswith("END;")
    with pytest.raises(ValueError):
        list(index_db._statements("CREATE TABLE t (x"))


# -- sessions ----------------------------------------------------------------------------------


def test_round_trip_of_every_field(index: Index) -> None:
    original = SessionRecord(
        id="sess_abc",
        agent="codex",
        argv=["codex-acp", "--flag"],
        cwd="/home/u/p",
        additional_dirs=["/home/u/lib", "/opt/x"],
        mcp_servers=["fs", "web"],
        protocol_version=1,
        title="Fix the bug",
        created_at=100.5,
        last_used_at=200.25,
        state="closed",
        agent_info={"name": "codex-acp", "version": "0.16.0"},
    )
    index.upsert_session(original)
    assert index.get("sess_abc") == original


def test_upsert_updates_but_keeps_created_at(index: Index) -> None:
    index.upsert_session(rec("s", created_at=1.0, last_used_at=1.0, title="a"))
    index.upsert_session(rec("s", created_at=99.0, last_used_at=5.0, title="b", additional_dirs=["/other"]))
    got = index.get("s")
    assert (got.created_at, got.last_used_at, got.title, got.additional_dirs) == (1.0, 5.0, "b", ["/other"])


@pytest.mark.parametrize("other", [{"cwd": "/elsewhere"}, {"agent": "another-agent"}])
def test_a_recorded_session_is_never_taken_over(index: Index, other: dict[str, str]) -> None:
    """Ids are the agents': another agent's (or directory's) session with the same id must not
    replace the record (migration 9 refuses it; insert_session leaves the record alone)."""
    index.upsert_session(rec("s", title="mine"))
    assert index.insert_session(rec("s", **other)) is False
    with pytest.raises(sqlite3.IntegrityError, match="keeps its agent and cwd"):
        index.upsert_session(rec("s", **other))
    got = index.get("s")
    assert (got.agent, got.cwd, got.title) == (rec("s").agent, rec("s").cwd, "mine")
    assert index.insert_session(rec("s.2", **other)) is True
    assert index.get("s.2").cwd == rec("s.2", **other).cwd


def test_only_mcp_server_names_are_stored(index: Index) -> None:
    secret = {"name": "fs", "command": "/bin/fs", "env": [{"name": "TOKEN", "value": "s3cret"}]}
    with pytest.raises(ValueError, match="names only"):
        index.upsert_session(rec("s", mcp_servers=[secret]))
    assert index.list_sessions() == []


def test_bad_state_is_rejected(index: Index) -> None:
    with pytest.raises(ValueError):
        index.upsert_session(rec("s", state="paused"))


def test_get_unknown_id(index: Index) -> None:
    with pytest.raises(SessionNotFound) as info:
        index.get("nope-123")
    assert "nope-123" in str(info.value)
    assert "\n" not in str(info.value)
    assert info.value.exit_code == ExitCode.SESSION_NOT_FOUND


def test_get_by_prefix(index: Index) -> None:
    for sid in ("abc111", "abc222", "xyz", "xy"):
        index.upsert_session(rec(sid))
    assert index.get("abc1").id == "abc111"
    assert index.get("xy").id == "xy"  # an exact id wins over being a prefix of another
    assert index.get("xyz").id == "xyz"
    with pytest.raises(UsageError) as info:
        index.get("abc")
    assert "abc111" in str(info.value) and "abc222" in str(info.value)
    with pytest.raises(SessionNotFound):
        index.get("abd")
    with pytest.raises(UsageError):
        index.get("")


def test_prefix_is_literal_not_a_like_pattern(index: Index) -> None:
    index.upsert_session(rec("a_b"))
    index.upsert_session(rec("axb"))
    assert index.get("a_").id == "a_b"
    with pytest.raises(SessionNotFound):
        index.get("a%")


def test_list_orders_by_last_use_and_filters(index: Index) -> None:
    index.upsert_session(rec("old", agent="codex", last_used_at=1.0, cwd="/a"))
    index.upsert_session(rec("mid", agent="demo", last_used_at=2.0, cwd="/a", state="closed"))
    index.upsert_session(rec("new", agent="demo", last_used_at=3.0, cwd="/b"))
    ids = lambda rs: [r.id for r in rs]  # noqa: E731
    assert ids(index.list_sessions()) == ["new", "mid", "old"]
    assert ids(index.list_sessions(agent="demo")) == ["new", "mid"]
    assert ids(index.list_sessions(cwd="/a")) == ["mid", "old"]
    assert ids(index.list_sessions(state="active")) == ["new", "old"]
    assert ids(index.list_sessions(agent="demo", cwd="/a")) == ["mid"]
    assert ids(index.list_sessions(limit=2)) == ["new", "mid"]
    index.touch("old")
    assert ids(index.list_sessions(limit=1)) == ["old"]


def test_title_close_and_delete(index: Index) -> None:
    index.upsert_session(rec("s"))
    index.set_title("s", "Refactor")
    index.mark_closed("s")
    got = index.get("s")
    assert (got.title, got.state) == ("Refactor", "closed")
    with index.writer() as w:
        w.append("s", "k", "{}")
    index.delete("s")
    with pytest.raises(SessionNotFound):
        index.get("s")
    assert index.conn.execute("SELECT count(*) FROM event_pages").fetchone() == (0,)
    for op in (index.touch, index.mark_closed, index.delete, lambda sid: index.set_title(sid, "x")):
        with pytest.raises(SessionNotFound):
            op("s")


# -- events of an older schema ---------------------------------------------------------

# Texts a page's concatenation and lengths must give back as they were.
ODD_TEXTS = ["", "line\nbreak", "tab\tand \r\n", "ünï 😀 中文", '{"a": "b"}\n', "\\", "x" * 70000, '"']


def test_events_of_a_schema_1_index_are_migrated_into_pages(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in index_db._statements(MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    for sid in ("s1", "s2", "empty"):
        conn.execute(
            "INSERT INTO sessions (id, agent, cwd, created_at, last_used_at) VALUES (?, 'demo', '/', 1, 1)", (sid,)
        )
    old = [("s1", seq, 1000.0 + seq / 1e6, f"k{seq % 3}", json.dumps({"n": seq, "t": ODD_TEXTS[seq % 8]}))
           for seq in range(1, 1203)]
    old += [("s2", 1, 5.5, "plan", '{ "x" : 1 }'), ("s2", 2, 6.25, "odd\nkind", "\u00e9"),
            ("s2", 4, 7.0, "after a gap", "{}")]
    conn.executemany("INSERT INTO events (session_id, seq, received_at, kind, payload) VALUES (?, ?, ?, ?, ?)", old)
    conn.close()

    with Index(path) as index:
        assert index.conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
        tables = {name for (name,) in index.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "events" not in tables and "event_pages" in tables
        for sid in ("s1", "s2", "empty"):
            mine = [row[1:] for row in old if row[0] == sid]
            assert [(q, t, k, p) for (q, k, p), t in zip(index.events_raw(sid), index.event_times(sid), strict=False)] == mine
            assert index.event_count(sid) == len(mine)
        assert index.conn.execute("SELECT count(*) FROM event_pages WHERE session_id = 's1'").fetchone() == (3,)
        with index.writer() as w:
            assert w.append("s2", "k", "{}") == 5  # numbering goes on after the last old event
        assert index.conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_a_reader_reads_a_schema_1_index_without_migrating_it(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in index_db._statements(MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO sessions (id, agent, cwd, created_at, last_used_at) VALUES ('s', 'demo', '/', 1, 1)")
    conn.executemany(
        "INSERT INTO events (session_id, seq, received_at, kind, payload) VALUES ('s', ?, ?, ?, ?)",
        [(1, 10.5, "plan", '{"a": 1}'), (2, 11.0, "k", "{}")],
    )
    conn.close()
    with Index(path, read_only=True) as reader:  # `acpcli load ID` looks the id up read-only
        assert reader.get("s").agent == "demo"
        assert list(reader.events_raw("s")) == [(1, "plan", '{"a": 1}'), (2, "k", "{}")]
        assert (reader.event_count("s"), reader.event_times("s")) == (2, [10.5, 11.0])
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (1,)  # the reader wrote nothing
    with Index(path) as index, Index(path, read_only=True) as reader:
        assert list(index.events_raw("s")) == list(reader.events_raw("s")) == [(1, "plan", '{"a": 1}'), (2, "k", "{}")]


# -- several processes at once ----------------------------------------------------------------


def test_concurrent_processes_do_not_corrupt_the_index(tmp_path: Path) -> None:
    """Three real processes open one fresh database at once, then write interleaved."""
    home = tmp_path / "shared-home"  # does not exist yet: creation and migration race too
    env = {**os.environ, "ACPCLI_HOME": str(home)}
    workers, own_sessions, n_events, batch = 3, 4, 3000, 50
    procs = [
        subprocess.Popen(
            [sys.executable, str(HELPER), str(w), str(own_sessions), str(n_events), str(batch)],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for w in range(workers)
    ]
    try:
        for p in procs:  # every worker imported and waiting ...
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:  # ... then all go at once
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
        assert out.strip() == "done"

    conn = sqlite3.connect(home / "acpcli.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (workers * own_sessions + 1,)
        (events,) = conn.execute("SELECT sum(count) FROM event_pages").fetchone()
        assert events == workers * n_events
        per_session = n_events // (own_sessions + 1)
        with Index(home / "acpcli.db", read_only=True) as reader:
            for sid, in conn.execute("SELECT id FROM sessions"):
                rows = [(seq, payload) for seq, _, payload in reader.events_raw(sid)]
                assert [seq for seq, _ in rows] == list(range(1, len(rows) + 1)), sid
                payloads = [json.loads(p) for _, p in rows]
                expected = per_session * (workers if sid == "shared" else 1)
                assert len(payloads) == expected, sid
                for w in range(workers):  # each writer's own events stay in its order
                    mine = [p["i"] for p in payloads if p["worker"] == w]
                    assert mine == sorted(mine) and mine == list(range(len(mine)))
        titles = conn.execute("SELECT count(*) FROM sessions WHERE title LIKE 'worker %'").fetchone()
        assert titles == (workers,)
    finally:
        conn.close()


def test_the_protocol_choice_is_recorded_and_older_rows_fall_back_to_the_version(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    with Index(path) as index:
        index.upsert_session(rec("late", protocol_version=2, protocol="2-latest"))
        index.upsert_session(rec("old-v1", protocol_version=1))  # recorded before the choice was kept
        index.upsert_session(rec("unknown"))
        got = {r.id: (r.protocol, r.protocol_choice()) for r in index.list_sessions()}
        assert got == {"late": ("2-latest", "2-latest"), "old-v1": (None, "1"), "unknown": (None, None)}
        assert index.get("late").protocol == "2-latest"
        index.upsert_session(rec("late", protocol_version=2, protocol="2"))  # continued over plain 2
        assert index.get("late").protocol_choice() == "2"
    # a schema-2 file (before the protocol column) is migrated and keeps its rows
    old = tmp_path / "old.db"
    conn = sqlite3.connect(old, isolation_level=None)
    for statement in index_db._statements(MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO sessions (id, agent, cwd, protocol_version, created_at, last_used_at) "
                 "VALUES ('s', 'demo', '/', 1, 1, 1)")
    conn.close()
    with Index(old) as index:
        assert index.get("s").protocol_choice() == "1"
    with Index(old, read_only=True) as index:
        assert index.get("s").protocol is None


def test_storage_error_says_what_an_sqlite_error_means() -> None:
    import sqlite3

    from acpcli.errors import DatabaseLocked, StorageError
    from acpcli.history.index import storage_error

    cases = [
        (sqlite3.DatabaseError("database disk image is malformed"), DamagedState, ExitCode.DAMAGED),
        (sqlite3.DatabaseError("file is not a database"), DamagedState, ExitCode.DAMAGED),
        (sqlite3.OperationalError("no such table: search_docs"), DamagedState, ExitCode.DAMAGED),
        (sqlite3.OperationalError("database is locked"), DatabaseLocked, ExitCode.BUSY),
        (sqlite3.OperationalError("database or disk is full"), StorageError, ExitCode.STORAGE),
        (sqlite3.OperationalError("attempt to write a readonly database"), StorageError, ExitCode.STORAGE),
    ]
    for exc, kind, code in cases:
        err = storage_error(exc)
        assert type(err) is kind and err.exit_code == code, (exc, err)
        assert str(db_path()) in err.message
    assert "acpcli doctor" in (storage_error(cases[0][0]).hint or "")


def test_no_sql_outside_the_history_package() -> None:
    """All SQL is behind the index: no module outside acpcli/history runs a statement or
    holds one (what a caller needs is a method of Index)."""
    import ast
    import re

    import acpcli

    statement = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|PRAGMA|CREATE|DROP|ALTER|BEGIN|COMMIT|VACUUM)\b")
    root = Path(acpcli.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.is_relative_to(root / "history"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and statement.match(node.value):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value[:40]!r}")
            # .conn of a link (or an AgentLink's own) is the agent's JSON-RPC connection
            holder = node.value if isinstance(node, ast.Attribute) else None
            wire = (isinstance(holder, ast.Name) and holder.id in ("link", "self")) or (
                isinstance(holder, ast.Attribute) and holder.attr in ("link", "agent_link")
            )
            if isinstance(node, ast.Attribute) and (
                node.attr in ("execute", "executemany", "executescript") or (node.attr == "conn" and not wire)
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno}: .{node.attr}")
    assert found == []


# -- an older, half-migrated, newer or planted schema ------------------------------------------


def _built_to(path: Path, version: int) -> None:
    """A database made by the first ``version`` migrations (what that acpcli made), one session in it."""
    conn = sqlite3.connect(path, isolation_level=None)
    for step in MIGRATIONS[:version]:
        index_db._run_migration(conn, step)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO sessions (id, agent, cwd, created_at, last_used_at) VALUES ('old', 'demo', '/', 1, 1)")
    conn.close()


@pytest.mark.parametrize("version", [2, 5, 7, 10])
def test_an_older_index_migrates(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.db"
    _built_to(path, version)
    with Index(path) as index:
        assert index.conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
        assert index.get("old").agent == "demo"
        assert index_db.unknown_objects(index.conn) == []


@pytest.mark.parametrize("lag", [1, 3, 8, len(MIGRATIONS)])
def test_an_index_whose_version_lags_its_schema_migrates(tmp_path: Path, lag: int) -> None:
    """Half-migrated (the columns there, the version not set): no "duplicate column name"."""
    path = tmp_path / "half.db"
    with Index(path) as index:
        index.upsert_session(rec("kept"))
        index.set_title("kept", "still here", by_user=True)
        index.conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) - lag}")
    with Index(path) as index:
        assert index.conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
        assert index.get("kept").title == "still here"
        assert index_db.unknown_objects(index.conn) == []


def test_a_newer_schema_is_refused_by_readers_too() -> None:
    with Index() as idx:
        idx.conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 2}")
    with pytest.raises(ConfigError, match="written by a newer acpcli") as info:
        Index(read_only=True).list_sessions()
    assert "migrate" not in info.value.message  # an older acpcli cannot migrate it


@pytest.mark.parametrize(
    ("plant", "what"),
    [
        (["CREATE TRIGGER wipe AFTER UPDATE ON sessions BEGIN DELETE FROM sessions WHERE id != NEW.id; END"], "trigger 'wipe'"),
        (["CREATE VIEW peek AS SELECT id FROM sessions"], "view 'peek'"),
        (  # acpcli's own trigger's name, another body
            [
                "DROP TRIGGER sessions_keep_their_owner",
                "CREATE TRIGGER sessions_keep_their_owner BEFORE UPDATE OF agent ON sessions "
                "BEGIN UPDATE sessions SET title = 'pwned'; END",
            ],
            "trigger 'sessions_keep_their_owner'",
        ),
    ],
)
def test_an_index_holding_a_trigger_or_view_acpcli_did_not_create_is_not_written(plant: list[str], what: str) -> None:
    with Index() as idx:
        idx.upsert_session(rec("a"))
        idx.upsert_session(rec("b"))
        for statement in plant:
            idx.conn.execute(statement)
    kind, name = what.split()
    with pytest.raises(DamagedState, match=f"holds a {kind} acpcli did not create") as info:
        Index().touch("a")
    assert name in info.value.message and "acpcli doctor --repair" in (info.value.hint or "")
    with Index(read_only=True) as reader:  # reading runs nothing of theirs
        assert {r.id for r in reader.list_sessions()} == {"a", "b"}
