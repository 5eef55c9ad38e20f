"""The pseudo-terminal harness of the REPL tests: :class:`Pty`, the ``spawn`` fixture's
worker, and what the screen is matched against. See ``test_repl.py`` for how synchronisation
works (on what the terminal shows, never on sleeps)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pexpect
import pytest

if TYPE_CHECKING:
    from .conftest import AgentTrace

TIMEOUT = 10  # a guard against hangs only; each step takes well under a second when it works

CPR_REQUEST = "\x1b[6n"
#: Bracketed paste on, any styling/cursor sequences, then the prompt character.
PROMPT = r"\x1b\[\?2004h(?:\x1b\[[0-9;?]*[A-Za-z])*›"
#: A permission picker, drawn and taking keys: its question, then (after its grace: keys that
#: come sooner are not its own) the start of its hint line, ``picker.HINT``.
CHOICE = r"\x1b\[\?2004h(?:\x1b\[[0-9;?]*[A-Za-z])* ?choose 1-(\d+):[\s\S]*?↑↓ or a number"
REPLY = "Demo agent reply"
HELP_TEXT = "Ctrl-C cancels a turn"  # the last /help line (the toolbar and the menu say other things)
#: The come-back hint of Ctrl-D: resume, else load (gemini), else show (an agent with neither);
#: attach when the session stays live in its host.
RESUME = re.compile(r"acpcli (?:resume|load|show|attach) ([A-Za-z0-9_-]+)")
UP = "\x1b[A"
DOWN = "\x1b[B"
CTRL_C = "\x03"
CTRL_D = "\x04"


def _env(width: int = 100, height: int = 30) -> dict[str, str]:
    env = dict(os.environ)  # carries the per-test ACPCLI_HOME of tests/conftest.py
    env.update(TERM="xterm-256color", COLUMNS=str(width), LINES=str(height))
    for noisy in ("FORCE_COLOR", "NO_COLOR", "ACPCLI_LOG_FILE", "ACPCLI_DEBUG", "PROMPT_TOOLKIT_NO_CPR"):
        env.pop(noisy, None)
    return env


class Pty:
    """One acpcli process on a pseudo-terminal, answering cursor-position requests."""

    def __init__(
        self, argv: list[str], cwd: Path, width: int = 100, env: dict[str, str] | None = None, *, true_cpr: bool = False,
        height: int = 30,
    ) -> None:
        self.width, self.height = width, height
        #: Answer cursor-position requests with where the emulated screen's cursor is (a
        #: terminal's answer), rather than always row 1: prompt-toolkit then scrolls the screen
        #: as a terminal would (what was drawn above a question stays on the visible screen).
        self.true_cpr = true_cpr
        self.child = pexpect.spawn(
            argv[0], argv[1:], env={**_env(width, height), **(env or {})}, cwd=str(cwd), dimensions=(height, width),
            encoding="utf-8", codec_errors="replace", timeout=TIMEOUT,
        )
        self.seen = ""  # everything read, for failure messages and whole-run checks

    def expect(self, patterns: str | list[str] | type) -> int:
        """Wait for one of ``patterns`` (regexes or pexpect.EOF), answering CPR meanwhile."""
        wanted = patterns if isinstance(patterns, list) else [patterns]
        while True:
            try:
                i = self.child.expect([re.escape(CPR_REQUEST), *wanted])
            except pexpect.TIMEOUT:
                raise AssertionError(f"timed out waiting for {wanted!r}; screen so far:\n{self._tail()}") from None
            except pexpect.EOF:
                raise AssertionError(f"acpcli ended while waiting for {wanted!r}:\n{self._tail()}") from None
            self.seen += (self.child.before or "") + (self.child.after if isinstance(self.child.after, str) else "")
            if i == 0:
                self.child.send(self._cursor_position())
                continue
            return i - 1

    def _cursor_position(self) -> str:
        if not self.true_cpr:
            return "\x1b[1;1R"  # a terminal's answer: row 1, column 1
        from .screen import Screen

        screen = Screen(self.width, self.height).feed(self.seen)
        return f"\x1b[{screen.row - screen.top + 1};{min(screen.col, 99) + 1}R"

    def prompt(self) -> None:
        """Wait until the input prompt is drawn and reading keys."""
        self.expect(PROMPT)

    def say(self, text: str) -> None:
        """Type ``text`` at the prompt and press Enter."""
        self.child.send(text + "\r")

    def leave(self) -> tuple[int, str]:
        """Ctrl-D at a ready prompt: returns the exit status and the session id printed."""
        self.child.send(CTRL_D)
        self.expect(RESUME.pattern)
        match = RESUME.search(self.seen)
        assert match is not None
        return self.wait(), match.group(1)

    def wait(self) -> int:
        """Wait for the end of output and the process; its exit status."""
        self.expect(pexpect.EOF)
        self.child.close()
        assert self.child.signalstatus is None, f"killed by signal {self.child.signalstatus}"
        return int(self.child.exitstatus)

    def _tail(self) -> str:
        before = self.child.before if isinstance(self.child.before, str) else ""
        return (self.seen + before)[-3000:]

    def kill(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


@pytest.fixture
def spawn(workdir: Path):  # type: ignore[no-untyped-def]
    """``spawn(*acpcli_args, cwd=workdir, width=100, height=30, env=None)`` -> :class:`Pty` (a
    terminal ``width`` x ``height``, ``env`` added to the environment); every pty is killed at
    teardown."""
    started: list[Pty] = []

    def start(
        *args: str, cwd: Path | None = None, shell_after: bool = False, width: int = 100,
        env: dict[str, str] | None = None, true_cpr: bool = False, height: int = 30,
    ) -> Pty:
        argv = [sys.executable, "-m", "acpcli", *args]
        if shell_after:
            # Run stty in the same pty once acpcli is gone, to see the state it left behind.
            script = '"$@"; echo "ACPCLI-EXIT=$?"; stty -a'
            argv = ["bash", "-c", script, "bash", *argv]
        pty = Pty(argv, cwd or workdir, width, env, true_cpr=true_cpr, height=height)
        started.append(pty)
        return pty

    yield start
    for pty in started:
        pty.kill()


def new_args(trace: AgentTrace, *extra_agent: str, protocol: int = 2) -> list[str]:
    return ["new", "--cmd", trace.demo_cmd(protocol=protocol, extra=extra_agent)]
