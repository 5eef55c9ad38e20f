"""Markdown to styled terminal lines, fast enough to redraw on every streamed frame.

The terminal view prints agent text as Markdown: each finished block once into the
scrollback, and the unfinished tail in the live region ten times a second. rich's
``Markdown`` (markdown-it tokens, then rich's layout of nested renderables and its text
wrapping) costs about a millisecond a paragraph, and a streamed answer pays it for every
block and every frame. This module draws the Markdown agents write -- paragraphs with
emphasis, code spans, links and hard breaks; ATX and setext headings; bullet and ordered
lists, nested; block quotes; fenced and indented code (highlighted by
:mod:`acpcli.render.highlight` in colours for the terminal's background); thematic breaks -- straight
to lines of rich ``Segment`` with a word wrapper of its own, and looks as rich's
``Markdown`` does (``tests/render/test_markdown_lines.py`` compares the two cell by cell).

Anything else -- a GFM table -- is left to rich's ``Markdown`` (:func:`parse` returns
``None`` for it): tables are rare in a stream and rich draws them well. HTML is shown as
the text it is (rich would drop it: an agent's text is never hidden).

The text is expected to be made safe already (:mod:`acpcli.text.safe`); nothing here
emits control characters of its own beyond what rich's styles render to.

Grammar, briefly (CommonMark's, simplified where agents do not go): a paragraph ends at a
blank line or a line that starts another block; only ``1.`` and bullets with text may
interrupt a paragraph; list items continue on lines indented to their content (or lazily,
on unindented text right after a text line); emphasis follows the delimiter-run rules
(left/right flanking, ``_`` not inside words, the rule of three); links are inline
``[text](url)`` only (no reference definitions).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult

    from acpcli.render.highlight import Theme

Line = list[Segment]

# -- the look: rich's default Markdown styles --------------------------------------------

_NONE = Style()
_EM = Style(italic=True)
_STRONG = Style(bold=True)
_STRIKE = Style(strike=True)
_CODE = Style(bold=True, color="cyan", bgcolor="black")
_LINK = Style(color="blue", underline=True)  # rich's markdown.link_url, shown with hyperlinks
_QUOTE = Style(color="magenta")
_BULLET = Style(bold=True)
_NUMBER = Style(color="cyan")
_RULE = Style(dim=True)
_HEADINGS = {
    1: Style(bold=True, underline=True),
    2: Style(color="magenta", underline=True),
    3: Style(color="magenta", bold=True),
    4: Style(color="magenta", italic=True),
    5: Style(italic=True),
    6: Style(dim=True),
}

# -- blocks -------------------------------------------------------------------------------

_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)$")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_RULE_LINE = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_QUOTE_MARK = re.compile(r" {0,3}> ?")
_ITEM = re.compile(r"( {0,3})([-+*]|(\d{1,9})([.)]))( +|$)")
#: Quotes and lists nest this deep at most; deeper markers are shown as the text they are (a
#: line of ten thousand ``>`` must not take the parser as deep as that).
_MAX_DEPTH = 16
_TABLE_DELIMITER = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")

# A block is a tuple: ("p", text) | ("h", level, text) | ("code", lang, text) | ("hr",)
# | ("quote", blocks) | ("list", start or None, [blocks per item])
Block = tuple[Any, ...]


class _Unsupported(Exception):
    """The text holds something this module leaves to rich (a table)."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _starts_block(line: str) -> bool:
    """Whether a line would interrupt a paragraph."""
    stripped = line.lstrip(" ")
    if not stripped or len(line) - len(stripped) > 3:
        return False
    if stripped[0] in "#`~>-*_+" and (
        _ATX.match(line) or _FENCE.match(line) or _QUOTE_MARK.match(line) or _RULE_LINE.match(line)
    ):
        return True
    m = _ITEM.match(line)
    if m is None or not line[m.end():].strip():
        return False  # an empty item does not interrupt a paragraph
    return m.group(3) is None or m.group(3) == "1"


def parse(text: str, *, highlight: bool = True) -> list[Block] | None:
    """The blocks of ``text``, or ``None`` if it holds something left to rich (a table).
    ``highlight=False``: code blocks lose their language (drawn in the theme's plain colour)."""
    try:
        return _parse(text.expandtabs(4).split("\n"), highlight, 0)
    except _Unsupported:
        return None


def table_starts(line: str, next_line: str) -> bool:
    """Whether ``line`` and ``next_line`` are a GFM table's header and delimiter rows."""
    return "|" in line and "|" in next_line and "-" in next_line and _TABLE_DELIMITER.match(next_line) is not None


def _parse(lines: list[str], highlight: bool, depth: int) -> list[Block]:
    """The blocks of ``lines``, which sit inside ``depth`` quotes and list items."""
    nests = depth < _MAX_DEPTH
    blocks: list[Block] = []
    para: list[str] = []

    def end_para() -> None:
        if para:
            blocks.append(("p", "\n".join(para).rstrip()))
            para.clear()

    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            end_para()
            i += 1
            continue
        indent = _indent(line)
        if indent >= 4:
            if para:  # a paragraph's continuation, however indented
                para.append(line.strip())
                i += 1
                continue
            code: list[str] = []
            while i < n and (not lines[i].strip() or _indent(lines[i]) >= 4):
                code.append(lines[i][4:])
                i += 1
            while code and not code[-1].strip():
                code.pop()
            blocks.append(("code", "", "\n".join(code)))
            continue
        m = _FENCE.match(line)
        if m and not (m.group(2)[0] == "`" and "`" in m.group(3)):
            end_para()
            fence, strip, lang = m.group(2), len(m.group(1)), m.group(3).strip().split(" ")[0]
            code, i = [], i + 1
            while i < n:
                close = _FENCE.match(lines[i])
                if close and close.group(2)[0] == fence[0] and len(close.group(2)) >= len(fence) and not close.group(3).strip():
                    i += 1
                    break
                body = lines[i]
                code.append(body[min(strip, _indent(body)):])
                i += 1
            blocks.append(("code", lang if highlight else "", "\n".join(code)))
            continue
        m = _ATX.match(line)
        if m:
            end_para()
            blocks.append(("h", len(m.group(1)), (m.group(2) or "").strip()))
            i += 1
            continue
        if para:
            m = _SETEXT.match(line)
            if m:
                blocks.append(("h", 1 if m.group(1)[0] == "=" else 2, "\n".join(para)))
                para.clear()
                i += 1
                continue
        if _RULE_LINE.match(line):
            end_para()
            blocks.append(("hr",))
            i += 1
            continue
        if nests and _QUOTE_MARK.match(line):
            end_para()
            inner: list[str] = []
            while i < n:
                quoted = _QUOTE_MARK.match(lines[i])
                if quoted:
                    inner.append(lines[i][quoted.end():])
                elif lines[i].strip() and inner and inner[-1].strip() and not _starts_block(lines[i]):
                    inner.append(lines[i])  # a lazy continuation of the quoted paragraph
                else:
                    break
                i += 1
            blocks.append(("quote", _parse(inner, highlight, depth + 1)))
            continue
        m = _ITEM.match(line)
        if nests and m and (not para or _starts_block(line)):
            end_para()
            i = _parse_list(lines, i, blocks, highlight, depth)
            continue
        if i + 1 < n and table_starts(line, lines[i + 1]):
            raise _Unsupported
        para.append(line.lstrip())
        i += 1
    end_para()
    return blocks


def _parse_list(lines: list[str], i: int, blocks: list[Block], highlight: bool, depth: int) -> int:
    """Parse the list starting at ``lines[i]`` into ``blocks``; return the next line's index."""
    first = _ITEM.match(lines[i])
    assert first is not None
    ordered = first.group(3) is not None
    marker = first.group(4) if ordered else first.group(2)
    start = int(first.group(3)) if ordered else None
    items: list[list[Block]] = []
    n = len(lines)
    while i < n:
        m = _ITEM.match(lines[i])
        if m is None or (m.group(4) if m.group(3) is not None else m.group(2)) != marker or _RULE_LINE.match(lines[i]):
            break
        spaces = len(m.group(5))
        offset = m.end() if 1 <= spaces <= 4 else m.end(2) + 1  # an item of code keeps its indent
        body = [lines[i][offset:]]
        i += 1
        while i < n:
            line = lines[i]
            if not line.strip():
                body.append("")
            elif _indent(line) >= offset:
                body.append(line[offset:])
            elif body[-1].strip() and not _starts_block(line) and not _ITEM.match(line):
                body.append(line.lstrip())  # lazy continuation
            else:
                break
            i += 1
        while len(body) > 1 and not body[-1].strip():
            body.pop()
        items.append(_parse(body, highlight, depth + 1))
    blocks.append(("list", start, items))
    return i


# -- inlines ------------------------------------------------------------------------------

Span = tuple[str, Style]

_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_INLINE = re.compile(r"\\[!-/:-@\[-`{-~]|`+|\*+|_+|~+|!?\[|<[a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^<>\s]*>| *\\?\n")
_LINK_TAIL = re.compile(r"\]\(\s*(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_combined: dict[tuple[Style, ...], Style] = {}


def _combine(styles: tuple[Style, ...]) -> Style:
    style = _combined.get(styles)
    if style is None:
        if len(_combined) > 4096:  # each link has a style of its own: keep the cache bounded
            _combined.clear()
        style = _combined[styles] = Style.combine(styles) if styles else _NONE
    return style


class _Delim:
    """A run of ``*``, ``_`` or ``~`` that may open or close emphasis."""

    __slots__ = ("char", "closes", "count", "length", "node", "opens")

    def __init__(self, char: str, length: int, node: int, opens: bool, closes: bool) -> None:
        self.char, self.length, self.count, self.node = char, length, length, node
        self.opens, self.closes = opens, closes


def _flanking(char: str, before: str, after: str) -> tuple[bool, bool]:
    """Whether a run of ``char`` between ``before`` and ``after`` may open, may close."""
    left = not after.isspace() and (after not in _PUNCT or before.isspace() or before in _PUNCT)
    right = not before.isspace() and (before not in _PUNCT or after.isspace() or after in _PUNCT)
    if char == "_":  # not inside a word
        return left and (not right or before in _PUNCT), right and (not left or after in _PUNCT)
    return left, right


def inline(text: str, base: tuple[Style, ...] = (), *, _depth: int = 0) -> list[Span]:
    """Styled spans of Markdown inline ``text`` (a hard break is a span of ``"\\n"``)."""
    nodes: list[list[Any]] = []  # [text, styles]
    delims: list[_Delim] = []
    marks = _Marks(text)
    pos = 0
    scan = _INLINE.search
    while True:
        m = scan(text, pos)
        if m is None:
            break
        start, end = m.span()
        token = m.group()
        if start > pos:
            nodes.append([text[pos:start], base])
        first = token[0]
        if first == "\\" and token[-1] != "\n":
            nodes.append([token[1], base])
        elif first == "`":
            close = marks.code_close(len(token), end)
            if close is None:
                nodes.append([token, base])
            else:
                code = text[end:close[0]].replace("\n", " ")
                if len(code) > 2 and code[0] == code[-1] == " " and code.strip():
                    code = code[1:-1]
                nodes.append([code, (*base, _CODE)])
                end = close[1]
        elif first in "*_~":
            before = text[start - 1] if start else " "
            after = text[end] if end < len(text) else " "
            opens, closes = _flanking(first, before, after)
            if first == "~" and len(token) != 2:  # strikethrough is ``~~`` only
                opens = closes = False
            delims.append(_Delim(first, len(token), len(nodes), opens, closes))
            nodes.append([token, base])
        elif first in "![":
            # (links inside link text go _MAX_LINK_DEPTH deep; deeper brackets are text)
            bracket = marks.bracket_close(end) if _depth < _MAX_LINK_DEPTH else None
            tail = None if bracket is None else _LINK_TAIL.match(text, bracket)
            if tail is None:
                nodes.append([token, base])
            else:
                url = tail.group(1).strip("<>")
                label = text[end:tail.start()]
                if first == "!":
                    shown = label or url.strip("/").rsplit("/", 1)[-1]
                    nodes.append(["🌆 ", base])
                    for piece, style in inline(shown, (*base, Style(link=url or None)), _depth=_depth + 1):
                        nodes.append([piece, (style,)])
                    nodes.append([" ", base])
                else:
                    for piece, style in inline(label, (*base, _LINK + Style(link=url or None)), _depth=_depth + 1):
                        nodes.append([piece, (style,)])
                end = tail.end()
        elif first == "<":
            url = token[1:-1]
            nodes.append([url, (*base, _LINK + Style(link=url))])
        else:  # a line break: hard after two spaces or a backslash, else soft (a space)
            nodes.append(["\n" if "\\" in token or token.startswith("  ") else " ", base])
        pos = end
    if pos < len(text):
        nodes.append([text[pos:], base])
    if delims:
        _emphasis(nodes, delims)
    return _merged((piece, _combine(styles)) for piece, styles in nodes)


def _merged(pieces: Iterable[Span]) -> list[Span]:
    """``pieces`` without empty ones, neighbours of one style joined (each text copied once)."""
    spans: list[Span] = []
    run: list[str] = []
    run_style: Style | None = None
    for piece, style in pieces:
        if not piece:
            continue
        if style is not run_style:
            if run:
                spans.append(("".join(run), run_style))  # type: ignore[arg-type]
            run, run_style = [], style
        run.append(piece)
    if run:
        spans.append(("".join(run), run_style))  # type: ignore[arg-type]
    return spans


_BACKTICKS = re.compile("`+")
_BRACKET_STOPS = re.compile(r"[\\\[\]`]")
#: How deep links nest inside link text (an image in a link is two).
_MAX_LINK_DEPTH = 4


class _Marks:
    """Where the code spans and brackets of one inline text close, each found once.

    Found by scanning ahead, these cost a text of many unclosed ``[`` or backtick runs (an
    agent's ``[[[[…``) time in the square of its length; here every backtick run is listed
    once and every bracket's closing is remembered, so the whole text costs about one pass.
    """

    __slots__ = ("_closes", "_runs", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._closes: dict[int, int | None] = {}  # position after a "[" -> its "]", or None
        self._runs: dict[int, list[int]] | None = None  # length -> starts of runs that long

    def code_close(self, length: int, start: int) -> tuple[int, int] | None:
        """The run of exactly ``length`` backticks at or after ``start`` (a code span's
        end): its start and end, or None."""
        runs = self._runs
        if runs is None:
            runs = self._runs = {}
            for m in _BACKTICKS.finditer(self._text):
                runs.setdefault(m.end() - m.start(), []).append(m.start())
        starts = runs.get(length)
        if starts is None:
            return None
        k = bisect_left(starts, start)
        if k == len(starts):
            return None
        return starts[k], starts[k] + length

    def bracket_close(self, pos: int) -> int | None:
        """The index of the ``]`` closing the bracket opened just before ``pos``: brackets
        inside it nest; escaped ones and those in code spans do not count."""
        closes = self._closes
        if pos in closes:
            return closes[pos]
        text, stop = self._text, _BRACKET_STOPS.search
        waiting = [pos]  # the brackets being closed, innermost last (positions after them)
        i = pos
        while (m := stop(text, i)) is not None:
            i = m.start()
            c = text[i]
            if c == "\\":
                i += 2
            elif c == "`":
                ticks = _BACKTICKS.match(text, i)
                assert ticks is not None
                close = self.code_close(ticks.end() - i, ticks.end())
                i = close[1] if close is not None else ticks.end()
            elif c == "]":
                closes[waiting.pop()] = i
                if not waiting:
                    return i
                i += 1
            elif i + 1 in closes:  # a bracket whose closing is known already
                inner = closes[i + 1]
                if inner is None:
                    break  # it never closes, so neither do the brackets around it
                i = inner + 1
            else:
                i += 1
                waiting.append(i)
        for start in waiting:
            closes[start] = None
        return None


def _emphasis(nodes: list[list[Any]], delims: list[_Delim]) -> None:
    """CommonMark's "process emphasis": match closers with openers, innermost first.

    Linear in practice however hostile the text: a closer does not look again at openers
    that closers of its kind found no match in (CommonMark's "openers bottom"), and each
    match is noted as a range of nodes, the styles applied in one sweep at the end (deep
    nesting would otherwise restyle the same nodes once per level)."""
    stack: list[_Delim] = []
    tried: dict[tuple[str, int, bool], int] = {}  # closer kind -> openers up to this node tried
    ranges: list[tuple[int, int, Style]] = []  # nodes [first, end) take the style
    for closer in delims:
        if closer.closes:
            kind = (closer.char, closer.length % 3, closer.opens)
            floor = tried.get(kind, -1)
            j = len(stack) - 1
            while j >= 0 and closer.count:
                opener = stack[j]
                if opener.node <= floor:
                    break
                if opener.char != closer.char:
                    j -= 1
                    continue
                if closer.char == "~":
                    if opener.count != closer.count:
                        j -= 1
                        continue
                    use = closer.count
                    style = _STRIKE
                else:
                    both = (opener.opens and opener.closes) or (closer.opens and closer.closes)
                    if both and (opener.length + closer.length) % 3 == 0 and (opener.length % 3 or closer.length % 3):
                        j -= 1
                        continue
                    use = 2 if opener.count >= 2 and closer.count >= 2 else 1
                    style = _STRONG if use == 2 else _EM
                ranges.append((opener.node + 1, closer.node, style))
                opener.count -= use
                closer.count -= use
                nodes[opener.node][0] = opener.char * opener.count
                nodes[closer.node][0] = closer.char * closer.count
                del stack[j + 1:]  # delimiters between them can no longer match
                if not opener.count:
                    del stack[j]
                j = len(stack) - 1
            if closer.count:  # every opener left was tried for this kind of closer
                tried[kind] = stack[-1].node if stack else -1
        if closer.opens and closer.count:
            stack.append(closer)
    if ranges:
        _apply(nodes, ranges)


def _apply(nodes: list[list[Any]], ranges: list[tuple[int, int, Style]]) -> None:
    """Add each range's style to its nodes, once however many ranges of it cover a node
    (emphasis, strong and strikethrough set different attributes: their order is moot)."""
    styles = list(dict.fromkeys(style for _, _, style in ranges))
    steps = {style: [0] * (len(nodes) + 1) for style in styles}
    for first, end, style in ranges:
        step = steps[style]
        step[first] += 1
        step[end] -= 1
    depth = dict.fromkeys(styles, 0)
    for k, node in enumerate(nodes):
        added = []
        for style in styles:
            depth[style] += steps[style][k]
            if depth[style]:
                added.append(style)
        if added:
            node[1] = (*node[1], *added)


# -- wrapping -----------------------------------------------------------------------------

_WORD = re.compile(r"\S+")


def _cells(text: str, ascii_only: bool) -> int:
    return len(text) if ascii_only else cell_len(text)


def _chop(text: str, width: int) -> list[str]:
    """``text`` cut into pieces of at most ``width`` cells (a word too long for a line)."""
    if text.isascii():
        return [text[i:i + width] for i in range(0, len(text), width)]
    pieces: list[str] = []
    current: list[str] = []
    used = 0
    for char in text:
        size = cell_len(char)
        if used + size > width and current:
            pieces.append("".join(current))
            current, used = [], 0
        current.append(char)
        used += size
    if current:
        pieces.append("".join(current))
    return pieces


def _breaks(text: str, width: int) -> list[tuple[int, int]]:
    """Greedy word wrap of one line of ``text``: (start, end) offsets of each screen line.

    Leading spaces of the first line are kept (code indents), those of later lines dropped,
    trailing spaces dropped; a word longer than ``width`` is cut into lines of its own.
    """
    ascii_only = text.isascii()
    if _cells(text, ascii_only) <= width:
        return [(0, len(text.rstrip(" ")))]
    out: list[tuple[int, int]] = []
    line_start = line_end = used = 0
    has_word = False
    for m in _WORD.finditer(text):
        start, end = m.span()
        size = _cells(m.group(), ascii_only)
        gap = _cells(text[line_end:start], ascii_only)
        if has_word and used + gap + size > width:
            out.append((line_start, line_end))
            line_start = line_end = start
            used = gap = 0
            has_word = False
        if used + gap + size <= width:
            used += gap + size
            line_end = end
            has_word = True
            continue
        pieces = _chop(m.group(), width)  # too long for a line of its own
        for piece in pieces[:-1]:
            out.append((start, start + len(piece)))
            start += len(piece)
        line_start, line_end, used, has_word = start, end, _cells(pieces[-1], ascii_only), True
    if has_word or not out:
        out.append((line_start, line_end))
    return out


def wrap(spans: list[Span], width: int, fill: Style | None = None) -> list[Line]:
    """``spans`` word-wrapped to ``width`` cells: a hard break (``"\\n"``) starts a line.
    ``fill``: pad every line to ``width`` in that style (a code block's background)."""
    width = max(1, width)
    text = "".join(piece for piece, _ in spans)
    bounds: list[tuple[int, int]] = []
    offset = 0
    for logical in text.split("\n"):
        bounds.extend((offset + start, offset + end) for start, end in _breaks(logical, width))
        offset += len(logical) + 1
    # cut the spans at the bounds, walking both forward once (a long code block is linear)
    lines: list[Line] = []
    index, pos, count = 0, 0, len(spans)
    for start, end in bounds:
        while index < count and pos + len(spans[index][0]) <= start:
            pos += len(spans[index][0])
            index += 1
        line: Line = []
        at, here = index, pos
        while at < count and here < end:
            piece, style = spans[at]
            part = piece[max(0, start - here):end - here]
            if part:
                line.append(Segment(part, style))
            here += len(piece)
            at += 1
        lines.append(line)
    if fill is not None:
        for line in lines:
            used = sum(cell_len(seg.text) for seg in line)
            if used < width:
                line.append(Segment(" " * (width - used), fill))
    return lines


class _RichMarkdown:
    """Builds ``rich.markdown.Markdown`` renderables with one shared parser.

    For what this module leaves to rich (tables). ``Markdown(text)`` builds a new
    ``MarkdownIt`` parser (its rule chains) for every text: about as long as parsing a
    paragraph, and a live table is drawn ten times a second. Here the first ``Markdown`` is made the ordinary way and kept as a
    template; later ones copy its settings and parse with a parser configured as rich
    configures its own (``strikethrough`` and ``table`` enabled). The text is the same
    (already made safe by the caller), so is what is drawn.
    """

    __slots__ = ("_cls", "_parse", "_settings")

    def __init__(self) -> None:
        from markdown_it import MarkdownIt
        from rich.markdown import Markdown

        from acpcli.render.highlight import syntax_theme

        self._cls = Markdown
        # code in a table's neighbourhood in the same colours as acpcli's own code blocks
        self._settings = dict(vars(Markdown("", code_theme=syntax_theme(code_theme().palette))))
        self._parse = MarkdownIt().enable("strikethrough").enable("table").parse

    def __call__(self, text: str) -> RenderableType:
        md = self._cls.__new__(self._cls)
        vars(md).update(self._settings)
        md.markup = text
        md.parsed = self._parse(text)
        return md


_rich_maker: _RichMarkdown | None = None


def rich_markdown(text: str) -> RenderableType:
    global _rich_maker
    if _rich_maker is None:  # on first use: rich.markdown stays off the start-up path
        _rich_maker = _RichMarkdown()
    return _rich_maker(text)


# -- rendering ----------------------------------------------------------------------------

_theme: Theme | None = None


def code_theme() -> Theme:
    """The colours of code blocks in this process (:func:`acpcli.render.highlight.configured_palette`),
    made on the first code block: pygments stays off the start-up path."""
    global _theme
    if _theme is None:
        from acpcli.render.highlight import Theme

        _theme = Theme()
    return _theme


def _code_lines(lang: str, code: str, width: int) -> list[Line]:
    """A code block as rich's ``Syntax(..., theme=syntax_theme(palette), word_wrap=True,
    padding=1)`` draws it: highlighted, on the theme's background (none: the terminal's
    own), one cell of padding around."""
    theme = code_theme()
    background = theme.background
    spans = _merged(theme.spans(lang, code.rstrip()))
    # (padded when a two-cell character still fits between the pads)
    lines = wrap(spans, width - 2 if width > 3 else width, background)
    if width > 3:
        pad = Segment(" ", background)
        lines = [[pad, *line, pad] for line in lines]
    blank = [Segment(" " * width, background)]
    return [blank, *lines, list(blank)]


def render(blocks: list[Block], width: int, base: tuple[Style, ...] = (), *, top: bool = True) -> list[Line]:
    """Lines of ``blocks`` at ``width`` cells. ``top``: blocks are separated by a blank line
    (inside list items and quotes, as rich draws them, they are not)."""
    out: list[Line] = []
    for block in blocks:
        if top and out:
            out.append([])
        kind = block[0]
        if kind == "p":
            out.extend(wrap(inline(block[1], base), width))
        elif kind == "h":
            level, text = block[1], block[2]
            lines = wrap(inline(text, (*base, _HEADINGS[level])), width)
            if level == 1:
                for line in lines:
                    used = sum(cell_len(seg.text) for seg in line)
                    if used < width:
                        line.insert(0, Segment(" " * ((width - used) // 2)))
            out.extend(lines)
        elif kind == "code":
            out.extend(_code_lines(block[1], block[2], width))
        elif kind == "hr":
            out.append([Segment("-" * width, _RULE)])
            if not top:  # rich draws a blank line after a rule (at the top, the separator)
                out.append([])
        elif kind == "quote":
            mark = Segment("▌ ", _combine((*base, _QUOTE)))
            # rich lays a quote out 4 cells narrower than the width, behind a 2-cell bar
            out.extend(_nested(block[1], width - 2, mark, mark, (*base, _QUOTE)))
        elif kind == "list":
            out.extend(_list_lines(block[1], block[2], width, base))
    return out


def _nested(blocks: list[Block], width: int, first: Segment, rest: Segment, base: tuple[Style, ...]) -> list[Line]:
    """``blocks`` laid out behind a marker (a bullet, a number, a quote bar), or without it
    when the width leaves no room for it (deep nesting on a narrow terminal)."""
    size = len(first.text)
    if width - size < 2:
        return render(blocks, width, base, top=False)
    lines = render(blocks, width - size, base, top=False) or [[]]
    return [[first, *lines[0]], *([rest, *line] for line in lines[1:])]


def _list_lines(start: int | None, items: list[list[Block]], width: int, base: tuple[Style, ...]) -> list[Line]:
    out: list[Line] = []
    if start is None:
        bullet = _combine((*base, _BULLET))
        first, rest = Segment(" • ", bullet), Segment("   ", bullet)
        for item in items:
            out.extend(_nested(item, width, first, rest, base))
        return out
    number_width = len(str(start + len(items))) + 2
    rest = Segment(" " * number_width, _NUMBER)
    for index, item in enumerate(items):
        numeral = Segment(f"{start + index}".rjust(number_width - 1) + " ", _NUMBER)
        out.extend(_nested(item, width, numeral, rest, base))
    return out


class MarkdownLines:
    """A rich renderable of Markdown drawn by this module (rich's ``Markdown`` for what it
    leaves to rich). :meth:`lines` is what :class:`~acpcli.render.tty.TtyView` prints."""

    __slots__ = ("_blocks", "_cache", "text")

    def __init__(self, text: str, *, highlight: bool = True) -> None:
        self.text = text
        self._blocks = parse(text, highlight=highlight)
        self._cache: tuple[int, list[Line]] | None = None

    @property
    def fallback(self) -> bool:
        """Drawn by rich's ``Markdown`` (padded, blank lines at the edges)."""
        return self._blocks is None

    def lines(self, console: Console, options: ConsoleOptions) -> list[Line]:
        """The drawn lines at ``options.max_width``: no blank line first or last, no padding
        on the right but a code block's background."""
        width = options.max_width
        if self._cache is not None and self._cache[0] == width:
            return self._cache[1]
        if self._blocks is None:
            lines = console.render_lines(rich_markdown(self.text), options, pad=False)
        else:
            lines = render(self._blocks, width)
        self._cache = (width, lines)
        return lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        new_line = Segment.line()
        for line in self.lines(console, options):
            yield from line
            yield new_line

