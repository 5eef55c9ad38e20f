"""The one injectable environment: streams and the facts about them.

Built once in the CLI (``Environment.from_process()``) and passed down, so tests can hand
acpcli any streams they like. Whether a stream is "a terminal" is decided by rich (it honours
``FORCE_COLOR``, ``NO_COLOR`` and ``TERM=dumb``), once, here — except that the common "no"
(a pipe or a file, no ``FORCE_COLOR``) is answered without importing rich (~25 ms).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _surely_not_terminal(stream: TextIO | None) -> bool:
    """What rich's ``Console.is_terminal`` would answer False for, decided without rich.

    rich 13-15 say "terminal" only when ``TTY_COMPATIBLE=1``, when ``FORCE_COLOR`` is set and
    not empty, or when the file's ``isatty()`` is true (its Jupyter and IDLE checks only ever
    turn that into False). A stream rich would swap for another (None, a rich file proxy) is
    left to rich.
    """
    if stream is None or hasattr(stream, "rich_proxied_file"):
        return False
    if os.environ.get("TTY_COMPATIBLE", "") == "1" or os.environ.get("FORCE_COLOR"):
        return False
    return not _isatty(stream)


@dataclass
class Environment:
    """stdin/stdout/stderr and whether each is an interactive terminal."""

    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    _out: Console | None = field(default=None, repr=False)
    _err: Console | None = field(default=None, repr=False)

    @classmethod
    def from_process(cls) -> Environment:
        return cls()

    @property
    def stdin_isatty(self) -> bool:
        return self.stdin is not None and _isatty(self.stdin)

    @property
    def out(self) -> Console:
        """The console for the transcript (stdout)."""
        if self._out is None:
            from acpcli.text.console import SafeConsole

            self._out = SafeConsole(file=self.stdout, highlight=False, soft_wrap=False)
        return self._out

    @property
    def err(self) -> Console:
        """The console for everything that is not the transcript (stderr)."""
        if self._err is None:
            from acpcli.text.console import SafeConsole

            self._err = SafeConsole(file=self.stderr, highlight=False, soft_wrap=True)
        return self._err

    def note(self, text: str, *, style: str | None = None) -> None:
        """Print one line of ``text`` (no markup) on stderr, in ``style`` on a terminal.

        The same as ``err.print(text, style=style, markup=False, highlight=False)``, but a
        line rich would print unchanged (stderr surely not a terminal, and only printable
        characters with no ``:`` that an emoji code could start) is written without
        importing rich (~25 ms on the start-up of a piped command).
        """
        if self._err is None and _surely_not_terminal(self.stderr) and text.isprintable() and ":" not in text:
            self.stderr.write(text + "\n")
            self.stderr.flush()
            return
        self.err.print(text, style=style, markup=False, highlight=False)

    @property
    def stdout_is_terminal(self) -> bool:
        """True when stdout gets rich rendering (a terminal, or FORCE_COLOR)."""
        if self._out is None and _surely_not_terminal(self.stdout):
            return False
        return self.out.is_terminal

    @property
    def interactive(self) -> bool:
        """A person is at the keyboard: stdin and stdout are both terminals."""
        return self.stdin_isatty and _isatty(self.stdout)


def configure_logging() -> None:
    """Send acpcli's log records to ``logs/acpcli.log`` under the state directory, never to
    the terminal the transcript and the REPL draw on. ``ACPCLI_DEBUG=1`` logs everything.

    The file (and its directory) is created on the first record, so commands that log
    nothing create nothing.
    """
    import logging

    logger = logging.getLogger("acpcli")
    if getattr(logger, "_acpcli_configured", False):
        return

    class LazyFile(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self._inner: logging.Handler | None = None

        def emit(self, record: logging.LogRecord) -> None:
            try:
                self._emit(record)
            except Exception:  # noqa: BLE001 - a log line must never break the command: handleError reports it as logging does
                self.handleError(record)

        def _emit(self, record: logging.LogRecord) -> None:
            if self._inner is None:
                from acpcli.paths import create_private, ensure_dir, log_dir

                path = ensure_dir(log_dir()) / "acpcli.log"
                os.close(create_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND))  # 0600
                self._inner = logging.FileHandler(path, encoding="utf-8")
                self._inner.setFormatter(
                    logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
                )
            self._inner.emit(record)

        def close(self) -> None:
            if self._inner is not None:
                self._inner.close()
            super().close()

    # A log file that cannot be written (full disk, read-only home) must not print logging's
    # own tracebacks on the terminal: such records are dropped.
    logging.raiseExceptions = False
    debug = os.environ.get("ACPCLI_DEBUG", "") not in ("", "0")
    logger.setLevel(logging.DEBUG if debug else logging.INFO)
    logger.addHandler(LazyFile())
    logger.propagate = False
    logger._acpcli_configured = True  # type: ignore[attr-defined]


def program(argv0: str | None = None, cwd: str | None = None, path: str | None = None) -> str:
    """How to type this program in a hint we print (``acpcli resume ID``): ``acpcli`` when that
    is what the shell finds, else the path it was run by (``.venv/bin/acpcli`` after ``make
    demo``, relative to the current folder when it is under it), so every command we print runs
    as printed. ``python -m acpcli`` (and anything that is not a program named acpcli) is
    named ``acpcli``."""
    import shutil

    argv0 = sys.argv[0] if argv0 is None else argv0
    if os.path.basename(argv0) != "acpcli" or os.sep not in argv0:
        return "acpcli"
    found = shutil.which("acpcli", path=path)
    real = os.path.realpath(argv0)
    if found is not None and os.path.realpath(found) == real:
        return "acpcli"
    here = os.getcwd() if cwd is None else cwd
    absolute = os.path.abspath(argv0)
    if absolute.startswith(here.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, here)
    return absolute
