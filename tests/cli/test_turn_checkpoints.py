"""Checkpoints around real turns (issue 34): a one-shot prompt, a live session's host and the
REPL take one before the session's first turn and one after each, of what the agent did to the
files; ``--no-checkpoints`` takes none. The agent writes through the client's ``fs`` methods
(the demo agent's ``write FILE``), as gemini does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Cli
from .pty import CTRL_D, PROMPT

MODES = {"hosted": "300", "unhosted": "0"}


@pytest.fixture(params=sorted(MODES))
def keep_alive(request: pytest.FixtureRequest, cli: Cli) -> object:
    yield MODES[request.param]
    cli.run("stop", "--all")


def _turns(cli: Cli, sid: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in cli.ok("checkpoints", sid, "--json").stdout.splitlines() if line.strip()]


def test_prompts_take_a_checkpoint_before_the_first_turn_and_after_each(cli: Cli, workdir: Path, keep_alive: str) -> None:
    env = {"ACPCLI_KEEP_ALIVE": keep_alive}
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=env).stdout.strip()
    (workdir / "kept.txt").write_text("the user's own\n")
    cli.ok("prompt", "--session", sid, "--permissions", "allow", "write first.txt", env=env)
    cli.ok("prompt", "--session", sid, "--permissions", "allow", "write second.txt\nwith a second line", env=env)
    turns = _turns(cli, sid)
    assert [t["turn"] for t in turns] == [0, 1, 2], turns
    assert [t["prompt"] for t in turns][1:] == ["write first.txt", "write second.txt"]
    changed = [[f["path"] for f in t["files"]] for t in turns]  # type: ignore[union-attr]
    assert changed[1] == ["first.txt"] and changed[2] == ["second.txt"], changed
    diff = cli.ok("diff", sid, "1").stdout
    assert "+++ b/" in diff and "first.txt" in diff and "kept.txt" not in diff


def test_hand_edits_between_turns_are_not_the_agents_and_a_rewind_keeps_them(cli: Cli, workdir: Path, keep_alive: str) -> None:
    env = {"ACPCLI_KEEP_ALIVE": keep_alive}
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=env).stdout.strip()
    cli.ok("prompt", "--session", sid, "--permissions", "allow", "write first.txt", env=env)
    (workdir / "first.txt").write_text("edited by hand after turn 1\n")
    (workdir / "notes.txt").write_text("made by hand between the turns\n")
    cli.ok("prompt", "--session", sid, "--permissions", "allow", "write second.txt", env=env)
    changed = [[f["path"] for f in t["files"]] for t in _turns(cli, sid)]  # type: ignore[union-attr]
    assert changed[2] == ["second.txt"], changed  # the hand edits are not turn 2's
    assert "notes.txt" not in cli.ok("diff", sid, "2").stdout
    cli.ok("rewind", sid, "--to", "2", "--files", "--yes")
    assert not (workdir / "second.txt").exists()
    assert (workdir / "first.txt").read_text() == "edited by hand after turn 1\n"  # kept: nothing lost
    assert (workdir / "notes.txt").exists()
    cli.ok("rewind", sid, "--to", "1", "--files", "--yes", "--force")
    assert not (workdir / "first.txt").exists() and not (workdir / "notes.txt").exists()  # as before turn 1


def test_no_checkpoints_takes_none(cli: Cli, workdir: Path, keep_alive: str) -> None:
    env = {"ACPCLI_KEEP_ALIVE": keep_alive}
    sid = cli.ok("new", "--no-repl", "--no-checkpoints", "--cmd", cli.trace.demo_cmd(protocol=1), env=env).stdout.strip()
    cli.ok("prompt", "--session", sid, "--no-checkpoints", "--permissions", "allow", "write nothing.txt", env=env)
    assert (workdir / "nothing.txt").exists()
    assert _turns(cli, sid) == []


def test_the_repl_takes_them_too(spawn, cli: Cli, workdir: Path, keep_alive: str) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", cli.trace.demo_cmd(protocol=1), env={"ACPCLI_KEEP_ALIVE": keep_alive})
    pty.expect(PROMPT)
    pty.say("no-permission write repl.txt")  # (the demo writes through the client, asking nothing)
    pty.expect("written with fs/write_text_file")
    pty.expect(PROMPT)
    pty.child.send(CTRL_D)
    assert pty.wait() == 0
    (record,) = cli.index()
    turns = _turns(cli, str(record["id"]))
    assert [t["turn"] for t in turns] == [0, 1] and [f["path"] for f in turns[1]["files"]] == ["repl.txt"]  # type: ignore[index]


def test_housekeeping_counts_checks_and_removes_the_stores(cli: Cli, workdir: Path) -> None:
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "--permissions", "allow", "write one.txt")
    (row,) = [json.loads(line) for line in cli.ok("sessions", "--json").stdout.splitlines()]
    assert row["checkpoints"] == 2  # before the first turn, after it
    assert "checkpoints: 1 session store sound" in cli.ok("doctor").stdout
    (head,) = (cli.home / "checkpoints").rglob("HEAD")  # the store's git folder
    head.write_text("garbage\n")  # a damaged store: doctor says so, exit 19
    damaged = cli.run("doctor")
    assert damaged.returncode == 19 and f"checkpoints of {sid[:8]}" in damaged.stdout, (damaged.stdout, damaged.stderr)
    cli.ok("sessions", "rm", sid, "--yes")
    assert not head.parent.exists() and not list((cli.home / "checkpoints").rglob("HEAD"))


def test_the_repls_diff_and_undo(spawn, cli: Cli, workdir: Path, keep_alive: str) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", cli.trace.demo_cmd(protocol=1), env={"ACPCLI_KEEP_ALIVE": keep_alive})
    pty.expect(PROMPT)
    pty.say("no-permission write undone.txt")
    pty.expect("written with fs/write_text_file")
    pty.expect(PROMPT)
    assert (workdir / "undone.txt").exists()
    pty.say("/diff")
    pty.expect("undone.txt")
    pty.expect(PROMPT)
    pty.say("/undo")
    pty.expect("files as before turn 1")
    pty.expect(PROMPT)
    assert not (workdir / "undone.txt").exists()
    pty.say("/rewind x")
    pty.expect("usage: /rewind TURN")
    pty.expect(PROMPT)
    pty.child.send(CTRL_D)
    assert pty.wait() == 0
