"""``/rewind`` without a turn in the REPL (issue 34), on a pseudo-terminal, hosted and not: a
picker of the turns (prompt line, files changed), a preview of the diff it undoes, then what to
restore: files, conversation or both. The conversation is a new session holding the turns
before the one picked; the REPL stays on its session."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Cli
from .pty import CTRL_C, CTRL_D, PROMPT

PICKER = "↑↓ or a number"


def _started(spawn, cli: Cli, repl_mode: list[str], names: list[str]):  # type: ignore[no-untyped-def]
    pty = spawn("new", *repl_mode, "--cmd", cli.trace.demo_cmd(protocol=1), width=250)
    pty.expect(PROMPT)
    for name in names:
        pty.say(f"no-permission write {name}")
        pty.expect("written with fs/write_text_file")
        pty.expect(PROMPT)
    return pty


def _sessions(cli: Cli) -> dict[str, dict[str, object]]:
    out = cli.ok("sessions", "--json", "--all").stdout
    return {str(r["id"]): r for r in (json.loads(line) for line in out.splitlines() if line.strip())}


def test_rewind_picks_a_turn_previews_it_and_restores_both(spawn, cli: Cli, workdir: Path, repl_mode: list[str]) -> None:  # type: ignore[no-untyped-def]
    pty = _started(spawn, cli, repl_mode, ["one.txt", "two.txt", "three.txt"])
    pty.say("/rewind")
    pty.expect("rewind to before which turn")
    pty.expect(PICKER)
    pty.expect("turn 2: no-permission write two.txt · 1 file \\(\\+4 -0\\): two.txt")
    pty.child.send("2")
    pty.child.send("\r")
    pty.expect("what turns 2-3 did to the files")
    pty.expect("three.txt")  # the diff preview: both turns' files
    pty.expect("restore what, as before turn 2")
    pty.expect(PICKER)
    pty.expect("files only")
    pty.child.send("1")  # files and conversation
    pty.child.send("\r")
    pty.expect("files as before turn 2")
    pty.expect("is a new session that starts from the transcript of turn 1")
    pty.expect("continue the new session with")
    pty.expect(PROMPT)
    assert sorted(p.name for p in workdir.iterdir()) == ["one.txt"]
    pty.child.send(CTRL_D)
    assert pty.wait() == 0
    sessions = _sessions(cli)
    (new,) = [sid for sid, row in sessions.items() if row.get("parent")]
    (old,) = [sid for sid in sessions if sid != new]
    assert sessions[new]["parent"] == old
    shown = cli.show(new)
    assert "write one.txt" in shown and "write two.txt" not in shown and "write three.txt" not in shown
    assert "write three.txt" in cli.show(old)


def test_rewind_files_only_or_nothing(spawn, cli: Cli, workdir: Path, repl_mode: list[str]) -> None:  # type: ignore[no-untyped-def]
    pty = _started(spawn, cli, repl_mode, ["a.txt", "b.txt"])
    pty.say("/rewind")
    pty.expect(PICKER)
    pty.expect("turn 2")
    pty.child.send(CTRL_C)  # dismissed: nothing changes
    pty.expect("nothing changed")
    pty.expect(PROMPT)
    pty.say("/rewind")
    pty.expect(PICKER)
    pty.expect("turn 2")
    pty.child.send("\r")  # the last turn is highlighted first
    pty.expect("what turn 2 did to the files")
    pty.expect("restore what, as before turn 2")
    pty.expect(PICKER)
    pty.expect("conversation only")
    pty.child.send("2")  # files only
    pty.child.send("\r")
    pty.expect("files as before turn 2")
    pty.expect(PROMPT)
    assert sorted(p.name for p in workdir.iterdir()) == ["a.txt"]
    pty.child.send(CTRL_D)
    assert pty.wait() == 0
    assert not [row for row in _sessions(cli).values() if row.get("parent")]  # no new session
