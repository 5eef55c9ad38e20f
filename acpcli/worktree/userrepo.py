"""The user's repository around a root, read and never written.

:func:`find_repo` finds it by looking for ``.git`` from the root up (a folder, or a file that
points elsewhere, as in a linked worktree), without running git. What is read of it:

* its objects folder, which the private store borrows through ``objects/info/alternates``;
* its index, *copied* as the private index's starting point when it can be trusted
  (:func:`seed_problem`): its stat data then lets git hash only the files that changed since
  the user's last ``git status`` or ``git add``, as git itself does;
* ``info/exclude``, honoured like the ``.gitignore`` files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class UserRepo:
    """A repository of the user's: its work tree's top, its git folder, its common folder."""

    top: Path
    git_dir: Path
    common_dir: Path

    @property
    def index(self) -> Path:
        return self.git_dir / "index"

    @property
    def objects(self) -> Path:
        return self.common_dir / "objects"

    @property
    def exclude(self) -> Path:
        return self.common_dir / "info" / "exclude"

    @property
    def sha1(self) -> bool:
        """Whether its objects are named by SHA-1, as the store's are (else nothing of it can
        be borrowed: the root is recorded as a plain folder)."""
        return _SHA256.search(_read(self.common_dir / "config")) is None


def _git_dir_of(dotgit: Path) -> Path | None:
    """The git folder a ``.git`` entry names: itself (a folder with a ``HEAD``), or the one a
    ``gitdir:`` file points to."""
    try:
        if dotgit.is_dir():
            return dotgit if (dotgit / "HEAD").exists() else None
        if dotgit.is_file():
            text = dotgit.read_bytes()[:4096].decode("utf-8", "surrogateescape").strip()
            if text.startswith("gitdir:"):
                target = Path(text[len("gitdir:") :].strip())
                target = target if target.is_absolute() else dotgit.parent / target
                return target if (target / "HEAD").exists() else None
    except OSError:
        return None
    return None


def find_repo(root: Path) -> UserRepo | None:
    """The repository whose work tree holds ``root`` (``root`` itself or a parent having a
    ``.git``), or None (a plain folder)."""
    for folder in (root, *root.parents):
        git_dir = _git_dir_of(folder / ".git")
        if git_dir is None:
            continue
        common = git_dir
        try:
            text = (git_dir / "commondir").read_bytes().decode("utf-8", "surrogateescape").strip()
        except OSError:
            text = ""
        if text:
            common = Path(text) if os.path.isabs(text) else git_dir / text
        return UserRepo(top=folder, git_dir=git_dir, common_dir=common)
    return None


#: Attributes that make git store something other than the file's bytes (set, or given a value).
_CONVERTING = re.compile(rb"(?:^|[\s])(?:text|eol|crlf|filter|ident|working-tree-encoding)(?:=|\s|$)", re.M)
#: Settings of the user's that convert line endings when git hashes a file.
_EOL_SETTING = re.compile(rb"^\s*(?:autocrlf|eol)\s*=\s*(?:true|input|crlf)\b", re.I | re.M)


_SHA256 = re.compile(rb"^\s*objectformat\s*=\s*sha256\b", re.I | re.M)


def _read(path: Path, limit: int = 1 << 20) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""


def index_entries(path: Path) -> int | None:
    """How many entries a git index holds (its header), or None when it is not one."""
    head = _read(path, 12)
    if len(head) < 12 or head[:4] != b"DIRC":
        return None
    return int.from_bytes(head[8:12], "big")


def seed_problem(repo: UserRepo, listing: bytes, prefix: bytes = b"") -> str | None:
    """Why the user's index cannot seed the private one (None: it can).

    ``listing`` is ``git ls-files -z -v`` of the copied index (the entries under ``prefix``, the
    root's place in the work tree; the ``.gitattributes`` of the folders above it are read from
    the disk). The stat data of an entry only
    says "this file holds this blob" when git stored the file's bytes as they are, and when
    git was allowed to look: not with an assume-unchanged or skip-worktree entry, not with
    line-ending or filter attributes (git LFS stores a pointer, ``text`` stores LF), not with
    ``core.autocrlf``. A split index names a file beside the user's index and is not copied.
    """
    try:
        if any(p.name.startswith("sharedindex.") for p in repo.git_dir.iterdir()):
            return "split index"
    except OSError:
        return "unreadable git folder"
    for config in (repo.common_dir / "config", Path.home() / ".gitconfig", _xdg_git() / "config"):
        if _EOL_SETTING.search(_read(config)):
            return "line-ending settings"
    if _CONVERTING.search(_read(repo.common_dir / "info" / "attributes")):
        return "attributes"
    parts = [p for p in prefix.split(b"/") if p]
    for depth in range(len(parts)):  # the folders above the root: their attributes apply to it
        above = repo.top.joinpath(*(os.fsdecode(p) for p in parts[:depth]))
        if _CONVERTING.search(_read(above / ".gitattributes")):
            return "attributes"
    # (regular expressions over the whole listing: a repository's 100,000 entries in a few ms)
    if (listing and not listing.startswith(b"H ")) or _NOT_CACHED.search(listing):
        return "assume-unchanged or skip-worktree entries"
    for found in _ATTRIBUTES_NAME.finditer(listing):
        start = listing.rfind(b"\0", 0, found.start()) + 1  # the entry: "H path/.gitattributes"
        name = listing[start + 2 : found.end()]
        if (name == b".gitattributes" or name.endswith(b"/.gitattributes")) and _CONVERTING.search(
            _read(repo.top / os.fsdecode(name))
        ):
            return "attributes"
    return None


#: An entry of ``ls-files -v`` (after the first) whose tag is not ``H`` (a plain cached file).
_NOT_CACHED = re.compile(rb"\0(?!H )")
#: Where an entry of ``ls-files -v`` ends with ``.gitattributes``.
_ATTRIBUTES_NAME = re.compile(rb"\.gitattributes(?=\0|\Z)")


def _xdg_git() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".config") / "git"
