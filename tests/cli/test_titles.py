"""Every session has a useful title in ``acpcli sessions``: the agent's, else the first line of
its first prompt (``"titleSource": "prompt"`` in --json), stored on the first turn."""

from __future__ import annotations

import json

from acpcli.persistence import Index

from .conftest import AgentTrace, Cli


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

    from acpcli.paths import db_path
    from acpcli.persistence import MIGRATIONS

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
