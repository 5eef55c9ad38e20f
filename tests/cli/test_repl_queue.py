"""The input line during a turn, the prompt queue and "send now" (issues 24 and 25), driven in
a pseudo-terminal as in ``test_repl.py`` and checked on the emulated screen
(:mod:`tests.cli.screen`): what a person sees while typing during a turn, not the raw stream.

Peers: the demo agent (``slow`` streams for a few seconds) and
``tests/peers/sdk_queueing_agent.py`` (official SDK), whose turns wait at a gate file the
test opens, with and without ``promptQueueing`` (claude-agent-acp's) and ``_session/steering``.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from pathlib import Path

from acpcli.errors import ExitCode

from .conftest import AgentTrace
from .pty import CTRL_C, PROMPT, Pty, new_args
from .screen import Screen

QUEUEING_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_queueing_agent.py"
UP = "\x1b[A"
ALT_ENTER = "\x1b\r"


class Watch:
    """The emulated screen of a pty, fed as output arrives."""

    def __init__(self, pty: Pty) -> None:
        self.pty = pty
        self.screen = Screen(pty.width, pty.height)
        self.fed = 0

    def text(self) -> str:
        seen = self.pty.seen
        end = len(seen)
        cut = seen.rfind("\x1b", self.fed, end)
        if cut != -1 and end - cut < 40:  # maybe a sequence cut in two: feed it whole later
            end = cut
        self.screen.feed(seen[self.fed : end])
        self.fed = end
        return self.screen.text()

    def prompt(self, since: int = 0) -> None:
        """Read output until the idle input prompt is drawn after ``since`` (an index of
        ``pty.seen``) and ready for keys."""
        deadline = time.monotonic() + 30
        while not re.search(PROMPT, self.pty.seen[since:]):
            assert time.monotonic() < deadline, f"no prompt:\n{self.bottom()}"
            self.pty.expect(r"[\s\S]+")

    def bottom(self) -> str:
        """The screen's visible rows."""
        text = self.text()
        return "\n".join(text.split("\n")[-self.pty.height :])

    def until(self, wanted: str, *, visible: bool = True) -> str:
        """Read output until ``wanted`` is on the screen (the visible rows when ``visible``)."""
        deadline = time.monotonic() + 30  # a guard against hangs only
        while time.monotonic() < deadline:
            shown = self.bottom() if visible else self.text()
            if wanted in shown:
                return shown
            self.pty.expect(r"[\s\S]+")
        raise AssertionError(f"never on the screen: {wanted!r}\n{self.bottom()}")


def _stored_prompts(home: Path, session_id: str) -> list[str]:
    stored = json.loads((home / "demo-agent" / "sessions" / f"{session_id}.json").read_text())
    return [
        "".join(block.get("text", "") for block in update["content"])
        for update in stored["history"]
        if update.get("sessionUpdate") == "user_message"
    ]


def _slow_turn(spawn, trace: AgentTrace) -> tuple[Pty, Watch]:  # type: ignore[no-untyped-def]
    """A REPL with the demo agent, its first turn streaming for a few seconds."""
    pty = spawn(*new_args(trace))
    watch = Watch(pty)
    pty.prompt()
    pty.say("slow no-permission")
    watch.until("still streaming")
    return pty, watch


def test_text_typed_during_a_turn_is_visible_and_queued_prompts_go_in_order(
    spawn, trace: AgentTrace, acpcli_home: Path
) -> None:
    pty, watch = _slow_turn(spawn, trace)
    pty.child.send("second no-permission")
    watch.until("» second no-permission")  # visible while typed, under the turn's status line
    pty.child.send("\r")
    watch.until("queued 1: second no-permission")
    pty.child.send("third one")
    watch.until("» third one")
    pty.child.send("\x17\x17")  # Ctrl-W twice: the line is empty again
    watch.until("» ▌type ahead")
    pty.child.send(UP)  # takes the last queued prompt back onto the line
    watch.until("» second no-permission▌")
    assert "queued 1:" not in watch.bottom()
    pty.child.send(" edited\r")
    pty.child.send("third no-permission\r")
    watch.until("queued 2: third no-permission")
    watch.until("Turn 3: third no-permission", visible=False)  # both were sent, one turn each
    watch.prompt(pty.seen.rindex("Turn 3"))
    screen = watch.text()
    first = screen.index("› slow no-permission")
    second = screen.index("› second no-permission edited")
    assert first < second < screen.index("› third no-permission"), screen
    # The input line and the queue were never printed into the scrollback.
    for drawn in ("queued 1:", "queued 2:", "type ahead", "» "):
        assert drawn not in screen, (drawn, screen)
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    assert _stored_prompts(acpcli_home, session_id) == [
        "slow no-permission",
        "second no-permission edited",
        "third no-permission",
    ]


def test_a_cancelled_turn_holds_the_queue_until_enter_on_an_empty_line(
    spawn, trace: AgentTrace, acpcli_home: Path
) -> None:
    pty, watch = _slow_turn(spawn, trace)
    pty.child.send("kept no-permission\r")
    pty.child.send("/mode\r")  # a slash command is queued too, and runs in its place
    watch.until("queued 2: /mode")
    pty.child.send("/cancel\r")  # typed during the turn: cancels it, as Ctrl-C does
    watch.until("held (the turn was cancelled)")
    shown = watch.bottom()
    assert "queued 1: kept no-permission" in shown and "queued 2: /mode" in shown, shown
    assert "Turn 2" not in watch.text()  # nothing was sent by itself
    pty.child.send("\r")  # Enter on the empty line: the queue goes on
    watch.until("Turn 2: kept no-permission", visible=False)
    watch.until("* ask (Ask)", visible=False)  # then /mode ran: its picker
    watch.until("↑↓ or a number")  # (taking keys)
    pty.child.send("\x1b")  # Escape: the mode is kept
    watch.until("Session Mode: Ask (unchanged)", visible=False)
    watch.prompt(pty.seen.rindex("(unchanged)"))
    screen = watch.text()
    assert screen.index("› kept no-permission") < screen.index("› /mode") < screen.index("Mode: Ask (unchanged)"), screen
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    assert _stored_prompts(acpcli_home, session_id) == ["slow no-permission", "kept no-permission"]


def test_queue_clear_drops_what_a_cancel_held(spawn, trace: AgentTrace, acpcli_home: Path) -> None:
    pty, watch = _slow_turn(spawn, trace)
    pty.child.send("never sent\r")
    watch.until("queued 1: never sent")
    pty.child.send(CTRL_C)
    watch.until("held (the turn was cancelled)")
    pty.child.send("/queue\r")
    watch.until("1. never sent", visible=False)
    pty.child.send("/queue clear\r")
    watch.until("dropped 1 queued prompt", visible=False)
    watch.prompt(pty.seen.rindex("dropped 1"))
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    assert _stored_prompts(acpcli_home, session_id) == ["slow no-permission"]


def _queueing_agent(spawn, tmp_path: Path, *flags: str, options: tuple[str, ...] = ()) -> tuple[Pty, Watch, Path, Path]:  # type: ignore[no-untyped-def]
    gates, record = tmp_path / "gates", tmp_path / "record.jsonl"
    gates.mkdir()
    cmd = shlex.join(["env", f"GATE_DIR={gates}", f"RECORD_FILE={record}", sys.executable, str(QUEUEING_AGENT), *flags])
    pty = spawn("new", "--cmd", cmd, *options)
    watch = Watch(pty)
    pty.prompt()
    return pty, watch, gates, record


def _prompts(record: Path) -> list[str]:
    rows = [json.loads(line) for line in record.read_text().splitlines() if line]
    return [
        row["method"] + ":" + " ".join(b.get("text", "") for b in row["params"]["prompt"])
        for row in rows
        if row["method"] in ("session/prompt", "_session/steering")
    ]


def test_send_now_is_refused_in_one_line_by_an_agent_that_does_not_advertise_it(
    spawn, tmp_path: Path, repl_mode: list[str]
) -> None:
    pty, watch, gates, record = _queueing_agent(spawn, tmp_path, options=tuple(repl_mode))
    pty.say("first")
    watch.until("START[first]")
    pty.child.send("second" + ALT_ENTER)
    shown = watch.until("does not take a prompt during a turn")
    assert "queued 1: second" in shown, shown
    (gates / "second").touch()
    (gates / "first").touch()
    watch.until("DONE[second]", visible=False)  # sent when the first turn ended, as queued
    watch.prompt(pty.seen.rindex("DONE[second]"))
    assert "CONCURRENT-PROMPT" not in watch.text()
    assert _prompts(record) == ["session/prompt:first", "session/prompt:second"]
    assert pty.leave()[0] == ExitCode.OK


def test_send_now_joins_the_turn_of_an_agent_with_prompt_queueing(spawn, tmp_path: Path, repl_mode: list[str]) -> None:
    pty, watch, gates, record = _queueing_agent(spawn, tmp_path, "--queueing", options=tuple(repl_mode))
    pty.say("first")
    watch.until("START[first]")
    pty.child.send("second" + ALT_ENTER)
    watch.until("JOINED[second]", visible=False)  # sent during the turn, taken up by it
    shown = watch.bottom()
    assert "queued 1:" not in shown, shown
    (gates / "second").touch()
    watch.until("DONE[second]", visible=False)  # the REPL waited for the joined prompt's turn
    watch.prompt(pty.seen.rindex("DONE[second]"))
    screen = watch.text()
    assert screen.index("START[first]") < screen.index("› second") < screen.index("DONE[second]"), screen
    assert "DONE[first]" not in screen
    assert _prompts(record) == ["session/prompt:first", "session/prompt:second"]
    assert pty.leave()[0] == ExitCode.OK


def test_slash_now_steers_an_agent_with_the_steering_extension(spawn, tmp_path: Path, repl_mode: list[str]) -> None:
    pty, watch, gates, record = _queueing_agent(spawn, tmp_path, "--steering", options=tuple(repl_mode))
    pty.say("first")
    watch.until("START[first]")
    pty.child.send("/now go left\r")
    watch.until("STEERED[go left]", visible=False)
    (gates / "first").touch()
    watch.until("DONE[first]", visible=False)
    watch.prompt(pty.seen.rindex("DONE[first]"))
    assert _prompts(record) == ["session/prompt:first", "_session/steering:go left"]
    rows = [json.loads(line) for line in record.read_text().splitlines() if line]
    assert all(row["method"] != "_session/steering" or row["request"] for row in rows)
    assert pty.leave()[0] == ExitCode.OK


def test_leaving_with_a_held_queue_says_what_was_not_sent(spawn, trace: AgentTrace, acpcli_home: Path) -> None:
    pty, watch = _slow_turn(spawn, trace)
    pty.child.send("left behind\r")
    watch.until("queued 1: left behind")
    pty.child.send(CTRL_C)
    watch.until("held (the turn was cancelled)")
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    assert "1 queued prompt not sent" in watch.text()
    assert _stored_prompts(acpcli_home, session_id) == ["slow no-permission"]


def test_ctrl_c_cancels_the_turn_a_prompt_joined(spawn, tmp_path: Path, repl_mode: list[str]) -> None:
    pty, watch, _gates, record = _queueing_agent(spawn, tmp_path, "--queueing", options=tuple(repl_mode))
    pty.say("first")
    watch.until("START[first]")
    pty.child.send("second" + ALT_ENTER)
    watch.until("JOINED[second]", visible=False)
    pty.child.send(CTRL_C)
    watch.until("Turn ended: cancelled", visible=False)
    watch.prompt(pty.seen.rindex("cancelled"))
    assert _prompts(record) == ["session/prompt:first", "session/prompt:second"]
    assert pty.leave()[0] == ExitCode.OK


def test_a_repl_over_a_live_host_queues_typed_prompts_and_sends_them_in_order(spawn, tmp_path: Path) -> None:
    """With keep-alive on, the REPL's turns go to the session's host: what is typed during a
    turn is queued here and sent after it, in order."""
    import subprocess

    pty, watch, gates, record = _queueing_agent(spawn, tmp_path, "--queueing", options=("--keep-alive", "60"))
    try:
        pty.say("first")
        watch.until("START[first]")
        pty.child.send("second\r")
        pty.child.send("third\r")
        shown = watch.until("queued 2: third")
        assert "queued 1: second" in shown, shown
        for word in ("third", "second", "first"):
            (gates / word).touch()
        watch.until("DONE[third]", visible=False)
        watch.prompt(pty.seen.rindex("DONE[third]"))
        assert _prompts(record) == ["session/prompt:first", "session/prompt:second", "session/prompt:third"]
        pty.child.send("\x04")
        pty.expect("the session stays live")
        assert pty.wait() == ExitCode.OK
    finally:
        subprocess.run([sys.executable, "-m", "acpcli", "stop", "--all"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)


def test_a_prompt_sent_now_is_shown_where_the_agent_takes_it_up(spawn, tmp_path: Path, repl_mode: list[str]) -> None:
    """claude-agent-acp's order (issue 32.7): the running answer ends its sentence, then the
    joined prompt's whole answer streams, and only then is the running turn's request answered.
    The prompt sent now is drawn (and stored) between the two answers -- not inside the first
    sentence, the two answers not glued together -- and the turn that waited for its answer
    does not say it had none."""
    import subprocess

    pty, watch, gates, _record = _queueing_agent(spawn, tmp_path, "--queueing", "--claude-order", options=tuple(repl_mode))
    pty.say("first")
    watch.until("START[first]")
    pty.child.send("second" + ALT_ENTER)
    watch.until("JOINED[second]", visible=False)
    (gates / "second").touch()
    watch.until("DONE[second]", visible=False)
    watch.prompt(pty.seen.rindex("DONE[second]"))
    screen = watch.text()
    order = ["START[first]", "END[first]", "› second", "JOINED[second]", "DONE[second]"]
    assert [screen.index(text) for text in order] == sorted(screen.index(text) for text in order), screen
    assert not [line for line in screen.splitlines() if "END[first]" in line and "JOINED" in line], screen
    assert "without an answer" not in screen, screen
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    shown = subprocess.run(
        [sys.executable, "-m", "acpcli", "show", session_id], stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert [shown.index(text) for text in order[:2]] == sorted(shown.index(text) for text in order[:2]), shown
    assert shown.index("END[first]") < shown.index("second\n") < shown.index("JOINED[second]"), shown
    assert not [line for line in shown.splitlines() if "END[first]" in line and "JOINED" in line], shown


def test_a_bare_now_sends_the_next_queued_prompt_and_is_not_left_on_the_line(
    spawn, tmp_path: Path, repl_mode: list[str]
) -> None:
    """``/now`` alone during a turn: the first queued prompt, as Alt-Enter on an empty line;
    the line is empty afterwards."""
    pty, watch, gates, record = _queueing_agent(spawn, tmp_path, "--queueing", options=tuple(repl_mode))
    pty.say("first")
    watch.until("START[first]")
    pty.child.send("second\r")
    pty.child.send("third\r")
    watch.until("queued 2: third")
    pty.child.send("/now\r")
    watch.until("JOINED[second]", visible=False)
    shown = watch.until("queued 1: third")
    shown = watch.until("» ▌type ahead")  # the line is empty again
    assert "» /now" not in shown and "queued 2:" not in shown, shown
    for word in ("second", "third", "first"):
        (gates / word).touch()
    watch.until("DONE[third]", visible=False)
    watch.prompt(pty.seen.rindex("DONE[third]"))
    sent = ["session/prompt:first", "session/prompt:second", "session/prompt:third"]
    assert _prompts(record) == sent
    assert pty.leave()[0] == ExitCode.OK
