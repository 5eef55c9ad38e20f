"""``acpcli checkpoints``, ``acpcli diff`` and ``acpcli rewind`` through the real program: the
checkpoints are taken here (as the session layer will, around turns) of a session recorded in
the index; the commands run in subprocesses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from acpcli.history.index import Index
from acpcli.history.lock import SessionLock
from acpcli.worktree import Checkpoints
from tests.cli.conftest import Cli, error_line
from tests.helpers.records import rec
from tests.helpers.trees import tree_state

SID = "demo-0123456789abcdef0123456789abcdef"


@pytest.fixture
def session(index: Index, workdir: Path) -> Checkpoints:
    """A recorded session in ``workdir`` with three turns: edits, a new file with a control
    sequence in it, a deletion."""
    index.upsert_session(rec(SID, cwd=str(workdir)))
    (workdir / "main.py").write_text("print('one')\nprint('two')\n")
    (workdir / "old.txt").write_text("old\n")
    cps = Checkpoints(SID, [workdir])
    cps.take(0, "")
    (workdir / "main.py").write_text("print('one')\nprint('2')\nprint('three')\n")
    cps.take(1, "fix the prints\nplease")
    (workdir / "evil.txt").write_text("\x1b]2;owned\x07title\n")
    cps.take(2, "add \x1b[31mevil\x1b[0m file")
    (workdir / "old.txt").unlink()
    cps.take(3, "drop old.txt")
    return cps


def test_checkpoints_lists_the_turns_with_their_files_and_lines(cli: Cli, session: Checkpoints) -> None:
    out = cli.ok("checkpoints", SID[:12]).stdout
    lines = out.splitlines()
    assert lines[0].split() == ["TURN", "WHEN", "FILES", "PROMPT"]
    assert lines[1].split()[0] == "0" and lines[1].endswith("(before the first turn)")
    assert lines[2].split()[0] == "1" and "1 (+2 -1)" in lines[2] and lines[2].endswith("fix the prints")
    assert lines[4].split()[0] == "3" and "1 (+0 -1)" in lines[4]
    assert "\x1b" not in out and "^[[31mevil" in lines[3]
    rows = [json.loads(line) for line in cli.ok("checkpoints", SID, "--json").stdout.splitlines()]
    assert [r["turn"] for r in rows] == [0, 1, 2, 3]
    assert rows[1]["files"] == [{"path": "main.py", "status": "M", "added": 2, "removed": 1}]
    assert rows[3]["files"] == [{"path": "old.txt", "status": "D", "added": 0, "removed": 1}]
    assert rows[1]["prompt"] == "fix the prints" and rows[1]["time"].endswith("Z")


def test_diff_shows_a_turn_and_defaults_to_the_last(cli: Cli, session: Checkpoints) -> None:
    one = cli.ok("diff", SID, "1").stdout
    assert "--- a/main.py\n+++ b/main.py\n" in one and "-print('two')\n+print('2')\n+print('three')\n" in one
    assert "\x1b" not in one  # not a terminal: no colour
    assert cli.ok("diff", SID).stdout == cli.ok("diff", SID, "3").stdout
    assert "-old\n" in cli.ok("diff", SID).stdout
    evil = cli.ok("diff", SID, "2").stdout
    assert "\x1b" not in evil and "+^[]2;owned^Gtitle" in evil  # the file's bytes shown, not obeyed
    assert cli.ok("diff", SID, "2", "--name-only").stdout == "evil.txt\n"
    assert "1 file changed" in cli.ok("diff", SID, "1", "--stat").stdout
    assert "no checkpoint of turn 9" in error_line(cli.run("diff", SID, "9"), ExitCode.USAGE)
    assert "no session" in error_line(cli.run("diff", "nosuch"), ExitCode.SESSION_NOT_FOUND)


def test_rewind_dry_run_then_rewind_then_undo(cli: Cli, session: Checkpoints, workdir: Path) -> None:
    before_2 = tree_state(workdir)
    before_2.pop(b"evil.txt")
    before_2[b"old.txt"] = ("file", False, b"old\n")
    now = tree_state(workdir)
    dry = cli.ok("rewind", SID, "--to", "2", "--files", "--dry-run")
    assert sorted(dry.stdout.splitlines()) == ["remove   evil.txt", "restore  old.txt"]
    assert "dry run: nothing changed" in dry.stderr and tree_state(workdir) == now
    done = cli.ok("rewind", SID, "--to", "2", "--files")
    assert sorted(done.stdout.splitlines()) == ["remove   evil.txt", "restore  old.txt"]
    assert "rewound 2 files to before turn 2" in done.stderr and f"rewind {SID} --undo` puts them back" in done.stderr
    assert tree_state(workdir) == before_2
    cli.ok("rewind", SID, "--undo", "--files")
    assert tree_state(workdir) == now
    again = cli.ok("rewind", SID, "--to", "4", "--files")  # before turn 4 = after turn 3: as now
    assert again.stdout == "" and "nothing to change" in again.stderr


def test_rewind_refuses_hand_edits_naming_them_unless_forced(cli: Cli, session: Checkpoints, workdir: Path) -> None:
    (workdir / "main.py").write_text("my own edit\n")
    text = error_line(cli.run("rewind", SID, "--to", "1", "--files"), ExitCode.USAGE)
    assert "changed by hand since the last checkpoint: main.py" in text
    assert (workdir / "main.py").read_text() == "my own edit\n"
    dry = cli.ok("rewind", SID, "--to", "1", "--files", "--dry-run").stdout
    assert "restore  main.py  (changed by hand since the last checkpoint)" in dry
    cli.ok("rewind", SID, "--to", "1", "--files", "--force")
    assert (workdir / "main.py").read_text() == "print('one')\nprint('two')\n"
    cli.ok("rewind", SID, "--undo", "--files")
    assert (workdir / "main.py").read_text() == "my own edit\n"


def test_rewind_usage_errors_and_a_busy_session(cli: Cli, session: Checkpoints, workdir: Path) -> None:
    assert "--to TURN, or --undo" in error_line(cli.run("rewind", SID, "--files"), ExitCode.USAGE)
    assert "--to TURN, or --undo" in error_line(cli.run("rewind", SID, "--to", "1", "--undo", "--files"), ExitCode.USAGE)
    # the conversation too (no --files): this record has no turn to rewind to
    assert "has 0 turns" in error_line(cli.run("rewind", SID, "--to", "2"), ExitCode.USAGE)
    assert "--undo puts files back" in error_line(cli.run("rewind", SID, "--undo", "--conversation"), ExitCode.USAGE)
    assert "has no rewind to undo" in error_line(cli.run("rewind", SID, "--undo", "--files"), ExitCode.USAGE)
    assert "1 or more" in error_line(cli.run("rewind", SID, "--to", "0", "--files"), ExitCode.USAGE)
    assert "no checkpoint of turn 6" in error_line(cli.run("rewind", SID, "--to", "7", "--files"), ExitCode.USAGE)
    turn = SessionLock(SID)
    assert turn.try_acquire()
    try:
        assert "is busy" in error_line(cli.run("rewind", SID, "--to", "1", "--files"), ExitCode.BUSY)
    finally:
        turn.release()
    assert tree_state(workdir)[b"evil.txt"]  # nothing was touched


def test_a_session_without_checkpoints(cli: Cli, index: Index, workdir: Path) -> None:
    index.upsert_session(rec("demo-ffff", cwd=str(workdir)))
    proc = cli.ok("checkpoints", "demo-ffff")
    assert proc.stdout == "" and "has no checkpoints" in proc.stderr
    assert cli.ok("checkpoints", "demo-ffff", "--json").stdout == ""
    assert "no turn with a checkpoint" in error_line(cli.run("diff", "demo-ffff"), ExitCode.USAGE)


def test_without_git_the_commands_say_checkpoints_are_off(cli: Cli, session: Checkpoints, tmp_path: Path) -> None:
    empty = tmp_path / "nogit"
    empty.mkdir()
    proc = cli.run("diff", SID, env={"PATH": str(empty)})
    assert error_line(proc, ExitCode.CONFIG) == "checkpoints are off: git is not on PATH"
    assert os.environ.get("PATH")  # the test's own PATH is untouched


def test_on_a_terminal_rewind_asks_first_and_diff_is_coloured(spawn, session: Checkpoints, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    now = tree_state(workdir)
    pty = spawn("rewind", SID, "--to", "2", "--files")
    pty.expect(r"Rewind these 2 files\? \[y/N\] ")
    pty.child.send("n\r")
    pty.expect("nothing changed")
    assert pty.wait() == 0 and tree_state(workdir) == now
    pty = spawn("rewind", SID, "--to", "2", "--files")
    pty.expect(r"\[y/N\] ")
    pty.child.send("y\r")
    pty.expect("rewound 2 files")
    assert pty.wait() == 0 and not (workdir / "evil.txt").exists()
    pty = spawn("diff", SID, "1")
    pty.expect(r"\x1b\[32m\+print\('three'\)\x1b\[0m")
    assert pty.wait() == 0


def test_a_turn_that_is_not_a_number_is_a_usage_error(cli: Cli, session: Checkpoints) -> None:
    assert "TURN must be a turn number" in error_line(cli.run("diff", SID, "two"), ExitCode.USAGE)
    assert "--to must be a turn number" in error_line(cli.run("rewind", SID, "--to", "-1", "--files"), ExitCode.USAGE)
