"""Writing a checkpoint's files back into the roots: each path whole or not at all.

Invariants this module keeps:

* **Per path, the old file or the new one.** A file is written to a temporary file in its own
  folder (named in the store's journal first, so that what a ``kill -9`` leaves is removed by
  the next change to the store), flushed with ``fsync`` and renamed over the path; a link is
  made under a temporary name and renamed the same way. A deletion is one ``unlink``. A restore
  stopped at any point (Ctrl-C, ``kill -9``) leaves every path as it was or as it should be.
* **Links are never followed.** Folders are walked from the root one name at a time with
  ``O_NOFOLLOW``: a path whose folder is (now) a link, or a file, is left alone and said;
  links are restored as links, whatever they point at (inside the roots or not).
* **Only the paths given** are touched; folders left empty by a deletion are removed, up to
  the root and never the root.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from acpcli.worktree.git import Git

#: The name every temporary file of a restore starts with (left out of checkpoints).
TEMP_PREFIX = b".acpcli-tmp-"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Change:
    """One path that differs between the state on disk (``old``) and the one to restore (``new``):
    git's raw diff of the two trees. ``path`` is relative to root number ``root``."""

    root: int
    path: bytes
    status: str  # A: restore a path absent now, D: remove it, M: change it, T: change its kind
    old_mode: str
    new_mode: str
    old_oid: str
    new_oid: str

    @property
    def mode_only(self) -> bool:
        """Only the exec bit differs (a chmod)."""
        return self.old_oid == self.new_oid and {self.old_mode, self.new_mode} == {"100644", "100755"}


class Skipped(Exception):
    """This path is left alone, for the reason given."""


def _parts(path: bytes) -> tuple[list[bytes], bytes]:
    *parents, name = path.split(b"/")
    return parents, name


def _open_dir(root_fd: int, parents: list[bytes], *, create: bool) -> int:
    """A descriptor of the folder ``parents`` under the root, walked without following links
    (made when ``create``). Raises :class:`Skipped` where a name on the way is not a folder."""
    fd = os.dup(root_fd)
    try:
        for part in parents:
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o777, dir_fd=fd)
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError:  # ELOOP: a link; ENOTDIR: a file
                raise Skipped(f"{os.fsdecode(part)!r} on its way is a link or a file") from None
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _new_mode(dfd: int, name: bytes, fd: int, git_mode: str) -> int:
    """The permission bits of a restored file: the present file's (or, for a new file, what the
    umask gave), with the exec bits as the checkpoint says (where the file is readable)."""
    try:
        info = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        bits = stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else stat.S_IMODE(os.fstat(fd).st_mode)
    except FileNotFoundError:
        bits = stat.S_IMODE(os.fstat(fd).st_mode)
    if git_mode == "100755":
        return bits | ((bits & 0o444) >> 2)
    return bits & ~0o111


class Restorer:
    """Applies a list of :class:`Change` to the roots (numbers to folders)."""

    def __init__(self, git: Git, roots: dict[int, Path], journal: Callable[[list[bytes]], None]) -> None:
        self.git = git
        self.roots = roots
        self.journal = journal
        self.token = secrets.token_hex(6).encode()
        self.skipped: list[tuple[Change, str]] = []
        self.done: list[Change] = []

    def _temp(self, i: int) -> bytes:
        return TEMP_PREFIX + self.token + b"-%d" % i

    def apply(self, changes: list[Change]) -> None:
        """Deletions first (and the folders they empty), then writes, in path order."""
        deletes = [c for c in changes if c.status == "D"]
        writes = [c for c in changes if c.status != "D"]
        temps = [
            os.fsencode(self.roots[c.root]) + b"/" + b"/".join([*_parts(c.path)[0], self._temp(i)])
            for i, c in enumerate(writes)
        ]
        if writes:
            self.journal(temps)
        root_fds: dict[int, int] = {}
        try:
            for number in {c.root for c in changes}:
                root_fds[number] = os.open(self.roots[number], _DIR_FLAGS & ~_NOFOLLOW)
            emptied: set[tuple[int, tuple[bytes, ...]]] = set()
            for change in sorted(deletes, key=lambda c: c.path, reverse=True):
                self._guarded(change, functools.partial(self._delete, root_fds[change.root], change, emptied))
            for number, parents in sorted(emptied, key=lambda e: len(e[1]), reverse=True):
                self._prune(root_fds[number], list(parents))
            contents = self._contents([c for c in writes if not c.mode_only and c.new_mode != "160000"])
            for i, change in sorted(enumerate(writes), key=lambda pair: pair[1].path):
                self._guarded(change, functools.partial(self._write, root_fds[change.root], change, contents, i))
        finally:
            for fd in root_fds.values():
                os.close(fd)

    def _contents(self, writes: list[Change]) -> dict[str, bytes]:
        wanted = list(dict.fromkeys(c.new_oid for c in writes))
        return dict(self.git.blobs(wanted))

    def _guarded(self, change: Change, action: Callable[[], None]) -> None:
        try:
            action()
        except Skipped as why:
            self.skipped.append((change, str(why)))
        else:
            self.done.append(change)

    def _delete(self, root_fd: int, change: Change, emptied: set[tuple[int, tuple[bytes, ...]]]) -> None:
        parents, name = _parts(change.path)
        try:
            dfd = _open_dir(root_fd, parents, create=False)
        except FileNotFoundError:
            return  # gone already
        try:
            info = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                raise Skipped("it is a folder now")
            os.unlink(name, dir_fd=dfd)
        except FileNotFoundError:
            pass
        except PermissionError as exc:
            raise Skipped(f"cannot remove it: {exc.strerror}") from None
        finally:
            os.close(dfd)
        if parents:
            emptied.add((change.root, tuple(parents)))

    def _prune(self, root_fd: int, parents: list[bytes]) -> None:
        """Remove the folders ``parents`` left empty, from the deepest up (never the root)."""
        while parents:
            *up, name = parents
            try:
                dfd = _open_dir(root_fd, up, create=False)
            except (OSError, Skipped):
                return
            try:
                os.rmdir(name, dir_fd=dfd)
            except OSError:
                return  # not empty (or not ours to remove): stop climbing
            finally:
                os.close(dfd)
            parents = up

    def _write(self, root_fd: int, change: Change, contents: dict[str, bytes], i: int) -> None:
        if change.new_mode == "160000":
            raise Skipped("a nested repository is not restored")
        parents, name = _parts(change.path)
        try:
            dfd = _open_dir(root_fd, parents, create=True)
        except OSError as exc:
            raise Skipped(f"cannot make its folder: {exc.strerror}") from None
        try:
            if change.mode_only:
                self._chmod(dfd, name, change)
                return
            tmp = self._temp(i)
            data = contents[change.new_oid]
            try:
                if change.new_mode == "120000":
                    os.symlink(data, tmp, dir_fd=dfd)
                else:
                    fd = os.open(tmp, _FILE_FLAGS, 0o666, dir_fd=dfd)
                    try:
                        view = memoryview(data)
                        while view:
                            view = view[os.write(fd, view) :]
                        os.fchmod(fd, _new_mode(dfd, name, fd, change.new_mode))
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException as exc:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dfd)
                if isinstance(exc, (IsADirectoryError, NotADirectoryError)):
                    raise Skipped("a folder is in its place") from None
                if isinstance(exc, PermissionError):
                    raise Skipped(f"cannot write it: {exc.strerror}") from None
                raise
            with contextlib.suppress(OSError):
                os.fsync(dfd)
        finally:
            os.close(dfd)

    def _chmod(self, dfd: int, name: bytes, change: Change) -> None:
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dfd)
        except OSError as exc:
            raise Skipped(f"cannot open it: {exc.strerror}") from None
        try:
            bits = stat.S_IMODE(os.fstat(fd).st_mode)
            bits = bits | ((bits & 0o444) >> 2) if change.new_mode == "100755" else bits & ~0o111
            os.fchmod(fd, bits)
        finally:
            os.close(fd)
