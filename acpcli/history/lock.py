"""One writer per session: an advisory lock per session, held by whoever writes a turn.

Invariant this module keeps: **while a process holds a session's lock, no other acpcli process
writes a turn, a replay or a deletion of that session** -- so nothing of two commands
interleaves in the session's event log, its index record or what ``show`` rebuilds. Each
writer takes the lock before its first write and lets it go after its last one is flushed
(``prompt``: from before the agent starts to the end of the command; the REPL: for each turn;
``load``/``resume``: for the replay; ``sessions rm``: for the delete, and only if nobody holds it).

How: ``fcntl.flock`` on ``ACPCLI_HOME/locks/<name>.lock`` (one file per session id; the name is
the id made safe for a file name, with a hash of the whole id so that two ids never share a
file). The kernel drops the lock when its descriptor is closed or the process dies, so a crash
never leaves a stale lock. The holder writes its pid into the file, for messages only (it is
never trusted to say whether the lock is held). The descriptor is close-on-exec: an agent (or
what it leaves running) never inherits the lock.

Locks are per process and not re-entrant: a process takes a session's lock once (two
descriptors of one process exclude each other, like two processes). A lock file deleted while
held (:meth:`SessionLock.discard`, the session was removed) is noticed by a waiter, which then
locks the file now at the path.

Without ``fcntl`` (Windows), or when the lock file cannot be created (a read-only or full home,
where the session's writes cannot land either), there is no lock: every acquire succeeds.

This module imports nothing of acpcli's upper layers: the live-session host can use it too.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, every acquire succeeds
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("acpcli.history.lock")

#: How often a waiter tries the lock again (seconds).
POLL_SECONDS = 0.05

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def lock_dir() -> Path:
    """Where the session locks live: ``<home>/locks/`` (created on first use)."""
    from acpcli.paths import home_dir

    return home_dir() / "locks"


def lock_name(session_id: str) -> str:
    """A file name for ``session_id``'s lock: its safe characters (at most 40) and a hash of the
    whole id (so ids that differ only in what was dropped still get files of their own)."""
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    stem = _UNSAFE.sub("_", session_id)[:40].lstrip(".")
    return f"{stem}-{digest}.lock" if stem else f"{digest}.lock"


def holder_text(pid: int | None) -> str:
    """``another acpcli (pid N)``, or without the pid when it is not known (yet)."""
    return f"another acpcli (pid {pid})" if pid else "another acpcli"


def waiting_line(session_id: str, pid: int | None) -> str:
    """The one line a waiter says (once)."""
    return f"acpcli: waiting for {holder_text(pid)} to finish its turn on session {session_id}… (Ctrl-C gives up)"


def busy_message(session_id: str, pid: int | None) -> str:
    """What :class:`~acpcli.errors.SessionBusy` says when a command will not wait."""
    return f"session {session_id} is busy: {holder_text(pid)} is running a turn on it"


class SessionLock:
    """The writer lock of one session (see the module docstring).

    ``acquire``/``try_acquire`` take it, :meth:`release` lets it go (also on garbage collection
    and process exit, by the kernel). Usable as a context manager once held.
    """

    def __init__(self, session_id: str, *, directory: Path | None = None) -> None:
        self.session_id = session_id
        self.path = (directory if directory is not None else lock_dir()) / lock_name(session_id)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if it is free; False (at once) when another holder has it."""
        if self._fd is not None:
            return True
        if fcntl is None:  # pragma: no cover - Windows
            self._fd = -1
            return True
        from acpcli.paths import create_private

        while True:
            try:
                fd = create_private(self.path, os.O_RDWR | os.O_CREAT)
            except OSError as exc:
                # A home that cannot take a file (read-only, full) cannot take the session's
                # writes either: go on unlocked rather than stop the turn (safestore's rule).
                log.warning("cannot lock session %s at %s: %s; going on without the lock", self.session_id, self.path, exc)
                self._fd = -1
                return True
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            if self._same_file(fd):
                break
            os.close(fd)  # the file was discarded while we waited for it: lock the one there now
        self._fd = fd
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the pid is for messages only
        return True

    def _same_file(self, fd: int) -> bool:
        try:
            here = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)

    def holder(self) -> int | None:
        """The pid the current holder wrote (None: none written, or unreadable)."""
        try:
            text = self.path.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    async def acquire(self, *, wait: bool = True, on_wait: Callable[[int | None], None] | None = None) -> None:
        """Take the lock, waiting for the holder to let it go (``on_wait(pid)`` is called once,
        when waiting starts). ``wait=False``: raise :class:`~acpcli.errors.SessionBusy` naming
        the holder instead of waiting. Cancellable while waiting."""
        import anyio

        if self.try_acquire():
            return
        if not wait:
            from acpcli.errors import SessionBusy

            raise SessionBusy(busy_message(self.session_id, self.holder()))
        if on_wait is not None:
            on_wait(self.holder())
        while not self.try_acquire():  # noqa: ASYNC110 - a lock of another process: no event to await
            await anyio.sleep(POLL_SECONDS)

    def release(self) -> None:
        """Let the lock go (a no-op when not held). The file stays: deleting it here would let
        a waiter hold a lock on a file no newcomer sees."""
        fd, self._fd = self._fd, None
        if fd is None or fd < 0:
            return
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        os.close(fd)  # closing the last descriptor releases the flock

    def discard(self) -> None:
        """The session is gone: delete the lock file, then let the lock go (only while held)."""
        if self._fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        self.release()

    def __enter__(self) -> SessionLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None and fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass

