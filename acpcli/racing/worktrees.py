"""A candidate's own copy of the user's tree: made, measured and removed.

In a repository (:func:`inspect` finds it), a candidate's tree is ``git worktree add --detach``
at HEAD under ``ACPCLI_HOME/races/RACE/`` (never in the user's tree), with the user's
uncommitted changes copied over: the tracked files that differ from HEAD (staged or not;
deleted ones deleted) and the untracked ones that are not ignored, byte for byte. In a plain
folder it is a copy of the folder (bounded: :data:`MAX_COPY_FILES`, :data:`MAX_COPY_BYTES`).

What a candidate changed is measured against its *baseline*: the tree as it was handed over
(HEAD plus the user's changes), written into the race's private store (a bare git folder that
borrows the user's objects through ``objects/info/alternates``, run by
:class:`acpcli.worktree.git.Git`: no user setting, hook or filter applies). The user's
repository is only read: ``git worktree add`` writes its own admin folder
(``.git/worktrees/NAME``) and nothing else; :func:`remove` takes it away again (``git worktree
remove`` and ``prune``), so no ref, branch or worktree of a race is left. No object is ever
written into the user's repository (the baseline and results go to the private store).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from acpcli.errors import StorageError, UsageError
from acpcli.worktree.git import ATTRIBUTES, Git, GitError, find_git
from acpcli.worktree.userrepo import UserRepo, find_repo

#: A plain folder with more files than this is not copied (race in a repository instead).
MAX_COPY_FILES = 50_000
#: ... nor one holding more bytes than this.
MAX_COPY_BYTES = 2 << 30

#: errnos that mean "the disk (or the quota, or the file size limit) is full".
FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})

#: What ``git worktree add`` runs with on the user's repository: no hook, no fsmonitor, no
#: filter that would fetch or run anything (LFS files stay pointers), no prompt.
_USER_SETTINGS: tuple[str, ...] = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "filter.lfs.process=",
    "filter.lfs.smudge=",
    "filter.lfs.required=false",
    "submodule.recurse=false",
    "advice.detachedHead=false",
)


@dataclass(frozen=True)
class Source:
    """Where a race starts: the user's directory and what it is.

    ``kind`` is ``"repo"`` (``top`` the work tree's top, ``head`` the commit) or ``"folder"``
    (``top`` the folder itself). ``rel`` is the directory's place under ``top`` (``""``: the top),
    so a candidate's cwd is ``its tree / rel``."""

    kind: str
    cwd: Path
    top: Path
    rel: str
    head: str | None = None
    repo: UserRepo | None = None
    submodules: bool = False


class DiskFull(StorageError):
    """The disk filled up while a race's trees were made: what was made is removed."""


def _git_exe() -> str:
    exe, why = find_git()
    if exe is None:
        raise UsageError(f"a race in a repository needs git: {why}")
    return exe


def user_git(top: Path, *args: str, timeout: float = 600.0, ok: Sequence[int] = (0,)) -> bytes:
    """Run ``git ARGS`` in the user's repository at ``top`` (reading it; ``worktree
    add/remove/prune`` write only their admin folder). The user's config applies (ignore
    rules, settings), never a ``GIT_*`` variable of the environment, a hook or a filter."""
    argv: list[str] = [_git_exe(), "--no-optional-locks"]
    for setting in _USER_SETTINGS:
        argv += ["-c", setting]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    try:
        done = subprocess.run(
            [*argv, *args], cwd=top, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise GitError(args, -9, b"took too long and was stopped") from None
    except OSError as exc:
        raise GitError(args, -1, str(exc).encode()) from exc
    if done.returncode not in ok:
        raise GitError(args, done.returncode, done.stderr)
    return done.stdout


_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def repo_lock(source: Source) -> Iterator[None]:
    """One ``git worktree add``/``remove`` at a time in the user's repository: among this
    process's threads, and among acpcli processes (``ACPCLI_HOME/locks/worktrees-HASH.lock``,
    HASH of the repository's git folder; never a file of the user's)."""
    import fcntl
    import hashlib

    from acpcli.history.lock import lock_dir
    from acpcli.paths import ensure_dir

    common = source.repo.common_dir if source.repo is not None else source.top
    key = hashlib.sha256(os.fsencode(os.path.realpath(common))).hexdigest()[:24]
    with _THREAD_LOCKS_GUARD:
        lock = _THREAD_LOCKS.setdefault(key, threading.Lock())
    with lock:
        fd = os.open(ensure_dir(lock_dir()) / f"worktrees-{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _bare(folder: Path) -> bool:
    return (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir()


def inspect(cwd: Path) -> Source:
    """What ``cwd`` is for a race: a repository with a commit, or a plain folder.
    :class:`UsageError` (one line) for a bare repository, a repository without commits or a
    folder that is not there."""
    cwd = cwd.resolve()
    if not cwd.is_dir():
        raise UsageError(f"{cwd} is not a folder")
    repo = find_repo(cwd)
    if repo is None:
        for folder in (cwd, *cwd.parents):
            if _bare(folder) and (folder / "config").is_file():
                raise UsageError(f"{folder} is a bare git repository: there is no working tree to race in")
        return Source(kind="folder", cwd=cwd, top=cwd, rel="")
    head = user_git(repo.top, "rev-parse", "--verify", "-q", "HEAD^{commit}", ok=(0, 1)).decode().strip()
    if not head:
        raise UsageError(
            f"the repository at {repo.top} has no commits yet: commit once (a race starts each agent at HEAD)"
        )
    rel = cwd.relative_to(repo.top).as_posix() if cwd != repo.top else ""
    return Source(
        kind="repo", cwd=cwd, top=repo.top, rel="" if rel == "." else rel, head=head, repo=repo,
        submodules=(repo.top / ".gitmodules").is_file(),
    )


# --------------------------------------------------------------------------------------
# The race's private store
# --------------------------------------------------------------------------------------


def make_store(store: Path, source: Source) -> Git:
    """A bare private git folder at ``store`` (borrowing the user's objects in a repository)."""
    exe = _git_exe()
    git = Git(exe, store)
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    git.run("init", "--bare", "-q", str(store))
    (store / "info").mkdir(exist_ok=True)
    (store / "info" / "attributes").write_bytes(ATTRIBUTES)
    if source.repo is not None and source.repo.sha1:
        (store / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (store / "objects" / "info" / "alternates").write_text(str(source.repo.objects.resolve()) + "\n")
    return git


def open_store(store: Path) -> Git:
    return Git(_git_exe(), store)


def _excludes(source_exclude: Path | None, place: Path) -> Path:
    """The exclude file of a tree: the user's ``info/exclude`` (copied; may be empty)."""
    data = b""
    if source_exclude is not None:
        try:
            data = source_exclude.read_bytes()
        except OSError:
            data = b""
    place.write_bytes(data)
    return place


def snapshot(git: Git, tree: Path, index: Path, excludes: Path, *, paths: Sequence[bytes] | None = None) -> str:
    """The tree object of ``tree`` as it is now, through ``index`` (kept between calls, so
    only what changed is hashed). ``paths``: only these were changed since the index last
    saw the tree (else every file is looked at). Ignored files are left out."""
    if paths is None:
        git.run("add", "-A", "--ignore-errors", "--", ".", work_tree=tree, index=index, excludes=excludes, ok=(0, 1))
    elif paths:
        git.run(
            "update-index", "--add", "--remove", "--ignore-submodules", "-z", "--stdin",
            input=b"".join(p + b"\0" for p in paths), work_tree=tree, index=index, excludes=excludes,
        )
    return git.run("write-tree", work_tree=tree, index=index).decode().strip()


@dataclass
class Changed:
    """One file a candidate changed: its path (as text, shown safe by callers), lines added
    and removed (None for a binary file) and its status letter (A, M, D, T)."""

    path: str
    added: int | None
    removed: int | None
    status: str


def changes(git: Git, base: str, result: str) -> list[Changed]:
    """What differs between two trees of the store, file by file (no renames)."""
    if base == result:
        return []
    numstat = git.run("diff-tree", "-r", "-z", "--no-renames", "--numstat", base, result)
    status = git.run("diff-tree", "-r", "-z", "--no-renames", "--name-status", base, result)
    letters: dict[bytes, str] = {}
    parts = status.split(b"\0")
    for i in range(0, len(parts) - 1, 2):
        letters[parts[i + 1]] = parts[i].decode("ascii", "replace")[:1]
    found = []
    for item in numstat.split(b"\0"):
        if not item:
            continue
        added, removed, path = item.split(b"\t", 2)
        found.append(
            Changed(
                path=os.fsdecode(path),
                added=int(added) if added != b"-" else None,
                removed=int(removed) if removed != b"-" else None,
                status=letters.get(path, "M"),
            )
        )
    return found


def diff(git: Git, base: str, result: str) -> bytes:
    """A binary patch from ``base`` to ``result`` (``git apply`` takes it)."""
    return git.run("diff-tree", "-p", "--binary", "--no-renames", "--full-index", base, result)


# --------------------------------------------------------------------------------------
# Making a candidate's tree
# --------------------------------------------------------------------------------------


def _uncommitted(top: Path) -> list[bytes]:
    """The user's changes against HEAD: tracked files that differ (staged or not) and
    untracked files that are not ignored (paths relative to the top, as git names them)."""
    tracked = user_git(top, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--ignore-submodules=all", "HEAD")
    untracked = user_git(top, "ls-files", "-z", "--others", "--exclude-standard")
    seen: dict[bytes, None] = {}
    for path in (*tracked.split(b"\0"), *untracked.split(b"\0")):
        if path and not path.endswith(b"/"):  # (a nested repository: left out)
            seen[path] = None
    return list(seen)


def _copy_one(src: Path, dst: Path) -> None:
    """``src`` (a file or a link, never followed) to ``dst``, or ``dst`` removed when ``src``
    is gone. A folder at ``src`` (a submodule) is left alone."""
    try:
        st = os.lstat(src)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        return
    if os.path.lexists(dst):
        if os.path.isdir(dst) and not os.path.islink(dst):
            shutil.rmtree(dst)
        else:
            os.unlink(dst)
    if st is None:
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dst)
    elif stat.S_ISREG(st.st_mode):
        shutil.copy2(src, dst, follow_symlinks=False)


def _copy_folder(src: Path, dst: Path, skip: Path) -> None:
    """A copy of the folder ``src`` at ``dst``: files with their bytes, times and modes, links
    as links (never followed), ``skip`` (ACPCLI_HOME, when inside) left out. The first error
    is raised as it is (a full disk: ENOSPC, EFBIG)."""
    dst.mkdir(mode=0o700)
    for root, dirs, names in os.walk(src):
        here = Path(root)
        into = dst / here.relative_to(src)
        keep = []
        for d in dirs:
            path = here / d
            if path == skip or path.is_symlink():
                if path.is_symlink():
                    os.symlink(os.readlink(path), into / d)
                continue
            (into / d).mkdir()
            shutil.copystat(path, into / d, follow_symlinks=False)
            keep.append(d)
        dirs[:] = keep
        for name in names:
            path = here / name
            if path.is_symlink():
                os.symlink(os.readlink(path), into / name)
            elif path.is_file():
                shutil.copy2(path, into / name, follow_symlinks=False)


def _folder_size(folder: Path, skip: Path) -> tuple[int, int]:
    files = size = 0
    for root, dirs, names in os.walk(folder):
        if Path(root) == skip or skip in Path(root).parents:
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if (Path(root) / d) != skip]
        for name in names:
            files += 1
            try:
                size += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
        if files > MAX_COPY_FILES or size > MAX_COPY_BYTES:
            break
    return files, size


def check_copyable(source: Source, home: Path) -> None:
    """:class:`UsageError` for a plain folder too large to copy for each candidate."""
    if source.kind != "folder":
        return
    files, size = _folder_size(source.top, home.resolve())
    if files > MAX_COPY_FILES or size > MAX_COPY_BYTES:
        raise UsageError(
            f"{source.top} is too large to copy for each agent (over {MAX_COPY_FILES} files or "
            f"{MAX_COPY_BYTES >> 30} GiB): race in a git repository (each agent then gets a worktree)"
        )


@dataclass
class Prepared:
    """A candidate's tree once made: where it is, where its agent runs, its baseline tree."""

    tree: Path
    cwd: Path
    index: Path
    excludes: Path
    base: str


def prepare(source: Source, git: Git, tree: Path, index: Path, excludes: Path, home: Path) -> Prepared:
    """Make one candidate's tree at ``tree`` (see the module docstring); its baseline is
    written to the store ``git`` through the private ``index``. A full disk raises
    :class:`DiskFull` (what this call made is removed: the caller removes the rest)."""
    try:
        return _prepare(source, git, tree, index, excludes, home)
    except (OSError, GitError) as exc:
        full = exc.errno in FULL if isinstance(exc, OSError) else (exc.disk_full or "file too large" in exc.stderr.lower())
        try:
            remove_tree(source, tree)
        except (OSError, GitError):
            pass
        if full:
            raise DiskFull(f"the disk is full: the race's worktrees could not be made under {tree.parent} (nothing is left of them)") from None
        if isinstance(exc, GitError):
            raise StorageError(f"could not make a worktree for the race: {exc.detail}") from None
        raise StorageError(f"could not make a copy for the race: {exc.strerror or exc}") from None


def _prepare(source: Source, git: Git, tree: Path, index: Path, excludes: Path, home: Path) -> Prepared:
    if source.kind == "repo":
        assert source.repo is not None and source.head is not None
        # git reads every worktree's admin folder while it adds or removes one, and fails on
        # one being made ("failed to read .git/worktrees/X/commondir"): the admin step is
        # one at a time per repository (races of other processes too); the files are then
        # written in parallel, each tree by itself.
        with repo_lock(source):
            user_git(source.top, "worktree", "add", "--detach", "--no-checkout", "-q", str(tree), source.head)
        user_git(tree, "reset", "--hard", "-q", source.head)
        carried = _uncommitted(source.top)
        for path in carried:
            _copy_one(source.top / os.fsdecode(path), tree / os.fsdecode(path))
        _excludes(source.repo.exclude, excludes)
        # The worktree's own index knows HEAD's files and their stat data: only the carried
        # files are hashed into the baseline.
        gitdir = _worktree_gitdir(tree)
        shutil.copyfile(gitdir / "index", index)
        base = snapshot(git, tree, index, excludes, paths=carried)
    else:
        _copy_folder(source.top, tree, home.resolve())
        _excludes(None, excludes)
        base = snapshot(git, tree, index, excludes)
    cwd = tree / source.rel if source.rel else tree
    cwd.mkdir(parents=True, exist_ok=True)
    return Prepared(tree=tree, cwd=cwd, index=index, excludes=excludes, base=base)


def _worktree_gitdir(tree: Path) -> Path:
    text = (tree / ".git").read_text(encoding="utf-8", errors="surrogateescape").strip()
    target = Path(text.removeprefix("gitdir:").strip())
    return target if target.is_absolute() else tree / target


def remove_tree(source: Source | None, tree: Path) -> None:
    """Remove a candidate's tree: in a repository ``git worktree remove --force`` (its admin
    folder goes with it; only that one: never a ``prune`` of the user's other worktrees),
    then whatever is left of the folder."""
    admin: Path | None = None
    if source is not None and source.kind == "repo" and os.path.isfile(tree / ".git"):
        with contextlib.suppress(OSError):
            admin = _worktree_gitdir(tree)
        with contextlib.suppress(GitError), repo_lock(source):
            user_git(source.top, "worktree", "remove", "--force", "--force", str(tree), ok=(0, 128))
    if os.path.lexists(tree):
        shutil.rmtree(tree, ignore_errors=True)
    if admin is not None and source is not None and source.repo is not None:
        worktrees = source.repo.common_dir / "worktrees"
        if admin.parent == worktrees and admin.exists():  # git could not: ours alone goes
            shutil.rmtree(admin, ignore_errors=True)
        with contextlib.suppress(OSError):
            worktrees.rmdir()  # (only when empty, as git leaves it)
