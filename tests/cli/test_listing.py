"""``acpcli sessions`` as a person and a script see it: the most recent 20 by default, a note on
stderr saying how many more, --limit / --all / --state / --since / --agent / --cwd."""

from __future__ import annotations

import json
import time
from typing import Any

from acpcli.errors import ExitCode
from acpcli.history.index import Index
from tests.helpers.records import rec

from .conftest import AgentTrace, Cli, error_line


def _plant(
    n: int, *, closed: int = 0, agent: str = "demo", cwd: str = "/work", start: float | None = None,
    prompted: bool = True,
) -> list[str]:
    """``n`` sessions (the last ``closed`` of them closed), newest first in the returned ids;
    each prompted once (its first prompt titles it) unless not ``prompted``."""
    base = time.time() - 10_000 if start is None else start
    made = []
    with Index() as index:
        for i in range(n):
            sid = f"{agent}-{'' if prompted else 'unprompted-'}{i:05d}"
            index.upsert_session(rec(sid, agent=agent, cwd=cwd, last_used_at=base + i,
                                     state="closed" if i >= n - closed else "active"))
            if prompted:
                index.set_prompt_title(sid, f"prompt number {i}\nand more")
            made.append(sid)
    return made[::-1]


def _json_ids(cli: Cli, *args: str) -> tuple[list[str], str]:
    proc = cli.ok("sessions", "--json", *args)
    return [json.loads(line)["id"] for line in proc.stdout.splitlines()], proc.stderr


def test_the_most_recent_20_and_a_note_of_the_rest(cli: Cli) -> None:
    newest = _plant(25)
    shown, note = _json_ids(cli)
    assert shown == newest[:20]
    assert note.strip() == ("5 more sessions not shown — --limit N shows N (0 for no limit), "
                            "--all shows every session (closed ones too)")
    piped = cli.ok("sessions")
    lines = piped.stdout.splitlines()
    assert lines[0].startswith("ID\t") and [line.split("\t")[0] for line in lines[1:]] == newest[:20]
    assert "5 more sessions" in piped.stderr
    three, note = _json_ids(cli, "--limit", "3")
    assert three == newest[:3] and note.startswith("22 more sessions not shown")
    assert _json_ids(cli, "--limit", "0") == (newest, "")
    assert _json_ids(cli, "--limit", "25") == (newest, "")  # exactly all: nothing more to say


def test_all_includes_closed_and_lifts_the_limit(cli: Cli) -> None:
    newest = _plant(30, closed=4)
    closed, active = newest[:4], newest[4:]
    assert _json_ids(cli)[0] == active[:20]
    assert _json_ids(cli, "--all") == (newest, "")
    assert _json_ids(cli, "--all", "--limit", "5")[0] == newest[:5]
    assert _json_ids(cli, "--state", "closed") == (closed, "")
    assert _json_ids(cli, "--state", "any", "--limit", "0") == (newest, "")
    assert _json_ids(cli, "--all", "--state", "active") == (active, "")  # an explicit --state wins


def test_filters_by_agent_cwd_and_since(cli: Cli) -> None:
    now = time.time()
    old = _plant(3, agent="codex", cwd=str(cli.cwd), start=now - 30 * 86400)
    recent = _plant(2, agent="demo", start=now - 3600)
    assert _json_ids(cli, "--agent", "codex") == (old, "")
    assert _json_ids(cli, "--cwd", str(cli.cwd)) == (old, "")
    assert _json_ids(cli, "--since", "1d") == (recent, "")
    assert _json_ids(cli, "--since", "60d")[0] == recent + old
    day = time.strftime("%Y-%m-%d", time.localtime(now - 2 * 86400))
    assert _json_ids(cli, "--since", day) == (recent, "")
    nothing = cli.ok("sessions", "--agent", "nobody")
    assert nothing.stdout == "" and nothing.stderr.strip() == "no sessions match"


def test_sessions_never_prompted_are_counted_not_listed_until_all(cli: Cli, trace: AgentTrace) -> None:
    prompted = _plant(4, start=time.time() - 500)
    left = _plant(3, start=time.time() - 100, prompted=False)  # the newest: created and left
    _plant(1, agent="codex", start=time.time() - 50, prompted=False)
    shown, note = _json_ids(cli)
    assert shown == prompted
    assert note.strip() == "4 sessions never prompted not shown — --all shows them"
    piped = cli.ok("sessions")
    assert [line.split("\t")[0] for line in piped.stdout.splitlines()[1:]] == prompted
    assert "4 sessions never prompted not shown" in piped.stderr
    everything, note = _json_ids(cli, "--all")
    assert note == "" and set(everything) == set(prompted) | set(left) | {"codex-unprompted-00000"}
    assert _json_ids(cli, "--agent", "codex") == ([], "1 session never prompted not shown — --all shows it\n")
    assert _json_ids(cli, "--limit", "2") == (prompted[:2], (
        "4 sessions never prompted not shown — --all shows them\n"
        "2 more sessions not shown — --limit N shows N (0 for no limit), --all shows every session (closed ones too)\n"
    ))
    # Made through the CLI: a REPL-less `new` never prompted is hidden; once prompted, listed.
    made = cli.new(trace.demo_cmd())
    assert made not in _json_ids(cli)[0] and made in _json_ids(cli, "--all")[0]
    cli.ok("prompt", "--session", made, "--keep-alive", "0", "hello there")
    assert _json_ids(cli)[0][0] == made
    titled = cli.new(trace.demo_cmd(), "--title", "named, never prompted")  # a person named it: listed
    assert _json_ids(cli)[0][0] == titled


def test_bad_listing_options_are_usage_errors(cli: Cli) -> None:
    _plant(1)
    assert "--since" in error_line(cli.run("sessions", "--since", "lately"), ExitCode.USAGE)
    assert "--state" in error_line(cli.run("sessions", "--state", "open"), ExitCode.USAGE)
    for bad in ("-1", "many"):
        assert "--limit" in error_line(cli.run("sessions", "--limit", bad), ExitCode.USAGE)


def test_remote_listing_takes_limit_and_since(cli: Cli, trace: AgentTrace) -> None:
    cmd = trace.demo_cmd()
    first, second = cli.new(cmd), cli.new(cmd)
    for sid in (first, second):
        cli.ok("prompt", "--session", sid, "hello")
    every = cli.ok("sessions", "--remote", "--cmd", cmd, "--json").stdout.splitlines()
    assert {json.loads(line)["sessionId"] for line in every} >= {first, second}
    one = cli.ok("sessions", "--remote", "--cmd", cmd, "--json", "--limit", "1")
    assert len(one.stdout.splitlines()) == 1 and "more sessions not shown" in one.stderr
    assert cli.ok("sessions", "--remote", "--cmd", cmd, "--since", "2999-01-01").stdout == ""
    assert len(cli.ok("sessions", "--remote", "--cmd", cmd, "--since", "1d").stdout.splitlines()) == len(every)
    assert "--state" in error_line(cli.run("sessions", "--remote", "--cmd", cmd, "--state", "closed"), ExitCode.USAGE)


def test_a_long_agent_title_is_one_line_on_a_terminal_and_whole_in_a_pipe(cli: Cli, spawn: Any) -> None:
    title = "Refactor " + "the storage layer " * 2000 + "\nsecond line"
    with Index() as index:
        index.upsert_session(rec("long-title", agent="demo", cwd="/work"))
        index.set_title("long-title", title)
    pty = spawn("sessions")
    assert pty.wait() == 0
    rows = [line for line in pty.seen.splitlines() if line.startswith("long-tit")]  # the id's unique 8-character prefix
    assert len(rows) == 1 and "Refactor the storage" in rows[0] and "…" in rows[0], pty.seen
    assert "second line" not in pty.seen  # (cut long before it)
    assert json.loads(cli.ok("sessions", "--json").stdout)["title"] == title
