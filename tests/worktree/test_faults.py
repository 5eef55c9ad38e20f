"""Checkpoints under bad conditions: no git, a tree over the bounds, a full disk, a damaged
store, two processes at once; and the housekeeping (remove, count, check)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acpcli.errors import CheckpointError, CheckpointsBusy, CheckpointsOff
from acpcli.history.lock import SessionLock
from acpcli.worktree import Checkpoints, check_all, count, remove_checkpoints
from acpcli.worktree.git import Git, GitError, forget_git
from acpcli.worktree.restore import Restorer
from acpcli.worktree.store import Store, checkpoints_dir


def test_without_git_on_path_checkpoints_are_off_in_one_line(plain: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    forget_git()
    with pytest.raises(CheckpointsOff) as off:
        Checkpoints("s-nogit", [plain])
    assert str(off.value) == "checkpoints are off: git is not on PATH"


def test_too_old_a_git_is_off_too(plain: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'git version 2.20.1'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    forget_git()
    with pytest.raises(CheckpointsOff, match=r"git 2\.20 is too old"):
        Checkpoints("s-oldgit", [plain])


def test_a_tree_over_the_file_bound_gives_up_once_and_for_the_session(plain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(30):
        (plain / f"f{i}").write_text("x\n")
    cps = Checkpoints("s-many", [plain], max_files=25)
    with pytest.raises(CheckpointsOff, match="more than 25 files"):
        cps.take(0)
    assert cps.list() == []

    def no_git(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("git must not run once checkpoints gave up")

    monkeypatch.setattr(Git, "run", no_git)
    with pytest.raises(CheckpointsOff, match="more than 25 files"):
        Checkpoints("s-many", [plain], max_files=25).take(1, "t")  # a later command too: at once
    monkeypatch.undo()
    assert Checkpoints("s-many", [plain], max_files=1000).take(1, "t").turn == 1  # a larger bound tries again


def test_a_checkpoint_over_the_time_bound_gives_up(plain: Path) -> None:
    for i in range(200):
        (plain / f"f{i}").write_text(f"{i}\n")
    cps = Checkpoints("s-slow", [plain], time_limit=0.000001)
    with pytest.raises(CheckpointsOff, match="took more than"):
        cps.take(0)
    assert not (cps.path / "index-0.lock").exists()
    with pytest.raises(CheckpointsOff):
        cps.take(1, "t")


@pytest.mark.parametrize("where", ["git", "store"])
def test_a_full_disk_is_a_checkpoint_error_and_nothing_is_half_done(
    where: str, plain: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cps = Checkpoints("s-full", [plain])
    cps.take(0)
    (plain / "a.txt").write_text("new\n")
    if where == "git":  # git cannot write the blob, the index or the tree
        real = Git.run

        def full(self: Git, *args: str | bytes, **kwargs: object) -> bytes:
            if args[0] in ("update-index", "add", "write-tree"):
                raise GitError(args, 128, b"error: unable to write file: No space left on device\nfatal: failed\n")
            return real(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Git, "run", full)
    else:  # the commit object or a ref cannot be written

        def no_room(*args: object, **kwargs: object) -> str:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(Store, "write_object", no_room)
    with pytest.raises(CheckpointError) as err:
        cps.take(1, "t")
    assert type(err.value) is CheckpointError
    assert str(err.value) == "checkpoint of turn 1 not taken: the disk is full"
    monkeypatch.undo()
    assert cps.turns() == [0]
    assert cps.take(1, "t").files[0].path == "a.txt"
    assert cps.check() == []


def test_a_full_disk_during_a_rewind_stops_it_and_undo_brings_everything_back(plain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cps = Checkpoints("s-full-rewind", [plain])
    cps.take(0)
    for name in ("x", "y", "z"):
        (plain / name).write_text(name)
    (plain / "a.txt").unlink()
    (plain / "sub" / "b.txt").unlink()
    cps.take(1, "t")
    real = Restorer._write
    calls: list[int] = []

    def full(self: Restorer, *args: object) -> None:
        if calls:
            raise OSError(errno.ENOSPC, "No space left on device")
        calls.append(1)
        real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Restorer, "_write", full)
    with pytest.raises(CheckpointError, match="rewind stopped: the disk is full"):
        cps.rewind(1)
    monkeypatch.undo()
    cps.undo()
    assert sorted(os.listdir(plain)) == ["sub", "tool", "x", "y", "z"] and os.listdir(plain / "sub") == []


def test_a_damaged_store_is_reported_and_never_raises_anything_but_a_checkpoint_error(plain: Path) -> None:
    cps = Checkpoints("s-damaged", [plain])
    cps.take(0)
    (plain / "a.txt").write_text("one\n")
    cps.take(1, "t")
    assert cps.check() == []
    for obj in (cps.path / "git" / "objects").glob("??/*"):
        obj.chmod(0o600)
        obj.write_bytes(b"garbage")
    problems = cps.check()
    assert problems and problems[0].startswith("damaged: ")
    (plain / "a.txt").write_text("two\n")
    try:
        cps.take(2, "t")
    except CheckpointError:
        pass
    with pytest.raises(CheckpointError):
        cps.diff(1)
    report = {r.session_id: r for r in check_all()}["s-damaged"]
    assert report.problems and report.path == cps.path


def test_two_processes_on_one_session_take_turns(plain: Path, acpcli_home: Path) -> None:
    script = """
import sys
from acpcli.worktree import Checkpoints
cps = Checkpoints("s-two", [sys.argv[1]])
for n in range(int(sys.argv[2]), int(sys.argv[2]) + 6):
    open(f"{sys.argv[1]}/f{n}", "w").write(str(n))
    cps.take(n, f"turn {n}")
"""
    env = {**os.environ, "ACPCLI_HOME": str(acpcli_home)}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(plain), str(start)], env=env, stderr=subprocess.PIPE)
        for start in (0, 10)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    cps = Checkpoints("s-two", [plain])
    assert cps.turns() == [*range(6), *range(10, 16)]
    assert cps.check() == []
    assert [c.turn for c in cps.list()] == cps.turns()


def test_a_store_held_by_another_is_busy_after_the_wait(plain: Path) -> None:
    holder = SessionLock("s-busy", directory=checkpoints_dir())
    assert holder.try_acquire()
    try:
        with pytest.raises(CheckpointsBusy, match="in use by another acpcli"):
            Checkpoints("s-busy", [plain], lock_wait=0.1).take(0)
    finally:
        holder.release()
    assert Checkpoints("s-busy", [plain], lock_wait=0.1).take(0).turn == 0


def test_a_turns_own_session_lock_does_not_block_its_checkpoint(plain: Path) -> None:
    turn = SessionLock("s-own")
    assert turn.try_acquire()
    with turn:
        assert SessionLock("s-own").try_acquire() is False  # the turn's lock is held
        Checkpoints("s-own", [plain], lock_wait=0.1).take(0)


def test_remove_count_and_check_all(plain: Path, acpcli_home: Path) -> None:
    cps = Checkpoints("s-gone", [plain])
    keep = Checkpoints("s-kept", [plain])
    for n in range(3):
        cps.take(n, "t")
    keep.take(0)
    assert count("s-gone") == 3 and count("s-kept") == 1 and count("s-never") == 0
    assert {r.session_id: r.checkpoints for r in check_all()} == {"s-gone": 3, "s-kept": 1}
    assert all(not r.problems for r in check_all())
    assert cps.remove() is True
    assert not cps.path.exists() and count("s-gone") == 0
    assert remove_checkpoints("s-gone") is False
    assert [r.session_id for r in check_all()] == ["s-kept"]
    assert sorted(p.name for p in (acpcli_home / "checkpoints").iterdir()) == sorted(
        [keep.path.name, keep.path.name + ".lock"]
    )


def test_a_bug_in_a_checkpoint_is_still_only_a_checkpoint_error(plain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cps = Checkpoints("s-bug", [plain])

    def broken(*args: object, **kwargs: object) -> str:
        raise ValueError("unexpected")

    monkeypatch.setattr(Store, "tree", broken)
    with pytest.raises(CheckpointError, match="checkpoint of turn 0 not taken: ValueError: unexpected"):
        cps.take(0)
