"""A piece: one renderable printed into the scrollback or drawn in the live region.

Printed pieces are separated by one blank line, decided here once (:class:`_Piece`), whatever
blank lines a renderable adds at its edges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.segment import Segment

from acpcli.render.markdown_lines import MarkdownLines

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult


def _blank_line(line: list[Segment]) -> bool:
    for seg in line:
        if seg.text.strip() or (seg.style is not None and seg.style.bgcolor is not None):
            return False
    return True


class _Piece:
    """A renderable with blank lines trimmed off both ends, after an optional blank line.

    Pieces are printed one after another, so the spacing between them is decided here,
    once, whatever blank lines a renderable (Markdown) adds at its edges.
    """

    __slots__ = ("gap", "renderable")

    def __init__(self, renderable: RenderableType, gap: bool) -> None:
        self.renderable = renderable
        self.gap = gap

    def lines(self, console: Console, options: ConsoleOptions) -> list[list[Segment]]:
        """The piece's lines (the blank one first if ``gap``), without padding on the right."""
        renderable = self.renderable
        if isinstance(renderable, MarkdownLines):  # drawn already trimmed, without padding
            lines = renderable.lines(console, options)
            trim = renderable.fallback
        else:
            lines = console.render_lines(renderable, options, pad=False)
            trim = True
        start, end = 0, len(lines)
        while start < end and _blank_line(lines[start]):
            start += 1
        while end > start and _blank_line(lines[end - 1]):
            end -= 1
        if start == end:
            return []
        kept = [_rstrip(line) for line in lines[start:end]] if trim else lines[start:end]
        return [[], *kept] if self.gap else kept

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        new_line = Segment.line()
        for line in self.lines(console, options):
            yield from line
            yield new_line


def _rstrip(line: list[Segment]) -> list[Segment]:
    """Drop the padding rich adds to the right (unless it is painted: code backgrounds)."""
    while line:
        seg = line[-1]
        if seg.control or (seg.style is not None and seg.style.bgcolor is not None):
            break
        text = seg.text.rstrip()
        if text == seg.text:
            break
        if text:
            line[-1] = Segment(text, seg.style)
            break
        line.pop()
    return line
