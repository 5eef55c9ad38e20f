"""Stored transcripts through the real program: every prompt acpcli sends is its own user
message (also when a turn failed before the agent said anything, and the agent uses no
messageIds), and ``export`` gives the same messages before and after ``acpcli load`` although
the agent's replay glues the two prompts together (as codex does).

``load`` (printed, or drawn in a pseudo-terminal) shows what ``show`` shows, not the agent's
raw replay.

Peers: ``tests/peers/sdk_forgetful_agent.py`` (official SDK, v1, no messageIds) and
``tests/peers/sdk_replay_agent.py`` (claude's and gemini's replay shapes). The merge rules
themselves are unit-tested in ``tests/history/test_replay_merge.py``.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import Cli
from .pty import CTRL_D
from .screen import screen_text
from .test_forgetful_agents import forgetful


@pytest.fixture
def state(tmp_path: Path) -> dict[str, str]:
    return {"FORGETFUL_STATE": str(tmp_path / "forgetful.json")}


def test_a_failed_turn_and_the_next_prompt_stay_two_messages_across_a_load(cli: Cli, state: dict[str, str]) -> None:
    cmd = forgetful("codex")
    sid = cli.ok("new", "--no-repl", "--cmd", cmd, env=state).stdout.strip()
    assert cli.run("prompt", "--session", sid, "fail", env=state).returncode == ExitCode.AGENT_ERROR
    cli.ok("prompt", "--session", sid, "hello", env=state)
    before = cli.ok("export", sid, "--format", "jsonl").stdout
    users = [json.loads(line) for line in before.splitlines() if '"user"' in line]
    texts = [json.dumps(u) for u in users]
    assert len(users) == 2 and "fail" in texts[0] and "hello" in texts[1] and "failhello" not in before
    cli.ok("load", sid, "--no-repl", env=state)  # the agent replays "fail" and "hello" glued
    assert cli.ok("export", sid, "--format", "jsonl").stdout == before
    markdown = cli.ok("export", sid, "--format", "markdown").stdout
    assert markdown.count("## User\n\nfail\n") == 1  # the prompt once (and its turn's failure marked)
    assert markdown.count("[turn failed: ") == 1


# -- what a load shows: the record, not the agent's raw replay --------------------------------
#
# Peer: ``tests/peers/sdk_replay_agent.py``, which replays in exactly the shapes claude and
# gemini do: claude's ``/model`` artefacts glued to each prompt, gemini's ``<session_context>``
# glued to the first one and each tool result echoed as a user message.

REPLAY_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_replay_agent.py"
RAW_REPLAY_MARKS = ("command-name", "local-command-stdout", "session_context", "Function Response")
HELLO = "Hello from the fake model. This is a streamed answer."
DONE = "The README says hello. All done."


@pytest.fixture
def replaying(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> tuple[str, str]:
    """A session with two turns ("hello alpha", then one that runs the shell) made through
    the replay agent in the style of the test's ``style`` parameter: ``(cmd, session id)``."""
    monkeypatch.setenv("REPLAY_STATE", str(tmp_path / "replay-agent.json"))  # for the pty's acpcli too
    cmd = shlex.join([sys.executable, str(REPLAY_AGENT), "--style", request.param])
    cli.ok("prompt", "--cmd", cmd, "hello alpha")
    (row,) = cli.index()
    cli.ok("prompt", "--session", row["id"], "now run the shell")
    return cmd, row["id"]


def _no_raw_replay(text: str) -> None:
    assert not any(mark in text for mark in RAW_REPLAY_MARKS), text
    assert text.count("hello alpha") == 1 and text.count(HELLO) == 1 and text.count(DONE) == 1, text


@pytest.mark.parametrize("replaying", ["claude", "gemini"], indirect=True)
def test_load_prints_the_record_as_show_does(cli: Cli, replaying: tuple[str, str]) -> None:
    cmd, sid = replaying
    before = cli.ok("export", sid, "--format", "jsonl").stdout
    shown = cli.show(sid)
    loaded = cli.ok("load", sid, "--no-repl", "--cmd", cmd).stdout
    assert loaded == shown, loaded
    _no_raw_replay(loaded)
    assert cli.ok("export", sid, "--format", "jsonl").stdout == before  # no echo became a user message
    assert cli.show(sid) == shown


@pytest.mark.parametrize("replaying", ["claude", "gemini"], indirect=True)
def test_interactive_load_draws_the_record_as_show_does(spawn, cli: Cli, replaying: tuple[str, str]) -> None:  # type: ignore[no-untyped-def]
    cmd, sid = replaying
    before = cli.ok("export", sid, "--format", "jsonl").stdout
    pty = spawn("load", sid, "--cmd", cmd)
    pty.prompt()
    screen = screen_text(pty.seen)
    _no_raw_replay(screen)
    assert screen.index(f"session {sid} with") < screen.index("› hello alpha") < screen.index(HELLO), screen
    assert screen.index(HELLO) < screen.index("› now run the shell") < screen.index(DONE), screen
    pty.child.send(CTRL_D)
    assert pty.wait() == ExitCode.OK
    assert cli.ok("export", sid, "--format", "jsonl").stdout == before


# -- loading again stores nothing the record holds already -----------------------------------


def _stored(cli: Cli, sid: str) -> tuple[int, int, int]:
    """The session's events and their bytes in the event log, and the database's size."""
    import sqlite3
    from contextlib import closing

    db = cli.home / "acpcli.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # what the commands wrote, in the file
        events, size = conn.execute(
            "SELECT COALESCE(SUM(count), 0), COALESCE(SUM(length(payloads)), 0) FROM event_pages WHERE session_id = ?",
            (sid,),
        ).fetchone()
    return int(events), int(size), db.stat().st_size


def _stored_after(cli: Cli, sid: str, events: int) -> str:
    """The payloads of the session's events after the first ``events``, as one text."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(cli.home / "acpcli.db")) as conn:
        rows = conn.execute("SELECT first_seq, payloads FROM event_pages WHERE session_id = ? ORDER BY first_seq", (sid,))
        return "".join(payloads for first, payloads in rows if first > events)


def test_loading_a_demo_session_again_and_again_stores_it_once(cli: Cli) -> None:
    cmd = cli.trace.demo_cmd()
    sid = cli.new(cmd)
    cli.ok("prompt", "--session", sid, "hello no-permission", "--cmd", cmd)
    first = cli.ok("load", sid, "--no-repl", "--cmd", cmd).stdout
    stored, shown = _stored(cli, sid), cli.show(sid)
    for _ in range(4):
        assert cli.ok("load", sid, "--no-repl", "--cmd", cmd).stdout == first
        assert _stored(cli, sid) == stored
    assert cli.show(sid) == shown


@pytest.mark.parametrize("replaying", ["claude", "gemini"], indirect=True)
def test_loading_a_replaying_agents_session_again_stores_nothing(cli: Cli, replaying: tuple[str, str]) -> None:
    cmd, sid = replaying
    cli.ok("load", sid, "--no-repl", "--cmd", cmd)
    stored, shown = _stored(cli, sid), cli.show(sid)
    for _ in range(3):
        cli.ok("load", sid, "--no-repl", "--cmd", cmd)
        assert _stored(cli, sid) == stored
    assert cli.show(sid) == shown


@pytest.mark.parametrize("replaying", ["gemini"], indirect=True)
def test_a_replay_with_a_turn_more_stores_that_turn(cli: Cli, replaying: tuple[str, str], tmp_path: Path) -> None:
    # (claude's replayed turns start with its slash-command artefacts: never added)
    cmd, sid = replaying
    cli.ok("load", sid, "--no-repl", "--cmd", cmd)
    stored = _stored(cli, sid)
    # Another client had a turn: the agent replays one more than the record holds.
    state = tmp_path / "replay-agent.json"
    turns = json.loads(state.read_text())
    turns[sid].append({"prompt": "a turn from elsewhere", "shell": False})
    state.write_text(json.dumps(turns))
    loaded = cli.ok("load", sid, "--no-repl", "--cmd", cmd).stdout
    assert loaded.count("a turn from elsewhere") == 1, loaded
    new = _stored_after(cli, sid, stored[0])
    assert "a turn from elsewhere" in new and "hello alpha" not in new  # what is new, not all again
    more, shown = _stored(cli, sid), cli.show(sid)
    assert more[0] > stored[0] and shown.count("a turn from elsewhere") == 1, shown
    cli.ok("load", sid, "--no-repl", "--cmd", cmd)
    assert _stored(cli, sid) == more and cli.show(sid) == shown
