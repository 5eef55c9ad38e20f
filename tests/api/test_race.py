"""``acpcli.race(...)``: the race from Python, with typed results (its candidates are real
``acpcli prompt`` processes running SDK agents)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

import acpcli

RACER = Path(__file__).resolve().parent.parent / "peers" / "sdk_race_agent.py"


def racer(*args: str) -> str:
    return shlex.join([sys.executable, str(RACER), *args])


def test_race_returns_typed_results_and_applies_a_winner(tmp_path: Path, acpcli_home: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("one\n")
    result = acpcli.race(
        "the task",
        commands=[racer("--write", "notes.txt=one\\ntwo\\n", "--cost", "0.5"), racer("--crash", "--sleep", "0.2")],
        cwd=folder,
        check="grep -q two notes.txt",
    )
    assert isinstance(result, acpcli.RaceResult) and result.kind == "folder"
    good, bad = result.candidates
    assert isinstance(good, acpcli.RaceCandidate)
    assert good.succeeded and good.stop_reason == "end_turn" and good.state == "done"
    assert [(f.path, f.status, f.added, f.removed) for f in good.files] == [("notes.txt", "M", 1, 0)]
    assert isinstance(good.check, acpcli.CheckResult) and good.check.passed and good.check.exit_code == 0
    assert good.usage is not None and good.usage["cost"]["amount"] == pytest.approx(0.5)
    assert good.session_id and good.worktree is None
    assert bad.state == "failed" and not bad.succeeded and bad.error
    assert result.winners == [good.name]
    assert b"+two" in result.diff(good.name)
    assert (folder / "notes.txt").read_text() == "one\n"  # nothing applied yet
    assert result.apply(good.name) == ["notes.txt"]
    assert (folder / "notes.txt").read_text() == "one\ntwo\n"
    result.drop()
    assert not (acpcli_home / "races" / result.id).exists()
    with pytest.raises(acpcli.UsageError):
        result.diff(good.name)  # dropped: gone


def test_race_refuses_a_place_or_a_policy_it_cannot_use(tmp_path: Path) -> None:
    with pytest.raises(acpcli.UsageError, match="candidates"):
        acpcli.race("x", cwd=tmp_path)
    with pytest.raises(acpcli.UsageError, match="permissions"):
        acpcli.race("x", ["demo"], cwd=tmp_path, permissions="ask")
