"""``acpcli sessions rm ID…``: local records only (index rows, events, the demo agent's state);
asks first on a terminal (``--yes`` skips that), acts without one; nothing half-done."""

from __future__ import annotations

from pathlib import Path

from acpcli.errors import ExitCode
from acpcli.history.index import Index

from .conftest import AgentTrace, Cli, error_line


def _two_sessions(cli: Cli, trace: AgentTrace) -> tuple[str, str]:
    cmd = trace.demo_cmd()
    gone, kept = cli.new(cmd), cli.new(cmd)
    cli.run_all(("prompt", "--session", gone, "to be deleted"), ("prompt", "--session", kept, "to be kept"))
    return gone, kept


def _event_rows(sid: str) -> int:
    with Index() as index:
        return int(index.conn.execute("SELECT count(*) FROM event_pages WHERE session_id = ?", (sid,)).fetchone()[0])


def test_rm_without_a_terminal_deletes_the_local_records(cli: Cli, trace: AgentTrace, acpcli_home: Path) -> None:
    gone, kept = _two_sessions(cli, trace)
    state = acpcli_home / "demo-agent" / "sessions" / f"{gone}.json"
    assert state.is_file() and _event_rows(gone) > 0
    shown = cli.show(kept)
    done = cli.ok("sessions", "rm", gone[:12])  # a unique prefix, as `show` takes
    assert done.stdout == "" and done.stderr.strip() == "deleted 1 session"
    assert [r["id"] for r in cli.index()] == [kept]
    assert _event_rows(gone) == 0 and not state.exists()
    assert cli.show(kept) == shown
    assert "no session" in error_line(cli.run("show", gone), ExitCode.SESSION_NOT_FOUND)
    trace.assert_all_gone()


def test_rm_of_an_unknown_id_deletes_nothing(cli: Cli, trace: AgentTrace) -> None:
    gone, kept = _two_sessions(cli, trace)
    error_line(cli.run("sessions", "rm", gone, "demo-nope"), ExitCode.SESSION_NOT_FOUND)
    assert {r["id"] for r in cli.index()} == {gone, kept}
    assert "sessions rm" in error_line(cli.run("sessions", "rm"), ExitCode.USAGE)
    assert "rm ID" in error_line(cli.run("sessions", "delete", gone), ExitCode.USAGE)


def test_rm_on_a_terminal_lists_and_asks_first(cli: Cli, trace: AgentTrace, spawn) -> None:  # type: ignore[no-untyped-def]
    gone, kept = _two_sessions(cli, trace)
    pty = spawn("sessions", "rm", gone)
    pty.expect(r"Delete the local records of this session\? \[y/N\] ")
    assert gone in pty.seen and "to be deleted" in pty.seen  # listed with its title
    pty.child.send("n\r")
    pty.expect("nothing deleted")
    assert pty.wait() == 0
    assert {r["id"] for r in cli.index()} == {gone, kept}
    pty = spawn("sessions", "rm", gone)
    pty.expect(r"\[y/N\] ")
    pty.child.send("y\r")
    pty.expect("deleted 1 session")
    assert pty.wait() == 0
    assert [r["id"] for r in cli.index()] == [kept]
    pty = spawn("sessions", "rm", kept, "--yes")
    pty.expect("deleted 1 session")
    assert pty.wait() == 0 and cli.index() == []


# -- prune ------------------------------------------------------------------------------------


def _last_used(sid: str, days_ago: float) -> None:
    import time

    with Index() as index:
        index.conn.execute("UPDATE sessions SET last_used_at = ? WHERE id = ?", (time.time() - days_ago * 86400, sid))
        index.conn.commit()


def test_prune_deletes_sessions_last_used_before_the_age(cli: Cli, trace: AgentTrace, acpcli_home: Path) -> None:
    old, recent = _two_sessions(cli, trace)
    _last_used(old, 45)
    shown = cli.show(recent)
    listed = cli.ok("sessions", "prune", "--older-than", "30d", "--dry-run")
    assert old in listed.stderr and recent not in listed.stderr
    assert "1 session would be deleted" in listed.stderr and listed.stdout == ""
    assert {r["id"] for r in cli.index()} == {old, recent}  # a dry run deletes nothing
    done = cli.ok("sessions", "prune", "--older-than", "30d")
    assert done.stderr.strip() == "deleted 1 session"
    assert [r["id"] for r in cli.index()] == [recent]
    assert _event_rows(old) == 0 and not (acpcli_home / "demo-agent" / "sessions" / f"{old}.json").exists()
    assert cli.show(recent) == shown  # what is left reads exactly as before
    again = cli.ok("sessions", "prune", "--older-than", "30d")
    assert "nothing to delete" in again.stderr
    trace.assert_all_gone()


def test_prune_inputs_are_checked_before_anything_is_deleted(cli: Cli, trace: AgentTrace) -> None:
    old, recent = _two_sessions(cli, trace)
    _last_used(old, 45)
    assert "--older-than" in error_line(cli.run("sessions", "prune"), ExitCode.USAGE)
    assert "--older-than" in error_line(cli.run("sessions", "prune", "--older-than", "soon"), ExitCode.USAGE)
    assert "no session ids" in error_line(cli.run("sessions", "prune", old, "--older-than", "1d"), ExitCode.USAGE)
    assert "prune" in error_line(cli.run("sessions", "--dry-run"), ExitCode.USAGE)
    assert {r["id"] for r in cli.index()} == {old, recent}


def test_prune_on_a_terminal_lists_and_asks_first(cli: Cli, trace: AgentTrace, spawn) -> None:  # type: ignore[no-untyped-def]
    old, recent = _two_sessions(cli, trace)
    _last_used(old, 45)
    pty = spawn("sessions", "prune", "--older-than", "2w")
    pty.expect(r"Delete the local records of this session\? \[y/N\] ")
    assert old in pty.seen and recent not in pty.seen
    pty.child.send("n\r")
    pty.expect("nothing deleted")
    assert pty.wait() == 0
    assert {r["id"] for r in cli.index()} == {old, recent}
