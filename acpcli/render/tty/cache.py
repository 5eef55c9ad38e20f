"""The cache of drawn tool content items (:class:`_ItemCache`): each item is drawn once, and
a live region showing output streamed in thousands of items costs what it shows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpcli.render.tty.content import _content_item, _drawn_lines

if TYPE_CHECKING:
    from rich.text import Text

    from acpcli.render.markdown_lines import MarkdownLines


class _ItemCache:
    """Rendered tool content items by identity (store items are never mutated), with how
    many lines each holds."""

    __slots__ = ("_items", "_totals", "_totals_of")

    def __init__(self) -> None:
        self._items: dict[int, tuple[dict[str, Any], Text | list[Text | MarkdownLines], int]] = {}
        # running line totals of the content list last asked about (a tool call's content
        # only grows by appends, or is replaced by a new list)
        self._totals_of: list[dict[str, Any]] | None = None
        self._totals: list[int] = [0]

    def _entry(self, item: dict[str, Any]) -> tuple[dict[str, Any], Text | list[Text | MarkdownLines], int]:
        hit = self._items.get(id(item))
        if hit is not None and hit[0] is item:
            return hit
        drawn = _content_item(item)
        hit = self._items[id(item)] = (item, drawn, _drawn_lines(drawn))
        return hit

    def get(self, item: dict[str, Any]) -> Text | list[Text | MarkdownLines]:
        return self._entry(item)[1]

    def newest(self, items: list[dict[str, Any]], room: int, first: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Of ``items[first:]``, the last ones that fill ``room`` lines, and how many lines
        the others hold: what a live region shows of output streamed in thousands of items,
        in time for what it shows (and for the items new since the last call)."""
        start, used = len(items), 0
        while start > first and used < room:
            start -= 1
            used += self._entry(items[start])[2]
        if start == first:
            return items[first:], 0
        if self._totals_of is not items or len(self._totals) > len(items) + 1:
            self._totals_of, self._totals = items, [0]
        totals = self._totals
        for item in items[len(totals) - 1 :]:
            totals.append(totals[-1] + self._entry(item)[2])
        return items[start:], totals[start] - totals[first]
