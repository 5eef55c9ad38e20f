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

It imports nothing of acpcli and nothing heavier than :mod:`pathlib`: the config loader,
logging and completion need these paths on the start-up path.
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
