"""Where a session's host can be reached, and the lock that makes it the only one.

Every host has, under :func:`run_dir` (``ACPCLI_HOME/run``, 0700):

* ``<key>.lock`` — held (``flock``, exclusive) by the host for as long as it lives, and
  holding its pid and session id as JSON. The kernel releases it when the host dies, however
  it dies, so a lock that can be taken belongs to nobody: files left by a dead host are
  stale, removed by whoever notices, never trusted.
* ``<key>.sock`` — the host's unix socket (0600). Unix socket paths are short (about 100
  bytes): when ``ACPCLI_HOME`` is deep, sockets go to a private directory under the system's
  temporary directory instead (:func:`socket_dir`).
* ``<key>.start`` — taken by a command that starts a host, so two commands racing to start
  one for the same session end up with one.

``<key>`` is the session's local id when it is a short plain name (a UUID, ``demo-…``), else a
digest of it: ids come from agents and may hold anything.

A file or directory here that cannot be made or used (a read-only ``ACPCLI_HOME``, ``run/``
that is a file or a link, a directory where a lock or socket goes) is one line, exit 16
(:func:`unusable`), with the hint to run without a host (``--keep-alive 0``): never a
traceback, never a host that dies without a word.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from acpcli.errors import StorageError
from acpcli.paths import ensure_dir, home_dir

#: Longest socket path the platforms take (108 on Linux, 104 on macOS, with the NUL).
_SOCKET_PATH_MAX = 100


def run_dir() -> Path:
    """``ACPCLI_HOME/run``: the hosts' locks (and sockets when the path is short enough)."""
    return _private_dir(home_dir() / "run")


#: Ids used as they are in file names: short, plain, and never a digest's shape (``~`` prefix).
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")


def key(session_id: str) -> str:
    """The file-name key of a session: its id when plain and short, else ``~`` and a digest
    (ids come from agents; the two shapes cannot meet)."""
    if _PLAIN_ID.fullmatch(session_id):
        return session_id
    import hashlib

    return "~" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def socket_dir() -> Path:
    """Where sockets go: :func:`run_dir`, or, when its path is too long for a socket, a
    private directory of this user's under the temporary directory, one per ``ACPCLI_HOME``."""
    run = run_dir()
    if len(os.fsencode(run)) + 40 <= _SOCKET_PATH_MAX:  # "/" + a key of at most 33 + ".sock"
        return run
    import hashlib
    import tempfile

    home = os.fsencode(home_dir().resolve())
    digest = hashlib.sha256(home).hexdigest()[:16]
    # each directory made here is checked, not only the last: another user may have made
    # the first one in a shared temporary directory, to reach (or replace) what goes in it
    mine = _private_dir(Path(tempfile.gettempdir()) / f"acpcli-{os.getuid()}")
    return _private_dir(mine / digest)


def host_log(session_id: str) -> Path:
    """``ACPCLI_HOME/logs/host-<key>.log``: the log (stderr) of ``session_id``'s hosts."""
    from acpcli.paths import log_dir

    return log_dir() / f"host-{key(session_id)}.log"


def socket_path(session_id: str) -> Path:
    return socket_dir() / f"{key(session_id)}.sock"


def lock_path(session_id: str) -> Path:
    return run_dir() / f"{key(session_id)}.lock"


def start_path(session_id: str) -> Path:
    return run_dir() / f"{key(session_id)}.start"


#: What a command that needs a host and cannot have one is told to do instead.
NO_HOST_HINT = "run it without a live-session host, --keep-alive 0 (the agent then lives as long as the command)"


def unusable(path: str | os.PathLike[str], reason: str | OSError) -> StorageError:
    """The one line (exit 16, :class:`~acpcli.errors.StorageError`) of a host file or
    directory that cannot be made or used: a read-only ``ACPCLI_HOME``, ``run/`` that is a
    file or a link, a directory where a socket or a lock goes."""
    if isinstance(reason, OSError):
        reason = reason.strerror or str(reason)
    return StorageError(f"the session host cannot use {os.fspath(path)}: {reason}", hint=NO_HOST_HINT)


def _private_dir(path: Path) -> Path:
    """``path`` created 0700, and refused (:func:`unusable`) unless it is a directory of this
    user's that no one else can enter (a socket there is then reachable by this user only)."""
    try:
        ensure_dir(path)
        info = os.lstat(path)
    except OSError as err:
        raise unusable(path, err) from None
    if stat.S_ISLNK(info.st_mode):
        raise unusable(path, "a symbolic link, not a directory of this user's")
    if not stat.S_ISDIR(info.st_mode):
        raise unusable(path, "not a directory")
    if info.st_uid != os.getuid():
        raise unusable(path, "a directory of another user's")
    if stat.S_IMODE(info.st_mode) & 0o077:
        try:
            os.chmod(path, 0o700)
        except OSError as err:
            raise unusable(path, err) from None
    return path


def _open_file(path: Path) -> int:
    """``path`` opened read-write (created 0600): a lock; :func:`unusable` when it cannot be
    (a directory in its place, a read-only home)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as err:
        raise unusable(path, err) from None


def clear_socket(session_id: str) -> Path:
    """The host's socket path, with what a dead host left there removed (the caller holds
    the host lock, so nothing listens there); :func:`unusable` when something else is in
    the way (a directory)."""
    path = socket_path(session_id)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return path
    except OSError as err:
        raise unusable(path, err) from None
    if stat.S_ISDIR(info.st_mode):
        raise unusable(path, "a directory where the socket goes")
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as err:
        raise unusable(path, err) from None
    return path


@dataclass(frozen=True)
class HostLock:
    """A held host lock: the open file (the lock lives as long as it is open)."""

    path: Path
    fd: int

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)  # first: a new host takes a new file, never this one
        os.close(self.fd)


def take_host_lock(session_id: str) -> HostLock | None:
    """The host lock of ``session_id`` for this process, with its pid written in; None when
    another host holds it."""
    path = lock_path(session_id)
    while True:
        fd = _open_file(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        # The file may have been unlinked by its last holder between our open and our lock:
        # a lock on an unlinked file guards nothing, so try again on the current one.
        try:
            if os.stat(path).st_ino != os.fstat(fd).st_ino:
                os.close(fd)
                continue
        except FileNotFoundError:
            os.close(fd)
            continue
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({"pid": os.getpid(), "session": session_id}).encode())
        except OSError as err:  # a full disk: a lock nobody can read is no host
            os.close(fd)
            raise unusable(path, err) from None
        return HostLock(path, fd)


@dataclass(frozen=True)
class HostInfo:
    """A live host as its lock file says: the session it holds and its pid."""

    session_id: str
    pid: int
    lock: Path
    #: The agent's pid (its process group's id) once the host has started it.
    agent_pid: int | None = None


def holder(path: Path) -> HostInfo | None:
    """Who holds the host lock at ``path``: None when nobody does (a stale file is removed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: a live host
        else:
            # Nobody holds it: a host died here. Its files are stale.
            with contextlib.suppress(OSError):
                os.unlink(path)
            return None
        raw = _read_all(fd)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw)
        agent = data.get("agent_pid")
        return HostInfo(str(data["session"]), int(data["pid"]), path, agent if isinstance(agent, int) else None)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # being written right now: not yet a host to talk to


#: The most of a lock file that is read (a session id is an agent's choice: bounded here).
_LOCK_MAX = 1 << 20


def _read_all(fd: int) -> bytes:
    """The lock file's whole text (a long session id makes it long)."""
    data = b""
    while len(data) < _LOCK_MAX:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    return data


def describe(lock: HostLock, *, agent_pid: int | None) -> None:
    """Add the agent's pid to the held lock's record, for ``stop`` to end its process group
    should the host stop answering."""
    try:
        with open(lock.path, "rb") as f:
            data = json.loads(f.read(_LOCK_MAX))
        data["agent_pid"] = agent_pid
        record = json.dumps(data).encode()
        os.ftruncate(lock.fd, 0)
        os.pwrite(lock.fd, record, 0)
    except (OSError, ValueError, TypeError):
        pass  # `stop` then ends the host only


def hosts() -> Iterator[HostInfo]:
    """Every live host of this ``ACPCLI_HOME`` (stale lock files are removed on the way)."""
    directory = home_dir() / "run"
    if not directory.is_dir():
        return
    for path in sorted(directory.glob("*.lock")):
        info = holder(path)
        if info is not None:
            yield info


@contextlib.contextmanager
def starting(session_id: str) -> Iterator[None]:
    """Held while a command starts a host for ``session_id`` (blocking): the one that comes
    second finds the first one's host."""
    fd = _open_file(start_path(session_id))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
