"""The block splitter: streamed Markdown cut into finished blocks and a live tail."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from acpcli.render.tty.split import BlockSplitter


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


def test_cut_gives_the_complete_lines_and_keeps_the_unfinished_one() -> None:
    s = BlockSplitter()
    assert s.feed("1. one\n2. two\n3. th") == []
    assert s.cut() == "1. one\n2. two"
    assert s.feed("ree\n") == []
    assert s.close() == "3. three"
    assert s.cut() == ""


def test_cut_inside_fenced_code_closes_it_and_goes_on_under_the_same_fence() -> None:
    s = BlockSplitter()
    assert s.feed("text\n\n~~~~py\na = 1\nb") == ["text"]
    assert s.cut() == "~~~~py\na = 1\n~~~~"
    assert s.cut() == ""  # nothing complete since: not an empty code block
    assert s.feed(" = 2\n~~~~\n\nafter\n") == ["~~~~py\nb = 2\n~~~~"]
    assert s.close() == "after"
