"""Checkpoints of what an agent does to the files itself (issue 34's judge): an agent written
with the official SDK (tests/peers/sdk_editor_agent.py) writes, edits, deletes, renames,
chmods and links files without the client's ``fs`` methods, as codex does through its shell,
in a repository with uncommitted work and in a plain folder, hosted and unhosted. Listed turns,
diffs, a rewind and its undo are exact byte for byte; the user's ``.git`` is never touched."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.trees import dot_git_state, tree_state

from .conftest import Cli

EDITOR = Path(__file__).resolve().parent.parent / "peers" / "sdk_editor_agent.py"

if shutil.which("git") is None:  # pragma: no cover - the suite's machines have git
    pytest.skip("git is not on PATH", allow_module_level=True)


def _git(cwd: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_OPTIONAL_LOCKS="0")
    full = ["git", "-c", "user.name=U", "-c", "user.email=u@example.com", *args]
    subprocess.run(full, cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


@pytest.fixture(params=["repo", "plain"])
def where(request: pytest.FixtureRequest, workdir: Path) -> str:
    (workdir / "a.txt").write_text("alpha\nbeta\n")
    (workdir / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    (workdir / "tool.sh").chmod(0o755)
    (workdir / "sub").mkdir()
    (workdir / "sub" / "b.txt").write_text("b\n")
    if request.param == "repo":
        _git(workdir, "init", "-q")
        _git(workdir, "add", "-A")
        _git(workdir, "commit", "-qm", "one")
        (workdir / "a.txt").write_text("alpha\nbeta, not committed\n")  # uncommitted work
        (workdir / "untracked.txt").write_text("mine\n")
    return str(request.param)


@pytest.mark.parametrize("keep_alive", ["300", "0"], ids=["hosted", "unhosted"])
def test_an_agent_editing_files_itself_is_checkpointed_and_rewound_byte_for_byte(
    cli: Cli, workdir: Path, where: str, keep_alive: str
) -> None:
    env = {"ACPCLI_KEEP_ALIVE": keep_alive}
    git_before = dot_git_state(workdir) if where == "repo" else None
    start = tree_state(workdir)
    sid = cli.ok("new", "--no-repl", "--cmd", shlex.join([sys.executable, str(EDITOR)]), env=env).stdout.strip()
    try:
        turns = [
            "write new.txt one\\ntwo\\n ; append a.txt gamma\\n ; chmod 644 tool.sh",
            "rm sub/b.txt ; mv new.txt renamed.txt ; link ../a.txt sub/link ; bytes blob.bin 00ff00 ; bytes empty -",
            "write a.txt rewritten\\n ; chmod 755 a.txt",
        ]
        states = [start]
        for text in turns:
            assert "done:" in cli.ok("prompt", "--session", sid, text, env=env).stdout
            states.append(tree_state(workdir))
        rows = [json.loads(line) for line in cli.ok("checkpoints", sid, "--json").stdout.splitlines() if line]
        assert [r["turn"] for r in rows] == [0, 1, 2, 3], rows
        changed = [sorted(f["path"] for f in r["files"]) for r in rows]
        assert changed[1] == ["a.txt", "new.txt", "tool.sh"], changed
        assert set(changed[2]) == {"sub/b.txt", "renamed.txt", "sub/link", "blob.bin", "empty"}, changed
        assert changed[3] == ["a.txt"], changed
        diff = cli.ok("diff", sid, "1").stdout
        assert "+gamma" in diff and "+two" in diff and "old mode 100755" in diff and "new mode 100644" in diff
        assert "rename from new.txt" in cli.ok("diff", sid, "2").stdout
        assert cli.ok("diff", sid, "3", "--name-only").stdout.split() == ["a.txt"]

        cli.ok("rewind", sid, "--to", "2", "--files", "--yes")
        assert tree_state(workdir) == states[1]
        cli.ok("rewind", sid, "--to", "1", "--files", "--yes")
        assert tree_state(workdir) == start  # before the first turn, byte for byte
        cli.ok("rewind", sid, "--undo", "--files", "--yes")
        assert tree_state(workdir) == states[1]  # the undo puts back what that rewind replaced
        if git_before is not None:
            assert dot_git_state(workdir) == git_before  # the user's repository, untouched
    finally:
        cli.run("stop", "--all")
