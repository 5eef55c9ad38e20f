"""The live region's renderable: what the one ``rich.live.Live`` region at the bottom shows.

The live region is drawn by a renderable that reads the view's state when rich renders it
(:class:`_LiveArea`), so a piece printed above the region never shows stale text below it.
It shows the tool calls still running, the live block, the changes held back below a
streaming message and, during a turn, the status line (and the REPL's input line under it);
taller than the terminal, its newest lines under a note of how many are above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from rich.console import Group
from rich.segment import Segment
from rich.text import Text

from acpcli.render.tty.pieces import _Piece

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console, ConsoleOptions, RenderResult

    from acpcli.render.tty.blocks import _Block
    from acpcli.render.tty.plans import _PlanBlock
    from acpcli.render.tty.tools import _ToolBlock


class _ViewState(Protocol):
    """What the live area reads of the view (:class:`~acpcli.render.tty.view.TtyView`) each
    time rich draws it."""

    @property
    def _printed(self) -> bool: ...

    @property
    def _group(self) -> list[_ToolBlock]: ...

    @property
    def _live_block(self) -> _Block | None: ...

    @property
    def _stale(self) -> dict[int, _ToolBlock | _PlanBlock]: ...

    @property
    def _reserve(self) -> int: ...

    @property
    def footer(self) -> Callable[[], list[Text]] | None: ...

    def status_text(self) -> Text | None: ...


class _LiveArea:
    """What the live region shows: the view's live block as it is at render time."""

    __slots__ = ("view",)

    def __init__(self, view: _ViewState) -> None:
        self.view = view

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        view = self.view
        pieces: list[_Piece] = []
        gap = view._printed
        for earlier in view._group:  # tool calls still running, started before the live block
            renderable = earlier.live()
            if renderable is not None:
                pieces.append(_Piece(renderable, gap))
                gap = True
        block = view._live_block
        hidden = 0
        if block is not None:
            renderable = block.live()
            if renderable is not None:
                pieces.append(_Piece(renderable, gap))
                gap = True
                hidden = block.hidden_lines
        for stale in view._stale.values():  # changes held back below the streaming message
            preview = stale.changes(record=False)
            if preview is not None:
                pieces.append(_Piece(preview, gap))
                gap = True
        status = view.status_text()
        if status is not None:
            pieces.append(_Piece(status, gap))
        footer = view.footer() if view.footer is not None and status is not None else None
        if footer:  # the REPL's input line during a turn, right under the status line
            pieces.append(_Piece(Group(*footer), False))
        lines = [line for piece in pieces for line in piece.lines(console, options)]
        # taller than the terminal (a long code block streaming): show its newest lines,
        # under a note (rich would keep the top and hide what is arriving); the whole
        # block goes to the scrollback when it is finished
        room = max(2, options.size.height - 1 - view._reserve)
        if len(lines) + (1 if hidden else 0) > room:
            cut = len(lines) - room + 1  # a row is left for the note
            lines = lines[cut:]
            hidden += cut
        if hidden:
            note = Text(f"⋮ {hidden} lines above", style="dim", end="")
            lines = [list(console.render(note, options)), *lines]
        new_line = Segment.line()
        for line in lines:
            yield from line
            yield new_line
