"""Permission answers on a terminal (issue 22), driven in a pseudo-terminal as in
``test_repl.py``, against ``tests/peers/sdk_asking_agent.py`` (official SDK; it asks on every
prompt and remembers nothing itself, so a question not shown proves acpcli answered it):

* an "always" answer is remembered for exactly that request, never for its kind: after
  "always" for ``touch created-by-shell.txt``, ``rm -f important.txt`` is asked about again,
  and only the identical request is answered from memory, with a line saying so;
* every answer given on the user's behalf (policy or memory) is one line that stays in the
  scrollback (checked on the emulated screen: a live region redrawn over it would wipe it),
  and the toolbar shows a policy other than ``ask``;
* ``prompt --permissions ask`` on a terminal asks with the picker;
* the picker stays exact with 10,000 options (a window, digits by number, filtering), and a
  1 MB title is cut to one line.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .pty import CHOICE, Pty
from .screen import screen_text

AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_asking_agent.py"
CMD = shlex.join([sys.executable, str(AGENT)])
ESC = "\x1b"
ENTER = "\r"


def _asked(pty: Pty, n: int) -> str | None:
    """After a prompt: the option acpcli answered question ``n`` with by itself, or None if it
    showed the picker instead."""
    if pty.expect([CHOICE, rf"ASKED-{n} CHOSEN=([a-z0-9-]+)"]) == 0:
        return None
    return pty.child.match.group(1)


def _chosen(pty: Pty, n: int) -> str:
    pty.expect(rf"ASKED-{n} CHOSEN=([a-z0-9-]+)")
    return str(pty.child.match.group(1))


def test_always_for_one_command_approves_only_that_same_request(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", CMD)
    pty.prompt()
    pty.say("run touch created-by-shell.txt")
    pty.expect(CHOICE)
    assert int(pty.child.match.group(1)) == 4
    pty.child.send("2" + ENTER)  # "Always allow", as codex's "don't ask again for commands that start with …"
    assert _chosen(pty, 1) == "yes-always"
    pty.prompt()

    # Another command of the same kind: the person is asked again.
    pty.say("run rm -f important.txt")
    assert _asked(pty, 2) is None, "acpcli answered a different command from memory"
    pty.child.send("3" + ENTER)  # Reject
    assert _chosen(pty, 2) == "no-once"
    pty.prompt()

    # The identical request: answered from memory, with a line saying so.
    pty.say("run touch created-by-shell.txt")
    assert _asked(pty, 3) == "yes-always"
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK

    screen = screen_text(pty.seen).replace("\n", " ")  # (long lines wrap at words, at 100 columns)
    line = (
        "acpcli: allowed 'Run touch created-by-shell.txt' (kind execute) from memory: "
        "you chose 'Always allow' for this same request"
    )
    assert screen.count(line) == 1, screen
    assert screen.index("GOT[run touch created-by-shell.txt]", screen.index("ASKED-2")) < screen.index(line), screen


def test_policy_answers_stay_in_the_scrollback_and_the_toolbar_names_the_policy(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", CMD, "--permissions", "allow")
    pty.prompt()
    pty.expect(r"permissions: allow")  # the toolbar
    for n, command in enumerate(("ls -l", "pwd"), start=1):
        pty.say(f"run {command}")
        assert _asked(pty, n) == "yes-once"
        pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    screen = screen_text(pty.seen).replace("\n", "")  # (long lines wrap at 100 columns)
    for n, command in enumerate(("ls -l", "pwd"), start=1):
        line = f"acpcli: allowed 'Run {command}' (kind execute) with 'Allow once' (policy allow)"
        assert screen.count(line) == 1, screen
        assert screen.index(f"GOT[run {command}]") < screen.index(line) < screen.index(f"ASKED-{n} CHOSEN"), screen


def test_no_policy_in_the_toolbar_under_ask(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", CMD)
    pty.prompt()
    pty.expect(r"idle")
    assert pty.leave()[0] == ExitCode.OK
    assert "permissions:" not in pty.seen


@pytest.mark.parametrize("flags", [("--permissions", "ask"), ()], ids=["ask", "default"])
def test_prompt_on_a_terminal_asks_the_person(spawn, flags: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("prompt", "--cmd", CMD, *flags, "run touch x")
    pty.expect("permission:")
    pty.expect(CHOICE)
    pty.child.send("1" + ENTER)
    assert _chosen(pty, 1) == "yes-once"
    assert pty.wait() == ExitCode.OK
    assert "acpcli: refused" not in pty.seen


def test_prompt_on_a_terminal_dismissed_with_escape_cancels_the_turn(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("prompt", "--cmd", CMD, "--permissions", "ask", "run touch x")
    pty.expect(CHOICE)
    pty.child.send(ESC)
    pty.expect("dismissed:")
    assert _chosen(pty, 1) == "cancelled"
    assert pty.wait() == ExitCode.CANCELLED


def test_the_picker_is_exact_with_ten_thousand_options(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", CMD)
    pty.prompt()

    # Digits pick by number, every digit counting: 1, 2, 3, 4 is option 1234.
    pty.say("many 10000")
    pty.expect(CHOICE)  # (drawn whole, then taking keys)
    assert int(pty.child.match.group(1)) == 10000
    assert re.search(r"↓ 9,9\d\d more", pty.child.match.group(0))  # a window of the options, not all 10,000
    pty.child.send("1234")
    pty.expect(r"›\s+1234\. Option 1234")  # highlighted ...
    pty.child.send(ENTER)
    assert _chosen(pty, 1) == "opt-1234"  # ... is what Enter picks
    pty.prompt()

    # Typing filters; what stays highlighted is what Enter picks.
    pty.say("many 10000")
    pty.expect(CHOICE)
    pty.child.send("zebra")
    # the filter line, drawn over the hint line (the cells both have are skipped: a cursor move)
    pty.expect(r"zebra.{0,12}\(1 of(?: |\x1b\[C)10,000\)")
    pty.expect(r"›\s+7777\. Option 7777 zebra")
    pty.child.send(ENTER)
    assert _chosen(pty, 2) == "opt-7777"
    pty.prompt()

    # Arrows and End move the highlight through the window; Escape dismisses.
    pty.say("many 10000")
    pty.expect(CHOICE)
    pty.child.send("\x1b[F")  # End
    pty.expect(r"›\s+10000\. Option 10000")
    pty.child.send("\x1b[A")  # Up
    pty.expect(r"›\s+9999\. Option 9999")
    pty.child.send(ENTER)
    assert _chosen(pty, 3) == "opt-9999"
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    assert "Option 5000" not in pty.seen  # never drawn: only windows around the highlight


def test_a_huge_title_is_cut_to_one_line(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = spawn("new", "--cmd", CMD)
    pty.prompt()
    pty.say("title 1000000")
    pty.expect("permission:")
    pty.expect(CHOICE)
    pty.child.send("1" + ENTER)
    assert _chosen(pty, 1) == "yes-once"
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    question = next(line for line in screen_text(pty.seen).splitlines() if line.startswith("permission:"))
    assert question.endswith("… (edit)") and len(question) <= 100, question
    assert "-END" not in pty.seen  # nowhere on the terminal: not in the picker, not in the transcript
    assert len(pty.seen) < 200_000
