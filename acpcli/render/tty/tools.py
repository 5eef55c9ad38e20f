"""Tool call blocks: a status icon and colour, title, kind, locations and content (diffs as
coloured unified diffs, terminals as a note). A call still running shows, live, as much of
its content as the terminal has rows; the scrollback gets all of it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.padding import Padding
from rich.text import Text

from acpcli.model import CANCELLED, ToolCall
from acpcli.render.plain import ToolTracker
from acpcli.render.transcript import location_line
from acpcli.render.tty.blocks import _Block
from acpcli.render.tty.cache import _ItemCache
from acpcli.render.tty.content import _content_item
from acpcli.text.safe import safe_line

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rich.console import Console, RenderableType

#: status -> (icon, style); anything else gets a generic look
STATUS_LOOK = {
    "pending": ("○", "yellow"),
    "in_progress": ("◐", "cyan"),
    "completed": ("✓", "green"),
    "failed": ("✗", "red"),
    "cancelled": ("⊘", "magenta"),
}
_OTHER_LOOK = ("•", "magenta")
_UNFINISHED = frozenset(("pending", "in_progress"))
_LIVE_LOCATIONS = 5  # locations a tool call still running shows (all of them once finished)


#: The most characters of a tool call's title a header shows (the agent's text: a 1 MB title
#: is cut with "…", not echoed whole; the record keeps it whole).
MAX_TITLE_CHARS = 400


def tool_header_text(call: ToolCall) -> Text:
    """``✓ title  kind  completed`` with the status icon and colour."""
    icon, style = STATUS_LOOK.get(call.status, _OTHER_LOOK)
    title = call.title or call.tool_call_id
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1] + "…"
    title = safe_line(title)
    status = safe_line(call.status.replace("_", " "))
    return Text.assemble((icon, style), " ", (title, "bold"), "  ", (safe_line(call.kind), "dim"), "  ", (status, style))


def tool_renderable(
    call: ToolCall,
    locations: Iterable[dict[str, Any]] | None = None,
    content: Iterable[dict[str, Any]] | None = None,
    cache: _ItemCache | None = None,
    skipped: int = 0,
    most_locations: int | None = None,
) -> RenderableType:
    """A tool call: header, then locations and content (all of them by default), the
    content after a note of the ``skipped`` lines before it; at most ``most_locations``
    locations, then how many more there are."""
    parts: list[RenderableType] = [tool_header_text(call)]
    places = list(call.locations if locations is None else locations)
    more = 0 if most_locations is None else max(0, len(places) - most_locations)
    for loc in places[: len(places) - more]:
        parts.append(Text("  → " + safe_line(location_line(loc)), style="dim"))
    if more:
        parts.append(Text(f"  → … {more} more", style="dim"))
    if skipped:
        parts.append(Text(f"  ⋮ {skipped} earlier lines", style="dim"))
    get = cache.get if cache is not None else _content_item
    run: list[Text] = []  # texts in a row: one text, as rich lays out each renderable of a group at a cost of its own
    for item in call.content if content is None else content:
        drawn = get(item)
        for piece in [drawn] if isinstance(drawn, Text) else drawn:
            if isinstance(piece, Text):
                run.append(piece)
                continue
            if run:
                parts.append(Padding(Text("\n").join(run), (0, 0, 0, 2)))
                run = []
            parts.append(Padding(piece, (0, 0, 0, 2)))
    if run:
        parts.append(Padding(Text("\n").join(run), (0, 0, 0, 2)))
    return Group(*parts)


class _ToolBlock(_Block):
    """A tool call: live while it is the latest entry and unfinished. In the live region it
    shows as much of its content as the terminal has rows (output streamed in thousands of
    items would cost every frame all of them); the scrollback gets all of it."""

    def __init__(self, call: ToolCall, console: Console) -> None:
        self.call = call
        self.tracker = ToolTracker()
        self.cache = _ItemCache()
        self.console = console

    def unfinished(self) -> bool:
        return self.call.status in _UNFINISHED

    def _room(self) -> int:
        # the terminal's rows less the header, the locations, the note of what is left out,
        # the status line and the live region's own last row
        return max(1, self.console.height - 5 - min(len(self.call.locations), _LIVE_LOCATIONS))

    def live(self) -> RenderableType | None:
        shown, skipped = self.cache.newest(self.call.content, self._room())
        return tool_renderable(self.call, content=shown, cache=self.cache, skipped=skipped, most_locations=_LIVE_LOCATIONS)

    def finish(self) -> list[RenderableType]:
        self.tracker.delta(self.call)  # all of it is shown now
        return [tool_renderable(self.call, cache=self.cache)]

    def changes(self, *, record: bool = True) -> RenderableType | None:
        """After it was printed: its new status and what content is new, if anything."""
        header_changed, locations, content = self.tracker.delta(self.call, record=record)
        if not header_changed and not locations and not content:
            return None
        if not header_changed and self.call.status == CANCELLED:
            # what the agent says of a call acpcli ended (the demo's "Cancelled."): kept for
            # show, not a second block of the call on the screen
            return None
        if record:  # for the scrollback: all of it
            return tool_renderable(self.call, locations, content, self.cache)
        everything = self.call.content  # (what is new is its end, or all of it)
        shown, skipped = self.cache.newest(everything, self._room(), len(everything) - len(content))
        return tool_renderable(self.call, locations, shown, self.cache, skipped, _LIVE_LOCATIONS)
