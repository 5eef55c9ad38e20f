"""The terminal's own Markdown drawing (acpcli/render/markdown_lines.py): it must look as
rich's ``Markdown`` does, cell by cell, for what agents write; keep every line within the
width; never lose text; and leave tables to rich."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from rich.markdown import Markdown

from acpcli.render import markdown_lines
from acpcli.render.markdown_lines import MarkdownLines, _Marks, inline, parse, render, wrap
from acpcli.render.tty.pieces import _Piece

Cell = tuple[str, Any]


def cells(renderable: Any, width: int = 60) -> list[list[Cell]]:
    """What a terminal shows: per line, each character with its look (colour, background,
    attributes, whether it links), trailing unpainted blanks dropped, edges trimmed as the
    view trims every piece."""
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system="truecolor")
    rows = []
    for line in console.render_lines(_Piece(renderable, False), console.options, pad=False):
        row: list[Cell] = []
        for seg in line:
            style = seg.style
            look = None
            if style:
                look = (style.color, style.bgcolor, style.bold, style.italic, style.underline,
                        style.strike, style.dim, bool(style.link))  # fmt: skip
            row.extend((char, look) for char in seg.text)
        while row and row[-1][0] == " " and (row[-1][1] is None or row[-1][1][1] is None):
            row.pop()
        rows.append(row)
    return rows


def rich_md(text: str) -> Markdown:
    """rich's ``Markdown`` of ``text``, its code in the colours acpcli draws code in (no
    background, plain text in the terminal's own colour: ``acpcli.render.highlight``)."""
    from acpcli.render.highlight import syntax_theme

    return Markdown(text, code_theme=syntax_theme(markdown_lines.code_theme().palette))


def plain(rows: list[list[Cell]]) -> str:
    return "\n".join("".join(char for char, _ in row) for row in rows)


SAME_AS_RICH = [
    "Hello **bold** and *em* and `code` and ~~gone~~ text.",
    "A long paragraph " + "word " * 40 + "end.",
    "# Title\n\nPara.",
    "## Sub title here\nText right after.",
    "### Three\n#### Four\n##### Five\n###### Six",
    "Title\n=====",
    "Sub\n---",
    "- one\n- two\n- three",
    "1. one\n2. two\n3. three",
    "7. seven\n8. eight\n9. nine\n10. ten",
    "- a\n  - nested b\n  - nested c\n- d",
    "- a\n\n- b",
    "1. first\n\n   continued para\n2. second",
    "Some text\n- a list interrupts it",
    "Some text\n2. but not a list starting at 2",
    "> quoted **text**\n> more",
    "> - a list in a quote\n> - two",
    "> quote\nlazy line",
    "```\nplain code\n\n  indented\n```",
    "    indented code\n    more",
    "Para\n\n---\n\nAfter",
    "***",
    "See [the docs](https://example.com/x) now.",
    "Open [`setup.py`](src/setup.py) and [a `]` bracket](x) then [**bold** link](y).",
    "Auto <https://example.com> link",
    "![alt text](img.png)",
    "line one  \nline two",
    "a\\\nb",
    "***both*** and **a *b* c**",
    "*a **b** c*",
    "snake_case_name and _em_ and __init__.py",
    "2 * 3 * 4 = 24 and a * b",
    "**unclosed bold",
    "`a` `` b ` c `` d and an unmatched ` tick",
    "Mixed `code **stars**` here",
    "Text with \\*escaped\\* stars",
    "[not a link] and [x](y \"title\")",
    "#hashtag is not a heading",
    "# Heading with `code` and **bold**",
    "- item with **bold**\n- item " + "long " * 20,
    "- [ ] task\n- [x] done",
    "Long " + "x" * 150 + " word",
    "中文字符的段落，" * 8,
    "Emoji 😀 text " * 10,
    "para\n    continued indented",
    "~~strike~~ and ~single~",
]


@pytest.mark.parametrize("text", SAME_AS_RICH)
@pytest.mark.parametrize("width", [60, 23])
def test_draws_what_rich_markdown_draws(text: str, width: int) -> None:
    ours, theirs = cells(MarkdownLines(text), width), cells(rich_md(text), width)
    assert plain(ours) == plain(theirs)
    assert ours == theirs


def test_code_blocks_look_as_rich_draws_them_but_for_the_colours_of_tokens() -> None:
    # the background, padding, wrapping and text are rich's; the token colours come from the
    # same theme, chosen by acpcli's highlighter (test_highlight.py)
    text = "```python\ndef f(x):\n    return x + 1  # " + "long " * 20 + "\n```"
    ours, theirs = cells(MarkdownLines(text), 40), cells(rich_md(text), 40)
    assert plain(ours) == plain(theirs)
    assert [[look and look[1] for _, look in row] for row in ours] == [[look and look[1] for _, look in row] for row in theirs]
    row = next(row for row in ours if "def f" in "".join(char for char, _ in row))
    text = "".join(char for char, _ in row)
    keyword, name = row[text.index("def")][1], row[text.index("f(")][1]
    assert keyword is not None and keyword != name  # highlighted, not one colour


def test_html_is_shown_as_the_text_it_is() -> None:
    # rich drops HTML blocks and inline tags: an agent's text is never hidden here
    assert plain(cells(MarkdownLines("<div>html block</div>"))) == "<div>html block</div>"
    assert plain(cells(MarkdownLines("a <span>b</span> c"))) == "a <span>b</span> c"


def test_tables_are_left_to_rich() -> None:
    text = "Before\n| a | b |\n| --- | --- |\n| 1 | 2 |"
    assert parse(text) is None
    assert parse("- item\n\n  | a | b |\n  |---|---|\n  | 1 | 2 |") is None  # nested too
    assert MarkdownLines(text).fallback
    assert cells(MarkdownLines(text)) == cells(rich_md(text))
    assert "─" in plain(cells(MarkdownLines(text)))  # drawn as a table, not as its source
    assert parse("a | b without a delimiter row") is not None


def test_live_code_is_plain_until_its_block_is_finished() -> None:
    text = "```python\nimport os\n"
    live, done = cells(MarkdownLines(text, highlight=False)), cells(MarkdownLines(text))
    assert plain(live) == plain(done)
    row = next(i for i, row in enumerate(live) if "import" in "".join(char for char, _ in row))
    assert len({look for char, look in live[row] if char != " "}) == 1
    assert len({look for char, look in done[row] if char != " "}) > 1


def test_lines_are_cached_per_width() -> None:
    console = Console(file=io.StringIO(), width=50, force_terminal=True)
    drawn = MarkdownLines("word " * 30)
    first = drawn.lines(console, console.options)
    assert drawn.lines(console, console.options) is first
    narrower = drawn.lines(console, console.options.update(width=20))
    assert narrower is not first and len(narrower) > len(first)


def test_wrap_cuts_words_longer_than_a_line_and_counts_wide_characters() -> None:
    lines = wrap(inline("ab " + "x" * 25 + " cd"), 10)
    assert ["".join(seg.text for seg in line) for line in lines] == ["ab", "xxxxxxxxxx", "xxxxxxxxxx", "xxxxx cd"]
    lines = wrap(inline("中文 中文中文 中"), 6)
    assert ["".join(seg.text for seg in line) for line in lines] == ["中文", "中文中", "文 中"]


def test_hard_breaks_and_soft_breaks() -> None:
    spans = inline("one  \ntwo\nthree\\\nfour")
    assert "".join(text for text, _ in spans) == "one\ntwo three\nfour"


MARKDOWNISH = st.text(
    alphabet=st.sampled_from(list("ab c*_`~[]()<>!#->|\\\n1.  \t中😀")), max_size=120
)


@settings(max_examples=300, deadline=None)
@given(MARKDOWNISH, st.integers(min_value=1, max_value=40))
def test_any_text_is_drawn_within_the_width(text: str, width: int) -> None:
    # what the view prints: never wider than the terminal, whatever the agent wrote
    for row in cells(MarkdownLines(text), width):
        assert cell_len("".join(char for char, _ in row)) <= width, (text, width, row)


@settings(max_examples=500, deadline=None)
@given(MARKDOWNISH, st.integers(min_value=1, max_value=40))
def test_the_renderer_itself_lays_any_text_out_within_the_width(text: str, width: int) -> None:
    # without relying on rich's cropping; deep nesting on a narrow terminal drops markers
    blocks = parse(text)
    if blocks is None:
        return  # a table: rich draws it
    for line in render(blocks, width):
        # a one-cell line can hold a two-cell character: it cannot be cut
        assert sum(cell_len(seg.text) for seg in line) <= max(width, 2), (text, width, line)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.from_regex(r"[A-Za-z0-9]{1,12}", fullmatch=True), min_size=1, max_size=30),
       st.integers(min_value=8, max_value=80))  # fmt: skip
def test_plain_words_all_come_out_in_order(words: list[str], width: int) -> None:
    text = " ".join(words)
    blocks = parse(text)
    assert blocks is not None
    drawn = " ".join("".join(seg.text for seg in line) for line in render(blocks, width))
    assert "".join(drawn.split()) == "".join(words)


# -- hostile text: an agent's text must never hang or crash the view -----------------------


def _scanned_bracket_close(text: str, pos: int) -> int | None:
    """The straightforward definition (a scan ahead per bracket): where the bracket opened
    before ``pos`` closes. Quadratic for ``[[[[…``, which is why the module does not use it."""
    depth, i = 0, pos
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            run = len(text[i:]) - len(text[i:].lstrip("`"))
            close = re.compile(r"(?<!`)" + "`" * run + r"(?!`)").search(text, i + run)
            i = close.end() if close else i + run
            continue
        if c == "[":
            depth += 1
        elif c == "]":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return None


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("a [](`\\")), max_size=60), st.randoms())
def test_bracket_closings_are_those_of_a_scan_ahead(text: str, rng: Any) -> None:
    # asked in any order (what one answer remembers must not change another)
    opens = [i + 1 for i, c in enumerate(text) if c == "["]
    rng.shuffle(opens)
    marks = _Marks(text)
    for pos in opens:
        assert marks.bracket_close(pos) == _scanned_bracket_close(text, pos), (text, pos)


def _emphasis_restyling_per_match(nodes: list[list[Any]], delims: list[Any]) -> None:
    """The module's emphasis matching as first written: it walks every opener for each
    closer and restyles the nodes between a pair at each match (cubic when nested deep)."""
    stack: list[Any] = []
    for closer in delims:
        if closer.closes:
            j = len(stack) - 1
            while j >= 0 and closer.count:
                opener = stack[j]
                if opener.char != closer.char or not opener.count:
                    j -= 1
                    continue
                if closer.char == "~":
                    if opener.count != closer.count:
                        j -= 1
                        continue
                    use, style = closer.count, markdown_lines._STRIKE
                else:
                    both = (opener.opens and opener.closes) or (closer.opens and closer.closes)
                    if both and (opener.length + closer.length) % 3 == 0 and (opener.length % 3 or closer.length % 3):
                        j -= 1
                        continue
                    use = 2 if opener.count >= 2 and closer.count >= 2 else 1
                    style = markdown_lines._STRONG if use == 2 else markdown_lines._EM
                for k in range(opener.node + 1, closer.node):
                    nodes[k][1] = (*nodes[k][1], style)
                opener.count -= use
                closer.count -= use
                nodes[opener.node][0] = opener.char * opener.count
                nodes[closer.node][0] = closer.char * closer.count
                del stack[j + 1:]
                if not opener.count:
                    del stack[j]
                j = len(stack) - 1
        if closer.opens and closer.count:
            stack.append(closer)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab *_~`\\.")), max_size=60))
def test_emphasis_is_what_matching_pair_by_pair_gives(text: str) -> None:
    fast = inline(text)
    saved = markdown_lines._emphasis
    markdown_lines._emphasis = _emphasis_restyling_per_match
    try:
        slow = inline(text)
    finally:
        markdown_lines._emphasis = saved
    # character by character: equal styles, however the spans are cut
    assert [(c, style) for piece, style in fast for c in piece] == [(c, style) for piece, style in slow for c in piece], text


def _shown(text: str, width: int = 80) -> str:
    return plain(cells(MarkdownLines(text), width))


def test_deep_nesting_is_drawn_not_a_crash_and_keeps_the_text() -> None:
    deep_quote = _shown(">" * 5000 + " bottom")
    assert "bottom" in deep_quote and ">>>>" in deep_quote  # the levels past the limit as text
    deep_list = _shown("\n".join("  " * i + f"- item{i}" for i in range(600)), width=200)
    assert all(f"item{i}" in deep_list for i in range(600))
    assert "a" in _shown("[" * 3000 + "a" + "](u)" * 3000)
    assert "a" in _shown("![" * 3000 + "a" + "](u)" * 3000)
    assert "x" in _shown("- > " * 2000 + "x")


# (as Python expressions: built in the subprocess, not passed on its command line)
HOSTILE = {
    "unclosed brackets": '"[" * 200_000',
    "nested brackets": '"[" * 100_000 + "]" * 100_000',
    "brackets and ticks": '"[`" * 100_000',
    "ticks of every length": '" ".join("`" * k for k in range(1, 600))',
    "nested emphasis": '"*a " * 40_000 + "a* " * 40_000',
    "nested strong": '"**a " * 30_000 + "a** " * 30_000',
    "openers that never match": '"_a " * 40_000 + "a* " * 40_000',
    "escapes": '"\\\\[" * 100_000',
}


def test_hostile_text_is_drawn_in_about_one_pass() -> None:
    # Each of these took minutes to hours (quadratic or cubic) before; one pass is well under
    # a second here. A subprocess with a generous timeout, so a regression fails, not hangs.
    script = (
        "import io, sys\n"
        "from rich.console import Console\n"
        "from acpcli.render.markdown_lines import MarkdownLines\n"
        "console = Console(file=io.StringIO(), width=80, force_terminal=True)\n"
        + "".join(f"console.print(MarkdownLines({text}))\n" for text in HOSTILE.values())
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def test_a_code_block_on_a_very_narrow_terminal_keeps_a_wide_character_within_it() -> None:
    # (found by the width property above: one-cell pads around a one-cell line made 中 four wide)
    blocks = parse("\t中")
    assert blocks == [("code", "", "中")]
    assert all(sum(cell_len(seg.text) for seg in line) <= 3 for line in render(blocks, 3))
