"""A person's keys answer only what they saw (issue 32, points 2 and 5), in a pseudo-terminal on
the emulated screen, hosted and unhosted (the ``repl_mode`` fixture), with the demo agent
(``slow``: a permission question, then a long answer streamed slowly):

* keys typed before a permission picker is drawn (and for a moment after) stay on the
  input line of the turn -- queued as a prompt when Enter was among them -- and never
  answer the picker; a filter alone never picks an "always" option;
* Ctrl-C cancels the turn after a permission question was answered during it;
* a cancelled turn holds the queued prompts, hosted as unhosted, until Enter on an empty
  line -- a turn cancelled by dismissing its question too.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from acpcli.errors import ExitCode

from .conftest import AgentTrace
from .pty import CHOICE, CTRL_C, Pty, new_args
from .test_repl_queue import Watch

UP = "\x1b[A"
DOWN = "\x1b[B"
ESC = "\x1b"
HELD = "held (the turn was cancelled)"
#: The idle input line drawn (bracketed paste on, maybe queued prompts, then its mark).
IDLE = r"\x1b\[\?2004h(?:\x1b\[[0-9;?]*[A-Za-z]|[^\x1b])*?›"


def _start(spawn, trace: AgentTrace, mode: list[str], *agent: str, width: int = 100) -> tuple[Pty, Watch]:  # type: ignore[no-untyped-def]
    pty = spawn(*new_args(trace, *agent), *mode, width=width, true_cpr=True)
    watch = Watch(pty)
    pty.prompt()
    return pty, watch


def _stored(home: Path, session_id: str) -> dict[str, Any]:
    return json.loads((home / "demo-agent" / "sessions" / f"{session_id}.json").read_text())  # type: ignore[no-any-return]


def _prompts(home: Path, session_id: str) -> list[str]:
    return [
        "".join(block.get("text", "") for block in update["content"])
        for update in _stored(home, session_id)["history"]
        if update.get("sessionUpdate") == "user_message"
    ]


def _answers(watch: Watch) -> list[str]:
    return [line.strip() for line in watch.text().splitlines() if line.strip().startswith(("chose:", "dismissed:"))]


def _idle(pty: Pty, watch: Watch, since: int) -> str:
    """Read until the idle input line is drawn after ``since`` (an index of ``pty.seen``),
    queued prompts above it or not; the visible screen."""
    drawn = re.compile(IDLE)
    deadline = time.monotonic() + 30  # a guard against hangs only
    while not drawn.search(pty.seen, since):
        assert time.monotonic() < deadline, f"no idle input line:\n{watch.bottom()}"
        pty.expect(r"[\s\S]+")
    return watch.bottom()


def _cancel(pty: Pty, watch: Watch) -> str:
    """Ctrl-C while the answer streams: the turn ends cancelled; the visible screen once the
    idle line is back."""
    watch.until("still streaming")
    mark = len(pty.seen)
    pty.child.send(CTRL_C)
    watch.until("Turn ended: cancelled", visible=False)
    return _idle(pty, watch, mark)


def test_enter_typed_before_the_picker_queues_a_prompt_and_answers_nothing(
    spawn, trace: AgentTrace, repl_mode: list[str], acpcli_home: Path
) -> None:
    pty, watch = _start(spawn, trace, repl_mode)
    pty.child.send("slow\r" + "always\r")  # typed ahead: meant as the next prompt
    pty.expect(CHOICE)  # the picker is up and takes keys
    assert _answers(watch) == [], watch.text()
    pty.child.send("\r")  # the picker's own key: its highlighted option
    watch.until("chose:", visible=False)
    assert _answers(watch) == ["chose: Allow once  (allow_once)"], watch.text()
    watch.until("queued 1: always")  # on the turn's input line, queued as it was typed
    shown = _cancel(pty, watch)
    assert "queued 1: always" in shown and HELD in shown, shown
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    assert _prompts(acpcli_home, session_id) == ["slow"]  # held, then left unsent
    assert _stored(acpcli_home, session_id)["permission"] is None  # nothing "always" was chosen


def test_keys_as_the_picker_is_drawn_are_not_its_own(
    spawn, trace: AgentTrace, repl_mode: list[str], acpcli_home: Path
) -> None:
    pty, watch = _start(spawn, trace, repl_mode)
    pty.say("slow")
    pty.expect("choose 1-4:")  # drawn: keys sent now come before anyone could read it
    pty.child.send("always\r")
    pty.expect("↑↓ or a number")  # (then its hint line: it takes keys)
    assert _answers(watch) == [], watch.text()  # (nor, had they been read late, by its filter)
    mark = len(pty.seen)
    pty.child.send(ESC)  # dismissed: the turn is cancelled, and what was queued is held
    watch.until("dismissed:", visible=False)
    watch.until("Turn ended: cancelled", visible=False)
    _idle(pty, watch, mark)
    assert "chose:" not in watch.text()
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    assert _prompts(acpcli_home, session_id) == ["slow"]
    assert _stored(acpcli_home, session_id)["permission"] is None


def test_a_filter_alone_never_picks_an_always_option(
    spawn, trace: AgentTrace, repl_mode: list[str], acpcli_home: Path
) -> None:
    pty, watch = _start(spawn, trace, repl_mode, width=60)
    pty.say("slow")
    pty.expect(CHOICE)
    pty.child.send("always\r")  # the filter leaves "Always allow" highlighted: Enter says why not
    shown = watch.until("does not pick")
    assert "filter" not in shown.split("does not pick")[1], shown
    # the whole line on a narrow screen: the keys it tells of are not cut off
    assert "↑↓ onto it, then Enter" in shown, shown
    assert _answers(watch) == [], shown
    pty.child.send(DOWN + UP + "\r")  # moved onto it with the keys: now Enter picks it
    watch.until("chose:", visible=False)
    assert _answers(watch) == ["chose: Always allow  (allow_always)"], watch.text()
    _cancel(pty, watch)
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    assert _stored(acpcli_home, session_id)["permission"] == "allow_always"


def test_ctrl_c_cancels_a_turn_whose_question_was_answered(
    spawn, trace: AgentTrace, repl_mode: list[str], acpcli_home: Path
) -> None:
    pty, watch = _start(spawn, trace, repl_mode, width=60)
    pty.say("slow")
    pty.expect(CHOICE)
    pty.child.send("3\r")  # Reject: the edit fails and the answer streams on
    watch.until("chose:", visible=False)
    assert _answers(watch) == ["chose: Reject  (reject_once)"], watch.text()
    pty.child.send("next one\r")  # queued during the turn
    watch.until("queued 1: next one")
    shown = _cancel(pty, watch)
    assert HELD in shown, shown
    history = _stored(acpcli_home, session_id := pty.leave()[1])["history"]
    assert {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"} in history
    assert _prompts(acpcli_home, session_id) == ["slow"]


def test_a_turn_cancelled_by_dismissing_its_question_holds_the_queue(
    spawn, trace: AgentTrace, repl_mode: list[str], acpcli_home: Path
) -> None:
    pty, watch = _start(spawn, trace, repl_mode)
    pty.child.send("slow\r" + "later no-permission\r")
    pty.expect(CHOICE)
    mark = len(pty.seen)
    pty.child.send(ESC)
    watch.until("dismissed:", visible=False)
    shown = _idle(pty, watch, mark)
    assert "queued 1: later no-permission" in shown and HELD in shown, shown
    mark = len(pty.seen)
    pty.child.send("\r")  # Enter on the empty line: the queue goes on
    watch.until("Turn 2: later no-permission", visible=False)
    watch.prompt(pty.seen.rindex("Turn 2: later"))
    status, session_id = pty.leave()
    assert status == ExitCode.OK
    assert _prompts(acpcli_home, session_id) == ["slow", "later no-permission"]
