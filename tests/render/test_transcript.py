"""Finished transcripts: the same from chunks as from whole messages; readable Markdown."""

from __future__ import annotations

import difflib
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from acpcli.model import Store
from acpcli.render import transcript
from acpcli.render.transcript import (
    diff_lines,
    stop_reason_text,
    to_markdown,
    to_text,
    unified_diff,
)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


DIFF = {"type": "diff", "path": "/p/a.py", "oldText": "x = 1\ny = 2\n", "newText": "x = 1\ny = 3\n"}
TOOL = {"toolCallId": "t1", "title": "Edit a.py", "kind": "edit", "status": "completed",
        "locations": [{"path": "/p/a.py", "line": 2}],
        "content": [DIFF, {"type": "content", "content": text("ran ```weird``` output")}]}
PLAN = [{"content": "Edit a.py", "priority": "high", "status": "completed"},
        {"content": "Run tests", "priority": "medium", "status": "in_progress"},
        {"content": "Report", "priority": "low", "status": "pending"}]
USER, THOUGHT = "Set y to 3, please.", "The user wants y = 3.\n\nEdit line 2."
ANSWER = "Done: `y` is now **3**.\n\n```python\ny = 3\n```\n\nAnything else?"


def build(updates: list[dict[str, Any]]) -> Store:
    store = Store()
    for update in updates:
        store.apply(update)
    return store


def from_chunks(size: int) -> Store:
    """v1 style: id-less chunks of ``size`` characters, tool_call + update, plan."""

    def chunks(kind: str, body: str) -> list[dict[str, Any]]:
        return [{"sessionUpdate": kind, "content": text(body[i:i + size])} for i in range(0, len(body), size)]

    return build([
        *chunks("user_message_chunk", USER),
        *chunks("agent_thought_chunk", THOUGHT),
        {"sessionUpdate": "plan", "entries": [dict(e, status="pending") for e in PLAN]},
        {"sessionUpdate": "tool_call", **{k: v for k, v in TOOL.items() if k != "content"}, "status": "pending"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "content": TOOL["content"]},
        {"sessionUpdate": "plan", "entries": PLAN},
        *chunks("agent_message_chunk", ANSWER),
    ])


def from_whole() -> Store:
    """v2 style: whole messages with ids, the tool call in one update, a keyed plan."""
    return build([
        {"sessionUpdate": "user_message", "messageId": "u", "content": [text(USER)]},
        {"sessionUpdate": "agent_thought", "messageId": "t", "content": [text(THOUGHT)]},
        {"sessionUpdate": "plan_update", "plan": {"planId": "p", "type": "items", "entries": PLAN}},
        {"sessionUpdate": "tool_call_update", **TOOL},
        {"sessionUpdate": "agent_message", "messageId": "a", "content": [text(ANSWER)]},
    ])


def test_transcripts_are_the_same_from_chunks_and_from_whole_messages() -> None:
    whole = from_whole()
    for size in (1, 3, 20, 1000):
        chunked = from_chunks(size)
        assert to_markdown(chunked, title="T") == to_markdown(whole, title="T")
        assert to_text(chunked) == to_text(whole)


def test_markdown_layout() -> None:
    md = to_markdown(from_whole(), title="Fixing y")
    assert md.startswith("# Fixing y\n\n## User\n\nSet y to 3, please.\n\n## Agent\n\n")
    assert "<details>\n<summary>Thought</summary>\n\nThe user wants y = 3.\n\nEdit line 2.\n\n</details>" in md
    assert "**Plan**\n\n- [x] Edit a.py\n- [ ] Run tests *(in progress)*\n- [ ] Report" in md
    assert "**Tool:** Edit a.py (`edit`) — completed\n\n- `/p/a.py:2`" in md
    assert "```diff\n--- /p/a.py\n+++ /p/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n```" in md
    assert "````text\nran ```weird``` output\n````" in md  # a fence longer than the content's
    assert md.endswith(ANSWER + "\n")
    assert md.count("## User") == 1 and md.count("## Agent") == 1


def test_markdown_heading_follows_the_speaker_and_title_defaults() -> None:
    store = build([
        {"sessionUpdate": "user_message_chunk", "content": text("one")},
        {"sessionUpdate": "agent_message_chunk", "content": text("two")},
        {"sessionUpdate": "user_message_chunk", "content": text("three")},
        {"sessionUpdate": "agent_message_chunk", "content": text("four")},
        {"sessionUpdate": "session_info_update", "title": "Counting"},
    ])
    md = to_markdown(store)
    assert md == "# Counting\n\n## User\n\none\n\n## Agent\n\ntwo\n\n## User\n\nthree\n\n## Agent\n\nfour\n"
    assert to_markdown(Store()) == "# Transcript\n"


def test_text_layout() -> None:
    out = to_text(from_whole())
    assert out.startswith("> Set y to 3, please.\n\n[thought] The user wants y = 3.\n[thought]\n[thought] Edit line 2.\n\n")
    assert "[plan] [x] Edit a.py\n[plan] [~] Run tests\n[plan] [ ] Report\n" in out
    assert "[tool] Edit a.py (edit): completed\n  at /p/a.py:2\n  --- /p/a.py\n" in out
    assert out.endswith("Anything else?\n")
    assert to_text(Store()) == ""


def test_diff_of_a_new_file_and_of_no_change() -> None:
    assert diff_lines({"type": "diff", "path": "/p/new.txt", "oldText": None, "newText": "hello\n"}) == [
        "--- /dev/null", "+++ /p/new.txt", "@@ -0,0 +1 @@", "+hello"]
    assert diff_lines({"type": "diff", "path": "/p/same", "oldText": "a", "newText": "a"}) == ["(no changes to /p/same)"]


def test_stop_reason_text() -> None:
    assert stop_reason_text("end_turn") is None and stop_reason_text(None) is None
    assert stop_reason_text("cancelled") == "cancelled"
    assert "token limit" in (stop_reason_text("max_tokens") or "")
    assert stop_reason_text("_vendor_reason") == "vendor reason"


def _patched(old: list[str], diff: list[str]) -> list[str]:
    """``old`` with a unified diff applied (the hunks checked against it on the way)."""
    out: list[str] = []
    at = 0
    lines = iter(diff[2:])
    for header in lines:
        match = re.fullmatch(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", header)
        assert match, header
        start, count = int(match[1]), int(match[2] if match[2] is not None else 1)
        begin = start - 1 if count else start
        out += old[at:begin]
        at = begin
        seen_old = seen_new = 0
        while seen_old < count or seen_new < int(match[4] if match[4] is not None else 1):
            line = next(lines)
            if line[0] in " -":
                assert old[at] == line[1:], (at, line)
                at += 1
                seen_old += 1
            if line[0] in " +":
                out.append(line[1:])
                seen_new += 1
    return out + old[at:]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abc"), max_size=12), st.lists(st.sampled_from("abc"), max_size=12))
def test_diffs_are_difflibs_while_small(old: list[str], new: list[str]) -> None:
    assert unified_diff(old, new, "f", "g") == list(difflib.unified_diff(old, new, "f", "g", lineterm=""))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=30), st.lists(st.sampled_from("abcd"), max_size=30),
       st.integers(min_value=0, max_value=5), st.integers(min_value=0, max_value=5))  # fmt: skip
def test_a_diff_too_large_to_match_is_one_hunk_that_still_applies(
    old: list[str], new: list[str], same_start: int, same_end: int
) -> None:
    old = [f"s{i}" for i in range(same_start)] + old + [f"e{i}" for i in range(same_end)]
    new = [f"s{i}" for i in range(same_start)] + new + [f"e{i}" for i in range(same_end)]
    saved = transcript.DIFF_MATCH_LIMIT
    transcript.DIFF_MATCH_LIMIT = 0  # every difference is "too large": the linear path
    try:
        diff = unified_diff(old, new, "f", "f")
    finally:
        transcript.DIFF_MATCH_LIMIT = saved
    if old == new:
        assert diff == list(difflib.unified_diff(old, new, "f", "f", lineterm=""))
        return
    assert _patched(old, diff) == new
    assert _patched(old, list(difflib.unified_diff(old, new, "f", "f", lineterm=""))) == new  # (the applier)


def test_an_edit_scattered_over_a_large_file_is_diffed_in_linear_time() -> None:
    # every other line of a 20,000-line file changed: difflib alone takes most of a minute here
    old = [f"same {i}" if i % 2 else f"old {i}" for i in range(20_000)]
    new = [f"same {i}" if i % 2 else f"new {i}" for i in range(20_000)]
    item = {"type": "diff", "path": "big.py", "oldText": "\n".join(old), "newText": "\n".join(new)}
    diff = diff_lines(item)
    assert diff[:3] == ["--- big.py", "+++ big.py", "@@ -1,20000 +1,20000 @@"]
    assert _patched(old, diff) == new


def test_tool_output_with_a_fenced_block_is_markdown_and_reminders_fold() -> None:
    output = "```console\n$ ls\nREADME.md\n```\n<system-reminder>\none\ntwo\n</system-reminder>\nafter"
    assert transcript.is_markdown_output(output)
    assert not transcript.is_markdown_output("```\nnever closed")
    assert not transcript.is_markdown_output("plain text with ``` inline")
    assert transcript.folded_tool_text(output) == "```console\n$ ls\nREADME.md\n```\n[system reminder, 2 lines]\nafter"
    assert transcript.tool_text_parts("a <system-reminder>x</system-reminder>") == [
        (False, "a"),
        (True, "system reminder, 1 line"),
    ]
    unclosed = "<system-reminder>\n" * 3
    assert transcript.folded_tool_text(unclosed) == unclosed  # nothing to fold: shown as it is


def test_finding_a_fence_in_hostile_tool_output_is_linear() -> None:
    hostile = "```a\n" * 200_000 + "<system-reminder>" * 100_000  # openings, never closed
    assert not transcript.is_markdown_output(hostile)
    assert transcript.tool_text_parts(hostile) == [(False, hostile)]
