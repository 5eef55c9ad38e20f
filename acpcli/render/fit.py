"""Text that fits a width: the one place acpcli shortens and wraps what it lays out itself.

* :func:`shorten` -- one line cut at a word boundary with an ellipsis (``Refactor the…``),
  never inside a number (``23.7k/200k`` stays whole or goes whole);
* :func:`shorten_left` -- a path cut from the left at a separator (``…/src/app``);
* :func:`wrap` -- lines broken at word boundaries, continuation lines under a hanging indent;
* :func:`cells` and :func:`pad` -- widths in terminal cells (a CJK character takes two);
* :class:`Column` and :func:`table_lines` -- a table that fits a width: empty columns
  dropped, the columns a person reads last giving way (cut, then dropped) before the ones
  read first.

Widths are terminal cells, not characters. Pure functions: the text is shown as given (make
agent text safe with :mod:`acpcli.text.safe` first). Imports nothing heavy at import time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ELLIPSIS", "Column", "cells", "fit_columns", "pad", "shorten", "shorten_left", "table_lines", "wrap"]

ELLIPSIS = "…"
#: What a cut line does not end with before its ellipsis (``a · b ·…`` reads as ``a · b…``).
_TRAILING = " \t·,;:-—–|/"
#: A cut inside a run of these is inside a number (``23.7k``, ``1,024``): it moves to the
#: run's start.
_NUMBER = re.compile(r"[0-9][0-9.,:/%kKMG$]*$")
#: A word and the spaces before it: words are broken at spaces and tabs only (a no-break
#: space, U+00A0, holds two words together).
_WORD = re.compile(r"([ \t]*)([^ \t]+)")


def cells(text: str) -> int:
    """How many terminal cells ``text`` takes."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def pad(text: str, width: int) -> str:
    """``text`` with spaces after it up to ``width`` cells (unchanged when it is wider)."""
    return text + " " * max(0, width - cells(text))


def _head(text: str, width: int) -> str:
    """The longest start of ``text`` that takes at most ``width`` cells."""
    if text.isascii():
        return text[: max(0, width)]
    at, used = 0, 0
    while at < len(text):
        n = cells(text[at])
        if used + n > width:
            break
        used += n
        at += 1
    return text[:at]


def shorten(text: str, width: int) -> str:
    """``text`` when it fits in ``width`` cells; else its start, cut at the last word boundary
    that leaves at least half the room used (else inside the last word, but never inside a
    number), with ``…`` after it: at most ``width`` cells in all."""
    if cells(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = _head(text, width - 1)
    at_space = len(head) < len(text) and text[len(head)].isspace()
    if not at_space:
        space = max(head.rfind(" "), head.rfind("\t"))
        if space > 0 and cells(head[:space]) >= (width - 1) // 2:
            head = head[:space]
        else:
            number = _NUMBER.search(head)
            if (
                number is not None
                and len(head) < len(text)
                and text[len(head)] in "0123456789.,:/%kKMG$"
            ):
                head = head[: number.start()] or head
    return head.rstrip(_TRAILING) + ELLIPSIS if head.rstrip(_TRAILING) else head + ELLIPSIS


def shorten_left(text: str, width: int, sep: str = "/") -> str:
    """``text`` when it fits in ``width`` cells; else ``…`` and its end, from a ``sep`` when
    one leaves at least half the room used (``…/src/app``), else from any character."""
    if cells(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    tail = text[len(text) - (width - 1) :] if text.isascii() else _tail(text, width - 1)
    cut = tail.find(sep)
    if cut > 0 and cells(tail[cut:]) >= (width - 1) // 2:
        tail = tail[cut:]
    return ELLIPSIS + tail


def _tail(text: str, width: int) -> str:
    """The longest end of ``text`` that takes at most ``width`` cells."""
    at, used = len(text), 0
    while at > 0:
        n = cells(text[at - 1])
        if used + n > width:
            break
        used += n
        at -= 1
    return text[at:]


def wrap(text: str, width: int, indent: int | str = 0) -> list[str]:
    """``text`` broken into lines of at most ``width`` cells at word boundaries; each line
    after the first starts with ``indent`` (that many spaces, or the string itself) -- a
    hanging indent under the first line's start. The text's own line breaks are kept (each
    of its lines wraps under the same indent), and so are its spaces, but those where a line
    is broken; a word longer than a whole line is cut where the line ends."""
    hang = " " * indent if isinstance(indent, int) else indent
    out: list[str] = []
    for paragraph in text.split("\n"):
        line = hang if out else ""
        empty = True  # no word on the line yet
        for space, word in _words(paragraph.rstrip()):
            piece = space + word  # a paragraph's leading spaces are kept
            if not empty and cells(line + piece) > width:
                out.append(line)
                line, empty, piece = hang, True, word
            avail = max(1, width - cells(line))
            while empty and cells(piece) > avail:  # wider than a whole line: cut where it ends
                part = _head(piece, avail) or piece[0]
                out.append(line + part)
                line, piece = hang, piece[len(part) :].lstrip()
                avail = max(1, width - cells(line))
            line, empty = line + piece, False
        out.append(line.rstrip() if empty else line)
    return out


def _words(line: str) -> list[tuple[str, str]]:
    """``line`` as (the spaces before it, word) pairs."""
    return [(m.group(1), m.group(2)) for m in _WORD.finditer(line)]


# -- tables ------------------------------------------------------------------------------------

#: Cells that say nothing: a column holding only these is not shown.
_EMPTY = ("", "-")


@dataclass(frozen=True)
class Column:
    """One column of a table laid out by :func:`fit_columns`.

    ``rank``: how soon it gives way when the table is too wide -- the lowest rank is cut
    first, and dropped first when every column is at its floor (the column a person reads
    first has the highest rank). ``floor``: the narrowest it is cut to (at least its
    header, unless 0: then it is never cut, only dropped). ``cap``: the most it takes even
    when there is room. ``soft``: the width it keeps while the others are cut to theirs
    (the columns give way to their soft widths first, rank by rank, and only then to their
    floors). ``left``: cut from the left (a path: ``…/src/app``). ``keep``: never dropped (the
    id a person copies)."""

    name: str
    rank: int = 0
    floor: int | None = None
    cap: int | None = None
    left: bool = False
    keep: bool = False
    soft: int | None = None

    def least(self, soft: bool = False) -> int:
        if self.floor == 0:
            return 1 << 30  # never cut
        floor = max(cells(self.name), self.floor or 0)
        return max(floor, self.soft or 0) if soft else floor


def fit_columns(
    columns: Sequence[Column], rows: Sequence[Mapping[str, str]], room: int | None, gap: int = 2
) -> tuple[list[Column], dict[str, int]]:
    """The columns to show of ``rows`` in ``room`` cells, and their widths.

    A column empty in every row (``""`` or ``"-"``) is left out. When the rest is wider than
    ``room``, the columns give way by rank, lowest first: each is cut down to its soft width,
    then (rank by rank again) to its floor, and when all are at their floors the lowest-ranked one that may go is dropped (and the room
    it leaves goes back to the others). ``room`` None: every column at its natural width."""
    shown = [c for c in columns if any(row.get(c.name, "") not in _EMPTY for row in rows)]
    natural = {
        c.name: min(c.cap or 1 << 30, max([cells(c.name)] + [cells(row.get(c.name, "")) for row in rows]))
        for c in shown
    }
    if room is None:
        return shown, natural
    while True:
        widths = {c.name: natural[c.name] for c in shown}
        over = sum(widths.values()) + gap * (len(shown) - 1) - room
        for soft in (True, False):
            for column in sorted(shown, key=lambda c: c.rank):
                if over <= 0:
                    break
                give = min(over, max(0, widths[column.name] - column.least(soft)))
                widths[column.name] -= give
                over -= give
        droppable = [c for c in shown if not c.keep]
        if over <= 0 or not droppable or len(shown) == 1:
            return shown, widths
        shown.remove(min(droppable, key=lambda c: c.rank))


def table_lines(
    columns: Sequence[Column], rows: Sequence[Mapping[str, str]], room: int | None
) -> tuple[str, list[str]]:
    """The header and one line a row of the table :func:`fit_columns` lays out (cells cut
    with ``…`` where they are wider than their column; the last column not padded)."""
    shown, widths = fit_columns(columns, rows, room)

    def line(row: Mapping[str, str]) -> str:
        out = []
        for i, column in enumerate(shown):
            value, width = row.get(column.name, ""), widths[column.name]
            if cells(value) > width:
                value = shorten_left(value, width) if column.left else shorten(value, width)
            out.append(value if i == len(shown) - 1 else pad(value, width))
        return "  ".join(out).rstrip()

    return line({c.name: c.name for c in shown}), [line(row) for row in rows]
