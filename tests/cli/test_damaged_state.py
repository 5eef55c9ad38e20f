"""Damaged local state through the real program: one line and exit 19 (``acpcli doctor`` named),
never a traceback; what is readable still shown; ``doctor`` says what is damaged and
``doctor --repair`` salvages what is readable, keeping the damaged file.

The damage is done to a real index, made by the demo agent: a page of the file overwritten
with garbage, a file that is not a database at all, the search index's tables corrupted or
dropped, event rows tampered with (the append-only trigger dropped first, as a tamperer would).
"""

from __future__ import annotations

import os
import shlex
import sqlite3
import sys
from pathlib import Path

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli, error_line

PAGE = 8192  # acpcli's page size (persistence.PAGE_SIZE): a new index is made with it
HOSTILE = shlex.join([sys.executable, str(Path(__file__).resolve().parent.parent / "peers" / "hostile_agent.py")])


def _sessions(cli: Cli, trace: AgentTrace, n: int = 4, turns: int = 2) -> list[str]:
    """``n`` demo sessions, each with ``turns`` turns; long prompts, so that each fills pages of its own."""
    cmd = trace.demo_cmd()
    ids = [cli.new(cmd) for _ in range(n)]
    for turn in range(turns):
        for i, sid in enumerate(ids):
            cli.ok("prompt", "--session", sid, f"marker{i}x{turn} " + " ".join(f"word{i}{k}" for k in range(900)))
    return ids


def _db(home: Path) -> Path:
    path, wal = home / "acpcli.db", home / "acpcli.db-wal"
    assert path.is_file()
    assert not wal.exists() or wal.stat().st_size == 0  # all in the file, where the damage is done
    return path


def _event_page_of(db: Path, marker: bytes) -> int:
    """The number (1-based) of a page of the file holding ``marker`` in an event (not a search
    document: an event's JSON says ``sessionUpdate``), away from the file's first pages."""
    data = db.read_bytes()
    for number in range(3, len(data) // PAGE + 1):
        page = data[(number - 1) * PAGE : number * PAGE]
        if marker in page and b"sessionUpdate" in page:
            return number
    raise AssertionError(f"no event page holds {marker!r}")


def _garble(db: Path, number: int) -> None:
    with db.open("r+b") as f:
        f.seek((number - 1) * PAGE)
        f.write((b"\xa5garbage!" * (PAGE // 9 + 1))[:PAGE])


def _no_traceback(*procs: object) -> None:
    for proc in procs:
        assert "Traceback" not in proc.stderr, proc.stderr  # type: ignore[attr-defined]


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("acpcli: warning: ")]


def _kept_aside(home: Path) -> list[Path]:
    return sorted(p for p in home.iterdir() if p.name.startswith("acpcli.db.damaged-") and not p.name.endswith(("-wal", "-shm")))


def test_an_overwritten_event_page_costs_its_events_only(cli: Cli, trace: AgentTrace, acpcli_home: Path) -> None:
    ids = _sessions(cli, trace)
    before = {sid: cli.show(sid) for sid in ids}
    db = _db(acpcli_home)
    _garble(db, _event_page_of(db, b"marker2x0"))  # a page in the middle of the file
    damaged_bytes = db.read_bytes()

    listing = cli.ok("sessions", "--all")
    assert all(sid in listing.stdout for sid in ids)
    hurt = []
    for sid in ids:
        for args in (("show", sid), ("export", sid), ("export", sid, "--format", "jsonl")):
            proc = cli.run(*args)
            _no_traceback(proc)
            assert proc.returncode == ExitCode.OK, proc.stderr
            warned = _warnings(proc.stderr)
            if args[0] == "show" and not warned:
                assert proc.stdout == before[sid]  # untouched sessions read as before
            if warned:
                # one line: how many, which seqs; the rest of the transcript is still there
                assert len(warned) == 1 and sid in warned[0] and "(seq " in warned[0] and "acpcli doctor" in warned[0]
                assert proc.stdout.strip()
                hurt.append(sid)
    assert ids[2] in hurt
    # search needs only the search index: what is indexed is found (a warning when the
    # damage keeps it from being brought up to date)
    found = cli.run("search", "marker3x1")
    _no_traceback(found)
    assert found.returncode == ExitCode.OK, found.stderr
    assert [line.split("\t")[0] for line in found.stdout.splitlines()[1:]] == [ids[3]]

    doctor = cli.run("doctor")
    _no_traceback(doctor)
    assert "acpcli doctor --repair" in error_line_of(doctor, ExitCode.DAMAGED)
    assert f"session {ids[2]}" in doctor.stdout and "event log" in doctor.stdout

    repair = cli.run("doctor", "--repair")
    assert repair.returncode == ExitCode.OK, repair.stderr + repair.stdout
    (aside,) = _kept_aside(acpcli_home)
    assert aside.read_bytes() == damaged_bytes  # the damaged file is kept as it was
    assert str(aside) in repair.stdout and f"kept {len(ids)} sessions" in repair.stdout
    assert f"could not read events of session {ids[2]}: seq " in repair.stdout  # what was left out, said
    assert cli.ok("doctor").stdout.count("healthy") == 1
    assert {r["id"] for r in cli.index()} == set(ids)
    for sid in ids:
        shown = cli.ok("show", sid)
        assert not _warnings(shown.stderr)
        if sid not in hurt:
            assert shown.stdout == before[sid]  # salvaged whole
    assert {line.split("\t")[0] for line in cli.ok("search", "marker1x1").stdout.splitlines()[1:]} == {ids[1]}


def error_line_of(proc: object, code: ExitCode) -> str:
    """``error_line`` for a command that also prints a report on stdout (doctor): the error
    and hint lines on stderr only."""
    assert proc.returncode == code, proc.stderr  # type: ignore[attr-defined]
    lines = proc.stderr.splitlines()  # type: ignore[attr-defined]
    errors = [line for line in lines if line.startswith("acpcli: error: ")]
    hints = [line for line in lines if line.startswith("acpcli: hint: ")]
    assert len(errors) == 1 and len(hints) <= 1 and len(lines) == len(errors) + len(hints), lines
    return "\n".join(errors + hints)


def test_a_file_that_is_not_a_database(cli: Cli, trace: AgentTrace, acpcli_home: Path) -> None:
    garbage = os.urandom(64 * 1024)
    (acpcli_home / "acpcli.db").write_bytes(garbage)
    cmd = trace.demo_cmd()
    for args in (
        ("sessions",),
        ("show", "demo-1"),
        ("export", "demo-1"),
        ("search", "anything"),
        ("sessions", "rm", "demo-1"),
        ("sessions", "prune", "--older-than", "1d"),
        ("prompt", "--cmd", cmd, "hello"),
        ("new", "--cmd", cmd, "--no-repl"),
    ):
        proc = cli.run(*args)
        message = error_line(proc, ExitCode.DAMAGED)
        assert str(acpcli_home / "acpcli.db") in message and "not a database" in message, args
        assert "acpcli doctor --repair" in proc.stderr, args
    assert trace.pids() == []  # refused before any agent was started: nothing to lose
    doctor = cli.run("doctor")
    assert "not a readable SQLite database" in doctor.stdout
    error_line_of(doctor, ExitCode.DAMAGED)

    repair = cli.run("doctor", "--repair")
    assert repair.returncode == ExitCode.OK, repair.stderr
    assert "not an SQLite database" in repair.stdout
    (aside,) = _kept_aside(acpcli_home)
    assert aside.read_bytes() == garbage and oct(aside.stat().st_mode & 0o777) == "0o600"
    assert cli.ok("doctor").returncode == 0
    sid = cli.new(cmd)  # the way forward: a working index again
    assert "hello again" in cli.ok("prompt", "--session", sid, "hello again").stdout
    trace.assert_all_gone()


def test_an_unreadable_sessions_table(cli: Cli, trace: AgentTrace, acpcli_home: Path) -> None:
    ids = _sessions(cli, trace, n=2)
    db = _db(acpcli_home)
    with sqlite3.connect(db) as conn:
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sessions'").fetchone()
    conn.close()
    _garble(db, root)
    for args in (("sessions",), ("show", ids[0]), ("export", ids[0]), ("search", "marker0x0"), ("sessions", "rm", ids[0])):
        message = error_line(cli.run(*args), ExitCode.DAMAGED)
        assert str(db) in message and "damaged" in message, args
    repair = cli.run("doctor", "--repair")
    assert repair.returncode == ExitCode.OK, repair.stderr
    # the rows are gone with their page; the transcripts come back from their events
    assert "recovered 2 sessions from the events alone" in repair.stdout
    assert {r["id"] for r in cli.index()} == set(ids)
    assert "marker1x1" in cli.show(ids[1])


def _docs_sql(cli: Cli, trace: AgentTrace, acpcli_home: Path, *statements: str) -> list[str]:
    ids = _sessions(cli, trace, n=2)
    with sqlite3.connect(_db(acpcli_home), isolation_level=None) as conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()
    return ids


def _search_index_is_rebuilt(cli: Cli, ids: list[str]) -> None:
    # `sessions rm` does not depend on the search index
    removed = cli.run("sessions", "rm", ids[0])
    _no_traceback(removed)
    assert removed.returncode == ExitCode.OK, removed.stderr
    assert "deleted 1 session" in removed.stderr
    # search says so and makes it again (rm may have done it already: then search just works)
    found = cli.ok("search", "marker1x0")
    assert [line.split("\t")[0] for line in found.stdout.splitlines()[1:]] == [ids[1]]
    again = cli.ok("search", "marker1x1")
    assert again.stderr == "" and ids[1] in again.stdout
    assert cli.ok("doctor").returncode == 0


def test_a_corrupted_fts_table(cli: Cli, trace: AgentTrace, acpcli_home: Path) -> None:
    ids = _docs_sql(cli, trace, acpcli_home, "UPDATE search_fts_data SET block = randomblob(length(block)) WHERE id > 10")
    doctor = cli.run("doctor")
    assert "search index: damaged" in doctor.stdout
    error_line_of(doctor, ExitCode.DAMAGED)
    found = cli.ok("search", "marker1x0")
    assert "the search index" in found.stderr and "made again" in found.stderr
    assert ids[1] in found.stdout
    _search_index_is_rebuilt(cli, ids)


def test_a_dropped_search_table(cli: Cli, trace: AgentTrace, acpcli_home: Path) -> None:
    ids = _docs_sql(cli, trace, acpcli_home, "DROP TABLE search_docs")
    _search_index_is_rebuilt(cli, ids)


def test_a_search_index_broken_at_the_page_level_is_repaired_in_place(
    cli: Cli, trace: AgentTrace, acpcli_home: Path
) -> None:
    ids = _sessions(cli, trace, n=2)
    db = _db(acpcli_home)
    with sqlite3.connect(db) as conn:
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'search_fts_data'").fetchone()
    conn.close()
    _garble(db, root)
    for args in (("sessions",), ("show", ids[1])):
        assert not cli.ok(*args).stderr.strip()  # nothing else needs the search index
    removed = cli.run("sessions", "rm", ids[0])
    assert removed.returncode == ExitCode.OK, removed.stderr
    assert "search index" in removed.stderr and "deleted 1 session" in removed.stderr
    assert cli.ok("doctor").returncode == 0  # rebuilt, the pages given back
    assert ids[1] in cli.ok("search", "marker1x1").stdout


def test_tampered_event_rows_are_reported_and_the_rest_shown(cli: Cli, trace: AgentTrace, acpcli_home: Path) -> None:
    sid = _sessions(cli, trace, n=1, turns=3)[0]
    whole = cli.show(sid)
    with sqlite3.connect(_db(acpcli_home), isolation_level=None) as conn:
        pages = conn.execute("SELECT first_seq, count FROM event_pages ORDER BY first_seq").fetchall()
        assert len(pages) >= 3  # a turn's events are flushed as a page or more
        conn.execute("DROP TRIGGER event_pages_are_append_only")
        first, _ = pages[1]
        # the first event of a page is no longer JSON; a whole other page's kinds are garbage
        conn.execute("UPDATE event_pages SET payloads = '<<' || substr(payloads, 3) WHERE first_seq = ?", (first,))
        last_first, last_count = pages[-1]
        conn.execute("UPDATE event_pages SET kinds = 'not json' WHERE first_seq = ?", (last_first,))
    conn.close()
    last = f"{last_first}-{last_first + last_count - 1}" if last_count > 1 else str(last_first)
    for args in (("show", sid), ("export", sid, "--format", "jsonl")):
        proc = cli.run(*args)
        assert proc.returncode == ExitCode.OK, proc.stderr
        (warning,) = _warnings(proc.stderr)
        assert f"{1 + last_count} stored events of session {sid} could not be read (seq {first}, {last})" in warning
        assert proc.stdout.strip()
    assert "marker0x0" in cli.show(sid) and cli.show(sid) != whole
    doctor = cli.run("doctor")
    assert f"(seq {first}, {last})" in doctor.stdout
    error_line_of(doctor, ExitCode.DAMAGED)
    repair = cli.ok("doctor", "--repair")
    assert f"could not read events of session {sid}: seq {first}, {last}" in repair.stdout
    assert len(_kept_aside(acpcli_home)) == 1
    assert not _warnings(cli.ok("show", sid).stderr)
    assert cli.ok("doctor").returncode == 0


def test_doctor_on_a_healthy_index_and_on_none(cli: Cli, trace: AgentTrace) -> None:
    none = cli.ok("doctor")
    assert "no session index" in none.stdout
    _sessions(cli, trace, n=1)
    healthy = cli.ok("doctor")
    assert "healthy — 1 session" in healthy.stdout and healthy.stderr == ""
    repair = cli.ok("doctor", "--repair")
    assert "healthy — 1 session" in repair.stdout and "kept" not in repair.stdout
    assert _kept_aside(cli.home) == []  # a healthy index is never moved


def test_lone_surrogates_are_stored_and_found_once(cli: Cli, acpcli_home: Path) -> None:
    proc = cli.run("prompt", "--cmd", HOSTILE, "surrogate")
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert "lonely \\ud800 needle" in proc.stdout
    (record,) = cli.index()
    assert record["title"] == "title \\ud800 lone"  # stored as shown
    for _ in range(2):
        found = cli.ok("search", "needle")
        assert found.stderr == ""  # indexed by the turn itself: nothing to catch up, ever
        assert [line.split("\t")[0] for line in found.stdout.splitlines()[1:]] == [record["id"]]
    logs = "".join(p.read_text(errors="replace") for p in (acpcli_home / "logs").glob("*") if p.is_file())
    assert "Traceback" not in logs and "surrogates not allowed" not in logs


def test_damage_met_during_a_turn_does_not_stop_it(cli: Cli, trace: AgentTrace, acpcli_home: Path) -> None:
    _sessions(cli, trace, n=1, turns=1)
    db = _db(acpcli_home)
    with sqlite3.connect(db) as conn:
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sessions'").fetchone()
    conn.close()
    _garble(db, root)  # the file opens; recording the new session fails
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "still answered")
    _no_traceback(proc)
    assert proc.returncode == ExitCode.DAMAGED, proc.stderr
    assert "still answered" in proc.stdout  # the answer was shown in full
    errors = [line for line in proc.stderr.splitlines() if line.startswith("acpcli: error: ")]
    assert len(errors) == 1 and str(db) in errors[0]
    assert "acpcli: hint: `acpcli doctor`" in proc.stderr
    trace.assert_all_gone()
