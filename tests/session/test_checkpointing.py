"""Checkpoints around a session's turns (acpcli/session/checkpointing.py): one before the
first turn, one after each turn labelled with its prompt; never a failed turn."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from acpcli.session import checkpointing
from acpcli.worktree import Checkpoints


def _live(tmp_path: Path, sid: str = "demo-cp1", **extra: Any) -> Any:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return SimpleNamespace(session_id=sid, cwd=str(work), additional_directories=[], checkpoints=None, **extra)


def test_a_checkpoint_before_the_first_turn_and_after_each(tmp_path: Path) -> None:
    live = _live(tmp_path)
    said: list[str] = []
    work = Path(live.cwd)
    (work / "a.txt").write_text("one\n")

    async def main() -> None:
        await checkpointing.before_turn(live, said.append)
        (work / "a.txt").write_text("one\ntwo\n")
        (work / "b.txt").write_text("new\n")
        await checkpointing.after_turn(live, "add a line\nand a file", said.append)
        await checkpointing.before_turn(live, said.append)  # not again: turn 0 is there
        (work / "b.txt").unlink()
        await checkpointing.after_turn(live, "remove b", said.append)

    anyio.run(main)
    assert said == []
    listed = Checkpoints(live.session_id, [live.cwd]).list()
    assert [(c.turn, c.label) for c in listed] == [(0, ""), (1, "add a line"), (2, "remove b")]
    assert sorted(f.path for f in listed[1].files) == ["a.txt", "b.txt"]
    assert [(f.path, f.status) for f in listed[2].files] == [("b.txt", "D")]


def test_off_by_the_flag_or_the_config(tmp_path: Path, acpcli_home: Path) -> None:
    live = _live(tmp_path, "demo-cp2")
    live.checkpoints = False
    anyio.run(checkpointing.before_turn, live, print)
    assert Checkpoints(live.session_id, [live.cwd]).latest() is None
    (acpcli_home / "config.toml").write_text("checkpoints = false\n")
    live.checkpoints = None
    anyio.run(checkpointing.before_turn, live, print)
    assert Checkpoints(live.session_id, [live.cwd]).latest() is None


def test_without_git_one_line_once_and_the_turn_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from acpcli.worktree import git

    live = _live(tmp_path, "demo-cp3")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.setattr(git, "_found", None)  # (asked once per process: ask again here)
    said: list[str] = []

    async def main() -> None:
        await checkpointing.before_turn(live, said.append)
        await checkpointing.after_turn(live, "x", said.append)

    anyio.run(main)
    assert len(said) == 1 and "checkpoints are off" in said[0] and "git" in said[0], said
