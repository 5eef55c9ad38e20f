"""Fixtures for the checkpoint tests: real git, in temporary folders.

``user_git`` runs git as the user would, on the user's repository (with a global config of the
test's own, so nothing of the machine's applies). ``tests/helpers/trees.py`` reads a folder
byte for byte to compare before and after.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from acpcli.worktree.git import forget_git
from tests.helpers.trees import UserGit

if shutil.which("git") is None:  # pragma: no cover - the suite's machines have git
    pytest.skip("git is not on PATH", allow_module_level=True)


@pytest.fixture(autouse=True)
def _fresh_git_lookup() -> None:
    forget_git()


@pytest.fixture
def user_env(tmp_path: Path) -> dict[str, str]:
    """The environment the user's own git runs in: a global config of this test's, and no
    index refresh by ``git status`` (so that the test's own looks change nothing)."""
    config = tmp_path / "user-gitconfig"
    config.write_text("[user]\n\tname = U\n\temail = u@example.com\n[init]\n\tdefaultBranch = main\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    # GIT_OPTIONAL_LOCKS=0: the test's own `git status` does not refresh the user's index
    env.update(GIT_CONFIG_GLOBAL=str(config), GIT_CONFIG_NOSYSTEM="1", GIT_OPTIONAL_LOCKS="0")
    return env


@pytest.fixture
def user_git(user_env: dict[str, str]) -> UserGit:
    def run(cwd: Path, *args: str, input: bytes | None = None) -> str:
        done = subprocess.run(
            ["git", *args], cwd=cwd, env=user_env, input=input, capture_output=True, check=False, timeout=60
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        return done.stdout.decode("utf-8", "surrogateescape")

    return run


@pytest.fixture
def repo(tmp_path: Path, user_git: UserGit) -> Path:
    """A repository with a few commits and uncommitted work: a modified file, a staged one,
    an untracked one, an ignored one."""
    top = tmp_path / "repo"
    top.mkdir()
    user_git(top, "init", "-q")
    (top / "src").mkdir()
    for i in range(30):
        (top / "src" / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    (top / "README").write_text("read me\n")
    (top / ".gitignore").write_text("*.log\nbuild/\n")
    (top / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (top / "run.sh").chmod(0o755)
    user_git(top, "add", "-A")
    user_git(top, "commit", "-qm", "one")
    (top / "README").write_text("read me\nagain\n")
    user_git(top, "commit", "-qam", "two")
    (top / "src" / "m1.py").write_text("def f1():\n    return 'changed'\n")  # modified, unstaged
    (top / "src" / "m2.py").write_text("def f2():\n    return 'staged'\n")
    user_git(top, "add", "src/m2.py")  # staged
    (top / "notes.txt").write_text("untracked\n")
    (top / "debug.log").write_text("ignored\n")
    return top


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """A folder that is not a repository, with a few files."""
    top = tmp_path / "plain"
    top.mkdir()
    (top / "a.txt").write_text("alpha\nbeta\n")
    (top / "sub").mkdir()
    (top / "sub" / "b.txt").write_text("b\n")
    (top / "tool").write_text("#!/bin/sh\n")
    (top / "tool").chmod(0o755)
    return top
