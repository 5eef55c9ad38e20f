"""A rich console that never lets a control character it was given reach its file.

Everything acpcli prints with rich (the terminal view, ``show``, the REPL's banners, notes
and errors on stderr) goes through :class:`SafeConsole` (``Environment.out`` / ``.err``).
At the last moment, when rich turns segments into the string it writes, the text of every
segment that is not one of rich's own control segments (cursor moves of a live region) is
passed through :func:`~acpcli.text.safe.safe_text`, and so is every hyperlink target; the
ANSI styling rich adds itself is added after that, so it is the only escape sequence that
can reach the terminal.

This is the safety net under the explicit sanitizing of agent text where the views build
it (which also keeps widths right: a stand-in like ``^[`` takes two cells that rich did not
count when it laid the line out).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rich.console import Console
from rich.segment import Segment

from acpcli.text.safe import has_controls, safe_line, safe_text


def safe_segments(buffer: Iterable[Segment]) -> Iterator[Segment]:
    """``buffer`` with the text and the link targets of non-control segments made safe."""
    for segment in buffer:
        text, style, control = segment
        if control:
            yield segment
            continue
        link = style.link if style is not None else None
        if link and has_controls(link):
            assert style is not None
            style = style.update_link(safe_line(link))
        elif not has_controls(text):
            yield segment
            continue
        yield Segment(safe_text(text), style)


class SafeConsole(Console):
    """A :class:`rich.console.Console` whose output carries no control character it was given."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(safe_segments(buffer))
