"""``acpcli load`` / ``acpcli resume`` without a session id (issue 32): on a terminal a picker
of the recent sessions, this directory's first (title, agent, when; sessions never prompted
are not offered); Enter loads or resumes the one picked, Escape leaves (exit 0) with nothing
started. Without a terminal: one usage error naming what to pass. Run hosted and unhosted
(the ``repl_mode`` fixture)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import ExitCode
from acpcli.history.index import Index
from tests.helpers.records import rec

from .conftest import Cli, error_line
from .pty import CHOICE, DOWN, PROMPT, Pty
from .screen import Screen

ESC = "\x1b"


def _prompted(cli: Cli, text: str, *args: str) -> str:
    """A session made and prompted by one ``prompt`` (its agent knows it: it can be loaded)."""
    cli.ok("prompt", "--cmd", cli.trace.demo_cmd(), "--keep-alive", "0", *args, text)
    with Index() as index:
        return index.list_sessions(limit=1)[0].id


@pytest.fixture
def planted(cli: Cli, tmp_path: Path) -> dict[str, str]:
    """Sessions to pick from, oldest first: two prompted here, one prompted in another
    directory (the newest prompted), one here never prompted (the newest of all). Those the
    tests load or resume are made by the CLI; the others are planted in the index."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sessions = {"older here": _prompted(cli, "older here\nsecond line")}
    with Index() as index:
        index.upsert_session(rec("demo-newer-here", cwd=str(cli.cwd.resolve())))
        index.set_prompt_title("demo-newer-here", "newer here")
    sessions["newer here"] = "demo-newer-here"
    sessions["over there"] = _prompted(cli, "over there", "--cwd", str(elsewhere))
    with Index() as index:
        index.upsert_session(rec("demo-never-prompted", cwd=str(cli.cwd.resolve())))
    sessions["never prompted"] = "demo-never-prompted"
    return sessions


def _options(pty: Pty) -> list[str]:
    """The option rows of the picker on the emulated screen, in order."""
    screen = Screen(pty.width, pty.height).feed(pty.seen).text()
    question = screen.rindex("choose 1-")
    return [line.strip() for line in screen[question:].splitlines() if line.strip()[:1] in "›123456789"][: 9]


def test_load_without_an_id_picks_from_this_directory_first(
    spawn: Any, cli: Cli, planted: dict[str, str], repl_mode: list[str]
) -> None:
    pty = spawn("load", *repl_mode, width=80)
    pty.expect(CHOICE)
    assert pty.child.match.group(1) == "3", pty.seen[-2000:]  # never prompted: not offered
    pty.expect("over there.*elsewhere")  # (the rows come under the hint line)
    rows = _options(pty)
    assert [row.split(". ", 1)[1].split("  ")[0] for row in rows] == ["newer here", "older here", "over there"], rows
    assert all(row.endswith(("demo · just now", "demo agent · just now", "· …/elsewhere")) for row in rows), rows
    assert "  acpcli demo agent · just now" in rows[1]  # the agent as a person knows it (its title), when
    assert "elsewhere" in rows[2] and "elsewhere" not in rows[0] + rows[1], rows  # another directory says which
    assert all(len(row) <= 80 - 3 for row in rows)
    pty.child.send(DOWN + "\r")  # the second: the older one here
    pty.expect(f"loading {planted['older here'][:12]}")
    pty.expect("older here")  # the replayed conversation
    pty.prompt()
    code, sid = pty.leave()
    assert code == ExitCode.OK and planted["older here"].startswith(sid), pty.seen[-2000:]


def test_resume_without_an_id_picks_by_typing_to_filter(
    spawn: Any, cli: Cli, planted: dict[str, str], repl_mode: list[str]
) -> None:
    pty = spawn("resume", *repl_mode, width=60)
    pty.expect(CHOICE)
    pty.expect("over there.*elsewhere")
    rows = _options(pty)  # narrow: the titles whole, where and when kept, the agent's name cut first
    assert [row.split(". ", 1)[1].split("  ")[0] for row in rows] == ["newer here", "older here", "over there"], rows
    assert all(len(row) <= 60 - 3 and "just now" in row for row in rows), rows
    assert rows[2].endswith("· just now · …/elsewhere") and "acpcli demo agent" not in rows[2], rows
    pty.child.send("THERE")  # case-insensitive, anywhere in the line
    pty.expect(r"THERE[\s\S]*?3\. over there")
    assert "filter: THERE  (1 of 3)" in Screen(pty.width, pty.height).feed(pty.seen).text()
    pty.child.send("\r")
    pty.expect(f"resuming {planted['over there'][:12]}")
    pty.expect(PROMPT)
    code, sid = pty.leave()
    assert code == ExitCode.OK and planted["over there"].startswith(sid), pty.seen[-2000:]


def test_escape_leaves_with_nothing_started(spawn: Any, cli: Cli, planted: dict[str, str], repl_mode: list[str]) -> None:
    agents = len(cli.trace.pids())
    for command in ("load", "resume"):
        pty = spawn(command, *repl_mode)
        pty.expect(CHOICE)
        pty.child.send(ESC)
        assert pty.wait() == ExitCode.OK
        assert f"no session chosen: nothing to {command}" in pty.seen, pty.seen[-2000:]
    assert len(cli.trace.pids()) == agents  # no agent was started
    assert cli.ok("sessions", "--live").stdout.strip() == ""  # nor a host


def test_without_a_terminal_the_id_is_needed(cli: Cli, planted: dict[str, str]) -> None:
    for command in ("load", "resume"):
        line = error_line(cli.run(command), ExitCode.USAGE)
        assert line == f"{command} needs a SESSION_ID here (no terminal to pick one on)"
    assert error_line(cli.run("load", "--no-repl"), ExitCode.USAGE).startswith("load needs a SESSION_ID")


def test_nothing_to_pick_is_said_on_a_terminal(spawn: Any, cli: Cli) -> None:
    with Index() as index:
        index.upsert_session(rec("demo-never-prompted", cwd=str(cli.cwd)))  # nothing to offer
    pty = spawn("load")
    assert pty.wait() == ExitCode.USAGE
    assert "acpcli: error: no session to load: none was prompted yet" in pty.seen, pty.seen
