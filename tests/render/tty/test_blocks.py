"""What the terminal view draws of each kind of entry: prompts, thoughts, agent Markdown,
plans and tool calls (live while they run, in the scrollback once finished)."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from rich.console import Console

from tests.render.tty.driver import Run, chunk, console, text, ticking


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


@pytest.mark.parametrize(
    ("first", "shown"),
    [
        ("**Analyzing the request**", "Analyzing the request"),  # gemini's thoughts open so
        ("## Planning *the* ~~old~~ edit", "Planning the old edit"),
        ("compute a * b * c in __init__", "compute a * b * c in __init__"),  # not emphasis
        ("****\nLet me****\nthink about****", "Let me"),  # gemini's thought without a subject
    ],
)
def test_a_thoughts_summary_leaves_its_markdown_markers_out(first: str, shown: str) -> None:
    run = Run(console())
    run.feed(chunk("agent_thought", f"{first}\n\nThen more."), chunk("agent_message", "Answer."))
    run.view.close()
    words = len(f"{first} Then more.".split())
    assert f"✻ Thought · {words} words: {shown}\n" in run.screen(), run.screen()
