"""A folder read byte for byte, to compare before and after (the checkpoint tests):
:func:`tree_state` (kind, exec bit, content or link target of every file and link) and
:func:`dot_git_state` (every entry under ``.git`` hashed with its mode and time)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

#: The user's own git, run in a folder: ``user_git(cwd, *args)`` -> stdout (tests/worktree/conftest.py).
UserGit = Callable[..., str]


def tree_state(root: Path) -> dict[bytes, tuple[str, bool, bytes]]:
    """Every file and link under ``root`` (not ``.git``), by path: kind, exec bit, content or
    link target."""
    state: dict[bytes, tuple[str, bool, bytes]] = {}
    base = os.fsencode(root)
    for folder, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d != b".git"]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, base)
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                state[rel] = ("link", False, os.readlink(full))
            else:
                with open(full, "rb") as f:
                    state[rel] = ("file", bool(info.st_mode & 0o100), f.read())
    return state


def dot_git_state(top: Path) -> dict[str, tuple[int, int, str]]:
    """Every entry under ``top/.git``: mode, mtime (ns) and a hash of its content. The times of
    object files are left out: when the store would write an object the user's repository
    already has, git refreshes the borrowed object's time instead (its guard against ``gc``
    pruning it); the object's bytes never change."""
    state: dict[str, tuple[int, int, str]] = {}
    for folder, dirs, files in os.walk(top / ".git"):
        for name in dirs + files:
            full = os.path.join(folder, name)
            info = os.lstat(full)
            digest = ""
            if stat.S_ISREG(info.st_mode):
                with open(full, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            rel = os.path.relpath(full, top)
            mtime = 0 if rel.startswith(os.path.join(".git", "objects", "")) else info.st_mtime_ns
            state[rel] = (info.st_mode, mtime, digest)
    return state
