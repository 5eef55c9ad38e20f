"""Terminals the agent runs through the client (ACP v1 ``terminal/*``).

A terminal is one command started for a session: its output (stdout and stderr merged, as a
terminal shows them) is kept in a bounded buffer the agent polls, and its exit status is kept
until the agent releases it.

Invariants:

* A command runs in its own session and process group (``start_new_session``), so ``kill``,
  ``release`` and :meth:`Terminals.aclose` signal the whole group, and with it what the
  command started outside the group (``setsid``, a double fork: found by :mod:`acpcli.processes.children`
  from its process tree and its owner tag): nothing the command started is left behind.
  stdin is ``/dev/null``: nobody can type into these terminals.
* The retained output never exceeds the byte limit (the agent's ``outputByteLimit``, capped by
  :data:`MAX_OUTPUT_BYTES`); it is cut from the start, on a UTF-8 character boundary, so the
  text handed out is valid and slightly shorter than the limit at worst. ``truncated`` says
  whether anything was dropped. Buffering is amortized O(1) per byte.
* Every task (one output pump and one exit watcher per terminal) lives in the task group
  :class:`Terminals` was given, under the terminal's own cancel scope; releasing a terminal
  ends its tasks, and :meth:`Terminals.aclose` kills and reaps every terminal left.
* A command is an argv list run without a shell, except when the agent sends a whole shell
  line as ``command`` with no ``args`` (claude-code-acp's Bash tool does exactly that): a
  ``command`` holding shell syntax and no ``args`` runs as ``bash -c command`` (``sh`` when
  there is no bash). See :func:`command_argv`.
* Unknown terminal ids, and ids of another session, are answered with -32602.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

import anyio
import anyio.abc

from acpcli.errors import RpcError
from acpcli.processes import children

logger = logging.getLogger("acpcli.services.terminals")

#: Ceiling on the output kept per terminal, whatever the agent asks for (or when it asks nothing).
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
#: After the command exits, how long to wait for its output pipe to end. Only a background
#: process it left holding the pipe makes this wait the full time.
OUTPUT_SETTLE = 1.0
#: Grace between SIGTERM and SIGKILL when a terminal is killed.
KILL_GRACE = 2.0
#: How many released terminals keep their final output for the view (embedded terminals).
RELEASED_KEPT = 64

_READ_SIZE = 64 * 1024
# Characters that make a lone `command` a shell line rather than a program name.
_SHELL_SYNTAX = frozenset(" \t\n|&;<>()$`\\\"'*?[]#~{}")


def command_argv(command: str, args: Sequence[str]) -> list[str]:
    """The argv for ``terminal/create``'s ``command`` and ``args``.

    With ``args``, or a plain program name or path, the command runs directly. A ``command``
    without ``args`` that holds shell syntax (spaces, pipes, quotes, ...) and is not itself an
    executable file is a shell line: it runs as ``bash -c command`` (``/bin/sh`` if bash is
    missing), as the agent that sent it expects.
    """
    if args or not any(c in _SHELL_SYNTAX for c in command):
        return [command, *args]
    if os.path.isabs(command) and os.path.isfile(command) and os.access(command, os.X_OK):
        return [command]  # a path with a space in it, not a shell line
    return [shutil.which("bash") or "/bin/sh", "-c", command]


def _boundary_start(data: bytes | bytearray, limit: int) -> int:
    """Where the last ``limit`` bytes of ``data`` start, moved past the rest of a character
    cut in two (so the tail is at most ``limit`` bytes and starts on a character)."""
    end = len(data)
    start = max(0, end - limit)
    if start == 0:
        return 0
    # UTF-8 continuation bytes are 0b10xxxxxx; a character has at most 3 of them.
    for _ in range(3):
        if start < end and data[start] & 0xC0 == 0x80:
            start += 1
    return start


def _tail_on_boundary(data: bytes | bytearray, limit: int) -> bytes:
    """The last ``limit`` bytes of ``data``, minus the pieces of a character cut in two."""
    return bytes(data[_boundary_start(data, limit) :])


def _incomplete_tail(data: bytes) -> int:
    """How many bytes at the end of ``data`` are the start of a character still being written."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        byte = data[n - back]
        if byte & 0xC0 == 0x80:  # continuation: keep looking for the lead byte
            continue
        if byte >= 0xC0:
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return back if need > back else 0
        return 0
    return 0


class OutputBuffer:
    """The last ``limit`` bytes of a byte stream, handed out as text cut on character boundaries."""

    __slots__ = ("_data", "_dropped", "_slack", "limit")

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError("limit must be >= 0")
        self.limit = limit
        self._data = bytearray()
        self._dropped = False
        # Trim only once the buffer holds this much more than the limit: amortized O(1) per byte.
        self._slack = max(limit, _READ_SIZE)

    def feed(self, chunk: bytes) -> None:
        """Append output."""
        data = self._data
        data += chunk
        if len(data) > self.limit + self._slack:
            del data[: _boundary_start(data, self.limit)]
            self._dropped = True

    @property
    def truncated(self) -> bool:
        """Whether any output was dropped to stay within the limit."""
        return self._dropped or len(self._data) > self.limit

    def text(self, *, final: bool = False) -> str:
        """The retained output as text.

        While the command runs (``final`` false), a character whose bytes have not all arrived
        yet is held back rather than shown as a replacement character. Bytes that are not
        UTF-8 at all (binary output) become U+FFFD, and the result is cut again if that made
        it longer than the limit.
        """
        data = _tail_on_boundary(self._data, self.limit)
        if not final:
            cut = _incomplete_tail(data)
            if cut:
                data = data[:-cut]
        text = data.decode("utf-8", "replace")
        # Valid UTF-8 decodes to exactly its bytes; only replacement characters (3 bytes each
        # for what was 1 bad byte) can make the text longer than the limit.
        if "\ufffd" in text:
            encoded = text.encode("utf-8")
            if len(encoded) > self.limit:
                text = _tail_on_boundary(encoded, self.limit).decode("utf-8")
        return text


def _exit_status(returncode: int) -> tuple[int | None, str | None]:
    if returncode >= 0:
        return returncode, None
    try:
        return None, signal.Signals(-returncode).name
    except ValueError:
        return None, f"signal {-returncode}"


class Terminal:
    """One command started for a session. Created by :meth:`Terminals.create`."""

    def __init__(
        self,
        terminal_id: str,
        session_id: str,
        argv: list[str],
        cwd: str,
        process: anyio.abc.Process,
        output_limit: int,
        tag: str | None = None,
    ) -> None:
        self.terminal_id = terminal_id
        self.tag = tag  # the owner tag in its environment (acpcli.processes.children)
        self.session_id = session_id
        self.argv = argv
        self.cwd = cwd
        self.pid = process.pid
        self._process = process
        self._buffer = OutputBuffer(output_limit)
        self._scope = anyio.CancelScope()
        self._output_done = anyio.Event()
        self._changed = anyio.Event()  # replaced after every chunk: see output_changed()
        self._exited = anyio.Event()
        self._status: tuple[int | None, str | None] | None = None

    # -- what the agent reads ---------------------------------------------------------------

    @property
    def exit_status(self) -> tuple[int | None, str | None] | None:
        """``(exitCode, signal)`` once the command has exited (and its output was read)."""
        return self._status

    def output(self) -> tuple[str, bool]:
        """``(text, truncated)`` as of now."""
        return self._buffer.text(final=self._output_done.is_set()), self._buffer.truncated

    async def output_changed(self) -> None:
        """Return once more output has arrived or the output has ended (for a live view of a
        terminal embedded in a tool call). Returns at once when the output has ended."""
        if not self._output_done.is_set():
            await self._changed.wait()

    async def wait_for_exit(self) -> tuple[int | None, str | None]:
        """Wait for the command to exit; its ``(exitCode, signal)``."""
        await self._exited.wait()
        assert self._status is not None
        return self._status

    # -- control ------------------------------------------------------------------------------

    def _signal_group(self, sig: signal.Signals) -> None:
        # start_new_session=True made the command a group leader: its pgid is its pid. Once
        # the leader is gone the group id stays reserved while any member lives, so this
        # reaches stragglers and never an unrelated process.
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def _signal_all(self, sig: signal.Signals, also: dict[int, int]) -> None:
        """Signal the command's group, its descendants, what bears its tag, and ``also``
        (``{pid: start time}`` from an earlier look, those still the same process)."""
        self._signal_group(sig)
        found = {**also, **children.leftovers(self.pid, self.tag, alive=self._process.returncode is None)}
        if found:
            children.signal_all(found, sig)

    async def kill(self, grace: float = KILL_GRACE) -> None:
        """Kill the command's process group and what it started outside it (SIGTERM, then
        SIGKILL after ``grace``) and wait until it has exited. The terminal stays: its output
        and exit status remain readable."""
        with anyio.CancelScope(shield=True):
            # Its tree while it runs: what it started may be re-parented once it is gone.
            early = children.leftovers(self.pid, self.tag, alive=self._process.returncode is None)
            if self._process.returncode is None:
                self._signal_all(signal.SIGTERM, early)
                await children.exited(self._process, grace)
            # Also whatever the command left running, in its group or out of it.
            self._signal_all(signal.SIGKILL, early)
            await children.reaped()
            await self._exited.wait()

    async def _close(self, grace: float) -> None:
        """Kill if needed, reap, and end this terminal's tasks."""
        with anyio.CancelScope(shield=True):
            await self.kill(grace)
            self._scope.cancel()
            with anyio.move_on_after(OUTPUT_SETTLE):  # an old anyio waits for the pipes to close
                await self._process.aclose()
            children.unmanage(self.pid)

    # -- tasks --------------------------------------------------------------------------------

    async def _pump(self) -> None:
        stream = self._process.stdout
        assert stream is not None
        with self._scope:
            try:
                while True:
                    try:
                        chunk = await stream.receive(_READ_SIZE)
                    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                        break
                    self._buffer.feed(chunk)
                    self._changed.set()
                    self._changed = anyio.Event()
            finally:
                self._output_done.set()
                self._changed.set()

    async def _watch(self) -> None:
        # Not under the terminal's scope: the exit must always be recorded, or a waiter hangs.
        await children.exited(self._process)
        returncode = self._process.returncode
        assert returncode is not None
        # Its last output is in the pipe: let the pump read it. A background process the
        # command started may hold the pipe open; do not wait for it past the settle time.
        with anyio.move_on_after(OUTPUT_SETTLE):
            await self._output_done.wait()
        self._status = _exit_status(returncode)
        self._exited.set()
        logger.debug("terminal %s (pid %d) exited: %s", self.terminal_id, self.pid, self._status)


class Terminals:
    """The terminals of one connection, their tasks in ``task_group``.

    Call :meth:`aclose` before ``task_group`` exits: it kills and reaps every terminal left.
    """

    def __init__(self, task_group: anyio.abc.TaskGroup, *, kill_grace: float = KILL_GRACE) -> None:
        self._tg = task_group
        self._kill_grace = kill_grace
        self._live: dict[str, Terminal] = {}
        self._released: OrderedDict[str, tuple[str, bool]] = OrderedDict()
        self._closed = False

    def __len__(self) -> int:
        return len(self._live)

    async def create(
        self,
        session_id: str,
        command: str,
        args: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str] | None = None,
        output_limit: int | None = None,
    ) -> Terminal:
        """Start ``command`` (see :func:`command_argv`) in ``cwd``, which the caller has
        already confined to the session's roots. ``env`` adds to (overrides) acpcli's own."""
        if self._closed:
            raise RpcError(RpcError.INTERNAL_ERROR, "terminals are shut down")
        if not command:
            raise RpcError(RpcError.INVALID_PARAMS, "terminal/create: empty command")
        if not os.path.isdir(cwd):
            raise RpcError(RpcError.INVALID_PARAMS, f"terminal/create: not a directory: {cwd}")
        argv = command_argv(command, args)
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env["PWD"] = cwd  # ours is wrong for the child; shells and some tools trust it
        tag = full_env[children.TAG_VAR] = children.new_tag("terminal")
        limit = MAX_OUTPUT_BYTES if output_limit is None else min(output_limit, MAX_OUTPUT_BYTES)
        try:
            process = await anyio.open_process(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=full_env,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise RpcError(RpcError.INVALID_PARAMS, f"terminal/create: command not found: {argv[0]}") from exc
        except PermissionError as exc:
            raise RpcError(RpcError.INVALID_PARAMS, f"terminal/create: not executable: {argv[0]}") from exc
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise RpcError(RpcError.INVALID_PARAMS, f"terminal/create: cannot run {argv[0]}: {reason}") from exc
        except ValueError as exc:  # a NUL byte in an argument, "=" in an environment name
            raise RpcError(RpcError.INVALID_PARAMS, f"terminal/create: {exc}") from exc
        children.manage(process.pid)
        if self._closed:  # aclose ran while the process was starting: it must not outlive us
            with anyio.CancelScope(shield=True):
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                children.signal_all(children.leftovers(process.pid, tag, alive=True), signal.SIGKILL)
                await process.aclose()
                children.unmanage(process.pid)
            raise RpcError(RpcError.INTERNAL_ERROR, "terminals are shut down")
        import secrets  # here: hmac, hashlib and random are ~5 ms of every command's start

        terminal_id = f"term-{secrets.token_hex(6)}"
        terminal = Terminal(terminal_id, session_id, argv, cwd, process, limit, tag)
        self._live[terminal_id] = terminal
        self._tg.start_soon(terminal._pump, name=f"terminal {terminal_id} output")
        self._tg.start_soon(terminal._watch, name=f"terminal {terminal_id} exit")
        logger.debug("terminal %s: started pid %d: %s in %s", terminal_id, process.pid, argv, cwd)
        return terminal

    def get(self, session_id: str, terminal_id: Any) -> Terminal:
        """The live terminal ``terminal_id`` of ``session_id``; -32602 for any other id."""
        terminal = self._live.get(terminal_id) if isinstance(terminal_id, str) else None
        if terminal is None or terminal.session_id != session_id:
            raise RpcError(RpcError.INVALID_PARAMS, f"unknown terminal {terminal_id!r} (released, or never created)")
        return terminal

    async def kill(self, session_id: str, terminal_id: Any) -> None:
        """``terminal/kill``: kill the command, keep the terminal."""
        await self.get(session_id, terminal_id).kill(self._kill_grace)

    async def release(self, session_id: str, terminal_id: Any) -> None:
        """``terminal/release``: kill the command if it runs and forget the terminal."""
        terminal = self.get(session_id, terminal_id)
        del self._live[terminal.terminal_id]
        await terminal._close(self._kill_grace)
        self._released[terminal.terminal_id] = terminal.output()
        while len(self._released) > RELEASED_KEPT:
            self._released.popitem(last=False)

    def snapshot(self, terminal_id: str) -> tuple[str, bool] | None:
        """``(output, truncated)`` of a live or recently released terminal, for the view:
        a terminal shown inside a tool call stays visible after the agent releases it."""
        live = self._live.get(terminal_id)
        if live is not None:
            return live.output()
        return self._released.get(terminal_id)

    async def release_session(self, session_id: str) -> None:
        """Release every terminal of one session (when the session closes)."""
        for terminal_id in [t.terminal_id for t in self._live.values() if t.session_id == session_id]:
            await self.release(session_id, terminal_id)

    async def aclose(self) -> None:
        """Kill and reap every terminal still held, concurrently. Idempotent; shielded."""
        with anyio.CancelScope(shield=True):
            self._closed = True
            left = list(self._live.values())
            self._live.clear()
            if not left:
                return
            async with anyio.create_task_group() as tg:
                for terminal in left:
                    tg.start_soon(terminal._close, self._kill_grace)
