"""Rewinding files to a turn and undoing it: byte for byte, refusing to lose hand edits, never
following links, never touching files that are in no checkpoint, whole files only when stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acpcli.errors import NoCheckpoint, RewindRefused
from acpcli.worktree import Checkpoints
from acpcli.worktree.restore import TEMP_PREFIX, Restorer
from tests.helpers.trees import UserGit, dot_git_state, tree_state


def _agent_turn(root: Path, n: int) -> None:
    """One turn's worth of edits, different for each n."""
    base = os.fsencode(root)
    (root / f"turn{n}.txt").write_text(f"written by turn {n}\n" * n)
    with open(os.path.join(base, b"odd\n\xff name %d" % n), "wb") as f:
        f.write(b"\x00binary\xff" * n)
    if (root / "a.txt").exists():
        (root / "a.txt").write_text((root / "a.txt").read_text() + f"line from {n}\n")
    if n == 1:
        (root / "sub" / "b.txt").unlink()
        os.rename(root / "tool", root / "tool-renamed")
        os.chmod(root / "a.txt", 0o755)
        os.symlink("../a.txt", root / "sub" / "link")
        os.symlink("/nonexistent/outside", root / "dangling")
        (root / "empty").write_bytes(b"")
        (root / "deep" / "er").mkdir(parents=True)
        (root / "deep" / "er" / "f").write_text("deep\n")
    if n == 2:
        os.unlink(root / "sub" / "link")
        (root / "sub" / "link").write_text("a file where a link was\n")
        os.chmod(root / "a.txt", 0o644)


@pytest.mark.parametrize("where", ["plain", "repo"])
def test_rewind_and_undo_are_exact_byte_for_byte(where: str, request: pytest.FixtureRequest) -> None:
    root: Path = request.getfixturevalue(where)
    if where == "repo":
        for name, text in (("a.txt", "alpha\n"), ("tool", "#!/bin/sh\n")):
            (root / name).write_text(text)
        (root / "sub").mkdir()
        (root / "sub" / "b.txt").write_text("b\n")
    before_git = dot_git_state(root) if where == "repo" else None
    cps = Checkpoints(f"s-{where}", [root])
    states = [tree_state(root)]
    cps.take(0)
    for n in (1, 2, 3):
        _agent_turn(root, n)
        cps.take(n, f"turn {n}")
        states.append(tree_state(root))
    plan = cps.rewind(2, dry_run=True)
    assert not plan.done and tree_state(root) == states[3]
    assert {c.path for c in plan.changes} >= {"turn2.txt", "turn3.txt", "a.txt", "sub/link"}
    assert {c.status for c in plan.changes if c.path in ("turn2.txt", "turn3.txt")} == {"D"}
    done = cps.rewind(2)
    assert done.done and not done.conflicts and not done.skipped
    assert tree_state(root) == states[1]  # the files before turn 2
    assert not (root / "turn2.txt").exists()
    cps.undo()
    assert tree_state(root) == states[3]
    cps.rewind(1)
    assert tree_state(root) == states[0]
    assert not (root / "deep").exists()  # folders emptied by the rewind go too
    cps.undo()
    assert tree_state(root) == states[3]
    cps.undo()  # undo twice: the rewind again
    assert tree_state(root) == states[0]
    if before_git is not None:
        assert dot_git_state(root) == before_git


def test_a_rewind_refuses_to_overwrite_hand_edits_and_names_them(plain: Path) -> None:
    cps = Checkpoints("s-refuse", [plain])
    cps.take(0)
    (plain / "a.txt").write_text("agent\n")
    (plain / "agent-made.txt").write_text("agent\n")
    cps.take(1, "t")
    (plain / "a.txt").write_text("mine, by hand\n")
    (plain / "agent-made.txt").write_text("mine too\n")
    (plain / "untouched-by-rewind.txt").write_text("new by hand\n")
    with pytest.raises(RewindRefused) as refused:
        cps.rewind(1)
    assert {p.name for p in refused.value.paths} == {"a.txt", "agent-made.txt"}
    assert "a.txt" in str(refused.value) and "--force" in (refused.value.hint or "")
    assert (plain / "a.txt").read_text() == "mine, by hand\n"  # nothing written
    assert {c.path for c in cps.rewind(1, dry_run=True).conflicts} == {"a.txt", "agent-made.txt"}
    cps.rewind(1, force=True)
    assert (plain / "a.txt").read_text() == "alpha\nbeta\n" and not (plain / "agent-made.txt").exists()
    # a file made by hand after the last checkpoint is in no turn's change: it stays
    assert (plain / "untouched-by-rewind.txt").read_text() == "new by hand\n"
    cps.undo()  # the hand edits come back
    assert (plain / "a.txt").read_text() == "mine, by hand\n"
    assert (plain / "agent-made.txt").read_text() == "mine too\n"


def test_edits_made_by_hand_between_turns_are_the_users_not_the_next_turns(plain: Path) -> None:
    cps = Checkpoints("s-between", [plain])
    cps.take(0)
    (plain / "a.txt").write_text("agent, turn 1\n")
    cps.take(1, "t1")
    assert cps.take_before(2) is None  # nothing changed by hand: nothing recorded
    (plain / "a.txt").write_text("mine, between the turns\n")
    (plain / "mine.txt").write_text("made by hand\n")
    (plain / "sub" / "b.txt").unlink()
    between = cps.take_before(2)
    assert between is not None and {f.path for f in between.files} == {"a.txt", "mine.txt", "sub/b.txt"}
    (plain / "turn2.txt").write_text("agent, turn 2\n")
    cps.take(2, "t2")
    (turn2,) = [c for c in cps.list() if c.turn == 2]
    assert [f.path for f in turn2.files] == ["turn2.txt"]  # the agent's change alone
    assert "mine.txt" not in cps.diff(2) and "turn2.txt" in cps.diff(2)
    assert cps.turns() == [0, 1, 2]
    cps.rewind(2)  # the files as turn 2 found them: the hand edits stay
    assert not (plain / "turn2.txt").exists()
    assert (plain / "a.txt").read_text() == "mine, between the turns\n"
    assert (plain / "mine.txt").read_text() == "made by hand\n" and not (plain / "sub" / "b.txt").exists()
    cps.rewind(1, force=True)  # before turn 1: as it was at the start
    assert (plain / "a.txt").read_text() == "alpha\nbeta\n" and (plain / "sub" / "b.txt").read_text() == "b\n"
    cps.undo()
    assert (plain / "a.txt").read_text() == "mine, between the turns\n"


def test_undo_refuses_hand_edits_made_after_the_rewind(plain: Path) -> None:
    cps = Checkpoints("s-undo-refuse", [plain])
    cps.take(0)
    (plain / "a.txt").write_text("agent\n")
    cps.take(1, "t")
    cps.rewind(1)
    (plain / "a.txt").write_text("edited after the rewind\n")
    with pytest.raises(RewindRefused):
        cps.undo()
    assert (plain / "a.txt").read_text() == "edited after the rewind\n"


def test_files_in_no_checkpoint_are_never_overwritten_or_removed(plain: Path) -> None:
    (plain / ".gitignore").write_text("*.log\n")
    cps = Checkpoints("s-keep", [plain], max_file_size=100)
    cps.take(0)
    (plain / "a.txt").unlink()
    cps.take(1, "t")
    # a.txt comes back on a rewind to 1, unless something not checkpointed is there now
    (plain / "a.txt").write_bytes(b"x" * 500)  # too large to be in a checkpoint
    (plain / "keep.log").write_text("ignored\n")
    plan = cps.rewind(1)
    assert [(c.path, why) for c, why in plan.skipped] == [("a.txt", "in no checkpoint (ignored, or too large): left alone")]
    assert (plain / "a.txt").read_bytes() == b"x" * 500
    assert (plain / "keep.log").read_text() == "ignored\n"


def test_a_link_on_the_way_is_never_followed(plain: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    cps = Checkpoints("s-follow", [plain])
    cps.take(0)
    (plain / "sub" / "b.txt").write_text("changed by the agent\n")
    cps.take(1, "t")
    # the folder becomes a link to a folder outside the roots: the rewind must not write there
    (plain / "sub" / "b.txt").unlink()
    (plain / "sub").rmdir()
    os.symlink(outside, plain / "sub")
    plan = cps.rewind(1, force=True)
    assert not (outside / "b.txt").exists()
    assert any(c.path == "sub/b.txt" for c, _ in plan.skipped)
    assert os.path.islink(plain / "sub")


def test_no_checkpoint_to_rewind_to_is_said(plain: Path) -> None:
    cps = Checkpoints("s-none", [plain])
    with pytest.raises(NoCheckpoint):
        cps.rewind(1)
    cps.take(1, "t")  # no checkpoint before the first turn (turned on late)
    with pytest.raises(NoCheckpoint):
        cps.rewind(1)
    with pytest.raises(NoCheckpoint):
        cps.diff(1)
    with pytest.raises(NoCheckpoint):
        cps.undo()
    with pytest.raises(NoCheckpoint):
        cps.rewind(0)
    with pytest.raises(NoCheckpoint):
        cps.diff(7)


def test_a_rewind_stopped_half_way_leaves_whole_files_and_undo_still_works(
    plain: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cps = Checkpoints("s-stopped", [plain])
    cps.take(0)
    start = tree_state(plain)
    for i in range(6):
        (plain / f"f{i}.txt").write_text(f"agent {i}\n" * 100)
    (plain / "a.txt").write_text("agent\n")
    cps.take(1, "t")
    end = tree_state(plain)
    # make a.txt and some f*.txt differ from the rewind target: it writes a.txt, removes f*
    real = Restorer._write
    calls = []

    def stop_after_first(self: Restorer, *args: object) -> None:
        if calls:
            raise KeyboardInterrupt
        calls.append(1)
        real(self, *args)  # type: ignore[arg-type]

    (plain / "sub" / "b.txt").unlink()
    cps.take(2, "t2")  # b.txt deleted by turn 2; rewinding to 1 brings it back, and a.txt
    end = tree_state(plain)
    monkeypatch.setattr(Restorer, "_write", stop_after_first)
    with pytest.raises(KeyboardInterrupt):
        cps.rewind(1)
    monkeypatch.undo()
    now = tree_state(plain)
    for path in set(start) | set(end):
        assert now.get(path) in (start.get(path), end.get(path)), path
    assert not [p for p in now if TEMP_PREFIX in p]
    cps.undo()  # the interrupted rewind's half is undone: everything as after turn 2
    assert tree_state(plain) == end
    cps.rewind(1)
    assert tree_state(plain) == start


def test_a_rewind_killed_with_sigkill_leaves_whole_files_and_undo_still_works(plain: Path, acpcli_home: Path) -> None:
    cps = Checkpoints("s-killed", [plain])
    cps.take(0)
    for i in range(20):
        (plain / "sub" / f"g{i}.txt").write_text(f"{i}" * 1000)
    (plain / "a.txt").write_text("agent\n")
    cps.take(1, "t")
    after_1 = tree_state(plain)
    for i in range(20):
        (plain / "sub" / f"g{i}.txt").unlink()
    (plain / "a.txt").write_text("agent again\n")
    cps.take(2, "t")
    after_2 = tree_state(plain)
    ready = plain.parent / "ready"
    script = f"""
import time
from acpcli.worktree import Checkpoints
from acpcli.worktree.restore import Restorer
real = Restorer._write
def slow(self, *args):
    real(self, *args)
    with open({str(ready)!r}, "a") as f:
        f.write("w\\n")
    time.sleep(0.3)
Restorer._write = slow
Checkpoints("s-killed", [{str(plain)!r}]).rewind(2)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "ACPCLI_HOME": str(acpcli_home)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not ready.exists() or len(ready.read_text().split()) < 3):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    written = len(ready.read_text().split()) if ready.exists() else 0
    assert 3 <= written < 21, "the rewind was not stopped half way"
    middle = tree_state(plain)
    for path in set(after_1) | set(after_2) | set(middle):
        assert middle.get(path) in (after_1.get(path), after_2.get(path)), path
    Checkpoints("s-killed", [plain]).undo()  # another process, as after a kill
    assert tree_state(plain) == after_2
    Checkpoints("s-killed", [plain]).rewind(2)
    assert tree_state(plain) == after_1


def test_a_rewind_writes_only_the_paths_that_differ(plain: Path) -> None:
    cps = Checkpoints("s-only", [plain])
    cps.take(0)
    (plain / "a.txt").write_text("agent\n")
    cps.take(1, "t")
    untouched = (plain / "sub" / "b.txt").stat().st_mtime_ns, (plain / "sub" / "b.txt").stat().st_ino
    time.sleep(0.01)
    plan = cps.rewind(1)
    assert [c.path for c in plan.changes] == ["a.txt"]
    info = (plain / "sub" / "b.txt").stat()
    assert (info.st_mtime_ns, info.st_ino) == untouched


def test_a_rewind_keeps_the_users_repository_as_it_was(repo: Path, user_git: UserGit) -> None:
    before = dot_git_state(repo)
    status = user_git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    cps = Checkpoints("s-repo-rewind", [repo])
    cps.take(0)
    (repo / "src" / "m9.py").write_text("agent\n")
    os.unlink(repo / "README")
    cps.take(1, "t")
    cps.rewind(1)
    assert user_git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all") == status
    assert dot_git_state(repo) == before


def test_a_file_that_became_a_folder_and_back(plain: Path) -> None:
    (plain / ".gitignore").write_text("*.log\n")
    cps = Checkpoints("s-kind", [plain])
    cps.take(0)
    start = tree_state(plain)
    (plain / "a.txt").unlink()
    (plain / "a.txt").mkdir()
    (plain / "a.txt" / "inner").write_text("inner\n")
    (plain / "sub" / "b.txt").unlink()
    (plain / "sub").rmdir()
    (plain / "sub").write_text("a file where a folder was\n")
    cps.take(1, "t")
    after = tree_state(plain)
    cps.rewind(1)
    assert tree_state(plain) == start
    cps.undo()
    assert tree_state(plain) == after
    # a folder that still holds a file in no checkpoint is not replaced by the file
    (plain / "a.txt" / "keep.log").write_text("ignored\n")
    plan = cps.rewind(1)
    assert [(c.path, why) for c, why in plan.skipped] == [("a.txt", "a folder is in its place")]
    assert "a.txt" not in [c.path for c in plan.changes]  # what was done
    assert (plain / "a.txt" / "keep.log").read_text() == "ignored\n"
    assert (plain / "sub" / "b.txt").read_text() == "b\n"
