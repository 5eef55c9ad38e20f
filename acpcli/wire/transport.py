"""The agent subprocess: spawning, newline-delimited framing, stderr capture, shutdown.

Everything above this module talks to the agent through :class:`Transport`, a four-method
seam; :func:`memory_pair` is the in-memory fake that lets the layers above be tested
without a process.

Invariants held by :class:`AgentProcess`:

* The agent runs from an argv list (never a shell) in its own session, so its process group
  id is its pid and the whole group (the agent and anything it started) can be signalled.
* The child sees the full ``os.environ`` plus ``env_extra``; nothing is dropped.
* stderr is drained all the time by a background task into a bounded tail (and an optional
  log file), so an agent that logs megabytes can never block on a full pipe.
* Frames are split on ``b"\\n"`` with work linear in the bytes read; a line longer than
  ``max_line_bytes`` is reported (``on_oversized``, for the connection) and discarded up
  to its newline, then reading goes on.
* :meth:`AgentProcess.aclose` always ends with no process of the group alive and the agent
  reaped: close stdin, wait, SIGTERM the group, wait, SIGKILL the group. What the agent
  started outside its group (``setsid``, a double fork) is found by :mod:`acpcli.processes.children`
  (the agent's process tree and its owner tag) and ended with it. It is idempotent and
  shielded from cancellation (Ctrl-C must never leave an agent behind).
* The agent's own exit is watched, not only the end of its stdout: a process it started may
  hold its stdout open after it exited. Then, after a moment for its last frames, whatever
  it left is killed and its stdout is no longer read, so the connection ends
  (:class:`ConnectionClosed`, exit 9) within a couple of seconds.
* The stderr log is capped (:class:`StderrLog`): at most :data:`STDERR_LOG_MAX_BYTES` per
  file and one older file (``NAME.1``); a line at the top of a file says how much was dropped.
* Background tasks live in a task group: the one entered by ``async with
  AgentProcess.spawn(...)``, or one the caller passes as ``task_group=``. They end when
  the process is closed, so there are no stray tasks.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections import deque
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import suppress
from itertools import filterfalse
from pathlib import Path
from typing import IO, Any, Protocol

import anyio
import anyio.abc
import anyio.lowlevel

from acpcli.errors import AgentStartError, ConnectionClosed

logger = logging.getLogger("acpcli.wire.transport")

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
#: Overrides the line limit of agents started without an explicit ``max_line_bytes`` (tests).
MAX_LINE_ENV = "ACPCLI_MAX_LINE_BYTES"
#: How much of a discarded line is kept for ``on_oversized`` (to read its JSON-RPC id).
OVERSIZED_HEAD_BYTES = 4096
# The pipe reader hands out at most what it has buffered (~128 KiB), so this only caps a read.
_READ_SIZE = 1024 * 1024
# After stdout ends, how long to wait for the exit status and the last stderr lines, so the
# error the user sees can say how the agent ended. Both normally arrive at once.
_EXIT_SETTLE = 2.0
_STDERR_SETTLE = 0.5
# After the agent exited, how long its stdout may stay open (the last frames are already in
# the pipe) before what it left is killed, and then before stdout is no longer read.
_OUTPUT_SETTLE = 1.0
_LEFTOVER_SETTLE = 0.5
#: How long an agent may take to exit on its own once its stdin is closed (end of input)
#: before it is sent SIGTERM: the default, for an agent that may still have work to save.
STDIN_GRACE = 2.0
#: The same for a one-shot command (``prompt``; ``new``, ``load``, ``resume`` without a
#: REPL; ``close``) once what it needed is stored: agents that exit at end of input do so
#: well within it (gemini in about 0.1 s, writing its chat file first); the ones that do not
#: (codex, claude) only keep the command waiting until SIGTERM.
ONE_SHOT_STDIN_GRACE = 0.5
#: The most one stderr log file holds; one older file (``NAME.1``) is kept besides.
STDERR_LOG_MAX_BYTES = 4 * 1024 * 1024
# A stderr "line" without a newline is cut to this many bytes in the tail.
_STDERR_LINE_CAP = 8 * 1024


class Transport(Protocol):
    """The one seam between the JSON-RPC connection and whatever carries its frames.

    A frame is one JSON value as bytes, without the trailing newline. One task receives;
    any task may send (the connection serializes its sends).
    """

    async def send(self, frame: bytes) -> None:
        """Send one frame. Raises :class:`ConnectionClosed` if the peer can no longer read."""
        ...

    async def receive(self) -> bytes | None:
        """The next frame, or ``None`` once the peer's output has ended."""
        ...

    def exit_info(self) -> tuple[int | None, list[str]]:
        """``(returncode or None, last stderr lines)``: how the peer ended, for error messages."""
        ...

    async def aclose(self) -> object:
        """Shut the peer down and release everything. Idempotent."""
        ...


class LineFramer:
    """Splits a byte stream into newline-delimited frames, in time linear in its input.

    Feed it chunks as they arrive; complete frames collect in :attr:`frames`. Partial lines
    are kept as a list of chunks and joined once, so a 50 MB line costs one copy, not a
    quadratic series of concatenations. Blank lines are dropped. A line longer than
    ``max_line_bytes`` is discarded up to its newline (its bytes are not kept) and logged.
    """

    __slots__ = ("_head", "_parts", "_size", "_skipping", "frames", "max_line_bytes", "on_oversized")

    def __init__(
        self,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        on_oversized: Callable[[bytes, int, int], None] | None = None,
    ) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self.on_oversized = on_oversized
        """Called as ``on_oversized(head, size, limit)`` for every discarded line: ``head``
        is its first :data:`OVERSIZED_HEAD_BYTES` bytes (enough to read a JSON-RPC id)."""
        self.frames: deque[bytes] = deque()
        self._parts: list[bytes] = []
        self._size = 0  # bytes in _parts, or bytes skipped so far while _skipping
        self._skipping = False
        self._head = b""  # the start of the line being skipped

    def feed(self, chunk: bytes) -> None:
        """Consume one chunk of the stream."""
        pieces = chunk.split(b"\n")
        if len(pieces) == 1:
            self._extend(chunk)
            return
        # The first piece ends the line in progress, the last one starts the next line.
        self._extend(pieces[0])
        self._finish_line()
        lines = pieces[1:-1]
        if lines and max(map(len, lines)) <= self.max_line_bytes:
            # The usual read: no line over the limit. _emit's filter, without a call per line.
            self.frames.extend(filterfalse(bytes.isspace, filter(None, lines)))
        else:
            emit = self._emit
            for line in lines:
                emit(line)
        if pieces[-1]:
            self._extend(pieces[-1])

    def end(self) -> None:
        """The stream ended: an unterminated last line still counts as a frame."""
        self._finish_line()

    def _extend(self, piece: bytes) -> None:
        if not piece:
            return
        self._size += len(piece)
        if self._skipping:
            return
        if self._size > self.max_line_bytes:
            self._parts.append(piece)
            head = bytearray()
            for part in self._parts:
                head += part[: OVERSIZED_HEAD_BYTES - len(head)]
                if len(head) >= OVERSIZED_HEAD_BYTES:
                    break
            self._head = bytes(head)
            self._parts.clear()
            self._skipping = True
        else:
            self._parts.append(piece)

    def _finish_line(self) -> None:
        if self._skipping:
            self._report_discarded(self._head, self._size)
            self._skipping = False
            self._head = b""
        elif self._parts:
            parts = self._parts
            self._emit(parts[0] if len(parts) == 1 else b"".join(parts))
            parts.clear()
        self._size = 0

    def _emit(self, line: bytes) -> None:
        if len(line) > self.max_line_bytes:
            self._report_discarded(line[:OVERSIZED_HEAD_BYTES], len(line))
        elif line and not line.isspace():
            self.frames.append(line)

    def _report_discarded(self, head: bytes, size: int) -> None:
        logger.warning(
            "discarded a %d-byte line from the agent (longer than the %d-byte limit)",
            size,
            self.max_line_bytes,
        )
        if self.on_oversized is not None:
            self.on_oversized(head, size, self.max_line_bytes)


class AgentProcess:
    """An agent subprocess speaking newline-delimited frames on stdin/stdout (a :class:`Transport`).

    Start one with ``async with AgentProcess.spawn(argv) as proc:`` (the context closes it),
    or ``proc = await AgentProcess.spawn(argv, task_group=tg)`` and ``await proc.aclose()``.
    """

    def __init__(
        self,
        process: anyio.abc.Process,
        argv: list[str],
        *,
        stderr_log: StderrLog | None,
        max_line_bytes: int,
        stderr_tail_lines: int,
        tag: str | None = None,
    ) -> None:
        # Private: use spawn(). Holds an already started process.
        self._process = process
        self.argv = argv
        self.pid: int = process.pid
        self.tag = tag  # the owner tag in its environment (acpcli.processes.children)
        self._framer = LineFramer(max_line_bytes)
        self._stdout_ended = False
        self._stderr_log = stderr_log
        self._stderr_tail: deque[str] = deque(maxlen=stderr_tail_lines)
        self._stderr_done = anyio.Event()
        self._drain_scope = anyio.CancelScope()
        self._watch_scope = anyio.CancelScope()
        self._eof = anyio.Event()  # its stdout ended, or is no longer read
        self._read_scope: anyio.CancelScope | None = None  # around a pending stdout read
        self._abandoned = False  # stdout is no longer read (held by a leftover)
        self._close_started = False
        self._closed = anyio.Event()
        #: How long :meth:`aclose` waits for the agent to exit on its own once its stdin is
        #: closed, before SIGTERM (see :data:`STDIN_GRACE` and :data:`ONE_SHOT_STDIN_GRACE`).
        self.stdin_grace = STDIN_GRACE

    # -- starting ---------------------------------------------------------------------------

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str | os.PathLike[str]],
        *,
        cwd: Path | None = None,
        env_extra: Mapping[str, str] | None = None,
        stderr_log: Path | None = None,
        max_line_bytes: int | None = None,
        stderr_tail_lines: int = 50,
        task_group: anyio.abc.TaskGroup | None = None,
    ) -> _Spawn:
        """Start the agent ``argv`` (a list, run without a shell) in its own process group.

        Use as ``async with AgentProcess.spawn(...) as proc:`` (background tasks live in an
        internal task group; leaving the block closes the process), or
        ``await AgentProcess.spawn(..., task_group=tg)`` (tasks run in ``tg``; call
        :meth:`aclose` before ``tg`` exits).

        Raises :class:`~acpcli.errors.AgentStartError` (one line naming the command) if the
        command is missing, not executable, or ``cwd`` is not a directory.
        """
        if isinstance(argv, (str, bytes)):
            raise TypeError("argv must be a sequence of arguments, not a string (no shell is used)")
        options: dict[str, Any] = {
            "argv": [os.fspath(a) for a in argv],
            "cwd": cwd,
            "env_extra": dict(env_extra or {}),
            "stderr_log": stderr_log,
            "max_line_bytes": max_line_bytes if max_line_bytes is not None else _default_max_line_bytes(),
            "stderr_tail_lines": stderr_tail_lines,
        }
        return _Spawn(cls, options, task_group)

    @classmethod
    async def _launch(
        cls,
        *,
        argv: list[str],
        cwd: Path | None,
        env_extra: dict[str, str],
        stderr_log: Path | None,
        max_line_bytes: int,
        stderr_tail_lines: int,
    ) -> AgentProcess:
        if not argv or not argv[0]:
            raise AgentStartError("no agent command given")
        command = argv[0]
        if cwd is not None and not Path(cwd).is_dir():
            raise AgentStartError(f"the agent's working directory does not exist: {cwd}")
        from acpcli.processes import children

        env = dict(os.environ)
        env.update(env_extra)
        tag = env[children.TAG_VAR] = children.new_tag("agent")
        log_file = StderrLog.open(stderr_log) if stderr_log is not None else None
        try:
            process = await anyio.open_process(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except BaseException as exc:
            if log_file is not None:
                log_file.close()
            if isinstance(exc, FileNotFoundError):
                raise AgentStartError(
                    f"agent command not found: {command} (is it installed and on PATH?)"
                ) from exc
            if isinstance(exc, PermissionError):
                raise AgentStartError(f"agent command is not executable: {command}") from exc
            if isinstance(exc, OSError):
                reason = exc.strerror or str(exc)
                raise AgentStartError(f"cannot run agent command {command}: {reason}") from exc
            raise
        children.manage(process.pid)
        self = cls(
            process,
            argv,
            stderr_log=log_file,
            max_line_bytes=max_line_bytes,
            stderr_tail_lines=stderr_tail_lines,
            tag=tag,
        )
        logger.debug("started agent pid %d: %s", self.pid, argv)
        return self

    def _begin(self, task_group: anyio.abc.TaskGroup) -> None:
        task_group.start_soon(self._drain_stderr, name=f"agent {self.pid} stderr")
        task_group.start_soon(self._watch_exit, name=f"agent {self.pid} exit")

    # -- Transport ----------------------------------------------------------------------------

    @property
    def returncode(self) -> int | None:
        """The exit status once the agent has exited (negative: killed by that signal)."""
        return self._process.returncode

    async def send(self, frame: bytes) -> None:
        """Write one frame and its newline to the agent's stdin (waits while the pipe is full)."""
        stdin = self._process.stdin
        assert stdin is not None
        if self._close_started:
            raise self._gone("the agent is being shut down")
        try:
            await stdin.send(frame + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise self._gone("the agent no longer reads its input") from exc

    async def receive(self) -> bytes | None:
        """The next frame from the agent's stdout; ``None`` once it has ended.

        Only one task may receive at a time (the connection's reader).
        """
        frames = self._framer.frames
        while not frames:
            if self._stdout_ended:
                return None
            stdout = self._process.stdout
            assert stdout is not None
            chunk = b""
            with anyio.CancelScope() as scope:
                self._read_scope = scope
                if self._abandoned:
                    scope.cancel()
                try:
                    chunk = await stdout.receive(_READ_SIZE)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    pass
                finally:
                    self._read_scope = None
            if not chunk:  # the end, or no longer read (see _watch_exit)
                self._framer.end()
                self._stdout_ended = True
                self._eof.set()
                await self._settle()
                continue
            self._framer.feed(chunk)
        return frames.popleft()

    @property
    def buffered(self) -> deque[bytes]:
        """The frames already read from the agent's stdout and not received yet, oldest
        first: the same deque for the process's life. The reader pops a read's frames from
        it, without a coroutine or a call per frame; :meth:`receive` waits for more."""
        return self._framer.frames

    def exit_info(self) -> tuple[int | None, list[str]]:
        """``(returncode or None, the last stderr lines)``."""
        return self._process.returncode, list(self._stderr_tail)

    def set_oversized_handler(self, handler: Callable[[bytes, int, int], None] | None) -> None:
        """Call ``handler(head, size, limit)`` for every line discarded as too long (from
        within :meth:`receive`). The connection uses it to fail the request whose answer
        it was."""
        self._framer.on_oversized = handler

    async def aclose(self, *, stdin_grace: float | None = None, term_grace: float = 2.0) -> int | None:
        """Shut the agent down, escalating; return its exit status. Idempotent.

        Close stdin and wait ``stdin_grace`` seconds (None: :attr:`stdin_grace`); then SIGTERM the process group and wait
        ``term_grace``; then SIGKILL the group. Whatever is left of the group once the agent
        is gone (grandchildren it did not clean up) is killed too. The agent is always
        reaped. Shielded from cancellation, so it completes even when its caller is cancelled.
        """
        with anyio.CancelScope(shield=True):
            if self._close_started:
                await self._closed.wait()
                return self.returncode
            self._close_started = True
            try:
                await self._shut_down(self.stdin_grace if stdin_grace is None else stdin_grace, term_grace)
            finally:
                self._closed.set()
        return self.returncode

    # -- internals ----------------------------------------------------------------------------

    async def _shut_down(self, stdin_grace: float, term_grace: float) -> None:
        from acpcli.processes import children

        process = self._process
        # Its tree while it lives: what it started may be re-parented out of reach once it exits.
        early = children.leftovers(self.pid, self.tag, alive=process.returncode is None)
        if process.stdin is not None:
            with suppress(Exception):
                await process.stdin.aclose()
        if process.returncode is None:
            closed_at = anyio.current_time()
            await self._wait_exit(stdin_grace)
            if process.returncode is not None:
                logger.debug("agent %d exited %.3f s after its stdin closed", self.pid, anyio.current_time() - closed_at)
        if process.returncode is None:
            logger.debug("agent %d did not exit within %g s of its stdin closing: SIGTERM", self.pid, stdin_grace)
            self._signal_all(signal.SIGTERM, early)
            await self._wait_exit(term_grace)
        if process.returncode is None:
            logger.debug("agent %d ignored SIGTERM: SIGKILL", self.pid)
            self._signal_all(signal.SIGKILL, early)
            await self._wait_exit(None)
        # The agent is gone; anything still in its group, its tree or bearing its tag is an
        # orphan it failed to clean up.
        self._signal_all(signal.SIGKILL, early)
        await children.reaped(_LEFTOVER_SETTLE)
        # Now every writer of the stderr pipe is dead (unless something is out of reach):
        # let the drain pick up the last lines, then stop it.
        with anyio.move_on_after(_STDERR_SETTLE):
            await self._stderr_done.wait()
        self._drain_scope.cancel()
        self._watch_scope.cancel()
        with anyio.move_on_after(_EXIT_SETTLE):  # an old anyio waits for the pipes to close
            await process.aclose()
        children.unmanage(self.pid)
        logger.debug("agent %d closed, status %s", self.pid, process.returncode)

    def kill(self) -> None:
        """SIGKILL the agent's whole process group, and what it started outside the group,
        now (the user's second Ctrl-C).

        ``aclose`` still reaps it; this only skips the grace periods.
        """
        self._signal_all(signal.SIGKILL)

    def _signal_group(self, sig: signal.Signals) -> None:
        # start_new_session=True made the agent a session and group leader: pgid == pid.
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def _signal_all(self, sig: signal.Signals, also: Mapping[int, int] | None = None) -> None:
        """Signal the agent's group, its descendants, the processes bearing its tag and ``also``
        (``{pid: start time}`` from an earlier look, those still the same process)."""
        from acpcli.processes import children

        self._signal_group(sig)
        found = children.leftovers(self.pid, self.tag, alive=self._process.returncode is None)
        if also:
            found = {**also, **found}
        if found:
            logger.debug("agent %d: signal %s to %d more processes", self.pid, sig.name, len(found))
            children.signal_all(found, sig)

    async def _wait_exit(self, within: float | None) -> None:
        """Wait up to ``within`` seconds (None: no limit) for the agent to exit."""
        from acpcli.processes import children

        await children.exited(self._process, within)

    async def _watch_exit(self) -> None:
        """Notice the agent's exit even when a process it started keeps its stdout open."""
        with self._watch_scope:
            await self._wait_exit(None)
            with anyio.move_on_after(_OUTPUT_SETTLE):  # its last frames are in the pipe already
                await self._eof.wait()
            if self._eof.is_set() or self._close_started:
                return
            from acpcli.processes import children

            logger.info(
                "agent %d exited (status %s) but its stdout is still open: ending what it left",
                self.pid,
                self._process.returncode,
            )
            self._signal_all(signal.SIGKILL)
            await children.reaped(_LEFTOVER_SETTLE)
            with anyio.move_on_after(_LEFTOVER_SETTLE):
                await self._eof.wait()
            if not self._eof.is_set():
                logger.warning("agent %d exited; a process out of reach holds its stdout: no longer reading it", self.pid)
                self._abandoned = True
                if self._read_scope is not None:
                    self._read_scope.cancel()

    def _gone(self, what: str) -> ConnectionClosed:
        returncode, tail = self.exit_info()
        return ConnectionClosed(what, returncode=returncode, stderr_tail=tail)

    async def _settle(self) -> None:
        # stdout usually ends because the agent exited: wait (briefly) for the exit status
        # and the stderr it wrote last, so exit_info() can say how it ended.
        await self._wait_exit(_EXIT_SETTLE)
        with anyio.move_on_after(_STDERR_SETTLE):
            await self._stderr_done.wait()

    async def _drain_stderr(self) -> None:
        stderr = self._process.stderr
        assert stderr is not None
        tail = self._stderr_tail
        log = self._stderr_log
        keep = tail.maxlen or 0
        partial = b""
        try:
            with self._drain_scope:
                while True:
                    try:
                        chunk = await stderr.receive(_READ_SIZE)
                    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                        break
                    if log is not None:
                        log.write(chunk)
                    lines = (partial + chunk).split(b"\n")
                    partial = lines.pop()[:_STDERR_LINE_CAP]
                    # Only the last few lines of a flood can end up in the tail: decode only those.
                    for line in lines[-keep:] if keep else ():
                        text = line[:_STDERR_LINE_CAP].decode("utf-8", "replace").rstrip()
                        if text:
                            tail.append(text)
        finally:
            if partial.strip() and keep:  # a last line without its newline
                tail.append(partial.decode("utf-8", "replace").rstrip())
            if log is not None:
                log.close()
            self._stderr_done.set()


class _Spawn:
    """What :meth:`AgentProcess.spawn` returns: an async context manager, or an awaitable."""

    def __init__(
        self,
        cls: type[AgentProcess],
        options: dict[str, Any],
        task_group: anyio.abc.TaskGroup | None,
    ) -> None:
        self._cls = cls
        self._options = options
        self._task_group = task_group
        self._proc: AgentProcess | None = None
        self._own_group: anyio.abc.TaskGroup | None = None

    def __await__(self) -> Generator[Any, None, AgentProcess]:
        if self._task_group is None:
            raise TypeError(
                "use `async with AgentProcess.spawn(...) as proc:`, "
                "or pass task_group= to `await AgentProcess.spawn(...)`"
            )
        return self._start(self._task_group).__await__()

    async def _start(self, task_group: anyio.abc.TaskGroup) -> AgentProcess:
        proc = await self._cls._launch(**self._options)
        proc._begin(task_group)
        return proc

    async def __aenter__(self) -> AgentProcess:
        if self._task_group is not None:
            self._proc = await self._start(self._task_group)
            return self._proc
        # Launch before entering the group, so a start failure is a plain AgentStartError.
        proc = await self._cls._launch(**self._options)
        group = anyio.create_task_group()
        try:
            await group.__aenter__()
        except BaseException:
            await proc.aclose()
            raise
        proc._begin(group)
        self._proc, self._own_group = proc, group
        return proc

    async def __aexit__(self, *exc_info: Any) -> None:
        assert self._proc is not None
        try:
            await self._proc.aclose()
        finally:
            if self._own_group is not None:
                # The group only holds our stderr drain (which aclose ended); the body's own
                # exception is not its business, so it must not be wrapped in a group.
                await self._own_group.__aexit__(None, None, None)


def _default_max_line_bytes() -> int:
    value = os.environ.get(MAX_LINE_ENV, "")
    try:
        limit = int(value)
    except ValueError:
        return DEFAULT_MAX_LINE_BYTES
    return limit if limit > 0 else DEFAULT_MAX_LINE_BYTES


class StderrLog:
    """An agent's stderr log (``logs/NAME.stderr.log``): appended across runs, never larger
    than ``max_bytes`` per file.

    When a write would pass the cap the file is rotated: it becomes ``NAME.1`` (replacing
    the older one, whose bytes are dropped) and a fresh file starts with a line that says how
    many bytes were dropped so far. A chunk larger than a whole file keeps only its end. So
    the log never holds more than about twice ``max_bytes``, and its newest part is kept.
    Write errors (a full disk) lose the log, never the drain; files are 0600.
    """

    #: Room kept in each file for the line that says what was dropped.
    MARK_ROOM = 200

    def __init__(self, path: Path, file: IO[bytes], max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max(max_bytes, 2 * self.MARK_ROOM)
        self.dropped = 0
        self._file: IO[bytes] | None = file

    @classmethod
    def open(cls, path: Path, max_bytes: int = STDERR_LOG_MAX_BYTES) -> StderrLog | None:
        """Open ``path`` for appending (rotated first if a past run filled it); None if it
        cannot be opened (a warning is logged)."""
        from acpcli.paths import open_private

        try:
            log = cls(path, open_private(path, "ab"), max_bytes)  # 0600: stderr may quote the conversation
            if log._size() >= log.max_bytes:
                log._rotate()
                log._mark()
        except OSError as exc:
            logger.warning("cannot open the agent's stderr log %s: %s", path, exc)
            return None
        return log

    def write(self, chunk: bytes) -> None:
        """Append ``chunk`` (a plain blocking write: small, to a local file, and it keeps the
        drain a single task), rotating first when it would pass the cap."""
        if self._file is None or not chunk:
            return
        try:
            if self._size() + len(chunk) > self.max_bytes:
                self._rotate()
                room = self.max_bytes - self.MARK_ROOM
                if len(chunk) > room:
                    self.dropped += len(chunk) - room
                    chunk = chunk[-room:]
                self._mark()
            assert self._file is not None
            self._file.write(chunk)
            self._file.flush()
        except OSError as exc:  # disk full, etc.: losing the log must not stop the drain
            logger.debug("cannot write the agent's stderr log: %s", exc)

    def close(self) -> None:
        """Close the file (a full disk loses its last bytes, quietly)."""
        file, self._file = self._file, None
        if file is not None:
            with suppress(OSError):
                file.close()

    def _size(self) -> int:
        assert self._file is not None
        return os.fstat(self._file.fileno()).st_size  # other acpclis may append to it too

    def _rotate(self) -> None:
        assert self._file is not None
        older = self.path.with_name(self.path.name + ".1")
        mine = os.fstat(self._file.fileno())
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            current = None
        if current is not None and (current.st_ino, current.st_dev) == (mine.st_ino, mine.st_dev):
            with suppress(FileNotFoundError):
                self.dropped += os.stat(older).st_size
            os.replace(self.path, older)
        # else another acpcli rotated it already: only start on the file now at the path
        self._file.close()
        self._file = None
        from acpcli.paths import open_private

        self._file = open_private(self.path, "ab")

    def _mark(self) -> None:
        if self.dropped and self._file is not None:
            line = f"[acpcli: {self.dropped} earlier bytes of this log were dropped: it keeps at most {self.max_bytes} bytes per file]\n"
            self._file.write(line.encode()[: self.MARK_ROOM])


# -- in-memory transport ----------------------------------------------------------------------


class _Channel:
    """One direction of a memory pair: a frame queue with a single reader."""

    __slots__ = ("_waiter", "closed", "frames")

    def __init__(self) -> None:
        self.frames: deque[bytes] = deque()
        self.closed = False
        self._waiter: anyio.Event | None = None

    def put(self, frame: bytes) -> None:
        self.frames.append(frame)
        self._wake()

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None:
            self._waiter.set()
            self._waiter = None

    async def get(self) -> bytes | None:
        while not self.frames:
            if self.closed:
                return None
            if self._waiter is None:
                self._waiter = anyio.Event()
            await self._waiter.wait()
        return self.frames.popleft()


class MemoryTransport:
    """One end of :func:`memory_pair`. Set :attr:`returncode` / :attr:`stderr_tail` to fake an exit."""

    def __init__(self, inbox: _Channel, outbox: _Channel) -> None:
        self._inbox = inbox
        self._outbox = outbox
        self._closed = False
        self.returncode: int | None = None
        self.stderr_tail: list[str] = []

    async def send(self, frame: bytes) -> None:
        """Queue ``frame`` for the other end."""
        if self._closed or self._outbox.closed:
            raise ConnectionClosed(
                "the other end is closed", returncode=self.returncode, stderr_tail=self.stderr_tail
            )
        self._outbox.put(bytes(frame))
        await anyio.lowlevel.checkpoint()

    async def receive(self) -> bytes | None:
        """The next frame from the other end; ``None`` once it (or this end) is closed."""
        if self._closed:
            return None
        return await self._inbox.get()

    def exit_info(self) -> tuple[int | None, list[str]]:
        """The faked ``(returncode, stderr_tail)``."""
        return self.returncode, list(self.stderr_tail)

    async def aclose(self) -> None:
        """Close this end: the other end's :meth:`receive` returns ``None`` after queued frames."""
        self._closed = True
        self._outbox.close()
        self._inbox.close()
        await anyio.lowlevel.checkpoint()


def memory_pair() -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected in-memory transports: ``(client end, agent end)``."""
    to_agent, to_client = _Channel(), _Channel()
    return MemoryTransport(to_client, to_agent), MemoryTransport(to_agent, to_client)

