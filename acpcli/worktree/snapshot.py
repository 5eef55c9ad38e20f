"""Recording the files of one root as a tree in the private store, as git does and no slower.

For each root the store keeps a private index. The first time, in a repository, it starts as a
copy of the user's index (when that can be trusted: :func:`~acpcli.worktree.userrepo.seed_problem`),
so git's stat data say which files changed since the user's last ``git status``, and the user's
objects are borrowed through alternates: nothing unchanged is hashed again. Then, each time:

1. ``git ls-files -m -d -o --exclude-standard`` lists what changed (one walk of the tree, like
   ``git status``), honouring ``.gitignore``, the user's ``info/exclude`` and ours (ACPCLI_HOME
   when it is inside the root, a restore's temporary files);
2. files over the size limit, and unreadable ones, are left out (and out of the index, if they
   were in it), said in the result; nested repositories too;
3. ``git update-index`` of the listed paths only (``git add -A`` of the whole root when there
   are many), then ``git write-tree`` of the root's part of the index.

Bounds: a root holding more than ``max_files`` files, or git running past the deadline (the
process is killed), gives up (:class:`TooLarge`); nothing is half recorded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from acpcli.paths import home_dir
from acpcli.worktree.git import EMPTY_TREE, Git, GitError, GitTimeout
from acpcli.worktree.restore import TEMP_PREFIX
from acpcli.worktree.store import Store, write_private
from acpcli.worktree.userrepo import UserRepo, find_repo, index_entries, seed_problem

#: Above this many changed paths, one ``git add -A`` of the whole root instead of a list.
#: (``git update-index`` of a list does not walk the tree again; a long list is the first
#: checkpoint of a plain folder, where ``git add`` is as fast.)
LIST_LIMIT = 500


class TooLarge(Exception):
    """The root is over the bounds: checkpoints give up on it (the message says which)."""


@dataclass(frozen=True)
class RootSpec:
    """A root as git sees it: the work tree git is given (the repository's top, or the root
    itself in a plain folder) and the root's place in it (``prefix``: ``b""`` or ``b"sub/dir/"``)."""

    number: int
    root: Path
    top: Path
    prefix: bytes
    repo: UserRepo | None

    @classmethod
    def of(cls, number: int, root: Path) -> RootSpec:
        repo = find_repo(root)
        if repo is not None and not repo.sha1:
            repo = None  # nothing of it can be borrowed: a plain folder (git never stores .git)
        if repo is None or repo.top == root:
            return cls(number, root, root, b"", repo)
        prefix = os.fsencode(root.relative_to(repo.top)) + b"/"
        return cls(number, root, repo.top, prefix, repo)


@dataclass
class Bounds:
    """How far a checkpoint may go: file size, files per root, and when to stop."""

    max_file_size: int
    max_files: int
    deadline: float  # time.monotonic()

    def left(self) -> float:
        return self.deadline - time.monotonic()


@dataclass
class RootSnapshot:
    """A root recorded: its tree, and what was left out (paths relative to the root)."""

    tree: str
    too_large: list[bytes] = field(default_factory=list)
    unreadable: list[bytes] = field(default_factory=list)
    nested: list[bytes] = field(default_factory=list)


def _escape(pattern: bytes) -> bytes:
    """A path as a literal ``.gitignore`` pattern."""
    out = bytearray()
    for i, byte in enumerate(pattern):
        ch = bytes([byte])
        if ch in b"\\*?[" or (i == 0 and ch in b"!#") or (ch == b" " and i == len(pattern) - 1):
            out += b"\\"
        out += ch
    return bytes(out)


def _excludes(spec: RootSpec) -> bytes:
    """Root ``spec``'s exclude file: the user's ``info/exclude``, a restore's temporary files,
    and ACPCLI_HOME when it is inside the work tree."""
    lines = []
    if spec.repo is not None:
        with contextlib.suppress(OSError):
            lines.append(spec.repo.exclude.read_bytes().rstrip(b"\n"))
    lines.append(_escape(TEMP_PREFIX) + b"*")
    try:
        home = home_dir().resolve()
        inside = home.relative_to(spec.top)
    except (OSError, ValueError, RuntimeError):
        inside = None
    if inside is not None and str(inside) not in ("", "."):
        raw = os.fsencode(inside)
        if b"\n" not in raw:
            lines.append(b"/" + _escape(raw) + b"/")
    return b"\n".join(lines) + b"\n"


def _literal(path: bytes, exclude: bool = False) -> bytes:
    return (b":(exclude,literal)" if exclude else b":(literal)") + path


def snapshot(git: Git, store: Store, spec: RootSpec, bounds: Bounds) -> RootSnapshot:
    """Record root ``spec`` (see the module docstring); its tree and what was left out.

    Raises :class:`TooLarge` past the bounds, :class:`~acpcli.worktree.git.GitError` when git
    fails (once more with a fresh index first: a damaged private index is rebuilt)."""
    index = store.index(spec.number)
    excludes = store.exclude(spec.number)
    store.write_if_changed(excludes, _excludes(spec))
    with contextlib.suppress(OSError):
        os.unlink(f"{index}.lock")  # left by a git that was killed (we hold the store's lock)
    seeded = index.exists()
    checking = False  # a fresh copy of the user's index: its entries are checked in the same walk
    if not seeded and spec.repo is not None and spec.repo.index.is_file():
        seeded = checking = _seed(spec, index, bounds)
    try:
        return _snapshot(git, spec, index, excludes, bounds, check_seed=checking)
    except _Untrusted:
        pass  # the user's index cannot say which files changed: start from nothing
    except GitTimeout:
        with contextlib.suppress(OSError):
            os.unlink(f"{index}.lock")  # the git killed at the bound may have taken it
        raise
    except GitError:
        if not seeded:
            raise
    with contextlib.suppress(OSError):
        os.unlink(index)
    return _snapshot(git, spec, index, excludes, bounds)


#: The tags ``ls-files -t -v -c`` gives a cached entry (lowercase: assume-unchanged; S: skip-worktree).
_CACHED_TAGS = frozenset((b"H", b"h", b"S", b"s"))


def _index_stamp(index: Path) -> bytes | None:
    """What says the private index file is the one a tree was written from: git replaces it
    whole (a new file, renamed) whenever it writes it; ls-files only reads it."""
    try:
        st = os.stat(index)
    except OSError:
        return None
    return b"%d %d %d %d" % (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _known_tree(index: Path) -> str | None:
    """The tree ``write-tree`` gave for this very index file (see :func:`_remember_tree`), or None."""
    stamp = _index_stamp(index)
    try:
        saved = index.with_name(index.name + ".tree").read_bytes()
    except OSError:
        return None
    got, _, tree = saved.rpartition(b" ")
    return tree.decode("ascii") if stamp is not None and got == stamp and len(tree) == 40 else None


def _remember_tree(index: Path, tree: str) -> None:
    """Keep ``tree`` beside the private index (a checkpoint with nothing changed since then
    needs no ``write-tree``: one git process less before every turn)."""
    stamp = _index_stamp(index)
    if stamp is None:
        return
    with contextlib.suppress(OSError):
        write_private(index.with_name(index.name + ".tree"), stamp + b" " + tree.encode("ascii"))


class _Untrusted(Exception):
    """The copy of the user's index cannot be trusted (:func:`seed_problem`)."""


def _seed(spec: RootSpec, index: Path, bounds: Bounds) -> bool:
    """Start the private index as a copy of the user's (keeping its times: git's racy-entry
    check reads the index file's own time); whether it was copied. Whether it can be trusted
    is checked by the first walk (``check_seed``)."""
    assert spec.repo is not None
    try:
        shutil.copy2(spec.repo.index, index)
        os.chmod(index, 0o600)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(index)
        return False
    entries = index_entries(index)
    if entries is None or entries > bounds.max_files:
        os.unlink(index)
        if entries is not None:
            raise TooLarge(f"the repository has more than {bounds.max_files} files")
        return False
    return True


def _snapshot(
    git: Git, spec: RootSpec, index: Path, excludes: Path, bounds: Bounds, *, check_seed: bool = False
) -> RootSnapshot:
    def run(*args: str | bytes, input: bytes | None = None) -> bytes:
        return git.run(*args, input=input, index=index, work_tree=spec.top, excludes=excludes, timeout=bounds.left())

    scope = [_literal(spec.prefix.rstrip(b"/"))] if spec.prefix else []
    # -c -v (a fresh copy of the user's index): every entry too, with its flags (lowercase:
    # assume-unchanged; S: skip-worktree), checked in this same walk
    every: list[str | bytes] = ["-c", "-v"] if check_seed else []
    listing = run("ls-files", "-z", "-t", "-m", "-d", "-o", "--exclude-standard", *every, "--", *scope)
    entries = [entry for entry in listing.split(b"\0") if entry]
    if check_seed:
        assert spec.repo is not None
        cached = [entry for entry in entries if entry[:1] in _CACHED_TAGS]
        if seed_problem(spec.repo, b"\0".join(cached), spec.prefix) is not None:
            raise _Untrusted
        entries = [entry for entry in entries if entry[:1] not in _CACHED_TAGS]
    tags: dict[bytes, bytes] = {}
    for entry in entries:
        tags.setdefault(entry[2:], entry[:1].upper())
    untracked = sum(1 for tag in tags.values() if tag == b"?")
    if (index_entries(index) or 0) + untracked > bounds.max_files:
        raise TooLarge(f"it has more than {bounds.max_files} files")
    result = RootSnapshot(tree=EMPTY_TREE)
    to_add: list[bytes] = []
    for path, tag in tags.items():
        if path.endswith(b"/"):  # a repository of its own inside the root
            result.nested.append(path.rstrip(b"/"))
            continue
        full = os.path.join(os.fsencode(spec.top), path)
        try:
            info = os.lstat(full)
        except FileNotFoundError:
            if tag != b"?":
                to_add.append(path)  # a deletion
            continue
        except OSError:
            result.unreadable.append(path)
            continue
        if stat.S_ISREG(info.st_mode):
            if bounds.max_file_size and info.st_size > bounds.max_file_size:
                result.too_large.append(path)
                continue
            if not os.access(full, os.R_OK):
                result.unreadable.append(path)
                continue
        to_add.append(path)
    left_out = result.too_large + result.unreadable
    if to_add:
        added = False
        if len(to_add) <= LIST_LIMIT:
            try:  # these paths only: no second walk of the tree
                run("update-index", "--add", "--remove", "--replace", "-z", "--stdin",
                    input=b"".join(p + b"\0" for p in sorted(to_add)))
                added = True
            except GitTimeout:
                raise
            except GitError:
                pass  # a file became a folder, or went away meanwhile: add the whole root instead
        if not added:
            excluded = [_literal(p, exclude=True) for p in left_out + result.nested]
            run("add", "-A", "--", *(scope or [_literal(b".")]), *excluded)
    tracked = [p for p in left_out if tags.get(p) != b"?"]
    if tracked:  # out of the index too, so that they are out of the checkpoint
        run("update-index", "--force-remove", "-z", "--stdin", input=b"".join(p + b"\0" for p in tracked))
    known = _known_tree(index) if not to_add and not tracked else None
    if known is not None:  # nothing changed since the last write-tree: the same tree
        result.tree = known
    else:
        try:
            result.tree = run("write-tree", *([b"--prefix=" + spec.prefix] if spec.prefix else [])).decode().strip()
        except GitTimeout:
            raise
        except GitError as exc:
            if not spec.prefix or "not found" not in exc.detail:
                raise
            result.tree = EMPTY_TREE  # nothing of the root is in the index: an empty root
        else:
            _remember_tree(index, result.tree)
    n = len(spec.prefix)
    result.too_large = [p[n:] for p in result.too_large]
    result.unreadable = [p[n:] for p in result.unreadable]
    result.nested = [p[n:] for p in result.nested]
    return result


def snapshot_paths(git: Git, store: Store, spec: RootSpec, paths: list[bytes], bounds: Bounds) -> RootSnapshot:
    """Root ``spec``'s tree once ``paths`` (relative to the root; just written by a restore)
    are added to its index as they are now: no walk of the tree."""
    index = store.index(spec.number)
    excludes = store.exclude(spec.number)

    def run(*args: str | bytes, input: bytes | None = None) -> bytes:
        return git.run(*args, input=input, index=index, work_tree=spec.top, excludes=excludes, timeout=bounds.left())

    if paths:
        run("update-index", "--add", "--remove", "--replace", "-z", "--stdin",
            input=b"".join(spec.prefix + p + b"\0" for p in sorted(paths)))
    try:
        tree = run("write-tree", *([b"--prefix=" + spec.prefix] if spec.prefix else [])).decode().strip()
    except GitError as exc:
        if not spec.prefix or "not found" not in exc.detail:
            raise
        tree = EMPTY_TREE
    return RootSnapshot(tree=tree)
