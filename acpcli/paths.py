"""Where acpcli keeps its state: one root directory and the paths under it.

Invariants this module keeps:

* **One root.** Every path acpcli reads or writes derives from :func:`home_dir`
  (``$ACPCLI_HOME`` if set, else the platform's config directory), or, within
  :func:`home_for` (the Python API's ``connect(home=...)``), the folder it names: for the
  task it is entered in and the tasks started inside it, never the process's environment.
* **Nothing is created on import or on asking for a path.** Directories are created on
  first write, with mode 0700, by :func:`ensure_dir` (the umask cannot loosen them).
* **Private files.** Every file that holds a transcript or a log (the index and its ``-wal``/
  ``-shm`` files, ``--log-file``, the agents' stderr logs, ``acpcli.log``, REPL history, the
  demo agent's stored sessions) is 0600 whatever the umask: created by :func:`open_private`
  (or :func:`create_private`), or brought there by :func:`tighten`.

* **Private to its user.** A home or session index that another user owns, or that group or
  others may write, is refused (``ConfigError``, exit 3), since whoever can
  write it can read the transcripts and plant the command lines and agents acpcli runs; so is
  a home that is not a directory, or an index that is not a file (:func:`state_refusal` says
  why; its callers raise). ``ACPCLI_ALLOW_SHARED_HOME=1``
  lets a shared one be used on purpose (:func:`shared_allowed`); a command line recorded in it
  is then never run (:func:`private_state`).

It imports nothing of acpcli and nothing heavier
than :mod:`pathlib`: the config loader, logging and completion need these paths on the
start-up path.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

APP_NAME = "acpcli"
#: Set to 1 to use a home or session index that is not private to this user, on purpose.
ALLOW_SHARED_ENV = "ACPCLI_ALLOW_SHARED_HOME"

#: The home of the connection whose code runs in this context (:func:`home_for`).
_HOME: ContextVar[Path | None] = ContextVar("acpcli_home", default=None)


@contextmanager
def home_for(home: Path) -> Iterator[None]:
    """:func:`home_dir` is ``home`` for the code that runs inside this block, and for the
    tasks started inside it (a context variable: other tasks and threads, and the process's
    environment, are left as they are)."""
    token = _HOME.set(home)
    try:
        yield
    finally:
        _HOME.reset(token)


def home_dir(*, given: bool = True) -> Path:
    """The root of all acpcli state: the home of :func:`home_for` (unless ``given`` is
    False), else ``$ACPCLI_HOME``, else the platform config dir.

    Linux and other Unixes: ``$XDG_CONFIG_HOME/acpcli`` (when absolute) or
    ``~/.config/acpcli``; macOS: ``~/Library/Application Support/acpcli``; Windows:
    ``%APPDATA%\\acpcli``. The directory is not created here.
    """
    pinned = _HOME.get() if given else None
    if pinned is not None:
        return pinned
    override = os.environ.get("ACPCLI_HOME")
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        base = Path(appdata) if appdata else Path.home() / "AppData" / "Roaming"
        return base / APP_NAME
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP_NAME
    xdg = os.environ.get("XDG_CONFIG_HOME")
    # The XDG spec says relative values are invalid and must be ignored.
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / APP_NAME
    return Path.home() / ".config" / APP_NAME


def db_path() -> Path:
    """The session index and event log: ``<home>/acpcli.db``."""
    return home_dir() / "acpcli.db"


def config_path() -> Path:
    """The user configuration: ``<home>/config.toml``."""
    return home_dir() / "config.toml"


def log_dir() -> Path:
    """Where diagnostic logs go: ``<home>/logs/`` (not created here)."""
    return home_dir() / "logs"


def history_dir() -> Path:
    """Where REPL input history goes: ``<home>/history/`` (not created here)."""
    return home_dir() / "history"


def ensure_dir(path: Path) -> Path:
    """Create ``path`` and any missing parents with mode 0700; return it.

    Existing directories keep their mode: we only tighten what we create. The explicit
    chmod is there because ``mkdir``'s mode is filtered by the umask.
    """
    missing: list[Path] = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:  # another process won the race; leave its mode alone
            continue
        os.chmod(d, 0o700)
    return path


PRIVATE_FILE = 0o600


def tighten(path: str | os.PathLike[str], fd: int | None = None) -> None:
    """Make a regular file 0600 (owner read/write only) if it is not already.

    Only regular files are touched (``--log-file /dev/stderr`` stays a terminal's business);
    errors (not the owner, a read-only file system) are ignored: tightening is best effort
    on a file someone else made, and files acpcli creates are 0600 from the start.
    """
    try:
        info = os.fstat(fd) if fd is not None else os.stat(path)
        if not stat.S_ISREG(info.st_mode) or stat.S_IMODE(info.st_mode) == PRIVATE_FILE:
            return
        if info.st_uid != os.getuid():
            return
        if fd is not None:
            os.fchmod(fd, PRIVATE_FILE)
        else:
            os.chmod(path, PRIVATE_FILE)
    except (OSError, AttributeError):  # AttributeError: no getuid/fchmod (Windows)
        return


def create_private(path: str | os.PathLike[str], flags: int = os.O_WRONLY | os.O_CREAT) -> int:
    """Open (creating it if needed) ``path`` with mode 0600 whatever the umask; return the fd.

    Missing parent directories are created 0700 (:func:`ensure_dir`).
    """
    ensure_dir(Path(path).parent)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE)
    tighten(path, fd)
    return fd


def open_private(path: str | os.PathLike[str], mode: str = "ab", **kwargs: Any) -> IO[Any]:
    """:func:`open` for a private file: appending (``"ab"``, ``"a"``) or truncating (``"wb"``,
    ``"w"``), created 0600 (and an existing one tightened to 0600)."""
    flags = os.O_WRONLY | os.O_CREAT
    flags |= os.O_APPEND if mode.startswith("a") else os.O_TRUNC
    return os.fdopen(create_private(path, flags), mode, **kwargs)


# --------------------------------------------------------------------------------------
# Whose state it is
# --------------------------------------------------------------------------------------


def shared_allowed() -> bool:
    """Whether ``ACPCLI_ALLOW_SHARED_HOME`` says a shared home or index may be used."""
    return os.environ.get(ALLOW_SHARED_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _stat(path: Path) -> tuple[os.stat_result | None, str | None]:
    """``path``'s stat (links followed), or None for a missing one; or, when a part of the
    path on the way is not a directory, None and which part that is."""
    try:
        return os.stat(path), None
    except NotADirectoryError:
        for parent in path.parents:
            if parent.exists() and not parent.is_dir():
                return None, str(parent)
        return None, None
    except OSError:  # missing, or not ours to look at: opening it will say
        return None, None


def not_private(path: Path) -> str | None:
    """Why ``path`` is not this user's own, in a few words (``owned by another user (uid
    1001)``, ``writable by group and others (mode 0777)``); None when it is, or is missing.
    Sticky directories (``/tmp``) are no exception: they are where other users meet."""
    if not hasattr(os, "getuid"):  # Windows: no owners and modes to compare
        return None
    info, _ = _stat(path)
    if info is None:
        return None
    if info.st_uid != os.getuid():
        return f"owned by another user (uid {info.st_uid})"
    loose = [who for who, bit in (("group", stat.S_IWGRP), ("others", stat.S_IWOTH)) if info.st_mode & bit]
    if loose:
        return f"writable by {' and '.join(loose)} (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def _wrong_kind(path: Path, *, directory: bool) -> str | None:
    info, blocker = _stat(path)
    if blocker is not None:
        return f"cannot be used: {blocker} is a file, not a directory"
    if info is None:
        return None
    if directory and not stat.S_ISDIR(info.st_mode):
        return "is a file, not a directory" if stat.S_ISREG(info.st_mode) else "is not a directory"
    if not directory and not stat.S_ISREG(info.st_mode):
        return "is a directory, not a file" if stat.S_ISDIR(info.st_mode) else "is not a regular file"
    return None


def home_name(path: Path | None = None) -> str:
    """How a message names the home: ``ACPCLI_HOME /x`` when the variable chose it."""
    home = home_dir() if path is None else path
    return f"ACPCLI_HOME {home}" if os.environ.get("ACPCLI_HOME") else f"the acpcli home {home}"


#: A refusal: the one line, and the hint line (or None).
Refusal = tuple[str, "str | None"]


def state_refusal(path: Path, *, directory: bool | None, name: str) -> Refusal | None:
    """Why ``path`` (``name`` says what it is in the message, path included) must not be
    used, as the line (and hint) of the :class:`~acpcli.errors.ConfigError` (exit 3) its
    user raises: it is the wrong kind of thing (a home that is a file, an index that is a
    directory; ``directory=None``: not checked), or not this user's own (:func:`not_private`)
    and not :func:`shared_allowed`. None: it may be used (a missing path may)."""
    wrong = None if directory is None else _wrong_kind(path, directory=directory)
    if wrong is not None:
        return f"{name} {wrong}", None
    problem = None if shared_allowed() else not_private(path)
    if problem is None:
        return None
    if problem.startswith("owned"):
        fix = "use a home of your own" if path.is_dir() else "use a home and files of your own"
    else:
        fix = f"if nobody else wrote it, `chmod {'700' if path.is_dir() else '600'} {path}`"
    return (
        f"{name} is {problem}: refusing to use it (another user could read your sessions or "
        "change what acpcli runs)",
        f"{fix}; or set {ALLOW_SHARED_ENV}=1 to share it on purpose",
    )


def home_refusal(db: Path | None = None) -> Refusal | None:
    """:func:`state_refusal` of the home, then of the session index ``db`` in it (default
    :func:`db_path`)."""
    home = home_dir()
    index = db_path() if db is None else db
    return state_refusal(home, directory=True, name=home_name(home)) or state_refusal(
        index, directory=False, name=f"the session index {index}"
    )


def private_state(db: Path | None = None) -> bool:
    """Whether the home and the session index ``db`` are this user's own and nobody else
    may write them: only then is a command line recorded in the index run again."""
    index = db_path() if db is None else db
    return not_private(index.parent) is None and not_private(index) is None and not_private(home_dir()) is None
