"""Blocks: one per entry, holding what the view showed of it (:class:`_Block`, the base of
the message, tool call and plan blocks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import RenderableType


class _Block:
    #: lines of the live block left out of :meth:`live`'s renderable (a long code block)
    hidden_lines = 0

    def live(self) -> RenderableType | None:
        """What the live region shows while this block is live."""
        return None

    def finish(self) -> list[RenderableType]:
        """The block is no longer live: what to print for good."""
        return []
