"""``acpcli search`` and ``show --grep`` through the real program: what a turn stored is
searchable at once, results and their formats, deleted sessions gone, bad input refused."""

from __future__ import annotations

import json
import time
from pathlib import Path

from acpcli.errors import ExitCode
from acpcli.history.index import Index

from .conftest import AgentTrace, Cli, error_line


def _sessions(cli: Cli, trace: AgentTrace) -> tuple[str, str]:
    cmd = trace.demo_cmd()
    one, two = cli.new(cmd), cli.new(cmd)
    cli.ok("prompt", "--session", one, "tell me about the axolotl")
    cli.ok("prompt", "--session", two, "and now the pangolin")
    cli.ok("prompt", "--session", one, "what about a pangolin, then?")
    return one, two


def test_a_turn_is_searchable_as_soon_as_it_ends(cli: Cli, trace: AgentTrace) -> None:
    one, two = _sessions(cli, trace)
    with Index() as index:  # indexed by the turns themselves, not by a search
        for sid in (one, two):
            (indexed,) = index.conn.execute("SELECT search_seq FROM sessions WHERE id = ?", (sid,)).fetchone()
            assert indexed == index.last_seq(sid) > 0
        texts = {t for (t,) in index.conn.execute("SELECT text FROM search_docs WHERE session_id = ?", (one,))}
    assert {"tell me about the axolotl", "what about a pangolin, then?"} <= texts
    proc = cli.ok("search", "axolotl")
    lines = proc.stdout.splitlines()
    assert lines[0] == "ID\tAGENT\tLAST_USED\tTITLE\tKIND\tMATCHES\tSNIPPET"
    assert [line.split("\t")[0] for line in lines[1:]] == [one]
    assert proc.stderr == ""
    found = [json.loads(line) for line in cli.ok("search", "pangolin", "--json").stdout.splitlines()]
    assert {f["id"] for f in found} == {one, two}
    assert found[0]["id"] == two  # the same best score: newest first
    first = found[0]
    assert set(first) >= {"id", "agent", "title", "cwd", "lastUsed", "kind", "snippet", "highlights", "matches"}
    start, end = first["highlights"][0]
    assert first["snippet"][start:end].lower() == "pangolin"
    assert "\x02" not in first["snippet"]


def test_show_grep_prints_only_the_matching_messages(cli: Cli, trace: AgentTrace) -> None:
    one, _ = _sessions(cli, trace)
    whole = cli.show(one)
    proc = cli.ok("show", one, "--grep", "axolotl")
    assert "tell me about the axolotl" in proc.stdout and "what about a pangolin" not in proc.stdout
    assert len(proc.stdout) < len(whole)
    assert proc.stderr.startswith("3 of ") and f"of {one} match 'axolotl'" in proc.stderr  # prompt, thought, reply
    none = cli.ok("show", one, "--grep", "wombat")
    assert none.stdout == "" and "nothing in" in none.stderr


def test_show_grep_takes_words_as_search_does(cli: Cli, trace: AgentTrace) -> None:
    """Every word, in any order, quoted or not: ``show --grep`` finds the messages ``search``
    finds the session by (issue 32)."""
    one, _ = _sessions(cli, trace)
    kept = lambda *grep: cli.ok("show", one, "--grep", *grep).stdout  # noqa: E731
    words = kept("pangolin", "then")  # two words: both in one message, not as a phrase
    assert "what about a pangolin, then?" in words and "axolotl" not in words
    assert kept("pangolin then") == kept("then", "pangolin") == kept("then pangolin") == words
    assert cli.ok("show", one, "then", "--grep", "pangolin").stdout == words  # (the words after the id go with it)
    both = cli.ok("show", one, "--grep", "axolotl", "pangolin")  # never in the same message
    assert both.stdout == "" and "nothing in" in both.stderr and "'axolotl pangolin'" in both.stderr
    found = [json.loads(line)["id"] for line in cli.ok("search", "pangolin", "then", "--json").stdout.splitlines()]
    assert found == [one]  # the same words find the session
    assert [json.loads(line)["id"] for line in cli.ok("search", "then pangolin", "--json").stdout.splitlines()] == [one]
    line = error_line(cli.run("show", one, "pangolin"), ExitCode.USAGE)  # a word without --grep: not a second id
    assert line == "show takes one SESSION_ID; words after it go with --grep"


def test_deleted_sessions_are_never_found(cli: Cli, trace: AgentTrace) -> None:
    one, two = _sessions(cli, trace)
    cli.ok("sessions", "rm", one)
    assert [json.loads(line)["id"] for line in cli.ok("search", "pangolin", "--json").stdout.splitlines()] == [two]
    gone = cli.ok("search", "axolotl")
    assert gone.stdout == "" and gone.stderr.strip() == "no session matches 'axolotl'"
    with Index() as index:
        (left,) = index.conn.execute("SELECT count(*) FROM search_docs WHERE session_id = ?", (one,)).fetchone()
    assert left == 0


def test_filters_and_limit(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    one, two = _sessions(cli, trace)
    with Index() as index:
        index.touch(one, time.time() - 10 * 86400)
    ids = lambda *args: [json.loads(x)["id"] for x in cli.ok("search", "pangolin", "--json", *args).stdout.splitlines()]  # noqa: E731
    assert ids("--since", "2d") == [two]
    agent = cli.index()[0]["agent"]
    assert ids("--agent", agent, "--limit", "1") == [two]
    limited = cli.ok("search", "pangolin", "--limit", "1")
    assert "more sessions match" in limited.stderr
    assert ids("--agent", "codex") == []
    assert ids("--cwd", str(tmp_path)) == []
    assert set(ids("--limit", "0")) == {one, two}


def test_bad_input_is_one_line_and_exit_2(cli: Cli, trace: AgentTrace) -> None:
    _sessions(cli, trace)
    for args, words in (
        (("search", "--", "-- *"), "nothing to search for"),
        (("search", "x", "--limit", "many"), "--limit must be a number"),
        (("search", "x", "--since", "yesterday"), "--since must be"),
        (("show", "demo-", "--grep", "*"), "nothing to search for"),
    ):
        assert words in error_line(cli.run(*args), ExitCode.USAGE), args
    missing = cli.run("search")  # click's own usage error, as for every command
    assert missing.returncode == ExitCode.USAGE and missing.stderr.splitlines()[0] == "acpcli: error: missing argument 'WORD'"


def test_the_first_search_indexes_old_sessions_with_progress_on_a_terminal(cli: Cli, trace: AgentTrace, spawn) -> None:  # type: ignore[no-untyped-def]
    one, _ = _sessions(cli, trace)
    with Index() as index:  # as an acpcli from before search left them: stored, never indexed
        for n in range(24):
            index.conn.execute(
                "INSERT INTO sessions (id, agent, cwd, created_at, last_used_at) VALUES (?, 'old', '/x', 0, 0)",
                (f"old-{n}",),
            )
            with index.writer() as writer:
                update = {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": f"archived gecko {n}"}}
                writer.append(f"old-{n}", "user_message_chunk", json.dumps(update))
        index.conn.execute("DELETE FROM search_docs")
        index.conn.execute("UPDATE sessions SET search_seq = 0")
    pty = spawn("search", "gecko", "--limit", "3")
    pty.expect("indexed 26 sessions for search")
    pty.expect("archived")
    assert pty.wait() == 0
    assert "indexing sessions for search" in pty.seen  # the progress bar was drawn
    assert "\x02" not in pty.seen and "\x03" not in pty.seen
    again = cli.ok("search", "gecko", "--limit", "0", "--json")
    assert len(again.stdout.splitlines()) == 24
    assert cli.ok("search", "axolotl").stdout.splitlines()[1].startswith(one)
