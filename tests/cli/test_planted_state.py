"""Local state someone else planted, through the real program: a home or index another user
owns or may write, a command line rewritten in the index, a trigger or view added to it, a
search table's schema entry overwritten, an index an older (or half-migrated) or a newer
acpcli wrote, a home that is a file and an index that is a directory.

Each refusal is one ``acpcli: error:`` line naming the file and a documented exit code, and no
agent is started for it. "Another user" is another uid given the file with ``os.chown``
(needs root: those tests skip otherwise); the mode-bits cases run as anyone.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from acpcli.history.index import MIGRATIONS

from .conftest import AgentTrace, Cli, error_line

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="giving a file to another user (chown) needs root")
OTHER_UID = 3141
SHARED = {"ACPCLI_ALLOW_SHARED_HOME": "1"}


def _db(cli: Cli) -> Path:
    return cli.home / "acpcli.db"


def _sql(cli: Cli, *statements: str) -> None:
    conn = sqlite3.connect(_db(cli), isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def _planted_command(marker: Path) -> str:
    """A command line another user would plant: it leaves ``marker`` behind if it ever runs."""
    return json.dumps(["sh", "-c", f"touch {shlex.quote(str(marker))}"])


# -- 1. a home or index that is not the user's own ------------------------------------------------


@pytest.mark.parametrize("loose", [0o777, 0o733, 0o1777])
def test_a_home_others_may_write_is_refused_and_shared_only_on_purpose(
    cli: Cli, trace: AgentTrace, loose: int
) -> None:
    cli.home.chmod(loose)
    for args in (["sessions"], ["prompt", "--cmd", trace.demo_cmd(), "hi"], ["doctor"]):
        line = error_line(cli.run(*args), ExitCode.CONFIG)
        assert f"ACPCLI_HOME {cli.home} is writable by" in line and "refusing to use it" in line
    assert trace.pids() == [] and not _db(cli).exists()  # no agent started, nothing written there
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "hi", env=SHARED)
    assert proc.returncode == 0, proc.stderr
    assert _db(cli).exists()


@needs_root
@pytest.mark.parametrize("whose", ["home", "acpcli.db"])
def test_state_owned_by_another_user_is_refused(cli: Cli, trace: AgentTrace, whose: str) -> None:
    sid = cli.new(trace.demo_cmd())
    started = len(trace.pids())
    target = cli.home if whose == "home" else _db(cli)
    os.chown(target, OTHER_UID, -1)
    for args in (["show", sid], ["prompt", "--session", sid, "--keep-alive", "0", "hi"]):
        line = error_line(cli.run(*args), ExitCode.CONFIG)
        assert str(target) in line and f"owned by another user (uid {OTHER_UID})" in line
    assert len(trace.pids()) == started


# -- 2. a command line the user did not give is never run ----------------------------------------


def test_a_command_line_rewritten_in_a_shared_index_is_never_run(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    by_cmd = cli.new(trace.demo_cmd())
    by_name = cli.ok("new", "--no-repl", "--agent", "demo").stdout.strip()
    cli.home.chmod(0o777)  # shared on purpose: another user may write it, and does
    _sql(cli, f"UPDATE sessions SET argv = '{_planted_command(marker)}'")
    # A --cmd session: its recorded command line is not run; the line says how to go on.
    line = error_line(cli.run("prompt", "--session", by_cmd, "--keep-alive", "0", "hi", env=SHARED), ExitCode.USAGE)
    assert "is not run" in line and str(_db(cli)) in line
    # A named agent: named again from the built-ins, not from the index.
    proc = cli.run("prompt", "--session", by_name, "--keep-alive", "0", "hello again", env=SHARED)
    assert proc.returncode == 0, proc.stderr
    assert "hello again" in proc.stdout
    # Given --cmd again, the session goes on.
    proc = cli.run("prompt", "--session", by_cmd, "--cmd", trace.demo_cmd(), "--keep-alive", "0", "hi", env=SHARED)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()


def test_a_private_index_still_runs_the_recorded_command_line(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd())
    before = len(trace.pids())
    cli.ok("prompt", "--session", sid, "--keep-alive", "0", "again")
    assert len(trace.pids()) == before + 1  # the traced --cmd line, as recorded


# -- 3. triggers and views acpcli did not create ---------------------------------------------------


@pytest.mark.parametrize(
    ("plant", "name"),
    [
        ("CREATE TRIGGER wipe AFTER UPDATE ON sessions BEGIN DELETE FROM sessions WHERE id != NEW.id; END", "wipe"),
        ("CREATE TRIGGER retitle BEFORE INSERT ON event_pages BEGIN UPDATE sessions SET title = 'owned'; END", "retitle"),
        ("CREATE VIEW everything AS SELECT * FROM sessions", "everything"),
    ],
)
def test_a_planted_trigger_is_flagged_refused_and_dropped(cli: Cli, trace: AgentTrace, plant: str, name: str) -> None:
    ids = [cli.new(trace.demo_cmd()) for _ in range(3)]
    _sql(cli, plant)
    line = error_line(cli.run("prompt", "--session", ids[0], "--keep-alive", "0", "hi"), ExitCode.DAMAGED)
    assert f"did not create ('{name}'" in line and "refusing to write" in line
    proc = cli.run("doctor")
    assert proc.returncode == ExitCode.DAMAGED
    assert f"'{name}'" in proc.stdout and "not created by acpcli" in proc.stdout
    proc = cli.run("doctor", "--repair")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"dropped {'view' if 'VIEW' in plant else 'trigger'} '{name}'" in proc.stdout and "healthy" in proc.stdout
    assert not [row for row in _schema(cli) if row[1] == name]
    assert any(row[1] == "sessions_keep_their_owner" for row in _schema(cli))
    cli.ok("prompt", "--session", ids[0], "--keep-alive", "0", "hi")
    assert sorted(s["id"] for s in cli.index()) == sorted(ids)
    assert all(s["title"] != "owned" for s in cli.index())


def test_acpcli_s_own_trigger_dropped_is_made_again(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd())
    _sql(cli, "DROP TRIGGER sessions_keep_their_owner")
    proc = cli.run("doctor")
    assert proc.returncode == ExitCode.DAMAGED and "'sessions_keep_their_owner' is missing" in proc.stdout
    proc = cli.run("doctor", "--repair")
    assert proc.returncode == 0 and "made acpcli's trigger 'sessions_keep_their_owner' again" in proc.stdout
    with pytest.raises(sqlite3.IntegrityError, match="keeps its agent and cwd"):
        _sql(cli, f"UPDATE sessions SET cwd = '/elsewhere' WHERE id = '{sid}'")


def _schema(cli: Cli) -> list[tuple[str, str]]:
    conn = sqlite3.connect(_db(cli))
    try:
        return list(conn.execute("SELECT type, name FROM sqlite_master"))
    finally:
        conn.close()


# -- 4. a search table's schema entry damaged: the sessions are kept ------------------------------


@pytest.mark.parametrize("table", ["search_docs", "search_docs_by_session"])
def test_a_damaged_search_schema_entry_keeps_the_sessions(cli: Cli, trace: AgentTrace, table: str) -> None:
    ids = [cli.new(trace.demo_cmd()) for _ in range(2)]
    cli.ok("prompt", "--session", ids[1], "--keep-alive", "0", "zebra crossing")
    conn = sqlite3.connect(_db(cli), isolation_level=None)
    (version,) = conn.execute("PRAGMA schema_version").fetchone()
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = 'CREATE TABLE ' || name || ' (' WHERE name = ?", (table,))
    conn.execute(f"PRAGMA schema_version = {version + 1}")
    conn.close()
    proc = cli.run("doctor")
    assert proc.returncode == ExitCode.DAMAGED and f"'{table}'" in proc.stdout
    proc = cli.run("doctor", "--repair")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "kept 2 sessions" in proc.stdout and "healthy — 2 sessions" in proc.stdout
    assert sorted(s["id"] for s in cli.index()) == sorted(ids)
    assert ids[1] in cli.ok("search", "zebra").stdout


# -- 5. an older or half-migrated index -------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 7, len(MIGRATIONS) - 1])
def test_an_index_whose_version_lags_its_schema_migrates(cli: Cli, trace: AgentTrace, version: int) -> None:
    sid = cli.new(trace.demo_cmd())
    _sql(cli, f"PRAGMA user_version = {version}")
    proc = cli.run("prompt", "--session", sid, "--keep-alive", "0", "still works")
    assert proc.returncode == 0, proc.stderr
    assert "duplicate column" not in proc.stderr
    _sql(cli, f"PRAGMA user_version = {version}")
    proc = cli.run("doctor", "--repair")
    assert proc.returncode == 0 and "healthy — 1 session" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("version", [2, 6])
def test_an_index_an_older_acpcli_made_migrates(cli: Cli, version: int) -> None:
    from acpcli.history.index import _run_migration

    conn = sqlite3.connect(_db(cli), isolation_level=None)
    for step in MIGRATIONS[:version]:
        _run_migration(conn, step)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO sessions (id, agent, cwd, created_at, last_used_at) VALUES ('old-one', 'demo', '/', 1, 1)")
    conn.close()
    proc = cli.run("doctor")
    assert proc.returncode == 0 and "healthy — 1 session" in proc.stdout, proc.stdout + proc.stderr
    assert [s["id"] for s in cli.index()] == ["old-one"]


# -- 6. an index a newer acpcli wrote -------------------------------------------------------------


@pytest.mark.parametrize("ahead", [1, 40])
def test_an_index_a_newer_acpcli_wrote_is_named_so_and_left_alone(cli: Cli, trace: AgentTrace, ahead: int) -> None:
    sid = cli.new(trace.demo_cmd())
    started = len(trace.pids())
    _sql(cli, f"PRAGMA user_version = {len(MIGRATIONS) + ahead}")
    before = _db(cli).read_bytes()
    for args in (["doctor"], ["doctor", "--repair"], ["sessions"], ["prompt", "--session", sid, "--keep-alive", "0", "hi"]):
        line = error_line(cli.run(*args), ExitCode.CONFIG)
        assert f"{_db(cli)} was written by a newer acpcli (schema {len(MIGRATIONS) + ahead}" in line
    assert _db(cli).read_bytes() == before and len(trace.pids()) == started
    assert not list(cli.home.glob("acpcli.db.damaged-*"))


# -- 7. a home that is a file, an index that is a directory ------------------------------------------


def test_a_home_that_is_a_file_says_so(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    home = tmp_path / "not-a-dir"
    home.write_text("")
    for args in (["sessions"], ["prompt", "--cmd", trace.demo_cmd(), "hi"], ["doctor"], ["search", "x"]):
        line = error_line(cli.run(*args, env={"ACPCLI_HOME": str(home)}), ExitCode.CONFIG)
        assert line == f"ACPCLI_HOME {home} is a file, not a directory"
    assert trace.pids() == []


def test_an_index_that_is_a_directory_says_so(cli: Cli, trace: AgentTrace) -> None:
    _db(cli).mkdir()
    for args in (["sessions"], ["prompt", "--cmd", trace.demo_cmd(), "hi"], ["doctor"], ["show", "x"]):
        line = error_line(cli.run(*args), ExitCode.CONFIG)
        assert line == f"the session index {_db(cli)} is a directory, not a file"
    assert trace.pids() == []
