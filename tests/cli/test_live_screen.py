"""What is written during a turn stays written, and each tool call is one block (issue 24):
checked on the emulated screen's whole scrollback (:mod:`tests.cli.screen`), not only its
last frame, with ``tests/peers/sdk_screen_agent.py`` sending what claude and codex send.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from acpcli.errors import ExitCode

from .conftest import Cli
from .pty import CHOICE, CTRL_C, Pty
from .screen import screen_text

SCREEN_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_screen_agent.py"
CMD = shlex.join([sys.executable, str(SCREEN_AGENT)])


def _start(spawn, *flags: str) -> Pty:  # type: ignore[no-untyped-def]
    pty: Pty = spawn("new", "--cmd", CMD, *flags, true_cpr=True)
    pty.prompt()
    return pty


def _lines(screen: str, word: str) -> list[str]:
    return [line for line in screen.splitlines() if word in line]


def test_a_refusal_during_a_thought_stays_and_the_thought_leaves_only_its_summary(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = _start(spawn, "--permissions", "deny")
    pty.say("think-write")
    pty.expect("THOUGHT-DONE")
    pty.prompt()
    screen = screen_text(pty.seen)
    refusal = _lines(screen, "refused")
    assert len(refusal) == 1 and "WRITTEN.txt" in refusal[0], screen  # not wiped by a redraw
    assert "Thinking" not in screen, screen  # the live thought left nothing of itself behind
    assert len(_lines(screen, "Thought · 6 words")) == 1, screen
    # in order: the line above what was still live when it came (the thought), before the answer
    assert screen.index("› think-write") < screen.index("refused") < screen.index("THOUGHT-DONE"), (
        screen
    )
    assert pty.leave()[0] == ExitCode.OK


def test_cancelling_a_long_code_block_keeps_the_notice_and_leaves_no_elision_line(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = _start(spawn)
    pty.say("cancel")
    pty.expect("value_30 ")
    pty.child.send(CTRL_C)
    pty.expect("Turn ended")
    pty.prompt()
    screen = screen_text(pty.seen)
    assert len(_lines(screen, "cancelling…")) == 1, screen  # not wiped within milliseconds
    assert "lines above" not in screen, screen  # the live area's elision line did not stay
    assert len(_lines(screen, "value_0 = 0")) == 1, screen  # what was streamed, once
    assert screen.index("cancelling…") < screen.index("Turn ended"), screen
    assert pty.leave()[0] == ExitCode.OK


def test_a_call_asked_about_is_one_block_in_its_final_state(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = _start(spawn)
    pty.say("asked")
    pty.expect(CHOICE)
    pty.child.send("\r")  # the highlighted option: Allow
    pty.expect("ASKED-DONE CHOSEN=yes-once")
    pty.prompt()
    screen = screen_text(pty.seen)
    headers = _lines(screen, "TOOL-ASKED")
    # the question's line, and the call once: completed, with all its content under it
    assert [line for line in headers if not line.startswith("permission:")] == [
        "✓ TOOL-ASKED  execute  completed"
    ], screen
    assert len(_lines(screen, "first output line")) == 1, screen
    assert len(_lines(screen, "second output line")) == 1, screen
    assert len(_lines(screen, "chose: Allow")) == 1, screen
    assert "choose 1-2" not in screen, screen  # the picker went
    assert (
        screen.index("chose: Allow") < screen.index("✓ TOOL-ASKED") < screen.index("ASKED-DONE")
    ), screen
    assert pty.leave()[0] == ExitCode.OK


def test_a_call_whose_question_is_dismissed_is_one_cancelled_block(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = _start(spawn)
    pty.say("asked")
    pty.expect(CHOICE)
    pty.child.send(CTRL_C)
    pty.expect("Turn ended")
    pty.prompt()
    screen = screen_text(pty.seen)
    headers = [line for line in _lines(screen, "TOOL-ASKED") if not line.startswith("permission:")]
    assert headers == ["⊘ TOOL-ASKED  execute  cancelled"], (
        screen
    )  # not pending, then cancelled twice
    assert len(_lines(screen, "dismissed: no option chosen")) == 1, screen
    assert pty.leave()[0] == ExitCode.OK


def test_a_slash_commands_answer_stays_when_the_agent_streams_meanwhile(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = _start(spawn)
    pty.say("/mode yolo")
    pty.expect("YOLO")
    pty.prompt()
    screen = screen_text(pty.seen)
    assert len(_lines(screen, "[MODE_UPDATE] yolo")) == 1, screen  # the agent's message, once
    assert _lines(screen, "Mode: YOLO") == ["Mode: YOLO"], screen  # acpcli's confirmation stayed
    assert pty.leave()[0] == ExitCode.OK


def test_markdown_tool_output_is_drawn_as_markdown_and_reminders_are_folded(
    spawn, cli: Cli
) -> None:  # type: ignore[no-untyped-def]
    pty = _start(spawn)
    pty.say("console")
    pty.expect("CONSOLE-DONE")
    pty.prompt()
    status, sid = pty.leave()
    assert status == ExitCode.OK
    screen = screen_text(pty.seen)
    assert "$ ls -la" in screen and "README.md" in screen, screen
    assert "```" not in screen, screen  # a code block, not literal fences
    assert len(_lines(screen, "system reminder, 3 lines")) == 1, screen
    assert len(_lines(screen, "system reminder, 1 line")) == 1, screen  # (the one inside a fence)
    assert "1→hello from the README" in screen and "READ-REMINDER" not in screen, screen
    assert "REMINDER-LAST-LINE" not in screen and "malware" not in screen, screen

    shown = cli.ok("show", sid).stdout
    assert "[system reminder, 3 lines]" in shown and "REMINDER-LAST-LINE" not in shown, shown
    markdown = cli.ok("export", sid, "--format", "markdown").stdout
    # not fenced twice
    assert markdown.count("```console") == 1 and "```text" not in markdown, markdown
    assert "````" not in markdown, markdown
    assert "[system reminder, 3 lines]" in markdown, markdown
    assert "REMINDER-LAST-LINE" not in markdown, markdown
    jsonl = cli.ok("export", sid, "--format", "jsonl").stdout
    assert "REMINDER-LAST-LINE" in jsonl  # the record keeps it whole


def test_cancelling_a_prompt_on_a_terminal_keeps_the_notice(spawn, cli: Cli) -> None:  # type: ignore[no-untyped-def]
    # without a host, and through one (--keep-alive): the line is drawn by the view either way
    for keep in ("0", "30"):
        pty: Pty = spawn("prompt", "--cmd", CMD, "--keep-alive", keep, "cancel", true_cpr=True)
        pty.expect("value_20 ")
        pty.child.send(CTRL_C)
        assert pty.wait() == ExitCode.INTERRUPTED
        screen = screen_text(pty.seen)
        assert len(_lines(screen, "cancelling…")) == 1, (keep, screen)
        assert "lines above" not in screen, (keep, screen)
    cli.ok("stop", "--all")


def test_cancelling_in_an_attached_terminal_keeps_the_notice(spawn, cli: Cli) -> None:  # type: ignore[no-untyped-def]
    live = {"ACPCLI_KEEP_ALIVE": "300"}
    sid = cli.ok("new", "--no-repl", "--cmd", CMD, env=live).stdout.strip()
    try:
        pty: Pty = spawn("attach", sid, true_cpr=True)
        pty.expect("attached to")
        pty.prompt()
        pty.say("cancel")
        pty.expect("value_20 ")
        pty.child.send(CTRL_C)
        pty.expect("Turn ended")
        pty.prompt()
        screen = screen_text(pty.seen)
        assert len(_lines(screen, "cancelling…")) == 1, screen
        assert "lines above" not in screen, screen
    finally:
        cli.run("stop", "--all")


def test_parallel_tool_calls_are_one_block_each_in_the_order_they_started(spawn) -> None:  # type: ignore[no-untyped-def]
    pty = _start(spawn)
    pty.say("parallel")
    pty.expect("PARALLEL-DONE")
    pty.prompt()
    screen = screen_text(pty.seen)
    assert _lines(screen, "TOOL-FIRST") == ["✓ TOOL-FIRST  read  completed"], screen
    assert _lines(screen, "TOOL-SECOND") == ["✓ TOOL-SECOND  read  completed"], screen
    assert (
        screen.index("TOOL-FIRST") < screen.index("first result") < screen.index("TOOL-SECOND")
    ), screen
    assert screen.index("second result") < screen.index("PARALLEL-DONE"), screen
    assert pty.leave()[0] == ExitCode.OK
