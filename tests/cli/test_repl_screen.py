"""What the terminal shows around an interactive ``load`` / ``resume``, the permission picker
and the come-back hints (issue #11), driven in a pseudo-terminal as in ``test_repl.py``.

The screen is checked as a terminal would show it (:mod:`tests.cli.screen`, a small
emulator: rich's live region and prompt-toolkit redraw in place, so the raw stream repeats
text the person sees once): "drawn once, in order" is about the emulated scrollback.

Peers: the demo agent (replaying before its ``session/load`` answer, after it, or
``--replay-pause`` seconds after it) and ``tests/peers/sdk_gemini_like_agent.py``, written
with the official SDK (load without resume, a late replay, claude's option order).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pexpect
import pytest

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli
from .pty import CHOICE, CTRL_C, CTRL_D, PROMPT, REPLY, Pty, new_args
from .screen import screen_text

GEMINI_LIKE = Path(__file__).resolve().parent.parent / "peers" / "sdk_gemini_like_agent.py"

_ANSI = re.compile(r"\x1b\[[0-9;?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78NM]")


def plain(stream: str) -> str:
    """The pty stream without escape sequences and carriage returns."""
    return _ANSI.sub("", stream).replace("\r", "")


def _session_with_two_turns(cli: Cli, trace: AgentTrace) -> str:
    sid = cli.new(trace.demo_cmd())
    cli.ok("prompt", "--session", sid, "alpha words no-permission")
    cli.ok("prompt", "--session", sid, "beta words no-permission")
    return sid


def _assert_replay_whole_once(text: str, sid: str) -> None:
    """Banner first, then each replayed turn exactly once, in order."""
    banner = f"session {sid} with"
    assert text.count(banner) == 1, text
    for marker in ("› alpha words no-permission", "› beta words no-permission", "(turn 1)", "(turn 2)"):
        assert text.count(marker) == 1, (marker, text)
    assert text.index(banner) < text.index("› alpha words") < text.index("(turn 1)"), text
    assert text.index("(turn 1)") < text.index("› beta words") < text.index("(turn 2)"), text


@pytest.mark.parametrize(
    "timing",
    [
        pytest.param([], id="replay-before-answer"),
        pytest.param(["--load-answers-first"], id="replay-right-after-answer"),
        pytest.param(["--replay-pause", "0.4"], id="replay-0.4s-after-answer"),
    ],
)
def test_interactive_load_draws_banner_then_the_whole_replay_then_the_prompt(
    spawn, cli: Cli, trace: AgentTrace, timing: list[str]
) -> None:
    sid = _session_with_two_turns(cli, trace)
    pty: Pty = spawn("load", sid, "--cmd", trace.demo_cmd(extra=timing))
    pty.prompt()  # everything before the first input prompt is in pty.seen now
    _assert_replay_whole_once(screen_text(pty.seen), sid)
    assert "(turn 2)" in plain(pty.seen)  # the replay came before the prompt, not only on screen
    pty.say("/help")
    pty.expect("Ctrl-C cancels a turn")
    pty.prompt()
    status, back = pty.leave()
    assert (status, back) == (ExitCode.OK, sid)
    _assert_replay_whole_once(screen_text(pty.seen), sid)  # nothing drawn again later
    trace.assert_all_gone()


def test_a_replay_later_than_the_wait_is_drawn_above_the_input_line(spawn, cli: Cli, trace: AgentTrace) -> None:
    sid = _session_with_two_turns(cli, trace)
    pty: Pty = spawn("load", sid, "--cmd", trace.demo_cmd(extra=["--replay-pause", "2.5"]))
    pty.prompt()  # the load waits about a second for a first update, then gives up
    before = plain(pty.seen)
    assert f"session {sid} with" in before and "alpha words" not in before, before
    pty.child.send("half")
    pty.expect("half")
    pty.expect(r"\(turn 2\)")  # the late replay arrives while the line waits, no key pressed
    pty.expect(PROMPT)  # ... and the input line is drawn again below it
    pty.child.send(" done no-permission\r")
    pty.expect(REPLY)
    pty.expect("half done no-permission")  # the half-typed line survived the interruption
    pty.prompt()
    screen = screen_text(pty.seen)
    _assert_replay_whole_once(screen, sid)
    assert screen.index("(turn 2)") < screen.index("› half done no-permission") < screen.index("(turn 3)"), screen
    assert "› half\n" not in screen + "\n", screen  # the input line did not stay behind, half typed
    assert pty.leave()[0] == ExitCode.OK
    trace.assert_all_gone()


def test_interactive_resume_without_the_capability_refuses_before_printing(
    spawn, cli: Cli, trace: AgentTrace
) -> None:
    sid = _session_with_two_turns(cli, trace)
    pty: Pty = spawn("resume", sid, "--cmd", trace.demo_cmd(without=["resume"]))
    pty.expect(pexpect.EOF)
    pty.child.close()
    assert pty.child.exitstatus == ExitCode.CAPABILITY
    text = plain(pty.seen + (pty.child.before or ""))
    assert "does not support session/resume" in text, text
    assert "acpcli load" in text, text  # the hint names what the agent has
    for shown in ("alpha words", "stored locally", f"session {sid} with", "(turn 1)"):
        assert shown not in text, (shown, text)
    trace.assert_all_gone()


def test_interactive_resume_shows_the_local_transcript_once_after_the_banner(
    spawn, cli: Cli, trace: AgentTrace
) -> None:
    sid = _session_with_two_turns(cli, trace)
    pty: Pty = spawn("resume", sid, "--cmd", trace.demo_cmd())
    pty.prompt()
    text = screen_text(pty.seen)
    _assert_replay_whole_once(text, sid)
    assert text.index(f"session {sid} with") < text.index("stored locally") < text.index("› alpha words"), text
    assert text.index("(turn 2)") < text.index("── resumed ──"), text
    assert pty.leave() == (ExitCode.OK, sid)


# -- a gemini-like peer written with the SDK: load without resume, late replay, picker ---------


def _gemini_like(spawn, *args: str, delay: str = "0.3") -> Pty:  # type: ignore[no-untyped-def]
    # The SDK agent reads REPLAY_DELAY; the pty passes the environment on to acpcli, which
    # passes it on to the agent.
    import os

    os.environ["REPLAY_DELAY"] = delay
    try:
        return spawn(*args, "--cmd", shlex.join([sys.executable, str(GEMINI_LIKE)]))  # type: ignore[no-any-return]
    finally:
        del os.environ["REPLAY_DELAY"]


def test_sdk_agent_with_a_late_replay_and_load_only(spawn) -> None:
    pty = _gemini_like(spawn, "load", "gl-earlier")
    pty.prompt()
    text = screen_text(pty.seen)
    assert text.count("REPLAYED-QUESTION") == 1 and text.count("REPLAYED-ANSWER") == 1, text
    assert text.index("session gl-earlier with Gemini-like") < text.index("REPLAYED-QUESTION"), text
    assert text.index("REPLAYED-QUESTION") < text.index("replayed-tool") < text.index("REPLAYED-ANSWER"), text

    pty.say("/sessions")
    pty.expect("come back to one with: acpcli load ID")
    pty.prompt()
    assert "acpcli resume" not in plain(pty.seen), plain(pty.seen)
    pty.child.send(CTRL_D)
    assert pty.wait() == ExitCode.OK
    assert "bye — come back with: acpcli load gl-earlier" in plain(pty.seen)  # gemini: load, no resume
    assert "acpcli resume" not in plain(pty.seen)


def test_sdk_agent_replaying_after_the_prompt_is_up(spawn) -> None:
    pty = _gemini_like(spawn, "load", "gl-late", delay="2.5")  # later than load waits for
    pty.prompt()
    assert "REPLAYED" not in plain(pty.seen)
    pty.child.send("typed")
    pty.expect("typed")
    pty.expect("REPLAYED-ANSWER")  # drawn above the waiting line, no key pressed
    pty.expect(r"Replayed title\s*·\s*idle")  # the toolbar follows the session's new title
    pty.child.send(" more\r")
    pty.expect(CHOICE)
    pty.child.send("\r")
    pty.expect(r"CHOSEN=yes-once GOT\[typed more\]")  # the typed text survived the replay
    pty.prompt()
    screen = screen_text(pty.seen)
    assert screen.count("REPLAYED-QUESTION") == 1 and screen.count("REPLAYED-ANSWER") == 1, screen
    assert screen.index("REPLAYED-QUESTION") < screen.index("REPLAYED-ANSWER") < screen.index("› typed more"), screen
    pty.child.send(CTRL_D)
    assert pty.wait() == ExitCode.OK


def test_the_picker_highlights_the_narrowest_allow_and_keeps_the_toolbar(spawn) -> None:
    pty = _gemini_like(spawn, "new")
    pty.prompt()
    pty.say("first")
    pty.expect("permission:")
    mark = len(pty.seen)
    pty.expect(CHOICE)  # (drawn whole, then taking keys)
    assert "waiting for you" in pty.seen[mark:]  # the REPL's toolbar stays while the question is up
    pty.child.send("\r")  # Enter on the highlighted option: "Allow" (allow_once), not option 1
    pty.expect(r"CHOSEN=([a-z-]+) GOT\[first\]")
    assert pty.child.match.group(1) == "yes-once"
    assert "chose: Allow  (allow_once)" in plain(pty.seen)
    pty.prompt()


@pytest.mark.parametrize("key", [CTRL_C, "\x1b"], ids=["ctrl-c", "escape"])
def test_escape_dismisses_the_picker_as_ctrl_c_does(spawn, key: str) -> None:
    """Same outcome (cancelled), same line, the list gone from the screen (issue 24)."""
    pty = _gemini_like(spawn, "new")
    pty.prompt()
    pty.say("second")
    pty.expect(CHOICE)
    pty.child.send(key)
    pty.expect(r"CHOSEN=cancelled")
    pty.prompt()
    screen = screen_text(pty.seen)
    after = screen[screen.index("› second") :]
    assert after.count("dismissed: no option chosen; the turn is cancelled") == 1, after
    assert "choose 1-" not in after and "Allow" not in after, after  # the list was taken away
    assert pty.leave()[0] == ExitCode.OK


def test_the_picker_says_when_it_was_dismissed(spawn) -> None:
    pty = _gemini_like(spawn, "new")
    pty.prompt()
    pty.say("second")
    pty.expect(CHOICE)
    mark = len(pty.seen)
    pty.child.send(CTRL_C)
    pty.expect("dismissed:")
    pty.expect(r"CHOSEN=cancelled")
    pty.prompt()
    after = plain(pty.seen[mark:])
    assert "no option chosen" in after and "chose:" not in after, after
    assert pty.leave()[0] == ExitCode.OK


def test_the_toolbar_names_a_cmd_agent_by_its_title(spawn, trace: AgentTrace, repl_mode: list[str]) -> None:  # type: ignore[no-untyped-def]
    """One agent, one name on the screen: a ``--cmd`` agent is recorded under its
    ``agentInfo.name`` (``acpcli-demo-agent``) and shown, in the toolbar as in the banner and
    ``sessions``, by its title (``acpcli demo agent``), hosted or not."""
    pty = spawn(*new_args(trace), *repl_mode)
    pty.prompt()
    pty.expect("acpcli demo agent · ")
    assert "acpcli-demo-agent · " not in pty.seen
    assert pty.leave()[0] == 0
