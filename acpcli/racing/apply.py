"""``race apply``: one candidate's changes brought into the user's tree, 3-way, all or nothing.

For every file the candidate changed (its baseline against its result, in the race's private
store), the user's file as it is now is compared with the baseline (what the candidate was
given):

* the user's file is still the baseline's: the candidate's version is taken (byte for byte,
  links as links, the exec bit as the candidate left it; a file it deleted is deleted);
* the user's file is already the candidate's: nothing to do;
* both changed a text file: ``git merge-file`` merges them; a merge that conflicts, a binary
  file both changed, or any other difference (a file the user removed that the candidate
  edited, a type change) is a conflict.

With any conflict nothing is written: :class:`ApplyRefused` names the files. Otherwise each
file is written whole (a temporary file beside it, renamed over it). Only the user's files
are written: never its index, refs or stash (``git status`` afterwards shows the changes).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from acpcli.errors import UsageError
from acpcli.worktree.git import Git, GitError

_ZERO = "0" * 40


class ApplyRefused(UsageError):
    """The candidate's changes conflict with the user's own: nothing was written."""


@dataclass
class _State:
    """A file as it is: ``kind`` ``file``, ``link`` or ``none``; its bytes (a link's target)."""

    kind: str
    data: bytes = b""
    exec_bit: bool = False


def _mode_state(git: Git, mode: str, oid: str) -> _State:
    if mode == "000000" or oid == _ZERO:
        return _State("none")
    data = next(iter(git.blobs([oid])))[1]
    if mode == "120000":
        return _State("link", data)
    if mode in ("100644", "100755"):
        return _State("file", data, mode == "100755")
    return _State("other")


def _disk_state(path: Path) -> _State:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return _State("none")
    except NotADirectoryError:
        return _State("other")
    if stat.S_ISLNK(st.st_mode):
        return _State("link", os.fsencode(os.readlink(path)))
    if stat.S_ISREG(st.st_mode):
        return _State("file", path.read_bytes(), bool(st.st_mode & 0o100))
    return _State("other")


def _same(a: _State, b: _State) -> bool:
    return a.kind == b.kind and a.data == b.data and (a.kind != "file" or a.exec_bit == b.exec_bit)


def _merge(git: Git, ours: bytes, base: bytes, theirs: bytes, scratch: Path) -> bytes | None:
    """A clean 3-way merge of three texts, or None (a conflict, or binary content)."""
    if b"\0" in ours or b"\0" in base or b"\0" in theirs:
        return None
    names = []
    for label, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        path = scratch / label
        path.write_bytes(data)
        names.append(str(path))
    try:
        return git.run("merge-file", "-p", "-q", *names)
    except GitError:
        return None


def plan(git: Git, top: Path, base: str, result: str, scratch: Path) -> tuple[list[tuple[Path, _State, bool]], list[str]]:
    """What to write (path, new state, whether the exec bit is the candidate's) and the
    conflicting paths."""
    raw = git.run("diff-tree", "-r", "-z", "--no-renames", "--raw", base, result)
    items = raw.split(b"\0")
    writes: list[tuple[Path, _State, bool]] = []
    conflicts: list[str] = []
    i = 0
    while i + 1 < len(items):
        meta, name = items[i], items[i + 1]
        i += 2
        if not meta.startswith(b":"):
            continue
        old_mode, new_mode, old_oid, new_oid, _status = meta[1:].decode("ascii").split(" ", 4)
        shown = os.fsdecode(name)
        path = top / shown
        base_state = _mode_state(git, old_mode, old_oid)
        theirs = _mode_state(git, new_mode, new_oid)
        ours = _disk_state(path)
        if "other" in (base_state.kind, theirs.kind, ours.kind):
            conflicts.append(shown)
        elif _same(ours, theirs):
            continue
        elif _same(ours, base_state) or (
            ours.kind == base_state.kind == "file" and ours.data == base_state.data
        ):
            writes.append((path, theirs, True))
        elif ours.kind == base_state.kind == theirs.kind == "file":
            merged = _merge(git, ours.data, base_state.data, theirs.data, scratch)
            if merged is None:
                conflicts.append(shown)
            else:
                exec_bit = theirs.exec_bit if theirs.exec_bit != base_state.exec_bit else ours.exec_bit
                writes.append((path, _State("file", merged, exec_bit), True))
        else:
            conflicts.append(shown)
    return writes, conflicts


def _write(path: Path, state: _State) -> None:
    if state.kind == "none":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.path.isdir(path) and not os.path.islink(path):
        raise OSError(f"{path} is a folder")
    if state.kind == "link":
        tmp = path.with_name(f".{path.name}.acpcli-{os.getpid()}")
        os.symlink(os.fsdecode(state.data), tmp)
        os.replace(tmp, path)
        return
    try:
        mode = stat.S_IMODE(os.lstat(path).st_mode) if os.path.isfile(path) and not os.path.islink(path) else None
    except OSError:
        mode = None
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    mode = (mode | ((mode & 0o444) >> 2)) if state.exec_bit else (mode & ~0o111)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(state.data)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def apply(git: Git, top: Path, base: str, result: str, scratch: Path) -> list[str]:
    """Bring ``base``→``result`` into ``top`` (see the module docstring); the paths written.
    :class:`ApplyRefused` when any file conflicts (nothing written)."""
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        writes, conflicts = plan(git, top, base, result, scratch)
    finally:
        for name in ("ours", "base", "theirs"):
            with contextlib.suppress(OSError):
                (scratch / name).unlink()
    if conflicts:
        from acpcli.text.safe import safe_line

        shown = ", ".join(safe_line(c) for c in conflicts[:10]) + (f" and {len(conflicts) - 10} more" if len(conflicts) > 10 else "")
        raise ApplyRefused(
            f"the candidate's changes conflict with yours in {shown}: nothing was applied",
            hint="commit or stash your changes to those files first, or take them by hand from `acpcli race show`",
        )
    done = []
    for path, state, _ in writes:
        _write(path, state)
        done.append(os.fspath(path.relative_to(top)))
    return done
