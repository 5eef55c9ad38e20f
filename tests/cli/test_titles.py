"""Every session has a useful title in ``acpcli sessions``: the agent's, else the first line of
its first prompt (``"titleSource": "prompt"`` in --json), stored on the first turn."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from acpcli.errors import ExitCode
from acpcli.history.index import Index

from .conftest import AgentTrace, Cli
from .pty import CTRL_C, Pty


def _listed(cli: Cli, sid: str) -> dict[str, object]:
    rows = [json.loads(line) for line in cli.ok("sessions", "--json", "--all").stdout.splitlines()]
    return next(r for r in rows if r["id"] == sid)


def test_an_untitled_session_is_titled_by_its_first_prompt(cli: Cli, trace: AgentTrace) -> None:
    cmd = trace.record_cmd("--resume")
    sid = cli.new(cmd)
    assert _listed(cli, sid)["title"] is None and _listed(cli, sid)["titleSource"] is None
    cli.ok("prompt", "--session", sid, "--cmd", cmd, "\n  Fix   the login bug\nand then the logout one")
    row = _listed(cli, sid)
    assert (row["title"], row["titleSource"]) == ("Fix the login bug", "prompt")
    cli.ok("prompt", "--session", sid, "--cmd", cmd, "something else")  # the first prompt's stays
    assert _listed(cli, sid)["title"] == "Fix the login bug"
    piped = cli.ok("sessions").stdout
    assert f"{sid}\t" in piped and "\tFix the login bug\t" in piped
    table = cli.ok("sessions", env={"FORCE_COLOR": "1"}).stdout
    assert "Fix the login bug" in table


def test_the_agents_title_wins_and_the_prompt_one_is_kept_behind_it(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd())
    cli.ok("prompt", "--session", sid, "Summarize the README please\nin three lines")
    row = _listed(cli, sid)
    assert row["titleSource"] == "agent" and row["title"]  # the demo agent titles a session
    with Index() as index:
        assert index.get(sid).prompt_title == "Summarize the README please"
        index.set_title(sid, None)
    row = _listed(cli, sid)
    assert (row["title"], row["titleSource"]) == ("Summarize the README please", "prompt")


def test_a_title_given_with_title_stays_whatever_the_agent_says(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd(), "--title", "My own title")
    assert (_listed(cli, sid)["title"], _listed(cli, sid)["titleSource"]) == ("My own title", "user")
    cli.ok("prompt", "--session", sid, "Summarize the README please")  # the demo agent titles sessions
    assert (_listed(cli, sid)["title"], _listed(cli, sid)["titleSource"]) == ("My own title", "user")
    other = cli.new(trace.demo_cmd())
    cli.ok("prompt", "--session", other, "Summarize the README please")
    assert _listed(cli, other)["titleSource"] == "agent"  # the same turn titles an untitled session


def test_listing_an_index_an_older_acpcli_wrote_migrates_it_first(cli: Cli, trace: AgentTrace) -> None:
    import sqlite3

    from acpcli.history.index import MIGRATIONS
    from acpcli.paths import db_path

    sid = cli.new(trace.demo_cmd())
    cli.ok("prompt", "--session", sid, "Tidy the changelog\nplease")
    conn = sqlite3.connect(db_path(), isolation_level=None)
    for statement in (  # as acpcli left it at schema 5: no prompt titles, no search
        "DROP TABLE search_fts", "DROP TABLE search_docs", "ALTER TABLE sessions DROP COLUMN search_seq",
        "ALTER TABLE sessions DROP COLUMN title_source", "ALTER TABLE sessions DROP COLUMN prompt_title",
        "ALTER TABLE sessions DROP COLUMN usage", "ALTER TABLE sessions DROP COLUMN parent_id", "UPDATE sessions SET title = NULL", "PRAGMA user_version = 5",
    ):
        conn.execute(statement)
    conn.close()
    row = _listed(cli, sid)
    assert (row["title"], row["titleSource"]) == ("Tidy the changelog", "prompt")  # migration 6 ran
    conn = sqlite3.connect(db_path())
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    conn.close()
    assert cli.ok("search", "changelog").stdout.splitlines()[1].startswith(sid)


QUIRKS = Path(__file__).resolve().parent.parent / "peers" / "sdk_quirks_agent.py"
QUIRKS_CMD = shlex.join([sys.executable, str(QUIRKS)])  # an agent that never titles a session


def test_a_session_whose_first_prompt_failed_is_titled_by_it(cli: Cli) -> None:
    proc = cli.run("prompt", "--cmd", QUIRKS_CMD, "please fail now\nsecond line")
    assert proc.returncode == ExitCode.AGENT_ERROR, proc.stderr
    (row,) = [
        json.loads(line) for line in cli.ok("sessions", "--json", "--all").stdout.splitlines()
    ]
    assert (row["title"], row["titleSource"]) == ("please fail now", "prompt")


def test_the_toolbar_shows_the_title_sessions_shows(spawn, cli: Cli) -> None:  # type: ignore[no-untyped-def]
    pty: Pty = spawn("new", "--cmd", QUIRKS_CMD)
    pty.prompt()
    pty.expect("untitled")  # nothing said yet
    pty.say("Fix the login bug")
    pty.expect("you said: Fix the login bug")
    pty.prompt()
    pty.expect(r"sdk-quirks · Fix the login bug · idle")  # the toolbar, as `sessions` has it
    pty.say(
        "please fail this one"
    )  # the agent answers an error: the title stays the first prompt's
    pty.expect("the agent answered an error")
    pty.prompt()
    pty.expect(r"sdk-quirks · Fix the login bug · idle")
    pty.child.send(CTRL_C)  # the line that failed came back for editing: clear it
    status, sid = pty.leave()
    assert status == ExitCode.OK
    assert _listed(cli, sid)["title"] == "Fix the login bug"


def test_the_toolbar_titles_a_session_whose_first_prompt_failed(spawn, cli: Cli) -> None:  # type: ignore[no-untyped-def]
    pty: Pty = spawn("new", "--cmd", QUIRKS_CMD)
    pty.prompt()
    pty.say("please fail at once")
    pty.expect("the agent answered an error")
    pty.prompt()
    pty.expect(r"sdk-quirks · please fail at once · idle")
    pty.child.send(CTRL_C)  # the line that failed came back for editing: clear it
    status, sid = pty.leave()
    assert status == ExitCode.OK
    assert (_listed(cli, sid)["title"], _listed(cli, sid)["titleSource"]) == (
        "please fail at once",
        "prompt",
    )
