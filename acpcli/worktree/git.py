"""Running git on the private checkpoint store, and never on anything of the user's.

Invariants this module keeps:

* **Our store only.** Every git this module starts has its own ``GIT_DIR`` (a bare directory
  under ``ACPCLI_HOME``) and, where an index is used, its own ``GIT_INDEX_FILE``. The user's
  repository is only ever *read* by git through ``objects/info/alternates`` (its objects) and
  as a work tree: no command run here writes a user's index, ref, stash, config or hook. (One
  thing git does there by design: when the store would write an object the user's repository
  already has, git refreshes the time of that object's file instead, its guard against
  ``gc`` pruning it. Its bytes never change.)
* **No outside settings.** The environment is the user's minus every ``GIT_*`` variable, with
  ``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null`` and ``GIT_ATTR_NOSYSTEM`` set: no
  system, global or repository config of the user's applies. The settings that change what
  is stored or run (hooks, filters, line endings, fsmonitor, the untracked cache, pagers,
  colours, automatic gc) are pinned with ``-c`` on every command (:data:`SETTINGS`), and the
  store's ``info/attributes`` turns off every conversion (``text``, ``eol``, ``filter``,
  ``ident``, ``working-tree-encoding``): a file is stored and restored byte for byte.
* **Bounded.** Every command has a timeout; a command that outlasts it is killed and reported
  as :class:`GitTimeout`.

Paths are passed to and read from git as bytes (``-z`` everywhere), so names with newlines,
spaces or bytes that are not UTF-8 round-trip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

#: The oldest git that has everything used here (``--pathspec-from-file``: 2.26).
MIN_VERSION = (2, 26)

#: The tree with nothing in it (git knows it without storing it).
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

#: The umask git runs under: the store holds the user's files, so what git writes there is
#: the user's alone (objects 0400, other files 0600, folders 0700), whatever the user's umask.
PRIVATE_UMASK = 0o077

#: Settings given with ``-c`` to every command: nothing of the user's configuration or of
#: git's defaults that run programs or rewrite content may apply to the store.
SETTINGS: tuple[str, ...] = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.fileMode=true",
    "core.ignoreCase=false",
    "core.precomposeUnicode=false",
    "core.protectNTFS=false",
    "core.quotePath=true",
    "core.sparseCheckout=false",
    "core.splitIndex=false",
    "core.attributesFile=/dev/null",
    "core.pager=cat",
    "core.askPass=",
    "color.ui=false",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "diff.renames=true",
    "diff.algorithm=myers",
    "log.showRoot=false",
    "log.showSignature=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "index.skipHash=false",
    # one thread: a checkpoint's index work is a few milliseconds, less than starting threads
    "index.threads=1",
    "core.preloadIndex=false",
    "feature.manyFiles=false",
    "submodule.recurse=false",
    "advice.addEmbeddedRepo=false",
    "advice.addIgnoredFile=false",
    "safe.directory=*",
    "user.name=acpcli",
    "user.email=acpcli@localhost",
)

#: What the store's ``info/attributes`` says for every path: no conversion of any kind.
ATTRIBUTES = b"* -text !eol -filter -ident -working-tree-encoding\n"

_VERSION = re.compile(rb"git version (\d+)\.(\d+)")
_found: tuple[str | None, str | None] | None = None


class GitError(Exception):
    """A git command of ours failed: its arguments, exit status and first lines of stderr."""

    def __init__(self, args: Sequence[str | bytes], returncode: int, stderr: bytes) -> None:
        self.command = [os.fsdecode(a) for a in args]
        self.returncode = returncode
        self.stderr = stderr.decode("utf-8", "replace")
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        self.detail = "; ".join(lines[-3:]) if lines else f"exit status {returncode}"
        verb = self.command[0] if self.command else "git"
        super().__init__(f"git {verb}: {self.detail}")

    @property
    def disk_full(self) -> bool:
        """Whether git said the disk (or the quota) is full."""
        text = self.stderr.lower()
        return "no space left" in text or "disk quota exceeded" in text


class GitTimeout(GitError):
    """A git command outlasted its time and was killed."""

    def __init__(self, args: Sequence[str | bytes], seconds: float) -> None:
        super().__init__(args, -9, f"took more than {seconds:.3g} s and was stopped".encode())
        self.seconds = seconds


def find_git() -> tuple[str | None, str | None]:
    """``(path to git, None)``, or ``(None, why checkpoints are off)`` when there is no usable git
    on PATH (missing, or older than :data:`MIN_VERSION`). Asked once per process."""
    global _found
    if _found is not None:
        return _found
    if os.name != "posix" or os.open not in os.supports_dir_fd:
        _found = (None, "they need a POSIX system (links and folders are restored without following links)")
        return _found
    exe = shutil.which("git")
    if exe is None:
        _found = (None, "git is not on PATH")
        return _found
    try:
        out = subprocess.run(
            [exe, "--version"], capture_output=True, timeout=30, env=clean_environment(), check=False
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        _found = (None, f"git on PATH cannot be run ({exc})")
        return _found
    m = _VERSION.search(out)
    if m is None:
        _found = (None, f"git on PATH ({exe}) does not say its version")
    elif (int(m.group(1)), int(m.group(2))) < MIN_VERSION:
        want = ".".join(map(str, MIN_VERSION))
        _found = (None, f"git {m.group(1).decode()}.{m.group(2).decode()} is too old (they need {want} or newer)")
    else:
        _found = (exe, None)
    return _found


def forget_git() -> None:
    """Look for git again on the next :func:`find_git` (tests change PATH)."""
    global _found
    _found = None


def clean_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The user's environment without any ``GIT_*`` variable, with git's outside configuration
    turned off, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_AUTHOR_NAME="acpcli",
        GIT_AUTHOR_EMAIL="acpcli@localhost",
        GIT_COMMITTER_NAME="acpcli",
        GIT_COMMITTER_EMAIL="acpcli@localhost",
        LC_ALL="C",
    )
    env.pop("LANGUAGE", None)
    if extra:
        env.update(extra)
    return env


class Git:
    """git bound to one private store (``git_dir``); :meth:`run` runs one command on it.

    ``work_tree`` and ``index`` are given per command (a store serves several roots, each
    with its own private index)."""

    def __init__(self, exe: str, git_dir: Path) -> None:
        self.exe = exe
        self.git_dir = git_dir

    def _argv(self, args: Sequence[str | bytes], excludes: Path | None) -> list[str | bytes]:
        settings: list[str | bytes] = []
        for setting in SETTINGS:
            settings += ["-c", setting]
        settings += ["-c", b"core.excludesFile=" + os.fsencode(excludes if excludes is not None else os.devnull)]
        return [self.exe, *settings, *args]

    def _env(self, work_tree: Path | None, index: Path | None) -> dict[str, str]:
        extra = {"GIT_DIR": str(self.git_dir)}
        if work_tree is not None:
            extra["GIT_WORK_TREE"] = str(work_tree)
        if index is not None:
            extra["GIT_INDEX_FILE"] = str(index)
        return clean_environment(extra)

    def blobs(self, oids: Sequence[str], *, timeout: float = 120.0) -> Iterator[tuple[str, bytes]]:
        """``(oid, content)`` of each blob, in order, read through one ``git cat-file --batch``
        (one blob in memory at a time). A missing object raises :class:`GitError`."""
        if not oids:
            return
        args = ["cat-file", "--batch"]
        proc = subprocess.Popen(
            self._argv(args, None),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self._env(None, None),
            cwd=self.git_dir,
            umask=PRIVATE_UMASK,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for oid in oids:
                proc.stdin.write(oid.encode("ascii") + b"\n")
                proc.stdin.flush()
                header = proc.stdout.readline().split()
                if len(header) != 3:
                    raise GitError(args, -1, b"object " + oid.encode() + b" is missing from the store")
                size = int(header[2])
                data = proc.stdout.read(size + 1)[:size]
                if len(data) != size:
                    raise GitError(args, -1, b"object " + oid.encode() + b" could not be read")
                yield oid, data
        finally:
            proc.stdin.close()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            if proc.stderr is not None:
                proc.stderr.close()

    def run(
        self,
        *args: str | bytes,
        input: bytes | None = None,
        work_tree: Path | None = None,
        index: Path | None = None,
        timeout: float = 120.0,
        excludes: Path | None = None,
        ok: Sequence[int] = (0,),
    ) -> bytes:
        """Run ``git ARGS`` on the store; its stdout. A status not in ``ok`` raises
        :class:`GitError`; a command running past ``timeout`` seconds is killed and raises
        :class:`GitTimeout`. Without a ``work_tree`` the command runs in the store."""
        try:
            done = subprocess.run(
                self._argv(args, excludes),
                input=input if input is not None else b"",
                capture_output=True,
                env=self._env(work_tree, index),
                cwd=work_tree if work_tree is not None else self.git_dir,
                timeout=max(timeout, 0.001),
                check=False,
                umask=PRIVATE_UMASK,
            )
        except subprocess.TimeoutExpired:
            raise GitTimeout(args, timeout) from None
        except OSError as exc:  # git went away from PATH, or the store's folder did
            raise GitError(args, -1, str(exc).encode()) from exc
        if done.returncode not in ok:
            raise GitError(args, done.returncode, done.stderr)
        return done.stdout
