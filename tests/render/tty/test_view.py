"""The terminal view: finished output printed once, the live region (its tail, its throttle,
flush, hold and notes) and a running turn's status line."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from acpcli.model import Message, Store
from acpcli.render.tty import TtyView
from tests.render.tty.driver import (
    PARAGRAPHS,
    Run,
    chunk,
    console,
    screen,
    stream_answer,
    text,
    ticking,
)


def test_streamed_markdown_is_rendered_and_printed_once() -> None:
    run = stream_answer(Run())
    run.view.close()
    raw, final = run.raw(), run.screen()
    assert "**" not in final and "```" not in final  # rendered as Markdown, not shown as source
    for para in PARAGRAPHS:
        assert final.count(para) == 1, para
        assert raw.count(para) == 1, para  # finished blocks went to the scrollback once
    positions = [final.index(p) for p in PARAGRAPHS]
    assert positions == sorted(positions)
    assert raw.endswith("\x1b[?25h")  # the live region was stopped: cursor shown again


def test_live_tail_is_drawn_while_streaming_and_replaced_cleanly() -> None:
    run = Run(clock=ticking())
    stream_answer(run, size=5)
    # while streaming, the unfinished paragraph was on screen before it was committed
    assert "That is all I" in run.screen()
    run.view.close()
    raw, final = run.raw(), run.screen()
    assert raw.count("The capital is Paris") >= 1
    for para in PARAGRAPHS:
        assert final.count(para) == 1, para
    assert final.endswith("That is all I know about it.")


def test_only_the_unfinished_tail_is_live() -> None:
    run = Run(clock=ticking())
    run.feed(chunk("agent_message", "First paragraph.\n\nSecond "))
    before = len(run.raw())
    run.feed(chunk("agent_message", "paragraph grows"))
    frame = run.raw()[before:]
    assert "Second paragraph grows" in frame and "First paragraph." not in frame


def test_a_live_block_taller_than_the_terminal_shows_its_newest_lines() -> None:
    con = Console(file=io.StringIO(), force_terminal=True, width=60, height=12, color_system=None)
    run = Run(con, clock=ticking())
    run.view.begin_turn()
    run.feed(chunk("agent_message", "```python\n" + "".join(f"line_{i} = {i}\n" for i in range(40))))
    frame = run.raw()[run.raw().rindex("⋮"):]  # the last frame, from its first line
    assert "line_39 = 39" in frame and "line_5 = 5" not in frame  # what is arriving shows
    assert "working" in frame  # and the status line under it
    # 42 lines (40 of code, a blank, the status: the block's padding above and below, blank
    # with no background of its own, is trimmed at the live part's edges) on a terminal of 12
    # rows: 11 are drawn, the first of them the note
    assert frame.startswith("⋮ 32 lines above")
    assert frame.count("\n") == 10
    run.feed(chunk("agent_message", "```\n\nAfter."))
    run.view.turn_ended("end_turn")
    final = run.screen()
    assert all(final.count(f"line_{i} = {i}\n") == 1 for i in range(40))  # all of it, once
    assert "lines above" not in final


def test_text_is_taken_from_appended_not_reread_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = {"content": 0, "text": 0}
    props = {"content": Message.content, "text": Message.text}

    def counting(name: str) -> property:
        def get(self: Message) -> Any:
            reads[name] += 1
            return props[name].fget(self)  # type: ignore[union-attr]

        return property(get)

    monkeypatch.setattr(Message, "content", counting("content"))
    monkeypatch.setattr(Message, "text", counting("text"))
    run = Run(clock=ticking())
    run.feed(*(chunk("agent_message", f"word{i} " + ("\n\n" if i % 10 == 9 else "")) for i in range(300)))
    run.view.close()
    assert reads == {"content": 1, "text": 0}  # the NewEntry's content, once


def test_changes_held_back_below_a_streaming_message_are_live() -> None:
    run = Run(clock=ticking())
    run.feed({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Build", "kind": "execute", "status": "in_progress"},
             chunk("agent_message", "While it builds, "),
             {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"},
             chunk("agent_message", "a word."))
    assert run.screen() == "◐ Build  execute  in progress\n\nWhile it builds, a word.\n\n✓ Build  execute  completed"
    run.feed({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Next", "status": "pending"})
    run.view.close()
    final = run.screen()
    assert final == ("◐ Build  execute  in progress\n\nWhile it builds, a word.\n\n✓ Build  execute  completed\n\n"
                     "○ Next  other  pending")


def test_whole_message_after_chunks() -> None:
    run = Run()
    run.feed(chunk("agent_message", "Hello ", "m"), chunk("agent_message", "world.", "m"),
             {"sessionUpdate": "agent_message", "messageId": "m", "content": [text("Hello world.")]})
    run.view.flush()
    assert run.screen() == "Hello world."
    run.feed({"sessionUpdate": "agent_message", "messageId": "m", "content": [text("Goodbye.")]})
    run.view.close()
    assert run.screen() == "Hello world.\n\n✎ message replaced\n\nGoodbye."


def test_turn_ended_says_the_stop_reason() -> None:
    run = Run(console(color=True))
    run.feed(chunk("agent_message", "Partial"))
    run.view.turn_ended("end_turn")
    assert run.screen() == "Partial"
    run.view.turn_ended("refusal")
    assert run.screen() == "Partial\n\n■ Turn ended: the agent refused to continue"
    assert "\x1b[1;31m■ Turn ended" in run.raw()


def test_quiet_shows_agent_text_only() -> None:
    run = Run(quiet=True)
    run.feed(chunk("user_message", "question"), chunk("agent_thought", "hmm"),
             {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Tool", "status": "completed"},
             chunk("agent_message", "The answer."))
    run.view.close()
    assert run.screen() == "The answer."


def test_print_store_shows_a_finished_transcript() -> None:
    store = Store()
    for update in (chunk("user_message", "Q?"), chunk("agent_message", "Para one.\n\nPara two."),
                   {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Run", "status": "pending"}):
        store.apply(update)
    con = console()
    TtyView(con).print_store(store)
    assert screen(con.file.getvalue()) == "› Q?\n\nPara one.\n\nPara two.\n\n○ Run  other  pending"  # type: ignore[attr-defined]
    assert "\x1b[?25l" not in con.file.getvalue()  # type: ignore[attr-defined]  # no live region


def test_throttled_refresh_is_drawn_by_tick() -> None:
    now = [0.0]
    run = Run(clock=lambda: now[0], fps=10)
    run.feed(chunk("agent_message", "Alpha"))  # first change: drawn at once
    assert "Alpha" in run.screen()
    now[0] = 0.01
    run.feed(chunk("agent_message", " beta"))  # too soon: held back
    assert "beta" not in run.screen()
    run.view.tick()  # a timer fired, but still too soon
    assert "beta" not in run.screen()
    now[0] = 0.2
    run.view.tick()  # its time has come
    assert run.screen() == "Alpha beta"
    now[0] = 0.5
    size = len(run.raw())
    run.view.tick()  # nothing held back: nothing drawn
    assert len(run.raw()) == size


def test_flush_commits_the_live_block_and_releases_the_terminal() -> None:
    run = Run()
    run.feed(chunk("agent_message", "Before the prompt"))
    run.view.flush()
    raw = run.raw()
    assert raw.endswith("\x1b[?25h") and run.screen() == "Before the prompt"
    run.feed(chunk("agent_message", " and after."))  # the same message goes on below
    run.view.close()
    assert run.screen() == "Before the prompt\n\nand after."


def test_chunks_for_an_earlier_message_reopen_it() -> None:
    run = Run()
    run.feed(chunk("agent_message", "First part.", "a"), chunk("agent_thought", "hmm", "t"),
             chunk("agent_message", "\n\nSecond part.", "a"))
    run.view.close()
    assert run.screen() == "First part.\n\n✻ Thought · 1 word: hmm\n\nSecond part."


def test_a_running_turn_shows_a_status_line_that_never_reaches_the_scrollback() -> None:
    now = [0.0]
    run = Run(clock=lambda: now[0], fps=10)
    run.view.begin_turn(run.session.store)
    assert run.screen() == "⠋ working · 0s · Ctrl-C cancels"  # before anything arrived
    now[0] = 65.3
    run.session.store.apply({"sessionUpdate": "usage_update", "used": 1500, "size": 10000})
    run.view.tick()  # the spinner turns and the clock runs, with no update
    assert run.screen() == "⠸ working · 1m 05s · 1.5k/10k tokens (15%) · Ctrl-C cancels"
    now[0] = 66.0
    run.feed(chunk("agent_message", "Done."))
    assert run.screen().splitlines()[0] == "Done." and "working" in run.screen()
    run.view.turn_ended("end_turn")
    assert run.screen() == "Done."  # the last frame left the status out
    size = len(run.raw())
    now[0] = 70.0
    run.view.tick()  # no turn: nothing drawn
    assert len(run.raw()) == size


def test_another_terminals_turn_says_whose_it_is_and_where_its_question_waits() -> None:
    now = [0.0]
    run = Run(clock=lambda: now[0], fps=10)
    run.view.watching = True  # an attached REPL draws another terminal's turn
    run.view.begin_turn(run.session.store)
    assert run.screen() == "⠋ working · 0s · another terminal's turn"
    run.feed({"sessionUpdate": "state_update", "state": "requires_action"})
    now[0] = 2.0
    run.view.tick()
    assert run.screen() == "⠋ waiting for its terminal · 2s · another terminal's turn"  # not "for you"
    run.view.turn_ended("end_turn")
    run.view.watching = False
    run.view.begin_turn(run.session.store)
    assert "waiting for you" in run.screen() and "Ctrl-C cancels" in run.screen()


def test_a_question_mid_turn_pauses_the_status_until_the_next_change() -> None:
    now = [0.0]
    run = Run(clock=lambda: now[0], fps=10)
    run.view.begin_turn()
    run.feed(chunk("agent_message", "Asking."))
    run.view.flush()  # a permission question is about to be drawn below
    assert run.screen() == "Asking."
    size = len(run.raw())
    now[0] = 5.0
    run.view.tick()  # the question is on screen: the status must not redraw over it
    assert len(run.raw()) == size
    run.feed({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit", "status": "in_progress"})
    assert "working" in run.screen()  # the answer came, the turn goes on
    run.view.turn_ended("end_turn")
    assert "working" not in run.screen()


def test_no_status_line_when_quiet_or_final_only() -> None:
    for kwargs in ({"quiet": True}, {"final_only": True}):
        run = Run(**kwargs)
        run.view.begin_turn()
        run.view.tick()
        assert run.raw() == ""
        run.view.turn_ended("end_turn")


def test_closing_mid_turn_leaves_no_status_line() -> None:
    run = Run()
    run.view.begin_turn(run.session.store)
    run.feed(chunk("agent_message", "Cut short"))
    run.view.close()  # the turn raised: no turn_ended, the command closes its view
    assert run.screen() == "Cut short"
    raw = run.raw()
    assert "working" not in raw[raw.rindex("Cut short"):]  # not even drawn once more, then erased


def test_a_note_lands_above_the_live_area_and_stays_there() -> None:
    run = Run(clock=ticking(), notes=True)
    run.view.begin_turn(run.session.store)
    run.feed(chunk("agent_thought", "weighing the options"))
    assert run.view.note("cancelling… (press Ctrl-C again to kill the agent)", "yellow")
    run.feed(chunk("agent_message", "The answer."))
    run.view.turn_ended("cancelled")
    final = run.screen()
    assert final.count("cancelling…") == 1, final
    assert "Thinking" not in final and final.count("Thought · 3 words") == 1, final
    assert final.index("cancelling…") < final.index("Thought") < final.index("The answer."), final
    assert not Run().view.note("x")  # built without notes: the caller writes the line itself


def test_a_held_frame_is_taken_off_and_the_call_drawn_once_when_it_finishes() -> None:
    run = Run(clock=ticking(), notes=True)
    run.view.begin_turn(run.session.store)
    run.feed({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "TOOL", "kind": "edit", "status": "pending"})
    assert run.view.hold(5)
    run.console.print("the question")  # what the asker draws below the held frame
    run.view.release(1)
    run.feed({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"})
    run.view.turn_ended("end_turn")
    final = run.screen()
    assert [line for line in final.splitlines() if "TOOL" in line] == ["✓ TOOL  edit  completed"], final
    assert "the question" not in final, final
