"""What a checkpoint costs in git processes (the benchmark times them; this says which run):
before a turn with nothing changed since the last checkpoint, one walk of the tree and nothing
else; a turn's own checkpoint does not diff what it changed unless asked. And what is skipped
is only skipped when it may be: a change the walk finds is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpcli.worktree import Checkpoints
from acpcli.worktree.git import Git


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    ran: list[str] = []
    real = Git.run

    def run(self: Git, *args: str | bytes, **kwargs: object) -> bytes:
        ran.append(args[0] if isinstance(args[0], str) else args[0].decode())
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Git, "run", run)
    return ran


@pytest.mark.parametrize("where", ["plain", "repo"])
def test_nothing_changed_before_a_turn_is_one_walk(where: str, request: pytest.FixtureRequest, commands: list[str]) -> None:
    root: Path = request.getfixturevalue(where)
    (root / "a.txt").write_text("one\n")
    cps = Checkpoints("s-cost", [root])
    cps.take(0)
    (root / "a.txt").write_text("two\n")
    cps.take(1, "t", files=False)
    commands.clear()
    assert cps.take_before(2) is None
    assert commands == ["ls-files"]
    (root / "b.txt").write_text("by hand\n")  # the same index file, yet a change: recorded
    (root / "a.txt").write_text("three\n")
    before = cps.take_before(2)
    assert before is not None and sorted(f.path for f in before.files) == ["a.txt", "b.txt"]
    commands.clear()
    assert cps.take_before(2) is None and commands == ["ls-files"]
    (root / "c.txt").write_text("the turn's\n")
    commands.clear()
    turn = cps.take(2, "t", files=False)
    assert "diff-tree" not in commands and turn.files == ()
    assert [f.path for f in cps.get(2).files] == ["c.txt"]
