"""The terminal view, on a rich Console writing to a StringIO with a forced terminal.

Live regions redraw in place, so besides the raw output the tests replay it through a
tiny terminal model (:func:`screen`: cursor up, erase line, carriage return) to see what
a person would have in the scrollback at the end.
"""

from __future__ import annotations

import io
import itertools
import re
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from acpcli.history.store import Message, Store
from acpcli.render.tty import TtyView
from acpcli.render.tty.split import BlockSplitter

CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def screen(raw: str) -> str:
    """Replay terminal output; return the final screen + scrollback, right-stripped."""
    lines: list[list[str]] = [[]]
    row = col = 0
    pos = 0
    while pos < len(raw):
        m = CSI.match(raw, pos)
        if m:
            pos = m.end()
            args, cmd = m.group(1), m.group(2)
            if cmd == "A":
                row = max(0, row - int(args or 1))
            elif cmd == "K" and args == "2":
                lines[row] = []
            elif cmd in ("m", "h", "l", None):
                pass
            else:
                raise AssertionError(f"unexpected control sequence {m.group(0)!r}")
            continue
        ch = raw[pos]
        pos += 1
        if ch == "\n":
            row += 1
            col = 0
            while len(lines) <= row:
                lines.append([])
        elif ch == "\r":
            col = 0
        else:
            line = lines[row]
            while len(line) < col:
                line.append(" ")
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
    return "\n".join("".join(line).rstrip() for line in lines).rstrip("\n")


@pytest.fixture(autouse=True)
def _pinned_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """rich draws no live frames on TERM=dumb; colours must not depend on the caller's env."""
    monkeypatch.setenv("TERM", "xterm-256color")
    for var in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES"):
        monkeypatch.delenv(var, raising=False)


def console(color: bool = False, width: int = 60, height: int = 30) -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=width, height=height,
                   color_system="truecolor" if color else None, highlight=False)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def chunk(kind: str, t: str, mid: str | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": f"{kind}_chunk", "content": text(t)}
    if mid is not None:
        update["messageId"] = mid
    return update


def frozen() -> float:
    return 0.0  # the throttle lets the first refresh through, then holds every later one


def ticking() -> Any:
    counter = itertools.count()
    return lambda: float(next(counter))  # every change is a second later: always refresh


class Run:
    """A view fed by a real store."""

    def __init__(self, con: Console | None = None, **kwargs: Any) -> None:
        self.console = con or console()
        kwargs.setdefault("clock", frozen)
        self.view = TtyView(self.console, **kwargs)
        self.session = SimpleNamespace(store=Store(), session_id="s")

    def feed(self, *updates: dict[str, Any]) -> Run:
        for update in updates:
            change = self.session.store.apply(update)
            if change is not None:
                self.view.on_change(self.session, change)
        return self

    def raw(self) -> str:
        return self.console.file.getvalue()  # type: ignore[attr-defined]

    def screen(self) -> str:
        return screen(self.raw())


ANSWER = (
    "The capital is **Paris**, a city on the Seine.\n\n"
    "Three facts:\n\n- it hosts the Louvre museum\n- it has twenty arrondissements\n\n"
    "```python\ndef capital():\n\n    return 'Paris'\n```\n\n"
    "That is all I know about it."
)
PARAGRAPHS = ["The capital is Paris, a city on the Seine.", "Three facts:", "• it hosts the Louvre museum",
              "• it has twenty arrondissements", "def capital():", "return 'Paris'", "That is all I know about it."]


def stream_answer(run: Run, size: int = 7) -> Run:
    return run.feed(*(chunk("agent_message", ANSWER[i:i + size]) for i in range(0, len(ANSWER), size)))


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


def test_user_thought_plan_and_tool_calls() -> None:
    run = Run(console(color=True))
    run.feed(
        chunk("user_message", "Turn on debug"),
        chunk("agent_thought", "I should read the config.\nThen "),
        chunk("agent_thought", "edit it carefully."),
        {"sessionUpdate": "plan", "entries": [{"content": "Read config", "priority": "high", "status": "in_progress"},
                                              {"content": "Edit config", "priority": "high", "status": "pending"}]},
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read config.json", "kind": "read",
         "status": "in_progress", "locations": [{"path": "/p/config.json", "line": 3}]},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
         "content": [{"type": "content", "content": text("debug = false")}]},
        {"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Edit config.json", "kind": "edit", "status": "failed",
         "content": [{"type": "diff", "path": "/p/config.json", "oldText": "debug = false\n", "newText": "debug = true\n"},
                     {"type": "terminal", "terminalId": "term_9"}]},
    )
    run.view.close()
    raw, final = run.raw(), run.screen()
    assert "› Turn on debug" in final
    assert "\x1b[1;36m› \x1b[0m\x1b[1mTurn on debug" in raw  # the prompt in bold
    assert "✻ Thought · 9 words: I should read the config." in final  # collapsed to one line
    assert "edit it carefully" not in final
    assert "Plan\n  ▸ Read config\n  ○ Edit config" in final
    assert "✓ Read config.json  read  completed\n  → /p/config.json:3\n  debug = false" in final
    assert "✗ Edit config.json  edit  failed" in final
    assert "\x1b[31m✗\x1b[0m" in raw  # failed is red
    assert "\x1b[32m✓\x1b[0m" in raw  # completed is green
    assert "  -debug = false\n  +debug = true" in final
    assert '\x1b[31m-debug = false\x1b[0m' in raw and '\x1b[32m+debug = true\x1b[0m' in raw
    assert "terminal term_9" in final
    # the first change drew the live region once; with the clock frozen nothing is redrawn
    # after it, so everything else was printed exactly once
    assert raw.count("Turn on debug") == 2
    for piece in ("Plan", "Read config.json", "Edit config.json", "-debug = false"):
        assert raw.count(piece) == 1, piece


def test_show_thoughts_prints_them_in_full() -> None:
    run = Run(show_thoughts=True)
    run.feed(chunk("agent_thought", "First thought paragraph.\n\nSecond one, "), chunk("agent_thought", "longer."),
             chunk("agent_message", "Answer."))
    run.view.close()
    final = run.screen()
    assert "✻ Thinking\n  First thought paragraph.\n\n  Second one, longer.\n\nAnswer." in final


def test_plan_updated_after_it_left_the_live_region_is_printed_again() -> None:
    step = {"content": "Only step", "priority": "low", "status": "pending"}
    run = Run()
    run.feed({"sessionUpdate": "plan", "entries": [step]}, chunk("agent_message", "Working."),
             {"sessionUpdate": "plan", "entries": [step]},  # unchanged: nothing
             {"sessionUpdate": "plan", "entries": [dict(step, status="completed")]})
    run.view.close()
    final = run.screen()
    # the update waits for the streaming message to finish, so it does not cut it in two
    assert final == "Plan\n  ○ Only step\n\nWorking.\n\nPlan (updated)\n  ✔ Only step"


def test_tool_call_finished_after_it_left_the_live_region() -> None:
    item = {"type": "content", "content": text("3 matches")}
    run = Run()
    run.feed({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Search", "kind": "search", "status": "in_progress",
              "content": [item]},
             chunk("agent_message", "Meanwhile."),
             {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed", "content": [dict(item)]},
             {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": {"type": "content", "content": text("one more")}})
    run.view.close()
    final = run.screen()
    assert final == "◐ Search  search  in progress\n  3 matches\n\nMeanwhile.\n\n✓ Search  search  completed\n  one more"
    assert final.count("3 matches") == 1


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


# -- the block splitter --------------------------------------------------------------------


def split(textual: str, size: int) -> list[str]:
    splitter = BlockSplitter()
    blocks: list[str] = []
    for i in range(0, len(textual), size):
        blocks += splitter.feed(textual[i:i + size])
    rest = splitter.close()
    return blocks + ([rest] if rest else [])


def test_splitter_cuts_at_blank_lines_outside_fences() -> None:
    body = "# Head\n\nPara one\nstill one.\n\n\n- a\n\n  continued item\n\n```\ncode\n\nmore code\n```\n\n~~~\n```\n\n~~~\nend"
    assert split(body, 1000) == [
        "# Head", "Para one\nstill one.", "- a\n\n  continued item", "```\ncode\n\nmore code\n```", "~~~\n```\n\n~~~\nend"]


def test_splitter_tail_is_only_the_unfinished_block() -> None:
    splitter = BlockSplitter()
    assert splitter.feed("Done paragraph.\n\nNew") == ["Done paragraph."]
    assert splitter.tail() == "New"
    assert splitter.feed(" text") == []
    assert splitter.close() == "New text"
    assert splitter.tail() == ""


def test_splitter_tail_window_keeps_a_long_open_fence_to_its_last_lines() -> None:
    splitter = BlockSplitter()
    splitter.feed("Intro line\n```python\n" + "".join(f"x{i}\n" for i in range(100)) + "par")
    text, hidden = splitter.tail_window(5, 1000)
    assert hidden == 95  # x0..x94 left out; the text before the fence and the fence kept
    assert text == "Intro line\n```python\nx95\nx96\nx97\nx98\nx99\npar"
    assert splitter.tail_window(500, 1000) == (splitter.tail(), 0)
    splitter.feed("tial\n```\nafter")  # closed, text right after it: still the same block
    text, hidden = splitter.tail_window(5, 1000)
    assert text == "```python\nx97\nx98\nx99\npartial\n```\nafter"  # still drawn as code
    assert hidden == 98  # the intro line and x0..x96


def test_splitter_tail_window_keeps_any_long_open_block_to_what_a_screen_shows() -> None:
    splitter = BlockSplitter()
    splitter.feed("".join(f"- item {i}\n" for i in range(300)) + "- it")
    # (the last ``limit`` complete lines, and the line still arriving)
    assert splitter.tail_window(4, 1000) == ("- item 296\n- item 297\n- item 298\n- item 299\n- it", 296)
    table = BlockSplitter()
    table.feed("| a | b |\n|---|---|\n" + "".join(f"| {i} | x |\n" for i in range(300)))
    text, hidden = table.tail_window(3, 1000)
    assert text == "| a | b |\n|---|---|\n| 297 | x |\n| 298 | x |\n| 299 | x |" and hidden == 297
    one_line = BlockSplitter()
    one_line.feed("word " * 10_000)  # one paragraph, never a newline
    text, hidden = one_line.tail_window(40, 400)
    assert text.startswith("…word ") and text.endswith("word ") and len(text) <= 401 and hidden == 0
    assert one_line.tail() == "word " * 10_000  # what the scrollback gets is all of it


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["word", " ", "\n", "\n\n", "```", "~~~", "  x", "- item", "#"]), max_size=30),
       st.integers(min_value=1, max_value=9))
def test_splitter_blocks_do_not_depend_on_chunking(tokens: list[str], size: int) -> None:
    body = "".join(tokens)
    whole = split(body, max(1, len(body)))
    assert split(body, size) == whole
    # nothing is lost: the non-blank lines come out in order
    assert [ln for b in whole for ln in b.split("\n") if ln.strip()] == [ln for ln in body.split("\n") if ln.strip()]


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


@pytest.mark.parametrize(
    "text",
    [
        "# Title\n\nSome **bold**, `code` and ~~struck~~ text.",
        "| a | b |\n| --- | --- |\n| 1 | 2 |",
        "```python\nx = 1\n\ny = 2\n```",
        "- one\n- two\n  continued\n\n1. first\n2. second",
        "> quoted [link](https://example.com)",
    ],
)
def test_shared_parser_markdown_draws_what_rich_markdown_draws(text: str) -> None:
    # the view builds Markdown with one shared markdown-it parser: same output as rich's own
    from rich.markdown import Markdown

    from acpcli.render.markdown_lines import rich_markdown as _markdown

    def drawn(renderable: Any) -> str:
        out = io.StringIO()
        Console(file=out, force_terminal=True, width=60, color_system="truecolor").print(renderable)
        return re.sub(r"id=\d+;", "id=;", out.getvalue())  # a hyperlink's id is random per drawing

    from acpcli.render.highlight import syntax_theme
    from acpcli.render.markdown_lines import code_theme

    # (with acpcli's code colours: the shared template is made with them)
    assert drawn(_markdown(text)) == drawn(Markdown(text, code_theme=syntax_theme(code_theme().palette)))
    assert drawn(_markdown(text)) == drawn(_markdown(text))  # the shared parser keeps no state


def test_tool_output_streamed_in_many_items_shows_its_newest_lines_live() -> None:
    # (a v2 agent streams a command's output as one content item per chunk: the live region
    # draws what fits in the terminal, not every item in every frame; the scrollback all)
    run = Run(console(height=12), clock=ticking())
    run.feed({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Build", "kind": "execute", "status": "in_progress"})
    for i in range(300):
        run.feed({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t",
                  "content": {"type": "content", "content": text(f"step {i}")}})  # fmt: skip
    live = run.screen()
    assert "step 299" in live and "step 100" not in live
    assert re.search(r"⋮ 2\d\d earlier lines", live)
    run.feed({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"})
    run.view.close()
    final = run.screen()
    assert all(f"step {i}\n" in final + "\n" for i in range(300)) and "earlier lines" not in final.split("✓ Build")[-1]


def test_a_running_tool_call_shows_a_few_locations_and_all_once_finished() -> None:
    run = Run(clock=ticking())
    places = [{"path": f"/p/f{i}.py"} for i in range(40)]
    run.feed({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Grep", "kind": "search",
              "status": "in_progress", "locations": places})  # fmt: skip
    live = run.screen()
    assert "/p/f4.py" in live and "/p/f5.py" not in live and "… 35 more" in live
    run.feed({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"})
    run.view.close()
    assert all(f"/p/f{i}.py" in run.screen() for i in range(40))


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
